"""The deterministic eigenvector gauge: the largest-magnitude entry is made real and positive.

The pivot of each column is its largest-magnitude entry; where several entries are within a
relative ``default_tolerance(dtype)`` of that magnitude (common in symmetric graphs, where
entries are equal up to round-off) the first of them is the pivot, so near-ties resolve the
same way on every device, chunking and strategy, where a strict ``argmax`` would follow
round-off. Real columns are scaled by the pivot's sign, complex ones by its inverse phase.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import torch

from .._solvers._kernels._ready import numba_passes_ready
from .._solvers._native import native_gauge_
from .._support._arrays import SQUARE_SAFE as _SQUARE_SAFE
from .._support._arrays import default_tolerance, numba_pass_ok
from ._gauge_numpy import _numpy_complex_phase_


def _pivot_first_near_max(vectors: torch.Tensor) -> torch.Tensor:
    """Index ``(..., 1, m)`` of the first entry within tolerance of each column's peak.

    Complex columns compare squared magnitudes ``re^2 + im^2`` against ``peak^2 (1 -
    tol)^2``: the same rule without ``abs`` (a ``hypot`` per entry, 4x the cost of the
    squares on CPU, measured), used wherever the squares cannot under- or overflow (any
    eigenvector normalized in the Euclidean norm or by a sane ``B``); elsewhere ``abs``.
    """
    tol = default_tolerance(vectors.dtype)
    if vectors.is_complex():
        re, im = vectors.real, vectors.imag
        mag2 = re * re + im * im
        peak2 = mag2.amax(-2, keepdim=True)
        low, high = _SQUARE_SAFE.get(vectors.dtype, (math.inf, 0.0))
        if bool(((peak2 > low) & (peak2 < high)).all()):
            near = mag2 >= peak2 * ((1 - tol) * (1 - tol))
            return near.to(torch.uint8).argmax(-2, keepdim=True)
    mag = vectors.abs()
    peak = mag.amax(-2, keepdim=True)
    near = mag >= peak * (1 - tol)
    return near.to(torch.uint8).argmax(-2, keepdim=True)


def _sqrt_rounded(x: torch.Tensor) -> torch.Tensor:
    """The correctly rounded square root (IEEE's): NumPy's on the CPU, where torch's
    vectorized ``sqrt`` is not (the last bit of ~0.7% of random doubles, measured),
    torch's elsewhere (CUDA's is). The numba and compiled gauges compute the same bits.

    >>> _sqrt_rounded(torch.tensor([4.0, 2.0], dtype=torch.float64)).tolist()
    [2.0, 1.4142135623730951]
    """
    if x.device.type == "cpu" and not x.requires_grad:
        return torch.from_numpy(np.sqrt(x.contiguous().numpy()))
    return torch.sqrt(x)


def _complex_phase_(vectors: torch.Tensor) -> torch.Tensor:
    """Multiply complex columns in place by ``conj(p)/|p|`` using real arithmetic only.

    torch's vectorized complex kernels round differently depending on where an element
    sits in memory (SIMD body vs tail), so ``vectors * phase`` could differ in the last bit
    between a batch and a slice of it. Separate real multiplies and adds round the same
    everywhere: results stay bitwise independent of chunking.
    """
    pivot = vectors.gather(-2, _pivot_first_near_max(vectors))
    pr, pi = pivot.real, pivot.imag
    size = _sqrt_rounded(pr * pr + pi * pi)
    nonzero = size > 0
    safe = torch.where(nonzero, size, torch.ones_like(size))
    cr = torch.where(nonzero, pr / safe, torch.ones_like(pr))
    ci = torch.where(nonzero, -pi / safe, torch.zeros_like(pi))
    parts = torch.view_as_real(vectors)
    vr, vi = parts[..., 0], parts[..., 1]
    real, imag = vr * cr - vi * ci, vr * ci + vi * cr  # both computed before either is written
    vr.copy_(real)
    vi.copy_(imag)
    return vectors


def gauge_phase(vectors: torch.Tensor) -> torch.Tensor:
    """Per-column factor (sign, or unit phase) that puts ``vectors`` in the spectra gauge.

    Returns shape ``(..., 1, m)``; zero columns get factor 1.
    """
    with torch.no_grad():
        if vectors.is_complex():
            pivot = vectors.gather(-2, _pivot_first_near_max(vectors))
            size = pivot.abs()
            return torch.where(size > 0, pivot.conj() / torch.where(size > 0, size, 1), 1)
        # real: the sign of the largest-magnitude entry is that of the max or of the min;
        # no |v| temporary (allocation dominated the cost at small n)
        # (two reductions: torch.aminmax ran 7x slower than amax on CPU, 2026-11-30)
        lo, hi = vectors.amin(-2, keepdim=True), vectors.amax(-2, keepdim=True)
        sign = torch.where(hi >= -lo, 1.0, -1.0).to(vectors.dtype)
        peak = torch.maximum(hi, -lo)
        tie = (hi + lo).abs() <= default_tolerance(vectors.dtype) * peak
        tie &= peak > 0
        if bool(tie.any()):
            # opposite-sign near-ties: the first near-peak entry decides (rare in double,
            # ~1% of columns in single precision): resolve only those columns
            where_tie = tie.squeeze(-2).nonzero(as_tuple=True)  # (batch..., column)
            cols = vectors.movedim(-1, -2)[where_tie]  # (T, n)
            first = _pivot_first_near_max(cols.unsqueeze(-1))  # (T, 1, 1)
            pivot = cols.gather(-1, first.squeeze(-1)).squeeze(-1)
            sign = sign.clone()
            sign.squeeze(-2)[where_tie] = torch.where(pivot < 0, -1.0, 1.0).to(sign.dtype)
        return sign


def fix_gauge(vectors: torch.Tensor) -> torch.Tensor:
    """Return ``vectors`` with each column multiplied by its gauge factor (out of place).

    The factor is treated as a constant under autograd: exact for real signs; for complex
    phases only gauge-invariant losses get exact gradients, as with ``torch.linalg.eigh``.

    >>> import torch
    >>> fix_gauge(torch.tensor([[0.6, 0.8], [-0.8, 0.6]], dtype=torch.float64))
    tensor([[-0.6000,  0.8000],
            [ 0.8000,  0.6000]], dtype=torch.float64)
    """
    if vectors.numel() == 0:
        return vectors
    if vectors.is_complex():
        if vectors.requires_grad:
            return vectors * gauge_phase(vectors)
        return _complex_phase_(vectors.clone())
    return vectors * gauge_phase(vectors)


def _numba_pass_fits(vectors: torch.Tensor) -> bool:
    """Whether a numba gauge pass may take this block: a CPU block without history whose
    eigenvectors are contiguous (column-major, as LAPACK and the executor write them),
    large enough to repay importing numba, whose kernels are ready (never compile inside a
    call)."""
    return (
        vectors.device.type == "cpu"
        and numba_pass_ok(vectors.numel())
        and vectors.mT.is_contiguous()
        and not vectors.requires_grad
        and numba_passes_ready(vectors.dtype)
    )


def _numba_gauge_(vectors: torch.Tensor) -> bool:
    """Gauge a real CPU block in place through :mod:`._kernels._numba_gauge` where
    :func:`_numba_pass_fits`; ``False`` (nothing done) otherwise. Both paths make the same
    decisions, so which one ran never shows in the result."""
    if vectors.dtype not in (torch.float32, torch.float64) or not _numba_pass_fits(vectors):
        return False
    kernel = _numba_gauge_kernel(vectors.dtype)
    if kernel is None:
        return False
    rows = vectors.mT.reshape(-1, vectors.shape[-1], vectors.shape[-2]).numpy()  # a view
    kernel(rows)
    _NUMBA_GAUGE_WARM.add(vectors.dtype)
    return True


#: dtypes whose numba gauge (real) or phase pass (complex) has run in this process:
#: small blocks use it from then on, never waiting for a compilation themselves
_NUMBA_GAUGE_WARM: set[torch.dtype] = set()


@functools.cache
def _numba_gauge_kernel(dtype: torch.dtype) -> Callable[[Any], None] | None:
    """``rows -> None``: the numba gauge for real ``dtype`` with its constants bound, or
    ``None`` without numba (resolved once: the executor calls it on every sub-block)."""
    from .._solvers._kernels import numba_available

    if not numba_available():
        return None

    from .._solvers._kernels._numba_gauge import gauge_constants, gauge_rows

    single = dtype == torch.float32
    bits = np.int32 if single else np.int64
    gauge = gauge_constants(dtype)
    mask = np.int64(2**31 - 1 if single else 2**63 - 1)
    kernel: Any = gauge_rows  # numba's dispatcher (untyped for mypy)

    def run(rows: Any) -> None:
        kernel(rows, rows.view(bits), gauge, mask)

    return run


def _numba_phase_(vectors: torch.Tensor) -> bool:
    """:func:`_complex_phase_` on a complex CPU block in place through
    :mod:`._kernels._numba_phase` where :func:`_numba_pass_fits`; ``False`` (nothing
    done) otherwise or where the squares could under- or overflow. The same bits as the
    torch pass."""
    if not _numba_pass_fits(vectors):
        return False
    kernel = _numba_phase_kernel(vectors.dtype)
    if kernel is None:
        return False
    m, n = vectors.shape[-1], vectors.shape[-2]
    rows = torch.view_as_real(vectors.mT.reshape(-1, m, n)).reshape(-1, m, 2 * n).numpy()
    done = kernel(rows)
    _NUMBA_GAUGE_WARM.add(vectors.dtype)
    return done


@functools.cache
def _numba_phase_kernel(dtype: torch.dtype) -> Callable[[Any], bool] | None:
    """``rows -> done``: the numba phase pass for complex ``dtype`` with its constants
    bound, or ``None`` without numba."""
    from .._solvers._kernels import numba_available

    if not numba_available():
        return None

    from .._solvers._kernels._numba_phase import phase_constants, phase_rows

    low, high = _SQUARE_SAFE[dtype]
    consts = phase_constants(default_tolerance(dtype), low, high, dtype == torch.complex64)
    kernel: Any = phase_rows  # numba's dispatcher (untyped for mypy)

    def run(rows: Any) -> bool:
        return bool(kernel(rows, consts))

    return run


def fix_gauge_(vectors: torch.Tensor) -> torch.Tensor:
    """In-place :func:`fix_gauge` for solver outputs the core owns (no autograd history)."""
    if vectors.numel() == 0 or native_gauge_(vectors):  # one compiled pass, where built
        return vectors
    if vectors.is_complex():
        if _numba_phase_(vectors):
            return vectors
        return _complex_phase_(vectors)
    if _numba_gauge_(vectors):
        return vectors
    return vectors.mul_(gauge_phase(vectors))


#: up to this many eigenvector entries per call, the gauge runs as a few NumPy passes
#: (about 1 us each) instead of ~15 torch ops (1-2 us each): the direct path's gauge
SMALL_GAUGE_MAX_ENTRIES = 1 << 14


#: up to this many entries each eigenvector's sign is found in plain Python (one
#: ``tolist`` and the builtin max/min): cheaper than a dozen NumPy calls on tiny arrays
#: (6.7 vs 9.7 us at n = 8; NumPy's passes win from n = 16, 11 vs 25 us, measured)
_PYTHON_GAUGE_MAX_ENTRIES = 128


def _python_flips(rows: np.ndarray, tol: float) -> list[int] | None:
    """The rows (of ``rows.reshape(-1, n)``) whose gauge sign is ``-1`` (their min outweighs
    their max), or ``None`` when a row *might* hold an opposite-sign near-tie or is not
    finite, which the exact NumPy path then resolves.

    The sign of ``hi + lo`` in double precision is that of the exact sum, so it is the
    torch gauge's ``hi >= -lo`` for float32 and float64 rows alike; the screen
    ``|hi + lo| <= 2 tol (hi - lo)`` flags a superset of the torch gauge's near-ties
    ``|hi + lo| <= tol max(hi, -lo)``, whatever either computation rounds (and NaN or an
    infinity fails ``>``).

    >>> _python_flips(np.array([[0.6, -0.8], [0.8, 0.6]]), 1e-10)
    [0]
    """
    return sign_flips(rows.reshape(-1, rows.shape[-1]).tolist(), tol)


def sign_flips(vectors: Iterable[Sequence[float]], tol: float) -> list[int] | None:
    """:func:`_python_flips` on eigenvectors given as sequences of Python floats."""
    flips = []
    for i, row in enumerate(vectors):
        hi, lo = max(row), min(row)
        s = hi + lo
        if not abs(s) > 2 * tol * (hi - lo):  # a possible tie, NaN or Inf
            return None
        if s < 0:
            flips.append(i)
    return flips


def fix_gauge_small_(vectors: torch.Tensor) -> torch.Tensor:
    """:func:`fix_gauge_` for a small CPU block (no autograd history), in place: for real
    blocks exactly the torch gauge's decisions with NumPy's fewer, cheaper calls (or the
    numba pass once it has run in this process), bitwise the same result
    (``tests/core/test_direct.py``). Complex and larger blocks go the torch way.

    >>> v = torch.tensor([[[0.6, 0.8], [-0.8, 0.6]]], dtype=torch.float64)
    >>> fix_gauge_small_(v)[0]
    tensor([[-0.6000,  0.8000],
            [ 0.8000,  0.6000]], dtype=torch.float64)
    """
    if (
        vectors.numel() == 0
        or vectors.numel() > SMALL_GAUGE_MAX_ENTRIES
        or vectors.device.type != "cpu"
        or vectors.requires_grad
    ):
        return fix_gauge_(vectors)
    if native_gauge_(vectors):
        return vectors
    tol = default_tolerance(vectors.dtype)
    # (..., vector, entry): C-contiguous for LAPACK's column-major output
    rows = np.swapaxes(vectors.numpy(), -1, -2)
    if vectors.is_complex():
        if vectors.dtype in _NUMBA_GAUGE_WARM and rows.flags.c_contiguous:
            phase = _numba_phase_kernel(vectors.dtype)  # has run in this process: one pass
            m, n = rows.shape[-2], rows.shape[-1]
            if phase is not None and phase(rows.view(rows.real.dtype).reshape(-1, m, 2 * n)):
                return vectors
        if not _numpy_complex_phase_(rows, tol, vectors.dtype):
            _complex_phase_(vectors)
        return vectors
    if vectors.dtype in _NUMBA_GAUGE_WARM:  # compiled already in this process: one pass
        kernel = _numba_gauge_kernel(vectors.dtype)
        if kernel is not None and rows.flags.c_contiguous:
            kernel(rows.reshape(-1, rows.shape[-2], rows.shape[-1]))
            return vectors
    if rows.size <= _PYTHON_GAUGE_MAX_ENTRIES and rows.flags.c_contiguous:
        flips = _python_flips(rows, tol)
        if flips is not None:  # no row near an opposite-sign tie: the peaks' signs
            flat = rows.reshape(-1, rows.shape[-1])  # a view (C-contiguous)
            if len(flips) > 4:
                flat[flips] *= -1
            else:  # a view per row: 1.2 us each, against 6 us for a fancy index
                for i in flips:
                    flat[i] *= -1
            return vectors
    lo, hi = rows.min(-1), rows.max(-1)
    # hi >= -lo exactly when fl(hi + lo) >= 0 (a rounded sum keeps the sign of the exact
    # one, and is zero only when it is); a zero column (s = +-0) counts as a tie below,
    # which resolves it to +1 as the torch gauge does
    s = hi + lo
    sign = np.copysign(rows.dtype.type(1), s)
    tie = np.abs(s) <= tol * np.maximum(hi, -lo)
    if tie.any():  # opposite-sign near-ties: the first near-peak entry decides
        peak = np.maximum(hi, -lo)[tie]
        near = np.abs(rows[tie]) >= (peak * (1 - tol))[:, None]
        pivot = np.take_along_axis(rows[tie], near.argmax(-1)[:, None], -1)[:, 0]
        sign[tie] = np.where(pivot < 0, -1, 1)
    rows *= sign[..., None]
    return vectors
