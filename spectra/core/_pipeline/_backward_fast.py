"""The eigh backward's short route: torch's own formula where nothing needs masking.

On a well-separated real spectrum (no pair within the degenerate tolerance, no
broadening) the degenerate-safe backward of :mod:`._autograd` masks nothing and detects
nothing: its value is ``torch.linalg.eigh``'s gradient. :func:`torch_backward` computes
that with torch's operations in torch's order (bitwise its gradient), after a test of
the gaps (:func:`well_separated`) that reads the eigenvalues once, so that one small
matrix's backward costs a dozen tensor operations, not the detector's forty.

A caller whose solver is ``torch.linalg.eigh`` itself (the direct path) can do better
still: run it on the tracked input, so that torch's own autograd node (C++) differentiates
it, and apply the gauge as a multiply by the columns' signs (:func:`gauge_by_signs`); see
``eigh_with_grad(..., native=...)``.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

from .._support import _threads
from .._support._arrays import default_tolerance
from .._support._threads import cpu_count, fan_out
from ._gauge import (
    _PYTHON_GAUGE_MAX_ENTRIES,
    SMALL_GAUGE_MAX_ENTRIES,
    _python_flips,
    fix_gauge_small_,
)

Grad = torch.Tensor | None  # a gradient that may be absent


def well_separated(w: torch.Tensor, tol: float) -> bool:
    """Whether no two eigenvalues of any matrix of ``w`` (``(..., n)``, ascending) lie
    within ``tol`` times that matrix's largest ``|w|``: :func:`_factor` masks no pair.

    For ascending rows the closest pair is an adjacent one (a rounded difference is
    monotone in its operands), so the ``n - 1`` gaps decide, with :func:`_factor`'s own
    arithmetic (the gap and ``tol * scale`` in ``w``'s dtype); a descending or NaN gap
    fails the test (the general backward then decides pair by pair).

    >>> well_separated(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64), 1e-13)
    True
    >>> well_separated(torch.tensor([1.0, 1.0, 3.0], dtype=torch.float64), 1e-13)
    False
    """
    n = w.shape[-1]
    if n < 2 or w.numel() == 0:
        return True
    x = w.detach()
    if x.device.type == "cpu":
        if x.dtype == torch.float64 and x.numel() <= _PYTHON_ROWS_MAX:
            # Python floats are float64: the same gaps and bounds in a few bytecodes
            rows = x.tolist() if x.dim() == 1 else x.reshape(-1, n).tolist()
            for row in rows if x.dim() > 1 else (rows,):
                bound = tol * max(max(row), -min(row), _TINY64)
                prev = row[0]
                for cur in row[1:]:
                    if not cur - prev > bound:
                        return False
                    prev = cur
            return True
        y = x.numpy()
        scale = np.maximum(np.abs(y).max(-1, keepdims=True), np.finfo(y.dtype).tiny)
        return bool((np.diff(y, axis=-1) > tol * scale).all())
    scale = x.abs().amax(-1, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)
    return bool((x.diff(dim=-1) > tol * scale).all())


#: up to this many eigenvalues :func:`well_separated` reads them as Python floats
_PYTHON_ROWS_MAX = 256
_TINY64 = torch.finfo(torch.float64).tiny


def torch_backward(w: torch.Tensor, v: torch.Tensor, gw: Grad, gv: Grad) -> torch.Tensor:
    """``torch.linalg.eigh``'s own backward with torch's operations in torch's order
    (bitwise its gradient: ``tests/core/test_autograd_fast.py``) and no mask: the
    degenerate-safe backward's value on a well-separated spectrum.

    >>> a = torch.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=torch.float64)
    >>> w, v = torch.linalg.eigh(a)
    >>> g = torch_backward(w, v, torch.ones(2, dtype=a.dtype), None)  # d trace(A) / dA
    >>> bool(torch.allclose(g, torch.eye(2, dtype=a.dtype)))
    True
    """
    vh = v.mH
    if gv is None:
        assert gw is not None
        return torch.matmul(v * gw.unsqueeze(-2), vh)
    m = torch.matmul(vh, gv)
    # torch: 0.5 * (m - m^H), divided by gap[i, j] = w_j - w_i whose diagonal is set to 1;
    # the diagonal is then overwritten, by gw or by 0, so without a graph to build (no
    # double backward, whose derivative of 0 / 0 would be NaN) the 1s can be left out
    gap = w.unsqueeze(-2) - w.unsqueeze(-1)
    if torch.is_grad_enabled():
        gap.diagonal(0, -2, -1).fill_(1.0)
    inner = (m - m.mH).mul_(0.5).div_(gap)
    if gw is not None:
        inner.diagonal(0, -2, -1).copy_(gw)
    else:
        inner.diagonal(0, -2, -1).zero_()
    return torch.matmul(v, torch.matmul(inner, vh))


def phase_free(v: torch.Tensor, gv: torch.Tensor) -> bool:
    """Whether :func:`~._autograd._unresolved`'s phase test flags no matrix, from ``diag(V^H gV)``
    alone (``n^2`` work): its peak is at most the whole matrix's, so a diagonal below
    this bound is below the detector's (the general route decides anything else)."""
    d = (v.conj() * gv).sum(-2)  # diag(V^H gV)
    peak = d.abs().amax(-1, keepdim=True)
    return not bool((d.imag.abs() > 1e3 * torch.finfo(peak.dtype).eps * peak).any())


