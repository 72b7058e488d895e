"""Standard and generalized solves on tensors that have passed the checks."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace

import torch

from .._errors import InputError, LinAlgError
from .._options import Options
from .._solvers._native import native_pair
from .._solvers._torch_lapack import ALIGNMENT, empty_result, torch_eigh
from .._strategies import STRATEGIES
from .._support._memory import GENERALIZED_MATRICES, matrix_bytes, memory_budget, rows_within
from .._support._threads import caller_kernel_threads, check_cancelled, fan_out
from ._autograd import eigh_with_grad, is_tracked
from ._checks import (
    PairCheck,
    check_block,
    checked_lower,
    cholesky_checked,
    hermitian_from_lower_grad,
    quick_check,
    symmetry_tolerance,
)
from ._direct_generalized import compiled_agrees, threaded_pair
from ._execute import SUB_BLOCK_BYTES, Pre, execute
from ._gauge import _numba_gauge_, fix_gauge, fix_gauge_
from ._plan import Plan, plan
from ._reduction import reduce_by_factor, reduce_by_left_solves

Result = tuple[torch.Tensor, "torch.Tensor | None"]


def spectral_bounds(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-matrix Gershgorin interval ``(lower, upper)`` containing every eigenvalue."""
    diag = torch.diagonal(a, dim1=-2, dim2=-1).real
    radius = a.abs().sum(-1) - diag.abs()
    return (diag - radius).amin(-1), (diag + radius).amax(-1)


def push_to_top(a: torch.Tensor, inactive: torch.Tensor) -> torch.Tensor:
    """Put ``c`` on the diagonal of the ``inactive`` rows/columns (zero in ``a``), above the
    spectrum of the rest, so their eigenpairs are exactly the top ones and separate cleanly.
    """
    with torch.no_grad():
        low, high = spectral_bounds(a)
        width = torch.maximum(torch.maximum(high - low, high.abs()), low.abs())
        width = torch.where(width > 0, width, torch.ones_like(width))
        shift = (high + width).unsqueeze(-1) * inactive.to(high.dtype)
    return a + torch.diag_embed(shift.to(a.dtype))


def gauge_block_(vectors: torch.Tensor) -> torch.Tensor:
    """The gauge of a solver's block of eigenvectors in place (the executor's ``post``):
    :func:`fix_gauge_`, with numba's pass taken first for a real block where it fits
    (numba loaded, its kernel ready, a block large enough): all of them make the same
    decisions with the same bits, and numba's real pass ran 1.4-4.8x faster than the
    compiled gauge on 2 MiB blocks from n = 16 to 512 (float64 64x64: 0.12 vs 0.41 ms;
    float32: 0.22 vs 0.79 ms, measured), where the two complex passes are within 10%."""
    if not vectors.is_complex() and _numba_gauge_(vectors):
        return vectors
    return fix_gauge_(vectors)


