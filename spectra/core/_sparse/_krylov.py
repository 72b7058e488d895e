"""Block shift-invert Lanczos with thick restart, on the sparse LU of the shifted matrix.

For ``B = sign * A`` and ``T = (B - sigma I)^-1`` (``sigma`` below ``B``'s spectrum, so ``T``
is positive definite; :mod:`._factor`), the smallest eigenvalues ``w`` of ``B`` are the
largest ``mu = 1 / (w - sigma)`` of ``T``. A Krylov space of ``T`` built from a narrow
block finds them in far fewer solves than the block LOBPCG with the same factor as its
preconditioner (normalized Laplacians of random geometric graphs, k = 8: ~40 solved
columns against ~130): its polynomial degree grows with every solve, where a block as wide
as the wanted set raises it only once per ``m`` columns.

Each problem ``g`` of a batch has a basis ``Q_g`` of blocks of ``b`` vectors; the bases are
stacked with zero padding, so every dense step is one batched call, and the projected
problems go through the core's dense eigh (:func:`._lobpcg.dense_eigh`). Per step:

- ``W = T Q_j`` (one block solve with the factor), projected against the deflated vectors
  and the basis twice (classical Gram-Schmidt twice); the coefficients are the column
  block of ``H = Q^H T Q``, SVQB of the remainder the next block ``Q_{j+1}`` (dependent
  directions are dropped: zero columns, whose Ritz values ``mu = 0`` lie below every true
  one) and ``S = Q_{j+1}^H W`` its coupling;
- Rayleigh-Ritz on ``H``: the ``m`` largest pairs ``(mu, y)``; the Krylov relation
  ``T Q = Q H + Q_{j+1} S E^H`` gives, for ``x = Q y`` and ``w = sigma + 1/mu``, the exact
  residual ``B x - w x = -(B - sigma) Q_{j+1} S y_j / mu``, whose norms come from one
  product of ``B`` with the new block and a ``b x b`` Gram matrix; once they are all
  within the tolerance, Rayleigh-Ritz of ``B`` on the ``m`` Ritz vectors gives the values,
  the vectors and the *true* residuals ``||B x - w x||``, which decide convergence;
- when the basis is full (``room``) it restarts thickly: the ``keep`` largest Ritz vectors
  and the pending block, ``H`` then diagonal plus the pending block's coupling
  (Stathopoulos, Saad & Wu 1998; Stewart's Krylov-Schur).

Multiplicity: from a random block of ``b`` vectors a block Krylov space holds at most
``b`` copies of a repeated eigenvalue (generically exactly ``min(b, multiplicity)``), so a
wanted cluster of ``b`` or more equal Ritz values may hide more copies: the block is then
widened (fresh random directions join the pending block) and the iteration goes on, up to
``m`` vectors per block (the LOBPCG block's guarantee).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .._errors import InputError
from . import _krylov_one
from ._krylov_rules import BLOCK, CLUSTER, COND, DEPENDENT
from ._krylov_rules import Skip as _Skip
from ._krylov_rules import widest_cluster as _widest_cluster
from ._lobpcg import Batch, Result, dense_eigh, svqb


def _project_(rows: torch.Tensor, against: torch.Tensor) -> torch.Tensor:
    """The block whose columns are the rows of ``rows`` (``(G, b, n)``, contiguous) against
    the orthonormal vectors that are the rows of ``against`` (``(G, s, n)``), in place;
    returns the coefficients ``(G, s, b)``.

    Both stay as rows: ``rows -= c^T against`` with ``c = conj(against) rows^T`` reads each
    operand along its contiguous dimension, 2-9x faster than the same products on the
    columns (``(11, 1009, 44)`` basis, 3 vectors: 0.44 against 1.0 ms; 47 x 512: 0.78
    against 3.7 ms); ``baddbmm_`` makes no temporary of the block's size (each fresh block
    of a few hundred KiB cost its page faults on this 2-core VM, ~0.3 ms at
    ``(11, 1009, 3)``)."""
    part = against.conj() @ rows.mT
    rows.baddbmm_(part.mT, against, alpha=-1)
    return part


def _orthonormal(
    w: torch.Tensor, bases: list[torch.Tensor | None]
) -> tuple[torch.Tensor, torch.Tensor]:
    """``w`` against the orthonormal ``bases`` twice, then SVQB twice: ``(q, kept)``."""
    for _ in range(2):
        for z in bases:
            if z is not None and z.shape[-1]:
                w = w - z @ (z.mH @ w)
        w, kept = svqb(w)
    return w, kept


def _orthonormalize(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Orthonormal columns spanning ``w`` (``(G, n, b)``) and which were kept: Cholesky QR
    twice, or SVQB twice (dropping dependent columns) where a Gram matrix is not safely
    positive definite (condition above ``1 / COND``, or a zero column).

    A problem whose block is all zero (one that has converged: its solves are skipped)
    keeps its zero block, none of its columns kept, and takes the Cholesky route with the
    others (its Gram matrix stood in by the identity): it used to send the whole batch to
    SVQB from the first converged problem on (11 graphs of 500-1,000 nodes: SVQB in 12 of
    28 steps)."""
    q = w
    idle: torch.Tensor | None = None  # (one problem alone: its zero block ends the run)
    for _ in range(2):
        gram = q.mH @ q
        if idle is None and w.shape[0] > 1:
            idle = gram.abs().flatten(1).amax(-1) == 0
            idle = idle if bool(idle.any()) else None
        if idle is not None:
            eye = torch.eye(gram.shape[-1], dtype=gram.dtype, device=gram.device)
            gram = torch.where(idle.view(-1, 1, 1), eye, gram)
        factor, info = torch.linalg.cholesky_ex(gram)
        d = factor.diagonal(dim1=-2, dim2=-1).real
        if bool((info != 0).any()) or bool((d.amin(-1) <= COND * d.amax(-1)).any()):
            q, _ = svqb(w)
            q, kept = svqb(q)
            return q, kept
        q = torch.linalg.solve_triangular(factor.mH, q, upper=True, left=False)
    kept = torch.ones(w.shape[0], w.shape[-1], dtype=torch.bool)
    if idle is not None:
        kept[idle.cpu()] = False
    return q, kept