def _in_fan_out() -> bool:
    """Whether this thread runs a part of a fan-out (a nested one could wait on itself)."""
    return getattr(_threads._local, "cancel", None) is not None


#: from this much work (matrices x n^3) the short route's backward is split over the cores
FAN_OUT_WORK = 1 << 18


def split_workers(v: torch.Tensor) -> int:
    """How many parts a backward on the eigenvectors ``v`` (``(..., n, n)``) is split into:
    the cores, on a CPU batch of at least :data:`FAN_OUT_WORK` (matrices x n^3), outside a
    graph being built (double backward) and outside a fan-out's part; else 1."""
    n = v.shape[-1]
    batch = v.numel() // max(1, n * n)
    workers = min(cpu_count(), batch)
    if (
        workers < 2
        or v.device.type != "cpu"
        or batch * n**3 < FAN_OUT_WORK
        or torch.is_grad_enabled()
        or _in_fan_out()
    ):
        return 1
    return workers


def short_backward(w: torch.Tensor, v: torch.Tensor, gw: Grad, gv: Grad) -> torch.Tensor:
    """:func:`torch_backward`, on a large CPU batch split over the core's thread pool
    (one kernel thread per part, as the forward's fan-out: torch's own multi-threaded
    small matmuls oversubscribe a loaded machine); each matrix's bits are the same either
    way. Not while building a graph (double backward) or inside a fan-out's part."""
    n = v.shape[-1]
    batch = v.numel() // max(1, n * n)
    workers = split_workers(v)
    if workers < 2:
        return torch_backward(w, v, gw, gv)
    fw, fv = w.reshape(batch, n), v.reshape(batch, n, n)
    fgw = None if gw is None else gw.reshape(batch, n)
    fgv = None if gv is None else gv.reshape(batch, n, n)
    out = torch.empty((batch, n, n), dtype=v.dtype, device=v.device)

    def part(lo: int, hi: int) -> None:
        out[lo:hi] = torch_backward(
            fw[lo:hi],
            fv[lo:hi],
            None if fgw is None else fgw[lo:hi],
            None if fgv is None else fgv[lo:hi],
        )

    fan_out(part, batch, workers)
    return out.reshape(v.shape)


