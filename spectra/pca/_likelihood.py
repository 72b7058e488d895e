"""PCA's probabilistic model (Tipping & Bishop), batched: covariance, precision,
log-likelihood, and Minka's MLE of the dimension, with sklearn's formulas (evaluated in the
model covariance's eigenbasis, which keeps their accuracy on ill-conditioned data)."""

from __future__ import annotations

import math

import torch

from ..core.domain import InputError
from ._solve import PCAFit


def model_basis(fit: PCAFit, whiten: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The model covariance's eigendecomposition: ``basis`` ``(B, D, D)`` and ``model``
    ``(B, D)``, so that ``covariance = basis diag(model) basis^T``.

    The first ``n_components_`` columns are the components, with variances
    ``s (ev - sigma2)_+ + sigma2`` (``s = ev`` with ``whiten``, as sklearn scales the
    components by ``sqrt(ev)``, else 1); the others are an orthonormal complement (from a
    Householder QR of the components), with the noise variance ``sigma2``. Working in
    this basis avoids the cancellation of the inversion lemma (``I / sigma2`` minus a
    nearly equal term), which costs ``eps lambda_max / sigma2`` relative accuracy on data
    whose variances span many decades.
    """
    comps = fit.components
    b, kmax, d = comps.shape
    padded = comps.new_zeros(b, d, d)
    padded[..., :kmax] = comps.mT
    q = torch.linalg.qr(padded, mode="complete")[0]
    inside = torch.arange(d, device=comps.device) < fit.n_components[:, None]
    basis = torch.where(inside[:, None, :], padded, q)
    noise = fit.noise_variance[:, None]
    ev = comps.new_zeros(b, d)
    ev[:, :kmax] = fit.explained_variance
    scale = ev if whiten else torch.ones_like(ev)
    model = torch.where(inside, scale * (ev - noise).clamp(min=0) + noise, noise.expand(b, d))
    return basis, model


def covariance(fit: PCAFit, whiten: bool) -> torch.Tensor:
    """``C^T diag(max(ev - sigma2, 0)) C + sigma2 I`` per dataset ``(B, D, D)``."""
    basis, model = model_basis(fit, whiten)
    return (basis * model[:, None, :]) @ basis.mT


def _lemma_precision(fit: PCAFit, whiten: bool, idx: torch.Tensor) -> torch.Tensor:
    """Datasets ``idx`` whose model has a zero variance (no noise variance and a null
    direction): the inverse of the (singular) covariance, as sklearn, or ``InputError``."""
    inv, info = torch.linalg.inv_ex(covariance(fit, whiten)[idx])
    if bool((info != 0).any()):
        bad = idx[info != 0].tolist()
        raise InputError(
            "X",
            "gives a singular model covariance (no noise variance left: fewer samples "
            "than features with every component kept)",
            [(i,) for i in bad],
        )
    return inv


def precision(fit: PCAFit, whiten: bool) -> torch.Tensor:
    """The inverse of :func:`covariance`: ``basis diag(1 / model) basis^T``
    (:func:`model_basis`), also with zero noise variance (every component kept) while the
    model's variances are positive: sklearn then inverts the covariance, which costs
    ``eps kappa`` (``kappa = (ev_max / ev_min)^2`` with ``whiten``: 1e-5 relative on the
    breast-cancer columns). Datasets with a zero model variance invert the covariance as
    sklearn does; a singular one raises ``InputError``.
    """
    basis, model = model_basis(fit, whiten)
    safe = torch.where(model > 0, model, 1)
    prec = (basis / safe[:, None, :]) @ basis.mT
    exact = (model <= 0).any(-1)
    if bool(exact.any()):
        idx = torch.nonzero(exact).flatten()
        prec = prec.index_copy(0, idx, _lemma_precision(fit, whiten, idx))
    return prec


def log_likelihood(fit: PCAFit, whiten: bool, x: torch.Tensor) -> torch.Tensor:
    """Log-likelihood ``(B, M)`` of the samples ``x`` ``(B, M, D)`` (sklearn's formula,
    ``-(x^T P x + D log 2 pi - log det P) / 2``, evaluated in the model's eigenbasis:
    ``x^T P x = sum_j (x . b_j)^2 / model_j`` and ``log det P = -sum_j log model_j``).

    float32 is evaluated in float64 (and rounded back): a projection ``x . b_j`` on a
    direction of small variance cancels ``|x| / sqrt(model_j)`` times the unit round-off,
    1e-4 relative in float32 on the breast-cancer columns (sklearn's float32: worse)."""
    out_dtype = x.dtype
    if out_dtype == torch.float32:
        x = x.to(torch.float64)
        fit = fit.to(torch.float64)
    basis, model = model_basis(fit, whiten)
    basis, model = basis.to(x.dtype), model.to(x.dtype)
    xr = x - fit.mean.to(x.dtype)[:, None, :]
    d = x.shape[-1]
    safe = torch.where(model > 0, model, 1)
    quad = ((xr @ basis).square() / safe[:, None, :]).sum(-1)
    logdet = -torch.log(safe).sum(-1)
    exact = (model <= 0).any(-1)
    if bool(exact.any()):  # a null model direction: sklearn's x^T P x with inv(covariance)
        idx = torch.nonzero(exact).flatten()
        prec = _lemma_precision(fit, whiten, idx).to(x.dtype)
        sign, det = torch.linalg.slogdet(prec)
        det = torch.where(sign > 0, det, -torch.inf)  # sklearn's fast_logdet
        quad = quad.index_copy(0, idx, (xr[idx] * (xr[idx] @ prec)).sum(-1))
        logdet = logdet.index_copy(0, idx, det)
    ll = -0.5 * quad
    return (ll - 0.5 * (d * math.log(2.0 * math.pi) - logdet)[:, None]).to(out_dtype)


def infer_dimension(spectrum: torch.Tensor, n_samples: torch.Tensor) -> torch.Tensor:
    """Minka's MLE of the PCA dimension per dataset (sklearn's ``_infer_dimension``).

    ``spectrum`` ``(B, F)``: explained variances, descending; ``n_samples`` ``(B,)``.
    Returns ``(B,)`` int64 in ``[1, F - 1]`` (the argmax of the log-likelihood over ranks).
    T. P. Minka, "Automatic choice of dimensionality for PCA", NIPS 2000.
    """
    return assess_dimensions(spectrum, n_samples).argmax(-1)


def assess_dimensions(spectrum: torch.Tensor, n_samples: torch.Tensor) -> torch.Tensor:
    """Minka's log-likelihood of every rank ``(B, F)`` (sklearn's ``_assess_dimension`` for
    ranks ``1..F-1`` in columns ``1..F-1``; column 0 is ``-inf``; ranks whose eigenvalue is
    below 1e-15, as in sklearn, are ``-inf``)."""
    s = spectrum.to(torch.float64)
    b, f = s.shape
    n = n_samples.to(s)[:, None]
    eps = 1e-15
    ll = torch.full((b, f), -torch.inf, dtype=s.dtype, device=s.device)
    cols = torch.arange(f, device=s.device)
    upper = cols[:, None] < cols[None, :]  # pairs i < j
    lgam = torch.lgamma((f - cols[:-1].to(s) + 0.0) / 2.0)  # i = 1..F-1: (F - i + 1) / 2
    log_pi = math.log(math.pi)
    for rank in range(1, f):
        i = torch.arange(1, rank + 1, dtype=s.dtype)
        pu = -rank * math.log(2.0) + float((lgam[:rank] - log_pi * (f - i + 1) / 2.0).sum())
        pl = -torch.log(s[:, :rank]).sum(-1, keepdim=True) * n / 2.0
        v = (s[:, rank:].sum(-1, keepdim=True) / (f - rank)).clamp(min=eps)
        pv = -torch.log(v) * n * (f - rank) / 2.0
        m = f * rank - rank * (rank + 1.0) / 2.0
        pp = math.log(2.0 * math.pi) * (m + rank) / 2.0
        s_ = torch.where(cols < rank, s, v)
        pair = (s[:, :, None] - s[:, None, :]) * (1.0 / s_[:, None, :] - 1.0 / s_[:, :, None])
        keep = upper & (cols[:, None] < rank)
        logs = torch.where(
            keep, torch.log(torch.where(keep, pair, 1.0)) + torch.log(n)[..., None], 0
        )
        pa = logs.sum((-2, -1))[:, None]
        out = pu + pl + pv + pp - pa / 2.0 - rank * torch.log(n) / 2.0
        out = torch.where(s[:, rank - 1 : rank] < eps, -torch.inf, out)
        ll[:, rank] = out[:, 0]
    return ll
