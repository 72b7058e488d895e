"""Per-dataset sufficient statistics for PCA: counts, means and scatter matrices.

These are what a distributed fit needs: compute :func:`moments` on each chunk of samples,
merge the partial results with :func:`combine_moments`, then hand the totals to
:meth:`spectra.pca.BatchPCA.fit_from_moments`.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.domain import Moments, combine_moments, restore
from ._inputs import as_batch, check_finite, zero_padding


def centered(
    data: torch.Tensor,
    mask: torch.Tensor | None,
    counts: torch.Tensor,
    center: bool = True,
    padding_is_zero: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(mean (B, D), X - mean)`` with padded rows exactly 0 (two-pass, no NaN leaks).

    ``padding_is_zero`` skips the masking of the input (a ragged list padded by us).
    """
    x = data if padding_is_zero else zero_padding(data, mask)
    if not center:
        return torch.zeros_like(x[:, 0, :]), x
    denom = counts.clamp(min=1).to(x.dtype)[:, None]
    mean = x.sum(-2) / denom
    # x - w * mean with w the 0/1 mask keeps padded rows at 0 in one fused pass
    w = None if mask is None else mask.to(x.dtype).unsqueeze(-1)
    xc = x - mean[:, None, :] if w is None else torch.addcmul(x, w, mean[:, None, :], value=-1)
    # one refinement step (the mean of the residuals) recovers the digits a plain sum loses,
    # e.g. constant features come out exactly constant in float32
    fix = xc.sum(-2) / denom
    if w is None:
        xc.sub_(fix[:, None, :])
    else:
        xc.addcmul_(w, fix[:, None, :], value=-1)
    return mean + fix, xc


def scatter_of(xc: torch.Tensor) -> torch.Tensor:
    """``X_c^T X_c`` per dataset (symmetric up to round-off; eigh reads one triangle)."""
    return xc.mT @ xc


def moments(
    X: Any,
    *,
    lengths: Any = None,
    mask: Any = None,
    center: bool = True,
    dtype: torch.dtype | None = None,
) -> Moments:
    """Counts, means and centered scatter matrices of a batch of datasets, in one pass.

    Parameters
    ----------
    X : ``(B, N, D)`` array (torch or NumPy) or a list of ``(N_i, D)`` arrays.
    lengths, mask : the real samples of a padded ``(B, N, D)`` array (see ``BatchPCA.fit``).
    center : subtract the means (False: ``mean`` is 0 and ``scatter`` is ``X^T X``).
    dtype : accumulate in this dtype (e.g. ``torch.float64`` for float32 data).

    Returns
    -------
    Moments
        ``(count, mean, scatter)`` in the input's array kind.

    Examples
    --------
    >>> import numpy as np
    >>> from spectra.pca import moments
    >>> m = moments(np.array([[[0.0, 1.0], [2.0, 3.0]]]))
    >>> m.count, m.mean, m.scatter
    (array([2]), array([[1., 2.]]), array([[[2., 2.],
            [2., 2.]]]))
    """
    batch = as_batch(X, lengths=lengths, mask=mask)
    check_finite(batch)
    data = batch.data if dtype is None else batch.data.to(dtype)
    mean, xc = centered(data, batch.mask, batch.counts, center, batch.ragged)
    origin = batch.origin
    return Moments(
        restore(batch.counts, origin), restore(mean, origin), restore(scatter_of(xc), origin)
    )


__all__ = ["Moments", "combine_moments", "moments"]
