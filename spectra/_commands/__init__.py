"""Sub-commands of the ``spectra`` CLI (each module has ``register(subparsers)``)."""
