"""``spectra.validate``: per-matrix quality metrics of a computed decomposition."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ._support._arrays import as_tensor

#: default tolerance of :meth:`Validation.ok` per precision of the checked decomposition
_TOLERANCES = {"float32": 1e-4, "complex64": 1e-4, "float64": 1e-10, "complex128": 1e-10}


@dataclass
class Validation:
    """Per-matrix metrics (NumPy arrays shaped like the batch).

    ``residual``: ``||A V - B V diag(w)||_F / ||A||_F``; ``orthogonality``:
    ``||V^H B V - I||_max``; ``eigenvalue_error``: ``max|w - w_ref| / ||A||_2`` against
    SciPy, when asked.
    """

    residual: np.ndarray
    orthogonality: np.ndarray
    eigenvalue_error: np.ndarray | None = None
    dtype: str = "float64"  # the precision of the checked decomposition

    def __repr__(self) -> str:
        return f"Validation({self.residual.size} matrices, {self.dtype}): {self.verdict()}"

    def verdict(self, tol: float | None = None) -> str:
        """One line: the worst metrics, and whether they pass ``tol`` (default per dtype)."""
        tol = _TOLERANCES.get(self.dtype, 1e-10) if tol is None else tol
        worst = ", ".join(f"{k} {v:.2g}" for k, v in self.worst().items())
        return f"{'OK' if self.ok(tol) else 'FAILED'} at tol {tol:g} (worst: {worst})"

    def worst(self) -> dict[str, float]:
        """The largest value of each metric over the batch."""
        out = {"residual": _max(self.residual), "orthogonality": _max(self.orthogonality)}
        if self.eigenvalue_error is not None:
            out["eigenvalue_error"] = _max(self.eigenvalue_error)
        return out

    def ok(self, tol: float | None = None) -> bool:
        """Whether every metric of every matrix is below ``tol`` (default: 1e-4 for a
        single-precision decomposition, 1e-10 for double)."""
        tol = _TOLERANCES.get(self.dtype, 1e-10) if tol is None else tol
        return all(v <= tol for v in self.worst().values())


def _max(x: np.ndarray) -> float:
    return float(np.max(x)) if x.size else 0.0


def validate(
    a: Any, eigenvalues: Any, eigenvectors: Any, b: Any = None, *, reference: bool = False
) -> Validation:
    """Check a decomposition ``A V = B V diag(w)`` matrix by matrix.

    Works for any batch from ``spectra.eigh`` (also a ``k``-slice): a user who doubts a GPU
    result runs this. Computed in float64/complex128 on the CPU.

    Examples
    --------
    >>> import torch, spectra
    >>> a = torch.randn(4, 6, 6, dtype=torch.float64); a = a + a.mT
    >>> w, v = spectra.eigh(a)
    >>> bool(spectra.validate(a, w, v, reference=True).ok())  # 1e-10 for float64
    True
    """
    dtype = str(as_tensor(eigenvectors)[0].dtype).replace("torch.", "")
    at = _wide(a)
    w = _wide(eigenvalues).real
    v = _wide(eigenvectors)
    bt = None if b is None else _wide(b)
    bv = v if bt is None else bt @ v
    resid = at @ v - bv * w.unsqueeze(-2).to(v.dtype)
    anorm = torch.linalg.matrix_norm(at).clamp_min(torch.finfo(torch.float64).tiny)
    residual = torch.linalg.matrix_norm(resid) / anorm
    eye = torch.eye(v.shape[-1], dtype=v.dtype)
    orth = (
        (v.mH @ bv - eye).abs().flatten(-2).amax(-1)
        if v.shape[-1]
        else torch.zeros(v.shape[:-2], dtype=torch.float64)
    )
    err = None
    if reference:
        from .reference import reference_eigh

        k = w.shape[-1]
        n = at.shape[-1]
        ref = reference_eigh(at.numpy(), None if bt is None else bt.numpy(), eigvals_only=True)
        wref = torch.from_numpy(np.asarray(ref.eigenvalues))
        # the slice of the full spectrum that w holds: match it to the closest window
        errs = torch.stack([(w - wref[..., s : s + k]).abs().amax(-1) for s in range(n - k + 1)])
        scale = torch.linalg.matrix_norm(at, ord=2).clamp_min(torch.finfo(torch.float64).tiny)
        err = (errs.amin(0) / scale).numpy()
    return Validation(residual.numpy(), orth.numpy(), err, dtype)


def _wide(x: Any) -> torch.Tensor:
    t, _ = as_tensor(x)
    t = t.detach().cpu()
    return t.to(torch.complex128 if t.is_complex() else torch.float64)
