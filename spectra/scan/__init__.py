"""``spectra scan``: find eigensolver calls made once per matrix, and batch them.

Reports every ``numpy.linalg``/``scipy.linalg``/``torch.linalg`` ``eigh``/``eigvalsh`` (and
``torch.symeig``) call that runs once per iteration of a loop, per element of a
comprehension or per item of ``map()``, with the one batched ``spectra`` call to write
instead; :func:`fix` rewrites the loops and comprehensions it can prove equivalent (up to
the eigenvector gauge). See ``docs/scan.md``.

>>> from spectra.scan import scan_source
>>> src = "import scipy.linalg as sl\\nws = [sl.eigvalsh(F[k], S[k]) for k in range(8)]\\n"
>>> print(scan_source(src)[0].replacement)
spectra.eigvalsh(F, S)
"""

from ._api import (
    FixResult,
    ParsedFile,
    ScanError,
    fix,
    fix_parsed,
    fix_source,
    scan,
    scan_report,
    scan_source,
)
from ._detect import CODES, Finding
from ._edits import GAUGE_NOTE
from ._report import as_json, format_finding, summary

__all__ = [
    "CODES",
    "GAUGE_NOTE",
    "Finding",
    "FixResult",
    "ParsedFile",
    "ScanError",
    "as_json",
    "fix",
    "fix_parsed",
    "fix_source",
    "format_finding",
    "scan",
    "scan_report",
    "scan_source",
    "summary",
]
