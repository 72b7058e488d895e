"""Graph matrices as entries of one block-diagonal matrix over all nodes, and the three
ways of handing them to the core: one padded ``(G, n_max, n_max)`` batch, a ragged list of
dense ``(n_g, n_g)`` blocks (memory ``sum n_g^2``), or sparse blocks (memory ``O(nnz)``)."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..core.domain import InputError, mirror_exact
from ._layout import Edges, Layout, check_normalization


def group_order(
    ids: torch.Tensor, count: int, host: bool | None = None
) -> tuple[torch.Tensor, list[int]]:
    """A stable order of ``ids`` (``(m,)`` group of each item, in ``[0, count)``) and the
    ``count + 1`` bounds of each group in it. On the CPU (``host``, default: ``ids`` is
    there) by NumPy's merge sort, which takes the sorted runs the entries come in (170,000
    entries of a D&D-like batch: 0.3 ms against torch's 2.1 ms).

    >>> order, bounds = group_order(torch.tensor([1, 0, 1, 2]), 4)
    >>> order.tolist(), bounds
    ([1, 0, 2, 3], [0, 1, 3, 4, 4])
    """
    if ids.device.type == "cpu" if host is None else host:
        values = ids.cpu().numpy()
        at = np.argsort(values, kind="stable")
        bounds = np.searchsorted(values[at], np.arange(count + 1)).tolist()
        return torch.from_numpy(at).to(ids.device), bounds
    order = torch.argsort(ids, stable=True)
    marks = torch.arange(count + 1, device=ids.device, dtype=ids.dtype)
    return order, torch.searchsorted(ids[order], marks).tolist()


@dataclass(frozen=True)
class Entries:
    """COO entries ``(rows, cols, values)`` in global node indices, duplicates summed.

    Every entry joins two nodes of one graph, so the matrix is block diagonal with one
    block per graph (``layout``).
    """

    layout: Layout
    rows: torch.Tensor
    cols: torch.Tensor
    values: torch.Tensor

    def padded(self) -> torch.Tensor:
        """``(G, n_max, n_max)``, zero-padded (the one-call path for similar sizes)."""
        lay = self.layout
        out = self.values.new_zeros((lay.num_graphs, lay.n_max, lay.n_max))
        index = (lay.batch[self.rows], lay.local[self.rows], lay.local[self.cols])
        return out.index_put_(index, self.values, accumulate=True)

    def padded_subset(self, graphs: Sequence[int]) -> torch.Tensor:
        """``(len(graphs), n, n)`` zero-padded blocks of ``graphs``, ``n`` their largest size."""
        lay = self.layout
        entry_slot, _ = self._subset(graphs)
        keep = entry_slot >= 0
        index = torch.as_tensor(list(graphs), dtype=torch.long, device=lay.counts.device)
        n = int(lay.counts[index].max()) if len(graphs) else 0
        out = self.values.new_zeros((len(graphs), n, n))
        r, c = self.rows[keep], self.cols[keep]
        return out.index_put_(
            (entry_slot[keep], lay.local[r], lay.local[c]), self.values[keep], accumulate=True
        )

    def _subset(self, graphs: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """Entries of ``graphs`` (a boolean over entries) and each graph's slot."""
        lay = self.layout
        slot = torch.full((lay.num_graphs,), -1, dtype=torch.long, device=self.rows.device)
        slot[torch.as_tensor(list(graphs), dtype=torch.long, device=slot.device)] = torch.arange(
            len(graphs), device=slot.device
        )
        return slot[lay.batch[self.rows]], slot

    @functools.cached_property
    def _by_graph(self) -> tuple[torch.Tensor, list[int]]:
        """The entries' positions ordered by graph, and where each graph's begin: computed
        once, so that a call on a few graphs reads only their entries."""
        return group_order(self.layout.batch[self.rows], self.layout.num_graphs)

    def dense_blocks(self, graphs: Sequence[int]) -> list[torch.Tensor]:
        """Dense ``(n_g, n_g)`` blocks of ``graphs``: views of one buffer of ``sum n_g^2``.

        The work is that of ``graphs``' own entries (the overlapped path cuts the dense
        graphs into a dozen calls; each one used to select from all the batch's entries,
        ~5 ms a call on the D&D-like batch)."""
        lay = self.layout
        dev = self.rows.device
        counts = lay.counts[torch.as_tensor(list(graphs), dtype=torch.long)].tolist()
        sizes = [n * n for n in counts]
        starts = [0, *itertools.accumulate(sizes)]
        flat = self.values.new_zeros(starts[-1])
        order, bounds = self._by_graph
        if graphs:
            sel = torch.cat([order[bounds[g] : bounds[g + 1]] for g in graphs])
            lengths = torch.tensor([bounds[g + 1] - bounds[g] for g in graphs], device=dev)
            slot = torch.repeat_interleave(torch.arange(len(graphs), device=dev), lengths)
            offset = torch.tensor(starts[:-1], dtype=torch.long, device=dev)[slot]
            n_of = torch.tensor(counts, dtype=torch.long, device=dev)[slot]
            r, c = lay.local[self.rows[sel]], lay.local[self.cols[sel]]
            flat.index_put_((offset + r * n_of + c,), self.values[sel], accumulate=True)
        return [flat[starts[i] : starts[i + 1]].view(n, n) for i, n in enumerate(counts)]

    def scipy_blocks(self, graphs: Sequence[int]) -> list[Any]:
        """SciPy CSR ``(n_g, n_g)`` blocks of ``graphs`` (duplicates summed), memory
        ``O(nnz)``: the CPU form of :meth:`sparse_blocks`, built in NumPy (no torch sort,
        no thread team per step) and taken by the core's sparse path as it is."""
        import scipy.sparse as sp

        lay = self.layout
        rows, cols = self.rows.numpy(), self.cols.numpy()
        vals = self.values.resolve_conj().numpy()
        local, ptr = lay.local.numpy(), lay.ptr.tolist()
        if lay.num_graphs == 1:  # one graph: its entries are all the entries
            n = int(ptr[1])
            return [sp.csr_matrix((vals, (rows, cols)), shape=(n, n))]
        at, bounds = self._by_graph
        order = at.numpy()
        out = []
        for g in graphs:
            sel = order[bounds[g] : bounds[g + 1]]
            n = int(ptr[g + 1] - ptr[g])
            r, c = local[rows[sel]], local[cols[sel]]
            out.append(sp.csr_matrix((vals[sel], (r, c)), shape=(n, n)))
        return out

    def sparse_blocks(self, graphs: Sequence[int]) -> list[torch.Tensor]:
        """Sparse COO ``(n_g, n_g)`` blocks of ``graphs`` (coalesced), memory ``O(nnz)``."""
        lay = self.layout
        order, bounds = self._by_graph
        counts = lay.counts[torch.as_tensor(list(graphs), dtype=torch.long)].tolist()
        out = []
        for g, n in zip(graphs, counts, strict=True):
            sel = order[bounds[g] : bounds[g + 1]]
            index = torch.stack([lay.local[self.rows[sel]], lay.local[self.cols[sel]]])
            mat = torch.sparse_coo_tensor(index, self.values[sel], (n, n), check_invariants=False)
            out.append(mat.coalesce())
        return out


