"""SVD-accurate PCA through the core's eigh: QR of the centred data, then the Hermitian
dilation of the small triangular factor.

The covariance (or Gram) route squares the condition number: an eigenvalue ``lambda_i`` of
``X_c^T X_c`` comes out with an absolute error of about ``eps lambda_max``, i.e. a relative
error of ``eps kappa`` with ``kappa = lambda_max / lambda_i``. The SVD works on ``X_c``
itself. Here the SVD is reached through the one batched eigh: the QR factor ``R`` of
``X_c`` (or of ``X_c^T`` when there are fewer samples than features) is small, and the
eigenvalues of its dilation ``[[0, M], [M^T, 0]]`` are ``+-sigma`` with eigenvectors
``[u; v] / sqrt(2)``. Each singular value is then refined as ``||M v||`` (a Rayleigh
quotient, accurate to the square of the vector's error), which keeps the small singular
values of column-scaled data to a few ulps, as LAPACK's SVD does.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core import eigh


def dilation_svd(m: torch.Tensor, eigh_kw: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """Singular values (descending) and right singular vectors of square ``m`` ``(B, n, n)``.

    One batched eigh of the ``(B, 2n, 2n)`` dilations ``[[0, m], [m^T, 0]]``; the ``n``
    largest eigenpairs are ``(sigma_i, [u_i; v_i] / sqrt(2))``. Returns ``sigma`` ``(B, n)``
    (refined as ``||m v_i||``) and ``v`` ``(B, n, n)`` with unit columns, except for null
    directions (singular value at round-off, where a ``+-0`` pair mixes ``[u; 0]`` and
    ``[0; v]``): their value and column are 0, for callers to complete (see
    :func:`spectra.pca._solve.complete`).

    Examples
    --------
    >>> import torch
    >>> from spectra.pca._svd import dilation_svd
    >>> m = torch.tensor([[[3.0, 0.0], [0.0, -2.0]]], dtype=torch.float64)
    >>> s, v = dilation_svd(m, {})
    >>> s
    tensor([[3., 2.]], dtype=torch.float64)
    """
    b, n = m.shape[0], m.shape[-1]
    h = m.new_zeros(b, 2 * n, 2 * n)
    h[:, :n, n:] = m
    h[:, n:, :n] = m.mT
    w, y = eigh(h, k=n, largest=True, **{"check": False, **eigh_kw})
    w, v = w.flip(-1), y.flip(-1)[:, n:, :]  # descending sigma
    # a +sigma pair mixes with its -sigma partner only along [u; +-v], which rescales the
    # v block without turning it; at sigma ~ 0 (a null direction of m) the block may be
    # ~0 and its direction noise: those columns are null (sigma 0, vector 0)
    norm = torch.linalg.vector_norm(v, dim=-2)
    floor = 20 * n * torch.finfo(w.dtype).eps * w[:, :1].clamp(min=0)
    null = (w <= floor) | (norm < 0.25)
    v = torch.where(
        null[:, None, :], 0.0, v / norm.clamp(min=torch.finfo(v.dtype).tiny)[:, None, :]
    )
    sigma = torch.linalg.vector_norm(m @ v, dim=-2)
    # the refined values may swap near-ties: keep them descending, with their vectors
    sigma, order = sigma.sort(dim=-1, descending=True, stable=True)
    return sigma, v.gather(-1, order[:, None, :].expand_as(v))


def drop_small(sigma: torch.Tensor, n_features: int) -> torch.Tensor:
    """``sigma`` ``(B, R)`` descending, with round-off-level singular values set to 0.

    Below ``10 max(R, D) eps sigma_max`` a singular value carries no information (the
    SVD's absolute error is ``~eps sigma_max``); zeroing it makes null directions exact.
    """
    if sigma.numel() == 0:
        return sigma
    eps = torch.finfo(sigma.dtype).eps
    floor = 10 * max(sigma.shape[-1], n_features) * eps * sigma[:, :1]
    return torch.where(sigma > floor, sigma, torch.zeros_like(sigma))


def svd_spectrum(xc: torch.Tensor, eigh_kw: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """Squared singular values ``(B, R)`` (descending) and right singular vectors
    ``(B, D, R)`` of the centred data ``xc`` ``(B, N, D)``, ``R = min(N, D)``.

    ``N >= D``: ``X_c = Q R``, and ``X_c``'s right singular vectors are ``R``'s.
    ``N < D``: ``X_c^T = Q R``, so ``X_c = R^T Q^T`` and they are ``Q`` times ``R^T``'s.
    """
    n, d = xc.shape[-2], xc.shape[-1]
    if n >= d:
        r = torch.linalg.qr(xc, mode="r")[1]
        sigma, vecs = dilation_svd(r, eigh_kw)
    else:
        q, r = torch.linalg.qr(xc.mT)
        sigma, v = dilation_svd(r.mT, eigh_kw)
        vecs = q @ v
    sigma = drop_small(sigma, d)
    return sigma.square(), vecs
