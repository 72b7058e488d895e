"""The registry of eigensolver strategies: every path the planner may take.

Each strategy solves a flat ``(B, n, n)`` block on one device and returns
``(eigenvalues (B, n) ascending, eigenvectors (B, n, n) or None)`` on that device. Tests
are parametrized over every registered strategy against the SciPy reference
(``tests/core/test_strategies.py``), as opt_einsum does for its path optimizers.
Fanning a CPU batch out across threads is the executor's job, not a strategy's: a strategy
whose ``runs.fan_out`` is set is called once per worker on its part of the batch.

One module per solver family registers its strategies at import:

- :mod:`._torch`: ``torch`` (``torch.linalg.eigh`` through ``_torch_lapack``, the default);
- :mod:`._numpy`: ``numpy`` (``numpy.linalg.eigh``) and ``scipy`` (the reference loop);
- :mod:`._cupy`: ``cupy-syevj`` (CuPy's batched Jacobi on CUDA);
- :mod:`._jacobi`: ``jacobi`` (the torch-ops parallel Jacobi of ``_jacobi``);
- :mod:`._kernels`: ``closed-form``, ``numba-jacobi``, ``numba-ql`` (``_kernels``);
- :mod:`._subset`: ``lapack-subset`` (LAPACK ``?syevr``/``?heevr`` with an index range: the
  ``k`` wanted of ``n`` eigenpairs only, ``_lapack_subset``);
- :mod:`._openblas`: ``openblas`` (SciPy's OpenBLAS ``?syevd``/``?heevd``: the default off
  Intel CPUs where measured faster than torch's MKL, ``_openblas_eigh``);
- :mod:`._twisted`: ``twisted`` (OpenBLAS's tridiagonal reduction around numba's lane
  kernel for the tridiagonals: float64, complex128 and complex64 batches off Intel CPUs,
  ``_twisted_eigh``).

What a strategy is, and the registry, are in :mod:`._base`.
"""

from __future__ import annotations

import torch  # noqa: F401  (tests patch torch.linalg through this module)

from ._base import (
    DEFAULT_STRATEGY,
    PLAIN,
    STRATEGIES,
    Abilities,
    ChecksBlock,
    Claim,
    Cost,
    FusableCheck,
    InputCheck,
    Runs,
    SolveFn,
    Strategy,
    WritesInto,
    WritesWindow,
    claims,
    preferred,
    register,
    registry_version,
    solve_through,
    unregister,
    window_claims,
)

# isort: split
# the families register in this order (the registry's order: torch first)
from . import _torch  # noqa: F401

# isort: split
from . import _numpy  # noqa: F401

# isort: split
from . import _cupy, _jacobi  # noqa: F401

# isort: split
from . import _kernels  # noqa: F401

# isort: split
from . import _subset  # noqa: F401

# isort: split
from . import _openblas  # noqa: F401

# isort: split
from . import _twisted  # noqa: F401

__all__ = [
    "DEFAULT_STRATEGY",
    "PLAIN",
    "STRATEGIES",
    "Abilities",
    "ChecksBlock",
    "Claim",
    "Cost",
    "FusableCheck",
    "InputCheck",
    "Runs",
    "SolveFn",
    "Strategy",
    "WritesInto",
    "WritesWindow",
    "claims",
    "preferred",
    "register",
    "registry_version",
    "solve_through",
    "unregister",
    "window_claims",
]
