"""Batched block LOBPCG (Knyazev 2001) for the smallest eigenpairs of several operators.

Every problem ``g`` of a batch contributes a block ``X_g`` of ``m`` vectors; the blocks are
stacked with zero padding to ``(G, n_max, m)`` so that every dense step (projections, Gram
matrices, the Rayleigh-Ritz eigenproblems) is one batched call, and the Rayleigh-Ritz and
orthonormalization eigenproblems go through the core's own batched dense eigh
(:func:`dense_eigh`, the LAPACK adapter of the dense path). Only the products with the
operators and the preconditioners loop over the problems.

Robustness (after Hetmaniuk & Lehoucq 2006, Duersch et al. 2018):

- ``X`` stays orthonormal; the new directions ``[P, W]`` are projected against the deflated
  vectors and ``X`` twice (classical Gram-Schmidt twice) and orthonormalized by SVQB (the
  eigendecomposition of their scaled Gram matrix) twice, dropping directions whose Gram
  eigenvalue falls below ``DROP`` (linear dependence never reaches Rayleigh-Ritz);
- the products ``A [P, W]`` are computed fresh each iteration from the orthonormal basis, so
  ``A X`` is only ever updated by unitary combinations (no error amplification);
- converged columns are soft-locked (no new directions for them), guard columns beyond ``k``
  keep iterating, and a problem whose ``k`` wanted pairs have converged is frozen;
- convergence is decided on the *true* residual: when the recurrences say converged,
  ``A X`` is recomputed and checked again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .._errors import InputError
from .._pipeline._solve import push_to_top
from .._solvers._native import native_solve_batch
from .._solvers._torch_lapack import torch_eigh
from ._operators import SparseOperator
from ._precondition import Preconditioner, factor_solve_batch

#: relative Gram eigenvalue below which SVQB drops a direction
DROP = 1e-10


@dataclass
class Result:
    """Ritz values ``(G, m)`` ascending, vectors ``(G, n_max, m)``, residual norms of the
    ``k`` wanted pairs ``(G, k)``, their tolerance ``(G,)`` and the iteration count."""

    values: torch.Tensor
    vectors: torch.Tensor
    residuals: torch.Tensor
    tolerance: torch.Tensor
    iterations: int
    products: int

    @property
    def converged(self) -> torch.Tensor:
        return (self.residuals <= self.tolerance.unsqueeze(-1)).all(-1)


def dense_eigh(
    h: torch.Tensor, inactive: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eigenpairs of the small Hermitian batch ``h`` (``(G, s, s)``), ascending, by the
    core's LAPACK adapter (:func:`spectra.core._solvers._torch_lapack.torch_eigh`) without
    the pipeline's planning and checks: the projected problems of an iteration are small,
    finite (:meth:`Batch.check_finite`) and many (~0.3 ms of pipeline each against
    ~0.03 ms of LAPACK at s = 10..30). ``inactive`` (``(G, s)``) marks zero rows/columns,
    whose eigenpairs come out as the top ones.

    On the CPU the whole batch is one call of the compiled helper where it is built
    (:func:`spectra.core._solvers._native.native_solve_batch`: the closed form up to
    ``s = 3``, LAPACK's ``?syevd`` above, each matrix as one call on it solves it, gauged),
    not one ``torch.linalg.eigh`` per matrix: a batch of ``s x s`` matrices whose size is
    not a multiple of 64 bytes goes matrix by matrix through torch (see
    :mod:`spectra.core._solvers._torch_lapack`), ~10 us each, and the Gram matrices of
    Gram-Schmidt (``3 x 3``) and the Lanczos projections (``s`` up to ~50) of a batch of
    58 graphs took 48 ms of a 350 ms solve that way."""
    h = (h + h.mH) / 2
    if inactive is not None:
        h = push_to_top(h, inactive)
    h = h.contiguous()
    if h.device.type == "cpu" and h.shape[0] > 1:
        solved = native_solve_batch(h, True, False)
        if solved is not None and solved[1] is not None:
            return solved[0], solved[1]
    w, v = torch_eigh(h, True)
    assert v is not None
    return w, v


