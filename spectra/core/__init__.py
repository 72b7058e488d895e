"""The one batched eigh engine of spectra: plan, execute, check against SciPy.

This is the user surface (``__all__``). spectra's own domains additionally use the small
domain surface :mod:`spectra.core.domain` (array in/out helpers, errors, the fan-out);
nothing outside ``spectra/core`` imports the private ``_modules``.
"""

from ._eigh import EighResult, eigh, eigvalsh
from ._errors import InputError, LinAlgError
from ._matrix_function import matrix_function
from ._options import Options
from ._pipeline._gauge import fix_gauge
from ._pipeline._plan import Plan, plan
from ._solvers._kernels._warm import warm_kernels
from ._sparse import BlockDiagonal, SparseConvergenceWarning, SparsePlan, plan_sparse
from ._strategies import STRATEGIES, Abilities, Claim, Cost, Runs, Strategy, register, unregister
from ._validate import Validation, validate
from .reference import reference_eigh

__all__ = [
    "STRATEGIES",
    "Abilities",
    "BlockDiagonal",
    "Claim",
    "Cost",
    "EighResult",
    "InputError",
    "LinAlgError",
    "Options",
    "Plan",
    "Runs",
    "SparseConvergenceWarning",
    "SparsePlan",
    "Strategy",
    "Validation",
    "eigh",
    "eigvalsh",
    "fix_gauge",
    "matrix_function",
    "plan",
    "plan_sparse",
    "reference_eigh",
    "register",
    "unregister",
    "validate",
    "warm_kernels",
]
