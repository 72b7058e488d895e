"""Shift-invert preconditioning by a sparse factorization (the ``"factor"`` preconditioner).

For ``B = sign * A`` with a lower bound ``lo`` of its spectrum, ``T = (B - sigma I)^-1``
with ``sigma = lo - delta`` is the ideal LOBPCG preconditioner: ``B - sigma I`` is positive
definite, and ``span{X, T R} = span{X, T X}`` makes every iteration a step of (locally
optimal) inverse subspace iteration, whose rate is set by ``(w_i - sigma) / (w_m+1 - sigma)``
instead of the condition number. On the normalized Laplacians of random geometric graphs
(k = 8, tol 1e-8) it takes 8-9 iterations where the AMG V-cycle takes 20-28.

The factorization is SciPy's SuperLU (``scipy.sparse.linalg.splu``) in its symmetric mode:
a minimum-degree ordering of ``A + A^T`` and diagonal pivots (no pivoting: the shifted
matrix is positive definite). It is only planned where its fill is known to be small:
:func:`fill_estimate` bounds it by the profile of the reverse Cuthill-McKee ordering (the
fill of a factorization in that ordering lies inside the profile; minimum degree fills
less: 2.4x to 8.6x less on the random geometric graphs of 3,000 to 100,000 nodes), so
meshes and geometric graphs take it and expander-like graphs (whose profile is ~n^2 / 4)
never do. After the factorization the true fill is checked against ``max_memory`` too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

#: the shift below the spectrum's lower bound, relative to ``||A||``
SHIFT = 1e-5
#: bytes per stored factor entry (value and row index, L and U both stored by SuperLU)
_ENTRY_BYTES = 2 * (8 + 4)


def fill_estimate(csr: Any) -> int:
    """An estimate of the entries of one triangular factor of the symmetric ``csr``: the
    profile (envelope) of its reverse Cuthill-McKee ordering, ``sum_i (i - min_j<=i j)``
    over the nonzero pattern (an upper bound of that ordering's fill).

    >>> import scipy.sparse as sp
    >>> fill_estimate(sp.diags([1.0, 2.0, 1.0], [-1, 0, 1], shape=(5, 5), format="csr"))
    9
    """
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    n = csr.shape[0]
    if n == 0:
        return 0
    pattern = csr.tocsr()
    order = reverse_cuthill_mckee(pattern, symmetric_mode=True)
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    cols = pos[pattern.indices]
    starts = pattern.indptr[:-1]
    first = np.full(n, np.iinfo(np.int64).max)
    rows = np.flatnonzero(np.diff(pattern.indptr) > 0)
    if rows.size:
        first[rows] = np.minimum.reduceat(cols, starts[rows])
    first = np.minimum(first, pos)  # the diagonal is in the pattern of the shifted matrix
    return int((pos - first).sum()) + n


def factor_bytes(fill: int) -> int:
    """Bytes of SuperLU's ``L`` and ``U`` for ``fill`` entries per triangle."""
    return fill * _ENTRY_BYTES


def shifts(gershgorin: float, given: float | None, scale: float) -> list[float]:
    """The shifts tried in turn, the last a proven lower bound minus ``delta``: the caller's
    ``spectrum_bound`` (``given``) when there is one, else ``-delta`` when Gershgorin's bound
    is below 0 (positive semidefinite matrices such as Laplacians: Gershgorin's bound of a
    normalized Laplacian is well below 0, which would make the shift-invert slow), then
    Gershgorin's bound.

    >>> shifts(-0.5, None, 2.0), shifts(-0.5, 0.0, 2.0), shifts(0.25, None, 2.0)
    ([-2e-05, -0.50002], [-2e-05, -0.50002], [0.24998])
    """
    delta = SHIFT * max(scale, 1e-300)
    first = given if given is not None else (0.0 if gershgorin < 0 else None)
    out = [] if first is None or first <= gershgorin else [first - delta]
    return [*out, gershgorin - delta]


def _factorize(mat: Any) -> Any:
    import scipy.sparse.linalg as sla

    return sla.splu(
        mat.tocsc(),
        permc_spec="MMD_AT_PLUS_A",
        diag_pivot_thresh=0.0,
        options={"SymmetricMode": True},
    )


def _definite(lu: Any) -> bool:
    """Whether the factored matrix is positive definite: diagonal pivots only (the
    factorization is ``P A P^T = L D L^H``) and no pivot <= 0 (Sylvester's inertia)."""
    if not np.array_equal(lu.perm_r, lu.perm_c):
        return False
    return bool((lu.U.diagonal().real > 0).all())


class ShiftInvert:
    """``apply(R) = (B - sigma I)^-1 R`` for ``B = sign * A`` (a SciPy CSR ``A``), ``sigma``
    the first of :func:`shifts` below which ``B``'s spectrum lies (checked by the inertia
    of the factorization; the last is a proven bound and taken as it is)."""

    def __init__(self, csr: Any, sign: float, gershgorin: float, given: float | None, scale: float):
        import scipy.sparse as sp

        n = csr.shape[0]
        eye = sp.identity(n, dtype=csr.dtype, format="csr")
        b = csr * sign
        candidates = shifts(gershgorin, given, scale)
        for i, sigma in enumerate(candidates):
            lu = _factorize(b - sigma * eye)
            if i == len(candidates) - 1 or _definite(lu):
                break
        self.sigma, self.lu = sigma, lu
        self.fill = int(self.lu.L.nnz + self.lu.U.nnz)

    @property
    def bytes(self) -> int:
        return self.fill * (_ENTRY_BYTES // 2)

    def apply(self, r: torch.Tensor) -> torch.Tensor:
        """The solve on a block ``r`` (``(n, c)``, CPU), returned as a tensor of ``r``'s dtype."""
        x = self.lu.solve(np.asfortranarray(r.numpy()))
        return torch.from_numpy(np.asarray(x)).to(dtype=r.dtype)
