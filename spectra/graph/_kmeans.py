"""A small batched k-means (k-means++ seeding, Lloyd iterations) for many point sets at once.

Used to label spectral embeddings; it is not an eigensolver. Every point set, and every
restart, is one row of the batch, so the work is a few tensor ops per iteration.
"""

from __future__ import annotations

import torch

from ..core.domain import InputError


def _sample(weights: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One index per row drawn with probability proportional to ``weights`` (``(B, N)``)."""
    total = weights.sum(-1, keepdim=True)
    probs = torch.where(
        total > 0, weights / torch.where(total > 0, total, 1.0), torch.zeros_like(weights)
    )
    u = torch.rand(weights.shape[0], 1, generator=generator, dtype=weights.dtype)
    cdf = probs.cumsum(-1)
    idx = (cdf < u.to(cdf.device) * cdf[:, -1:]).sum(-1)
    return idx.clamp_max(weights.shape[-1] - 1)


def _plus_plus(
    x: torch.Tensor, valid: torch.Tensor, k: int, generator: torch.Generator
) -> torch.Tensor:
    """k-means++ seeds ``(B, k, d)``; rows with fewer valid points than ``k`` repeat points."""
    b, _, d = x.shape
    rows = torch.arange(b, device=x.device)
    weight = valid.to(x.dtype)
    first = _sample(weight, generator)
    centers = [x[rows, first]]
    closest = ((x - centers[0].unsqueeze(1)) ** 2).sum(-1)
    for _ in range(1, k):
        w = closest * weight
        w = torch.where(w.sum(-1, keepdim=True) > 0, w, weight)
        nxt = _sample(w, generator)
        centers.append(x[rows, nxt])
        closest = torch.minimum(closest, ((x - centers[-1].unsqueeze(1)) ** 2).sum(-1))
    return torch.stack(centers, 1) if k else x.new_zeros((b, 0, d))


def _sq_dist(x: torch.Tensor, centers: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
    """``(B, N, k)`` squared distances ``|x|^2 + |c|^2 - 2 x.c`` (``x2 = |x|^2``, ``(B, N, 1)``)."""
    c2 = (centers * centers).sum(-1).unsqueeze(-2)
    return torch.baddbmm(x2 + c2, x, centers.mT, alpha=-2.0).clamp_min_(0.0)


def _canonical(labels: torch.Tensor, valid: torch.Tensor, k: int) -> torch.Tensor:
    """Renumber clusters by first appearance along the nodes (node 0's cluster is 0)."""
    b, n = labels.shape
    pos = torch.arange(n, device=labels.device).expand(b, n)
    big = torch.full((b, k), n, dtype=torch.long, device=labels.device)
    first = big.scatter_reduce(1, labels, torch.where(valid, pos, n), reduce="amin")
    rank = first.argsort(-1).argsort(-1)
    out = rank.gather(1, labels)
    return torch.where(valid, out, torch.full_like(out, -1))


def batched_kmeans(
    x: torch.Tensor,
    k: int,
    valid: torch.Tensor | None = None,
    *,
    n_init: int = 10,
    max_iter: int = 300,
    tol: float = 1e-10,
    seed: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """k-means on each of ``B`` point sets ``x`` ``(B, N, d)``; ``valid`` masks padding.

    Returns ``(labels (B, N) long, inertia (B,))``; labels are numbered by first
    appearance (node 0 is in cluster 0), ``-1`` on padding. The best of ``n_init``
    k-means++ restarts is kept per set; results depend only on ``seed``.

    >>> import torch
    >>> pts = torch.tensor([[[0.0], [0.1], [5.0], [5.1]]], dtype=torch.float64)
    >>> batched_kmeans(pts, 2)[0]
    tensor([[0, 0, 1, 1]])
    """
    if x.ndim != 3:
        raise InputError("x", f"must be (B, N, d), got shape {tuple(x.shape)}")
    if k < 1 or n_init < 1:
        raise InputError("k", f"and n_init must be >= 1, got k={k}, n_init={n_init}")
    b, n, _ = x.shape
    if valid is None:
        valid = torch.ones((b, n), dtype=torch.bool, device=x.device)
    if b == 0 or n == 0:
        return (torch.full((b, n), -1, dtype=torch.long, device=x.device), x.new_zeros((b,)))
    generator = torch.Generator().manual_seed(seed)
    xr = x.repeat_interleave(n_init, 0)
    vr = valid.repeat_interleave(n_init, 0)
    vf = vr.to(x.dtype)
    centers = _plus_plus(xr.cpu(), vr.cpu(), k, generator).to(x.device)
    d = x.shape[-1]
    weighted = xr * vf.unsqueeze(-1)
    x2 = (xr * xr).sum(-1, keepdim=True)
    scale = (x2.squeeze(-1) * vf).sum(-1).clamp_min(1e-300)
    for _ in range(max_iter):
        labels = _sq_dist(xr, centers, x2).argmin(-1)
        counts = torch.zeros(xr.shape[0], k, dtype=x.dtype, device=x.device)
        counts.scatter_add_(1, labels, vf)
        sums = torch.zeros_like(centers).scatter_add_(
            1, labels.unsqueeze(-1).expand(-1, -1, d), weighted
        )
        new = torch.where(
            counts.unsqueeze(-1) > 0, sums / counts.clamp_min(1).unsqueeze(-1), centers
        )
        shift = ((new - centers) ** 2).sum((-2, -1))
        centers = new
        if bool((shift <= tol * scale).all()):
            break
    best_d, labels = _sq_dist(xr, centers, x2).min(-1)
    inertia = (best_d * vf).sum(-1).view(b, n_init)
    pick = inertia.argmin(-1)
    rows = torch.arange(b, device=x.device) * n_init + pick
    labels = labels[rows]
    return _canonical(labels, valid, k), inertia.gather(1, pick.unsqueeze(-1)).squeeze(-1)
