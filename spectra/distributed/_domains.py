"""Domain entry points on Dask, duck-typed so this package imports no other domain.

- :func:`bands`: a model's ``bands(k)`` mapped over the blocks of a dask array of
  k-points (the model is pickled to the workers; the k-points never meet on one node).
- :func:`moments` / :func:`fit_pca`: per-dataset sufficient statistics (count, mean,
  scatter about the mean) reduced on the workers with a pairwise (Chan et al.) merge,
  then the PCA object's own finishing step fits from them. Only ``datasets x features^2``
  numbers travel to the client, never the samples.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.domain import InputError
from ._compat import require_dask

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _picklable(obj: Any, what: str) -> None:
    try:
        import cloudpickle

        cloudpickle.dumps(obj)
    except ImportError:  # pragma: no cover - distributed ships cloudpickle
        pickle.dumps(obj)
    except Exception as exc:
        raise TypeError(f"{what} must be picklable to be sent to Dask workers: {exc}") from exc


def _bands_block(k: Any, model: Any, kwargs: dict[str, Any], index: int | None) -> Any:
    out = model.bands(k, **kwargs)
    return out if index is None else out[index]


def bands(model: Any, k: Any, **kwargs: Any) -> Any:
    """Band energies over a dask array of k-points: ``model.bands`` mapped over k blocks.

    Parameters
    ----------
    model : any picklable object with a ``bands(k, **kwargs)`` method taking a NumPy array
        ``(..., d)`` of k-points and returning an array ``(..., *tail)`` (or a tuple of
        such arrays, e.g. energies and states). It is sent once to the workers.
    k : dask array ``(..., d)`` of k-points, chunked along the leading axes (the last axis
        is made one chunk). A NumPy array is wrapped with ``dask.array.from_array``.
    **kwargs : forwarded to ``model.bands``.

    Returns
    -------
    dask array ``(..., *tail)`` chunked like ``k`` (a tuple of them if ``model.bands``
    returns a tuple); each block is exactly ``model.bands`` of that block's k-points.

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> import spectra.distributed as sd
    >>> class Chain:  # one orbital, hopping 1: E(k) = 2 cos(2 pi k)
    ...     def bands(self, k):
    ...         return 2 * np.cos(2 * np.pi * k[..., :1])
    >>> kpts = da.linspace(0, 0.5, 5, chunks=2)[:, None]
    >>> sd.bands(Chain(), kpts).compute().ravel().round(3)
    array([ 2.   ,  1.414,  0.   , -1.414, -2.   ])
    """
    da = require_dask()
    from dask.array.utils import meta_from_array

    if not callable(getattr(model, "bands", None)):
        raise TypeError(f"model must have a bands(k) method, got {type(model).__name__}")
    if not isinstance(k, da.Array):
        k = np.asarray(k)
        k = da.from_array(k, chunks=("auto",) * (k.ndim - 1) + (-1,))
    if k.ndim < 1:
        raise InputError("k", "must have shape (..., d): k-points along the last axis")
    _picklable(model, "model")
    if len(k.chunks[-1]) > 1:
        k = k.rechunk({k.ndim - 1: -1})
    probe = model.bands(np.zeros((1,) * (k.ndim - 1) + (k.shape[-1],), dtype=k.dtype), **kwargs)
    outs = probe if isinstance(probe, (tuple, list)) else (probe,)
    lead = _LETTERS[: k.ndim - 1]
    k_index = lead + "z"
    results = []
    for i, sample in enumerate(outs):
        sample = np.asarray(sample) if not hasattr(sample, "ndim") else sample
        tail = tuple(sample.shape[k.ndim - 1 :])
        new = _LETTERS[k.ndim - 1 : k.ndim - 1 + len(tail)]
        results.append(
            da.blockwise(
                _bands_block,
                lead + new,
                k,
                k_index,
                model=model,
                kwargs=kwargs,
                index=i if isinstance(probe, (tuple, list)) else None,
                new_axes=dict(zip(new, tail, strict=True)),
                concatenate=True,
                meta=meta_from_array(sample, ndim=len(lead) + len(tail)),
                name=None,
                token="spectra-bands",
            )
        )
    return tuple(results) if isinstance(probe, (tuple, list)) else results[0]


# ---------------------------------------------------------------- PCA moments


def _accumulator(dtype: np.dtype) -> np.dtype:
    return (
        np.dtype(np.complex128)
        if np.issubdtype(dtype, np.complexfloating)
        else np.dtype(np.float64)
    )


def block_moments(x: Any) -> tuple[Any, Any, Any]:
    """``(count (d,), mean (d, f), scatter (d, f, f))`` of a ``(d, s, f)`` block.

    The scatter is ``sum (x - mean)^H (x - mean)`` over the ``s`` samples, accumulated in
    double precision (array methods only, so CuPy blocks work too).
    """
    x = x.astype(_accumulator(x.dtype), copy=False)
    count = np.full(x.shape[0], x.shape[1], dtype=np.int64)
    mean = x.sum(axis=1) / max(x.shape[1], 1)
    xc = x - mean[:, None, :]
    scatter = xc.swapaxes(-1, -2).conj() @ xc
    return count, mean, scatter


def _tree(parts: list[Any]) -> Any:
    import dask

    from ..core.domain import combine_moments  # the one Chan merge, on the workers' blocks

    merge = dask.delayed(combine_moments, pure=True)
    while len(parts) > 1:
        parts = [
            merge(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
            for i in range(0, len(parts), 2)
        ]
    return parts[0]


def _stats_arrays(stats: Any, d: int, f: int, dtype: np.dtype) -> tuple[Any, Any, Any]:
    da = require_dask()
    count = da.from_delayed(stats[0], (d,), dtype=np.int64)
    mean = da.from_delayed(stats[1], (d, f), dtype=dtype)
    scatter = da.from_delayed(stats[2], (d, f, f), dtype=dtype)
    return count, mean, scatter


def moments(x: Any) -> tuple[Any, Any, Any]:
    """Per-dataset sample count, mean and scatter matrix, reduced on the Dask workers.

    Parameters
    ----------
    x : dask array ``(datasets, samples, features)`` chunked along datasets and samples
        (features are made one chunk), or a sequence of ``(samples_i, features)`` dask or
        NumPy arrays, one per dataset (e.g. one per file, of different lengths).

    Returns
    -------
    ``(count, mean, scatter)`` lazy dask arrays of shapes ``(D,)``, ``(D, F)``,
    ``(D, F, F)`` in double precision; ``scatter = sum (x - mean)^H (x - mean)``, so the
    sample covariance is ``scatter / (count - 1)``.

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> import spectra.distributed as sd
    >>> x = da.from_array(np.arange(24.0).reshape(2, 4, 3), chunks=(1, 2, 3))
    >>> count, mean, scatter = sd.moments(x)
    >>> count.compute(), mean.compute()[1]
    (array([4, 4]), array([16.5, 17.5, 18.5]))
    """
    da = require_dask()
    import dask

    if isinstance(x, (list, tuple)):
        return _moments_list(x)
    if not isinstance(x, da.Array):
        x = da.from_array(np.asarray(x), chunks=("auto", "auto", -1))
    if x.ndim != 3:
        raise InputError(
            "x",
            f"must have shape (datasets, samples, features), got {x.shape}; "
            "pass a list of (samples, features) arrays for datasets of "
            "different lengths",
        )
    if len(x.chunks[-1]) > 1:
        x = x.rechunk({2: -1})
    acc = _accumulator(x.dtype)
    f = x.shape[-1]
    blocks = x.to_delayed()
    stat = dask.delayed(block_moments, pure=True)
    rows = []
    for i, d in enumerate(x.chunks[0]):
        merged = _tree([stat(blocks[i, j, 0]) for j in range(blocks.shape[1])])
        rows.append(_stats_arrays(merged, d, f, acc))
    return tuple(da.concatenate([r[m] for r in rows]) for m in range(3))  # type: ignore[return-value]


def _moments_list(xs: Sequence[Any]) -> tuple[Any, Any, Any]:
    da = require_dask()
    import dask

    if not xs:
        raise InputError("x", "is an empty list of datasets")
    arrays = [
        x if isinstance(x, da.Array) else da.from_array(np.asarray(x), chunks=("auto", -1))
        for x in xs
    ]
    features = {a.shape[-1] if a.ndim == 2 else None for a in arrays}
    if len(features) != 1 or None in features:
        shapes = [tuple(a.shape) for a in arrays]
        raise InputError(
            "x",
            f"every dataset must be (samples, features) with the same number of "
            f"features, got shapes {shapes}",
        )
    f = int(features.pop())  # type: ignore[arg-type]
    acc = np.result_type(*[_accumulator(a.dtype) for a in arrays])
    stat = dask.delayed(block_moments, pure=True)
    rows = []
    for a in arrays:
        a = a.rechunk({1: -1}) if len(a.chunks[1]) > 1 else a
        parts = [stat(blk[None]) for blk in a.to_delayed()[:, 0]]
        rows.append(_stats_arrays(_tree(parts), 1, f, acc))
    return tuple(da.concatenate([r[m] for r in rows]) for m in range(3))  # type: ignore[return-value]


def fit_pca(pca: Any, x: Any, *, finish: str = "fit_from_moments") -> Any:
    """Fit a PCA object from data on Dask: moments on the workers, the fit on the client.

    Parameters
    ----------
    pca : a PCA estimator exposing a method that fits from per-dataset moments, called
        as ``method(count, mean, scatter)`` with NumPy arrays ``(D,)``, ``(D, F)``,
        ``(D, F, F)`` (see :func:`moments`; single precision data gets single precision
        moments). ``spectra.pca.BatchPCA`` has it: ``fit_from_moments``.
    x : as in :func:`moments`.
    finish : name of that method (default ``fit_from_moments``, as ``BatchPCA`` has).

    Returns
    -------
    What the finishing method returns (the fitted estimator, for ``BatchPCA``).

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> import spectra.distributed as sd
    >>> class Totals:  # a stand-in estimator that keeps the moments
    ...     def fit_from_moments(self, count, mean, scatter):
    ...         self.n_samples_ = count
    ...         return self
    >>> x = da.zeros((3, 10, 2), chunks=(2, 4, 2))
    >>> sd.fit_pca(Totals(), x).n_samples_
    array([10, 10, 10])
    """
    import dask

    method = getattr(pca, finish, None)
    if not callable(method):
        raise TypeError(
            f"{type(pca).__name__} has no method {finish!r} to fit from moments "
            "(called as method(count, mean, scatter))"
        )
    count, mean, scatter = dask.compute(*moments(x))
    dtype = _data_dtype(x)
    if dtype in (np.float32, np.complex64):  # accumulated in double; same dtype out
        mean, scatter = mean.astype(dtype), scatter.astype(dtype)
    return method(count, mean, scatter)


def _data_dtype(x: Any) -> np.dtype:
    if isinstance(x, (list, tuple)):
        return np.result_type(
            *[np.asarray(a).dtype if not hasattr(a, "dtype") else a.dtype for a in x]
        )
    return np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype
