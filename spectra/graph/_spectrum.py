"""The eigenpairs of many graph Laplacians: similar small graphs in one padded core call,
the rest through the core's ragged path (memory ``sum n_g^2``, never ``G n_max^2``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from typing import Any, NamedTuple

import numpy as np
import torch

from ..core import eigh, fix_gauge
from ._assemble import Entries, laplacian_entries, require_undirected
from ._layout import (
    Edges,
    Layout,
    check_normalization,
    glue_threads,
    graph_input,
    to_numpy_fields,
)
from ._parts import GraphSpectra, Part
from ._sparse_path import (
    DENSE_BYTES_PER_ENTRY,
    ONE_THREAD_MAX_N,
    Lowest,
    dense_wanted,
    partial_solves,
    sparse_candidates,
    sparse_parts,
    split_options,
)


class LaplacianSpectrum(NamedTuple):
    """Padded eigendecomposition of a batch of graph Laplacians.

    ``eigenvalues`` ``(G, n_max)`` ascending per graph; ``eigenvectors`` ``(G, n_max, n_max)``
    (columns). Column ``j`` of graph ``g`` is real for ``j < num_nodes[g]``; padded columns
    hold value 0 and a zero vector, padded rows are zero. ``num_components`` counts the
    connected components of each graph (isolated nodes included), which is the
    multiplicity of the eigenvalue 0. ``degree`` is ``(G, n_max)``. ``normalization`` is
    the Laplacian's (``"rw"`` eigenvectors are ``D``-orthonormal, the others orthonormal).
    """

    eigenvalues: torch.Tensor
    eigenvectors: torch.Tensor
    num_nodes: torch.Tensor
    num_components: torch.Tensor
    degree: torch.Tensor
    normalization: str | None = "sym"

    def column_mask(self) -> Any:
        """``(G, n_max)`` bool: True for the real (non-padding) eigenpairs."""
        w = torch.as_tensor(self.eigenvalues)
        ar = torch.arange(w.shape[-1], device=w.device)
        mask = ar < torch.as_tensor(self.num_nodes).to(w.device).unsqueeze(-1)
        return mask.numpy() if isinstance(self.eigenvalues, np.ndarray) else mask


def edge_components(edges: Edges) -> tuple[torch.Tensor, torch.Tensor]:
    """Connected components per graph ``(G,)`` and the component of every node ``(N,)``
    from an edge list (edges of nonzero weight).

    Combinatorial (SciPy's ``csgraph.connected_components`` on the whole batch at once),
    not a threshold on small eigenvalues; isolated nodes are components of their own.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    layout = edges.layout
    device = edges.weight.device
    n_total = layout.num_nodes
    if n_total == 0:
        empty = torch.zeros(0, dtype=torch.long, device=device)
        return torch.zeros(layout.num_graphs, dtype=torch.long, device=device), empty
    nz = edges.weight != 0
    if layout.num_graphs == 1 and n_total <= REACH_MAX_N:
        return _reach_components(edges.src[nz], edges.dst[nz], n_total)
    if layout.n_max <= PROPAGATE_MAX_N:
        return _propagated_components(edges.src[nz], edges.dst[nz], layout)
    rows, cols = edges.src[nz].cpu().numpy(), edges.dst[nz].cpu().numpy()
    graph = coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n_total, n_total))
    _, labels = connected_components(graph, directed=False)
    labels_t = torch.from_numpy(labels.astype(np.int64))
    first = torch.full((int(labels.max()) + 1,), -1, dtype=torch.long)
    first.scatter_(0, labels_t, layout.batch.cpu())
    comps = torch.bincount(first, minlength=layout.num_graphs)
    return comps.to(device), labels_t.to(device)


REACH_MAX_N = 64  # one small graph: components by boolean squaring, no SciPy round trip


