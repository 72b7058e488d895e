"""Magnetic Laplacian positional encodings for directed graphs (Geisler et al. 2023).

The magnetic Laplacian with potential ``q`` of a directed graph with adjacency ``A`` is the
complex Hermitian matrix

    L_q = D_s - A_s * exp(i Theta),    Theta_uv = 2 pi q (A_uv - A_vu),

``A_s`` the symmetrized adjacency, ``D_s`` its degrees, ``*`` elementwise; the normalized
variant is ``I - (D_s^-1/2 A_s D_s^-1/2) * exp(i Theta)``. ``exp(i Theta)`` is unitary
elementwise and ``Theta`` antisymmetric, so ``L_q`` is Hermitian and positive semidefinite;
``q = 0`` gives the Laplacian of the undirected graph ``A_s``; reversing every edge
conjugates ``L_q``. S. Geisler, Y. Li, D. Mankowitz, A. T. Cemgil, S. Guennemann,
C. Paduraru, "Transformers Meet Directed Graphs", ICML 2023 (arXiv:2302.00049); the
magnetic Laplacian of MagNet (Zhang et al., NeurIPS 2021) uses ``A_s = (A + A^T) / 2``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import torch

from ..core.domain import InputError, check_count
from ._assemble import magnetic_entries
from ._layout import (
    Edges,
    as_torch,
    edges_of,
    glue_threads,
    graph_input,
    make_layout,
    to_numpy_fields,
)
from ._options import PEColumns, refuse_unknown, take_legacy
from ._pe import select_pe
from ._sparse_path import Lowest
from ._spectrum import count_edge_components, solve_entries

SYMMETRIZE = ("max", "mean")


class MagneticPEResult(NamedTuple):
    """Magnetic Laplacian encodings of many directed graphs.

    ``pe`` ``(N, k)`` complex eigenvectors per node (phase fixed by the core's gauge: the
    largest-magnitude entry of each eigenvector is real and positive); ``mask``,
    ``eigenvalues`` (real, ascending), ``groups`` ``(G, k)`` as in
    :class:`~spectra.graph.LaplacianPEResult`. :meth:`features` gives the real
    ``(N, 2k)`` node features ``[Re pe | Im pe]``.
    """

    pe: Any
    mask: Any
    eigenvalues: Any
    groups: Any

    def features(self) -> Any:
        """``[Re pe | Im pe]`` ``(N, 2k)``, the real features a model consumes."""
        if isinstance(self.pe, np.ndarray):
            return np.concatenate([self.pe.real, self.pe.imag], axis=-1)
        return torch.cat([self.pe.real, self.pe.imag], dim=-1)


def _check(q: float, normalization: str | None, symmetrize: str) -> None:
    if not isinstance(q, (int, float)) or isinstance(q, bool) or not math.isfinite(q):
        raise InputError("q", f"must be a finite number, got {q!r}")
    if normalization not in (None, "sym"):
        raise InputError("normalization", f"must be None or 'sym', got {normalization!r}")
    if symmetrize not in SYMMETRIZE:
        raise InputError("symmetrize", f"must be 'max' or 'mean', got {symmetrize!r}")


def magnetic_from_edges(
    edges: Edges, q: float, normalization: str | None, symmetrize: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(G, n_max, n_max)`` complex magnetic Laplacians and the ``(N,)`` degrees of A_s."""
    _check(q, normalization, symmetrize)
    entries, deg = magnetic_entries(edges, q, normalization, symmetrize)
    return entries.padded(), deg