def laplacian_entries(
    edges: Edges, normalization: str | None, *, isolated_one: bool = False
) -> tuple[Entries, torch.Tensor]:
    """The Laplacian's entries straight from the edge list, and the ``(N,)`` degrees.

    The conventions of :func:`spectra.graph.laplacian` (isolated nodes: zero row), or with
    ``isolated_one`` PyG's ``get_laplacian`` (``L_ii = 1`` at isolated nodes in the
    normalized Laplacians).
    """
    check_normalization(normalization)
    deg = edges.degree()
    src, dst, w = edges.src, edges.dst, edges.weight
    if normalization is None:
        values, diag = torch.rsub(w, 0.0), deg
    else:
        check_degree(deg, edges.layout)
        connected = deg > 0
        inv_sqrt = torch.where(connected, deg, torch.ones_like(deg)).rsqrt() * connected
        # the product of the two node factors first: exactly symmetric for symmetric weights
        pair = (
            inv_sqrt[src] * inv_sqrt[dst]
            if normalization == "sym"
            else (inv_sqrt[src] * inv_sqrt[src])
        )
        values = torch.rsub(w * pair, 0.0)
        diag = torch.ones_like(deg) if isolated_one else connected.to(w.dtype)
    nodes = torch.arange(edges.layout.num_nodes, device=src.device)
    entries = Entries(
        edges.layout, torch.cat([src, nodes]), torch.cat([dst, nodes]), torch.cat([values, diag])
    )
    return entries, deg


