"""spectra.tightbinding (under construction)."""
