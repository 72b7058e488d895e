"""Randomized PCA (Halko, Martinsson & Tropp 2011), batched over datasets.

For ``k`` components of datasets with many features nothing ``D x D`` (or ``N x N``) is
formed: a Gaussian test matrix ``(D, l)``, ``l = k + n_oversamples``, is pushed through
the centred data ``A`` with ``n_iter`` power iterations (each ``A`` and ``A^T`` product
re-orthonormalized by QR), giving an orthonormal basis ``Q`` ``(N, l)`` of ``A``'s
dominant range. The small ``(l, D)`` matrix ``Q^T A`` is then decomposed SVD-accurately
through the core (QR, then the dilation eigh of the ``l x l`` factor), for all datasets in
one batched call. This is sklearn's ``PCA(svd_solver="randomized")`` (``randomized_svd``
with ``n_oversamples=10`` and ``n_iter`` 7, or 4 when ``k >= 0.1 min(N, D)``), with QR
normalization of the power iterations where sklearn uses LU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ..core.domain import InputError
from ._solve import (
    PCAFit,
    check_counts,
    check_stats,
    choose_k,
    complete,
    overflow,
    svd_flip_rows,
)
from ._svd import dilation_svd


def auto_iterations(k: int, n: int, d: int) -> int:
    """sklearn's ``iterated_power="auto"``: 7 power iterations, 4 when ``k >= 0.1 min(N, D)``."""
    return 7 if k < 0.1 * min(n, d) else 4


def seed_of(random_state: Any) -> int:
    """An integer seed: ``random_state`` itself, or fresh entropy for None (as sklearn's
    None, a different draw on every fit; no global random state is read or advanced)."""
    if random_state is None:
        return int(np.random.default_rng().integers(2**62))
    return int(random_state)


def _orth(y: torch.Tensor) -> torch.Tensor:
    return torch.linalg.qr(y)[0]


def randomized_spectrum(
    xc: torch.Tensor, k: int, n_oversamples: int, n_iter: int, seed: int, eigh_kw: dict[str, Any]
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``l`` leading squared singular values ``(B, l)`` (descending) and right singular
    vectors ``(B, D, l)`` of the centred data ``xc`` ``(B, N, D)``, ``l = min(k + p, N, D)``.

    The test matrix is drawn in float64 on the CPU from ``seed`` (one generator for the
    batch, dataset ``b`` gets block ``b``), so a fit does not depend on the device.

    Examples
    --------
    >>> import torch
    >>> from spectra.pca._randomized import randomized_spectrum
    >>> x = torch.randn(2, 60, 40, dtype=torch.float64)
    >>> lam, v = randomized_spectrum(x - x.mean(1, keepdim=True), 3, 10, 4, 0, {})
    >>> lam.shape, v.shape
    (torch.Size([2, 13]), torch.Size([2, 40, 13]))
    """
    b, n, d = xc.shape
    width = min(k + n_oversamples, n, d)
    gen = torch.Generator().manual_seed(seed)
    omega = torch.randn(b, d, width, generator=gen, dtype=torch.float64)
    omega = omega.to(device=xc.device, dtype=xc.dtype)
    q = _orth(xc @ omega)  # (B, N, l)
    for _ in range(n_iter):
        # A^T Q as (Q^T A)^T: a row-major product, much faster than through A.mT
        z = _orth((q.mT @ xc).mT)  # (B, D, l)
        q = _orth(xc @ z)
    small = q.mT @ xc  # (B, l, D) = R^T Q2^T with small^T = Q2 R
    q2, r = torch.linalg.qr(small.mT)
    sigma, v = dilation_svd(r.mT, eigh_kw)
    return sigma.square(), q2 @ v


def from_randomized(
    count: torch.Tensor,
    mean: torch.Tensor,
    xc: torch.Tensor,
    k: int,
    options: tuple[int, int, int],
    eigh_kw: dict[str, Any],
    on_bad: Callable[[list[int]], None] = overflow,
) -> PCAFit:
    """sklearn's randomized PCA of each dataset of centred ``xc`` ``(B, N, D)``.

    ``options`` is ``(n_oversamples, n_iter, seed)``. As sklearn: the total variance is
    the sum of squares of the centred data, and the noise variance is what the ``k``
    components leave of it, spread over the other ``min(N, D) - k`` directions.
    """
    d = xc.shape[-1]
    check_counts(count, None, d)
    rank = count.clamp(max=d)
    if k < 1:
        raise InputError(f"n_components={k}", "must be at least 1 with svd_solver='randomized'")
    choose_k(rank[:, None].to(xc.dtype), rank, k, rank[:, None], count)  # k <= rank
    total = xc.square().sum((-2, -1))
    check_stats(mean, total, on_bad)
    n_oversamples, n_iter, seed = options
    lam, vecs = randomized_spectrum(xc, k, n_oversamples, n_iter, seed, eigh_kw)
    lam = lam * (lam > 10 * max(lam.shape[-1], d) * torch.finfo(lam.dtype).eps ** 2 * lam[:, :1])
    dof = (count - 1).to(lam.dtype)
    ev = lam[:, :k] / dof[:, None]
    total_var = total / dof
    left = (rank - k).to(lam.dtype)
    noise = torch.where(left > 0, (total_var - ev.sum(-1)).clamp(min=0) / left.clamp(min=1), 0.0)
    return PCAFit(
        mean=mean,
        components=svd_flip_rows(complete(vecs[..., :k], lam[:, :k] > 0).mT),
        explained_variance=ev,
        explained_variance_ratio=ev / total_var[:, None],
        singular_values=lam[:, :k].sqrt(),
        noise_variance=noise,
        n_components=torch.full_like(count, k, dtype=torch.int64),
        n_samples=count.to(torch.int64),
        mask=torch.ones(ev.shape, dtype=torch.bool, device=ev.device),
    )
