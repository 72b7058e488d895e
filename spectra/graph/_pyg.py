"""Lazy access to torch_geometric (the ``graph`` extra)."""

from __future__ import annotations

from types import ModuleType

INSTALL_HINT = "pip install torch-spectra[graph]"


def require_pyg() -> ModuleType:
    """Import and return ``torch_geometric``, or fail naming the extra to install."""
    try:
        import torch_geometric
    except ImportError as err:  # pragma: no cover - exercised only without PyG
        raise ImportError(
            f"this part of spectra.graph needs torch-geometric: {INSTALL_HINT}"
        ) from err
    return torch_geometric
