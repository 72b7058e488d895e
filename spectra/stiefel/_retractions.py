"""Retractions on the Stiefel manifold: polar (through the core), QR and Cayley.

Each maps a batch of points ``X`` ``(..., n, p)`` and steps ``xi`` (tangent at ``X``) to new
points with orthonormal columns; all agree to first order: ``R_X(t xi) = X + t xi + O(t^2)``.

- ``polar``: ``Y (Y^H Y)^(-1/2)`` with ``Y = X + xi``, one :func:`spectra.eigh` of the
  ``p x p`` Gram matrices for the whole batch; the nearest point to ``Y``, second order, and
  self-correcting (a point that drifted off the manifold is pulled back).
- ``qr``: the ``Q`` factor of ``Y = QR`` with ``diag(R) > 0`` (real positive on the complex
  side); the retraction geoopt's ``EuclideanStiefel`` uses. Self-correcting as well.
- ``cayley``: ``(I - A/2)^(-1) (I + A/2) X`` with the skew matrix ``A = P xi X^H - X xi^H P``,
  ``P = I - X X^H / 2`` (Wen & Yin, 2013), evaluated with a ``2p x 2p`` solve
  (Sherman-Morrison-Woodbury) rather than an ``n x n`` one. Multiplies ``X`` by a unitary
  matrix, so it does not pull a drifted point back.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from types import MappingProxyType

import torch

from ..core.domain import InputError, cpu_count, fan_out
from ._polar import polar
from ._traced import compiling, traced

Retraction = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def retract_polar(x: torch.Tensor, xi: torch.Tensor) -> torch.Tensor:
    """Polar retraction ``(X + xi) ((X + xi)^H (X + xi))^(-1/2)`` (one core eigh call)."""
    if compiling():  # torch.compile / export: one opaque op, the eager function inside
        return traced("retract_polar", x, xi)
    return polar(x + xi, where="retract(method='polar')")


def _fanned(fn: Retraction, x: torch.Tensor, xi: torch.Tensor) -> torch.Tensor:
    """Run a batched small-matrix ``fn`` on CPU across the core's worker pool.

    torch's batched QR/solve on many tiny matrices is slow with several intra-op threads
    (15 ms instead of 20 us for 12 matrices 6 x 3 on a loaded 2-core machine); the core's
    fan-out runs contiguous slices of the batch with one kernel thread per worker. Calls that
    need gradients, or off the CPU, run directly.
    """
    grad = torch.is_grad_enabled() and (x.requires_grad or xi.requires_grad)
    if grad or x.device.type != "cpu" or (x.ndim == 2 and xi.ndim == 2):
        return fn(x, xi)  # one matrix: nothing to split
    shape = x.shape if x.shape == xi.shape else torch.broadcast_shapes(x.shape, xi.shape)
    xb = x.expand(shape).reshape(-1, *shape[-2:])
    xib = xi.expand(shape).reshape(-1, *shape[-2:])
    if xb.shape[0] == 0:
        return fn(x, xi)
    parts = fan_out(lambda s, e: fn(xb[s:e], xib[s:e]), xb.shape[0], max(2, cpu_count()))
    return torch.cat(parts).reshape(shape) if len(parts) > 1 else parts[0].reshape(shape)


def retract_qr(x: torch.Tensor, xi: torch.Tensor) -> torch.Tensor:
    """QR retraction: the ``Q`` of ``X + xi = QR`` with a positive (real) diagonal of ``R``."""
    if compiling():
        return traced("retract_qr", x, xi)
    return _fanned(_qr, x, xi)


def retract_cayley(x: torch.Tensor, xi: torch.Tensor) -> torch.Tensor:
    """Cayley retraction through a ``2p x 2p`` solve (Wen & Yin's low-rank form)."""
    if compiling():
        return traced("retract_cayley", x, xi)
    return _fanned(_cayley, x, xi)


def _qr(x: torch.Tensor, xi: torch.Tensor) -> torch.Tensor:
    return qr_factor(x + xi)


def qr_factor(y: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``Q`` of ``Y = QR`` with a real positive diagonal of ``R``; NaN/Inf refused; ``out``
    receives the result if given.

    NaN/Inf anywhere in column ``j`` of ``Y`` reaches ``R[j, j]`` (and ``Q`` only from
    column ``j`` on), so the diagonal of ``R`` is the only thing checked: for a few matrices
    in one transfer, compared in Python.
    """
    q, r = torch.linalg.qr(y)
    d = torch.diagonal(r, dim1=-2, dim2=-1)
    if d.numel() > 256 or d.is_complex():
        finite = d.isfinite()
        if not bool(finite.all()):
            raise _not_finite("qr", ~finite.all(-1))
    elif not all(map(math.isfinite, d.tolist() if d.ndim == 1 else d.reshape(-1).tolist())):
        raise _not_finite("qr", ~d.isfinite().all(-1))
    if d.is_complex():
        mag = d.abs()
        phase = torch.where(
            mag > 0, d / mag.clamp_min(torch.finfo(mag.dtype).tiny), torch.ones_like(d)
        )
    else:  # -1 where R[j, j] < 0 (or is -0.0)
        phase = torch.copysign(_ones(d.shape[-1], d.dtype, d.device), d)
    if q.ndim > 2:
        phase = phase.unsqueeze(-2)
    return torch.mul(q, phase) if out is None else torch.mul(q, phase, out=out)


@functools.lru_cache(maxsize=64)
def _ones(p: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    return torch.ones(p, dtype=dtype, device=device)


def _not_finite(method: str, bad: torch.Tensor) -> InputError:
    idx = [()] if bad.ndim == 0 else [tuple(i) for i in bad.nonzero().tolist()]
    return InputError(f"retract(method={method!r}) output", "contains NaN or Inf", idx)


def _cayley(x: torch.Tensor, xi: torch.Tensor) -> torch.Tensor:
    p = x.shape[-1]
    pxi = xi - 0.5 * (x @ (x.mH @ xi))
    u = torch.cat([pxi, x], dim=-1)
    v = torch.cat([x, -pxi], dim=-1)
    eye = torch.eye(2 * p, dtype=x.dtype, device=x.device)
    lhs = eye - 0.5 * (v.mH @ u)
    rhs = v.mH @ x
    return x + u @ torch.linalg.solve(lhs, rhs)


RETRACTIONS: MappingProxyType[str, Retraction] = MappingProxyType(
    {
        "polar": retract_polar,
        "qr": retract_qr,
        "cayley": retract_cayley,
    }
)
"""The registered retractions by name (read-only)."""
