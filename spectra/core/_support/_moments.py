"""Sample moments of many datasets and their merge (Chan et al.): the one implementation
that :mod:`spectra.pca` (``fit_from_moments``) and :mod:`spectra.distributed` (the tree
reduction of Dask blocks) both use; it lives in the core, the layer below both."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch


class Moments(NamedTuple):
    """``(count, mean, scatter)``: ``(B,)``, ``(B, D)`` and ``(B, D, D)``.

    ``scatter`` is the centered sum of outer products ``sum_n (x_n - mean)(x_n - mean)^T``
    (the covariance times ``count - 1``).
    """

    count: Any
    mean: Any
    scatter: Any


def _as_float(n: Any, dtype: Any) -> Any:
    """Counts ``n`` cast to the floating ``dtype`` (torch tensors and NumPy/CuPy arrays)."""
    return n.to(dtype) if isinstance(n, torch.Tensor) else n.astype(dtype)


def _as_array(x: Any) -> Any:
    return x if hasattr(x, "shape") and hasattr(x, "dtype") else np.asarray(x)


def combine_moments(
    a: Moments | tuple[Any, Any, Any], b: Moments | tuple[Any, Any, Any]
) -> Moments:
    """Merge the moments of two disjoint sample sets of the same datasets (Chan et al.).

    ``count = n_a + n_b``, ``mean = m_a + (n_b / count) (m_b - m_a)`` and
    ``scatter = S_a + S_b + n_a n_b / count (m_b - m_a)^H (m_b - m_a)``, batched over
    datasets; a dataset with no samples on one side takes the other side's moments.
    This is spectra's one implementation of the merge (:mod:`spectra.distributed` reduces
    its blocks with it): arithmetic only, so torch tensors, NumPy and CuPy arrays (both
    sides of one kind) and complex data all work, and the result is of the inputs' kind.

    Examples
    --------
    >>> import numpy as np
    >>> from spectra.pca import combine_moments, moments
    >>> x = np.random.default_rng(0).normal(size=(3, 10, 4))
    >>> m = combine_moments(moments(x[:, :4]), moments(x[:, 4:]))
    >>> bool(np.allclose(m.scatter, moments(x).scatter))
    True
    """
    na, ma, sa = (_as_array(t) for t in a)
    nb, mb, sb = (_as_array(t) for t in b)
    real = ma.real.dtype
    n = na + nb
    safe = _as_float(n + (n == 0), real)
    fb = _as_float(nb, real) / safe
    delta = mb - ma
    mean = ma + delta * fb[:, None]
    weight = _as_float(na, real) * fb
    scatter = sa + sb + (delta.conj()[:, :, None] * delta[:, None, :]) * weight[:, None, None]
    return Moments(n, mean, scatter)
