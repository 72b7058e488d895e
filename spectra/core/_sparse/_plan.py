"""Dense or iterative: the sparse path's decision, made visible by :func:`plan_sparse`.

A problem is densified (``n x n``, the dense core) when it is small (``n <= DENSE_MAX_N``),
when ``k`` is a large share of ``n`` (the iteration's block would be a sizeable part of the
space) or when it is a quarter full (``nnz > DENSE_MIN_DENSITY n^2``), and only when the
dense working set (~4 ``n^2`` entries: the matrix, the eigenvectors, LAPACK's workspace)
fits ``max_memory``; it is never densified otherwise.
The iterative path needs O(nnz + n m) memory (``m`` the block size, ~``1.5 k``).

``precondition="auto"`` is decided here too (:func:`choose_preconditioner`): a shift-invert
sparse factorization (``"factor"``, :mod:`._factor`) where its estimated fill is a small
multiple of ``nnz`` and fits ``max_memory`` (meshes, geometric graphs), else pyamg's AMG
from ``n = 2,000``, else Jacobi. With the factorization the iteration is the block
shift-invert Lanczos (``"lanczos"``, :mod:`._krylov`); with the others the block LOBPCG
(``"lobpcg"``). ``method="lanczos"`` / ``"lobpcg"`` ask for one of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from .._errors import InputError
from .._support._memory import memory_budget
from ._blocks import split_input
from ._factor import DIRECT_MAX_N, direct_bytes, estimate, factor_bytes
from ._operators import SparseOperator, as_operator
from ._precondition import AMG_MIN_N, amg_available

#: ``method="auto"`` densifies problems up to this size (when they fit ``max_memory``)
DENSE_MAX_N = 512
METHODS = ("auto", "lanczos", "lobpcg", "dense")
#: ``method="auto"`` densifies matrices with more than this share of nonzeros (when they
#: fit): their products cost as much as dense ones, and a dense eigh needs no iteration
DENSE_MIN_DENSITY = 0.25
#: ``"auto"`` factors when the fill (:func:`._factor.estimate`, exact in the ordering the
#: factorization uses) is at most this many times ``nnz``: each iteration's solve then costs
#: a few products with the matrix, and the 8-9 iterations of shift-invert beat AMG's 20-30
#: (random geometric graphs, 20,000 to 1,000,000 nodes: fill / nnz 1.7 to 2.6)
FILL_CAP = 64
#: ... and when the factorization's work (the sum of the squared column counts) is at most
#: this many times ``nnz``: a random 8-regular graph of 3,000 nodes fills only 50 nnz but
#: costs 51,000 per entry (0.8 s to factor, AMG solves it in a fraction); random geometric
#: graphs cost 250-600, a 300 x 300 grid 790
WORK_CAP = 8192
#: iteration vectors kept per block entry: X, AX, R, W, P, [P, W] and its product, temporaries
_BLOCKS_HELD = 14


def block_size(k: int, room: int, guard: int | None = None) -> int:
    """Vectors per block: ``k`` and ``guard`` (default ``max(4, k // 2)``) guard vectors, at
    most ``room``. The shift-invert preconditioner takes ``max(2, k // 4)`` guards: k = 9 on
    random geometric graphs of 3,000 / 20,000 nodes took 80 / 81 solved columns with 2
    guards against 90 / 99 with 4 (and 15-20% less time).

    >>> block_size(8, 10**6), block_size(8, 9), block_size(8, 10**6, guard=2)
    (12, 9, 10)
    """
    extra = max(4, k // 2) if guard is None else guard
    return max(k, min(k + extra, room))


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def dense_bytes(op: SparseOperator) -> int:
    """The dense path's working set: ~4 ``n^2`` entries of the compute dtype."""
    return 4 * op.n * op.n * _itemsize(op.work_dtype)


def iterative_bytes(op: SparseOperator, k: int) -> int:
    """The iteration's working set: the block vectors plus a copy of the matrix."""
    m = block_size(k, op.n)
    matrix = (op.nnz or 0) * (_itemsize(op.work_dtype) + 8)
    return _BLOCKS_HELD * m * op.n * _itemsize(op.work_dtype) + matrix


def use_dense(op: SparseOperator, k: int, method: str, budget: int) -> tuple[bool, str]:
    """``(densify?, why)`` for one problem; ``method="dense"`` beyond ``budget`` is refused."""
    need = dense_bytes(op)
    fits = need <= budget
    gib = f"{need / 2**30:.3g} GiB dense of {budget / 2**30:.3g} GiB max_memory"
    if method == "dense":
        if not fits:
            raise InputError(
                op.what,
                f"would need ~{gib}: use method='lobpcg' (memory O(nnz + n k))",
            )
        return True, f"method='dense' ({gib})"
    if method in ("lobpcg", "lanczos"):
        return False, f"method={method!r}"
    small = op.n <= DENSE_MAX_N
    wide = 5 * block_size(k, op.n) > op.n
    density = (op.nnz or 0) / max(op.n * op.n, 1)
    full = density > DENSE_MIN_DENSITY
    if fits and (small or wide or full):
        why = (
            f"n = {op.n} <= {DENSE_MAX_N}"
            if small
            else f"k = {k} is a large share of n"
            if wide
            else f"density {density:.0%} > {DENSE_MIN_DENSITY:.0%}"
        )
        return True, f"dense: {why} and it fits ({gib})"
    if not fits:
        return False, f"iterative: the dense matrix does not fit ({gib})"
    return False, f"iterative: n = {op.n} > {DENSE_MAX_N} with k = {k}"


def choose_preconditioner(op: SparseOperator, spec: Any, budget: int) -> tuple[Any, str, int]:
    """``(preconditioner, why, bytes)`` for one iterative problem: ``spec`` itself unless it
    is ``"auto"``, which takes ``"factor"`` for an explicit CPU matrix of at most
    ``DIRECT_MAX_N`` rows whose dense fill would fit ``budget`` (not counted first), or
    whose estimated fill is at most ``FILL_CAP * nnz``, whose work is at most
    ``WORK_CAP * nnz`` and which fits ``budget``, else ``"amg"`` from ``AMG_MIN_N``
    (pyamg installed), else ``"jacobi"``."""
    if not (isinstance(spec, str) and spec == "auto"):
        name = spec if isinstance(spec, str) or spec is None else "callable"
        return spec, f"precondition={name!r}", 0
    explicit = op.csr is not None and op.device.type == "cpu" and op.bounds is not None
    if not explicit:
        return "jacobi", "jacobi (not an explicit CPU matrix)", 0
    assert op.csr is not None
    csr = op.csr()
    nnz = max(int(csr.nnz), 1)
    need = direct_bytes(op.n, nnz) if op.n <= DIRECT_MAX_N else budget + 1
    if need <= budget:
        return (
            "factor",
            f"factor: shift-invert sparse LU in SuperLU's ordering (n = {op.n} <= "
            f"{DIRECT_MAX_N}: even a dense fill, {need / 2**20:,.1f} MiB, fits)",
            need,
        )
    fill = estimate(csr, refuse_above=FILL_CAP)
    need = factor_bytes(fill.fill, nnz)
    ratio, work = fill.fill / nnz, fill.flops / nnz
    how = "" if fill.exact else " (RCM profile, not ordered)"
    est = f"fill{how} {fill.fill:,} = {ratio:.3g} nnz, work {work:.3g} nnz, {need / 2**20:,.1f} MiB"
    if ratio <= FILL_CAP and work <= WORK_CAP and need <= budget:
        return "factor", f"factor: shift-invert sparse LU ({est})", need
    why = (
        f"over {FILL_CAP} nnz"
        if ratio > FILL_CAP
        else f"work over {WORK_CAP} nnz"
        if work > WORK_CAP
        else "over max_memory"
    )
    if op.n >= AMG_MIN_N and amg_available():
        return "amg", f"amg: factorization {est} {why}", 0
    return "jacobi", f"jacobi: factorization {est} {why}", 0


def _lanczos_factor(op: SparseOperator, spec: Any) -> str:
    """``method="lanczos"`` iterates on the shift-invert factorization: refuse any other
    preconditioner and inputs that cannot be factored."""
    if not (isinstance(spec, str) and spec in ("auto", "factor")):
        raise InputError(
            "method",
            f"'lanczos' is shift-invert on the sparse LU (precondition='factor'), got "
            f"precondition={spec!r}: use method='lobpcg' for other preconditioners",
        )
    if op.csr is None or op.bounds is None:
        raise InputError(
            "method", "'lanczos' needs an explicit sparse matrix (torch or SciPy), not an operator"
        )
    return "factor"


@dataclass(frozen=True)
class SparsePlan:
    """How :func:`spectra.eigh` would solve a sparse input: per matrix, dense or iterative,
    and why; printing it gives one line per matrix."""

    methods: tuple[str, ...]
    reasons: tuple[str, ...]
    sizes: tuple[int, ...]
    nnz: tuple[int | None, ...]
    block: int
    memory: tuple[int, ...] = field(default=())
    #: per matrix, the preconditioner of the iterative path (``None`` where dense)
    preconditioners: tuple[Any, ...] = field(default=())
    #: per matrix, why that preconditioner ("" where dense)
    preconditioner_reasons: tuple[str, ...] = field(default=())
    budget: int = 0

    def __str__(self) -> str:
        lines = [
            f"sparse plan: {len(self.methods)} matrix(es), block of {self.block} vectors, "
            f"max_memory {self.budget / 2**30:.3g} GiB"
        ]
        pres = self.preconditioner_reasons or ("",) * len(self.methods)
        for i, (m, why, n, nnz, mem, pre) in enumerate(
            zip(self.methods, self.reasons, self.sizes, self.nnz, self.memory, pres, strict=True)
        ):
            dens = f", nnz {nnz:,} (density {nnz / max(n * n, 1):.2g})" if nnz is not None else ""
            lines.append(f"  [{i}] n {n:,}{dens}: {m} (~{mem / 2**20:,.1f} MiB) - {why}")
            if pre:
                lines.append(f"      preconditioner {pre}")
        return "\n".join(lines)


def plan_ops(
    ops: list[SparseOperator],
    k: int,
    method: str,
    budget: int,
    precondition: Any = "auto",
    per_matrix: bool = False,
) -> SparsePlan:
    """The plan of ``ops``; ``precondition`` is one spec, or one per matrix when
    ``per_matrix``. Factorizations are granted while their total fits ``budget``."""
    methods: list[str] = []
    reasons: list[str] = []
    memory: list[int] = []
    pres: list[Any] = []
    pre_why: list[str] = []
    left = budget
    for i, op in enumerate(ops):
        dense, why = use_dense(op, k, method, budget)
        methods.append("dense" if dense else "lobpcg")
        reasons.append(why)
        if dense:
            memory.append(dense_bytes(op))
            pres.append(None)
            pre_why.append("")
            continue
        base = iterative_bytes(op, k)
        spec = precondition[i] if per_matrix else precondition
        if method == "lanczos":
            spec = _lanczos_factor(op, spec)
        pre, pwhy, extra = choose_preconditioner(op, spec, max(left - base, 0))
        if pre == "factor" and method != "lobpcg":
            methods[-1] = "lanczos"
        left -= base + extra
        memory.append(base + extra)
        pres.append(pre)
        pre_why.append(pwhy)
    block = block_size(k, min(op.n for op in ops))
    return SparsePlan(
        tuple(methods),
        tuple(reasons),
        tuple(op.n for op in ops),
        tuple(op.nnz for op in ops),
        block,
        tuple(memory),
        tuple(pres),
        tuple(pre_why),
        budget,
    )


def plan_sparse(
    a: Any,
    k: int,
    *,
    method: str = "auto",
    max_memory: int | None = None,
    device: Any = None,
    precondition: Any = "auto",
) -> SparsePlan:
    """The dense-or-iterative decision ``spectra.eigh(a, k=k)`` takes for sparse ``a``
    (a torch/SciPy sparse matrix, a linear operator, a :class:`BlockDiagonal`, or a list of
    them), and the iterative path's preconditioner, without solving.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> p = plan_sparse([sp.identity(100, format="csr"), sp.identity(5000, format="csr")], k=4)
    >>> p.methods
    ('dense', 'lanczos')
    """
    if method not in METHODS:
        raise InputError("method", f"must be one of {METHODS}, got {method!r}")
    _, items, names = split_input(a)
    ops = [as_operator(x, name, False, None, device) for x, name in zip(items, names, strict=True)]
    budget = memory_budget(max_memory, ops[0].device)
    return plan_ops(ops, int(k), method, budget, precondition)
