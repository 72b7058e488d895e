"""The install self-check behind ``spectra check``: the core against SciPy on hard batches.

>>> from spectra.core.selfcheck import run_checks
>>> callable(run_checks)
True
"""

from ._support._selfcheck import CheckRow, format_table, rows_as_dicts, run_checks

__all__ = ["CheckRow", "format_table", "rows_as_dicts", "run_checks"]
