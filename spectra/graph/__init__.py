"""spectra.graph (under construction)."""
