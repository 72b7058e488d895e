"""The block shift-invert Lanczos of :mod:`._krylov` for one CPU problem, in NumPy.

The batched iteration (:func:`._krylov._run`) keeps every problem of a list in padded
``(G, ...)`` tensors, so each step is a few batched calls however many graphs it holds;
for one problem the same step is ~100 small torch operations and syncs of 5-40 us each
(masks, per-problem forecasts, index bookkeeping), ~0.9 ms a step against ~0.1 ms of
arithmetic at a few hundred nodes: one 518-node graph took 22 ms in 25 steps. Here the
step is the same algorithm on plain NumPy arrays of the one problem, with Python scalars
for its state: the same solves (the factor's :meth:`._factor.ShiftInvert.solve_into`),
classical Gram-Schmidt twice against the deflated vectors and the basis, Cholesky QR twice
(SVQB where a Gram matrix is not safely definite), the residual estimates from the Krylov
relation, the forecast that skips Rayleigh-Ritz steps (:class:`._krylov_rules.Skip`'s, on
floats), thick restarts, and the true residuals deciding convergence. Every projected
eigenproblem still goes through the core's dense eigh (:func:`._lobpcg.dense_eigh`).

The widened re-runs of :func:`._krylov.lanczos` (repeated eigenvalues) and the caller's
checks are shared with the batched path; :func:`serves` says which problems come here.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import torch
from scipy.linalg import lapack

from .._errors import InputError
from . import _krylov_rules as kr
from ._lobpcg import Batch, Result, dense_eigh, svqb
from ._precondition import FactorSolve


def serves(batch: Batch, x0: torch.Tensor) -> bool:
    """Whether the one-problem iteration takes ``batch``: a single problem on the CPU,
    shift-invert by a CPU factor of the block's dtype, no gradients."""
    if len(batch.ops) != 1 or x0.device.type != "cpu" or x0.requires_grad:
        return False
    pre = batch.pre[0]
    return isinstance(pre, FactorSolve) and pre.device.type == "cpu" and pre.dtype == x0.dtype


#: NumPy's OpenBLAS runs a matrix product of more multiply-adds than this on its own
#: thread team (``65536 x GEMM_MULTITHREAD_THRESHOLD``; a matrix-vector product from
#: ``2304 x 4``), whose size is process-wide and not ours to set: measured, a
#: ``(562, 48) @ (48, 10)`` product kept two cores busy, and such threads woke on the core
#: that the other worker of an overlapped graph batch was using (an 882-node graph: 66 ms
#: against 20 ms). Larger products go through torch, whose kernel threads follow the
#: calling thread's setting; below it NumPy's call is the cheaper (2-20 us against 6-50 us
#: at a few hundred rows).
NUMPY_MAX_WORK = 65536 * 4
NUMPY_MAX_VECTOR_WORK = 2304 * 4


