"""The eigenpairs of many graph Laplacians from one core call, padding stripped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import torch

from ..core import eigh, fix_gauge
from ._laplacian import edge_laplacian, laplacian_from_adjacency
from ._layout import (
    Edges,
    Layout,
    check_normalization,
    graph_input,
    require_undirected,
    to_numpy_fields,
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


def _labels_per_graph(rows: np.ndarray, cols: np.ndarray, layout: Layout) -> torch.Tensor:
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n_total = layout.num_nodes
    graph = coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n_total, n_total))
    _, labels = connected_components(graph, directed=False)
    labels_t = torch.from_numpy(labels.astype(np.int64))
    first = torch.full((int(labels.max()) + 1,), -1, dtype=torch.long)
    first.scatter_(0, labels_t, layout.batch.cpu())
    return torch.bincount(first, minlength=layout.num_graphs)


def count_components(adj: torch.Tensor, layout: Layout) -> torch.Tensor:
    """Connected components per graph of a padded adjacency (``(G,)`` long, on adj's device).

    Combinatorial (SciPy's ``csgraph.connected_components`` on the whole batch at once),
    not a threshold on small eigenvalues: an edge counts when its weight is nonzero.
    """
    if layout.num_nodes == 0:
        return torch.zeros(layout.num_graphs, dtype=torch.long, device=adj.device)
    g, i, j = (adj != 0).nonzero(as_tuple=True)
    ptr = layout.ptr.to(adj.device)
    rows, cols = (ptr[g] + i).cpu().numpy(), (ptr[g] + j).cpu().numpy()
    return _labels_per_graph(rows, cols, layout).to(adj.device)


def count_edge_components(edges: Edges) -> torch.Tensor:
    """Connected components per graph from an edge list (edges of nonzero weight)."""
    layout = edges.layout
    device = edges.weight.device
    if layout.num_nodes == 0:
        return torch.zeros(layout.num_graphs, dtype=torch.long, device=device)
    nz = edges.weight != 0
    rows, cols = edges.src[nz].cpu().numpy(), edges.dst[nz].cpu().numpy()
    return _labels_per_graph(rows, cols, layout).to(device)


def _solve(
    lap: torch.Tensor,
    deg: torch.Tensor,
    layout: Layout,
    comps: torch.Tensor,
    normalization: str | None,
    bound: torch.Tensor | None,
    eigh_kw: dict[str, Any],
) -> LaplacianSpectrum:
    """Push the padding above the spectrum, make the one core call, strip the padding."""
    mask = layout.node_mask()
    g, n = layout.num_graphs, layout.n_max
    if g == 0 or n == 0:
        return LaplacianSpectrum(
            lap.new_zeros((g, n)),
            lap.new_zeros((g, n, n)),
            layout.counts,
            comps,
            deg,
            normalization,
        )
    if bound is None:  # Gershgorin: |lambda| <= max row abs sum
        bound = lap.abs().sum(-1).amax(-1)
    lap = lap + torch.diag_embed((bound + 1.0).unsqueeze(-1) * ~mask)
    eigh_kw.setdefault("check", False)  # finite and symmetric by construction (checked)
    w, v = eigh(lap, **eigh_kw)
    # real eigenpairs: the first counts[g] columns; real nodes: the first counts[g] rows
    v = v * (mask.unsqueeze(-1) & mask.unsqueeze(-2))
    w = w * mask
    if normalization == "rw":
        connected = deg > 0
        scale = torch.where(connected, deg, torch.ones_like(deg)).rsqrt()
        v = fix_gauge(v * scale.unsqueeze(-1))
    return LaplacianSpectrum(w, v, layout.counts, comps, deg, normalization)


def padded_laplacian_eigh(
    adj: torch.Tensor, layout: Layout, normalization: str | None, **eigh_kw: Any
) -> LaplacianSpectrum:
    """Eigenpairs of the Laplacians of a padded ``(G, n_max, n_max)`` adjacency, one core call.

    The padded rows get a diagonal above each graph's spectrum (2 for ``sym`` with
    non-negative weights, else the Gershgorin bound), so the padding's eigenpairs are the
    top ones and never mix with the real spectrum; they are then stripped. ``rw`` is
    solved through the symmetric ``sym`` Laplacian (same eigenvalues), the eigenvectors
    scaled by ``D^{-1/2}`` (1 at isolated nodes) and re-gauged.
    """
    check_normalization(normalization)
    require_undirected(adj)
    sym_norm = "sym" if normalization == "rw" else normalization
    lap, deg = laplacian_from_adjacency(adj, sym_norm, has_diagonal=False)
    comps = count_components(adj, layout)
    bound = None
    if sym_norm == "sym" and bool((adj >= 0).all()):
        bound = torch.full((layout.num_graphs,), 2.0, dtype=lap.dtype, device=lap.device)
    return _solve(lap, deg, layout, comps, normalization, bound, eigh_kw)


def edges_laplacian_eigh(
    edges: Edges, normalization: str | None, *, isolated_one: bool = False, **eigh_kw: Any
) -> LaplacianSpectrum:
    """As :func:`padded_laplacian_eigh`, the Laplacians assembled from an edge list
    (``isolated_one``: PyG's ``L_ii = 1`` at isolated nodes, see :func:`edge_laplacian`)."""
    check_normalization(normalization)
    sym_norm = "sym" if normalization == "rw" else normalization
    lap, deg = edge_laplacian(edges, sym_norm, isolated_one=isolated_one)
    require_undirected(lap)
    comps = count_edge_components(edges)
    layout = edges.layout
    deg_padded = lap.new_zeros((layout.num_graphs, layout.n_max))
    if layout.num_nodes:
        deg_padded = deg_padded.index_put((layout.batch, layout.local), deg)
    bound = None
    if sym_norm == "sym" and bool((edges.weight >= 0).all()):
        bound = torch.full((layout.num_graphs,), 2.0, dtype=lap.dtype, device=lap.device)
    return _solve(lap, deg_padded, layout, comps, normalization, bound, eigh_kw)


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
    """All eigenpairs of the Laplacians of many graphs, through one batched ``spectra.eigh``.

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
    spec = edges_laplacian_eigh(edges, normalization, **dict(eigh_options or {}))
    return to_numpy_fields(spec) if from_numpy else spec
