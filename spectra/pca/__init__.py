"""spectra.pca (under construction)."""
