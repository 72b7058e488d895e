"""k-points: Monkhorst-Pack grids and band paths through named high-symmetry points."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..core.domain import InputError

_F = 1.0 / 3.0

#: Canonical lattices (rows, unit scale) and their special points (reduced coordinates of
#: that canonical basis) with a default path. Other bases of the same lattice are matched by
#: an integer unimodular change of basis, so any primitive choice works.
CANONICAL: dict[str, tuple[np.ndarray, dict[str, Sequence[float]], str]] = {
    "chain": (np.eye(1), {"G": [0.0], "X": [0.5]}, "X,G,X"),
    "square": (np.eye(2), {"G": [0, 0], "X": [0.5, 0], "M": [0.5, 0.5]}, "G,X,M,G"),
    "hexagonal2d": (
        np.array([[1.0, 0.0], [0.5, np.sqrt(3) / 2]]),
        {"G": [0, 0], "K": [2 * _F, _F], "M": [0.5, 0.5]},
        "G,K,M,G",
    ),
    "cubic": (
        np.eye(3),
        {"G": [0, 0, 0], "X": [0, 0.5, 0], "M": [0.5, 0.5, 0], "R": [0.5, 0.5, 0.5]},
        "G,X,M,G,R,X|M,R",
    ),
    "fcc": (
        0.5 * np.array([[0.0, 1, 1], [1, 0, 1], [1, 1, 0]]),
        {
            "G": [0, 0, 0],
            "X": [0.5, 0, 0.5],
            "L": [0.5, 0.5, 0.5],
            "W": [0.5, 0.25, 0.75],
            "K": [0.375, 0.375, 0.75],
            "U": [0.625, 0.25, 0.625],
        },
        "G,X,W,K,G,L,U,W,L,K|U,X",
    ),
    "bcc": (
        0.5 * np.array([[-1.0, 1, 1], [1, -1, 1], [1, 1, -1]]),
        {"G": [0, 0, 0], "H": [0.5, -0.5, 0.5], "P": [0.25, 0.25, 0.25], "N": [0, 0, 0.5]},
        "G,H,N,G,P,H|P,N",
    ),
}

#: Points for lattices with a free aspect ratio, in the reduced coordinates of an
#: orthogonal (or hexagonal-in-plane) basis with the odd axis last.
_RECT = {"G": [0, 0], "X": [0.5, 0], "Y": [0, 0.5], "S": [0.5, 0.5]}
_TETRA = {
    "G": [0, 0, 0],
    "X": [0, 0.5, 0],
    "M": [0.5, 0.5, 0],
    "Z": [0, 0, 0.5],
    "R": [0, 0.5, 0.5],
    "A": [0.5, 0.5, 0.5],
}
_ORTHO = {
    "G": [0, 0, 0],
    "X": [0.5, 0, 0],
    "Y": [0, 0.5, 0],
    "Z": [0, 0, 0.5],
    "S": [0.5, 0.5, 0],
    "U": [0.5, 0, 0.5],
    "T": [0, 0.5, 0.5],
    "R": [0.5, 0.5, 0.5],
}
_HEX3: dict[str, list[float]] = {
    "G": [0, 0, 0],
    "M": [0.5, 0.5, 0],
    "K": [2 * _F, _F, 0],
    "A": [0, 0, 0.5],
    "L": [0.5, 0.5, 0.5],
    "H": [2 * _F, _F, 0.5],
}

_ALIASES = {"Γ": "G", "GAMMA": "G", "\\GAMMA": "G"}


class KPath(NamedTuple):
    """A band path: reduced ``k`` ``(nk, dim)``, cumulative Cartesian ``distance`` ``(nk,)``,
    tick positions (distances of the named points) and their ``labels``."""

    k: np.ndarray
    distance: np.ndarray
    ticks: np.ndarray
    labels: list[str]

    def __repr__(self) -> str:
        path = "-".join(self.labels)
        return (
            f"KPath({path}, {len(self.k)} k-points x {self.k.shape[-1]} reduced coordinates, "
            f"length {float(self.distance[-1]) if len(self.distance) else 0.0:.4g})"
        )


def monkhorst_pack(
    grid: Sequence[int] | int, *, gamma_centered: bool = False, dim: int | None = None
) -> np.ndarray:
    """A Monkhorst-Pack grid of reduced k-points, ``(prod(grid), len(grid))``, C order
    (the last direction fastest, so ``k.reshape(*grid, dim)`` recovers the grid).

    ``k_i = (2 r - q - 1) / (2 q)``, ``r = 1..q`` (symmetric around Gamma, which it contains
    for odd ``q``); ``gamma_centered=True`` gives ``r / q``, ``r = 0..q-1``.

    >>> monkhorst_pack([2])
    array([[-0.25],
           [ 0.25]])
    """
    if isinstance(grid, (int, np.integer)):
        grid = [int(grid)] * (1 if dim is None else dim)
    sizes = [int(q) for q in grid]
    if any(q < 1 for q in sizes) or any(q != g for q, g in zip(sizes, grid, strict=True)):
        raise InputError("grid", f"sizes must be positive integers, got {list(grid)}")
    axes = [
        np.arange(q) / q if gamma_centered else (2 * np.arange(1, q + 1) - q - 1) / (2 * q)
        for q in sizes
    ]
    if not axes:
        return np.zeros((1, 0))
    return np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, len(sizes))


def _unimodular(dim: int) -> np.ndarray:
    cands = np.array(list(itertools.product((-1, 0, 1), repeat=dim * dim))).reshape(-1, dim, dim)
    dets = np.round(np.linalg.det(cands))
    return cands[np.abs(dets) == 1]


def _match(metric: np.ndarray, canon: np.ndarray) -> np.ndarray | None:
    """An integer ``M`` with ``M G_c M^T = s G`` (same lattice up to scale), or None."""
    dim = metric.shape[0]
    gc = canon @ canon.T
    cands = _unimodular(dim)
    trial = cands @ gc @ cands.transpose(0, 2, 1)
    scale = np.trace(metric) / np.trace(trial, axis1=1, axis2=2)
    err = np.abs(trial * scale[:, None, None] - metric).max((1, 2)) / np.abs(metric).max()
    ok = np.flatnonzero(err < 1e-6)
    if not ok.size:
        return None
    # among equivalent bases prefer the one closest to the identity
    dist = np.abs(cands[ok] - np.eye(dim)).sum((1, 2))
    return cands[ok[int(np.argmin(dist))]]


def _aspect_points(lattice: np.ndarray) -> tuple[str, dict[str, Any], str] | None:
    g = lattice @ lattice.T
    tol = 1e-6 * np.abs(g).max()
    dim = lattice.shape[0]
    if dim == 2 and abs(g[0, 1]) < tol:
        return "rectangular", _RECT, "G,X,S,Y,G,S"
    if dim != 3 or abs(g[0, 2]) > tol or abs(g[1, 2]) > tol:
        return None
    inplane = _match(g[:2, :2], CANONICAL["hexagonal2d"][0])
    if inplane is not None:
        pts = {name: [*(inplane @ np.asarray(p[:2])), p[2]] for name, p in _HEX3.items()}
        return "hexagonal", pts, "G,M,K,G,A,L,H,A|L,M|K,H"
    if abs(g[0, 1]) < tol:
        if abs(g[0, 0] - g[1, 1]) < tol:
            return "tetragonal", _TETRA, "G,X,M,G,Z,R,A,Z|X,R|M,A"
        return "orthorhombic", _ORTHO, "G,X,S,Y,G,Z,U,R,T,Z|Y,T|U,X|S,R"
    return None


def special_points(lattice: Any) -> tuple[str, dict[str, np.ndarray], str]:
    """``(kind, {name: reduced k}, default path)`` for the lattice (rows), detected from its
    metric: chain, square, rectangular, hexagonal (2D), cubic, fcc, bcc, hexagonal (3D),
    tetragonal, orthorhombic. ``G`` is Gamma. Raises ValueError for other lattices."""
    lat = np.atleast_2d(np.asarray(lattice, dtype=float))
    dim = lat.shape[0]
    metric = lat @ lat.T
    for kind, (canon, pts, path) in CANONICAL.items():
        if canon.shape[0] != dim:
            continue
        mat = _match(metric, canon)
        if mat is not None:
            return kind, {n: mat @ np.asarray(p, float) for n, p in pts.items()}, path
    found = _aspect_points(lat)
    if found is not None:
        kind, pts, path = found
        return kind, {n: np.asarray(p, float) for n, p in pts.items()}, path
    raise InputError(
        "special_points:", "no standard high-symmetry points for this lattice: pass points={...}"
    )


def _normalize(name: str) -> str:
    key = name.strip()
    return _ALIASES.get(key.upper(), _ALIASES.get(key, key))


def _label(name: str) -> str:
    return "Γ" if name == "G" else name


def kpath(
    lattice: Any,
    path: str | Sequence[Any] | None = None,
    npoints: int = 100,
    *,
    points: Mapping[str, Any] | None = None,
    convention: str = "spectra",
) -> KPath:
    """A band path through named points, evenly spaced in Cartesian distance.

    Parameters
    ----------
    lattice : ``(dim, dim)`` lattice vectors (rows), or a :class:`Model` (its periodic part).
    path : ``"G,K,M,G"`` (``|`` breaks the path: ``"G,X|U,G"``), a list of names, or a list
        of reduced coordinates. Default: the standard path of the detected lattice.
    npoints : total number of k-points (at least one per named point).
    points : extra or overriding named points ``{name: reduced k}``.
    convention : ``"spectra"`` (default): distances are Cartesian ``|k|`` with the
        ``2 pi`` (``1/length``), the points spread over the legs by length.
        ``"pythtb"``: PythTB's ``k_path``, exactly: its ``k_dist`` has no ``2 pi``
        factor, each node sits at index ``round(d_node / d_total * (npoints - 1))`` and the
        legs are filled linearly (so ``(k, distance, ticks)`` equal PythTB's ``(k_vec,
        k_dist, k_node)``); no path breaks.

    Returns
    -------
    KPath ``(k, distance, ticks, labels)``; a break puts both labels on one tick ("K|U").

    Examples
    --------
    >>> p = kpath([[1.0, 0.0], [0.5, 3 ** 0.5 / 2]], "G,K,M,G", 31)
    >>> p.labels
    ['Γ', 'K', 'M', 'Γ']
    >>> p.k.shape
    (31, 2)
    >>> q = kpath([[1.0, 0.0], [0.5, 3 ** 0.5 / 2]], "G,K,M,G", 31, convention="pythtb")
    >>> bool(abs(p.ticks[-1] / q.ticks[-1] - 2 * 3.141592653589793) < 1e-12)
    True
    """
    if convention not in ("spectra", "pythtb"):
        raise InputError("convention", f"must be 'spectra' or 'pythtb', got {convention!r}")
    lat = _lattice_of(lattice)
    dim = lat.shape[0]
    named: dict[str, np.ndarray] = {}
    default = None
    try:
        _, named, default = special_points(lat)
    except ValueError:
        if path is None or (isinstance(path, str) and points is None):
            raise
    for name, p in (points or {}).items():
        named[_normalize(name)] = np.asarray(p, float)
    if path is None:
        path = default
    segments = _parse_path(path, named, dim)
    metric = _k_metric(lattice, lat)
    if convention == "pythtb":
        return _pythtb_path(segments, npoints, metric)
    lengths = [
        2 * np.pi * float(np.sqrt((b - a) @ metric @ (b - a)))
        for seg in segments
        for (_, a), (_, b) in itertools.pairwise(seg)
    ]
    nnodes = sum(len(seg) for seg in segments)
    if npoints < nnodes:
        raise InputError(
            "kpath:", f"npoints={npoints} is less than the {nnodes} named points of the path"
        )
    total = sum(lengths) or 1.0
    free = npoints - nnodes
    # points strictly inside each leg, proportional to its length (largest remainders)
    share = np.array(lengths) / total * free
    inner = np.floor(share).astype(int)
    left = free - inner.sum()
    inner[np.argsort(-(share - inner), kind="stable")[:left]] += 1
    ks: list[np.ndarray] = []
    dist: list[np.ndarray] = []
    ticks: list[float] = []
    labels: list[str] = []
    pos = 0.0
    leg = 0
    for s, seg in enumerate(segments):
        for i, (name, a) in enumerate(seg):
            if i == 0:
                if s > 0:
                    labels[-1] = f"{labels[-1]}|{_label(name)}"
                else:
                    ticks.append(pos)
                    labels.append(_label(name))
                ks.append(a[None])
                dist.append(np.array([pos]))
                continue
            prev = seg[i - 1][1]
            m = inner[leg] + 1
            t = np.arange(1, m + 1) / m
            ks.append(prev + t[:, None] * (a - prev))
            dist.append(pos + t * lengths[leg])
            pos += lengths[leg]
            ticks.append(pos)
            labels.append(_label(name))
            leg += 1
    return KPath(np.concatenate(ks), np.concatenate(dist), np.array(ticks), labels)


def _k_metric(lattice: Any, square: np.ndarray) -> np.ndarray:
    """``inv(L L^T)`` of the periodic lattice vectors ``L`` (full Cartesian rows for a
    model, as PythTB): ``|dk|^2 = dk^T inv(L L^T) dk / (2 pi)^2`` for reduced ``dk``."""
    if hasattr(lattice, "lattice") and hasattr(lattice, "periodic"):
        rows = np.asarray(lattice.lattice, float)[list(lattice.periodic)]
    else:
        rows = square
    return np.linalg.inv(rows @ rows.T)


def _pythtb_path(
    segments: list[list[tuple[str, np.ndarray]]], npoints: int, metric: np.ndarray
) -> KPath:
    """PythTB's ``k_path`` placement and distances (see :func:`kpath`)."""
    if len(segments) != 1:
        raise InputError("pythtb_path:", "convention='pythtb' does not support path breaks ('|')")
    names = [name for name, _ in segments[0]]
    nodes = np.array([k for _, k in segments[0]])
    if npoints < len(nodes):
        raise InputError(
            "pythtb_path:", f"npoints={npoints} is less than the {len(nodes)} nodes of the path"
        )
    steps = np.diff(nodes, axis=0)
    legs = np.sqrt(np.einsum("ni,ij,nj->n", steps, metric, steps))
    dnode = np.concatenate([[0.0], np.cumsum(legs)])
    inner = [round(float(d / dnode[-1] * (npoints - 1))) for d in dnode[1:-1]]
    index = [0, *inner, npoints - 1]
    k = np.zeros((npoints, nodes.shape[1]))
    dist = np.zeros(npoints)
    k[0] = nodes[0]
    for n in range(1, len(nodes)):
        lo, hi = index[n - 1], index[n]
        frac = (np.arange(lo, hi + 1) - lo) / (hi - lo) if hi > lo else np.zeros(1)
        k[lo : hi + 1] = nodes[n - 1] + frac[:, None] * (nodes[n] - nodes[n - 1])
        dist[lo : hi + 1] = dnode[n - 1] + frac * (dnode[n] - dnode[n - 1])
    return KPath(k, dist, dnode, [_label(n) for n in names])


