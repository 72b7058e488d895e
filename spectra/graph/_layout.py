"""Many graphs as one padded dense batch: node layout, adjacency blocks, input checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch

NORMALIZATIONS = (None, "sym", "rw")


def check_count(name: str, value: Any) -> None:
    """``value`` must be a non-negative ``int`` (not a ``bool``), else ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")


@dataclass(frozen=True)
class Layout:
    """Where each node of a (batched) graph lives in the padded ``(G, n_max)`` grid."""

    batch: torch.Tensor  # (N,) graph of each node
    local: torch.Tensor  # (N,) index of each node inside its graph
    counts: torch.Tensor  # (G,) nodes per graph
    ptr: torch.Tensor  # (G + 1,) first node of each graph
    n_max: int

    @property
    def num_graphs(self) -> int:
        return int(self.counts.numel())

    @property
    def num_nodes(self) -> int:
        return int(self.batch.numel())

    def node_mask(self) -> torch.Tensor:
        """``(G, n_max)`` bool: True where a real node sits."""
        ar = torch.arange(self.n_max, device=self.counts.device)
        return ar < self.counts.unsqueeze(-1)


def as_torch(x: Any, name: str) -> tuple[torch.Tensor | None, bool]:
    """``x`` as a tensor (None stays None); the flag says whether it came in as NumPy."""
    if x is None:
        return None, False
    if isinstance(x, torch.Tensor):
        return x, False
    if isinstance(x, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(x)), True
    raise TypeError(f"{name}: expected a torch.Tensor or numpy.ndarray, got {type(x).__name__}")


def to_numpy_fields(result: Any) -> Any:
    """A NamedTuple of tensors with every tensor field as a NumPy array (NumPy in, out)."""
    return type(result)(
        *(x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else x for x in result)
    )


def check_normalization(normalization: str | None) -> None:
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be None, 'sym' or 'rw', got {normalization!r}")


def make_layout(
    edge_index: torch.Tensor,
    num_nodes: int | None,
    batch: torch.Tensor | None,
    num_graphs: int | None = None,
) -> Layout:
    """Check ``edge_index``/``batch``/``num_nodes`` and place every node in the padded grid."""
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"edge_index must have shape (2, E), got {tuple(edge_index.shape)}")
    if edge_index.is_floating_point() or edge_index.is_complex():
        raise TypeError(f"edge_index must hold integers, got {edge_index.dtype}")
    device = edge_index.device
    if batch is not None:
        if batch.ndim != 1 or batch.is_floating_point():
            raise ValueError("batch must be a 1-D integer tensor (the graph of each node)")
        batch = batch.to(device=device, dtype=torch.long)
        if num_nodes is not None and int(num_nodes) != batch.numel():
            raise ValueError(f"num_nodes={num_nodes} but batch has {batch.numel()} entries")
        num_nodes = batch.numel()
    elif num_nodes is None:
        num_nodes = int(edge_index.max()) + 1 if edge_index.numel() else 0
    num_nodes = int(num_nodes)
    if num_nodes < 0:
        raise ValueError(f"num_nodes must be >= 0, got {num_nodes}")
    if edge_index.numel():
        low, high = int(edge_index.min()), int(edge_index.max())
        if low < 0 or high >= num_nodes:
            raise ValueError(
                f"edge_index refers to node {low if low < 0 else high}, "
                f"outside [0, num_nodes={num_nodes})"
            )
    if batch is None:
        batch = torch.zeros(num_nodes, dtype=torch.long, device=device)
        n_graphs = 1 if num_graphs is None else int(num_graphs)
    else:
        if batch.numel() and bool((batch[1:] < batch[:-1]).any()):
            raise ValueError("batch must be sorted (nodes of each graph contiguous, as PyG's)")
        if batch.numel() and int(batch[0]) < 0:
            raise ValueError("batch holds negative graph indices")
        n_graphs = int(batch[-1]) + 1 if batch.numel() else 0
        if num_graphs is not None:
            if int(num_graphs) < n_graphs:
                raise ValueError(f"num_graphs={num_graphs} but batch names graph {n_graphs - 1}")
            n_graphs = int(num_graphs)
    counts = torch.bincount(batch, minlength=n_graphs)
    ptr = torch.zeros(n_graphs + 1, dtype=torch.long, device=device)
    ptr[1:] = torch.cumsum(counts, 0)
    local = torch.arange(num_nodes, device=device) - ptr[batch]
    n_max = int(counts.max()) if n_graphs else 0
    if edge_index.numel():
        src_g, dst_g = batch[edge_index[0]], batch[edge_index[1]]
        bad = (src_g != dst_g).nonzero().flatten()
        if bad.numel():
            e = int(bad[0])
            raise ValueError(
                f"edge {e} joins graph {int(src_g[e])} and graph {int(dst_g[e])}: "
                "edges must stay inside one graph"
            )
    return Layout(batch, local, counts, ptr, n_max)