def _project(q: torch.Tensor, bases: Sequence[torch.Tensor | None]) -> torch.Tensor:
    """``q`` with its components along each orthonormal basis removed (classical GS)."""
    for z in bases:
        if z is not None and z.shape[-1]:
            q = q - z @ (z.mH @ q)
    return q


def svqb(q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Orthonormalize the columns of ``q`` (``(G, n, c)``): returns ``(q', kept)`` with the
    dropped (dependent or zero) columns of ``q'`` exactly zero and ``kept`` ``(G, c)``.

    >>> q = torch.tensor([[[1.0, 2.0], [0.0, 0.0], [1.0, 2.0]]], dtype=torch.float64)
    >>> out, kept = svqb(q)
    >>> int(kept.sum()), round(float(out[0].norm()), 6)
    (1, 1.0)
    """
    gram = q.mH @ q
    d = gram.diagonal(dim1=-2, dim2=-1).real
    scale = torch.where(d > 1e-280, d.clamp_min(1e-280).rsqrt(), torch.zeros_like(d))
    s = scale.to(q.dtype)
    theta, u = dense_eigh(s.unsqueeze(-1) * gram * s.unsqueeze(-2))
    top = theta.amax(-1, keepdim=True)
    kept = theta > DROP * top.clamp_min(1e-300)
    inv = torch.where(kept, theta.clamp_min(1e-300).rsqrt(), torch.zeros_like(theta))
    transform = s.unsqueeze(-1) * u * inv.to(q.dtype).unsqueeze(-2)
    return q @ transform, kept


class Batch:
    """The operators of a batch applied to padded blocks ``(G, n_max, c)``."""

    def __init__(
        self,
        ops: Sequence[SparseOperator],
        sign: float,
        preconditioners: Sequence[Preconditioner | None],
    ):
        self.ops, self.sign, self.pre = list(ops), sign, list(preconditioners)
        self.sizes = [op.n for op in ops]
        self.n_max = max(self.sizes)

    def apply(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        """``sign * A_g x_g`` for every problem not in ``skip`` (zeros for those)."""
        if len(self.ops) == 1 and self.sizes[0] == x.shape[1]:  # no padding: no copies
            if bool(skip[0]):
                return torch.zeros_like(x)
            y = self.ops[0].matmul(x[0])
            return (y if self.sign > 0 else -y).unsqueeze(0)
        out = torch.zeros_like(x)
        for g, (op, n) in enumerate(zip(self.ops, self.sizes, strict=True)):
            if not bool(skip[g]):
                y = op.matmul(x[g, :n])
                out[g, :n] = y if self.sign > 0 else -y
        return out

    def check_finite(self, h: torch.Tensor) -> None:
        """NaN/Inf from an operator (or overflow) shows in the projected matrices ``h``."""
        bad = (~torch.isfinite(h)).flatten(1).any(-1).cpu()
        if bool(bad.any()):
            names = [self.ops[g].what for g in bad.nonzero().squeeze(-1).tolist()]
            raise InputError(names[0], "gave NaN or Inf from matmul (non-finite or overflow)")

    def precondition(self, r: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        """``T_g`` applied to the active columns of each problem (the others stay zero)."""
        if len(self.pre) == 1 and self.sizes[0] == r.shape[1] and bool(active.all()):
            pre = self.pre[0]  # one problem, no padding, every column: no copies
            return r if pre is None else pre(r[0]).unsqueeze(0)
        fused = factor_solve_batch(self.pre, self.sizes, r, active)
        if fused is not None:
            return fused
        out = torch.zeros_like(r)
        for g, (pre, n) in enumerate(zip(self.pre, self.sizes, strict=True)):
            cols = active[g].nonzero().squeeze(-1)
            if not cols.numel():
                continue
            block = r[g, :n][:, cols]
            out[g, :n, cols] = block if pre is None else pre(block)
        return out


def lobpcg(
    batch: Batch,
    x0: torch.Tensor,
    k: int,
    tolerance: torch.Tensor,
    maxiter: int,
    deflate: torch.Tensor | None,
    settle: tuple[torch.Tensor, int] | None = None,
) -> Result:
    """Smallest ``k`` eigenpairs of each operator of ``batch`` from the start block ``x0``
    (``(G, n_max, m)``, zero in padded rows), on the orthogonal complement of ``deflate``
    (orthonormal ``(G, n_max, d)`` or ``None``), to residual norms ``<= tolerance`` ``(G,)``.
    ``settle = (loose, extra)``: stop ``extra`` iterations after every problem reached the
    ``loose`` tolerance even if ``tolerance`` (tighter) is not reached everywhere.
    """
    G, _, m = x0.shape
    none = torch.zeros(G, dtype=torch.bool)
    x, full = svqb(_project(x0, [deflate]))
    x, full2 = svqb(_project(x, [deflate]))
    if not bool((full & full2).all()):
        raise InputError("k", "leaves too few vectors: the start block is rank deficient")
    ax = batch.apply(x, none)
    h = x.mH @ ax
    batch.check_finite(h)
    theta, c = dense_eigh(h)
    x, ax = x @ c, ax @ c
    theta = theta[..., :m]
    p: torch.Tensor | None = None
    done = none.clone()
    residuals = torch.zeros(G, k, dtype=torch.float64)
    iterations = 0
    settled = 0
    checked = False
    while True:
        r = ax - x * theta.to(x.dtype).unsqueeze(-2)
        norms = r.norm(dim=-2).double().cpu()
        residuals = torch.where(done.unsqueeze(-1), residuals, norms[:, :k])
        ok = norms[:, :k] <= tolerance.unsqueeze(-1)
        candidates = ok.all(-1) & ~done
        if bool(candidates.any()) and not checked:
            # the recurrences say converged: confirm on the true residual A X - X theta
            true_ax = batch.apply(x, ~candidates)
            ax = torch.where(candidates.to(x.device).view(G, 1, 1), true_ax, ax)
            checked = True
            continue
        checked = False
        done = done | candidates
        if bool(done.all()) or iterations >= maxiter:
            break
        if settle is not None:
            loose_ok = (norms[:, :k] <= settle[0].unsqueeze(-1)).all(-1) | done
            settled = settled + 1 if bool(loose_ok.all()) else 0
            if settled > settle[1]:
                break
        iterations += 1
        active = torch.ones(G, m, dtype=torch.bool)
        active[:, :k] = ~ok
        active[done] = False
        w = batch.precondition(r, active.to(r.device))
        basis = [deflate, x]
        q = w if p is None else torch.cat([p, w], dim=-1)
        q, _ = svqb(_project(q, basis))
        q, kept = svqb(_project(q, basis))
        # SVQB's kept directions are a suffix (ascending Gram eigenvalues): drop the rest
        width = int(kept.sum(-1).max())
        if width == 0:
            break  # no new direction anywhere: stagnated (reported as not converged)
        q, kept = q[..., q.shape[-1] - width :], kept[..., kept.shape[-1] - width :]
        aq = batch.apply(q, done)
        xaq = x.mH @ aq
        h = torch.cat(
            [torch.cat([x.mH @ ax, xaq], -1), torch.cat([xaq.mH, q.mH @ aq], -1)], -2
        )  # the Rayleigh-Ritz matrix [x, q]^H A [x, q], blockwise (no (n, 3m) copies)
        batch.check_finite(h)
        inactive = torch.cat([torch.zeros(G, m, dtype=torch.bool), ~kept.cpu()], -1)
        theta_all, c = dense_eigh(h, inactive.to(h.device))
        cx, cq = c[:, :m, :m], c[:, m:, :m]
        p_new = q @ cq
        if bool(done.any()):
            frozen = done.to(x.device).view(G, 1, 1)
            x = torch.where(frozen, x, x @ cx + p_new)
            ax = torch.where(frozen, ax, ax @ cx + aq @ cq)
            theta = torch.where(frozen.view(G, 1), theta, theta_all[..., :m])
        else:
            x, ax, theta = x @ cx + p_new, ax @ cx + aq @ cq, theta_all[..., :m]
        p = p_new * active.to(q.device).unsqueeze(-2).to(q.dtype)
    if not bool(done.all()):  # report the true residuals of what did not converge
        ax = batch.apply(x, done)
        norms = (ax - x * theta.to(x.dtype).unsqueeze(-2)).norm(dim=-2).double().cpu()
        residuals = torch.where(done.unsqueeze(-1), residuals, norms[:, :k])
    products = sum(op.calls[0] for op in batch.ops)
    return Result(theta, x, residuals, tolerance, iterations, products)
