"""The polar factor of a near-orthonormal frame: the binomial series of ``(I + E)^(-1/2)``.

An optimizer step moves a point ``X`` by a small tangent step ``s d``: ``Y = X + s d`` has
``Y^H Y = I + E`` with ``||E|| ~ s^2 ||d||^2`` (plus whatever departure from the manifold
``X`` carries: ``E`` is formed from the general Gram matrix, never assumed to be
``s^2 d^H d``). Then

    (I + E)^(-1/2) = sum_k c_k E^k,    c_k = binom(-1/2, k) = 1, -1/2, 3/8, -5/16, ...

converges for ``||E||_2 < 1``, and the tail after degree ``K`` is at most
``|c_(K+1)| t^(K+1) / (1 - t)`` for ``t = ||E||_F >= ||E||_2``. :func:`series_polar` picks
the smallest degree ``K <= 12`` whose tail is below the unit round-off of the dtype
(``t <= 0.068`` in double, ``0.31`` in single precision) and evaluates the polynomial by
Horner's rule (``K`` small products), so the result is the polar factor to rounding, as
the core's eigh route gives it: a handful of tensor operations instead of an eigh, its
check and its gauge, which for one ``5 x 5`` Gram matrix cost more than the whole rest of
an optimizer step. A larger step, a non-finite one or another dtype returns ``None`` and
the caller takes the eigh route (which also raises the errors).

The optimizers use it for their steps (no gradients); :meth:`Stiefel.retract` and
:func:`~spectra.stiefel.polar` always go through the core.

>>> import torch
>>> from spectra.stiefel import Stiefel
>>> x = Stiefel().random(50, 5, dtype=torch.float64)
>>> y = x + 1e-3 * Stiefel().proj(x, torch.randn_like(x))
>>> q = series_polar(y)
>>> from spectra.stiefel import polar  # the core's route: Y (Y^H Y)^-1/2 through spectra.eigh
>>> bool((q - polar(y)).abs().max() < 1e-14)
True
"""

from __future__ import annotations

import bisect
import functools
from fractions import Fraction

import torch

#: the highest degree of the series (12 small products at most)
MAX_DEGREE = 12


def _coefficients(count: int) -> list[Fraction]:
    c = [Fraction(1)]
    for k in range(1, count):
        c.append(c[-1] * Fraction(-(2 * k - 1), 2 * k))
    return c


COEFFICIENTS = tuple(float(c) for c in _coefficients(MAX_DEGREE + 2))


def _largest_t(degree: int, unit: float) -> float:
    """The largest ``t`` with ``|c_(K+1)| t^(K+1) / (1 - t) <= unit`` (bisection)."""
    a = abs(COEFFICIENTS[degree + 1])
    lo, hi = 0.0, 0.99
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if a * mid ** (degree + 1) / (1 - mid) <= unit:
            lo = mid
        else:
            hi = mid
    return lo


@functools.lru_cache(maxsize=8)
def limits(dtype: torch.dtype) -> tuple[float, ...] | None:
    """``limits(dtype)[K - 1]``: the largest ``||E||_F`` that degree ``K`` resolves to the
    unit round-off of ``dtype`` (real or complex, single or double precision)."""
    real = {torch.complex64: torch.float32, torch.complex128: torch.float64}.get(dtype, dtype)
    if real not in (torch.float32, torch.float64):
        return None
    unit = torch.finfo(real).eps / 2
    return tuple(_largest_t(k, unit) for k in range(1, MAX_DEGREE + 1))


def degree(t: float, dtype: torch.dtype) -> int | None:
    """The degree :func:`series_polar` uses for ``||Y^H Y - I||_F = t``: the smallest whose
    tail is below the unit round-off of ``dtype``; ``None`` past degree 12 (or for NaN).

    >>> import torch
    >>> degree(1e-4, torch.float64), degree(1e-4, torch.float32), degree(0.5, torch.float64)
    (3, 1, None)
    """
    lim = limits(dtype)
    if lim is None or not t <= lim[-1]:
        return None
    return bisect.bisect_left(lim, t) + 1


@functools.lru_cache(maxsize=64)
def _eyes(p: int, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, ...]:
    """``(I, -I, c_0 I, c_1 I, ..., c_12 I)`` (cached: the series adds scaled identities
    in one operation each)."""
    eye = torch.eye(p, dtype=dtype, device=device)
    return (eye, -eye, *(c * eye for c in COEFFICIENTS))


def series_polar(y: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor | None:
    """``Y (Y^H Y)^(-1/2)`` by the binomial series when ``||Y^H Y - I||_F`` (the largest of
    the batch) is small enough for degree 12 or less; ``None`` otherwise (too large a step,
    NaN/Inf, float16, an empty batch): the caller then takes the core's eigh route.
    ``out`` (not ``y``'s memory) receives the result. No gradients are recorded."""
    lim = limits(y.dtype)
    if lim is None or y.numel() == 0 or y.shape[-1] == 0 or y.requires_grad:
        return None
    n, p = y.shape[-2:]
    c = COEFFICIENTS
    eye, minus, *scaled = _eyes(p, y.dtype, y.device)
    if y.ndim == 2:  # one matrix: every step one fused operation
        e = torch.addmm(minus, y.mH, y)  # Y^H Y - I
        t = float(torch.linalg.vector_norm(e))
        if not t <= lim[-1]:  # NaN fails too
            return None
        degree = bisect.bisect_left(lim, t) + 1
        # Horner: z = c_(K-1) I + c_K E, then z <- c_k I + E z down to k = 0
        z = torch.add(scaled[degree - 1], e, alpha=c[degree])
        for k in range(degree - 2, -1, -1):
            z = torch.addmm(eye, e, z, beta=c[k])
        return torch.mm(y, z) if out is None else torch.mm(y, z, out=out)
    flat = y if y.ndim == 3 else y.reshape(-1, n, p)
    e = torch.baddbmm(minus, flat.mH, flat)
    # a few members: the norm of the whole stack (>= each member's, one operation)
    t = float(torch.linalg.vector_norm(e) if e.shape[0] <= 4 else _largest_norm(e))
    if not t <= lim[-1]:
        return None
    degree = bisect.bisect_left(lim, t) + 1
    z = torch.add(scaled[degree - 1], e, alpha=c[degree])
    for k in range(degree - 2, -1, -1):
        z = torch.baddbmm(eye, e, z, beta=c[k])
    if out is None:
        return torch.bmm(flat, z).reshape(y.shape)
    if out.is_contiguous():
        torch.bmm(flat, z, out=out.view(-1, n, p))
        return out
    return out.copy_(torch.bmm(flat, z).reshape(y.shape))


def _largest_norm(e: torch.Tensor) -> torch.Tensor:
    """The largest Frobenius norm of the matrices of ``e``."""
    return torch.linalg.vector_norm(e, dim=(-2, -1)).amax()


__all__ = ["COEFFICIENTS", "MAX_DEGREE", "degree", "limits", "series_polar"]
