"""The one batched eigh engine of spectra: plan, execute, check against SciPy."""

from . import _jacobi  # noqa: F401  (registers the "jacobi" strategy)
from . import _kernels  # noqa: F401  (registers "closed-form", "numba-jacobi")
from ._arrays import as_tensor, default_tolerance, is_dask_collection, restore
from ._autograd import eigh_backward
from ._eigh import EighResult, eigh, eigvalsh
from ._errors import LinAlgError
from ._execute import execute, orthonormality_error
from ._gauge import fix_gauge
from ._matrix_function import matrix_function
from ._plan import Plan, plan, torch_version
from ._strategies import STRATEGIES, Strategy, register
from ._threads import cpu_count, fan_out
from ._validate import Validation, validate
from .reference import reference_eigh

__all__ = [
    "STRATEGIES",
    "EighResult",
    "LinAlgError",
    "Plan",
    "Strategy",
    "Validation",
    "as_tensor",
    "cpu_count",
    "default_tolerance",
    "eigh",
    "eigh_backward",
    "eigvalsh",
    "execute",
    "fan_out",
    "fix_gauge",
    "is_dask_collection",
    "matrix_function",
    "orthonormality_error",
    "plan",
    "reference_eigh",
    "register",
    "restore",
    "torch_version",
    "validate",
]
