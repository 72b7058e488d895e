"""Builders: supercells, and ribbons/slabs cut from a periodic model."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..core.domain import InputError
from ._model import Model


def _cell_points(matrix: np.ndarray) -> np.ndarray:
    """Integer lattice points ``T`` (old reduced coordinates) inside the supercell."""
    dim = matrix.shape[0]
    corners = np.array(list(itertools.product((0, 1), repeat=dim)), dtype=float) @ matrix
    lo = np.floor(corners.min(0)).astype(int)
    hi = np.ceil(corners.max(0)).astype(int)
    grid = np.stack(
        np.meshgrid(*[np.arange(a, b + 1) for a, b in zip(lo, hi, strict=True)], indexing="ij"), -1
    ).reshape(-1, dim)
    frac = grid @ np.linalg.inv(matrix)
    eps = 1e-9
    inside = np.all((frac > -eps) & (frac < 1 - eps), axis=1)
    pts = grid[inside]
    order = np.lexsort(pts.T[::-1])
    return pts[order]


def _fold(
    blocks: dict[tuple[int, ...], np.ndarray], points: np.ndarray, matrix: np.ndarray, nstates: int
) -> dict[tuple[int, ...], np.ndarray]:
    """Re-express ``{R: M(R)}`` on the supercell with sub-cells ``points``."""
    minv = np.linalg.inv(matrix)
    ncell = len(points)
    index = {tuple(p): a for a, p in enumerate(points)}
    size = ncell * nstates
    out: dict[tuple[int, ...], np.ndarray] = {}
    rvecs = np.array(list(blocks), dtype=int).reshape(len(blocks), matrix.shape[0])
    mats = list(blocks.values())
    # every (R, sub-cell a) pair at once: target cell T_a + R = T_b + R' M
    target = points[None, :, :] + rvecs[:, None, :]  # (nR, ncell, dim)
    rnew = np.floor(target @ minv + 1e-9).astype(int)
    rest = target - rnew @ matrix
    for r_idx, a in itertools.product(range(len(rvecs)), range(ncell)):
        b = index[tuple(rest[r_idx, a])]
        key = tuple(rnew[r_idx, a])
        blk = out.setdefault(key, np.zeros((size, size), complex))
        blk[a * nstates : (a + 1) * nstates, b * nstates : (b + 1) * nstates] += mats[r_idx]
    return out


def supercell(model: Model, matrix: Any) -> Model:
    """The supercell whose lattice vectors are the rows of ``matrix @ model.lattice``.

    ``matrix`` is an integer ``(dim, dim)`` matrix with non-zero determinant (a scalar or a
    list of ``dim`` integers means a diagonal matrix). Orbitals are ordered sub-cell by
    sub-cell; bands at supercell ``K`` are the primitive bands at every
    ``k = (K + n) @ inv(matrix).T`` folded in.

    Examples
    --------
    >>> import numpy as np
    >>> from spectra.tightbinding import Model, supercell
    >>> chain = Model([[1.0]], [[0.0]]); chain.add_hopping(-1.0, 0, 0, [1])
    >>> big = supercell(chain, 2)
    >>> np.allclose(big.bands([[0.0]]), [[-2.0, 2.0]])
    True
    """
    dim = model.dim
    mat = np.asarray(matrix)
    if mat.ndim == 0:
        mat = np.eye(dim, dtype=int) * int(mat)
    elif mat.ndim == 1:
        mat = np.diag(mat)
    if mat.shape != (dim, dim):
        raise InputError("supercell", f"matrix must be ({dim}, {dim}), got shape {mat.shape}")
    if mat.dtype.kind not in "iu" and not np.all(mat == np.round(mat)):
        raise InputError("supercell", "matrix must be integer")
    mat = np.round(mat).astype(int)
    det = round(float(np.linalg.det(mat)))
    if det == 0:
        raise InputError("supercell", "matrix is singular")
    for d in range(dim):
        if d not in model.periodic and (
            mat[d, d] != 1
            or np.any(mat[d, np.arange(dim) != d])
            or np.any(mat[np.arange(dim) != d, d])
        ):
            raise InputError(
                "supercell:",
                f"direction {d} is not periodic: the supercell matrix must leave it alone",
            )
    points = _cell_points(mat.astype(float))
    if len(points) != abs(det):
        raise RuntimeError(f"found {len(points)} sub-cells for a supercell of volume {abs(det)}")
    minv = np.linalg.inv(mat.astype(float))
    orbitals = ((model.orbitals[None, :, :] + points[:, None, :]) @ minv).reshape(-1, dim)
    new = model._like(lattice=mat @ model.lattice, orbitals=orbitals)
    overlap = None
    if model._overlap is not None:
        overlap = _fold(model._overlap, points, mat.astype(float), model.nstates)
    new._adopt(_fold(model._blocks, points, mat.astype(float), model.nstates), overlap)
    return new


def cut(model: Model, direction: int, ncells: int) -> Model:
    """A ribbon (2D -> 1D) or slab (3D -> 2D): ``ncells`` cells along ``direction``, with the
    periodicity along ``direction`` removed (the hoppings across the cut are dropped).

    The new lattice vector along ``direction`` is ``ncells`` times the old one; k-points of
    the result have one coordinate less.

    Examples
    --------
    >>> import numpy as np
    >>> from spectra.tightbinding import Model, cut
    >>> chain = Model([[1.0]], [[0.0]]); chain.add_hopping(-1.0, 0, 0, [1])
    >>> flake = cut(chain, 0, 2)  # a two-site molecule
    >>> np.allclose(flake.bands(np.zeros((1, 0))), [[-1.0, 1.0]])
    True
    """
    if direction not in model.periodic:
        raise InputError(
            "cut:",
            f"direction {direction} is not periodic in this model "
            f"(periodic: {list(model.periodic)})",
        )
    if isinstance(ncells, bool) or int(ncells) != ncells or ncells < 1:
        raise InputError("ncells", f"must be a positive integer, got {ncells!r}")
    mat = np.eye(model.dim, dtype=int)
    mat[direction, direction] = int(ncells)
    big = supercell(model, mat)
    periodic = [p for p in model.periodic if p != direction]
    new = big._like(periodic=periodic)
    overlap = None
    if big._overlap is not None:
        overlap = {r: b for r, b in big._overlap.items() if r[direction] == 0}
    new._adopt({r: b for r, b in big._blocks.items() if r[direction] == 0}, overlap)
    return new


__all__ = ["cut", "supercell"]