def _lattice_of(lattice: Any) -> np.ndarray:
    if hasattr(lattice, "lattice") and hasattr(lattice, "periodic"):
        # the periodic lattice vectors (full Cartesian rows) as a square matrix with the same
        # lengths and angles: its Cholesky factor (special points only read the metric), so
        # that a layer's orientation in space does not matter
        rows = np.asarray(lattice.lattice, float)[list(lattice.periodic)]
        return np.linalg.cholesky(rows @ rows.T)
    lat = np.atleast_2d(np.asarray(lattice, dtype=float))
    if lat.ndim != 2 or lat.shape[0] != lat.shape[1]:
        raise InputError("lattice", f"must be (dim, dim), got shape {lat.shape}")
    return lat


def _parse_path(
    path: Any, named: Mapping[str, np.ndarray], dim: int
) -> list[list[tuple[str, np.ndarray]]]:
    if isinstance(path, str):
        raw = [
            [_normalize(n) for n in part.split(",") if n.strip()]
            for part in path.replace(" ", "").split("|")
        ]
    else:
        raw = [list(path)]
    segments: list[list[tuple[str, np.ndarray]]] = []
    for part in raw:
        seg = []
        for item in part:
            if isinstance(item, str):
                key = _normalize(item)
                if key not in named:
                    raise InputError(
                        "parse_path:", f"unknown k-point {item!r}; known: {sorted(named)}"
                    )
                seg.append((key, np.asarray(named[key], float)))
            else:
                arr = np.asarray(item, float).reshape(-1)
                if arr.shape != (dim,):
                    raise InputError("k-point", f"{item!r} must have {dim} reduced coordinates")
                seg.append((np.array2string(arr, precision=3), arr))
        if not seg:
            raise InputError("parse_path:", f"empty segment in path {path!r}")
        segments.append(seg)
    if sum(len(s) for s in segments) < 2:
        raise InputError("parse_path:", "a path needs at least two points")
    return segments


__all__ = ["CANONICAL", "KPath", "kpath", "monkhorst_pack", "special_points"]