def magnetic_laplacian(
    edge_index: Any,
    num_nodes: int | None = None,
    edge_weight: Any = None,
    q: float = 0.25,
    normalization: str | None = "sym",
    *,
    batch: Any = None,
    num_graphs: int | None = None,
    symmetrize: str = "max",
) -> Any:
    r"""Dense magnetic Laplacian ``L_q`` of one directed graph, or a zero-padded batch.

    ``L_q = D_s - A_s * exp(i Theta)`` (``normalization=None``) or
    ``I - D_s^{-1/2} A_s D_s^{-1/2} * exp(i Theta)`` (``"sym"``), with
    ``Theta_uv = 2 pi q (A_uv - A_vu)``; ``A_s = max(A, A^T)`` elementwise
    (``symmetrize="max"``: ``A OR A^T`` on unweighted graphs, as Geisler et al.'s code) or
    ``(A + A^T) / 2`` (``"mean"``, MagNet's). ``edge_index`` lists directed edges
    ``source -> target`` (``A[source, target] = weight``); self-loops are dropped, duplicate
    edges add up, isolated nodes get ``L_ii = 0`` (as :func:`spectra.graph.laplacian`).

    Returns
    -------
    complex128 ``(N, N)``, or ``(G, n_max, n_max)`` with ``batch``. NumPy in, NumPy out.

    Examples
    --------
    >>> import torch
    >>> from spectra.graph import magnetic_laplacian
    >>> L = magnetic_laplacian(torch.tensor([[0], [1]]), 2, q=0.25, normalization=None)
    >>> L.imag  # one edge 0 -> 1: A_s times the phase exp(-i pi / 2) = -i
    tensor([[ 0., -1.],
            [ 1.,  0.]], dtype=torch.float64)
    >>> bool((L == L.mH).all())  # Hermitian
    True
    """
    ei, from_numpy = as_torch(edge_index, "edge_index")
    assert ei is not None
    ew, _ = as_torch(edge_weight, "edge_weight")
    bt, _ = as_torch(batch, "batch")
    layout = make_layout(ei, num_nodes, bt.to(ei.device) if bt is not None else None, num_graphs)
    lap, _ = magnetic_from_edges(
        edges_of(ei, ew, layout, torch.float64), q, normalization, symmetrize
    )
    if bt is None:
        lap = lap[0] if layout.num_graphs else lap.new_zeros((0, 0))
    return lap.numpy() if from_numpy else lap