def _reach_components(
    src: torch.Tensor, dst: torch.Tensor, n: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Components of one small graph: reachability ``R = (I + A)^(2^j)`` by repeated
    squaring until it stops growing; a node's label is the first node it reaches."""
    reach = torch.eye(n, dtype=torch.float32, device=src.device)
    reach[src, dst] = 1.0
    reach[dst, src] = 1.0
    for _ in range(max(n - 1, 1).bit_length()):
        grown = ((reach @ reach) > 0).to(reach.dtype)
        if torch.equal(grown, reach):
            break
        reach = grown
    labels = reach.argmax(-1)  # the lowest-numbered node of each component
    comps = (labels == torch.arange(n, device=src.device)).sum().reshape(1)
    return comps, labels


PROPAGATE_MAX_N = 256  # small graphs: components by label propagation, no SciPy round trip


def _propagated_components(
    src: torch.Tensor, dst: torch.Tensor, layout: Layout
) -> tuple[torch.Tensor, torch.Tensor]:
    """Components of many small graphs at once: every node takes the smallest label among
    itself and its neighbours, then follows its label's label (pointer jumping), until
    nothing changes (a few rounds for graphs of at most ``PROPAGATE_MAX_N`` nodes); a
    component is a node that keeps its own label."""
    n = layout.num_nodes
    ar = torch.arange(n, device=src.device)
    label = ar
    both_src, both_dst = torch.cat([src, dst]), torch.cat([dst, src])
    for _ in range(2 * max(layout.n_max, 2).bit_length() + 2 * layout.n_max):
        new = label.scatter_reduce(0, both_src, label[both_dst], "amin")
        new = new[new]
        if torch.equal(new, label):
            break
        label = new
    roots = label == ar
    comps = torch.bincount(layout.batch[roots], minlength=layout.num_graphs)
    return comps, label


def count_edge_components(edges: Edges) -> torch.Tensor:
    """Connected components per graph (see :func:`edge_components`)."""
    return edge_components(edges)[0]


# Cost of a dense eigh with vectors, in microseconds, n small to medium (fitted to the
# measured 2-core LAPACK times in DESIGN.md: 6 us at n = 8, 78 us at 32, 274 us at 64).
def _dense_cost(n: Any) -> Any:  # n: an int or a NumPy array of sizes
    return 1.0 + 0.07 * n * n + 0.0008 * n**3


PADDING_SLACK = 3.0  # padding may cost at most this much more than solving each size
CALL_OVERHEAD_US = 300.0  # what one padded call saves over the ragged path's bookkeeping


def padded_members(counts: Sequence[int]) -> int:
    """The largest size ``s`` such that padding every graph of at most ``s`` nodes to ``s``
    costs at most ``PADDING_SLACK`` times solving each at its own size (plus one call's
    overhead); those graphs go in one padded call, the larger ones on the ragged path."""
    sizes = np.sort(np.asarray([c for c in counts if c > 0], dtype=np.float64))
    if not sizes.size:
        return 0
    cost = _dense_cost(sizes)
    fits = np.arange(1, sizes.size + 1) * cost <= PADDING_SLACK * np.cumsum(cost) + CALL_OVERHEAD_US
    return int(sizes[fits].max()) if fits.any() else 0


def _pad_above(lap: torch.Tensor, counts: torch.Tensor, bound: torch.Tensor | None) -> torch.Tensor:
    """Put the padded rows' diagonal above each graph's spectrum (Gershgorin, or ``bound``)."""
    n = lap.shape[-1]
    if counts.numel() == 1 and int(counts[0]) == n:  # one graph: no padding
        return lap
    if bool((counts == n).all()):  # every graph fills the block: no padding
        return lap
    mask = torch.arange(n, device=lap.device) < counts.to(lap.device).unsqueeze(-1)
    if bound is None:  # Gershgorin: |lambda| <= max row abs sum
        bound = lap.abs().sum(-1).amax(-1)
    shift = ((bound + 1.0).unsqueeze(-1) * ~mask).to(lap.dtype)
    if lap.requires_grad:
        return lap + torch.diag_embed(shift)
    lap.diagonal(dim1=-2, dim2=-1).add_(shift)  # our own buffer: the diagonal in place
    return lap


def _rw(part: Part, degree: torch.Tensor, layout: Layout) -> Part:
    """``rw`` eigenvectors from the ``sym`` ones: scaled by ``D^{-1/2}`` and re-gauged."""
    rows, nodes = part.rows(layout)
    deg = torch.zeros(rows.shape, dtype=degree.dtype, device=degree.device)
    deg[rows] = degree[nodes]
    scale = torch.where(deg > 0, deg, torch.ones_like(deg)).rsqrt()
    v = fix_gauge(part.eigenvectors * scale.unsqueeze(-1))
    return Part(part.graphs, part.eigenvalues, v, part.counts, part.valid, part.complete, part.path)


def solve_entries(
    entries: Entries,
    degree: torch.Tensor,
    components: torch.Tensor,
    normalization: str | None,
    bound_two: bool,
    eigh_kw: Mapping[str, Any],
    lowest: Lowest | None = None,
    labels: torch.Tensor | None = None,
    null_weight: torch.Tensor | None = None,
) -> GraphSpectra:
    """The eigenpairs of every graph's matrix: the similar small graphs in one padded call,
    the others in one ragged call (the core buckets them by size), and, when a feature
    needs only the ``lowest`` eigenpairs, the large graphs on the sparse path (``labels``
    and ``null_weight``: the null space to deflate, see :mod:`._sparse_path`)."""
    lay = entries.layout
    kw, sparse_kw, sparse_from = split_options(eigh_kw)
    kw.setdefault("check", False)  # finite and symmetric by construction (checked)
    counts = lay.counts.tolist()
    comps = components.tolist()
    budget = kw.get("max_memory")
    budget = None if budget is None else int(budget)
    parts: list[Part] = []
    big = sparse_candidates(counts, comps, lowest, sparse_from, budget)
    if big:
        assert lowest is not None
        got = sparse_parts(
            entries,
            big,
            lowest,
            [comps[g] for g in big],
            labels,
            null_weight,
            bound_two,
            {**kw, **sparse_kw},
        )
        parts.extend(got or [])
        big = big if got is not None else []
    rest = sorted(set(range(lay.num_graphs)) - set(big))
    values = entries.values
    k_dense = dense_wanted(lowest, [comps[g] for g in rest])
    unpadded = set(partial_solves(counts, rest, k_dense, values.dtype, values.device))
    cut = padded_members([counts[g] for g in rest if g not in unpadded])
    small = [g for g in rest if 0 < counts[g] <= cut and g not in unpadded]
    large = [g for g in rest if counts[g] > cut or g in unpadded]
    if small:  # one padded call, or several where its dense buffers exceed max_memory
        chunks = fit_budget(small, [cut * cut] * len(small), budget)
        everyone = len(small) == lay.num_graphs and len(chunks) == 1
        for chunk in chunks:
            k = dense_wanted(lowest, [comps[g] for g in chunk])
            with glue_threads(1):
                parts.append(_padded_part(entries, chunk, everyone, bound_two, kw, k))
    if large:  # the ragged path, its dense blocks cut to fit max_memory as well
        for chunk in fit_budget(large, [counts[g] ** 2 for g in large], budget):
            biggest = max(counts[g] for g in chunk)
            k = dense_wanted(lowest, [comps[g] for g in chunk])
            with glue_threads(1) if biggest <= DENSE_ONE_THREAD_MAX_N else nullcontext():
                parts.extend(_ragged_parts(entries, chunk, kw, k))
    if normalization == "rw":
        parts = [_rw(p, degree, lay) for p in parts]
    return GraphSpectra(lay, tuple(parts), components, degree, normalization, entries.values.dtype)


#: dense solves of graphs up to this size run on one kernel thread in the calling thread
#: (the core's ragged path still fans a list out over its workers). Measured on the
#: 2-core machine under load (load average 8): 20 Laplacians of 180-915 nodes took
#: 0.84 s on one thread and 4.6-18 s with two (threaded LAPACK oversubscribed).
DENSE_ONE_THREAD_MAX_N = ONE_THREAD_MAX_N


def fit_budget(graphs: list[int], entries: list[int], budget: int | None) -> list[list[int]]:
    """``graphs`` cut into consecutive calls whose dense buffers (``entries`` matrix entries
    per graph, ``DENSE_BYTES_PER_ENTRY`` bytes each) fit ``budget`` (``None``: one call; a
    graph that alone exceeds it gets a call of its own)."""
    if budget is None:
        return [graphs]
    out: list[list[int]] = [[]]
    used = 0
    for g, size in zip(graphs, entries, strict=True):
        need = size * DENSE_BYTES_PER_ENTRY
        if out[-1] and used + need > budget:
            out.append([])
            used = 0
        out[-1].append(g)
        used += need
    return out


def _padded_part(
    entries: Entries,
    graphs: list[int],
    everyone: bool,
    bound_two: bool,
    kw: dict[str, Any],
    k: int | None = None,
) -> Part:
    """One padded core call (``k``: only the ``k`` lowest eigenpairs of each graph)."""
    lay = entries.layout
    index = torch.as_tensor(graphs, dtype=torch.long, device=lay.counts.device)
    counts = lay.counts[index]
    lap = entries.padded() if everyone else entries.padded_subset(graphs)
    n = lap.shape[-1]
    bound = None
    if bound_two:
        bound = torch.full((len(graphs),), 2.0, dtype=lap.real.dtype, device=lap.device)
    m = k if k is not None and k < n else None  # the padding sits above every spectrum
    w, v = eigh(_pad_above(lap, counts, bound), k=m, **kw)
    valid = counts if m is None else counts.clamp_max(m)
    if not bool((counts == n).all()):  # padded rows and columns to zero
        ar = torch.arange(n, device=lap.device)
        rows = ar < counts.to(lap.device).unsqueeze(-1)
        cols = ar[: w.shape[-1]] < counts.to(lap.device).unsqueeze(-1)
        v = v * (rows.unsqueeze(-1) & cols.unsqueeze(-2))
        w = w * cols
    complete = m is None or bool((counts <= m).all())
    return Part(index, w, v, counts, valid, complete, "padded")


def _ragged_parts(
    entries: Entries, graphs: list[int], kw: dict[str, Any], k: int | None = None
) -> list[Part]:
    """One ragged core call (``k``: only the ``k`` lowest eigenpairs of each graph, where
    every graph has more); results of equal size stacked back into one part."""
    lay = entries.layout
    smallest = min(int(lay.counts[g]) for g in graphs)
    m = k if k is not None and k < smallest else None
    ws, vs = eigh(entries.dense_blocks(graphs), k=m, **kw)
    by_size: dict[int, list[int]] = {}
    for i, g in enumerate(graphs):
        by_size.setdefault(int(lay.counts[g]), []).append(i)
    parts = []
    for n, members in by_size.items():
        index = torch.as_tensor([graphs[i] for i in members], dtype=torch.long)
        counts = torch.full((len(members),), n, dtype=torch.long)
        w = torch.stack([ws[i] for i in members])
        v = torch.stack([vs[i] for i in members])
        valid = counts if m is None else counts.clamp_max(m)
        parts.append(Part(index, w, v, counts, valid, m is None, "ragged"))
    return parts


def edge_spectra(
    edges: Edges,
    normalization: str | None,
    *,
    isolated_one: bool = False,
    undirected_tol: float | None = 1e-10,
    lowest: Lowest | None = None,
    **eigh_kw: Any,
) -> GraphSpectra:
    """The Laplacians of ``edges`` (``rw``: solved through ``sym``, same eigenvalues, the
    eigenvectors scaled by ``D^{-1/2}``, 1 at isolated nodes, and re-gauged)."""
    check_normalization(normalization)
    sym_norm = "sym" if normalization == "rw" else normalization
    with glue_threads(1):  # elementwise work over all edges: one kernel thread
        if undirected_tol is not None:
            require_undirected(
                Entries(edges.layout, edges.src, edges.dst, edges.weight), undirected_tol
            )
        entries, deg = laplacian_entries(edges, sym_norm, isolated_one=isolated_one)
        comps, labels = edge_components(edges)
        signed = bool((edges.weight < 0).any())
        bound_two = sym_norm == "sym" and not signed
        if signed or (isolated_one and lowest is not None and lowest.deflate):
            lowest = None  # the null space is not the components': every eigenpair, densely
        null_weight = None
        if lowest is not None and lowest.deflate:
            null_weight = deg.sqrt() if sym_norm == "sym" else torch.ones_like(deg)
            null_weight = torch.where(deg > 0, null_weight, torch.ones_like(deg))
    return solve_entries(
        entries, deg, comps, normalization, bound_two, eigh_kw, lowest, labels, null_weight
    )


def padded_spectrum(spec: GraphSpectra) -> LaplacianSpectrum:
    """The public padded form (memory ``G n_max^2``)."""
    lay = spec.layout
    w, v = spec.padded()
    deg = spec.degree.new_zeros((lay.num_graphs, lay.n_max))
    if lay.num_nodes:
        deg = deg.index_put((lay.batch, lay.local), spec.degree)
    return LaplacianSpectrum(w, v, lay.counts, spec.num_components, deg, spec.normalization)


def laplacian_eigh(
    edge_index: Any,
    num_nodes: int | None = None,
    edge_weight: Any = None,
    normalization: str | None = "sym",
    *,
    batch: Any = None,
    num_graphs: int | None = None,
    dtype: torch.dtype = torch.float64,
    device: Any = "cpu",
    eigh_options: Mapping[str, Any] | None = None,
) -> LaplacianSpectrum:
    """All eigenpairs of the Laplacians of many graphs, through batched ``spectra.eigh`` calls.

    Graphs of similar size are solved in one padded call, graphs of very different sizes
    through the core's ragged path (each at its own size); the result is padded to the
    largest graph (``G n_max^2`` numbers: for large graphs of mixed sizes prefer the
    features, e.g. :func:`spectra.graph.laplacian_pe`, which never pad).

    Parameters
    ----------
    edge_index, num_nodes, edge_weight, normalization, batch, num_graphs :
        as :func:`spectra.graph.laplacian`; graphs must be undirected.
    dtype : precision of the solve (default float64).
    eigh_options : execution options passed to :func:`spectra.eigh` (``workers``,
        ``chunk_size``, ``max_memory``, ``strategy``).
    device : where to solve (default ``"cpu"``; ``None``: where ``edge_index`` lives).

    Returns
    -------
    LaplacianSpectrum
        padded per graph; eigenvectors in the spectra gauge (largest-|entry| positive). With
        ``"rw"`` the eigenvectors are those of ``I - D^{-1} A``, ``D``-orthonormal. NumPy
        arrays for a NumPy ``edge_index``.

    Examples
    --------
    >>> import torch
    >>> from spectra.graph import laplacian_eigh
    >>> edges = torch.tensor([[0, 1, 1, 2, 3, 4], [1, 0, 2, 1, 4, 3]])
    >>> spec = laplacian_eigh(edges, batch=torch.tensor([0, 0, 0, 1, 1]))
    >>> spec.eigenvalues[:, 1:].round(decimals=8)
    tensor([[1., 2.],
            [2., 0.]], dtype=torch.float64)
    >>> spec.num_components
    tensor([1, 1])
    """
    if not dtype.is_floating_point:
        raise TypeError(f"dtype must be float32 or float64, got {dtype}")
    edges, _, from_numpy, _ = graph_input(
        edge_index, edge_weight, batch, num_nodes, num_graphs, device, dtype
    )
    with glue_threads(edges.layout.n_max):
        spec = padded_spectrum(edge_spectra(edges, normalization, **dict(eigh_options or {})))
    return to_numpy_fields(spec) if from_numpy else spec
