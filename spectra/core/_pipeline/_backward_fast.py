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
from torch.autograd import forward_ad

from .._solvers import _native
from .._support import _threads
from .._support._arrays import default_tolerance
from .._support._threads import cpu_count, fan_out
from ._gauge import (
    _PYTHON_GAUGE_MAX_ENTRIES,
    SMALL_GAUGE_MAX_ENTRIES,
    _python_flips,
    fix_gauge_small_,
    sign_flips,
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
    if w.dim() == 1 and w.is_cpu and len(w) <= _PYTHON_ROWS_MAX:
        if w.dtype == torch.float64:
            return _row_separated(w.tolist(), tol)  # one matrix: one tolist, no detach
        if w.dtype == torch.float32:
            sure = _row_separated_f32(w.tolist(), tol)
            if sure is not None:
                return sure
    n = w.shape[-1]
    if n < 2 or w.numel() == 0:
        return True
    x = w.detach()
    if x.is_cpu:
        if x.dtype == torch.float64 and x.numel() <= _PYTHON_ROWS_MAX:
            # Python floats are float64: the same gaps and bounds in a few bytecodes
            return all(_row_separated(row, tol) for row in x.reshape(-1, n).tolist())
        y = x.numpy()
        scale = np.maximum(np.abs(y).max(-1, keepdims=True), np.finfo(y.dtype).tiny)
        return bool((np.diff(y, axis=-1) > tol * scale).all())
    scale = x.abs().amax(-1, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)
    return bool((x.diff(dim=-1) > tol * scale).all())


def _row_separated(row: list[float], tol: float) -> bool:
    """:func:`well_separated` for one ascending row of float64 eigenvalues."""
    if len(row) < 2:
        return True
    bound = tol * max(max(row), -min(row), _TINY64)
    prev = row[0]
    for cur in row[1:]:
        if not cur - prev > bound:  # NaN fails too
            return False
        prev = cur
    return True


#: the float64 screen of float32 gaps decides only this far (relative) from the bound: the
#: float32 rounding of a gap and of the bound moves each by at most ~1.2e-7 of itself
_F32_MARGIN = 1e-5
#: below this bound (float32 subnormal territory once multiplied out) the screen abstains
_F32_SMALLEST_BOUND = 1e-30


def _row_separated_f32(row: list[float], tol: float) -> bool | None:
    """:func:`well_separated`'s float32 answer for one ascending row (Python floats holding
    float32 values), computed in float64 where no float32 rounding could change it, else
    ``None`` (the NumPy test decides). NaN or Inf anywhere: ``False``, as there."""
    if len(row) < 2:
        return True
    if any(x != x for x in row):
        return False
    bound = tol * max(max(row), -min(row), _TINY32)
    if not bound > _F32_SMALLEST_BOUND:
        return None
    sure, unsure = bound * (1 + _F32_MARGIN), bound * (1 - _F32_MARGIN)
    verdict: bool | None = True
    prev = row[0]
    for cur in row[1:]:
        gap = cur - prev
        if not gap > sure:
            if not gap > unsure:  # (an Inf bound lands here too: no gap exceeds it)
                return False
            verdict = None
        prev = cur
    return verdict


#: up to this many eigenvalues :func:`well_separated` reads them as Python floats
_PYTHON_ROWS_MAX = 256
_TINY64 = torch.finfo(torch.float64).tiny
_TINY32 = float(torch.finfo(torch.float32).tiny)


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
    if v.dim() == 2 and gv is not None:
        return _torch_backward_one(w, v, gw, gv)
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


def _torch_backward_one(
    w: torch.Tensor, v: torch.Tensor, gw: Grad, gv: torch.Tensor
) -> torch.Tensor:
    """:func:`torch_backward` for one matrix: the same operations with fewer Python calls
    (``mm``, which 2-D ``matmul`` calls; ``.T``, what ``mH`` is for real ``v``; ``w``
    broadcast against its column), so the same bits."""
    complex_ = v.is_complex()
    vt = v.mH if complex_ else v.T
    return _finish_one(w, v, vt, torch.mm(vt, gv), gw, complex_)


def _finish_one(
    w: torch.Tensor, v: torch.Tensor, vt: torch.Tensor, m: torch.Tensor, gw: Grad, complex_: bool
) -> torch.Tensor:
    """:func:`_torch_backward_one` from ``m = V^H gV`` on."""
    gap = w - w.unsqueeze(-1)  # gap[i, j] = w_j - w_i
    if torch.is_grad_enabled():
        gap.fill_diagonal_(1.0)
    inner = (m - (m.mH if complex_ else m.T)).mul_(0.5).div_(gap)
    if gw is not None:
        inner.diagonal().copy_(gw)
    else:
        inner.fill_diagonal_(0.0)
    return torch.mm(v, torch.mm(inner, vt))


def phase_free(v: torch.Tensor, gv: torch.Tensor) -> bool:
    """Whether :func:`~._autograd._unresolved`'s phase test flags no matrix, from ``diag(V^H gV)``
    alone (``n^2`` work): its peak is at most the whole matrix's, so a diagonal below
    this bound is below the detector's (the general route decides anything else)."""
    if v.dim() == 2 and v.is_cpu and v.numel() <= _PYTHON_GAUGE_MAX_ENTRIES:
        sure = _phase_free_one(v, gv)
        if sure is not None:
            return sure
    d = (v.conj() * gv).sum(-2)  # diag(V^H gV)
    peak = d.abs().amax(-1, keepdim=True)
    return not bool((d.imag.abs() > 1e3 * torch.finfo(peak.dtype).eps * peak).any())


def _phase_free_one(v: torch.Tensor, gv: torch.Tensor) -> bool | None:
    """:func:`phase_free` of one small CPU matrix in a few NumPy calls (torch's dozen ops
    on tiny tensors cost more than the backward's arithmetic), or ``None`` where its
    rounding could decide otherwise than torch's (within a factor of two of the bound:
    the two sums of ``n`` products differ by a few ``eps * peak``, the bound is
    ``1e3 eps * peak``), a NaN, or a gradient that is itself tracked (double backward)."""
    if gv.requires_grad or gv.is_conj() or gv.is_neg() or not gv.is_cpu:
        return None
    vn, gn = v.detach().numpy(), gv.detach().numpy()
    d = np.einsum("ij,ij->j", vn.conj(), gn)  # diag(V^H gV)
    return _phase_decision(d)


def _phase_decision(d: np.ndarray) -> bool | None:
    """:func:`phase_free`'s test on a diagonal ``d`` of ``V^H gV`` rounded otherwise than
    torch's: decided only beyond a factor of two of the bound, else ``None``."""
    bound = 1e3 * float(np.finfo(d.real.dtype).eps) * float(np.abs(d).max())
    worst = float(np.abs(d.imag).max())
    if worst < 0.5 * bound:
        return True
    if worst > 2.0 * bound:
        return False
    return None


def complex_backward_one(
    w: torch.Tensor, v: torch.Tensor, gw: Grad, gv: torch.Tensor
) -> torch.Tensor | None:
    """For one complex CPU matrix on a separated spectrum: :func:`torch_backward` where
    :func:`phase_free` holds (its test read off the diagonal of ``V^H gV``, which the
    formula computes anyway, where that decides as torch's test would; else torch's
    test), ``None`` where it does not (the general route then decides, and warns)."""
    vt = v.mH
    m = torch.mm(vt, gv)
    free = _phase_free_diagonal(m) if v.numel() <= _PYTHON_GAUGE_MAX_ENTRIES else None
    if free is None:
        free = phase_free(v, gv)
    return _finish_one(w, v, vt, m, gw, True) if free else None


def _phase_free_diagonal(m: torch.Tensor) -> bool | None:
    """:func:`_phase_free_one` from ``m = V^H gV`` itself (its diagonal: the same sums,
    rounded in another order, so the same margin)."""
    if m.requires_grad or not m.is_cpu:
        return None
    d = m.numpy().diagonal()
    return _phase_decision(d)


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
    tol = _SCREEN_TOLERANCE.get(x.dtype) if x.is_cpu else None
    if tol is None:  # not a real CPU block: the gauge on a copy, the flips read off
        fixed = fix_gauge_small_(x.clone())
        factor = 1 - 2 * ((fixed != x) & ~x.isnan()).any(-2).to(x.dtype)
        return v * factor.unsqueeze(-2)
    flips = _flips(x, x.numpy(), tol)
    if isinstance(flips, list):
        if not flips:
            return v
        return v * _sign_factor(x.dtype, tuple(x.shape), tuple(flips))
    if not flips.any():
        return v
    return v * torch.from_numpy(_signs(flips, x.dtype))


def gauge_fresh(v: torch.Tensor) -> torch.Tensor:
    """:func:`gauge_by_signs` for ``v`` straight from ``torch.linalg.eigh``'s own autograd
    node (plain autograd, no forward-mode tangent): where the block is a real CPU one and
    no saved-tensor hooks are active, the flipped columns are negated in place (by the
    compiled gauge, :func:`~spectra.core._solvers._native.native_gauge_`, where built,
    else through a NumPy view) in the memory the node's saved ``v`` shares, so that there
    is no multiply node (10-20 us of one small matrix's forward + backward, measured);
    elsewhere :func:`gauge_by_signs`.

    Sound because the node's backward is covariant under column signs: with ``S`` the
    flips, ``eigh_backward(w, V S, gw, G)`` equals ``eigh_backward(w, V, gw, G S)``, the
    gradient through ``V`` and the multiply (both conjugate ``V^H G`` by ``S``, exactly),
    so the node differentiates the gauged outputs as the custom rule does, bit for bit
    (``tests/core/test_backward_one.py``), double backward included (its saved ``V`` is
    the gauged output, whose history is the node). The write bypasses the version
    counter on purpose: it happens before anyone else holds ``v``. Saved-tensor hooks
    (``torch.autograd.graph.saved_tensors_hooks``, ``save_on_cpu``, checkpointing) may
    have packed a copy of the ungauged ``v``: then the multiply runs.

    >>> a = torch.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=torch.float64, requires_grad=True)
    >>> w, v = torch.linalg.eigh(a)
    >>> gauge_fresh(v) is v, type(v.grad_fn).__name__
    (True, 'LinalgEighBackward0')
    >>> torch.equal(v.detach(), fix_gauge_small_(torch.linalg.eigh(a.detach()).eigenvectors))
    True
    """
    if _saved_tensor_hooks(False) is not None or forward_ad._current_level >= 0 or v.is_complex():
        return gauge_by_signs(v)
    x = v.detach()
    compiled = getattr(_native, "native_gauge_", None)  # the compiled gauge, where built
    if compiled is not None and compiled(x):  # one C pass, in place (the same decisions)
        return v
    tol = _SCREEN_TOLERANCE.get(x.dtype) if x.is_cpu else None
    if tol is None:
        return gauge_by_signs(v)
    flips: list[int] | np.ndarray | None = None
    if v.dim() == 2 and v.numel() <= _SCREEN_MAX_ENTRIES:  # one matrix: a tolist of v
        flips = _column_flips(v.tolist(), tol)
        if flips == []:
            return v
    a = x.numpy()  # (..., entry, vector): a view of v's memory and of the node's saved v
    if flips is None:
        flips = _flips(x, a, tol)
    if isinstance(flips, list):
        if flips:
            np.multiply(a, _sign_array(x.dtype, a.shape, tuple(flips)), out=a)
    elif flips.any():
        np.multiply(a, _signs(flips, x.dtype), out=a)
    return v


def _column_flips(rows: list[list[float]], tol: float) -> list[int] | None:
    """``_python_flips`` on one matrix's ``tolist`` (rows of entries): the columns whose
    gauge sign is -1, or ``None`` where a column might hold an opposite-sign near-tie or
    is not finite (the same decisions: the same floats, the same arithmetic)."""
    return sign_flips(zip(*rows, strict=True), tol)


def _flips(x: torch.Tensor, a: np.ndarray, tol: float) -> list[int] | np.ndarray:
    """The columns of the real CPU block ``x`` (no history; ``a`` its NumPy view) that
    the gauge negates: a list of flat column indices (the Python screen, small blocks) or
    a mask ``(..., m)`` (the NumPy screen, or the gauge itself on a copy where a screen
    cannot decide: a near-tie, a non-finite entry, a large block)."""
    size = a.size
    if 0 < size <= SMALL_GAUGE_MAX_ENTRIES:
        rows = a.T if a.ndim == 2 else np.swapaxes(a, -1, -2)  # (..., vector, entry)
        if size <= _SCREEN_MAX_ENTRIES:
            flips = _python_flips(rows, tol)
            if flips is not None:
                return flips
        else:
            mask = _numpy_flips(rows, tol)
            if mask is not None:
                return mask
    fixed = fix_gauge_small_(x.clone()).numpy()
    return ((fixed != a) & ~np.isnan(a)).any(-2)  # NaN: no sign to read


def _signs(mask: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """The ``(..., 1, m)`` factor of -1 where ``mask`` (``(..., m)``) is set, else 1."""
    return np.where(mask, -1.0, 1.0).astype(_NUMPY_REAL[dtype])[..., None, :]


@functools.lru_cache(maxsize=4096)
def _sign_array(dtype: torch.dtype, shape: tuple[int, ...], flips: tuple[int, ...]) -> np.ndarray:
    """:func:`_sign_factor` as a read-only NumPy array (for an in-place multiply)."""
    signs = _sign_factor(dtype, shape, flips).numpy()
    signs.flags.writeable = False
    return signs


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
_NUMPY_REAL = {torch.float32: np.float32, torch.float64: np.float64}
#: the innermost saved-tensor hooks (``None`` when none is active)
_saved_tensor_hooks = torch._C._autograd._top_saved_tensors_default_hooks
