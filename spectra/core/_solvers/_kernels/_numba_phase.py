"""The core's complex eigenvector gauge (the pivot's phase) in one numba pass per eigenvector.

:func:`spectra.core._pipeline._gauge._complex_phase_` makes the first entry within tolerance
of each column's largest magnitude real and positive with ~18 torch ops over the whole
block: squared magnitudes, their column maxima, the tolerance band, an ``argmax`` on it, a
gather, the pivots' moduli and two real multiply-adds per entry. On a batch of 16 x 16
complex128 eigenvector matrices that was 15% of the call (3.7 ms of 25 ms per worker,
LAPACK's ``zheevd`` the rest). Here each eigenvector, contiguous in the executor's
column-major output, is read while it is in L1 and rotated in place, with exactly the same
IEEE operations in the same order: bitwise the torch pass's result
(``tests/core/test_numba_phase.py``). The moduli are correctly rounded square roots on both
sides (the torch pass takes them from NumPy: torch's vectorized CPU ``sqrt`` is not
correctly rounded).

The squared-magnitude rule holds only where no column's peak ``|v|^2`` can under- or
overflow; the torch pass then switches the whole block to magnitudes. This pass checks every
column first and, where any is out of range, changes nothing and returns ``False``.

Imports numba: the core imports this module on first use only (``cache=True``).
"""

from __future__ import annotations

import functools

import numba
import numpy as np

jit = functools.partial(numba.njit, nogil=True, cache=True, error_model="numpy")


def phase_constants(tol: float, low: float, high: float, single: bool) -> np.ndarray:
    """``(band, low, high, 1, 0)`` for :func:`phase_rows` in the real dtype of the block
    (float32 for complex64): each rounded as torch rounds a Python scalar against it."""
    return np.array(
        [(1 - tol) * (1 - tol), low, high, 1.0, 0.0],
        dtype=np.float32 if single else np.float64,
    )


@jit
def _squares_in_range(x, low, high):
    """Whether every column ``x[b, k]`` (interleaved real and imaginary parts) has its peak
    ``|v|^2`` strictly inside ``(low, high)`` (``False`` on NaN, as the torch comparison)."""
    for b in range(x.shape[0]):
        for k in range(x.shape[1]):
            r = x[b, k]
            peak = r[0] * r[0] + r[1] * r[1]
            for i in range(1, r.shape[0] // 2):
                m = r[2 * i] * r[2 * i] + r[2 * i + 1] * r[2 * i + 1]
                if m > peak or m != m:
                    peak = m
            if not (peak > low and peak < high):
                return False
    return True


@jit
def phase_rows(x, consts):
    """Rotate every eigenvector of a complex block by ``conj(p) / |p|``, ``p`` its first
    entry with ``|p|^2 >= band * peak |v|^2``. ``x`` (B, m, 2n) is the block viewed as reals
    (row ``k`` of ``x[b]`` is eigenvector ``k``, real and imaginary parts interleaved);
    ``consts`` holds, in its dtype, ``band = (1 - tol)^2``, the range ``(low, high)`` of safe
    squares, ``1`` and ``0`` (:func:`phase_constants`). Returns ``False``, with ``x``
    unchanged, where some column's peak square is outside the range."""
    band, one, zero = consts[0], consts[3], consts[4]
    if not _squares_in_range(x, consts[1], consts[2]):
        return False
    for b in range(x.shape[0]):
        for k in range(x.shape[1]):
            r = x[b, k]
            n = r.shape[0] // 2
            peak = r[0] * r[0] + r[1] * r[1]
            for i in range(1, n):
                peak = max(peak, r[2 * i] * r[2 * i] + r[2 * i + 1] * r[2 * i + 1])
            bound = peak * band
            j = 0
            for i in range(n):
                if r[2 * i] * r[2 * i] + r[2 * i + 1] * r[2 * i + 1] >= bound:
                    j = i
                    break
            pr = r[2 * j]
            pi = r[2 * j + 1]
            size = np.sqrt(pr * pr + pi * pi)
            if size > 0:
                cr = pr / size
                ci = -pi / size
            else:
                cr = one
                ci = zero
            for i in range(n):
                vr = r[2 * i]
                vi = r[2 * i + 1]
                re = vr * cr - vi * ci  # both before either is written
                im = vr * ci + vi * cr
                r[2 * i] = re
                r[2 * i + 1] = im
    return True
