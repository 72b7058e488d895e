"""The core's real eigenvector gauge in one numba pass per eigenvector.

:func:`spectra.core._pipeline._gauge.fix_gauge_` decides each column's sign from its largest and
smallest entry (``torch.aminmax``) and then multiplies the whole block by the signs: three
passes over the vectors, and ``aminmax`` alone ran at a seventh of ``amax``'s speed on this
CPU (10.8 ms vs 1.5 ms for 1,024 eigenvector matrices of 64 x 64, one thread). Here each
eigenvector, contiguous in the executor's column-major output, is read once while it is in
L1 and flipped in place only when its sign changes, with exactly the same decisions (so the
result is bitwise that of the torch path).

Imports numba: the core imports this module on first use only (``cache=True``).
"""

from __future__ import annotations

import functools

import numba
import numpy as np
import torch

from ..._support._arrays import default_tolerance

jit = functools.partial(numba.njit, nogil=True, cache=True, error_model="numpy")


inline = functools.partial(jit, inline="always")


def gauge_constants(dtype: torch.dtype) -> np.ndarray:
    """``(tol, 1 - tol)`` for the real ``dtype``, in that precision (the kernels' ``gauge``
    argument): the core gauge's tolerance, rounded as torch rounds it."""
    tol = default_tolerance(dtype)
    return np.array([tol, 1 - tol], dtype=np.float32 if dtype == torch.float32 else np.float64)


@inline
def flip_to_gauge(r, hi, lo, tol, near):
    """Negate the eigenvector ``r`` in place where the core's gauge asks, given its largest
    and smallest entries ``hi``, ``lo``: the sign of the largest-magnitude entry
    (``max >= -min``), and on an opposite-sign near-tie (``|max + min| <= tol * peak``) the
    sign of the first entry ``>= near * peak`` in magnitude. ``tol`` and ``near = 1 - tol``
    come in ``r``'s dtype, so every comparison is made in the same precision as torch's
    (``spectra.core._pipeline._gauge.gauge_phase``)."""
    n = r.shape[0]
    peak = max(hi, -lo)
    neg = not (hi >= -lo)
    if abs(hi + lo) <= tol * peak and peak > 0:
        bound = peak * near
        for i in range(n):
            if abs(r[i]) >= bound:
                neg = r[i] < 0
                break
    if neg:
        for i in range(n):
            r[i] = -r[i]


@inline
def gauge_row(r, tol, near):
    """Put the (short) eigenvector ``r``, a row of ``vt``, in the core's gauge
    (:func:`flip_to_gauge`), exactly as ``spectra.core._pipeline._gauge.fix_gauge_`` does."""
    hi = r[0]
    lo = r[0]
    for i in range(1, r.shape[0]):
        hi = max(hi, r[i])
        lo = min(lo, r[i])
    flip_to_gauge(r, hi, lo, tol, near)


@jit
def gauge_rows(vt, bits, gauge, mask):
    """:func:`flip_to_gauge` on every ``vt[b, k]`` of the real ``vt`` (B, m, n)
    (row ``k`` of ``vt[b]`` is eigenvector ``k``); ``bits`` is ``vt`` viewed as integers of
    its width, ``gauge`` is ``(tol, 1 - tol)`` in ``vt``'s dtype and ``mask`` the integer
    with every bit but the sign set (``2^63 - 1`` or ``2^31 - 1``).

    The largest and smallest entries are found on integer keys: flipping every bit but the
    sign of a negative float's pattern orders the patterns as the floats (``-0 < +0``, which
    no decision sees), and integer max/min reductions vectorize where float ones cannot
    without fastmath (twice as fast at n = 64). NaN patterns land beyond the infinities, so
    a NaN column gets the sign torch's NaN-propagating ``amax``/``amin`` give it.
    """
    tol, near = gauge[0], gauge[1]
    n = vt.shape[2]
    wide = np.empty(2, dtype=np.int64)
    narrow = np.empty(2, dtype=bits.dtype)  # the extreme patterns, back at vt's width
    back = narrow.view(vt.dtype)
    low = np.int64(-(2**62)) * 2  # the smallest int64
    for b in range(vt.shape[0]):
        for k in range(vt.shape[1]):
            r = bits[b, k]
            hk = low
            lk = ~low
            for i in range(n):
                x = np.int64(r[i])  # sign-extended: x >> 63 is the sign at either width
                key = x ^ ((x >> 63) & mask)
                hk = max(hk, key)
                lk = min(lk, key)
            wide[0] = hk ^ ((hk >> 63) & mask)
            wide[1] = lk ^ ((lk >> 63) & mask)
            narrow[0] = wide[0]
            narrow[1] = wide[1]
            flip_to_gauge(vt[b, k], back[0], back[1], tol, near)
