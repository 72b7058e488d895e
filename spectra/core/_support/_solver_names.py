"""The symmetric/Hermitian eigensolvers of NumPy, SciPy and torch, by qualified name.

One table of what counts as "an eigensolver call" in user code: ``spectra scan`` looks for
these (through imports and aliases) to point at per-matrix loops.
"""

from __future__ import annotations

#: qualified name -> (kind, library); kind is ``eigh``, ``eigvalsh`` or ``symeig``.
EIGENSOLVER_CALLS: dict[str, tuple[str, str]] = {
    f"{module}.{kind}": (kind, library)
    for library, module in (
        ("numpy", "numpy.linalg"),
        ("scipy", "scipy.linalg"),
        ("torch", "torch.linalg"),
    )
    for kind in ("eigh", "eigvalsh")
} | {"torch.symeig": ("symeig", "torch")}

#: torch's successor of ``torch.symeig``, named in the scanner's advice.
TORCH_EIGH = "torch.linalg.eigh"
