"""A batched parallel cyclic Jacobi eigensolver written in plain torch ops.

Why: torch < 2.12 batches CUDA ``eigh`` only for ``n <= 32`` and loops ``syevd`` per matrix
above (a ~100x cliff at ``n = 33``). This solver keeps any batch batched on any device.

How: every step rotates ``m / 2`` disjoint ``(p, q)`` pairs of every matrix at once, chosen by
a round-robin (tournament) schedule so that one sweep of ``m - 1`` steps meets every pair
exactly once (``m`` is ``n`` rounded up to even; an odd ``n`` gets a zero dummy row/column,
which no rotation ever touches). The matrices are kept in a *pair-adjacent* basis: in each
step the pairs are ``(2i, 2i + 1)``, so a step is

1. the rotation of each pair from its 2x2 block (Rutishauser's stable formulas, a phase
   first making ``a_pq`` real for complex Hermitian input),
2. ``J^H A J``: the pairs of rows, then the pairs of columns, each mixed by two broadcast
   elementwise kernels (no transposes), the rotated 2x2 blocks then set exactly,
3. one gather that moves the basis to the next step's pairing (the same permutation for
   every step, cached per ``(m, device)``; after a sweep the basis is the original one).

Eigenvectors accumulate as ``W = V^H`` so that they too rotate by rows (two kernels and one
gather per step). Convergence is checked once per sweep with one batched reduction
(``off(A) <= tol * ||A||_F`` per matrix); converged matrices leave the active batch. Entries
below ``eps^2 ||A||`` (``eps^2`` in ``W``) are flushed to zero once per sweep: quadratic
convergence would otherwise drive them into the subnormal range, 100x slower on CPUs. The
matrices that have not converged after ``max_sweeps`` sweeps are flagged
(:class:`JacobiResult.converged`); the registered strategy recomputes those few with
``torch.linalg.eigh``, so its output is always a full answer.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import torch

from .._pipeline._checks import hermitian_from_lower
from .._support._threads import fan_out, single_threaded_kernels
from ._torch_lapack import torch_eigh

DEFAULT_MAX_SWEEPS = 20


class JacobiResult(NamedTuple):
    """Output of :func:`jacobi_eigh`."""

    eigenvalues: torch.Tensor  # (B, n) ascending, real
    eigenvectors: torch.Tensor | None  # (B, n, n) columns, or None
    converged: torch.Tensor  # (B,) bool
    sweeps: int  # sweeps run on the slowest matrix


def round_robin(m: int) -> list[list[int]]:
    """The ``m - 1`` orderings of the pair-adjacent basis for an even ``m`` (circle method).

    Ordering ``r`` lists the labels in step ``r``'s basis; its pairs are positions
    ``(2i, 2i + 1)``. Labels are chosen so that ordering 0 is the identity, and ordering
    ``r + 1`` is ordering ``r`` permuted by the same position permutation for every ``r``
    (``round_robin(m)[1]``), cyclically.
    """
    if m < 2 or m % 2:
        raise ValueError(f"round_robin needs an even m >= 2, got {m}")
    players = list(range(m))
    orders = []
    for _ in range(m - 1):
        orders.append([x for i in range(m // 2) for x in (players[i], players[m - 1 - i])])
        players = [players[0], players[-1], *players[1:-1]]
    relabel = {label: pos for pos, label in enumerate(orders[0])}
    return [[relabel[x] for x in order] for order in orders]


@functools.lru_cache(maxsize=64)
def _schedule(m: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """``(perm, flat)``: the step-to-step basis permutation of rows, and of whole matrices."""
    orders = round_robin(m)
    perm = torch.tensor(orders[1 % len(orders)], dtype=torch.long)
    flat = (perm[:, None] * m + perm[None, :]).reshape(-1)
    return perm.to(device), flat.to(device)


@functools.lru_cache(maxsize=64)
def _off_mask(m: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    return 1 - torch.eye(m, dtype=dtype, device=device)


def _rotations(a: torch.Tensor, skip: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The rotations of the pairs ``(2i, 2i + 1)`` of each matrix of ``a`` (``(B, m, m)``).

    Returns ``gh`` (``(B, m/2, 2, 2)``, the blocks of ``J^H``) and the rotated 2x2 blocks
    (``(B, 2, 2, m/2)``). Pairs with ``|a_pq| <= skip`` (``(B, 1)``, a roundoff
    level) are left alone: rotating noise inside a cluster of equal eigenvalues by large
    angles would mix the couplings to the rest of the spectrum and turn the final
    quadratic convergence into a slow linear one.

    With ``d = a_qq - a_pp`` and ``tau = 2 a_pq sgn(d) / (|d| + hypot(d, 2|a_pq|))``
    (the smaller root, ``|tau| <= 1``; no division by ``a_pq``; either sign at ``d = 0``),
    ``c = 1/sqrt(1 + |tau|^2)``, ``J = [[c, c tau], [-c conj(tau), c]]`` and
    ``app' = app - r |a_pq|^2``, ``aqq' = aqq + r |a_pq|^2`` where ``tau = r a_pq``.
    """
    diag = torch.diagonal(a, dim1=-2, dim2=-1)
    app, aqq = diag[:, 0::2].real, diag[:, 1::2].real
    apq = torch.diagonal(a, offset=1, dim1=-2, dim2=-1)[:, 0::2]
    mag = apq.abs()
    d = aqq - app
    den = d.abs() + torch.hypot(d, 2 * mag)  # > 0 wherever mag > skip >= 0
    rotate = mag > skip
    ratio = torch.where(rotate, torch.copysign(2 / den, d), 0)
    rm = ratio * mag  # the tangent of the angle, |rm| <= 1
    c = torch.rsqrt(1 + rm * rm)
    sigma = (c * ratio) * apq
    shift = rm * mag
    gh = torch.stack((c, -sigma, sigma.conj(), c), dim=-1).view(*apq.shape, 2, 2)
    kept = torch.where(rotate, 0, apq)
    block = torch.stack((app - shift, kept, kept.conj(), aqq + shift), dim=1)
    return gh, block.view(apq.shape[0], 2, 2, apq.shape[1])


