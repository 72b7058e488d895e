"""Density of states (Gaussian or linear tetrahedron) and the Fermi level."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.special import erfc, expit

from ..core.domain import InputError

# corners of the unit cube (bit i of the index = offset along axis i) and their simplices
_TETRA = ((0, 1, 3, 7), (0, 1, 5, 7), (0, 2, 3, 7), (0, 2, 6, 7), (0, 4, 5, 7), (0, 4, 6, 7))
_TRIANGLES = ((0, 1, 3), (0, 2, 3))
#: Gaussian widths past which ``exp(-z^2 / 2)`` underflows to exactly 0 in float64
GAUSS_CUTOFF = 39.0


def _to_numpy(x: Any, name: str) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise InputError(name, "contains NaN/Inf")
    return arr


def _weights(weights: Any, nk: int) -> np.ndarray:
    if weights is None:
        return np.full(nk, 1.0 / max(nk, 1))
    w = _to_numpy(weights, "weights").reshape(-1)
    if w.shape != (nk,):
        raise InputError("weights", f"must have one value per k-point ({nk}), got {w.shape}")
    if np.any(w < 0):
        raise InputError("weights", "must be non-negative")
    return w


def dos(
    energies: Any,
    grid: Any,
    *,
    sigma: float | None = None,
    weights: Any = None,
    method: str = "gaussian",
    kgrid: Sequence[int] | None = None,
    chunk: int = 2**22,
) -> np.ndarray:
    """Density of states per cell on the energy ``grid`` (integrates to the band count).

    Parameters
    ----------
    energies : band energies ``(nk, nbands)`` (NumPy or torch).
    grid : energies ``(nE,)`` at which to evaluate the DOS.
    sigma : Gaussian width (``method="gaussian"``; default: 2 grid spacings).
    weights : k-point weights ``(nk,)`` summing to 1 (default uniform).
    chunk : elements per work block (default ``2**22``, 32 MiB of float64): the Gaussian
        sum runs over blocks of (energies x states) of at most this size, each block only
        over the states within ``GAUSS_CUTOFF = 39`` widths of its energies (farther ones
        contribute exactly 0 in float64), as one exponential and one matrix-vector product.
    method : ``"gaussian"`` or ``"tetrahedron"`` (linear tetrahedra in 3D, triangles in
        2D, segments in 1D), which needs ``energies`` on a full periodic grid in C order
        (as :func:`monkhorst_pack` makes) and its shape ``kgrid``. The value at each grid
        energy is the average over its bin (the integrated DOS differenced between the
        midpoints of the grid), so flat bands stay finite and the sum integrates exactly.

    Examples
    --------
    >>> import numpy as np
    >>> from spectra.tightbinding import dos
    >>> e = np.array([[0.0], [0.0]])
    >>> g = dos(e, np.linspace(-1, 1, 201), sigma=0.1)
    >>> round(float(np.trapezoid(g, np.linspace(-1, 1, 201))), 6)
    1.0
    """
    e = _to_numpy(energies, "energies")
    if e.ndim == 1:
        e = e[:, None]
    if e.ndim != 2:
        raise InputError("energies", f"must be (nk, nbands), got shape {e.shape}")
    x = _to_numpy(grid, "grid").reshape(-1)
    if method == "gaussian":
        return _gaussian(e, x, sigma, _weights(weights, e.shape[0]), chunk)
    if method == "tetrahedron":
        if weights is not None:
            raise InputError("dos:", "the tetrahedron method uses the grid's own (uniform) weights")
        if kgrid is None:
            raise InputError("dos:", "method='tetrahedron' needs kgrid, the shape of the k grid")
        return _tetrahedron(e, x, tuple(int(q) for q in kgrid), chunk)
    raise InputError("method", f"must be 'gaussian' or 'tetrahedron', got {method!r}")


def _gaussian(
    e: np.ndarray, x: np.ndarray, sigma: float | None, w: np.ndarray, chunk: int
) -> np.ndarray:
    if sigma is None:
        if x.size < 2:
            raise InputError("gaussian:", "give sigma for a grid of fewer than two energies")
        sigma = 2.0 * float(np.abs(np.diff(x)).mean())
    if not sigma > 0:
        raise InputError("sigma", f"must be positive, got {sigma}")
    flat = e.reshape(-1)
    wf = np.repeat(w, e.shape[1])
    order = np.argsort(flat, kind="stable")
    se, sw = flat[order], wf[order]
    xo = np.argsort(x, kind="stable")
    xs = x[xo]
    # beyond GAUSS_CUTOFF widths exp(-z^2/2) is 0 in float64: only the states inside each
    # energy's window contribute, so the windowed sum equals the full one
    lo = np.searchsorted(se, xs - GAUSS_CUTOFF * sigma, side="left")
    hi = np.searchsorted(se, xs + GAUSS_CUTOFF * sigma, side="right")
    out = np.zeros_like(xs)
    inv = 1.0 / sigma
    chunk = max(int(chunk), 1)
    i = 0
    while i < xs.size:
        # energies i..j-1 together: (j - i) x (their window of states) fits the chunk
        rows = np.arange(1, xs.size - i + 1)
        cost = rows * (hi[i:] - lo[i])
        j = i + max(1, int(np.searchsorted(cost, chunk, side="right")))
        a, b = int(lo[i]), int(hi[j - 1])
        step = max(1, chunk // (j - i))
        for s in range(a, b, step):
            t = min(b, s + step)
            z = np.subtract.outer(xs[i:j], se[s:t])
            z *= inv
            np.square(z, out=z)
            z *= -0.5
            np.exp(z, out=z)
            out[i:j] += z @ sw[s:t]
        i = j
    result = np.empty_like(out)
    result[xo] = out * (1.0 / (sigma * math.sqrt(2 * math.pi)))
    return result


def _simplices(e: np.ndarray, kgrid: tuple[int, ...]) -> np.ndarray:
    """Corner energies of every simplex of the periodic grid: ``(nsimplex * nb, d + 1)``."""
    dim = len(kgrid)
    nb = e.shape[1]
    cube = e.reshape(*kgrid, nb)
    corners = []
    for idx in range(2**dim):
        shifted = cube
        for axis in range(dim):
            if idx >> (dim - 1 - axis) & 1:
                shifted = np.roll(shifted, -1, axis=axis)
        corners.append(shifted.reshape(-1, nb))
    if dim == 1:
        sets: Sequence[Sequence[int]] = ((0, 1),)
    elif dim == 2:
        sets = _TRIANGLES
    else:
        sets = _TETRA
    simp = np.stack([np.stack([corners[c] for c in s], -1) for s in sets])  # (ns, ncell, nb, d+1)
    return np.sort(simp.reshape(-1, dim + 1), axis=-1)


def _tetrahedron(e: np.ndarray, x: np.ndarray, kgrid: tuple[int, ...], chunk: int) -> np.ndarray:
    dim = len(kgrid)
    if not 1 <= dim <= 3:
        raise InputError(
            "tetrahedron:", f"tetrahedron DOS needs a 1D, 2D or 3D grid, got kgrid={kgrid}"
        )
    if int(np.prod(kgrid)) != e.shape[0]:
        raise InputError(
            "kgrid",
            f"{kgrid} has {int(np.prod(kgrid))} points but energies has {e.shape[0]} k-points",
        )
    if x.size < 2 or np.any(np.diff(x) <= 0):
        raise InputError(
            "tetrahedron:", "the tetrahedron DOS needs an increasing grid of at least 2 energies"
        )
    simp = _simplices(e, kgrid)
    nsimp_per_band = simp.shape[0] / e.shape[1]
    mid = 0.5 * (x[1:] + x[:-1])
    edges = np.concatenate([[x[0] - (mid[0] - x[0])], mid, [x[-1] + (x[-1] - mid[-1])]])
    counts = _simplex_count(simp, edges, dim, chunk)
    return np.diff(counts) / np.diff(edges) / nsimp_per_band


def integrated_dos(energies: Any, grid: Any, kgrid: Sequence[int]) -> np.ndarray:
    """Number of states per cell below each ``grid`` energy, by linear tetrahedra
    (triangles in 2D, segments in 1D) on a full periodic C-order ``kgrid``."""
    e = _to_numpy(energies, "energies")
    e = e[:, None] if e.ndim == 1 else e
    x = _to_numpy(grid, "grid").reshape(-1)
    kg = tuple(int(q) for q in kgrid)
    if int(np.prod(kg)) != e.shape[0] or not 1 <= len(kg) <= 3:
        raise InputError("kgrid", f"{kg} does not match {e.shape[0]} k-points (1D-3D grids)")
    simp = _simplices(e, kg)
    if x.size > 1 and np.any(np.diff(x) < 0):
        raise InputError("grid", "must be non-decreasing")
    return _simplex_count(simp, x, len(kg)) / (simp.shape[0] / e.shape[1])


def _simplex_count(c: np.ndarray, x: np.ndarray, dim: int, chunk: int = 2**21) -> np.ndarray:
    """Sum over the simplices ``c`` (sorted corner energies) of the fraction of each below
    ``x`` (the integrated linear DOS, each simplex normalized to 1).

    Only the (simplex, energy) pairs with ``e_1 <= x < e_last`` need the polynomial; the
    simplices entirely below an energy are counted by a sorted search.
    """
    x = np.ascontiguousarray(x)
    lo = np.searchsorted(x, c[:, 0], side="left")
    hi = np.searchsorted(x, c[:, -1], side="left")
    full = np.cumsum(np.bincount(hi, minlength=x.size + 1)[: x.size]).astype(float)
    width = hi - lo
    ends = np.cumsum(width)
    out = full
    start = 0
    while start < c.shape[0]:
        base = ends[start - 1] if start else 0
        stop = int(np.searchsorted(ends, base + chunk, side="right"))
        stop = max(stop, start + 1)
        w = width[start:stop]
        npair = int(w.sum())
        if npair:
            which = np.repeat(np.arange(start, stop), w)
            first = np.repeat(np.cumsum(w) - w, w)
            xi = lo[which] + (np.arange(npair) - first)
            frac = _piece(x[xi], c[which], dim)
            out = out + np.bincount(xi, weights=frac, minlength=x.size)
        start = stop
    return out


def _piece(ee: np.ndarray, c: np.ndarray, dim: int) -> np.ndarray:
    """Fraction of each simplex (corner energies ``c``, sorted) below ``ee``, for
    ``e_1 <= ee < e_last`` (one energy per simplex)."""
    tiny = 1e-300
    with np.errstate(divide="ignore", over="ignore", invalid="ignore", under="ignore"):
        if dim == 1:
            n = (ee - c[:, 0]) / np.maximum(c[:, 1] - c[:, 0], tiny)
        elif dim == 2:
            e1, e2, e3 = c[:, 0], c[:, 1], c[:, 2]
            d21, d31, d32 = (np.maximum(v, tiny) for v in (e2 - e1, e3 - e1, e3 - e2))
            n = np.where(ee < e2, (ee - e1) ** 2 / (d21 * d31), 1 - (e3 - ee) ** 2 / (d31 * d32))
        else:
            e1, e2, e3, e4 = c[:, 0], c[:, 1], c[:, 2], c[:, 3]
            d21, d31, d41, d32, d42, d43 = (
                np.maximum(v, tiny) for v in (e2 - e1, e3 - e1, e4 - e1, e3 - e2, e4 - e2, e4 - e3)
            )
            u = ee - e2
            middle = (d21**2 + 3 * d21 * u + 3 * u**2 - (d31 + d42) / (d32 * d42) * u**3) / (
                d31 * d41
            )
            n = np.where(
                ee < e2,
                (ee - e1) ** 3 / (d21 * d31 * d41),
                np.where(ee < e3, middle, 1 - (e4 - ee) ** 3 / (d41 * d42 * d43)),
            )
    return np.nan_to_num(np.clip(n, 0.0, 1.0), nan=0.0)


def fermi_level(
    energies: Any,
    nelectrons: float,
    *,
    weights: Any = None,
    degeneracy: float | None = None,
    nspin: int = 1,
    smearing: float = 0.0,
    method: str = "fermi-dirac",
) -> float:
    """The Fermi level for ``nelectrons`` electrons per cell.

    Electron counting: each band holds ``degeneracy`` electrons per cell (its states
    weighted by the k-point weights, which sum to 1). A spinless model (``nspin=1``)
    describes spin-degenerate electrons, so each of its bands holds **2** electrons; the
    bands of a spinful model (``nspin=2``, e.g. :meth:`Model.with_spin`) hold 1 each. The
    default ``degeneracy`` is therefore ``2 / nspin``: pass the model's ``nspin`` (or an
    explicit ``degeneracy``). Graphene (two bands, two electrons per cell) has its level at
    the Dirac point: ``fermi_level(graphene_energies, 2)``.

    Parameters
    ----------
    energies : band energies ``(nk, nbands)``.
    nelectrons : electrons per cell, at most ``nbands * degeneracy``.
    weights : k-point weights (default uniform, summing to 1).
    degeneracy : electrons per band (per state and k-point); default ``2 / nspin``.
    nspin : 1 for the energies of a spinless model (default), 2 for a spinful one; only
        used when ``degeneracy`` is not given.
    smearing : 0 for a step occupation (an insulator's level is mid-gap); otherwise the
        width of ``method`` ``"fermi-dirac"`` (``kT``) or ``"gaussian"`` occupations, and the
        level solves ``degeneracy sum_k w_k sum_n f((e_nk - mu) / smearing) = nelectrons``.

    Raises
    ------
    ValueError
        when ``nelectrons`` is negative or exceeds the capacity ``nbands * degeneracy``.

    Examples
    --------
    >>> import numpy as np
    >>> from spectra.tightbinding import fermi_level
    >>> e = np.array([[-1.0, 1.0], [-2.0, 2.0]])
    >>> fermi_level(e, 2)  # spinless: 2 electrons fill the lower band (mid-gap level)
    0.0
    >>> fermi_level(e, 1, nspin=2)  # spinful bands hold one electron each
    0.0
    """
    e = _to_numpy(energies, "energies")
    if e.ndim == 1:
        e = e[:, None]
    if degeneracy is None:
        if nspin not in (1, 2):
            raise InputError("nspin", f"must be 1 or 2, got {nspin!r}")
        degeneracy = 2.0 / nspin
    if not degeneracy > 0:
        raise InputError("degeneracy", f"must be positive, got {degeneracy}")
    w = _weights(weights, e.shape[0]) * float(degeneracy)
    capacity = float(w.sum() * e.shape[1])
    if not 0 <= nelectrons <= capacity * (1 + 1e-12):
        raise InputError(
            "fermi_level:",
            f"nelectrons={nelectrons:g} is outside [0, {capacity:g}]: {e.shape[1]} bands hold "
            f"{float(degeneracy):g} electrons each",
        )
    if smearing == 0:
        flat = e.reshape(-1)
        wf = np.repeat(w, e.shape[1])
        order = np.argsort(flat, kind="stable")
        se, cum = flat[order], np.cumsum(wf[order])
        tol = 1e-9 * max(capacity, 1.0)
        if nelectrons <= tol:
            return float(se[0])
        i = int(np.searchsorted(cum, nelectrons - tol))
        i = min(i, se.size - 1)
        if abs(cum[i] - nelectrons) <= tol and i + 1 < se.size:
            j = int(np.searchsorted(se, se[i], side="right"))  # first state above the filled
            if j < se.size:
                return float(0.5 * (se[i] + se[j]))
        return float(se[i])
    if smearing < 0:
        raise InputError("smearing", f"must be >= 0, got {smearing}")
    if method == "fermi-dirac":

        def occ(z: np.ndarray) -> np.ndarray:
            return expit(-z)
    elif method == "gaussian":

        def occ(z: np.ndarray) -> np.ndarray:
            return 0.5 * erfc(z)
    else:
        raise InputError("method", f"must be 'fermi-dirac' or 'gaussian', got {method!r}")
    lo = float(e.min()) - 50 * smearing
    hi = float(e.max()) + 50 * smearing
    for _ in range(200):
        mu = 0.5 * (lo + hi)
        count = float((occ((e - mu) / smearing) * w[:, None]).sum())
        if count < nelectrons:
            lo = mu
        else:
            hi = mu
        if hi - lo < 1e-14 * max(1.0, abs(mu)):
            break
    return 0.5 * (lo + hi)


__all__ = ["dos", "fermi_level", "integrated_dos"]