def _projected_eigh(sym: torch.Tensor, done: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eigenpairs of ``-sym`` (``(G, s, s)``: ascending ``-mu``) for the problems not
    ``done``; a converged problem gets ``-mu = 0`` and the identity (its basis, restarted
    with it, stays as it is, and nothing of it is read again). Each matrix is solved as it
    is solved alone (:func:`dense_eigh`), so the others' results do not change."""
    if not bool(done.any()):
        return dense_eigh(-sym)
    live = (~done).nonzero().squeeze(-1).to(sym.device)
    g, s = sym.shape[0], sym.shape[-1]
    y = torch.eye(s, dtype=sym.dtype, device=sym.device).expand(g, s, s).clone()
    if not live.numel():
        return torch.zeros(g, s, dtype=sym.real.dtype, device=sym.device), y
    neg_live, y_live = dense_eigh(-sym.index_select(0, live))
    neg = torch.zeros(g, s, dtype=neg_live.dtype, device=sym.device)
    neg[live], y[live] = neg_live, y_live
    return neg, y


def _ritz(
    batch: Batch, x: torch.Tensor, skip: torch.Tensor, rows: list[int] | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rayleigh-Ritz of ``B`` on the span of ``x`` (``(G, n, m)``): ascending values, the
    rotated vectors and their true residual norms ``(G, m)`` (CPU, float64). With ``rows``
    (problem indices), ``x`` holds only those problems (``(len(rows), n, m)``)."""
    if rows is None:
        bx = batch.apply(x, skip)
    else:
        bx = torch.zeros_like(x)
        for i, g in enumerate(rows):
            n = batch.sizes[g]
            y = batch.ops[g].matmul(x[i, :n])
            bx[i, :n] = y if batch.sign > 0 else -y
    h = x.mH @ bx
    batch.check_finite(h)
    theta, c = dense_eigh(h)
    x, bx = x @ c, bx @ c
    r = bx - x * theta.to(x.dtype).unsqueeze(-2)
    return theta, x, r.norm(dim=-2).double().cpu()


def lanczos(
    batch: Batch,
    x0: torch.Tensor,
    k: int,
    tolerance: torch.Tensor,
    maxiter: int,
    deflate: torch.Tensor | None,
    settle: tuple[torch.Tensor, int] | None = None,
    block: int = BLOCK,
    room: int | None = None,
) -> Result:
    """Smallest ``k`` eigenpairs of each operator of ``batch`` (whose preconditioners are
    exact shift-invert solves with a ``sigma`` attribute, :class:`._precondition.FactorSolve`)
    from the start block ``x0`` (``(G, n_max, m)``, zero in padded rows; the first
    ``block`` columns start the space), on the complement of ``deflate`` (orthonormal
    ``(G, n_max, d)`` or ``None``), to residual norms ``<= tolerance`` ``(G,)``; at most
    ``maxiter`` block solves per block width and ``room`` basis vectors (default
    ``4 m``). ``settle`` as for :func:`._lobpcg.lobpcg`; ``iterations`` counts the solves.

    A problem whose wanted values hold a cluster as large as the block is solved again
    with a block twice as wide (at most ``m``): a Krylov space from ``b`` random vectors
    holds at most ``b`` copies of a repeated eigenvalue.
    """
    m = x0.shape[-1]
    b = max(1, min(block, m))
    res, widen = _solve(batch, x0, k, tolerance, maxiter, deflate, settle, b, room)
    while bool(widen.any()) and b < m:
        b = min(m, 2 * b)
        redo = widen.nonzero().squeeze(-1).tolist()
        sub = Batch([batch.ops[i] for i in redo], batch.sign, [batch.pre[i] for i in redo])
        sub.n_max = batch.n_max  # the same padded rows as the whole batch
        again, more = _solve(
            sub,
            x0[redo],
            k,
            tolerance[redo],
            maxiter,
            None if deflate is None else deflate[redo],
            None if settle is None else (settle[0][redo], settle[1]),
            b,
            room,
        )
        rows = torch.tensor(redo)
        for field in ("values", "vectors", "residuals"):
            getattr(res, field)[rows.to(getattr(res, field).device)] = getattr(again, field)
        res.iterations += again.iterations
        widen = torch.zeros_like(widen)
        widen[rows] = more
    res.products = sum(op.calls[0] for op in batch.ops)
    return res


def _solve(batch: Batch, x0: torch.Tensor, *rest: Any) -> tuple[Result, torch.Tensor]:
    """One run of the block iteration (the arguments of :func:`_run`): one CPU problem by
    :func:`._krylov_one.run_one` (the same steps in NumPy, without the batch's per-step
    overhead), a batch by :func:`_run`."""
    runner = _krylov_one.run_one if _krylov_one.serves(batch, x0) else _run
    return runner(batch, x0, *rest)


def _run(
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
    """One run of the block iteration with blocks of ``b``; also returns which problems
    converged with a cluster of ``b`` or more wanted values (possibly more copies)."""
    G, n_max, m = x0.shape
    room = max(room if room is not None else 4 * m, m + 2 * m)
    dtype, device = x0.dtype, x0.device
    sigma = torch.tensor([float(getattr(p, "sigma", 0.0)) for p in batch.pre], dtype=torch.float64)
    if any(not hasattr(p, "sigma") for p in batch.pre):
        raise InputError("method", "'lanczos' needs the shift-invert factorization of each matrix")
    sig = sigma.to(device=device, dtype=dtype).view(G, 1, 1)
    none = torch.zeros(G, dtype=torch.bool)
    q, kept = _orthonormal(x0[..., :b], [deflate])
    deflate_rows = None
    if deflate is not None and deflate.shape[-1]:
        deflate_rows = deflate.mT.contiguous()
    if not bool(kept.all()):
        raise InputError("k", "leaves too few vectors: the start block is rank deficient")
    basis = torch.zeros(G, room, n_max, dtype=dtype, device=device)  # rows: the basis
    h = torch.zeros(G, room, room, dtype=dtype, device=device)
    basis[:, :b] = q.mT
    size, current = b, q
    local = 0  # where the blocks T Q_j couples to start
    theta = torch.zeros(G, m, dtype=torch.float64, device=device)
    x = torch.zeros(G, n_max, m, dtype=dtype, device=device)
    norms = torch.full((G, m), float("inf"), dtype=torch.float64)
    done, widen = none.clone(), none.clone()
    loose = tolerance if settle is None else torch.maximum(settle[0], tolerance)
    reached = none.clone()  # within the caller's tolerance by the estimates (``settle``)
    steps = settled = 0
    skip = _Skip(G)
    while steps < maxiter and not bool(done.all()):
        steps += 1
        width = current.shape[-1]
        active = (~done).view(G, 1).expand(G, width).to(device)
        solved = batch.precondition(current, active)
        # our own copy (an identity preconditioner returns its input), stored as rows
        rows = solved.mT.clone(memory_format=torch.contiguous_format)
        w = rows.mT
        before = w.norm(dim=-2)
        # classical Gram-Schmidt twice against [deflate, Q]: first against the blocks the
        # recurrence couples T Q_j to (Q_{j-1} and Q_j; after a restart every kept vector),
        # then against the whole basis (the rest is rounding: one full pass fixes it)
        if deflate_rows is not None:
            _project_(rows, deflate_rows)
        part = _project_(rows, basis[:, local:size])
        h[:, :size, size - width : size] = 0
        h[:, local:size, size - width : size] = part
        if deflate_rows is not None:
            _project_(rows, deflate_rows)
        h[:, :size, size - width : size] += _project_(rows, basis[:, :size])
        # numerically dependent columns (the space is nearly invariant) are dropped
        w.mul_((w.norm(dim=-2) > DEPENDENT * before).to(w.dtype).unsqueeze(-2))
        new, kept = _orthonormalize(w)
        sub = new.mH @ w  # Q_{j+1}^H T Q_j
        restart = size + b > room
        last = steps >= maxiter or not bool(kept.any())
        due = None  # whose Rayleigh-Ritz step this is
        if size >= m and (restart or last):
            due = ~done  # every problem: its Ritz vectors are kept, or it is the last step
        elif size >= m and skip.any_due(steps):
            due = skip.due(steps) & ~done
        if due is not None and bool(due.any()):
            sym = h[:, :size, :size]
            batch.check_finite(sym)
            # ascending -mu, the largest mu of T first (the problems not due: identity)
            neg, y = _projected_eigh(sym, ~due)
            mu = -neg[..., :m]
            # residuals of x = Q y, w = sigma + 1/mu: ||(B - sigma) Q_{j+1} S y_j|| / mu
            z = batch.apply(new, ~due) - sig * new
            c = sub @ y[:, size - width : size, :m]
            est = (c.conj() * ((z.mH @ z) @ c)).sum(-2).real.clamp_min(0).sqrt()
            est = (est / mu.real.clamp_min(1e-300)).double().cpu()
            est = torch.where(due.view(G, 1), est, math.inf)  # not read this step
            skip.observe(steps, est[:, :k] / tolerance.unsqueeze(-1), due)
            wanted = (est[:, :k] <= tolerance.unsqueeze(-1)).all(-1)
            if settle is not None:
                within = (est[:, :k] <= settle[0].unsqueeze(-1)).all(-1)
                reached = torch.where(due, within, reached)
                settled = settled + 1 if bool((reached | done).all()) else 0
                # within the caller's tolerance: each of its steps counts
                skip.hold(reached & ~done)
            give_up = last
            give_up = give_up or (settle is not None and settled > settle[1])
            check = (wanted | give_up) & ~done
            if bool(check.any()):
                # only the problems checked: the others' blocks are neither formed nor
                # merged (a batch of graphs converges over several steps)
                picked = check.nonzero().squeeze(-1)
                at = picked.to(device)
                basis_at = basis.index_select(0, at)[:, :size].mT
                t_new, x_new, n_new = _ritz(
                    batch, basis_at @ y.index_select(0, at)[..., :m], ~check, picked.tolist()
                )
                theta[at] = t_new
                x[at] = x_new
                norms[picked] = n_new
                ok = check & (norms[:, :k] <= tolerance.unsqueeze(-1)).all(-1)
                accepted = check & (norms[:, :k] <= loose.unsqueeze(-1)).all(-1)
                # copies of one eigenvalue agree within their residuals
                gap = CLUSTER * torch.maximum(norms[:, :k].amax(-1), tolerance)
                crowded = _widest_cluster(theta, k, gap) >= b
                widen = widen | (accepted & crowded) if b < m else widen
                done = done | ok
                skip.retire(done)
            if give_up or bool(done.all()):
                break
        if restart:  # thick restart: the leading Ritz vectors and the pending block
            keep = max(m, (room - b) // 2)
            basis[:, :keep] = y[..., :keep].mT @ basis[:, :size]
            coupling = sub @ y[:, size - width : size, :keep]
            h.zero_()
            idx = torch.arange(keep, device=device)
            h[:, idx, idx] = (-neg[..., :keep]).to(dtype)
            h[:, keep : keep + b, :keep] = coupling
            size = keep
            local = 0  # the pending block couples to every kept vector
        else:
            h[:, size : size + b, size - width : size] = sub
            local = size - width
        basis[:, size : size + b] = new.mT
        size, current = size + b, new
    if bool(torch.isinf(norms).any()):  # stopped before m Ritz pairs (maxiter): the start block
        start, _ = _orthonormal(x0, [deflate])
        theta, x, norms = _ritz(batch, start, done)
    products = sum(op.calls[0] for op in batch.ops)
    return Result(theta, x, norms[:, :k], tolerance, steps, products), widen