def _step(
    a: torch.Tensor,
    w: torch.Tensor | None,
    skip: torch.Tensor,
    flat: torch.Tensor,
    perm: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One parallel step: rotate every pair of every matrix, move to the next pairing."""
    b, m = a.shape[0], a.shape[-1]
    k = m // 2
    gh, block = _rotations(a, skip)
    a2 = _rotate_columns(_rotate_rows(gh, a.view(b, k, 2, m)).view(b, m, k, 2), gh.conj())
    # the rotated 2x2 blocks, set exactly (Rutishauser): a2[2i + x, 2i + y] = block[x, y, i]
    torch.diagonal(a2.view(b, k, 2, k, 2), dim1=1, dim2=3).copy_(block)
    a = a2.view(b, m * m).index_select(1, flat).view(b, m, m)
    if w is not None:
        w = _rotate_rows(gh, w.view(b, k, 2, m)).view(b, m, m).index_select(1, perm)
    return a, w


def _rotate_rows(gh: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``J^H X`` for rows in pairs: ``gh (B, k, 2, 2)`` times ``x (B, k, 2, m)``.

    Two broadcast elementwise kernels (as fast as a batched matmul of 2x2 blocks on the
    GPU, and 2x faster on the CPU).
    """
    g = gh.unsqueeze(-1)
    return torch.addcmul(g[:, :, :, 0] * x[:, :, None, 0], g[:, :, :, 1], x[:, :, None, 1])


def _rotate_columns(x: torch.Tensor, ghc: torch.Tensor) -> torch.Tensor:
    """``X J`` for columns in pairs: ``x (B, m, k, 2)``, ``ghc = conj(gh) (B, k, 2, 2)``.

    ``(X J)[:, (j, y)] = sum_x X[:, (j, x)] conj(gh[j, y, x])``; no transpose needed.
    """
    g = ghc.unsqueeze(1)
    return torch.addcmul(x[..., 0:1] * g[..., 0], x[..., 1:2], g[..., 1])


def default_tol(n: int, dtype: torch.dtype) -> float:
    """Relative off-diagonal norm at which a matrix counts as diagonal: ``max(n, 4) eps``."""
    real = torch.empty((), dtype=dtype).real.dtype
    return max(n, 4) * torch.finfo(real).eps


def jacobi_eigh(
    a: torch.Tensor,
    vectors: bool = True,
    *,
    tol: float | None = None,
    max_sweeps: int = DEFAULT_MAX_SWEEPS,
) -> JacobiResult:
    """Eigenpairs of a ``(B, n, n)`` Hermitian batch by parallel cyclic Jacobi.

    Parameters
    ----------
    a : ``(B, n, n)`` real symmetric or complex Hermitian tensor (float32/64, complex64/128)
        on any device; only its lower triangle is read (as LAPACK's ``uplo='L'``).
    vectors : also compute eigenvectors.
    tol : stop a matrix once ``||offdiag(A)||_F <= tol * ||A||_F``
        (default :func:`default_tol`).
    max_sweeps : at most this many sweeps; matrices not converged by then are flagged in
        ``converged`` (their results are the last iterate).

    Returns
    -------
    JacobiResult
        ``(eigenvalues (B, n) ascending, eigenvectors (B, n, n) or None, converged (B,),
        sweeps)``.

    Examples
    --------
    >>> import torch
    >>> a = torch.tensor([[[2.0, 1.0], [1.0, 2.0]]], dtype=torch.float64)
    >>> res = jacobi_eigh(a)
    >>> res.eigenvalues
    tensor([[1., 3.]], dtype=torch.float64)
    >>> bool(res.converged.all())
    True
    """
    if a.ndim != 3 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"jacobi_eigh expects a (B, n, n) batch, got shape {tuple(a.shape)}")
    if not (a.is_floating_point() or a.is_complex()):
        raise TypeError(f"jacobi_eigh expects a floating or complex tensor, got {a.dtype}")
    with torch.no_grad():
        return _jacobi(
            a.detach(),
            vectors,
            default_tol(a.shape[-1], a.dtype) if tol is None else float(tol),
            int(max_sweeps),
        )


