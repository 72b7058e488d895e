"""Many graphs as one padded dense batch: node layout, adjacency blocks, input checks."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch

from ..core.domain import InputError, caller_kernel_threads

NORMALIZATIONS = (None, "sym", "rw")


_GLUE = threading.local()


@contextmanager
def _single_glue() -> Iterator[None]:
    with caller_kernel_threads(_ONE, None):
        _GLUE.single = True
        try:
            yield
        finally:
            _GLUE.single = False


_ONE = torch.empty((0, 1, 1))


def glue_threads(n_max: int) -> AbstractContextManager[None]:
    """One kernel thread in the calling thread for the many small tensor operations around
    the solve when the graphs are small (the core's rule: from ``n = 256`` threads pay).
    Inside another one-thread block it does nothing (the setting is already there).

    >>> with glue_threads(25):
    ...     with glue_threads(25):  # nested: sets nothing
    ...         pass
    """
    if getattr(_GLUE, "single", False):
        return nullcontext()
    if n_max >= 256:
        return caller_kernel_threads(torch.empty((0, n_max, n_max)), None)
    return _single_glue()


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
        raise InputError("normalization", f"must be None, 'sym' or 'rw', got {normalization!r}")


def make_layout(
    edge_index: torch.Tensor,
    num_nodes: int | None,
    batch: torch.Tensor | None,
    num_graphs: int | None = None,
) -> Layout:
    """Check ``edge_index``/``batch``/``num_nodes`` and place every node in the padded grid."""
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise InputError("edge_index", f"must have shape (2, E), got {tuple(edge_index.shape)}")
    if edge_index.is_floating_point() or edge_index.is_complex():
        raise TypeError(f"edge_index must hold integers, got {edge_index.dtype}")
    device = edge_index.device
    if batch is not None:
        if batch.ndim != 1 or batch.is_floating_point():
            raise InputError("batch", "must be a 1-D integer tensor (the graph of each node)")
        batch = batch.to(device=device, dtype=torch.long)
        if num_nodes is not None and int(num_nodes) != batch.numel():
            raise InputError("num_nodes", f"is {num_nodes} but batch has {batch.numel()} entries")
        num_nodes = batch.numel()
    elif num_nodes is None:
        num_nodes = int(edge_index.max()) + 1 if edge_index.numel() else 0
    num_nodes = int(num_nodes)
    if num_nodes < 0:
        raise InputError("num_nodes", f"must be >= 0, got {num_nodes}")
    if edge_index.numel():
        low, high = int(edge_index.min()), int(edge_index.max())
        if low < 0 or high >= num_nodes:
            bad = ((edge_index < 0) | (edge_index >= num_nodes)).any(0).nonzero().flatten()
            raise InputError(
                "edge_index",
                f"refers to node {low if low < 0 else high}, outside [0, num_nodes={num_nodes}), "
                f"in edge(s) {bad.tolist()[:10]}",
            )
    if batch is None:
        batch = torch.zeros(num_nodes, dtype=torch.long, device=device)
        n_graphs = 1 if num_graphs is None else int(num_graphs)
    else:
        if batch.numel() and bool((batch[1:] < batch[:-1]).any()):
            raise InputError("batch", "must be sorted (nodes of each graph contiguous, as PyG's)")
        if batch.numel() and int(batch[0]) < 0:
            raise InputError("batch", "holds negative graph indices")
        n_graphs = int(batch[-1]) + 1 if batch.numel() else 0
        if num_graphs is not None:
            if int(num_graphs) < n_graphs:
                raise InputError(
                    "num_graphs", f"is {num_graphs} but batch names graph {n_graphs - 1}"
                )
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
            raise InputError(
                "edge_index",
                f"edge {e} joins graph {int(src_g[e])} and graph {int(dst_g[e])}: "
                "edges must stay inside one graph",
                [(int(src_g[e]),), (int(dst_g[e]),)],
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


def edges_of(
    edge_index: torch.Tensor, edge_weight: torch.Tensor | None, layout: Layout, dtype: torch.dtype
) -> Edges:
    """Check ``edge_weight``, drop self-loops, cast the weights to ``dtype``."""
    device = edge_index.device
    if edge_weight is not None:
        if edge_weight.ndim != 1 or edge_weight.numel() != edge_index.shape[1]:
            raise InputError(
                "edge_weight",
                f"must have shape (E,) = ({edge_index.shape[1]},), got {tuple(edge_weight.shape)}",
            )
        if edge_weight.is_complex():
            raise TypeError("edge_weight must be real")
        if not bool(torch.isfinite(edge_weight).all()):
            bad = (~torch.isfinite(edge_weight)).nonzero().flatten()[:5].tolist()
            raise InputError("edge_weight", f"holds NaN/Inf at edges {bad}")
    src, dst = edge_index[0], edge_index[1]
    keep = src != dst
    if edge_weight is None:
        w = torch.ones(int(keep.sum()), dtype=dtype, device=device)
    else:
        w = edge_weight.to(device=device, dtype=dtype)[keep]
    return Edges(layout, src[keep], dst[keep], w)


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
    with glue_threads(1):
        return _graph_input(edge_index, edge_weight, batch, num_nodes, num_graphs, device, dtype)


def _graph_input(
    edge_index: Any,
    edge_weight: Any,
    batch: Any,
    num_nodes: int | None,
    num_graphs: int | None,
    device: Any,
    dtype: torch.dtype,
) -> GraphInput:
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