def magnetic_laplacian_pe(
    edge_index: Any,
    num_nodes: int | None = None,
    k: int = 8,
    q: float = 0.25,
    *,
    edge_weight: Any = None,
    batch: Any = None,
    num_graphs: int | None = None,
    normalization: str | None = "sym",
    symmetrize: str = "max",
    columns: PEColumns | None = None,
    dtype: torch.dtype = torch.float32,
    device: Any = "cpu",
    eigh_options: Mapping[str, Any] | None = None,
    **legacy: Any,
) -> MagneticPEResult:
    """Magnetic Laplacian eigenvector encodings of directed graphs, one complex core call.

    For each graph the eigenvectors of its magnetic Laplacian (see
    :func:`magnetic_laplacian`) of the ``k`` smallest eigenvalues, as the positional
    encodings of Geisler et al. (2023), for all graphs of a batch in **one** batched
    complex Hermitian eigh (padded as :func:`spectra.graph.laplacian_eigh`). The phase of
    each eigenvector is fixed by the core's gauge (largest-magnitude entry real and
    positive), so results are deterministic. ``q = 0`` gives the Laplacian PE of the
    symmetrized graph (:func:`spectra.graph.laplacian_pe`, as complex vectors with zero
    imaginary part).

    Parameters
    ----------
    edge_index, num_nodes, edge_weight, batch, num_graphs : as
        :func:`spectra.graph.laplacian`, but the edges are **directed**.
    k : eigenvectors per graph (graphs with fewer get zero columns, ``mask`` False).
    q : the potential (Geisler et al. use 0.25 / max(min(m, N), 1) relative to the number
        of directed edges m; pass that value to reproduce their relative q).
    normalization : ``"sym"`` (default) or ``None`` (the combinatorial ``D_s - ...``).
    symmetrize : ``"max"`` (default) or ``"mean"``, the symmetrized adjacency ``A_s``.
    columns : a :class:`~spectra.graph.PEColumns`: ``drop_trivial`` (default False: drop
        the eigenvalues below ``trivial_tol``, the null space: one vector per component at
        ``q = 0``; none for most directed graphs at ``q > 0``) and ``multiplicity_tol``
        (the gap that separates multiplicity ``groups``); the keywords ``drop_trivial``,
        ``trivial_tol`` and ``multiplicity_tol`` are still accepted. Graphs from
        ``sparse_from`` nodes (see :func:`spectra.graph.laplacian_pe`) take the sparse path.
    dtype : real dtype of the eigenvalues (``pe`` is the matching complex dtype); the solve
        runs in complex128.
    device, eigh_options : as :func:`spectra.graph.laplacian_pe`.

    Returns
    -------
    MagneticPEResult
        ``(pe, mask, eigenvalues, groups)``; NumPy arrays for a NumPy ``edge_index``.

    Examples
    --------
    >>> import torch
    >>> from spectra.graph import magnetic_laplacian_pe
    >>> cycle = torch.tensor([[0, 1, 2], [1, 2, 0]])  # the directed 3-cycle
    >>> out = magnetic_laplacian_pe(cycle, 3, k=3, q=0.25)
    >>> out.eigenvalues.round(decimals=4)
    tensor([[0.1340, 1.0000, 1.8660]])
    >>> out.features().shape
    torch.Size([3, 6])
    """
    check_count(k, "k")
    if dtype not in (torch.float32, torch.float64):
        raise TypeError(f"dtype must be float32 or float64, got {dtype}")
    _check(q, normalization, symmetrize)
    legacy = dict(legacy)
    names = ("drop_trivial", "trivial_tol", "multiplicity_tol")
    columns, _ = take_legacy(legacy, columns, None, names)
    refuse_unknown(legacy, "magnetic_laplacian_pe()")
    drop_trivial = bool(columns.drop_trivial)
    trivial_tol, multiplicity_tol = columns.trivial_tol, columns.multiplicity_tol
    edges, _, from_numpy, out_device = graph_input(
        edge_index, edge_weight, batch, num_nodes, num_graphs, device, torch.float64
    )
    pe, mask, vals, groups = magnetic_pe_from_edges(
        edges,
        k,
        q,
        normalization,
        symmetrize,
        drop_trivial,
        trivial_tol,
        multiplicity_tol,
        eigh_options,
    )
    cdtype = torch.complex64 if dtype == torch.float32 else torch.complex128
    result = MagneticPEResult(
        pe.to(device=out_device, dtype=cdtype),
        mask.to(out_device),
        vals.to(device=out_device, dtype=dtype),
        groups.to(out_device),
    )
    return to_numpy_fields(result) if from_numpy else result


def magnetic_pe_from_edges(
    edges: Edges,
    k: int,
    q: float,
    normalization: str | None,
    symmetrize: str,
    drop_trivial: bool,
    trivial_tol: float,
    multiplicity_tol: float,
    eigh_options: Mapping[str, Any] | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The pipeline behind :func:`magnetic_laplacian_pe` and ``MagneticLaplacianPE``."""
    _check(q, normalization, symmetrize)
    with glue_threads(edges.layout.n_max):
        entries, deg = magnetic_entries(edges, q, normalization, symmetrize)
        comps = count_edge_components(edges)
        bound_two = normalization == "sym" and bool((edges.weight >= 0).all())
        opts = dict(eigh_options or {})
        lowest = Lowest(k, plus_components=drop_trivial)
        spec = solve_entries(entries, deg, comps, normalization, bound_two, opts, lowest)
        if drop_trivial:
            drop = spec.count_below(trivial_tol)
        else:
            drop = torch.zeros(edges.layout.num_graphs, dtype=torch.long, device=deg.device)
        return select_pe(spec, k, False, multiplicity_tol, drop)
