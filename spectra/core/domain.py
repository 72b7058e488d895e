"""The core's surface for spectra's own domains (pca, tightbinding, graph, stiefel,
distributed) and command line: array in/out helpers, structured errors, the CPU fan-out.

Users call :mod:`spectra` / :mod:`spectra.core`; domains may additionally use the names
here, and nothing else of the core's private modules. Every domain imports the core the
same way::

    from ..core import eigh, eigvalsh          # the solver entry points
    from ..core.domain import as_tensor, restore, InputError

>>> import numpy as np
>>> from spectra.core.domain import as_tensor, restore
>>> t, origin = as_tensor(np.eye(2))
>>> type(restore(t * 2, origin)).__name__
'ndarray'
"""

from __future__ import annotations

from ._arrays import (
    Origin,
    as_tensor,
    default_tolerance,
    is_dask_collection,
    real_dtype,
    restore,
)
from ._errors import InputError, LinAlgError, format_indices
from ._threads import cpu_count, fan_out

__all__ = [
    "InputError",
    "LinAlgError",
    "Origin",
    "as_tensor",
    "cpu_count",
    "default_tolerance",
    "fan_out",
    "format_indices",
    "is_dask_collection",
    "real_dtype",
    "restore",
]
