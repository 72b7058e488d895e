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


def dilation_svd(
    m: torch.Tensor,
    eigh_kw: dict[str, Any],
    scale: torch.Tensor | None = None,
    eps: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Singular values (descending) and right singular vectors of square ``m`` ``(B, n, n)``.

    One batched eigh of the ``(B, 2n, 2n)`` dilations ``[[0, m], [m^T, 0]]``; the ``n``
    largest eigenpairs are ``(sigma_i, [u_i; v_i] / sqrt(2))``. Returns ``sigma`` ``(B, n)``
    (refined as ``||m v_i||``) and ``v`` ``(B, n, n)`` with unit columns, except for null
    directions (singular value at round-off, where a ``+-0`` pair mixes ``[u; 0]`` and
    ``[0; v]``): their value and column are 0, for callers to complete (see
    :func:`spectra.pca._solve.complete`). "At round-off" is ``20 n eps sigma_max``, or, with
    ``scale`` ``(B, n)`` (the norms of ``m``'s columns as the data had them: QR leaves
    them as they were), ``20 n eps ||scale * v_i||``: the uncertainty of ``sigma_i`` when
    each column carries errors relative to its own norm, as Householder QR's do. Then a
    small singular value of column-scaled data is kept however far below ``sigma_max``.
    ``eps`` (default: ``m``'s) is the unit round-off of the data behind ``m``.

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
    v = v / norm.clamp(min=torch.finfo(v.dtype).tiny)[:, None, :]
    null = (w <= 2 * round_off(w, v, scale, n, eps)) | (norm < 0.25)
    v = torch.where(null[:, None, :], 0.0, v)
    sigma = torch.linalg.vector_norm(m @ v, dim=-2)
    # the refined values may swap near-ties: keep them descending, with their vectors
    sigma, order = sigma.sort(dim=-1, descending=True, stable=True)
    return sigma, v.gather(-1, order[:, None, :].expand_as(v))


def round_off(
    sigma: torch.Tensor,
    v: torch.Tensor,
    scale: torch.Tensor | None,
    size: int,
    eps: float | None = None,
) -> torch.Tensor:
    """``10 size eps`` times the scale of each singular value's error ``(B, R)``:
    ``sigma_max`` (a norm-wise backward error), or ``||scale * v_i||`` for unit vectors
    ``v`` ``(B, n, R)`` when the errors are column-wise relative to ``scale`` ``(B, n)``.
    ``eps`` defaults to ``sigma``'s unit round-off."""
    eps = torch.finfo(sigma.dtype).eps if eps is None else eps
    if scale is None:
        return 10 * size * eps * sigma[:, :1].clamp(min=0).expand_as(sigma)
    return 10 * size * eps * torch.linalg.vector_norm(scale[:, :, None] * v, dim=-2)


def drop_small(
    sigma: torch.Tensor,
    n_features: int,
    v: torch.Tensor,
    scale: torch.Tensor | None = None,
    eps: float | None = None,
) -> torch.Tensor:
    """``sigma`` ``(B, R)`` descending, with round-off-level singular values set to 0.

    Below :func:`round_off` (``10 max(R, D) eps sigma_max``, or per direction
    ``10 max(R, D) eps ||scale * v_i||`` with column norms ``scale``) a singular value
    carries no information; zeroing it makes null directions exact.
    """
    if sigma.numel() == 0:
        return sigma
    floor = round_off(sigma, v, scale, max(sigma.shape[-1], n_features), eps)
    return torch.where(sigma > floor, sigma, torch.zeros_like(sigma))


def svd_spectrum(xc: torch.Tensor, eigh_kw: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """Squared singular values ``(B, R)`` (descending) and right singular vectors
    ``(B, D, R)`` of the centred data ``xc`` ``(B, N, D)``, ``R = min(N, D)``.

    ``N >= D``: ``X_c P = Q R`` (``P`` orders the columns by descending norm), and
    ``X_c``'s right singular vectors are ``P`` times ``R``'s. ``N < D``: ``X_c^T P = Q R``
    (the samples by descending norm), so ``P^T X_c = R^T Q^T`` and they are ``Q`` times
    ``R^T``'s. The pivot grades ``R`` (large entries first), which keeps each component of
    column-scaled data to a few ulps, as LAPACK's SVD does (unsorted: ~1e-13 on the
    breast-cancer columns); for ``N >= D`` a singular value is dropped as round-off against
    the column norms along its direction (:func:`round_off`), not against ``sigma_max``.

    float32 data is solved in float64 (its values are exact there) and the results rounded
    back: the dilation eigh resolves a pair of singular values to ``eps sigma_max / gap``,
    which float32's ``eps`` makes 1e-3 on column-scaled data (sklearn's float32 SVD: 5e-6).
    Round-off is still judged by the data's ``eps``.
    """
    dtype = xc.dtype
    eps = torch.finfo(dtype).eps
    if dtype == torch.float32:
        xc = xc.to(torch.float64)
    n, d = xc.shape[-2], xc.shape[-1]
    if n >= d:
        # columns by descending norm (QR with a static column pivot): R is graded with its
        # large entries first, which the dilation eigh resolves to a few ulps per component
        norms, order = torch.linalg.vector_norm(xc, dim=-2).sort(
            dim=-1, descending=True, stable=True
        )
        r = torch.linalg.qr(xc.gather(-1, order[:, None, :].expand_as(xc)), mode="r")[1]
        sigma, v = dilation_svd(r, eigh_kw, norms, eps)
        sigma = drop_small(sigma, d, v, norms, eps)
        vecs = torch.empty_like(v).scatter_(-2, order[:, :, None].expand_as(v), v)
    else:
        # X_c^T = Q R with its columns (the samples) by descending norm: a row permutation of
        # X_c leaves its right singular vectors as they are
        order = torch.linalg.vector_norm(xc, dim=-1).argsort(dim=-1, descending=True, stable=True)
        q, r = torch.linalg.qr(xc.gather(-2, order[:, :, None].expand_as(xc)).mT)
        sigma, v = dilation_svd(r.mT, eigh_kw, eps=eps)
        sigma = drop_small(sigma, d, v, eps=eps)
        vecs = q @ v
    return sigma.square().to(dtype), vecs.to(dtype)
