"""``spectra.eigh(a, k=...)`` for sparse input: options, dense-or-iterative, results.

:func:`solve_sparse` is what :func:`spectra.eigh` / :func:`spectra.eigvalsh` run when ``a``
is a torch sparse tensor, a SciPy sparse matrix or array, a linear operator, or a list of
them (solved together). Small problems are densified and go through the core's dense path
(when they fit ``max_memory``); the others through the batched block LOBPCG of
:mod:`._lobpcg`, grouped by size so that padding stays within a factor of two.
"""

from __future__ import annotations

import math
import sys
import warnings
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from .._errors import InputError, LinAlgError
from .._options import Options, as_int, check_tolerance
from .._pipeline._gauge import fix_gauge_
from .._pipeline._solve import solve_standard
from .._support._arrays import real_dtype, restore
from .._support._memory import memory_budget
from .._support._threads import cpu_count, pull, single_threaded_kernels
from ._blocks import split_input
from ._factor import holding
from ._krylov import lanczos
from ._lobpcg import Batch, lobpcg, svqb
from ._operators import SparseOperator, as_operator, compute_dtype
from ._plan import METHODS, block_size, plan_ops
from ._precondition import make_preconditioner

#: the keywords of the sparse path (besides ``k``, ``largest``, ``check``, ``symmetry_tol``)
SPARSE_KEYWORDS = (
    "tol",
    "maxiter",
    "deflate",
    "precondition",
    "spectrum_bound",
    "method",
    "on_fail",
)
DEFAULT_MAXITER = 1000
#: a CPU group's padded Krylov basis stays within this many bytes (about a shared cache):
#: one call on 64 graphs of 5,000 nodes (a 112 MiB basis) took 4.4 s, in groups of four
#: (7 MiB each) 3.1-3.4 s, and 32 of them 2.0 s in one group, 1.7-1.9 s in groups of 1-16
#: (2-core AMD EPYC VM, k = 9); the graphs of a D&D-like batch's groups fit (11 of <= 1,009
#: nodes: 3.9 MiB)
GROUP_BYTES = 16 << 20
#: basis vectors per block vector the group estimate counts (the Lanczos basis holds
#: ``4 m``)
BASIS_VECTORS = 4
#: CPU problems whose block has fewer entries than this iterate on one OpenMP thread
#: (per-thread setting): the many small dense steps fork-join a thread team each, which
#: dominated on a loaded machine (n = 3,000: 0.36 s per iteration on the loaded 2-core
#: machine). Counted per problem, not per batch: the per-problem steps (products, solves,
#: the padded copies) are as small in a batch of 32 graphs of 5,000 nodes, which took 24 s
#: threaded against 11.8 s for a loop of single calls.
SMALL_BLOCK_ENTRIES = 1 << 20


#: with the shift-invert preconditioner the iteration aims this factor below ``tol`` ...
FACTOR_MARGIN = 1e-2
#: ... for at most this many iterations after every pair is within ``tol`` (RGG Laplacians,
#: k = 8, default tol: largest eigenspace angle 1.2e-6 at tol, ~1e-8 one iteration later)
FACTOR_EXTRA = 2
#: ... and the shift-invert Lanczos at most this many (its residuals fall ~10x per block
#: solve near the end; RGG Laplacians, k = 8: largest angle 1.9e-8 at tol, 1.9e-9 one
#: step later, 1.6e-10 two steps later)
LANCZOS_EXTRA = 1


class SparseConvergenceWarning(RuntimeWarning):
    """``on_fail="warn"``: some eigenpairs did not reach the residual tolerance."""


def default_tol(dtype: torch.dtype) -> float:
    """The default relative residual tolerance ``||A v - w v|| <= tol * ||A||``:
    1e-8 for float64/complex128, 1e-5 for float32/complex64.

    >>> default_tol(torch.float32), default_tol(torch.complex128)
    (1e-05, 1e-08)
    """
    return 1e-5 if dtype in (torch.float32, torch.complex64) else 1e-8


@dataclass(frozen=True)
class SparseOptions:
    tol: float | None
    maxiter: int
    precondition: Any
    spectrum_bound: tuple[float, float] | None
    method: str
    on_fail: str


