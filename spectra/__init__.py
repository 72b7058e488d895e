"""spectra: many symmetric/Hermitian eigendecompositions at once, through one batched core.

>>> import torch, spectra
>>> a = torch.randn(1000, 16, 16, dtype=torch.float64); a = a + a.mT
>>> w, v = spectra.eigh(a)
>>> w.shape, v.shape
(torch.Size([1000, 16]), torch.Size([1000, 16, 16]))
"""

from .core import (
    BlockDiagonal,
    EighResult,
    InputError,
    LinAlgError,
    Options,
    Plan,
    Validation,
    eigh,
    eigvalsh,
    fix_gauge,
    matrix_function,
    plan,
    validate,
)
from .core import reference_eigh as reference
from .core.domain import set_collection_loader

__version__ = "0.1.0"


def _load_distributed() -> None:
    """Import the Dask layer, which registers its collection ops with the core (the root is
    the one place above every layer: the core and the domains never import it)."""
    import spectra.distributed  # noqa: F401


set_collection_loader(_load_distributed)

__all__ = [
    "BlockDiagonal",
    "EighResult",
    "InputError",
    "LinAlgError",
    "Options",
    "Plan",
    "Validation",
    "__version__",
    "eigh",
    "eigvalsh",
    "fix_gauge",
    "matrix_function",
    "plan",
    "reference",
    "validate",
]

#: Subpackages reachable as attributes after ``import spectra``, imported on first use.
_SUBPACKAGES = ("pca", "tightbinding", "graph", "stiefel", "distributed", "core")


def __getattr__(name: str) -> object:
    """Import ``spectra.pca`` etc. lazily on first attribute access (``spectra.pca.BatchPCA``)."""
    if name in _SUBPACKAGES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'spectra' has no attribute {name!r}")
