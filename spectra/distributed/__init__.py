"""spectra.distributed (under construction)."""