def parse_options(kw: dict[str, Any]) -> tuple[SparseOptions, Any]:
    """The sparse keywords checked; returns ``(options, deflate)``."""
    tol = check_tolerance(kw.get("tol"), "tol")
    maxiter = as_int(kw.get("maxiter", DEFAULT_MAXITER), "maxiter")
    if maxiter < 0:
        raise InputError("maxiter", f"must be an integer >= 0, got {maxiter}")
    bound = kw.get("spectrum_bound")
    if bound is not None:
        try:
            lo, hi = (float(x) for x in bound)
        except (TypeError, ValueError):
            raise InputError("spectrum_bound", f"must be a pair (lo, hi), got {bound!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise InputError("spectrum_bound", f"must be finite with lo < hi, got {bound!r}")
        bound = (lo, hi)
    method = kw.get("method", "auto")
    if method not in METHODS:
        raise InputError("method", f"must be one of {METHODS}, got {method!r}")
    on_fail = kw.get("on_fail", "raise")
    if on_fail not in ("raise", "warn"):
        raise InputError("on_fail", f'must be "raise" or "warn", got {on_fail!r}')
    pre = kw.get("precondition", "auto")
    opts = SparseOptions(tol, maxiter, pre, bound, method, on_fail)
    return opts, kw.get("deflate")


def solve_sparse(
    a: Any,
    b: Any,
    *,
    vectors: bool,
    k: Any,
    largest: bool,
    check: bool,
    symmetry_tol: float | None,
    device: Any,
    plan: Any,
    options: Options | None,
    execution: dict[str, Any],
) -> tuple[Any, Any]:
    """The k extreme eigenpairs of sparse ``a`` (or of each item of a list of them)."""
    execution = dict(execution)
    sparse_kw = {key: execution.pop(key) for key in SPARSE_KEYWORDS if key in execution}
    opts = Options.build(options, **execution)
    sopts, deflate = parse_options(sparse_kw)
    if b is not None:
        raise InputError("b", "is not supported for sparse a: the sparse path solves A v = w v")
    if plan is not None:
        raise InputError("plan", "describes one dense batch; sparse input is planned per call")
    single, items, names = split_input(a)
    ops = [
        as_operator(x, w, check, symmetry_tol, device) for x, w in zip(items, names, strict=True)
    ]
    pres = sopts.precondition if isinstance(sopts.precondition, (list, tuple)) else None
    if pres is not None and len(pres) != len(ops):
        raise InputError("precondition", f"must have one entry per matrix ({len(ops)})")
    flats = _deflation(deflate, ops, single)
    if k is None:
        raise TypeError(  # a missing argument, as SciPy's eigh of a sparse matrix refuses it
            "sparse input needs k= (the k extreme eigenpairs); for all eigenpairs pass a "
            "dense array (a.toarray())"
        )
    kk = as_int(k, "k")
    for op, y, name in zip(ops, flats, names, strict=True):
        room = op.n - (y.shape[-1] if y is not None else 0)
        if not 1 <= kk < room:
            extra = f" minus {op.n - room} deflated vectors" if room != op.n else ""
            raise InputError(
                "k", f"must be in [1, n{extra}) = [1, {room}) for {name} (n = {op.n}), got {k!r}"
            )
    budget = memory_budget(opts.max_memory, ops[0].device)
    workers = opts.workers or cpu_count()
    with holding(len(ops)):  # the plan's orderings, kept for the factors
        return _solve_planned(
            ops, flats, pres, kk, largest, sopts, single, vectors, budget, workers
        )


def _solve_planned(
    ops: list[SparseOperator],
    flats: list[torch.Tensor | None],
    pres: Any,
    kk: int,
    largest: bool,
    sopts: SparseOptions,
    single: bool,
    vectors: bool,
    budget: int,
    workers: int,
) -> tuple[Any, Any]:
    planned = plan_ops(
        ops,
        kk,
        sopts.method,
        budget,
        pres if pres is not None else sopts.precondition,
        pres is not None,
    )
    dense = [m == "dense" for m in planned.methods]
    results: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(ops)
    for i in [i for i, d in enumerate(dense) if d]:
        results[i] = _dense(ops[i], flats[i], kk, largest, sopts)
    sparse_ids = [i for i, d in enumerate(dense) if not d]
    groups = _groups(ops, sparse_ids, planned.methods, kk)

    def solve_group(group: list[int]) -> None:
        pre_specs = [planned.preconditioners[i] for i in group]
        solved = _iterate(
            [ops[i] for i in group],
            [flats[i] for i in group],
            pre_specs,
            kk,
            largest,
            sopts,
            None if single else group,
            planned.methods[group[0]],
        )
        for i, pair in zip(group, solved, strict=True):
            results[i] = pair

    sizes = [op.n for op in ops]
    _run_groups(groups, sizes, solve_group, _group_workers(groups, ops, kk, workers))
    out_w, out_v = [], []
    for op, res in zip(ops, results, strict=True):
        assert res is not None
        w, v = res
        out_w.append(restore(w.to(real_dtype(op.dtype)), op.origin))
        out_v.append(restore(v.to(op.dtype), op.origin) if vectors else None)
    if single:
        return out_w[0], out_v[0]
    return out_w, (out_v if vectors else None)


def _deflation(deflate: Any, ops: list[SparseOperator], single: bool) -> list[torch.Tensor | None]:
    """Orthonormal ``(n, d)`` deflation bases per problem (``None`` where there is none)."""
    if deflate is None:
        return [None] * len(ops)
    given = [deflate] if single else list(deflate)
    if len(given) != len(ops):
        raise InputError("deflate", f"must give one (n, d) block (or None) per matrix ({len(ops)})")
    out: list[torch.Tensor | None] = []
    for i, (y, op) in enumerate(zip(given, ops, strict=True)):
        what = "deflate" if single else f"deflate[{i}]"
        if y is None:
            out.append(None)
            continue
        t = torch.as_tensor(y if isinstance(y, torch.Tensor) else np.asarray(y))
        t = t.unsqueeze(-1) if t.ndim == 1 else t
        if t.ndim != 2 or t.shape[0] != op.n:
            raise InputError(what, f"must have shape (n={op.n}, d), got {tuple(t.shape)}")
        if not bool(torch.isfinite(t).all()):
            raise InputError(what, "contains NaN or Inf")
        t = t.to(device=op.device, dtype=compute_dtype(op.dtype if not t.is_complex() else t.dtype))
        if op.dtype.is_complex is False and t.is_complex():
            raise InputError(what, "is complex but the matrix is real")
        q, kept = svqb(t.unsqueeze(0))
        q, kept2 = svqb(q)
        if not bool((kept & kept2).all()):
            raise InputError(what, "has linearly dependent columns")
        out.append(q[0])
    return out


def _densify(op: SparseOperator) -> torch.Tensor:
    eye = torch.eye(op.n, dtype=op.work_dtype, device=op.device)
    a = op.matmul(eye)
    return (a + a.mH) / 2


def _dense(
    op: SparseOperator, y: torch.Tensor | None, k: int, largest: bool, sopts: SparseOptions
) -> tuple[torch.Tensor, torch.Tensor]:
    """Dense eigh of the (deflated) matrix through the core, the k extreme pairs."""
    a = _densify(op)
    if y is not None:
        proj = torch.eye(op.n, dtype=a.dtype, device=a.device) - y @ y.mH
        a = proj @ a @ proj
        a = (a + a.mH) / 2
        width = float(torch.linalg.matrix_norm(a, ord=1)) + 1.0
        a = a + (-width if largest else width) * (y @ y.mH)  # deflated directions out of reach
    w, v = solve_standard(a.unsqueeze(0), True, Options(), gauge=False)
    assert v is not None
    w, v = (w[0, -k:], v[0, :, -k:]) if largest else (w[0, :k], v[0, :, :k])
    _check_bound(w, sopts, op.what)
    return w, fix_gauge_(v.clone())


def _group_workers(groups: list[list[int]], ops: list[SparseOperator], k: int, workers: int) -> int:
    """Threads the groups of one call run on: up to ``workers`` (the caller's, default all
    cores) where there are several CPU groups whose blocks each run on one kernel thread
    (:data:`SMALL_BLOCK_ENTRIES`), else one. The plan granted every group's memory at once,
    so groups running side by side stay within ``max_memory``."""
    if workers < 2 or len(groups) < 2:
        return 1
    m = block_size(k, sys.maxsize)
    for group in groups:
        if any(ops[i].device.type != "cpu" or ops[i].n * m >= SMALL_BLOCK_ENTRIES for i in group):
            return 1
    return min(workers, len(groups))


def _run_groups(groups: list[list[int]], sizes: list[int], solve: Any, workers: int) -> None:
    """``solve(group)`` for every group: in turn, or on ``workers`` threads of the core's
    pool, each taking the next group (the most nodes first) when it is free: 64 graphs of
    5,000 nodes (8 groups) took 3.4-3.65 s in turn, 2.3-2.5 s on 2 threads (the solves hold
    the GIL for part of each step). Each group's result is the same whichever thread ran
    it, and so is the error raised: that of the first failing group in turn's order (the
    other groups still run)."""
    if workers < 2:
        for group in groups:
            solve(group)
        return
    order = sorted(range(len(groups)), key=lambda j: -sum(sizes[i] for i in groups[j]))
    pull(order, lambda j: solve(groups[j]), workers, finish=True)


def _groups(
    ops: list[SparseOperator], ids: list[int], methods: tuple[str, ...], k: int
) -> list[list[int]]:
    """Problems solved together: same method, device and compute dtype, sizes within 2x,
    and on the CPU a padded basis (``G x n_max x`` :data:`BASIS_VECTORS` ``m`` vectors,
    ``m`` the block for ``k``) of at most :data:`GROUP_BYTES`.

    >>> import scipy.sparse as sp
    >>> from ._operators import as_operator
    >>> ops = [as_operator(sp.identity(n, format="csr"), "a", True, None, None)
    ...        for n in (300, *[5000] * 9, 300)]
    >>> [len(g) for g in _groups(ops, list(range(11)), ("lanczos",) * 11, 9)]
    [2, 8, 1]
    """
    out: list[list[int]] = []
    key = lambda i: (methods[i], str(ops[i].device), str(ops[i].work_dtype), ops[i].n)  # noqa: E731
    per_node = BASIS_VECTORS * block_size(k, sys.maxsize) * 8
    for i in sorted(ids, key=key):
        last = out[-1] if out else None
        same = last is not None and key(last[0])[:3] == key(i)[:3]
        if same and last is not None and ops[i].n <= 2 * ops[last[0]].n:
            fits = (
                ops[i].device.type != "cpu"
                or (len(last) + 1)
                * ops[i].n
                * per_node
                * (2 if ops[i].work_dtype.is_complex else 1)
                <= GROUP_BYTES
            )
            if fits:
                last.append(i)
                continue
        out.append([i])
    return out


def _scale(op: SparseOperator, sopts: SparseOptions) -> float:
    """An estimate of ``||A||`` for the relative tolerance."""
    if sopts.spectrum_bound is not None:
        return max(abs(sopts.spectrum_bound[0]), abs(sopts.spectrum_bound[1]))
    if op.bounds is not None:
        return max(abs(op.bounds[0]), abs(op.bounds[1]), 1e-300)
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(op.n, 1, generator=gen, dtype=torch.float64).to(op.device, op.work_dtype)
    est = 0.0
    for _ in range(12):  # power iteration: a lower bound of ||A||, within ~10% here
        x = x / x.norm().clamp_min(1e-300)
        y = op.matmul(x)
        est = max(est, float(y.norm()))
        x = y
    return max(est * 1.1, 1e-300)


def _lower(op: SparseOperator, sopts: SparseOptions, sign: float) -> float | None:
    """A lower bound of ``sign * A``'s spectrum (``spectrum_bound`` or Gershgorin)."""
    bound = sopts.spectrum_bound or op.bounds
    if bound is None:
        return None
    return bound[0] if sign > 0 else -bound[1]


def _iterate(
    ops: list[SparseOperator],
    flats: list[torch.Tensor | None],
    pre_specs: list[Any],
    k: int,
    largest: bool,
    sopts: SparseOptions,
    positions: list[int] | None,
    method: str = "lobpcg",
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    sign = -1.0 if largest else 1.0
    scales = [_scale(op, sopts) for op in ops]
    pres = [
        make_preconditioner(
            op, spec, sign, _lower(op, sopts, sign), s, sopts.spectrum_bound is not None
        )
        for op, spec, s in zip(ops, pre_specs, scales, strict=True)
    ]
    batch = Batch(ops, sign, pres)
    n_max, work, dev = batch.n_max, ops[0].work_dtype, ops[0].device
    room = min(
        op.n - (y.shape[-1] if y is not None else 0) for op, y in zip(ops, flats, strict=True)
    )
    # shift-invert converges in a few iterations: fewer guard vectors (fewer solves) pay
    factored = all(isinstance(spec, str) and spec == "factor" for spec in pre_specs)
    m = block_size(k, room, guard=max(2, k // 4) if factored else None)
    small = dev.type == "cpu" and n_max * m < SMALL_BLOCK_ENTRIES  # per problem
    # the start block too: torch fills blocks past 32,768 entries on a thread team (at
    # n = 3,000 and m = 11 that cost 10 ms a call on the loaded machine)
    with torch.no_grad(), single_threaded_kernels() if small else nullcontext():
        x0, defl = _start(ops, flats, n_max, m, work, dev)
        rel = sopts.tol if sopts.tol is not None else default_tol(ops[0].dtype)
        tolerance = torch.tensor([rel * s for s in scales], dtype=torch.float64)
        # shift-invert iterations are cheap and fast: aim FACTOR_MARGIN below tol
        # (eigenvector errors scale with residual / gap), at most a few iterations past tol
        aim = tolerance * FACTOR_MARGIN if factored else tolerance
        extra = LANCZOS_EXTRA if method == "lanczos" else FACTOR_EXTRA
        settle = (tolerance, extra) if factored else None
        solver = lanczos if method == "lanczos" else lobpcg
        res = solver(batch, x0, k, aim, sopts.maxiter, defl, settle)
    res = replace(res, tolerance=tolerance)  # converged means: within the caller's tol
    bad = (~res.converged).nonzero().squeeze(-1).tolist()
    if bad:
        _fail(res, bad, ops, positions, sopts, rel)
    out = []
    for g, op in enumerate(ops):
        w, v = res.values[g, :k] * sign, res.vectors[g, : op.n, :k]
        if largest:
            w, v = w.flip(-1), v.flip(-1)
        _check_bound(w, sopts, op.what)
        out.append((w, fix_gauge_(v.contiguous())))
    return out


def _start(
    ops: list[SparseOperator],
    flats: list[torch.Tensor | None],
    n_max: int,
    m: int,
    work: torch.dtype,
    dev: torch.device,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The random start block ``(G, n_max, m)`` (seeded: results are reproducible) and the
    padded deflation bases (``None`` without any)."""
    gen = torch.Generator().manual_seed(0)
    x0 = torch.zeros(len(ops), n_max, m, dtype=work, device=dev)
    d_max = max((y.shape[-1] for y in flats if y is not None), default=0)
    defl = torch.zeros(len(ops), n_max, d_max, dtype=work, device=dev) if d_max else None
    for g, (op, y) in enumerate(zip(ops, flats, strict=True)):
        block = torch.randn(op.n, m, generator=gen, dtype=torch.float64)
        if work.is_complex:
            block = torch.complex(block, torch.randn(op.n, m, generator=gen, dtype=torch.float64))
        x0[g, : op.n] = block.to(dev)
        if y is not None and defl is not None:
            defl[g, : op.n, : y.shape[-1]] = y
    return x0, defl


def _fail(
    res: Any,
    bad: list[int],
    ops: list[SparseOperator],
    positions: list[int] | None,
    sopts: SparseOptions,
    rel: float,
) -> None:
    worst = [float(res.residuals[g].max()) * rel / float(res.tolerance[g]) for g in bad]
    shown = ", ".join(f"{r:.2e}" for r in worst[:5])
    message = (
        f"did not converge in {res.iterations} iterations (maxiter={sopts.maxiter}): "
        f"largest relative residuals ||A v - w v|| / ||A|| {shown} above tol={rel:.1e}"
    )
    hint = "raise maxiter, loosen tol, or precondition='amg' (pyamg)"
    indices = None if positions is None else sorted((positions[g],) for g in bad)
    if sopts.on_fail == "warn":
        warnings.warn(f"a {message} ({hint})", SparseConvergenceWarning, stacklevel=5)
        return
    raise LinAlgError("a", message, indices, hint=hint)


def _check_bound(w: torch.Tensor, sopts: SparseOptions, what: str) -> None:
    if sopts.spectrum_bound is None or not w.numel():
        return
    lo, hi = sopts.spectrum_bound
    slack = 1e-6 * max(abs(lo), abs(hi))
    if float(w.min()) < lo - slack or float(w.max()) > hi + slack:
        raise InputError(
            "spectrum_bound",
            f"{sopts.spectrum_bound} does not contain the eigenvalues of {what} found "
            f"({float(w.min()):.6g} .. {float(w.max()):.6g})",
        )