def _mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` of 2-D arrays, on one kernel thread where the caller set one."""
    m, inner, n = a.shape[0], a.shape[1], b.shape[1]
    bound = NUMPY_MAX_VECTOR_WORK if min(m, n) == 1 else NUMPY_MAX_WORK
    if m * inner * n <= bound:
        return a @ b
    return (torch.from_numpy(a) @ torch.from_numpy(b)).numpy()


def _conj(a: np.ndarray) -> np.ndarray:
    """``a``'s complex conjugate; ``a`` itself when real (``conj`` would copy it)."""
    return a.conj() if np.iscomplexobj(a) else a


def _eigh(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The core's dense eigh of one small Hermitian matrix (ascending)."""
    w, v = dense_eigh(torch.from_numpy(np.ascontiguousarray(h))[None])
    return w[0].numpy(), v[0].numpy()


def _svqb(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    q, kept = svqb(torch.from_numpy(np.ascontiguousarray(w))[None])
    return q[0].numpy(), kept[0].numpy()


def _project_(rows: np.ndarray, against: np.ndarray) -> np.ndarray:
    """``rows`` (``(b, n)``) against the orthonormal rows of ``against``, in place; the
    coefficients ``(s, b)`` (as :func:`._krylov._project_`)."""
    part = _mm(_conj(against), rows.T)
    rows -= _mm(part.T, against)
    return part


def _orthonormal(w: np.ndarray, deflate: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``w`` against the orthonormal columns ``deflate`` twice, then SVQB twice."""
    for _ in range(2):
        if deflate is not None:
            w = w - _mm(deflate, _mm(_conj(deflate).T, w))
        w, kept = _svqb(w)
    return w, kept


@functools.cache
def _cholesky_routines(char: str) -> tuple[Any, Any]:
    """LAPACK's ``?potrf`` and ``?trtri`` for the NumPy dtype character ``char``."""
    routines = lapack.get_lapack_funcs(("potrf", "trtri"), dtype=np.dtype(char))
    return routines[0], routines[1]


def _orthonormalize(w: np.ndarray, cond: float) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal columns spanning ``w`` (``(n, b)``) and which were kept: Cholesky QR
    twice, or SVQB twice where a Gram matrix is not safely positive definite (as
    :func:`._krylov._orthonormalize` for one problem)."""
    potrf, trtri = _cholesky_routines(w.dtype.char)
    q = w
    for _ in range(2):
        factor, info = potrf(_mm(_conj(q).T, q), lower=True, clean=True)
        d = np.diagonal(factor).real
        if info != 0 or not d.min() > cond * d.max():
            q, _ = _svqb(w)
            return _svqb(q)
        inverse, _ = trtri(factor, lower=True)  # L^-1 of a well-conditioned b x b factor
        q = _mm(q, _conj(inverse).T)  # q L^-H
    return q, np.ones(w.shape[-1], dtype=bool)


class _Forecast:
    """:class:`._krylov_rules.Skip` for one problem, on Python floats: the torch form costs
    ~0.6 ms a call in its small operations (8% of a 700-node graph's solve), the formula is
    the same (tested against it step by step)."""

    def __init__(self) -> None:
        self.last, self.at, self.next = math.inf, 0.0, 0.0

    def observe(self, step: int, worst: float) -> None:
        """As ``Skip.observe`` for one problem, ``worst`` its largest ratio."""
        worst = max(worst, 1e-300)
        rate = (worst / self.last) ** (1.0 / max(step - self.at, 1.0))
        ahead = 0.0
        if math.isfinite(self.last) and rate < 1.0 and worst > 1.0:
            ahead = math.log(worst) / max(-math.log(rate), 1e-300)
        self.next = step + max(math.floor(ahead * kr.SKIP_MARGIN), 1.0)
        self.last, self.at = worst, float(step)


def run_one(
    batch: Batch,
    x0: torch.Tensor,
    k: int,
    tolerance: torch.Tensor,
    maxiter: int,
    deflate: torch.Tensor | None,
    settle: tuple[torch.Tensor, int] | None,
    b: int,
    room: int | None,
) -> tuple[Result, torch.Tensor]:
    """:func:`._krylov._run` for the one problem of ``batch`` (:func:`serves`): the same
    arguments and results."""
    _, n_max, m = x0.shape
    room = max(room if room is not None else 4 * m, m + 2 * m)
    op, pre = batch.ops[0], batch.pre[0]
    assert isinstance(pre, FactorSolve)
    solver, sigma, n = pre.solver, pre.sigma, op.n
    start = x0[0, :n].numpy()
    dtype = start.dtype
    flip = batch.sign < 0
    defl = None
    if deflate is not None and deflate.shape[-1]:
        defl = deflate[0, :n].numpy()
    d = 0 if defl is None else defl.shape[1]

    def times_b(x: np.ndarray) -> np.ndarray:
        y = op.matmul(torch.from_numpy(np.ascontiguousarray(x))).numpy()
        return -y if flip else y

    def finite(h: np.ndarray) -> None:
        """:meth:`Batch.check_finite` of one problem, without its torch operations."""
        if not np.isfinite(h).all():
            batch.check_finite(torch.from_numpy(h)[None])  # raises, naming the operator

    def ritz(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        bx = times_b(x)
        h = _mm(_conj(x).T, bx)
        finite(h)
        theta, c = _eigh(h)
        x, bx = _mm(x, c), _mm(bx, c)
        r = bx - x * theta.astype(dtype)
        return theta.astype(np.float64), x, np.linalg.norm(r, axis=0).astype(np.float64)

    tol = float(tolerance[0])
    loose = tol if settle is None else max(float(settle[0][0]), tol)
    q, kept = _orthonormal(start[:, :b], defl)
    if not kept.all():
        raise InputError("k", "leaves too few vectors: the start block is rank deficient")
    # rows: the deflated vectors, then the basis (projected against together: one pair of
    # products for both, where the batched form takes two)
    store = np.zeros((d + room, n), dtype=dtype)
    if defl is not None:
        store[:d] = defl.T
    basis = store[d:]
    h = np.zeros((room, room), dtype=dtype)
    basis[:b] = q.T
    size, current, local = b, q, 0
    theta = np.zeros(m, dtype=np.float64)
    x = np.zeros((n, m), dtype=dtype)
    norms = np.full(m, math.inf)
    done = widen = False
    steps = settled = 0
    forecast = _Forecast()
    neg = y = np.zeros(0)
    solved = np.empty((n, b), dtype=solver.dtype)
    while steps < maxiter and not done:
        steps += 1
        width = current.shape[-1]
        solver.solve_into(current, solved[:, :width])
        rows = np.ascontiguousarray(solved[:, :width].T, dtype=dtype)  # our own copy, rows
        w = rows.T
        before = np.linalg.norm(rows, axis=1)
        # classical Gram-Schmidt twice against [deflate, Q]: first against the blocks the
        # recurrence couples T Q_j to (after a restart every kept vector), then the whole
        if local == 0:
            against = store[: d + size]
        elif d:
            against = np.concatenate([store[:d], basis[local:size]])
        else:
            against = basis[local:size]
        part = _project_(rows, against)[d:]
        col = slice(size - width, size)
        h[:size, col] = 0
        h[local:size, col] = part
        h[:size, col] += _project_(rows, store[: d + size])[d:]
        rows[~(np.linalg.norm(rows, axis=1) > kr.DEPENDENT * before)] = 0  # dependent: dropped
        new, kept = _orthonormalize(w, kr.COND)
        sub = _conj(new).T @ w  # Q_{j+1}^H T Q_j
        restart = size + b > room
        last = steps >= maxiter or not kept.any()
        due = size >= m and (restart or last or steps >= forecast.next)
        if due:
            sym = h[:size, :size]
            finite(sym)
            neg, y = _eigh(-sym)  # ascending -mu: the largest mu of T first
            mu = -neg[:m]
            # residuals of x = Q y, w = sigma + 1/mu: ||(B - sigma) Q_{j+1} S y_j|| / mu
            z = times_b(new) - sigma * new
            c = sub @ y[size - width : size, :m]
            est = np.sqrt(np.maximum((_conj(c) * (_mm(_conj(z).T, z) @ c)).sum(0).real, 0))
            est = est / np.maximum(mu.real, 1e-300)
            forecast.observe(steps, float((est[:k] / tol).max()))
            wanted = bool((est[:k] <= tol).all())
            if settle is not None:
                reached = bool((est[:k] <= float(settle[0][0])).all())
                settled = settled + 1 if reached else 0
                if reached:
                    forecast.next = 0.0  # within the caller's tolerance: every step counts
            give_up = last or (settle is not None and settled > settle[1])
            if wanted or give_up:
                theta, x, norms = ritz(_mm(basis[:size].T, y[:, :m]))
                ok = bool((norms[:k] <= tol).all())
                accepted = bool((norms[:k] <= loose).all())
                gap = kr.CLUSTER * max(float(norms[:k].max()), tol)
                cluster = kr.widest_cluster(torch.from_numpy(theta)[None], k, torch.tensor([gap]))
                widen = widen or (b < m and accepted and int(cluster[0]) >= b)
                done = ok
            if give_up or done:
                break
        if restart:  # thick restart: the leading Ritz vectors and the pending block
            keep = max(m, (room - b) // 2)
            basis[:keep] = _mm(y[:, :keep].T, basis[:size])
            coupling = sub @ y[size - width : size, :keep]
            h[:] = 0
            h[np.arange(keep), np.arange(keep)] = -neg[:keep]
            h[keep : keep + b, :keep] = coupling
            size, local = keep, 0  # the pending block couples to every kept vector
        else:
            h[size : size + b, size - width : size] = sub
            local = size - width
        basis[size : size + b] = new.T
        size, current = size + b, new
    if np.isinf(norms).any():  # stopped before m Ritz pairs (maxiter): the start block
        first, _ = _orthonormal(start, defl)
        theta, x, norms = ritz(first)
    vectors = torch.zeros(1, n_max, m, dtype=x0.dtype)
    vectors[0, :n] = torch.from_numpy(x)
    result = Result(
        torch.from_numpy(theta)[None],
        vectors,
        torch.from_numpy(norms[:k].copy())[None],
        tolerance,
        steps,
        op.calls[0],
    )
    return result, torch.tensor([widen])