def _jacobi(a: torch.Tensor, vectors: bool, tol: float, max_sweeps: int) -> JacobiResult:
    bsz, n = a.shape[0], a.shape[-1]
    real = a.dtype.to_real()
    dev = a.device
    if bsz == 0 or n == 0:
        return JacobiResult(
            torch.zeros((bsz, n), dtype=real, device=dev),
            torch.zeros_like(a) if vectors else None,
            torch.ones(bsz, dtype=torch.bool, device=dev),
            0,
        )
    m = n + n % 2
    # Hermitian part, padded with zero dummy rows/columns, scaled by a power of two (exact)
    # so that |entries| < 1 and no norm over- or underflows.
    h = hermitian_from_lower(a)  # the lower triangle, as every other strategy reads
    if m != n:
        h = torch.nn.functional.pad(h, (0, m - n, 0, m - n))
    peak = h.abs().flatten(1).amax(-1)
    _, exponent = torch.frexp(torch.where(peak > 0, peak, torch.ones_like(peak)))
    # 2^exponent as two finite factors (2^1024 itself overflows float64)
    one = torch.ones_like(peak)
    scale = (torch.ldexp(one, exponent // 2), torch.ldexp(one, exponent - exponent // 2))
    h = h / scale[0].to(h.dtype)[:, None, None] / scale[1].to(h.dtype)[:, None, None]
    norm = torch.linalg.matrix_norm(h)
    eps = torch.finfo(real).eps
    mask = _off_mask(m, h.dtype, dev)
    perm, flat = _schedule(m, dev)

    diag_out = torch.empty((bsz, m), dtype=real, device=dev)
    w_out = torch.empty((bsz, m, m), dtype=a.dtype, device=dev) if vectors else None
    converged = torch.zeros(bsz, dtype=torch.bool, device=dev)
    active = torch.arange(bsz, device=dev)
    w = torch.eye(m, dtype=a.dtype, device=dev).expand(bsz, m, m).contiguous() if vectors else None
    sweeps = 0
    while True:
        done = torch.linalg.matrix_norm(h * mask) <= tol * norm
        finish = torch.ones_like(done) if sweeps == max_sweeps else done
        n_finish = int(finish.sum())
        if n_finish:
            out = active[finish]
            diag_out[out] = torch.diagonal(h[finish], dim1=-2, dim2=-1).real
            if w_out is not None and w is not None:
                w_out[out] = w[finish]
            converged[active[done]] = True
            if n_finish == active.numel():
                break
            rest = ~finish
            active, h, norm = active[rest], h[rest], norm[rest]
            w = w[rest] if w is not None else None
        skip = (eps * norm)[:, None]
        if sweeps:
            h = torch.where(h.abs() < (skip * eps)[:, :, None], 0, h)
            w = torch.where(w.abs() < eps * eps, 0, w) if w is not None else None
        for _ in range(m - 1):
            h, w = _step(h, w, skip, flat, perm)
        sweeps += 1

    eig = diag_out[:, :n] * scale[0][:, None] * scale[1][:, None]
    eig, order = torch.sort(eig, dim=-1)
    vecs = None
    if w_out is not None:
        vecs = w_out.mH[:, :n, :n]
        vecs = vecs.gather(-1, order[:, None, :].expand(bsz, n, n))
    return JacobiResult(eig, vecs, converged, sweeps)


def solve(
    a: torch.Tensor, vectors: bool, workers: int = 1, *, max_sweeps: int | None = None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The ``"jacobi"`` strategy: :func:`jacobi_eigh`, the matrices it flags as not converged
    recomputed by ``torch.linalg.eigh``.

    On the CPU the batch is split across ``workers`` threads with one intra-op thread each
    (thousands of small kernels per sweep: intra-op threads only add synchronization, 5-8x
    slower on a loaded machine); on CUDA the whole batch is one call.
    """
    sweeps = DEFAULT_MAX_SWEEPS if max_sweeps is None else max_sweeps
    if a.device.type != "cpu" or a.shape[0] == 0:
        return _solve_checked(a, vectors, sweeps)
    real = a.dtype.to_real()
    w = torch.empty(a.shape[:-1], dtype=real)
    v = torch.empty_like(a) if vectors else None

    def part(start: int, stop: int) -> None:
        wi, vi = _solve_checked(a[start:stop], vectors, sweeps)
        w[start:stop] = wi
        if v is not None and vi is not None:
            v[start:stop] = vi

    if workers > 1:
        fan_out(part, a.shape[0], workers)
    else:
        with single_threaded_kernels():
            part(0, a.shape[0])
    return w, v


def _solve_checked(
    a: torch.Tensor, vectors: bool, sweeps: int
) -> tuple[torch.Tensor, torch.Tensor | None]:
    w, v, converged, _ = jacobi_eigh(a, vectors, max_sweeps=sweeps)
    if not bool(converged.all()):
        idx = torch.nonzero(~converged).flatten()
        wi, vi = torch_eigh(a[idx], v is not None)
        if v is not None and vi is not None:
            v[idx] = vi
        w[idx] = wi
    return w, v