@dataclass(frozen=True)
class Edges:
    """The edges of a (batched) graph, self-loops removed: global ``src -> dst`` and weights."""

    layout: Layout
    src: torch.Tensor
    dst: torch.Tensor
    weight: torch.Tensor

    def degree(self) -> torch.Tensor:
        """``(N,)`` weighted out-degree (row sums, as PyG's ``get_laplacian``)."""
        deg = torch.zeros(self.layout.num_nodes, dtype=self.weight.dtype, device=self.weight.device)
        return deg.index_add(0, self.src, self.weight)

    def padded(self, values: torch.Tensor) -> torch.Tensor:
        """Edge values ``(E,)`` summed into a zero ``(G, n_max, n_max)`` batch."""
        lay = self.layout
        out = torch.zeros(
            (lay.num_graphs, lay.n_max, lay.n_max), dtype=values.dtype, device=values.device
        )
        return out.index_put_(
            (lay.batch[self.src], lay.local[self.src], lay.local[self.dst]), values, accumulate=True
        )


def edges_of(
    edge_index: torch.Tensor, edge_weight: torch.Tensor | None, layout: Layout, dtype: torch.dtype
) -> Edges:
    """Check ``edge_weight``, drop self-loops, cast the weights to ``dtype``."""
    device = edge_index.device
    if edge_weight is not None:
        if edge_weight.ndim != 1 or edge_weight.numel() != edge_index.shape[1]:
            raise ValueError(
                f"edge_weight must have shape (E,) = ({edge_index.shape[1]},), "
                f"got {tuple(edge_weight.shape)}"
            )
        if edge_weight.is_complex():
            raise TypeError("edge_weight must be real")
        if not bool(torch.isfinite(edge_weight).all()):
            bad = (~torch.isfinite(edge_weight)).nonzero().flatten()[:5].tolist()
            raise ValueError(f"edge_weight holds NaN/Inf at edges {bad}")
    src, dst = edge_index[0], edge_index[1]
    keep = src != dst
    if edge_weight is None:
        w = torch.ones(int(keep.sum()), dtype=dtype, device=device)
    else:
        w = edge_weight.to(device=device, dtype=dtype)[keep]
    return Edges(layout, src[keep], dst[keep], w)


def asymmetric_graphs(adj: torch.Tensor, tol: float) -> list[int]:
    """Indices of the graphs whose adjacency is not symmetric (directed) beyond ``tol``."""
    if adj.numel() == 0 or torch.equal(adj, adj.mT):
        return []
    diff = (adj - adj.mT).abs().amax((-2, -1))
    scale = adj.abs().amax((-2, -1)).clamp_min(1.0)
    return (diff > tol * scale).nonzero().flatten().tolist()


def require_undirected(adj: torch.Tensor, tol: float = 1e-10) -> None:
    bad = asymmetric_graphs(adj, tol)
    if bad:
        shown = ", ".join(map(str, bad[:10])) + (" ..." if len(bad) > 10 else "")
        raise ValueError(
            f"graph(s) {shown} are directed (edge weights not symmetric); spectral features "
            "need undirected graphs: use torch_geometric.utils.to_undirected first, or the "
            "magnetic Laplacian PE for directed graphs (spectra.graph.magnetic_laplacian_pe, "
            "MagneticLaplacianPE)"
        )


class GraphInput(NamedTuple):
    """Edges and layout of a (batched) graph input, ready for the solver."""

    edges: Edges
    layout: Layout
    from_numpy: bool  # NumPy in, NumPy out
    out_device: torch.device  # where the caller's tensors live


def graph_input(
    edge_index: Any,
    edge_weight: Any,
    batch: Any,
    num_nodes: int | None,
    num_graphs: int | None,
    device: Any,
    dtype: torch.dtype,
) -> GraphInput:
    """Convert the public arguments shared by the graph functions, solved on ``device``
    (default: the device of ``edge_index``)."""
    ei, from_numpy = as_torch(edge_index, "edge_index")
    assert ei is not None
    ew, _ = as_torch(edge_weight, "edge_weight")
    bt, _ = as_torch(batch, "batch")
    out_device = ei.device
    solve_device = ei.device if device is None else torch.device(device)
    ei = ei.to(solve_device)
    ew = ew.to(solve_device) if ew is not None else None
    bt = bt.to(solve_device) if bt is not None else None
    layout = make_layout(ei, num_nodes, bt, num_graphs)
    return GraphInput(edges_of(ei, ew, layout, dtype), layout, from_numpy, out_device)
