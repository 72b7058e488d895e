"""The core's surface for spectra's own domains (pca, tightbinding, graph, stiefel,
distributed) and command line: array in/out helpers, structured errors, the CPU fan-out,
and the few execution internals the CLI shows.

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

from ._eigh import _caller_kernels as caller_kernel_threads
from ._errors import InputError, LinAlgError, format_indices
from ._options import Options, check_count
from ._pipeline._autograd import eigh_backward
from ._pipeline._checks import bad_indices, check_square
from ._pipeline._execute import execute, orthonormality_error
from ._pipeline._prepare import check_k, is_ragged
from ._request import EIGH_OPTION_NAMES, PROBLEM_KEYWORDS, Request
from ._sparse import is_sparse_input
from ._sparse._entries import entry_components, mirror_exact
from ._support._arrays import (
    Origin,
    as_tensor,
    default_tolerance,
    is_dask_collection,
    real_dtype,
    restore,
)
from ._support._collections import collection_op, register_collection_op, set_collection_loader
from ._support._memory import (
    available_memory,
    check_fits,
    chunks_within,
    format_bytes,
    matrix_bytes,
    memory_budget,
    rows_within,
)
from ._support._moments import Moments, combine_moments
from ._support._solver_names import EIGENSOLVER_CALLS, TORCH_EIGH
from ._support._threads import cpu_count, fan_out, pull, single_threaded_kernels
from ._support._versions import torch_version

__all__ = [
    "EIGENSOLVER_CALLS",
    "EIGH_OPTION_NAMES",
    "PROBLEM_KEYWORDS",
    "TORCH_EIGH",
    "InputError",
    "LinAlgError",
    "Moments",
    "Options",
    "Origin",
    "Request",
    "as_tensor",
    "available_memory",
    "bad_indices",
    "caller_kernel_threads",
    "check_count",
    "check_fits",
    "check_k",
    "check_square",
    "chunks_within",
    "collection_op",
    "combine_moments",
    "cpu_count",
    "default_tolerance",
    "eigh_backward",
    "entry_components",
    "execute",
    "fan_out",
    "format_bytes",
    "format_indices",
    "is_dask_collection",
    "is_ragged",
    "is_sparse_input",
    "matrix_bytes",
    "memory_budget",
    "mirror_exact",
    "orthonormality_error",
    "pull",
    "real_dtype",
    "register_collection_op",
    "restore",
    "rows_within",
    "set_collection_loader",
    "single_threaded_kernels",
    "torch_version",
]