def check_degree(deg: torch.Tensor, layout: Layout | None = None) -> None:
    """Normalized Laplacians need non-negative weighted degrees (graph indices named)."""
    if bool((deg < 0).any()):
        bad = (deg < 0).nonzero().squeeze(-1)
        graphs = None
        if layout is not None and deg.ndim == 1:
            graphs = [(g,) for g in torch.unique(layout.batch[bad]).tolist()]
        raise InputError(
            "edge_weight",
            f"gives a negative weighted degree at node(s) {bad.tolist()[:10]}: normalized "
            "Laplacians need non-negative degrees",
            graphs,
        )


def _pairs(edges: Edges) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every node pair joined by an edge in either direction, with both weights:
    ``(u, v, A_uv, A_vu)`` (duplicate edges summed)."""
    n = max(edges.layout.num_nodes, 1)
    src, dst, w = edges.src, edges.dst, edges.weight
    keys = torch.cat([src * n + dst, dst * n + src])
    uniq, inv = torch.unique(keys, return_inverse=True)
    m = src.numel()
    fwd = w.new_zeros(uniq.numel()).index_add(0, inv[:m], w)
    bwd = w.new_zeros(uniq.numel()).index_add(0, inv[m:], w)
    return uniq // n, uniq % n, fwd, bwd


def magnetic_entries(
    edges: Edges, q: float, normalization: str | None, symmetrize: str
) -> tuple[Entries, torch.Tensor]:
    """Entries of the magnetic Laplacian (complex128 for float64 weights) and the degrees
    of ``A_s`` (see :func:`spectra.graph.magnetic_laplacian`)."""
    u, v, a_uv, a_vu = _pairs(edges)
    a_s = torch.maximum(a_uv, a_vu) if symmetrize == "max" else (a_uv + a_vu) / 2
    phase = torch.polar(torch.ones_like(a_uv), (2 * math.pi * q) * (a_uv - a_vu))
    deg = a_s.new_zeros(edges.layout.num_nodes).index_add(0, u, a_s)
    if normalization is None:
        off, diag = a_s, deg
    else:
        check_degree(deg, edges.layout)
        connected = deg > 0
        inv_sqrt = torch.where(connected, deg, torch.ones_like(deg)).rsqrt() * connected
        off, diag = inv_sqrt[u] * a_s * inv_sqrt[v], connected.to(a_s.dtype)
    nodes = torch.arange(edges.layout.num_nodes, device=u.device)
    values = torch.cat([torch.rsub(off * phase, 0.0), diag.to(phase.dtype)])
    return Entries(edges.layout, torch.cat([u, nodes]), torch.cat([v, nodes]), values), deg


def asymmetric_graphs(entries: Entries, tol: float) -> list[int]:
    """Graphs whose matrix is not symmetric (Hermitian) beyond ``tol`` relative.

    Fast paths: on the CPU, the compiled helper's proof that every entry has its mirror
    exactly (:func:`spectra.core.domain.mirror_exact`, from 4,097 entries: the D&D-like
    batch's 133,696 in 2.3 ms against 7.8 ms for SciPy's ``A - A^H``); the entries sorted
    by ``(row, col)`` and by ``(col, row)`` match exactly (an edge list with both
    directions); otherwise duplicates are summed and compared.
    """
    lay = entries.layout
    r, c, x = entries.rows, entries.cols, entries.values
    if x.device.type == "cpu" and x.numel() > 4096:  # proven exactly Hermitian in O(nnz)
        vals = x.detach().resolve_conj().numpy()
        if mirror_exact(max(lay.num_nodes, 1), r.numpy(), c.numpy(), vals):
            return []
    off = r != c
    r, c, x = r[off], c[off], x[off]
    if x.numel() == 0:
        return []
    n = max(lay.num_nodes, 1)
    if lay.num_graphs == 1 and n <= 256:  # one small graph: compare the dense matrix
        dense = x.new_zeros((n, n)).index_put_((r, c), x, accumulate=True)
        if torch.equal(dense, dense.mH):
            return []
        diff = (dense - dense.mH).abs().max()
        return [0] if bool(diff > tol * max(float(dense.abs().max()), 1.0)) else []
    if lay.n_max <= 64 and lay.num_graphs * lay.n_max**2 <= 1 << 22:
        # small graphs: one padded block per graph, compared with its transpose exactly
        # (a few elementwise passes instead of two sorts); a mismatch is judged below
        blocks = x.new_zeros((lay.num_graphs, lay.n_max, lay.n_max))
        blocks.index_put_((lay.batch[r], lay.local[r], lay.local[c]), x, accumulate=True)
        if torch.equal(blocks, blocks.mH):
            return []
    if x.device.type == "cpu" and x.numel() > 65536:  # large: SciPy's O(nnz) transpose
        return _asymmetric_scipy(lay, r, c, x, tol)
    k1, o1 = torch.sort(r * n + c, stable=True)
    k2, o2 = torch.sort(c * n + r, stable=True)
    if torch.equal(k1, k2) and torch.equal(x[o1], x[o2].conj()):
        return []
    uniq, inv = torch.unique(torch.cat([r * n + c, c * n + r]), return_inverse=True)
    m = x.numel()
    diff = x.new_zeros(uniq.numel()).index_add(0, inv[:m], x)
    diff = diff.index_add(0, inv[m:], -x.conj())
    graph = lay.batch[uniq // n]
    scale = (
        x.abs()
        .new_zeros(lay.num_graphs)
        .scatter_reduce(0, lay.batch[r], x.abs(), "amax", include_self=False)
    )
    bad = diff.abs() > tol * scale.clamp_min(1.0)[graph]
    return torch.unique(graph[bad]).tolist()


def _asymmetric_scipy(
    lay: Layout, r: torch.Tensor, c: torch.Tensor, x: torch.Tensor, tol: float
) -> list[int]:
    """:func:`asymmetric_graphs` through one SciPy CSR matrix (duplicates summed)."""
    import scipy.sparse as sp

    n = max(lay.num_nodes, 1)
    vals = x.resolve_conj().numpy()
    a = sp.csr_matrix((vals, (r.numpy(), c.numpy())), shape=(n, n))
    diff = (a - a.conj().T).tocoo()
    if not diff.nnz or not np.any(diff.data):
        return []
    batch = lay.batch.numpy()
    row_max = np.zeros(n)
    np.maximum.at(row_max, r.numpy(), np.abs(vals))
    scale = np.zeros(lay.num_graphs)
    np.maximum.at(scale, batch[: lay.num_nodes], row_max[: lay.num_nodes])
    graph = batch[diff.row]
    bad = np.abs(diff.data) > tol * np.maximum(scale, 1.0)[graph]
    return np.unique(graph[bad]).tolist()


def require_undirected(entries: Entries, tol: float = 1e-10) -> None:
    """Refuse directed graphs (asymmetric weights), naming them."""
    bad = asymmetric_graphs(entries, tol)
    if bad:
        raise directed_error(bad)


def directed_error(graphs: Sequence[int]) -> InputError:
    """The error for directed graphs, naming them."""
    return InputError(
        "graph",
        "is directed (edge weights not symmetric); spectral features need undirected "
        "graphs: use torch_geometric.utils.to_undirected first, or the magnetic Laplacian "
        "PE for directed graphs (spectra.graph.magnetic_laplacian_pe, MagneticLaplacianPE)",
        [(g,) for g in graphs],
    )
