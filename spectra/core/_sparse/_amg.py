"""A block V-cycle on pyamg's smoothed-aggregation hierarchy (the ``"amg"`` preconditioner).

pyamg builds the hierarchy (levels ``A_l``, prolongators ``P_l``, restrictions ``R_l``);
the cycle itself runs here on whole ``(n, m)`` blocks: damped-Jacobi smoothing (``omega =
4 / (3 rho(D^-1 A))``, ``rho`` bounded by Gershgorin), the same number of sweeps before and
after the coarse correction (a symmetric positive definite preconditioner, as LOBPCG
wants), and the pseudo-inverse of the coarsest matrix, all in single precision (a
preconditioner needs no more). pyamg's own ``aspreconditioner`` applies one column at a
time and computes residual norms on every call; on the loaded 2-core machine that cost
55-90 ms per column at n = 20,000, against a few ms for a block cycle of all columns.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._options import Options
from .._pipeline._solve import solve_standard

#: damped-Jacobi sweeps before and after each coarse correction
SWEEPS = 2
#: the coarsest level is solved densely up to this size
MAX_COARSE = 50


def _gershgorin_radius(a: Any, dinv: np.ndarray) -> float:
    """``max_i sum_j |a_ij| / |a_ii|`` >= ``rho(D^-1 A)``: no power iteration (its many
    small BLAS calls were slow on a loaded machine), at worst a smaller Jacobi damping."""
    rows = np.asarray(abs(a).sum(axis=1)).ravel() * np.abs(dinv)
    return max(float(rows.max()) if rows.size else 1.0, 1e-300)


def _pseudo_inverse(a: np.ndarray) -> np.ndarray:
    """The Hermitian pseudo-inverse of the coarsest matrix, through the core's dense eigh."""
    t = torch.from_numpy(a)
    w, v = solve_standard(((t + t.mH) / 2).unsqueeze(0), True, Options())
    assert v is not None
    w, v = w[0], v[0]
    keep = w.abs() > 1e-12 * w.abs().max().clamp_min(1e-300)
    inv = torch.where(keep, 1.0 / torch.where(keep, w, torch.ones_like(w)), torch.zeros_like(w))
    return ((v * inv.to(v.dtype)) @ v.mH).numpy()


class BlockVCycle:
    """``apply(B)`` ~ ``A^-1 B`` for a Hermitian positive (semi)definite CSR ``A``."""

    def __init__(self, mat: Any):
        import pyamg

        # "local" (Gershgorin) prolongator weights: pyamg's default estimates rho(D^-1 A) by
        # Arnoldi, seconds of setup on a loaded machine
        ml = pyamg.smoothed_aggregation_solver(
            mat, max_coarse=MAX_COARSE, smooth=("jacobi", {"weighting": "local"})
        )
        # the cycle runs in single precision: a preconditioner needs ~1e-2 relative accuracy,
        # and its sparse products (most of an iteration's memory traffic) halve
        self.dtype = np.dtype(np.complex64 if np.iscomplexobj(mat.data) else np.float32)
        self.levels = []
        for level in ml.levels[:-1]:
            a = level.A.tocsr()
            d = a.diagonal()
            dinv = np.where(np.abs(d) > 0, 1.0 / np.where(np.abs(d) > 0, d, 1.0), 0.0)
            omega = 4.0 / (3.0 * _gershgorin_radius(a, dinv))
            self.levels.append(
                (
                    a.astype(self.dtype),
                    level.P.tocsr().astype(self.dtype),
                    level.R.tocsr().astype(self.dtype),
                    (omega * dinv)[:, None].astype(self.dtype),
                )
            )
        self.coarse = _pseudo_inverse(ml.levels[-1].A.toarray()).astype(self.dtype)
        self.complexity = float(ml.operator_complexity())

    def _cycle(self, lvl: int, b: np.ndarray) -> np.ndarray:
        if lvl == len(self.levels):
            return self.coarse @ b
        a, p, r, wdinv = self.levels[lvl]
        x = wdinv * b
        for _ in range(SWEEPS - 1):
            x += wdinv * (b - a @ x)
        x += p @ self._cycle(lvl + 1, r @ (b - a @ x))
        for _ in range(SWEEPS):
            x += wdinv * (b - a @ x)
        return x

    def apply(self, b: np.ndarray) -> np.ndarray:
        """The cycle on the block ``b`` (returned in ``b``'s dtype)."""
        return self._cycle(0, np.ascontiguousarray(b, dtype=self.dtype)).astype(b.dtype)
