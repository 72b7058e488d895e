"""Lazy collections (Dask arrays) without a dependency on the layer that handles them.

The core and the domains detect a Dask collection (:func:`is_dask_collection`, no Dask
import) but must not import :mod:`spectra.distributed`, the layer above them. That layer
registers its operations here when it is imported (``register_collection_op``), and the
package root installs a loader that imports it on first need (``set_collection_loader``),
so ``spectra.eigh(dask_array)`` works without the caller importing anything.

>>> register_collection_op("demo.double", lambda x: 2 * x)
>>> collection_op("demo.double")(21)
42
>>> del _OPS["demo.double"]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_OPS: dict[str, Callable[..., Any]] = {}
_LOADERS: list[Callable[[], object]] = []


def register_collection_op(name: str, fn: Callable[..., Any]) -> None:
    """Make ``fn`` the handler of ``name`` (e.g. ``"eigh"``, ``"pca.fit"``)."""
    _OPS[name] = fn


def set_collection_loader(loader: Callable[[], object]) -> None:
    """Install ``loader`` (imports the handling layer, which then registers its ops)."""
    if loader not in _LOADERS:
        _LOADERS.append(loader)


def collection_op(name: str) -> Callable[..., Any]:
    """The registered handler of ``name``, loading the handling layer on first need."""
    if name not in _OPS:
        for load in _LOADERS:
            load()
    try:
        return _OPS[name]
    except KeyError:
        raise ImportError(
            f"{name} of a Dask collection needs spectra.distributed and its extra: "
            "pip install torch-spectra[distributed]"
        ) from None
