"""Dense, batched graph Laplacians (one zero-padded block per graph)."""

from __future__ import annotations

from typing import Any

import torch

from ._assemble import laplacian_entries
from ._layout import Edges, as_torch, check_normalization, edges_of, make_layout


def edge_laplacian(
    edges: Edges, normalization: str | None, *, isolated_one: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(G, n_max, n_max)`` Laplacian straight from the edge list, and the ``(N,)`` degrees
    (see :func:`spectra.graph._assemble.laplacian_entries` for the conventions)."""
    entries, deg = laplacian_entries(edges, normalization, isolated_one=isolated_one)
    return entries.padded(), deg


def laplacian(
    edge_index: Any,
    num_nodes: int | None = None,
    edge_weight: Any = None,
    normalization: str | None = None,
    *,
    batch: Any = None,
    num_graphs: int | None = None,
    dtype: torch.dtype | None = None,
    padding_diagonal: float = 0.0,
) -> Any:
    r"""Dense graph Laplacian of one graph, or of many graphs as a zero-padded batch.

    The conventions of :func:`torch_geometric.utils.get_laplacian`: self-loops are removed,
    duplicate edges add up, the degree of node ``i`` is the summed weight of the edges
    leaving it (row sums), and

    - ``None``: ``L = D - A``;
    - ``"sym"``: ``L = I - D^{-1/2} A D^{-1/2}``;
    - ``"rw"``: ``L = I - D^{-1} A`` (not symmetric).

    **Where we differ from PyG**: an isolated node (zero degree) gets ``L_ii = 0`` in the
    normalized Laplacians (PyG fills ``1``). This is the convention of SciPy's
    ``csgraph.laplacian(normed=True)``, NetworkX and scikit-learn: it keeps ``L`` the
    limit of ``D^{-1/2} (D - A) D^{-1/2}`` and makes every connected component, isolated
    nodes included, contribute exactly one zero eigenvalue.

    Parameters
    ----------
    edge_index : ``(2, E)`` integer tensor (or NumPy array) of directed edges
        ``source -> target``; an undirected graph lists both directions.
    num_nodes : number of nodes (default: from ``batch``, else ``edge_index.max() + 1``).
    edge_weight : optional ``(E,)`` weights (default 1).
    normalization : ``None``, ``"sym"`` or ``"rw"``.
    batch : optional ``(N,)`` sorted graph index of each node (PyG's ``Batch.batch``):
        returns one block per graph, ``(G, n_max, n_max)``, zero-padded.
    num_graphs : number of graphs (default ``batch.max() + 1``); trailing empty graphs.
    dtype : floating dtype of the result (default ``edge_weight``'s, else float32 as PyG).
    padding_diagonal : value put on the diagonal of the padded rows (e.g. above the
        spectrum, so a batched ``spectra.eigh`` puts the padding's eigenpairs last).

    Returns
    -------
    ``(N, N)`` without ``batch``; ``(G, n_max, n_max)`` with it. NumPy in, NumPy out.

    Examples
    --------
    >>> import torch
    >>> from spectra.graph import laplacian
    >>> path = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    >>> laplacian(path, 3)
    tensor([[ 1., -1.,  0.],
            [-1.,  2., -1.],
            [ 0., -1.,  1.]])
    >>> laplacian(torch.tensor([[0, 1], [1, 0]]), batch=torch.tensor([0, 0, 1]),
    ...           normalization="sym")
    tensor([[[ 1., -1.],
             [-1.,  1.]],
    <BLANKLINE>
            [[ 0.,  0.],
             [ 0.,  0.]]])
    """
    ei, from_numpy = as_torch(edge_index, "edge_index")
    assert ei is not None
    ew, _ = as_torch(edge_weight, "edge_weight")
    bt, _ = as_torch(batch, "batch")
    check_normalization(normalization)
    if dtype is None:
        dtype = ew.dtype if ew is not None and ew.is_floating_point() else torch.float32
    if not dtype.is_floating_point:
        raise TypeError(f"dtype must be a real floating dtype, got {dtype}")
    layout = make_layout(ei, num_nodes, bt.to(ei.device) if bt is not None else None, num_graphs)
    lap, _ = edge_laplacian(edges_of(ei, ew, layout, dtype), normalization)
    mask = layout.node_mask()
    if padding_diagonal != 0.0:
        lap = lap + torch.diag_embed((~mask).to(dtype) * padding_diagonal)
    if bt is None:
        lap = lap[0] if layout.num_graphs else lap.new_zeros((0, 0))
    return lap.numpy() if from_numpy else lap
