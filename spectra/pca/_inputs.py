"""Input handling for BatchPCA: dense ``(B, N, D)``, ragged lists, lengths and masks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..core.domain import InputError, Origin, as_tensor, is_ragged


@dataclass(frozen=True)
class Batch:
    """Datasets as one padded tensor.

    ``data`` is ``(B, N, D)``; ``mask`` is ``(B, N)`` bool (True = a real sample) or None
    when every dataset has all ``N`` rows; ``counts`` is ``(B,)`` int64 on ``data``'s device;
    ``ragged`` is True when the input was a list (results then come back as lists).
    """

    data: torch.Tensor
    mask: torch.Tensor | None
    counts: torch.Tensor
    origin: Origin
    ragged: bool


def _real(t: torch.Tensor, name: str) -> torch.Tensor:
    if t.is_complex():
        raise TypeError(f"{name}: PCA needs real data, got {t.dtype}")
    return t


def _ragged(xs: Sequence[Any], name: str, n_features: int | None) -> Batch:
    items = [as_tensor(x, f"{name}[{i}]") for i, x in enumerate(xs)]
    tensors = [_real(t, f"{name}[{i}]") for i, (t, _) in enumerate(items)]
    for i, t in enumerate(tensors):
        if t.ndim != 2:
            raise InputError(
                f"{name}[{i}]",
                "must be one (n_samples, n_features) array in a "
                f"ragged list, got shape {tuple(t.shape)}",
            )
    widths = [t.shape[1] for t in tensors]
    expected = widths[0] if n_features is None else n_features
    wrong = [i for i, w in enumerate(widths) if w != expected]
    if wrong:
        raise InputError(
            name,
            f"needs {expected} features in every dataset; these datasets have "
            f"{sorted({widths[i] for i in wrong})}",
            [(i,) for i in wrong],
        )
    devices = {t.device for t in tensors}
    if len(devices) > 1:
        raise InputError(name, f"has datasets on several devices: {sorted(map(str, devices))}")
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    lengths = [t.shape[0] for t in tensors]
    data = torch.nn.utils.rnn.pad_sequence([t.to(dtype) for t in tensors], batch_first=True)
    counts = torch.tensor(lengths, dtype=torch.int64, device=data.device)
    mask = None
    if min(lengths) != data.shape[1]:
        mask = torch.arange(data.shape[1], device=data.device) < counts[:, None]
    origin = Origin(items[0][1].kind, data.device, dtype)
    return Batch(data, mask, counts, origin, True)


def _mask_from(
    lengths: Any, mask: Any, shape: torch.Size, device: torch.device, name: str
) -> torch.Tensor | None:
    if lengths is not None and mask is not None:
        raise InputError("lengths/mask", "pass either lengths or mask, not both")
    b, n = shape[0], shape[1]
    if lengths is not None:
        ln, _ = (
            as_tensor(lengths, "lengths")
            if not isinstance(lengths, torch.Tensor)
            else (lengths, None)
        )
        if ln.is_floating_point() and bool((ln != ln.round()).any()):
            raise InputError("lengths", "must be integers")
        ln = ln.to(device=device, dtype=torch.int64)
        if ln.shape != (b,):
            raise InputError(
                "lengths",
                f"must have shape ({b},) (one per dataset of {name}), got {tuple(ln.shape)}",
            )
        bad = torch.nonzero((ln < 0) | (ln > n)).flatten().tolist()
        if bad:
            raise InputError(
                "lengths",
                f"must lie in [0, {n}] (the padded sample count of {name})",
                [(i,) for i in bad],
            )
        return torch.arange(n, device=device) < ln[:, None]
    if mask is not None:
        m = mask if isinstance(mask, torch.Tensor) else torch.as_tensor(mask)
        if m.dtype != torch.bool:
            raise TypeError(f"mask must be boolean (True = a real sample), got {m.dtype}")
        if m.shape != (b, n):
            raise InputError(
                "mask",
                f"must have shape ({b}, {n}) to match {name} {tuple(shape)}, got {tuple(m.shape)}",
            )
        return m.to(device)
    return None


def as_batch(
    x: Any,
    *,
    lengths: Any = None,
    mask: Any = None,
    name: str = "X",
    n_features: int | None = None,
    allow_2d: bool = False,
) -> Batch:
    """Parse one of the accepted data layouts into a :class:`Batch` (no finiteness check).

    ``allow_2d`` accepts a single ``(N, D)`` array as ``(1, N, D)`` with ``ragged`` False
    (used by ``transform``, which broadcasts it over every dataset).
    """
    if is_ragged(x):
        if lengths is not None or mask is not None:
            raise InputError(
                "lengths/mask",
                "apply to a padded (B, N, D) array, not to a ragged list (whose lengths are known)",
            )
        return _ragged(x, name, n_features)
    if isinstance(x, (list, tuple)) and len(x) == 0:
        raise InputError(name, "is an empty list: pass at least one dataset")
    t, origin = as_tensor(x, name)
    _real(t, name)
    if t.ndim == 2 and allow_2d:
        t = t.unsqueeze(0)
    elif t.ndim != 3:
        hint = " (for one dataset use X[None])" if t.ndim == 2 else ""
        raise InputError(
            name,
            "must have shape (n_datasets, n_samples, n_features) or be "
            f"a list of (n_samples, n_features) arrays, got shape {tuple(t.shape)}{hint}",
        )
    if n_features is not None and t.shape[-1] != n_features:
        raise InputError(
            name, f"has {t.shape[-1]} features, but the model was fitted with {n_features}"
        )
    m = _mask_from(lengths, mask, t.shape, t.device, name)
    if m is None:
        counts = torch.full((t.shape[0],), t.shape[1], dtype=torch.int64, device=t.device)
    else:
        counts = m.sum(-1)
    return Batch(t, m, counts, origin, False)


def check_finite(batch: Batch, name: str = "X") -> None:
    """Raise ``InputError`` naming the datasets with NaN/Inf among their real samples."""
    bad = ~torch.isfinite(batch.data).all(-1)
    if batch.mask is not None:
        bad = bad & batch.mask
    per_set = bad.any(-1)
    if bool(per_set.any()):
        idx = torch.nonzero(per_set).flatten().tolist()
        first = int(torch.nonzero(bad[idx[0]]).flatten()[0])
        raise InputError(
            name,
            f"contains NaN or Inf (first in dataset {idx[0]}, sample {first})",
            [(i,) for i in idx],
        )


def zero_padding(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """``x`` (B, N, ...) with the rows outside ``mask`` set to 0 (NaN padding included)."""
    if mask is None:
        return x
    return torch.where(mask.reshape(*mask.shape, *([1] * (x.ndim - 2))), x, 0)


def is_single(X: Any) -> bool:
    """One ``(N, D)`` dataset (array, tensor, Dask array or nested lists), not a batch."""
    if is_ragged(X):
        return False
    if isinstance(X, (list, tuple)):
        return len(X) > 0 and np.ndim(X) == 2
    return getattr(X, "ndim", None) == 2


def as_3d(X: Any) -> Any:
    return (np.asarray(X) if isinstance(X, (list, tuple)) else X)[None]
