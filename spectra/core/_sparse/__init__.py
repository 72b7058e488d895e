"""The sparse path of the core: k extreme eigenpairs of large sparse Hermitian matrices.

``spectra.eigh(a, k=K)`` takes this path when ``a`` is a torch sparse COO/CSR tensor, a
``scipy.sparse`` matrix or array, a linear operator (``shape``, ``dtype`` and a block
``matmul``/``@``), or a list of them (solved together). Modules:

- ``_operators``: input normalisation and checks (square, finite, Hermitian);
- ``_precondition``: Jacobi, AMG (pyamg), callable preconditioners;
- ``_lobpcg``: the batched block LOBPCG, Rayleigh-Ritz through the core's dense eigh;
- ``_krylov``: the batched block shift-invert Lanczos (thick restart) on the factorization;
- ``_blocks``: :class:`BlockDiagonal`, a batch as one block-diagonal matrix and its pointer;
- ``_factor``: the shift-invert sparse factorization (the ``"factor"`` preconditioner);
- ``_plan``: dense or iterative (:func:`plan_sparse` shows the decision);
- ``_api``: the keywords, the dense-or-iterative choice, convergence errors, results.
"""

from ._api import (
    SPARSE_KEYWORDS,
    SparseConvergenceWarning,
    default_tol,
    solve_sparse,
)
from ._blocks import BlockDiagonal
from ._operators import is_sparse_input
from ._plan import DENSE_MAX_N, SparsePlan, plan_sparse

__all__ = [
    "DENSE_MAX_N",
    "SPARSE_KEYWORDS",
    "BlockDiagonal",
    "SparseConvergenceWarning",
    "SparsePlan",
    "default_tol",
    "is_sparse_input",
    "plan_sparse",
    "solve_sparse",
]
