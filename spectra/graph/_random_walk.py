"""Random-walk structural encodings ``diag(P^t)``, ``P = D^-1 A``, from the Laplacian
eigenpairs (the encodings of PyG's ``AddRandomWalkPE``, for a whole batch in one call)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ..core.domain import InputError, check_count
from ._layout import Edges, glue_threads, graph_input
from ._parts import GraphSpectra
from ._spectrum import edge_spectra


def _clean(out: torch.Tensor, n: int, signed: bool) -> torch.Tensor:
    """Zero the entries below the spectral sum's round-off floor ``16 n eps`` (a bipartite
    graph's odd steps come out exact zeros); clamp probabilities to 1 (not with ``signed``
    weights, where ``(P^t)_ii`` may exceed 1 or be negative)."""
    if not signed:
        out = out.clamp(max=1.0)
    floor = 16 * max(n, 1) * torch.finfo(out.dtype).eps
    return torch.where(out.abs() > floor, out, torch.zeros_like(out))


def walk_nodes(spec: GraphSpectra, walk_length: int, signed: bool) -> torch.Tensor:
    """``(N, walk_length)`` ``(P^t)_ii`` per node, part by part."""
    t = torch.arange(1, walk_length + 1, dtype=spec.degree.dtype, device=spec.degree.device)
    out = spec.node_sums(lambda w: (1 - w).unsqueeze(-1) ** t.view(1, 1, -1), walk_length)
    out = _clean(out, spec.layout.n_max, signed)
    return out * (spec.degree > 0).unsqueeze(-1)


def check_walk_degrees(edges: Edges) -> bool:
    """``P = D^-1 A`` needs a nonzero degree at every node with edges (signed weights may
    cancel); negative degrees are refused by the Laplacian. Returns whether weights are
    signed."""
    nz = edges.weight != 0
    touched = torch.zeros(edges.layout.num_nodes, dtype=torch.bool, device=edges.src.device)
    touched[edges.src[nz]] = True
    deg = edges.degree()
    bad = (touched & (deg == 0)).nonzero().flatten()
    if bad.numel():
        graphs = torch.unique(edges.layout.batch[bad]).tolist()
        raise InputError(
            "edge_weight",
            f"cancels to a zero weighted degree at node(s) {bad.tolist()[:10]} that have "
            "edges: P = D^-1 A is undefined there",
            [(g,) for g in graphs],
        )
    return bool((edges.weight < 0).any())


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
    ``AddRandomWalkPE``), computed for all graphs from batched eigendecompositions of their
    ``sym`` Laplacians (``sum_j u_ij^2 (1 - w_j)^t``) instead of ``walk_length`` sparse
    products. Self-loops are removed as in every spectra Laplacian (PyG keeps them in
    ``P``); isolated nodes get 0. Signed weights are exact as long as every degree is
    positive (``(P^t)_ii`` may then exceed 1 or be negative); a negative degree, or a zero
    degree at a node with edges, raises :class:`~spectra.core.InputError`.

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
    check_count(walk_length, "walk_length")
    edges, _, from_numpy, out_device = graph_input(
        edge_index, edge_weight, batch, num_nodes, num_graphs, device, torch.float64
    )
    nodes = edges_walk(edges, walk_length, eigh_options).to(device=out_device, dtype=dtype)
    return nodes.numpy() if from_numpy else nodes


def edges_walk(
    edges: Edges, walk_length: int, eigh_options: Mapping[str, Any] | None
) -> torch.Tensor:
    """The pipeline behind :func:`random_walk_pe` and ``RandomWalkPE``: ``(N, L)``."""
    with glue_threads(edges.layout.n_max):
        signed = check_walk_degrees(edges)
        spec = edge_spectra(edges, "sym", **dict(eigh_options or {}))
        return walk_nodes(spec, walk_length, signed)
