"""Standard and generalized solves on tensors that have passed the checks."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import replace

import torch

from .._errors import InputError, LinAlgError
from .._options import Options
from .._strategies import STRATEGIES
from .._support._arrays import real_dtype
from .._support._memory import GENERALIZED_MATRICES, matrix_bytes, memory_budget, rows_within
from .._support._threads import fan_out
from ._autograd import eigh_with_grad, is_tracked
from ._checks import cholesky_checked, hermitian_from_lower, hermitian_from_lower_grad
from ._execute import Pre, execute
from ._gauge import fix_gauge, fix_gauge_
from ._plan import Plan, plan

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
    real = a.real.dtype if a.is_complex() else a.dtype
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

    post = fix_gauge_ if gauge else None
    flat = a.reshape(-1, n, n)
    if needs_grad:

        def solver(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            xf = x.reshape(-1, n, n).contiguous()  # any batch shape (vmap adds one)
            wx, vx = execute(planned(xf), xf, pre, post)
            assert vx is not None
            return wx.reshape(*x.shape[:-1]), vx.reshape(x.shape)

        w, v = eigh_with_grad(flat, solver, opts.backward(planned(flat).memory_budget))
    else:
        w, v = execute(planned(flat), flat.contiguous(), pre, post)
    w = w.reshape(*batch_shape, n)
    return w, (v.reshape(*batch_shape, n, n) if vectors and v is not None else None)


def whole_batch_strategy(
    opts: Options, n: int, batch: int, dtype: torch.dtype, device: torch.device
) -> Options:
    """``opts`` with the strategy the planner picks for the *whole* batch, for callers that
    solve it in parts (memory chunks, Dask blocks): the strategy depends on the batch size
    (small batches stay on LAPACK), and one call must not mix strategies, so that its
    results stay bitwise independent of how it was cut."""
    if opts.strategy is not None:
        return opts
    name = plan(n, batch, dtype, device, max_memory=opts.max_memory).strategy
    return replace(opts, strategy=name)


def generalized_rows(a: torch.Tensor, opts: Options) -> int:
    """Matrices per chunk of the generalized paths so their working set fits the budget."""
    n = a.shape[-1]
    batch = max(1, math.prod(a.shape[:-2]))
    per_matrix = matrix_bytes(n, a.element_size(), GENERALIZED_MATRICES, vectors=0)
    return rows_within(memory_budget(opts.max_memory, a.device), per_matrix, batch)


def _chunked(fn: Callable[..., Result], a: torch.Tensor, b: torch.Tensor, opts, *args) -> Result:
    """``fn(a, b, opts, *args)`` over chunks of the (broadcast) batch that fit the budget.

    Chunks are gathered by index, so a broadcast ``b`` is never materialized for the whole
    batch; errors name indices of the whole batch.
    """
    n = a.shape[-1]
    batch_shape = a.shape[:-2]
    total = math.prod(batch_shape)
    rows = generalized_rows(a, opts)
    if rows >= total:
        return fn(a, b, opts, *args)
    opts = whole_batch_strategy(opts, n, total, a.dtype, a.device)
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
    vectors = [v for v in vs if v is not None]
    if len(vectors) != len(vs):
        return w, None
    return w, torch.cat(vectors).reshape(*batch_shape, n, n)


def _whole_index(start: int, batch_shape: torch.Size, i: tuple[int, ...]) -> tuple[int, ...]:
    """Index ``i`` of a chunk starting at flat ``start`` as an index of the whole batch."""
    return tuple(int(j) for j in torch.unravel_index(torch.tensor(start + i[0]), batch_shape))


def solve_cholesky(
    a: torch.Tensor, b: torch.Tensor, vectors: bool, opts: Options
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``A v = w B v`` by Cholesky reduction ``C = L^-1 A L^-H``; ``V^H B V = I``, the
    eigenvectors in the gauge.

    Chunked so that the reductions' working set fits the memory budget.
    """
    return _chunked(lambda x, y, o: _solve_cholesky(x, y, vectors, o), a, b, opts)


def _reduce(a: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    """``C = L^-1 A L^-H`` (made exactly Hermitian) for the Cholesky factor ``L`` of ``B``."""
    half = torch.linalg.solve_triangular(factor, a, upper=False)
    c = torch.linalg.solve_triangular(factor, half.mH, upper=False)
    return 0.5 * (c + c.mH)


def _solve_cholesky(
    a: torch.Tensor, b: torch.Tensor, vectors: bool, opts: Options
) -> tuple[torch.Tensor, torch.Tensor | None]:
    fanned = _cholesky_fanned(a, b, vectors, opts)
    if fanned is not None:
        return fanned
    factor = cholesky_checked(b)  # reads b's lower triangle
    c = _reduce(hermitian_from_lower_grad(a), factor)
    w, u = solve_standard(c, vectors, opts)
    if u is None:
        return w, None
    return w, fix_gauge(torch.linalg.solve_triangular(factor.mH, u, upper=True))


def _cholesky_fanned(
    a: torch.Tensor, b: torch.Tensor, vectors: bool, opts: Options
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """The whole generalized pipeline (factor, reduction, solve, back-transformation) run
    inside the fan-out, each worker on its part of the batch, when the plan of the reduced
    problem fans out on the CPU and nothing needs gradients: the reduction then runs on
    every core too, instead of in the caller's thread before a fanned solve (2.6-2.9x
    slower than a fan-out of the whole reduction, measured). Per matrix it computes exactly
    what the serial path does (the same batched ops on its rows, the same strategy), so
    the result is the same. ``None``: take the serial path (which also names every
    non-positive-definite ``b`` of the batch when a part finds one)."""
    n = a.shape[-1]
    if a.device.type != "cpu" or is_tracked(a) or is_tracked(b) or a.dim() < 3:
        return None
    fa, fb = a.reshape(-1, n, n), b.reshape(-1, n, n)
    p = plan(
        n,
        fa.shape[0],
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
    w = torch.empty(fa.shape[:-1], dtype=real_dtype(a.dtype))
    v = torch.empty_like(fa) if vectors else None

    def part(lo: int, hi: int) -> None:
        factor, info = torch.linalg.cholesky_ex(fb[lo:hi])
        if bool((info != 0).any()):
            raise _NotPositiveDefinite
        c = _reduce(hermitian_from_lower(fa[lo:hi]), factor)
        wc, u = strategy.solve(c, vectors)
        w[lo:hi] = wc
        if v is not None and u is not None:
            v[lo:hi] = fix_gauge_(torch.linalg.solve_triangular(factor.mH, u, upper=True))

    try:
        fan_out(part, fa.shape[0], p.workers)
    except _NotPositiveDefinite:
        return None
    shape = a.shape[:-2]
    return w.reshape(*shape, n), (v.reshape(*shape, n, n) if v is not None else None)


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
    return _chunked(lambda x, y, o: _solve_canonical(x, y, vectors, o, lindep, fill), a, b, opts)


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
