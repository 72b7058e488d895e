"""The direct path: one CPU matrix, or a handful, with no fixed cost above LAPACK's.

A call such as ``spectra.eigh(one_8x8)`` used to pay ~300 us of pipeline (options,
preparation, planning, the executor, a lane kernel padded to 64 lanes, a gauge of many tiny
torch ops) for a 6 us solve. When the planner would run the call as one LAPACK call in the
caller's thread (:func:`~spectra.core._pipeline._plan.direct_path`: CPU, no ``b``, no
options, a batch whose serial solve stays below the fan-out threshold, no kernel), this
module does exactly what that plan would do, without the layers: the executor's quick
input check (:func:`~spectra.core._pipeline._checks.quick_check`), the aligned LAPACK call
(:func:`~spectra.core._solvers._torch_lapack.torch_eigh`) on one kernel thread, the gauge
(a NumPy pass that makes the torch gauge's decisions,
:func:`~spectra.core._pipeline._gauge.fix_gauge_small_`),
the ``k`` slice. Results are bitwise those of the planned path
(``tests/core/test_direct.py``); anything unusual (a check that fails, gradients, a
non-finite result) returns ``None`` and the call takes the full path, which produces the
errors and the answer.

>>> import torch
>>> a = torch.tensor([[2.0, 1.0], [1.0, 2.0]], dtype=torch.float64)
>>> w, v = solve_direct(a, Request())
>>> w
tensor([1., 3.], dtype=torch.float64)
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import torch
from torch.autograd import forward_ad

from .._errors import InputError
from .._options import PLANNING_FIELDS, Options, build_cached, check_tolerance
from .._request import Request
from .._solvers._native import (
    mark_entry_route,
    native_entry,
    native_exactly_hermitian,
    native_few_entry,
    native_solve,
    native_solve_batch,
    reset_entry_routes,
)
from .._solvers._torch_lapack import SEQUENTIAL_N as SEQUENTIAL_LAPACK_N
from .._solvers._torch_lapack import lapack_aligned, one_kernel_thread, torch_eigh
from .._strategies import STRATEGIES, preferred, registry_version
from .._support._threads import restore_thread_kernel_threads, set_thread_kernel_threads
from ._autograd import eigh_with_grad
from ._autograd_one import _TOL32, _TOL64, eigh_native, node_or_rule, with_backward
from ._backward_fast import gauge_fresh
from ._checks import InputRejected, quick_check, values_finite
from ._gauge import fix_gauge_small_
from ._plan import THREADED_LAPACK_MIN_N, Plan, compiled_closed_form, direct_path, plan
from ._prepare import check_k, check_plan
from ._select import select_k

_TORCH_DTYPES = frozenset((torch.float32, torch.float64, torch.complex64, torch.complex128))
_NUMPY_DTYPES = frozenset(np.dtype(d) for d in ("float32", "float64", "complex64", "complex128"))


def _plain_cpu(a: torch.Tensor) -> bool:
    """A strided CPU tensor of a solver dtype with no lazy conj/neg bit, no ``torch.func``
    wrapper and no forward-mode tangent (those take the full path)."""
    return not (
        not a.is_cpu  # (a sparse CPU tensor is refused by its layout)
        or a.dtype not in _TORCH_DTYPES
        or a.layout != torch.strided
        or a.is_conj()
        or a.is_neg()
        or torch._C._functorch.is_functorch_wrapped_tensor(a)  # vmap, grad, jvp
        or (forward_ad._current_level >= 0 and forward_ad.unpack_dual(a).tangent is not None)
    )


def _as_cpu_tensor(a: Any) -> tuple[torch.Tensor, bool] | None:
    """``a`` as a CPU tensor without a copy, and whether it came as NumPy; ``None`` for
    anything the full path must convert (other types, dtypes, layouts, devices, grads)."""
    if type(a) is torch.Tensor:
        return (a, False) if _plain_cpu(a) else None
    if type(a) is np.ndarray:
        if a.dtype not in _NUMPY_DTYPES or not a.flags.c_contiguous or not a.flags.aligned:
            return None
        if not a.dtype.isnative or not a.flags.writeable:
            return None
        return torch.from_numpy(a), True
    return None


def _solve(flat: torch.Tensor, vectors: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """LAPACK on ``flat`` (no history) with the plan's kernel threads, in this thread."""
    old = (
        set_thread_kernel_threads(1)
        if one_kernel_thread(flat.shape[-1], flat.dtype, vectors)
        else None
    )
    try:
        if not lapack_aligned(flat):  # one aligned call per matrix, as the planned path
            return torch_eigh(flat, vectors)
        if vectors:
            w, v = torch.linalg.eigh(flat)
            return w, v
        return torch.linalg.eigvalsh(flat), None
    finally:
        restore_thread_kernel_threads(old)


