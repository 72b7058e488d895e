"""``python -m spectra``: the ``spectra`` command line."""

import sys

from spectra.cli import main

sys.exit(main())