def solve_standard(
    a: torch.Tensor,
    vectors: bool,
    opts: Options,
    inactive: torch.Tensor | None = None,
    pre: Pre | None = None,
    gauge: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Eigenpairs of the Hermitian batch ``a`` (``(..., n, n)``) through the planned core.

    ``inactive`` (bool ``(..., n)``) marks zero rows/columns (padding, dropped overlap
    directions); their eigenpairs come out as the top ones of each matrix. ``pre`` runs on
    each input block in the workers (the checks); ``gauge`` fixes the eigenvector gauge
    there too.
    """
    if inactive is not None:
        a = push_to_top(a, inactive)
    n = a.shape[-1]
    batch_shape = a.shape[:-2]
    real = a.dtype.to_real()
    needs_grad = is_tracked(a)
    if a.numel() == 0:
        w = torch.zeros((*batch_shape, n), dtype=real, device=a.device)
        v = torch.zeros_like(a) if vectors else None
        if needs_grad:  # stay attached to the graph: the gradient is zeros of a's shape
            zero = 0 * a.sum()
            w = w + (zero.real if zero.is_complex() else zero)
            v = v + zero if v is not None else None
        return w, v

    def planned(x: torch.Tensor) -> Plan:
        return plan(n, x.shape[0], x.dtype, x.device, vectors=vectors or needs_grad, **planning)

    planning = opts.planning()

    post = gauge_block_ if gauge else None
    flat = a.reshape(-1, n, n)
    if needs_grad:

        def solver(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            xf = x.reshape(-1, n, n).contiguous()  # any batch shape (vmap adds one)
            wx, vx = execute(planned(xf), xf, pre, post)
            assert vx is not None
            return wx.reshape(*x.shape[:-1]), vx.reshape(x.shape)

        # the caller's shape, not ``flat``: one matrix's backward then runs on 2-D operands,
        # as the one-matrix route's (and torch's) does; torch's small matmuls round 2-D and
        # batched products differently on some CPUs (its naive batched kernel below n^3 =
        # 400 against the BLAS's FMA kernel), so a (1, n, n) view would change the bits
        w, v = eigh_with_grad(a, solver, opts.backward(planned(flat).memory_budget))
    else:
        w, v = execute(planned(flat), flat.contiguous(), pre, post)
    w = w.reshape(*batch_shape, n)
    return w, (v.reshape(*batch_shape, n, n) if vectors and v is not None else None)


def whole_batch_strategy(
    opts: Options,
    n: int,
    batch: int,
    dtype: torch.dtype,
    device: torch.device,
    vectors: bool = True,
) -> Options:
    """``opts`` with the strategy the planner picks for the *whole* batch, for callers that
    solve it in parts (memory chunks, Dask blocks): the strategy depends on the batch size
    (small batches stay on LAPACK) and on whether eigenvectors are wanted (the kernels
    claim eigenvalue-only batches from larger sizes), and one call must not mix
    strategies, so that its results stay bitwise independent of how it was cut."""
    if opts.strategy is not None:
        return opts
    name = plan(n, batch, dtype, device, vectors=vectors, max_memory=opts.max_memory).strategy
    return replace(opts, strategy=name)


def generalized_rows(a: torch.Tensor, opts: Options) -> int:
    """Matrices per chunk of the generalized paths so their working set fits the budget."""
    n = a.shape[-1]
    batch = max(1, math.prod(a.shape[:-2]))
    per_matrix = matrix_bytes(n, a.element_size(), GENERALIZED_MATRICES, vectors=0)
    return rows_within(memory_budget(opts.max_memory, a.device), per_matrix, batch)


def _chunked(
    fn: Callable[..., Result], a: torch.Tensor, b: torch.Tensor, opts, vectors: bool, *args
) -> Result:
    """``fn(a, b, opts, *args)`` over chunks of the (broadcast) batch that fit the budget,
    every chunk on the strategy planned for the whole batch (``vectors``: eigenvectors
    wanted, as the whole call's plan says).

    Chunks are gathered by index, so a broadcast ``b`` is never materialized for the whole
    batch; errors name indices of the whole batch.
    """
    n = a.shape[-1]
    batch_shape = a.shape[:-2]
    total = math.prod(batch_shape)
    rows = generalized_rows(a, opts)
    if rows >= total:
        return fn(a, b, opts, *args)
    opts = whole_batch_strategy(opts, n, total, a.dtype, a.device, vectors)
    ws, vs = [], []
    for start in range(0, total, rows):
        flat = torch.arange(start, min(start + rows, total), device=a.device)
        where = torch.unravel_index(flat, batch_shape)
        try:
            w, v = fn(a[where], b[where], opts, *args)
        except (LinAlgError, InputError) as err:
            raise err.reindexed(functools.partial(_whole_index, start, batch_shape)) from err
        ws.append(w)
        vs.append(v)
    w = torch.cat(ws).reshape(*batch_shape, n)
    found = [v for v in vs if v is not None]
    if len(found) != len(vs):
        return w, None
    return w, torch.cat(found).reshape(*batch_shape, n, n)


def _whole_index(start: int, batch_shape: torch.Size, i: tuple[int, ...]) -> tuple[int, ...]:
    """Index ``i`` of a chunk starting at flat ``start`` as an index of the whole batch."""
    return tuple(int(j) for j in torch.unravel_index(torch.tensor(start + i[0]), batch_shape))


def solve_cholesky(
    a: torch.Tensor,
    b: torch.Tensor,
    vectors: bool,
    opts: Options,
    check: PairCheck | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``A v = w B v`` by Cholesky reduction ``C = L^-1 A L^-H``; ``V^H B V = I``, the
    eigenvectors in the gauge. ``check``: the values of ``a`` and ``b`` are checked where
    their blocks are solved (:class:`InputRejected` where one is refused: the caller's
    detailed checks name the indices).

    Chunked so that the reductions' working set fits the memory budget.
    """
    return _chunked(
        lambda x, y, o, c: _solve_cholesky(x, y, vectors, o, c), a, b, opts, vectors, check
    )


def _solve_cholesky(
    a: torch.Tensor,
    b: torch.Tensor,
    vectors: bool,
    opts: Options,
    check: PairCheck | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    fanned = _cholesky_fanned(a, b, vectors, opts, check)
    if fanned is not None:
        return fanned
    if check is not None:  # the whole batch here, before the factor names non-PD indices
        if check.a:
            quick_check(a.detach(), check.tol, finite=True)
        if check.b:
            quick_check(b.detach(), check.tol, finite=True)
    # the steps on the kernel threads of the reduced solve's plan: the caller's where it is
    # one threaded call, there first in one compiled call, else by torch's calls (as the
    # direct path runs them: _direct_generalized.threaded_pair, then ._by_torch)
    threaded = _one_threaded_call(a, b, vectors, opts)
    with caller_kernel_threads() if threaded is not None else nullcontext():
        a = hermitian_from_lower_grad(a)
        if threaded is not None and _builtin_torch(threaded.strategy):
            compiled = threaded_pair(a, b, vectors)
            if compiled is not None:
                return compiled
        factor = cholesky_checked(b)  # reads b's lower triangle
        reduce = reduce_by_left_solves if threaded is not None else reduce_by_factor
        c = reduce(a, factor)
        w, u = solve_standard(c, vectors, opts)
        if u is None:
            return w, None
        return w, fix_gauge(torch.linalg.solve_triangular(factor.mH, u, upper=True))


def _builtin_torch(name: str) -> bool:
    """Whether ``name`` is the built-in ``torch`` strategy (not a registered replacement,
    whose solver the compiled steps would bypass)."""
    return name == "torch" and STRATEGIES["torch"].solve is torch_eigh


def _one_threaded_call(
    a: torch.Tensor, b: torch.Tensor, vectors: bool, opts: Options
) -> Plan | None:
    """The plan of the reduced problem of the CPU pairs ``(a, b)`` where it is one direct
    call on the caller's kernel threads (one worker, from the size LAPACK runs faster
    threaded), else ``None``: then the Cholesky factor and the triangular solves run on
    those threads too, as the direct path runs them (on the ``torch`` strategy first in
    one compiled call, ``_direct_generalized.threaded_pair``; else by torch's calls and
    the reduction by left solves, :func:`.reduce_by_left_solves`)."""
    if a.device.type != "cpu" or is_tracked(a) or is_tracked(b):
        return None
    shape = torch.broadcast_shapes(a.shape, b.shape)
    n = shape[-1]
    p = plan(n, math.prod(shape[:-2]), a.dtype, a.device, vectors=vectors, **opts.planning())
    return p if p.direct and p.workers == 1 and not p.single_threaded else None


def _cholesky_fanned(
    a: torch.Tensor,
    b: torch.Tensor,
    vectors: bool,
    opts: Options,
    check: PairCheck | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """The whole generalized pipeline (checks, factor, reduction, solve,
    back-transformation, gauge) run inside the fan-out, each worker on its part of the
    batch in sub-blocks that stay in cache, when the plan of the reduced problem fans out
    on the CPU and nothing needs gradients: no pass over the batch in the caller's thread.
    The solver writes into the outputs and the back-transformation overwrites them in
    place (no copy of what LAPACK wrote). Per matrix it computes exactly what the serial
    path does (the same batched ops on its rows, sub-blocks starting where the serial
    path's matrices lie on LAPACK's 64-byte boundaries, the same strategy), so the result
    is the same. ``None``: take the serial path (which also names every
    non-positive-definite ``b`` of the batch when a part finds one)."""
    n = a.shape[-1]
    if a.device.type != "cpu" or is_tracked(a) or is_tracked(b) or a.dim() < 3:
        return None
    fa, fb = a.reshape(-1, n, n), b.reshape(-1, n, n)
    total = fa.shape[0]
    p = plan(
        n,
        total,
        a.dtype,
        a.device,
        vectors=vectors,
        strategy=opts.strategy,
        max_memory=opts.max_memory,
        workers=opts.workers,
    )
    if p.workers < 2 or p.n_chunks > 1 or opts.chunk_size is not None:
        return None
    strategy = STRATEGIES[p.strategy]
    into, solve, fused = strategy.abilities.into, strategy.solve, strategy.abilities.check
    w, v = empty_result(fa, vectors)  # column-major, as LAPACK writes it
    unit, step = _sub_blocks(total, p.workers, n, fa.element_size())
    tol, check_a, check_b = (None, False, False) if check is None else check
    # checked pairs on torch's LAPACK, every member on a 64-byte boundary: each sub-block's
    # steps in one compiled call, pair by pair, torch's calls bit for bit (an exactly
    # Hermitian a and a b within the tolerance; anything else takes the steps below)
    compiled = (
        p.strategy == "torch"
        and check_a
        and (n * n * fa.element_size()) % ALIGNMENT == 0
        and fa.is_contiguous()
        and fb.is_contiguous()
        and compiled_agrees()
    )
    btol = symmetry_tolerance(a.dtype) if tol is None else tol

    def part(lo: int, hi: int) -> None:
        first, last = lo * unit, min(hi * unit, total)
        # one set of scratch matrices per part, reused by every sub-block: fresh ones
        # each time were fresh pages from the allocator (14,000 page faults per call,
        # 1,024 x 64x64 float64, measured)
        rows = min(step, last - first)
        factors, reduced = _column_major(rows, n, a.dtype), _column_major(rows, n, a.dtype)
        infos = torch.empty(rows, dtype=torch.int32)
        for s in range(first, last, step):
            check_cancelled()  # another part failed or the caller was interrupted
            e = min(s + step, last)
            ws, vs = w[s:e], (v[s:e] if v is not None else None)
            if compiled and native_pair(fa[s:e], fb[s:e], vectors, btol, (ws, vs)) is not None:
                continue
            x = checked_lower(fa[s:e], tol, check_a, fused)
            if check_b:
                check_block(fb[s:e], tol, fused)
            factor, info = factors[: e - s], infos[: e - s]
            torch.linalg.cholesky_ex(fb[s:e], out=(factor, info))
            if bool(info.any()):
                raise _NotPositiveDefinite
            c = reduce_by_factor(x, factor, out=reduced[: e - s])
            if into is not None:
                into(c, ws, vs)
            else:
                wc, u = solve(c, vectors)
                ws.copy_(wc)
                if vs is not None and u is not None:
                    vs.copy_(u)
            if vs is not None:
                torch.linalg.solve_triangular(factor.mH, vs, upper=True, out=vs)
                gauge_block_(vs)

    try:
        fan_out(part, -(-total // unit), p.workers)
    except _NotPositiveDefinite:
        return None
    shape = a.shape[:-2]
    return w.reshape(*shape, n), (v.reshape(*shape, n, n) if v is not None else None)


def _column_major(batch: int, n: int, dtype: torch.dtype) -> torch.Tensor:
    """An uninitialized ``(batch, n, n)`` CPU batch laid out as LAPACK writes it."""
    return torch.empty_strided((batch, n, n), (n * n, 1, n), dtype=dtype)


def _sub_blocks(total: int, workers: int, n: int, item: int) -> tuple[int, int]:
    """``(unit, step)`` of the fanned generalized pipeline: parts are cut at multiples of
    ``unit`` matrices, where a matrix of a fresh batch starts on a 64-byte boundary (as
    it does in the serial path's whole-batch temporaries: LAPACK's results depend on it),
    and each part is walked in sub-blocks of ``step`` matrices (a multiple of ``unit``,
    about ``SUB_BLOCK_BYTES`` of input, at most a part).

    >>> _sub_blocks(2048, 2, 32, 16)  # 16 KiB matrices: 128 a sub-block
    (1, 128)
    >>> _sub_blocks(100, 2, 5, 4)  # 100 bytes: 16 matrices make 1,600 bytes, 25 lines
    (16, 48)
    """
    size = n * n * item
    unit = ALIGNMENT // math.gcd(ALIGNMENT, size)
    step = min(max(1, SUB_BLOCK_BYTES // size), -(-total // workers))
    return unit, max(unit, step // unit * unit)


class _NotPositiveDefinite(Exception):
    """A part of the fanned generalized solve found a ``b`` that is not positive definite."""


def solve_canonical(
    a: torch.Tensor,
    b: torch.Tensor,
    vectors: bool,
    opts: Options,
    lindep: float,
    fill: float,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``A v = w B v`` with ``B``'s eigen-directions below ``lindep`` dropped (as PySCF).

    ``X = U_kept s_kept^-1/2`` spans the kept space; ``X^H A X`` is solved; the ``m``
    dropped directions of each matrix come last, with eigenvalue ``fill`` and zero vectors.
    Chunked so that the working set fits the memory budget.
    """
    return _chunked(
        lambda x, y, o: _solve_canonical(x, y, vectors, o, lindep, fill), a, b, opts, vectors
    )


def _solve_canonical(
    a: torch.Tensor,
    b: torch.Tensor,
    vectors: bool,
    opts: Options,
    lindep: float,
    fill: float,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    s, u = solve_standard(b, True, opts)
    assert u is not None
    keep = s > lindep
    scale = (
        torch.where(
            keep,
            s.clamp_min(lindep if lindep > 0 else torch.finfo(s.dtype).tiny),
            torch.ones_like(s),
        ).rsqrt()
        * keep
    )
    x = u * scale.unsqueeze(-2).to(u.dtype)
    reduced = x.mH @ hermitian_from_lower_grad(a) @ x
    reduced = 0.5 * (reduced + reduced.mH)
    w, c = solve_standard(reduced, vectors, opts, inactive=~keep)
    n = a.shape[-1]
    active = torch.arange(n, device=a.device) < keep.sum(-1, keepdim=True)
    w = torch.where(active, w, torch.full_like(w, fill))
    if c is None:
        return w, None
    return w, (x @ c) * active.unsqueeze(-2).to(c.dtype)
