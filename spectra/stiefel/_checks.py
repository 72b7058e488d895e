"""Input checks shared by the manifold, the retractions and the optimizers.

Bad input raises :class:`spectra.InputError` (a ``ValueError``) naming the argument and the
batch indices: frames that are not ``(..., n, p)`` with ``p <= n``, NaN/Inf, and points that
are too far from the manifold for an operation that needs a point on it.

A retraction that pulls points back onto the manifold (``"polar"``, ``"qr"``) accepts any
full-rank ``X``. The Cayley retractions multiply ``X`` by a unitary matrix, so whatever
departure from ``X^H X = I`` the input has, the output keeps (a Gaussian ``X`` gives a
Gaussian-like result): they refuse ``X`` whose ``max |X^H X - I|`` exceeds
:data:`ON_MANIFOLD_TOL` (``1e-5`` in double, ``1e-3`` in single precision), far above the
round-off a long run accumulates (~1e-15 / ~1e-7 per step).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ..core.domain import InputError, real_dtype

#: ``max |X^H X - I|`` above which a retraction that does not pull points back refuses ``X``,
#: by real dtype (complex frames use the tolerance of their real part).
ON_MANIFOLD_TOL: dict[torch.dtype, float] = {
    torch.float16: 1e-2,
    torch.bfloat16: 1e-2,
    torch.float32: 1e-3,
    torch.float64: 1e-5,
}

#: The retractions that map any full-rank ``X + xi`` onto the manifold (self-correcting).
SELF_CORRECTING = frozenset({"polar", "qr"})


def batch_indices(mask: torch.Tensor) -> list[tuple[int, ...]]:
    """The batch indices where ``mask`` is true, as tuples (``[()]`` for a 0-d mask)."""
    if mask.ndim == 0:
        return [()] if bool(mask) else []
    return [tuple(i) for i in mask.nonzero().tolist()]


def check_frames(x: Any, name: str = "X") -> None:
    """Raise unless ``x`` is a floating/complex tensor batch ``(..., n, p)`` with ``p <= n``.

    ``TypeError`` for a non-tensor or an integer dtype, :class:`spectra.InputError` for a
    bad shape.

    >>> import torch
    >>> from spectra.stiefel import check_frames
    >>> check_frames(torch.zeros(3, 5, 2))
    >>> check_frames(torch.zeros(2, 5))
    Traceback (most recent call last):
    ...
    spectra.core._errors.InputError: X: Stiefel frames need p <= n, got (n, p) = (2, 5)
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if x.ndim < 2:
        raise InputError(f"{name}:", f"expected frames of shape (..., n, p), got {tuple(x.shape)}")
    if x.shape[-1] > x.shape[-2]:
        raise InputError(
            f"{name}:", f"Stiefel frames need p <= n, got (n, p) = {tuple(x.shape[-2:])}"
        )
    if not (x.is_floating_point() or x.is_complex()):
        raise TypeError(f"{name}: expected a floating point or complex dtype, got {x.dtype}")


def not_finite(t: torch.Tensor) -> torch.Tensor:
    """Batch mask of the matrices of ``t`` that contain NaN or Inf (one reduction: NaN/Inf
    survive the sum of each matrix, and so does an overflow to Inf)."""
    return ~torch.isfinite(t.sum((-2, -1)))


def all_finite(t: torch.Tensor) -> bool:
    """Whether every entry of ``t`` is finite: one sum, one transfer (NaN/Inf survive the
    sum, and so does an overflow to Inf, which then counts as not finite)."""
    return t.numel() == 0 or math.isfinite(abs(t.sum().item()))


def check_finite(t: torch.Tensor, name: str) -> None:
    """Raise :class:`spectra.InputError` naming the batch indices where ``t`` is not finite."""
    bad = not_finite(t.detach())
    if bool(bad.any()):
        raise InputError(name, "contains NaN or Inf", batch_indices(bad))


def orthogonality_error(x: torch.Tensor) -> torch.Tensor:
    """``max |X^H X - I|`` per matrix (shape: the batch shape)."""
    p = x.shape[-1]
    eye = torch.eye(p, dtype=x.dtype, device=x.device)
    err = (x.mH @ x - eye).abs()
    return err.amax((-2, -1)) if p > 0 else err.sum((-2, -1))


def require_on_manifold(x: torch.Tensor, where: str) -> None:
    """Refuse ``x`` (InputError with the distance and the indices) unless every matrix has
    ``max |X^H X - I| <= ON_MANIFOLD_TOL[dtype]``."""
    if x.numel() == 0:
        return
    tol = ON_MANIFOLD_TOL.get(real_dtype(x.dtype), 1e-5)
    g = x.detach().mH @ x.detach()
    g.diagonal(dim1=-2, dim2=-1).sub_(1)  # X^H X - I in place: no identity built
    err = g.abs().amax((-2, -1)) if x.shape[-1] else g.real.sum((-2, -1))
    if err.numel() <= 256:  # a few matrices: one transfer, compared in Python (NaN fails)
        if all(e <= tol for e in (err.reshape(-1) if err.ndim != 1 else err).tolist()):
            return
    elif bool((err <= tol).all()):
        return
    bad = ~(err <= tol)
    check_finite(x, "X")
    raise InputError(
        "X",
        f"is not on the Stiefel manifold (max |X^H X - I| = {float(err.max()):.3g} > "
        f"{tol:g}, the tolerance for {x.dtype})",
        batch_indices(bad),
        hint=f"{where} keeps a point's departure from the manifold instead of pulling it "
        "back: start from Stiefel.projx(X), or use the 'polar' or 'qr' retraction",
    )


def verdict(err: torch.Tensor, atol: float, raise_error: bool, what: str, metric: str) -> bool:
    """``True`` when every per-matrix ``err`` is within ``atol``; otherwise ``False``, or an
    :class:`spectra.InputError` naming the batch indices with ``raise_error``."""
    bad = ~(err <= atol)
    if not bool(bad.any()):
        return True
    if raise_error:
        raise InputError(
            "",
            f"{what} (max {metric} = {float(err.max()):.3g} > atol={atol:g})",
            batch_indices(bad),
        )
    return False