def gauge_by_signs(v: torch.Tensor) -> torch.Tensor:
    """``v`` (real, with autograd history) in the core's gauge
    (:func:`~._gauge.fix_gauge_small_`) as ``v`` times its columns' signs: the same
    values, bitwise (a multiply by +-1 is exact), with the gradient through one multiply
    (none when no column flips).

    Small blocks take the gauge's own sign screen (``_python_flips``: the columns to
    flip, from one ``tolist``), larger ones its NumPy twin (:func:`_numpy_flips`); where
    the screen cannot decide (a near-tie, a non-finite entry) the gauge runs on a copy
    and the flipped columns are read off.

    >>> v = torch.tensor([[0.6, 0.8], [-0.8, 0.6]], dtype=torch.float64, requires_grad=True)
    >>> gauge_by_signs(v).detach()
    tensor([[-0.6000,  0.8000],
            [ 0.8000,  0.6000]], dtype=torch.float64)
    """
    x = v.detach()
    size = x.numel()
    tol = _SCREEN_TOLERANCE.get(x.dtype) if x.device.type == "cpu" else None
    if tol is not None and 0 < size <= SMALL_GAUGE_MAX_ENTRIES:
        rows = x.mT.numpy()  # (..., vector, entry): C-contiguous for LAPACK's output
        if size <= _SCREEN_MAX_ENTRIES and rows.flags.c_contiguous:
            flips = _python_flips(rows, tol)
            if flips is not None:
                if not flips:
                    return v
                return v * _sign_factor(x.dtype, tuple(x.shape), tuple(flips))
        elif size > _SCREEN_MAX_ENTRIES:
            mask = _numpy_flips(rows, tol)
            if mask is not None:
                if not mask.any():
                    return v
                signs = np.where(mask, -1.0, 1.0).astype(rows.dtype)[..., None, :]
                return v * torch.from_numpy(signs)
    fixed = fix_gauge_small_(x.clone())
    if fixed.device.type == "cpu":
        got, was = fixed.numpy(), x.numpy()
        flipped = ((got != was) & ~np.isnan(was)).any(-2)  # NaN: no sign to read
        if not flipped.any():
            return v
        factor = torch.from_numpy(np.where(flipped, -1.0, 1.0).astype(got.dtype))
    else:
        factor = 1 - 2 * ((fixed != x) & ~x.isnan()).any(-2).to(x.dtype)
    return v * factor.unsqueeze(-2)


def _numpy_flips(rows: np.ndarray, tol: float) -> np.ndarray | None:
    """``_python_flips`` in NumPy passes: the mask of rows (``(..., vector, entry)``) whose
    gauge sign is ``-1`` (min outweighs max), or ``None`` where a row might hold an
    opposite-sign near-tie or is not finite. The same float64 arithmetic as the Python
    screen (float32 rows are widened exactly); a NaN anywhere makes it undecided.
    """
    r = rows if rows.dtype == np.float64 else rows.astype(np.float64)
    hi, lo = r.max(-1), r.min(-1)
    s = hi + lo
    if not (np.abs(s) > 2 * tol * (hi - lo)).all():  # a possible tie, NaN or Inf
        return None
    return s < 0


@functools.lru_cache(maxsize=4096)
def _sign_factor(
    dtype: torch.dtype, shape: tuple[int, ...], flips: tuple[int, ...]
) -> torch.Tensor:
    """The +-1 factor flipping ``flips`` (indices of the ``(..., vector)`` rows) of a block
    of ``shape``: ``(n,)`` for one matrix, ``(..., 1, n)`` for a batch. Cached (small
    blocks have few patterns; the tensor is only ever read, by the multiply and its
    backward), made outside inference mode so that autograd may save it."""
    n = shape[-1]
    signs = [1.0] * (math.prod(shape) // n)
    for i in flips:
        signs[i] = -1.0
    with torch.inference_mode(False):
        factor = torch.tensor(signs, dtype=dtype)
        return factor if len(shape) == 2 else factor.reshape(*shape[:-2], 1, n)


#: up to this many entries :func:`gauge_by_signs` asks the gauge's sign screen
_SCREEN_MAX_ENTRIES = _PYTHON_GAUGE_MAX_ENTRIES
#: the screen's tolerance for the real dtypes it serves (the gauge's own)
_SCREEN_TOLERANCE = {d: default_tolerance(d) for d in (torch.float32, torch.float64)}
