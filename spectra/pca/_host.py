"""Where a fit's bookkeeping runs: on NumPy views of CPU tensors, in torch elsewhere.

After the eigendecomposition a fit is a few dozen elementwise steps on ``(B, R)``
numbers: sklearn's attributes, the number of components, the noise variance, the sign
convention, the conditioning test. On tiny CPU tensors each torch call costs 2.5-8 us of
dispatch, the same step in NumPy 0.7-2.5 us; with one dataset per fit those steps were
most of the fit (``benchmarks/RESULTS.md``, "one dataset per ``BatchPCA.fit``"). So on the
CPU they run on zero-copy NumPy views of the tensors (:func:`host`), on other devices in
torch, and :mod:`spectra.pca._solve` writes each step once, for both: in the operations
the two share (arithmetic, comparisons, ``where``, ``sum``, ``clip``, ``.mT``, ...) and the
few below where their spellings differ. The eigendecompositions and the products with the
data stay in torch.

>>> import torch
>>> lam = host(torch.tensor([[3.0, 1.0]]))
>>> type(lam).__name__, flip_last(lam).tolist()
('ndarray', [[1.0, 3.0]])
>>> as_torch(lam)
tensor([[3., 1.]])
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import torch

#: a torch tensor or a NumPy array (the bookkeeping's operands: one kind per fit)
Array = Any


def host(t: torch.Tensor) -> Array:
    """A CPU tensor without history as a NumPy view (no copy); any other as it is."""
    if t.device.type == "cpu" and not t.requires_grad:
        return t.numpy()
    return t


def as_torch(x: Array) -> torch.Tensor:
    """``x`` as a torch tensor: a NumPy array is wrapped without a copy (copied first where
    it is a reversed view, which torch cannot wrap)."""
    if not isinstance(x, np.ndarray):
        return x
    try:
        return torch.from_numpy(x)
    except ValueError:  # negative strides (numpy calls a reversed axis of length 1 contiguous)
        return torch.from_numpy(x.copy())


def like(t: Array, ref: Array) -> Array:
    """``t`` in ``ref``'s kind: a CPU tensor becomes a NumPy view where ``ref`` is NumPy."""
    return t.numpy() if isinstance(ref, np.ndarray) and isinstance(t, torch.Tensor) else t


def lib(x: Array) -> ModuleType:
    """The module whose functions take ``x``: ``numpy`` or ``torch``."""
    return np if isinstance(x, np.ndarray) else torch


def eps(x: Array) -> float:
    """The unit round-off of ``x``'s dtype."""
    got = _EPS.get(x.dtype)
    if got is None:
        got = _EPS[x.dtype] = float(lib(x).finfo(x.dtype).eps)
    return got


_EPS: dict[Any, float] = {}


def row_max(x: Array) -> Array:
    """The largest entry along the last axis (NaN propagates)."""
    return x.max(-1) if isinstance(x, np.ndarray) else x.amax(-1)


def row_min(x: Array) -> Array:
    """The smallest entry along the last axis (NaN propagates)."""
    return x.min(-1) if isinstance(x, np.ndarray) else x.amin(-1)


def at_least(x: Array, low: float) -> Array:
    """``max(x, low)`` elementwise (NaN stays NaN; ``x``'s dtype)."""
    return np.maximum(x, low) if isinstance(x, np.ndarray) else x.clamp(min=low)


def at_most(x: Array, high: float) -> Array:
    """``min(x, high)`` elementwise (NaN stays NaN; ``x``'s dtype)."""
    return np.minimum(x, high) if isinstance(x, np.ndarray) else x.clamp(max=high)


def astype(x: Array, ref: Array) -> Array:
    """``x`` in ``ref``'s dtype (no copy where it already is)."""
    if isinstance(x, np.ndarray):
        return x.astype(ref.dtype, copy=False)
    return x.to(ref.dtype)


def arange(n: int, ref: Array) -> Array:
    """``0, ..., n - 1`` (int64) beside ``ref``."""
    if isinstance(ref, np.ndarray):
        return np.arange(n, dtype=np.int64)
    return torch.arange(n, device=ref.device)


def flags(ref: Array, value: bool) -> Array:
    """A bool array of ``ref``'s shape filled with ``value``."""
    if isinstance(ref, np.ndarray):
        return np.full(ref.shape, value, dtype=bool)
    return torch.full(ref.shape, value, dtype=torch.bool, device=ref.device)


def copy(x: Array) -> Array:
    """A copy of ``x``."""
    return x.copy() if isinstance(x, np.ndarray) else x.clone()


def flip_last(x: Array) -> Array:
    """``x`` reversed along its last axis (a view in NumPy)."""
    return x[..., ::-1] if isinstance(x, np.ndarray) else x.flip(-1)


def take_last(x: Array, idx: Array) -> Array:
    """``x``'s entries at ``idx`` along the last axis (``idx`` has ``x``'s rank)."""
    if isinstance(x, np.ndarray):
        return np.take_along_axis(x, idx, -1)
    return x.gather(-1, idx)


def indices(mask: Array) -> list[int]:
    """The positions where the 1-D bool ``mask`` is True."""
    return [i for i, bad in enumerate(mask.tolist()) if bad]


def put_rows(x: Array, rows: list[int], values: Array) -> Array:
    """A copy of ``x`` with ``x[rows] = values``."""
    if isinstance(x, np.ndarray):
        out = x.copy()
        out[rows] = values
        return out
    return x.index_copy(0, torch.tensor(rows, device=x.device), values)
