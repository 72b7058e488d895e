"""``BatchPCA.transform`` of a Dask array: the projection mapped over the data's blocks."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.domain import InputError


def _project(
    block: np.ndarray, mean: np.ndarray, comps: np.ndarray, scale: np.ndarray | None
) -> np.ndarray:
    z = (block - mean[:, None, :]) @ comps.swapaxes(-1, -2)
    return z if scale is None else z / scale[:, None, :]


def transform_dask(model: Any, x: Any) -> Any:
    """Project a Dask array ``(B, M, D)`` (or ``(M, D)``) lazily, block by block.

    Each block of datasets ``[s:e]`` is projected on those datasets' components (as
    ``transform`` does in memory); the result is a Dask array chunked like ``x`` along the
    datasets and samples, with all ``K`` components in one chunk. A ``(M, D)`` array is
    projected on every dataset's components (``(B, M, K)``), or returns ``(M, K)`` for a
    model fitted on one dataset.
    """
    import dask.array as da

    fit = model._fitted()
    n_sets = fit.mean.shape[0]
    mean = fit.mean.detach().cpu().numpy()
    comps = fit.components.detach().cpu().numpy()
    scale = None
    if model.whiten:
        ev = fit.explained_variance.detach().cpu().numpy()
        scale = np.maximum(np.sqrt(ev), np.finfo(ev.dtype).eps)
    if x.ndim not in (2, 3) or x.shape[-1] != model.n_features_in_:
        raise InputError(
            "X",
            f"must be (B, M, {model.n_features_in_}) or (M, {model.n_features_in_}), "
            f"got shape {x.shape}",
        )
    squeeze = x.ndim == 2 and model._squeezes(x)
    if x.ndim == 2:
        x = da.broadcast_to(x[None], (n_sets, *x.shape), chunks=(1, x.chunks[0], x.chunks[1]))
    if x.shape[0] != n_sets:
        raise InputError("X", f"holds {x.shape[0]} datasets but the model was fitted on {n_sets}")
    x = x.rechunk({2: -1}).astype(np.result_type(x.dtype, mean.dtype))
    k = comps.shape[1]
    starts = np.concatenate([[0], np.cumsum(x.chunks[0])])

    def block(b: np.ndarray, block_info: Any = None) -> np.ndarray:
        i = block_info[0]["chunk-location"][0]
        s, e = int(starts[i]), int(starts[i + 1])
        return _project(b, mean[s:e], comps[s:e], None if scale is None else scale[s:e])

    out = x.map_blocks(
        block, chunks=(x.chunks[0], x.chunks[1], (k,)), dtype=mean.dtype, meta=np.empty((0, 0, 0))
    )
    return out[0] if squeeze else out
