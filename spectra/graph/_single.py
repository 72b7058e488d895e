"""The per-``Data`` path of ``LaplacianPE``: one small graph on the CPU, as a dataset
``transform=`` applies it, without the layouts, masks and parts a ``Batch`` needs.

The graph is assembled and read in NumPy (one small dense matrix: each step is a NumPy
call of about a microsecond where a torch op costs several), solved by one
:func:`spectra.eigh` call on the dense Laplacian, with the same formulas, conventions and
gauge as the batched path (tested against it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..core import eigh, fix_gauge
from ..core.domain import InputError
from ._assemble import check_degree, directed_error
from ._layout import check_normalization
from ._sparse_path import SPARSE_FROM, split_options

#: one ``Data`` of at most this many nodes takes the direct path (above, the solve
#: dominates and the batched path's bookkeeping costs nothing noticeable; with the lowest
#: pairs only, a 300-node graph took 4.1 ms here against 5.1 ms on the batched path)
SINGLE_MAX_N = 512


class SingleSpectrum:
    """Eigenpairs of one graph's Laplacian (NumPy; all of them, or the lowest asked for),
    its components and degrees."""

    def __init__(self, w: np.ndarray, v: np.ndarray, comps: int, deg: np.ndarray) -> None:
        self.w, self.v, self.comps, self.deg = w, v, comps, deg


def single_takes(data: Any, device: Any, weight: Any, eigh_options: Any) -> bool:
    """Whether one ``Data`` takes the direct path: small (below the sparse path's size too),
    on the CPU, solved there, and no gradient to carry through the edge weights."""
    n = data.num_nodes
    sparse_from = split_options(eigh_options)[2] if eigh_options else None
    if n is None or n > SINGLE_MAX_N or n == 0 or n >= (sparse_from or SPARSE_FROM):
        return False
    ei = data.edge_index
    if not isinstance(ei, torch.Tensor) or ei.device.type != "cpu":
        return False
    if device is not None and torch.device(device).type != "cpu":
        return False
    return weight is None or (
        isinstance(weight, torch.Tensor)
        and weight.device.type == "cpu"
        and not weight.requires_grad
    )


def _edges(
    edge_index: torch.Tensor, weight: torch.Tensor | None, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise InputError("edge_index", f"must have shape (2, E), got {tuple(edge_index.shape)}")
    if edge_index.is_floating_point() or edge_index.is_complex():
        raise TypeError(f"edge_index must hold integers, got {edge_index.dtype}")
    ei = edge_index.numpy()
    if ei.size and (ei.min() < 0 or ei.max() >= n):
        bad = ((ei < 0) | (ei >= n)).any(0).nonzero()[0]
        node = int(ei.min()) if ei.min() < 0 else int(ei.max())
        raise InputError(
            "edge_index",
            f"refers to node {node}, outside [0, num_nodes={n}), in edge(s) {bad.tolist()[:10]}",
        )
    src, dst = ei[0], ei[1]
    if weight is None:
        w = np.ones(src.size)
    else:
        if weight.ndim != 1 or weight.numel() != src.size:
            raise InputError(
                "edge_weight", f"must have shape (E,) = ({src.size},), got {tuple(weight.shape)}"
            )
        if weight.is_complex():
            raise TypeError("edge_weight must be real")
        w = weight.detach().numpy().astype(np.float64, copy=False)
        if not np.isfinite(w).all():
            bad = (~np.isfinite(w)).nonzero()[0][:5].tolist()
            raise InputError("edge_weight", f"holds NaN/Inf at edges {bad}")
    keep = src != dst
    return src[keep], dst[keep], w[keep]


def _components(src: np.ndarray, dst: np.ndarray, w: np.ndarray, n: int) -> int:
    """Connected components of one small graph (edges of nonzero weight, as the batched
    path counts them): a depth-first search in plain Python, about 15 us at 25 nodes (a
    SciPy round trip costs ~300 us, boolean matrix squaring ~50 us)."""
    nz = w != 0
    neighbours: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(src[nz].tolist(), dst[nz].tolist(), strict=True):
        neighbours[a].append(b)
        neighbours[b].append(a)
    seen = [False] * n
    count = 0
    for start in range(n):
        if seen[start]:
            continue
        count += 1
        seen[start] = True
        stack = [start]
        while stack:
            for v in neighbours[stack.pop()]:
                if not seen[v]:
                    seen[v] = True
                    stack.append(v)
    return count


#: graphs up to this many matrix entries test their symmetry on the dense adjacency (a
#: small buffer: ~5 us at 25 nodes, where sorting the edge list costs ~30); larger ones on
#: the coalesced edge list (a dense adjacency in fresh pages cost ~1.5 ms at 450 nodes)
DENSE_SYMMETRY_MAX_ENTRIES = 1 << 15


def _require_symmetric(flat: np.ndarray, w: np.ndarray, n: int) -> None:
    """The ``directed_error`` unless the weighted adjacency with the edges at the flat
    positions ``flat`` (duplicates summed in edge order) is symmetric: exactly, or within
    ``1e-10`` of its largest entry (the batched path's test)."""
    if n * n <= DENSE_SYMMETRY_MAX_ENTRIES:
        adj: np.ndarray = np.bincount(flat, weights=w, minlength=n * n).reshape(n, n)
        if np.array_equal(adj, adj.T):
            return
    else:
        keys, at = np.unique(flat, return_inverse=True)
        sums = np.bincount(at, weights=w, minlength=keys.size)
        nz = sums != 0
        keys, sums = keys[nz], sums[nz]
        mirrored = (keys % n) * n + keys // n
        order = np.argsort(mirrored)
        if np.array_equal(mirrored[order], keys) and np.array_equal(sums[order], sums):
            return
        adj = np.zeros((n, n))
        adj.ravel()[keys] = sums
    scale = 1e-10 * max(np.abs(adj).max(initial=0.0), 1.0)
    if np.abs(adj - adj.T).max() > scale:
        raise directed_error([0])


def single_spectrum(
    edge_index: torch.Tensor,
    weight: torch.Tensor | None,
    n: int,
    normalization: str | None,
    isolated_one: bool,
    eigh_options: dict[str, Any],
    lowest: int | None = None,
    plus_components: bool = False,
) -> SingleSpectrum:
    """The Laplacian of one graph (the conventions of :func:`spectra.graph.laplacian`) and
    its eigenpairs (``rw``: through ``sym``, scaled by ``D^{-1/2}`` and re-gauged): all of
    them, or with ``lowest`` only the ``lowest`` smallest (plus one per component with
    ``plus_components``), by the core's partial solve where its planner takes one (as the
    batched path's dense graphs: LAPACK's bisection and inverse iteration for those alone,
    at ``n = 150, k = 9`` ~0.6 ms where the whole decomposition costs ~2.5)."""
    check_normalization(normalization)
    src, dst, w = _edges(edge_index, weight, n)
    flat = src * n + dst
    _require_symmetric(flat, w, n)
    deg = np.bincount(src, weights=w, minlength=n)  # edge order, as the batched path sums
    sym = "sym" if normalization == "rw" else normalization
    values = w
    if sym is not None:
        if (deg < 0).any():
            check_degree(torch.from_numpy(deg))
        connected = deg > 0
        inv_sqrt = np.where(connected, 1.0 / np.sqrt(np.where(connected, deg, 1.0)), 0.0)
        # each edge's weight times the product of its two node factors, then summed (as
        # the batched path's entries are), so both paths round alike
        values = w * (inv_sqrt[src] * inv_sqrt[dst])
    # the one dense matrix, duplicates summed in edge order, negated in place (three n^2
    # buffers in fresh pages cost ~4 ms at 450 nodes)
    entries = np.bincount(flat, weights=values, minlength=n * n).astype(np.float64, copy=False)
    lap: np.ndarray = np.subtract(0.0, entries, out=entries).reshape(n, n)
    if sym is None:
        lap[np.diag_indices(n)] += deg
    else:
        lap[np.diag_indices(n)] += 1.0 if isolated_one else connected.astype(np.float64)
    kw: dict[str, Any] = {"check": False}
    if eigh_options:  # the sparse path's keywords do not apply here
        kw = {**kw, **split_options(eigh_options)[0]}
    comps = _components(src, dst, w, n)
    wanted = None if lowest is None else lowest + (comps if plus_components else 0)
    if wanted is not None and wanted < n:
        kw["k"] = wanted
    vals, vecs = eigh(lap, **kw)
    if normalization == "rw":
        scale = 1.0 / np.sqrt(np.where(deg > 0, deg, 1.0))
        vecs = fix_gauge(torch.from_numpy(vecs * scale[:, None])).numpy()
    return SingleSpectrum(vals, vecs, comps, deg)


def single_columns(
    spec: SingleSpectrum, first: int, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Columns ``first .. first + k - 1``: ``(pe (n, k), mask (k,), eigenvalues (k,))``."""
    n = spec.v.shape[0]
    take = max(min(k, n - first), 0)
    pe = np.zeros((n, k))
    vals = np.zeros(k)
    pe[:, :take] = spec.v[:, first : first + take]
    vals[:take] = spec.w[first : first + take]
    return pe, np.arange(k) < take, vals


def single_heat(spec: SingleSpectrum, times: tuple[float, ...], rw: bool) -> np.ndarray:
    """``(n, T)`` ``diag(exp(-t L))`` from all eigenpairs (``rw``: the ``sym`` vectors)."""
    t = np.asarray(times, dtype=np.float64)
    if not np.isfinite(t).all() or (t < 0).any():
        raise InputError("heat_times", f"must be finite and >= 0, got {t.tolist()}")
    v = spec.v * np.sqrt(np.where(spec.deg > 0, spec.deg, 1.0))[:, None] if rw else spec.v
    return (v * v) @ np.exp(-t[None, :] * spec.w[:, None])