def _solve_gauged(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eigenpairs in the gauge: the solver the autograd rule wraps."""
    w, v = _solve(x.detach(), True)
    assert v is not None
    return w, fix_gauge_small_(v)


def _solve_ungauged(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`_solve_gauged` without the gauge, for eigenvalues only: their gradient
    ``V diag(gw) V^H`` has the same bits whatever the columns' signs (each term carries
    a sign squared)."""
    w, v = _solve(x.detach(), True)
    assert v is not None
    return w, v


def _eigh_tracked(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    # the plan's kernel threads (below SEQUENTIAL_LAPACK_N LAPACK runs sequentially)
    old = set_thread_kernel_threads(1) if one_kernel_thread(x.shape[-1], x.dtype, True) else None
    try:
        w, v = torch.linalg.eigh(x)
    finally:
        restore_thread_kernel_threads(old)
    return w, v


def _solve_native(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`_solve_gauged` on the tracked ``x`` itself (``x`` LAPACK-aligned): the same
    LAPACK call, so the same bits, differentiated by torch's own autograd node; the gauge
    applied to the node's own output (:func:`~._backward_fast.gauge_fresh`)."""
    w, v = _eigh_tracked(x)
    return w, gauge_fresh(v)


def _solve_checked(
    flat: torch.Tensor, vectors: bool, tracked: bool, check: bool
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """The solve, gauge and autograd rule of the planned path; ``None`` if ``check`` finds
    a non-finite result (the full path then refuses the input with its indices)."""
    if tracked:  # the planned path's autograd rule around the same solve
        aligned = lapack_aligned(flat)
        known = False  # whether the eigenvalues are known to be finite
        if aligned and not flat.is_complex() and not torch._C._are_functorch_transforms_active():
            # torch's own node, the default options: the short entry (same answer)
            w, v, known = eigh_native(flat, _solve_native if vectors else _eigh_tracked)
            known = known and flat.shape[-1] > 1  # separated: every gap finite
        elif vectors:
            native = _solve_native if aligned else None
            w, v = eigh_with_grad(flat, _solve_gauged, native=native)
        else:  # eigenvalues only: no gauge to compute
            w, v = eigh_with_grad(flat, _solve_ungauged, native=_eigh_tracked if aligned else None)
        if check and not known and not values_finite(w.detach()):
            return None
        return w, (v if vectors else None)
    w, vv = _solve(flat, vectors)
    if check and not values_finite(w):
        return None  # e.g. a symmetric Inf
    if vv is not None:
        fix_gauge_small_(vv)
    return w, vv


def _tracked_one(
    a: torch.Tensor, vectors: bool, check: bool
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """:func:`_solve_checked`'s tracked route for one plain 2-D CPU matrix (LAPACK-aligned,
    as any single matrix) in its fewest steps, the checks included. Under plain autograd
    a real matrix goes to torch's own node, the gauge written into it
    (:func:`~._autograd_one.eigh_native`: torch's C++ backward where separated); a
    complex one (whose phase-dependent losses torch's node refuses) to the compiled
    one-call route (check, LAPACK, gauge) under the lightest node
    (:func:`~._autograd_one.with_backward`), where built, and so does one of ``n <= 3``
    that the plan solves by the compiled closed form (:func:`_closed_small`)."""
    plain = not torch._C._are_functorch_transforms_active()
    closed = _closed_small(a.shape[0], a.dtype)
    if closed and not plain:
        return None  # the closed form under a transform: the full path's autograd rule
    if plain and (a.is_complex() or closed):
        done = native_solve(a, True, check)  # eigenvalues only: the backward needs V too
        if done is not None:
            w, v, gauged = done
            assert v is not None
            if vectors and not gauged:  # squared moduli outside the compiled gauge's range
                fix_gauge_small_(v)
            w, v = with_backward(a, w, v)
            return w, (v if vectors else None)
        if closed:
            return None  # refused or not finite: the full path decides (never LAPACK)
    if check and not torch.equal(a, a.mH):  # exactly Hermitian (and no NaN)
        return None
    if not plain or a.is_complex():
        return _solve_checked(a, vectors, True, check)
    w, v, separated = eigh_native(a, _solve_native if vectors else _eigh_tracked)
    # well separated (n > 1): every gap finite, so every eigenvalue
    if check and not (separated and a.shape[0] > 1) and not values_finite(w.detach()):
        return None
    return w, (v if vectors else None)


@functools.lru_cache(maxsize=64)
def _builtin_lapack(version: int) -> bool:
    """Whether the registered ``torch`` strategy is the built-in one (a replacement is
    honoured: the direct path then steps aside)."""
    builtin = STRATEGIES.get("torch")
    return builtin is not None and builtin.solve is torch_eigh


@functools.lru_cache(maxsize=64)
def _closed_direct(version: int) -> bool:
    """Whether one matrix of ``n <= 3`` is planned on the compiled closed form (the
    built-in ``closed-form`` strategy's claim from one matrix, :func:`direct_path`):
    then the compiled routes solve those by it, otherwise by LAPACK, as the plan says."""
    one = plan(3, 1, torch.float64)
    return _builtin_lapack(version) and one.direct and one.strategy == "closed-form"


def _entry(version: int) -> tuple[Any, bool]:
    """The C++ one-matrix entry (or ``None``) and the closed-form policy for this
    registry ``version``, each decided once; the sizes the entry was let take
    (:func:`mark_entry_route`) are forgotten when the version changes."""
    if version != _ROUTED_VERSION[0]:
        reset_entry_routes()
        _ROUTED_VERSION[0] = version
    got = _ENTRIES.get(version)
    if got is None:
        solve = native_entry(_TOL64, _TOL32) if _builtin_lapack(version) else None
        got = _ENTRIES[version] = (solve, _closed_direct(version))
    return got


_ENTRIES: dict[int, tuple[Any, bool]] = {}
#: the registry version for which the C++ entry's routes were marked
_ROUTED_VERSION = [-1]


def solve_one(
    a: Any, vectors: bool, check: bool, symmetry_tol: Any
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """The entry points' shortcut for one plain 2-D tensor and no other option (``k``,
    ``b``, a plan, options, a device): :func:`_solve_one` without building the request;
    ``None``: take the normal route."""
    if type(a) is not torch.Tensor or torch.compiler.is_compiling():
        return None
    solve, closed = _entry(registry_version())
    if solve is not None and symmetry_tol is None and forward_ad._current_level < 0:
        done = solve(a, vectors, check, closed)  # one plain matrix: the C++ entry's call
        if done is not None:
            if len(done) == 2:
                return done
            if done[2] is None:  # complex or n <= 3: the light node over pairs without history
                w, v = with_backward(a, done[0], done[1])
                return w, (v if vectors else None)
            return _entry_tracked(a, vectors, *done)
    if a.dim() == 3:  # a handful of matrices: the compiled batch, where the plan is direct
        check_tolerance(symmetry_tol, "symmetry_tol")  # its errors, as on every route
        return _solve_few(a, vectors, check)
    if a.dim() != 2:
        return None
    return _solve_one(a, vectors, check, check_tolerance(symmetry_tol, "symmetry_tol"))


#: at most this many verdicts of :func:`solve_one_alike` are remembered
ALIKE_MAX = 256
_ALIKE: dict[tuple[Any, ...], bool] = {}


def solve_one_alike(
    a: Any,
    vectors: bool,
    check: bool,
    symmetry_tol: Any,
    options: Options | None,
    execution: dict[str, Any],
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """The entry points' shortcut for one 2-D CPU tensor without history whose only other
    arguments are options (``options=``, :class:`~spectra.core.Options` fields as keywords,
    ``check``, ``symmetry_tol``) that plan it as the default call (:func:`_direct_cached`:
    the same strategy, one worker, no verification): :func:`solve_one`, as
    :func:`solve_direct` runs it for such a call, without building the request. The
    verdict is remembered per options, size, dtype and registry version, so a loop that
    passes ``workers=1`` on every call decides it once. ``None``: the normal route (which
    raises an option's error).

    >>> import torch
    >>> a = torch.diag(torch.tensor([3.0, 1.0, 2.0], dtype=torch.float64))
    >>> solve_one_alike(a, True, True, None, None, {"workers": 1})[0]
    tensor([1., 2., 3.], dtype=torch.float64)
    """
    if type(a) is not torch.Tensor or a.dim() != 2 or a.device.type != "cpu":
        return None
    if a.requires_grad and torch.is_grad_enabled():
        return None  # its backward takes the options: the full path
    n, version = a.shape[-1], registry_version()
    try:
        fields = tuple((name, type(value), value) for name, value in execution.items())
        key = (options, fields, n, a.shape[-2], a.dtype, vectors, version)
        alike = _ALIKE.get(key)
    except TypeError:  # an unhashable value: the normal route
        return None
    if alike is None:
        try:
            opts = build_cached(options, execution)
        except (TypeError, InputError):
            return None  # the normal route raises it
        alike = 0 < n == a.shape[-2] and _direct_cached(
            n, 1, a.dtype, vectors, None, False, version, opts.planning_key
        )
        if len(_ALIKE) >= ALIKE_MAX:
            _ALIKE.clear()
        _ALIKE[key] = alike
    return solve_one(a, vectors, check, symmetry_tol) if alike else None


def _solve_few(
    a: torch.Tensor, vectors: bool, check: bool
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """:func:`solve_direct`'s compiled batch for a plain ``(B, n, n)`` CPU tensor without
    history that the plan runs directly, without building the request; ``None``: the
    normal route (which decides everything else, errors included)."""
    b, n, m = a.shape
    if n != m or n == 0 or b == 0 or a.dtype not in _TORCH_DTYPES:
        return None
    if not _direct(n, b, a.dtype, vectors):
        return None
    version = registry_version()
    few = _few_entry(version)
    if few is not None and forward_ad._current_level < 0:
        done = few(a, vectors, check, _closed_direct(version))  # the C++ entry's call
        if done is not None:
            return done
    if (a.requires_grad and torch.is_grad_enabled()) or not _plain_cpu(a) or not a.is_contiguous():
        return None
    return native_solve_batch(a, vectors, check, _closed_direct(version))


def _few_entry(version: int) -> Any:
    """The C++ entry's call for a handful of matrices (or ``None``) for this registry
    ``version``, decided once (as :func:`_entry`)."""
    got = _FEW_ENTRIES.get(version)
    if got is None:
        few = native_few_entry(_TOL64, _TOL32) if _builtin_lapack(version) else None
        got = _FEW_ENTRIES[version] = (few,)
    return got[0]


_FEW_ENTRIES: dict[int, tuple[Any]] = {}


def _entry_tracked(
    a: torch.Tensor, vectors: bool, w: torch.Tensor, v: torch.Tensor, separated: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The C++ entry's tracked answer (torch's node, made there) as
    :func:`~._autograd_one.eigh_native` finishes it."""
    w, v = node_or_rule(a, w, v, separated)
    return w, (v if vectors else None)


def _closed_small(n: int, dtype: torch.dtype) -> bool:
    """Whether an ``n x n`` block (real or complex) is planned on the compiled closed
    form: only the compiled routes run it (the Python route's LAPACK would not be the
    plan's bits). ``dtype`` does not change the answer: the claim is the same for all."""
    return n <= 3 and _closed_direct(registry_version())


def _solve_one(
    a: torch.Tensor, vectors: bool, check: bool, symmetry_tol: float | None
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """One plain 2-D CPU tensor, the commonest call, in as few steps as the plan allows:
    the same exact-Hermitian test, LAPACK call on the plan's kernel threads, finiteness test and
    gauge as :func:`solve_direct`, without its generality; ``None``: take that route."""
    n = a.shape[0]
    tracked = a.requires_grad and torch.is_grad_enabled()
    if (
        n != a.shape[1]
        or not 0 < n < THREADED_LAPACK_MIN_N
        or not _plain_cpu(a)
        or not _builtin_lapack(registry_version())
    ):
        return None
    if n >= SEQUENTIAL_LAPACK_N:  # a strategy may claim one matrix (``openblas`` off Intel)
        claimed = _claimed_one(n, a.dtype, vectors or tracked, registry_version())
        if claimed is not None:
            return None if tracked else _solve_claimed(a, vectors, check, claimed)
        # unclaimed: the C++ entry takes such a matrix from the next call (on the plan's
        # kernel threads)
        mark_entry_route(a.dtype, vectors or tracked, n)
    if tracked:  # the tracked route, its own checks
        try:
            return _tracked_one(a, vectors, check)
        except RuntimeError:  # LAPACK failed: the full path decides
            return None
    done = _native_block(a, vectors, check)  # the compiled one-call route, where built
    if done is not None:
        return done
    if _closed_small(n, a.dtype):
        return None  # refused or not finite: the full path decides (never LAPACK)
    if check and not torch.equal(a, a.mH):  # exactly Hermitian (and no NaN)
        return None
    # LAPACK's syevd/heevd run sequentially below SEQUENTIAL_LAPACK_N: the same bits on
    # one thread and on torch's default ones (tests/core/test_direct.py), so the thread
    # setting, 3 us of a 15 us call, is made only from it, up to the size from which the
    # plan keeps the caller's kernel threads
    old = set_thread_kernel_threads(1) if one_kernel_thread(n, a.dtype, vectors) else None
    try:
        if vectors:
            w, v = torch.linalg.eigh(a)
        else:
            w, v = torch.linalg.eigvalsh(a), None
    finally:
        restore_thread_kernel_threads(old)
    if check and not math.isfinite(sum(w.tolist())):
        return None  # e.g. a symmetric Inf: the full path refuses it
    if v is not None:
        fix_gauge_small_(v)
    return w, v


@functools.lru_cache(maxsize=1024)
def _claimed_one(n: int, dtype: torch.dtype, vectors: bool, version: int) -> Any:
    """The ``solve`` of the strategy that claims one CPU matrix of ``n x n`` ``dtype``
    (``Runs.prefers`` from one matrix on, the compiled closed form aside), or ``None``."""
    claimed = preferred(n, dtype, torch.device("cpu"), vectors, 1)
    if claimed is None or compiled_closed_form(claimed[0], n):
        return None
    return STRATEGIES[claimed[0]].solve


def _solve_claimed(
    a: torch.Tensor, vectors: bool, check: bool, solve: Any
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """One matrix on the strategy that claims it, as the planned call runs a batch of one
    (its check, the strategy's solve on one kernel thread, the gauge): bitwise those
    results (``tests/core/test_openblas.py``) without the pipeline's ~0.2 ms; ``None``
    where the full path must decide (an input not exactly Hermitian, a non-finite result,
    a solver error)."""
    if check:  # exactly Hermitian and finite (one compiled pass where built), else decide there
        exact = native_exactly_hermitian(a, True)
        if not (exact if exact is not None else torch.equal(a, a.mH)):
            return None
    old = set_thread_kernel_threads(1)
    try:
        w, v = solve(a[None], vectors)
    except RuntimeError:
        return None
    finally:
        restore_thread_kernel_threads(old)
    if check and not math.isfinite(sum(w[0].tolist())):
        return None
    if v is None:
        return w[0], None
    return w[0], fix_gauge_small_(v)[0]


@functools.lru_cache(maxsize=4096)
def _direct_cached(
    n: int,
    batch: int,
    dtype: torch.dtype,
    vectors: bool,
    k: int | None,
    largest: bool,
    version: int,
    planning: tuple[Any, ...] | None = None,
) -> bool:
    """Whether the default call is planned directly; with the planner's options
    ``planning`` (the values of ``Options.planning()``), whether a call with them is
    planned as that default call: the same strategy and window, one worker, one chunk
    within the budget, no verification."""
    if not (_builtin_lapack(version) and direct_path(n, batch, dtype, vectors)):
        return False
    # k of n eigenpairs that the planner solves by a partial solve (Plan.window) are not
    # a full LAPACK call sliced: the full path runs them
    if k and vectors and plan(n, batch, dtype, k=k, largest=largest).window:
        return False
    if planning is None:
        return True
    wanted = dict(zip(PLANNING_FIELDS, planning, strict=True))
    k = k or None  # k = 0: the empty slice of the full solve
    given = plan(n, batch, dtype, vectors=vectors, k=k, largest=largest, **wanted)
    default = plan(n, batch, dtype, vectors=vectors, k=k, largest=largest)
    same = (given.strategy, given.window) == (default.strategy, default.window)
    return same and given.direct and not given.verify


def _direct(
    n: int,
    batch: int,
    dtype: torch.dtype,
    vectors: bool,
    k: int | None = None,
    largest: bool = False,
) -> bool:
    return _direct_cached(n, batch, dtype, vectors, k, largest, registry_version())


def _native_block(
    flat: torch.Tensor, vectors: bool, check: bool
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """The compiled route for a ``(n, n)`` or ``(B, n, n)`` block without history: its
    checks, LAPACK calls and gauge in one call; ``None``: the Python route decides."""
    closed = _closed_direct(registry_version())
    if flat.dim() == 3:
        return native_solve_batch(flat, vectors, check, closed)
    done = native_solve(flat, vectors, check, closed)
    if done is None:
        return None
    w, v, gauged = done
    if v is not None and not gauged:  # squared moduli outside the compiled gauge's range
        fix_gauge_small_(v)
    return w, v


def _planned_alike(a: Any, request: Request, opts: Options, given: Plan | None) -> bool:
    """Whether a call with options ``opts`` (or the plan ``given``, checked against the
    input as the full path checks it) runs what the default call runs on the direct path.
    Input with history keeps the full path (its backward takes the options)."""
    got = _as_cpu_tensor(a)
    if got is None or (got[0].requires_grad and torch.is_grad_enabled()):
        return False
    t = got[0]
    shape = t.shape
    if len(shape) < 2 or shape[-1] != shape[-2] or 0 in shape:
        return False
    n, batch = shape[-1], math.prod(shape[:-2])
    if given is not None:
        opts = Options.from_plan(check_plan(given, n, batch, t.dtype, t.device), opts)
    k = None if request.k is None else check_k(request.k, n)
    key, version = opts.planning_key, registry_version()
    return _direct_cached(n, batch, t.dtype, request.vectors, k, request.largest, version, key)


def solve_direct(
    a: Any, request: Request, opts: Options | None = None, given: Plan | None = None
) -> tuple[Any, Any] | None:
    """``(w, v or None)`` of a small CPU call as its plan would compute them, or ``None``
    when the call must take the full path. A call with options ``opts`` (or a plan
    ``given``) takes it where they plan it as the default call (:func:`_direct_cached`)."""
    if (opts is not None or given is not None) and not _planned_alike(
        a, request, opts or Options(), given
    ):
        return None
    vectors, k, check, symmetry_tol = (
        request.vectors,
        request.k,
        request.check,
        request.symmetry_tol,
    )
    if type(a) is torch.Tensor and a.dim() == 2 and k is None:
        # (a call with options has not tried the compiled entry yet: solve_one does first)
        solve = _solve_one if opts is None and given is None else solve_one
        one = solve(a, vectors, check, symmetry_tol)
        if one is not None:
            return one
    got = _as_cpu_tensor(a)
    if got is None:
        return None
    t, numpy_in = got
    shape = t.shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        return None
    n = shape[-1]
    batch = math.prod(shape[:-2]) if len(shape) > 2 else 1
    tracked = t.requires_grad and torch.is_grad_enabled()  # eigenpairs for the backward
    kk = None if k is None or n == 0 else check_k(k, n)  # the full path's own errors
    window = None if tracked else kk  # a tracked input is solved in full
    if n == 0 or batch == 0:
        return None
    if not _direct(n, batch, t.dtype, vectors or tracked, window, request.largest):
        return None
    # one matrix stays 2-D (LAPACK is called on it exactly as on a batch of one: fewer ops)
    flat = t if len(shape) == 2 else t.reshape(batch, n, n)
    if not flat.is_contiguous():
        flat = flat.contiguous()
    solved = None
    if not tracked and (kk is not None or opts is not None or given is not None):
        # the compiled entries the default call without k tried first (k of n: sliced below)
        solved = solve_one(flat, vectors, check, symmetry_tol)
    if solved is None and not tracked:
        solved = _native_block(flat, vectors, check)
    if solved is None and _closed_small(n, t.dtype):
        return None  # tracked, refused or not finite: the full path's closed form decides
    if solved is None:
        if check:
            try:
                quick_check(flat, symmetry_tol)
            except InputRejected:
                return None  # the full path names what is wrong (or accepts it within tol)
        try:
            solved = _solve_checked(flat, vectors, tracked, check)
        except RuntimeError:  # LAPACK failed (e.g. on a symmetric Inf): the full path decides
            return None
        if solved is None:
            return None
    w, v = solved
    if kk is not None:
        w, v = select_k(w, v, kk, request.largest)
    if len(shape) > 3:
        w = w.reshape(*shape[:-2], w.shape[-1])
        v = v.reshape(*shape[:-2], n, v.shape[-1]) if v is not None else None
    if numpy_in:
        return w.numpy(), (v.numpy() if v is not None else None)
    return w, v
