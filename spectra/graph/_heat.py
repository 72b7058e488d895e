"""Heat-kernel (diffusion) node features ``diag(exp(-t L))`` from the Laplacian eigenpairs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ..core.domain import InputError, check_count
from ._layout import glue_threads, graph_input
from ._parts import GraphSpectra
from ._sparse_path import Lowest
from ._spectrum import LaplacianSpectrum, edge_spectra


def _times(
    times: Sequence[float] | torch.Tensor, dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    t = torch.as_tensor(times, dtype=dtype, device=device).reshape(-1)
    if not bool(torch.isfinite(t).all()) or bool((t < 0).any()):
        raise InputError("times", f"are diffusion times: must be finite and >= 0, got {t.tolist()}")
    return t


def heat_kernel_from_spectrum(
    spec: LaplacianSpectrum, times: Sequence[float] | torch.Tensor
) -> torch.Tensor:
    """``(G, n_max, T)``: ``diag(exp(-t L))`` per graph from its padded eigenpairs.

    ``sum_j exp(-t w_j) u_ij^2`` over the real eigenpairs, ``u`` orthonormal (for an
    ``"rw"`` spectrum ``u = D^{1/2} v``, the ``sym`` eigenvectors: the diagonal is the same);
    padded rows are 0. Reuses a decomposition, e.g. the one behind positional encodings.

    Examples
    --------
    >>> import torch
    >>> from spectra.graph import heat_kernel_from_spectrum, laplacian_eigh
    >>> spec = laplacian_eigh(torch.tensor([[0, 1], [1, 0]]), 2)
    >>> heat_kernel_from_spectrum(spec, [0.0, 1.0])
    tensor([[[1.0000, 0.5677],
             [1.0000, 0.5677]]], dtype=torch.float64)
    """
    w, v = spec.eigenvalues, spec.eigenvectors
    if spec.normalization == "rw":
        deg = spec.degree
        v = v * torch.where(deg > 0, deg, torch.ones_like(deg)).sqrt().unsqueeze(-1)
    t = _times(times, w.dtype, w.device)
    decay = torch.exp(-t.view(1, 1, -1) * w.unsqueeze(-1))  # (G, n, T)
    decay = decay * spec.column_mask().unsqueeze(-1)
    return (v * v) @ decay


def heat_nodes(spec: GraphSpectra, times: Sequence[float] | torch.Tensor) -> torch.Tensor:
    """``(N, T)``: ``diag(exp(-t L))`` per node, part by part (never padded)."""
    t = _times(times, spec.degree.dtype, spec.degree.device)
    return spec.node_sums(lambda w: torch.exp(-t.view(1, 1, -1) * w.unsqueeze(-1)), t.numel())


def heat_kernel_diagonal(
    edge_index: Any,
    num_nodes: int | None = None,
    times: Sequence[float] | torch.Tensor = (0.1, 1.0, 10.0),
    *,
    edge_weight: Any = None,
    batch: Any = None,
    num_graphs: int | None = None,
    normalization: str | None = "sym",
    dtype: torch.dtype = torch.float32,
    device: Any = "cpu",
    k: int | None = None,
    eigh_options: Mapping[str, Any] | None = None,
) -> Any:
    r"""Heat-kernel node features: ``diag(exp(-t L))`` at several diffusion times ``t``.

    The heat kernel signature (Sun, Ovsjanikov and Guibas 2009): entry ``(i, s)`` is
    ``sum_j exp(-t_s w_j) u_ij^2`` over the eigenpairs of node ``i``'s graph, from one
    batched eigendecomposition of all graphs. ``exp(-t L_rw) = D^{-1/2} exp(-t L_sym)
    D^{1/2}`` has the same diagonal as ``sym``, so ``"rw"`` and ``"sym"`` agree.

    Parameters
    ----------
    edge_index, num_nodes, edge_weight, batch, num_graphs, normalization :
        as :func:`spectra.graph.laplacian`; graphs must be undirected.
    times : diffusion times ``t >= 0`` (``T`` of them).
    dtype : output dtype (the solve runs in float64).
    device : where to solve (default ``"cpu"``; ``None``: where the input lives).
    k : ``None`` (default): the sum runs over every eigenpair (exact, dense). An integer:
        the **low-frequency part**, the null space (one vector per component) and the
        ``k`` lowest eigenpairs above it; graphs of at least ``sparse_from`` nodes (see
        ``eigh_options``) then take the sparse path (memory ``O(nnz + n k)``). The omitted
        terms are each at most ``exp(-t w_{k+1})``, so it is accurate for large ``t``.
        Smaller graphs are still summed over all their eigenpairs.
    eigh_options : as :func:`spectra.graph.laplacian_pe`.

    Returns
    -------
    ``(N, T)`` tensor on ``edge_index``'s device (NumPy for a NumPy ``edge_index``).

    Examples
    --------
    >>> import torch
    >>> from spectra.graph import heat_kernel_diagonal
    >>> edge = torch.tensor([[0, 1], [1, 0]])
    >>> heat_kernel_diagonal(edge, 2, times=[0.0, 1.0], dtype=torch.float64)
    tensor([[1.0000, 0.5677],
            [1.0000, 0.5677]], dtype=torch.float64)
    """
    edges, _, from_numpy, out_device = graph_input(
        edge_index, edge_weight, batch, num_nodes, num_graphs, device, torch.float64
    )
    _times(times, torch.float64, torch.device("cpu"))  # refuse bad times before solving
    lowest = None
    if k is not None:
        check_count(k, "k")
        lowest = Lowest(k, deflate=True, partial=False)  # dense graphs: the whole sum
    with glue_threads(edges.layout.n_max):
        opts = dict(eigh_options or {})
        nodes = heat_nodes(edge_spectra(edges, normalization, lowest=lowest, **opts), times)
    nodes = nodes.to(device=out_device, dtype=dtype)
    return nodes.numpy() if from_numpy else nodes
