"""Random-walk structural encodings ``diag(P^t)``, ``P = D^-1 A``, from the Laplacian
eigenpairs (the encodings of PyG's ``AddRandomWalkPE``, for a whole batch in one call)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ._layout import Layout, check_count, graph_input
from ._spectrum import LaplacianSpectrum, edges_laplacian_eigh


def random_walk_from_spectrum(spec: LaplacianSpectrum, walk_length: int) -> torch.Tensor:
    """``(G, n_max, walk_length)``: the return probabilities ``(P^t)_ii``, ``t = 1..L``.

    ``P = D^-1 A = D^-1/2 (I - L_sym) D^1/2`` has the diagonal of ``(I - L_sym)^t``, i.e.
    ``sum_j u_ij^2 (1 - w_j)^t`` over the ``sym`` eigenpairs; isolated nodes (no walk)
    and padded rows are 0, and so are entries below the round-off floor
    ``16 n_max eps`` (the sum's absolute accuracy).
    """
    if spec.normalization != "sym":
        raise ValueError("random-walk encodings are read from the 'sym' spectrum")
    w, v = spec.eigenvalues, spec.eigenvectors
    t = torch.arange(1, walk_length + 1, dtype=w.dtype, device=w.device)
    powers = (1 - w).unsqueeze(-1) ** t.view(1, 1, -1)  # (G, n, L)
    powers = powers * spec.column_mask().unsqueeze(-1)
    out = ((v * v) @ powers).clamp(max=1.0)
    # the spectral sum is accurate to ~n eps absolute: below that an entry is 0 (as a
    # bipartite graph's odd steps are exactly), so zeros come out exact
    floor = 16 * max(v.shape[-1], 1) * torch.finfo(w.dtype).eps
    out = torch.where(out > floor, out, torch.zeros_like(out))
    return out * (spec.degree > 0).unsqueeze(-1)


def random_walk_pe(
    edge_index: Any,
    num_nodes: int | None = None,
    walk_length: int = 8,
    *,
    edge_weight: Any = None,
    batch: Any = None,
    num_graphs: int | None = None,
    dtype: torch.dtype = torch.float32,
    device: Any = "cpu",
    eigh_options: Mapping[str, Any] | None = None,
) -> Any:
    r"""Random-walk structural encodings: ``(P^t)_ii`` for ``t = 1..walk_length``.

    ``P = D^{-1} A`` is the random-walk matrix (the encodings of Dwivedi et al. 2022, PyG's
    ``AddRandomWalkPE``), computed for all graphs from **one** batched eigendecomposition
    of their ``sym`` Laplacians (``sum_j u_ij^2 (1 - w_j)^t``) instead of ``walk_length``
    sparse products. Self-loops are removed as in every spectra Laplacian (PyG keeps them
    in ``P``); isolated nodes get 0.

    Parameters
    ----------
    edge_index, num_nodes, edge_weight, batch, num_graphs : as
        :func:`spectra.graph.laplacian`; graphs must be undirected.
    walk_length : number of steps ``L``.
    dtype, device, eigh_options : as :func:`spectra.graph.laplacian_pe`.

    Returns
    -------
    ``(N, walk_length)`` tensor (NumPy for a NumPy ``edge_index``).

    Examples
    --------
    >>> import torch
    >>> from spectra.graph import random_walk_pe
    >>> path = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    >>> random_walk_pe(path, 3, walk_length=3)
    tensor([[0.0000, 0.5000, 0.0000],
            [0.0000, 1.0000, 0.0000],
            [0.0000, 0.5000, 0.0000]])
    """
    check_count("walk_length", walk_length)
    edges, layout, from_numpy, out_device = graph_input(
        edge_index, edge_weight, batch, num_nodes, num_graphs, device, torch.float64
    )
    spec = edges_laplacian_eigh(edges, "sym", **dict(eigh_options or {}))
    nodes = node_rows(random_walk_from_spectrum(spec, walk_length), layout)
    nodes = nodes.to(device=out_device, dtype=dtype)
    return nodes.numpy() if from_numpy else nodes


def node_rows(padded: torch.Tensor, layout: Layout) -> torch.Tensor:
    """``(G, n_max, F)`` -> ``(N, F)``."""
    if not layout.num_nodes:
        return padded.new_zeros((0, padded.shape[-1]))
    return padded[layout.batch, layout.local]
