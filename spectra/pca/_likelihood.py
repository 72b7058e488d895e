"""PCA's probabilistic model (Tipping & Bishop), batched: covariance, precision,
log-likelihood, and Minka's MLE of the dimension, with sklearn's formulas."""

from __future__ import annotations

import math

import torch

from ._inputs import format_list
from ._solve import PCAFit


def _scaled_components(fit: PCAFit, whiten: bool) -> torch.Tensor:
    comps = fit.components
    if whiten:  # sklearn scales the components by sqrt(ev) in the generative model
        comps = fit.explained_variance.sqrt()[..., None] * comps
    return comps


def covariance(fit: PCAFit, whiten: bool) -> torch.Tensor:
    """``C^T diag(max(ev - sigma2, 0)) C + sigma2 I`` per dataset ``(B, D, D)``."""
    noise = fit.noise_variance[:, None]
    ev = fit.explained_variance
    diff = torch.where(ev > noise, ev - noise, 0) * fit.mask
    comps = _scaled_components(fit, whiten)
    cov = (comps.mT * diff[:, None, :]) @ comps
    eye = torch.eye(cov.shape[-1], dtype=cov.dtype, device=cov.device)
    return cov + noise[..., None] * eye


def precision(fit: PCAFit, whiten: bool) -> torch.Tensor:
    """The inverse of :func:`covariance`, by the matrix inversion lemma (as sklearn).

    Datasets with zero noise variance (all components kept) invert the covariance
    directly, as sklearn does; a singular one raises ``ValueError``.
    """
    noise = fit.noise_variance
    ev = fit.explained_variance
    comps = _scaled_components(fit, whiten)
    d = comps.shape[-1]
    eye = torch.eye(d, dtype=comps.dtype, device=comps.device)
    safe = torch.where(noise > 0, noise, 1)
    diff = torch.where(ev > noise[:, None], ev - noise[:, None], 0)
    # padded (masked) components are zero rows: give them a unit diagonal so they drop out
    inner_diag = torch.where(fit.mask, 1 / diff, 1)
    inner = comps @ comps.mT / safe[:, None, None] + torch.diag_embed(inner_diag)
    prec = comps.mT @ torch.linalg.solve(inner, comps) if comps.shape[1] else 0 * eye
    prec = -prec / (safe**2)[:, None, None] + eye / safe[:, None, None]
    exact = noise == 0
    if bool(exact.any()):
        idx = torch.nonzero(exact).flatten()
        inv, info = torch.linalg.inv_ex(covariance(fit, whiten)[idx])
        if bool((info != 0).any()):
            bad = idx[info != 0].tolist()
            raise ValueError(
                f"the model covariance of datasets {format_list(bad)} is singular (no noise "
                "variance left: fewer samples than features with every component kept)"
            )
        prec = prec.index_copy(0, idx, inv)
    return prec


def log_likelihood(fit: PCAFit, whiten: bool, x: torch.Tensor) -> torch.Tensor:
    """Log-likelihood ``(B, M)`` of the samples ``x`` ``(B, M, D)`` (sklearn's formula)."""
    prec = precision(fit, whiten).to(x.dtype)
    xr = x - fit.mean.to(x.dtype)[:, None, :]
    d = x.shape[-1]
    sign, logdet = torch.linalg.slogdet(prec)
    logdet = torch.where(sign > 0, logdet, -torch.inf)  # sklearn's fast_logdet
    ll = -0.5 * (xr * (xr @ prec)).sum(-1)
    return ll - 0.5 * (d * math.log(2.0 * math.pi) - logdet)[:, None]


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
