"""The small-block complex gauge in NumPy passes (the direct path's, where the compiled
helper is not built): the torch pass's IEEE operations in the same order, so its bits
(``tests/core/test_fast_checks.py``).
"""

from __future__ import annotations

import numpy as np
import torch

from .._support._arrays import SQUARE_SAFE as _SQUARE_SAFE


def _numpy_complex_phase_(rows: np.ndarray, tol: float, dtype: torch.dtype) -> bool:
    """:func:`_complex_phase_` on ``rows`` (``(..., vector, entry)``, a view of the
    eigenvectors) in a few NumPy calls instead of ~18 torch ops: the same IEEE operations
    in the same order (squares, the tolerance band, the first near-peak entry, the real
    multiplies and adds, the correctly rounded moduli of :func:`_sqrt_rounded`), so the
    same bits (``tests/core/test_fast_checks.py``). ``False`` (nothing done) where the
    squares could under- or overflow. C-contiguous rows (LAPACK's column-major output) are
    read as interleaved reals: flat indexing instead of ``take_along_axis``, and no
    ``where`` (inside the safe range no pivot is zero): 28 against 44 us on one 8x8."""
    if not rows.flags.c_contiguous:
        return _numpy_complex_phase_strided_(rows, tol, dtype)
    n = rows.shape[-1]
    x = rows.view(rows.real.dtype)  # (..., vector, 2 entry): re, im interleaved
    sq = x * x
    mag2 = sq[..., 0::2] + sq[..., 1::2]  # re * re + im * im, rounded as torch rounds it
    peak2 = mag2.max(-1)
    low, high = _SQUARE_SAFE[dtype]
    if not ((peak2 > low) & (peak2 < high)).all():
        return False
    first = (mag2 >= (peak2 * ((1 - tol) * (1 - tol)))[..., None]).argmax(-1)
    flat = x.reshape(-1, 2 * n)
    at = np.arange(flat.shape[0]), first.reshape(-1) * 2
    pr, pi = flat[at], flat[at[0], at[1] + 1]
    size = np.sqrt(pr * pr + pi * pi)  # > 0: the pivot's square is >= (1 - tol)^2 low
    cr, ci = (pr / size).reshape(*first.shape, 1), (-pi / size).reshape(*first.shape, 1)
    re, im = x[..., 0::2], x[..., 1::2]
    real, imag = re * cr - im * ci, re * ci + im * cr  # both before either is written
    re[...] = real
    im[...] = imag
    return True


def _numpy_complex_phase_strided_(rows: np.ndarray, tol: float, dtype: torch.dtype) -> bool:
    """:func:`_numpy_complex_phase_` for rows that are not C-contiguous: the same
    operations on the complex view (``take_along_axis`` for the pivots)."""
    re, im = rows.real, rows.imag
    mag2 = re * re + im * im
    peak2 = mag2.max(-1, keepdims=True)
    low, high = _SQUARE_SAFE[dtype]
    if not ((peak2 > low) & (peak2 < high)).all():
        return False
    near = mag2 >= peak2 * ((1 - tol) * (1 - tol))
    pivot = np.take_along_axis(rows, near.argmax(-1)[..., None], -1)
    pr, pi = pivot.real, pivot.imag
    size = np.sqrt(pr * pr + pi * pi)
    nonzero = size > 0
    one = rows.real.dtype.type(1)
    safe = np.where(nonzero, size, one)
    cr = np.where(nonzero, pr / safe, one)
    ci = np.where(nonzero, -pi / safe, rows.real.dtype.type(0))
    real, imag = re * cr - im * ci, re * ci + im * cr  # both before either is written
    re[...] = real
    im[...] = imag
    return True
