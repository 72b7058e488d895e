"""Connected components of every graph of a batch from its edge list: combinatorial (no
threshold on small eigenvalues), isolated nodes counted; the multiplicity of each graph
Laplacian's eigenvalue 0."""

from __future__ import annotations

import numpy as np
import torch

from ..core.domain import entry_components
from ._layout import Edges, Layout


def edge_components(edges: Edges) -> tuple[torch.Tensor, torch.Tensor]:
    """Connected components per graph ``(G,)`` and the component of every node ``(N,)``
    from an edge list (edges of nonzero weight).

    Combinatorial (the compiled helper's union-find, or SciPy's
    ``csgraph.connected_components`` without it, on the whole batch at once; both number
    the components by their smallest node), not a threshold on small eigenvalues; isolated
    nodes are components of their own.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    layout = edges.layout
    device = edges.weight.device
    n_total = layout.num_nodes
    if n_total == 0:
        empty = torch.zeros(0, dtype=torch.long, device=device)
        return torch.zeros(layout.num_graphs, dtype=torch.long, device=device), empty
    src, dst = edges.src, edges.dst
    nz = edges.weight != 0
    if not bool(nz.all()):  # (a mask copy of every edge only where one is zero)
        src, dst = src[nz], dst[nz]
    if layout.num_graphs == 1 and n_total <= REACH_MAX_N:
        return _reach_components(src, dst, n_total)
    if layout.n_max <= PROPAGATE_MAX_N:
        return _propagated_components(src, dst, layout)
    rows, cols = src.cpu().numpy(), dst.cpu().numpy()
    labels = entry_components(n_total, rows, cols)  # the compiled helper's union-find
    if labels is None:
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
