"""spectra.stiefel (under construction)."""
