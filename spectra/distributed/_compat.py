"""Lazy access to Dask, with an ImportError that names the extra to install."""

from __future__ import annotations

from typing import Any

EXTRA = "pip install torch-spectra[distributed]"


def require_dask() -> Any:
    """Return ``dask.array``, or raise ``ImportError`` naming the ``distributed`` extra."""
    try:
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - dask is a test dependency
        raise ImportError(
            f"spectra.distributed needs dask[array] and distributed: {EXTRA}"
        ) from exc
    return da


def require_distributed() -> Any:
    """Return the ``distributed`` module, or raise ``ImportError`` naming the extra."""
    try:
        import distributed
    except ImportError as exc:  # pragma: no cover
        raise ImportError(f"spectra.distributed needs dask.distributed: {EXTRA}") from exc
    return distributed


def is_cupy(x: Any) -> bool:
    """Whether ``x`` is a CuPy array (checked by module name: CuPy need not be installed)."""
    return type(x).__module__.split(".")[0] == "cupy"
