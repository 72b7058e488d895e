"""Laplacian eigenvector positional encodings for many graphs at once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import torch

from ..core.domain import InputError, check_count
from ._layout import Edges, glue_threads, graph_input, to_numpy_fields
from ._options import PEColumns, refuse_unknown, sign_generator, take_legacy
from ._parts import GraphSpectra
from ._sparse_path import Lowest
from ._spectrum import edge_spectra


class LaplacianPEResult(NamedTuple):
    """Positional encodings of many graphs.

    ``pe`` ``(N, k)`` per node; ``mask`` ``(G, k)`` True where column ``j`` of graph ``g``
    is a real eigenvector (False: zero padding, the graph has fewer than ``k`` non-trivial
    eigenvectors); ``eigenvalues`` ``(G, k)`` (0 where masked); ``groups`` ``(G, k)``
    multiplicity group of each column (0, 1, ... in order; equal ids share an eigenvalue
    within the tolerance; -1 where masked); ``num_components`` ``(G,)``.
    """

    pe: torch.Tensor
    mask: torch.Tensor
    eigenvalues: torch.Tensor
    groups: torch.Tensor
    num_components: torch.Tensor


def multiplicity_groups(eigenvalues: torch.Tensor, mask: torch.Tensor, tol: float) -> torch.Tensor:
    """Group ids of ascending ``(G, k)`` eigenvalues: a new group starts at a gap > ``tol``.

    >>> import torch
    >>> w = torch.tensor([[0.5, 1.0, 1.0, 1.5]])
    >>> multiplicity_groups(w, torch.tensor([[True, True, True, False]]), 1e-6)
    tensor([[ 0,  1,  1, -1]])
    """
    if eigenvalues.shape[-1] == 0:
        return torch.zeros(eigenvalues.shape, dtype=torch.long, device=eigenvalues.device)
    gap = eigenvalues[..., 1:] - eigenvalues[..., :-1]
    scale = eigenvalues.abs().amax(-1, keepdim=True).clamp_min(1.0)
    starts = torch.cat(
        [torch.zeros_like(gap[..., :1], dtype=torch.long), (gap > tol * scale).long()], dim=-1
    )
    groups = torch.cumsum(starts, -1)
    return torch.where(mask, groups, torch.full_like(groups, -1))


def select_pe(
    spec: GraphSpectra,
    k: int,
    drop_trivial: bool,
    multiplicity_tol: float,
    drop: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Columns ``c_g .. c_g + k - 1`` of each graph's eigenvectors (``c_g`` = components,
    or ``drop`` ``(G,)`` when given).

    Returns ``(pe (N, k), mask (G, k), eigenvalues (G, k), groups (G, k))`` in the
    spectrum's dtype, on its device.
    """
    if drop is not None:
        first = drop
    elif drop_trivial:
        first = spec.num_components
    else:
        first = torch.zeros_like(spec.num_components)
    pe, mask, vals = spec.columns(first, k)
    return pe, mask, vals, multiplicity_groups(vals, mask, multiplicity_tol)


def random_signs(g: int, k: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """``(G, k)`` random +-1 (float64, CPU), one per graph and column.

    Drawn as PyG's ``AddLaplacianEigenvectorPE`` draws its signs (``torch.randint(0, 2,
    (k,))``, from the global generator when ``generator`` is None), graph after graph.
    """
    bits = torch.randint(0, 2, (g, k), generator=generator)
    return (2 * bits - 1).to(torch.float64)


CONVENTIONS = ("spectra", "pyg")


def pe_pipeline(
    edges: Edges,
    k: int,
    normalization: str | None,
    *,
    drop_trivial: bool,
    random_sign: bool,
    generator: torch.Generator | None,
    multiplicity_tol: float,
    convention: str,
    eigh_options: Mapping[str, Any] | None,
    draw_signs: bool = True,
    partial: bool = True,
) -> tuple[GraphSpectra, tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]:
    """The one PE pipeline (``laplacian_pe`` and ``LaplacianPE``): one core call for all
    graphs, column selection, optional random signs (``draw_signs=False``: none drawn, the
    compiled path draws them in its own op). Returns the spectrum (for heat features) and
    ``(pe (N, k), mask (G, k), eigenvalues (G, k), groups (G, k))``. ``partial=False``:
    graphs solved densely keep every eigenpair (the heat features sum over them)."""
    check_count(k, "k")
    if convention not in CONVENTIONS:
        raise InputError("convention", f"must be 'spectra' or 'pyg', got {convention!r}")
    pyg = convention == "pyg"
    if pyg and normalization != "sym":
        raise InputError(
            "convention", "'pyg' is PyG's sym-normalized Laplacian: normalization='sym'"
        )
    layout = edges.layout
    with glue_threads(layout.n_max):
        lowest = (
            Lowest(k + int(drop_trivial), partial=partial)
            if pyg
            else Lowest(k, deflate=drop_trivial, partial=partial)
        )
        opts = dict(eigh_options or {})
        spec = edge_spectra(edges, normalization, isolated_one=pyg, lowest=lowest, **opts)
    with glue_threads(1):  # gathers and scatters over all nodes: one kernel thread
        drop = None
        if pyg:  # PyG drops exactly the first eigenvector of every graph
            drop = torch.full((layout.num_graphs,), int(drop_trivial), dtype=torch.long)
        pe, mask, vals, groups = select_pe(spec, k, drop_trivial, multiplicity_tol, drop)
        if (random_sign or pyg) and draw_signs:
            signs = random_signs(layout.num_graphs, k, generator).to(pe.device)
            pe = pe * signs[layout.batch]
    return spec, (pe, mask, vals, groups)


def laplacian_pe(
    edge_index: Any,
    num_nodes: int | None = None,
    k: int = 8,
    *,
    edge_weight: Any = None,
    batch: Any = None,
    num_graphs: int | None = None,
    normalization: str | None = "sym",
    columns: PEColumns | None = None,
    random_sign: bool | torch.Generator = False,
    dtype: torch.dtype = torch.float32,
    device: Any = "cpu",
    eigh_options: Mapping[str, Any] | None = None,
    convention: str = "spectra",
    **legacy: Any,
) -> LaplacianPEResult:
    """Laplacian eigenvector positional encodings of one or many graphs, one core call.

    For each graph: the eigenvectors of its Laplacian after the trivial ones, in ascending
    order of eigenvalue, the ``k`` first of them (as PyG's ``AddLaplacianEigenvectorPE``
    on a connected graph).

    **Trivial eigenvectors**: the Laplacian of a graph with ``c`` connected components
    (isolated nodes count as components, see :func:`laplacian`) has the eigenvalue 0
    ``c`` times; with ``drop_trivial`` all ``c`` are dropped (PyG drops only the first, so
    it keeps null vectors of disconnected graphs). **Small graphs**: when fewer than ``k``
    eigenvectors remain, the missing columns are zeros and ``mask`` is False there (PyG
    crashes on ``N <= k``). **Sign**: the spectra gauge (largest-|entry| positive) makes
    the result deterministic; ``random_sign`` flips each column of each graph at random
    (training augmentation, as PyG). Within a repeated eigenvalue (see ``groups``) the basis
    is one valid orthonormal basis of the eigenspace, not a canonical one.

    Parameters
    ----------
    edge_index, num_nodes, edge_weight, batch, num_graphs, normalization :
        as :func:`spectra.graph.laplacian`; graphs must be undirected. ``"rw"`` gives
        ``D``-orthonormal eigenvectors of ``I - D^{-1} A``.
    k : number of eigenvectors per graph (at least 1).
    columns : a :class:`~spectra.graph.PEColumns`: ``drop_trivial`` (drop the ``c`` null
        eigenvectors, the default, or keep them) and ``multiplicity_tol`` (eigenvalues
        closer than this, relative to ``max(1, |w|)``, share a multiplicity group). The
        keywords ``drop_trivial=`` and ``multiplicity_tol=`` are still accepted.
    random_sign : random column signs: ``True`` (the global generator) or the
        ``torch.Generator`` to draw from (``generator=`` is still accepted).
    dtype : output dtype (default float32); the solve always runs in float64.
    eigh_options : execution options passed to :func:`spectra.eigh` (``workers``,
        ``chunk_size``, ``max_memory``, ``strategy``), the sparse path's ``tol``,
        ``maxiter``, ``precondition`` (``"jacobi"``, ``"amg"``), ``method`` and
        ``on_fail``, and ``sparse_from`` (default: a cost model, dense ``n^3`` against the
        sparse path's linear time, which crosses near 550 nodes; given: graphs of at
        least this many nodes take the sparse path, their ``k`` lowest eigenpairs after the
        deflated null space from the sparse Laplacian, memory ``O(nnz + n k)``; a graph
        whose dense working set exceeds ``max_memory`` always does; the others are solved
        densely, similar small graphs in one padded call and the rest at their own sizes,
        in calls whose dense buffers fit ``max_memory``).
    device : where to solve (default ``"cpu"``; ``None``: where the input lives). Results
        come back on ``edge_index``'s device.
    convention : ``"spectra"`` (default) or ``"pyg"``: PyG's ``AddLaplacianEigenvectorPE``
        output: ``L_ii = 1`` at isolated nodes, exactly the first eigenvector dropped
        (null vectors of disconnected graphs kept), random column signs drawn as PyG draws
        them (``torch.randint(0, 2, (k,))`` per graph from ``generator``, the global one by
        default; ``torch.manual_seed`` then gives PyG's signs). What still differs: the
        sign before the flip (PyG keeps LAPACK's arbitrary one, we start from the gauge),
        the basis inside repeated eigenvalues, zero columns instead of PyG's crash when
        ``N <= k``, and PyG's float32 solve.

    Returns
    -------
    LaplacianPEResult
        ``(pe, mask, eigenvalues, groups, num_components)``: tensors on ``edge_index``'s
        device, NumPy arrays for a NumPy ``edge_index``.

    Examples
    --------
    >>> import torch
    >>> from spectra.graph import laplacian_pe
    >>> ring = torch.tensor([[0, 1, 2, 3, 1, 2, 3, 0], [1, 2, 3, 0, 0, 1, 2, 3]])
    >>> out = laplacian_pe(ring, 4, k=4)
    >>> out.mask
    tensor([[ True,  True,  True, False]])
    >>> out.eigenvalues
    tensor([[1., 1., 2., 0.]])
    >>> out.groups
    tensor([[ 0,  0,  1, -1]])
    """
    if torch.compiler.is_compiling():  # torch.compile / torch.export: the custom ops
        if legacy or eigh_options:
            raise InputError(
                "eigh_options" if eigh_options else sorted(legacy)[0],
                "is not taken under torch.compile (the compiled op runs the defaults): call "
                "laplacian_pe outside the compiled region for these options",
            )
        sizes = (num_nodes, k, num_graphs)
        return _compiled(edge_index, sizes, edge_weight, batch, normalization, columns,
                         random_sign, dtype, device, convention)  # fmt: skip
    if dtype not in (torch.float32, torch.float64):
        raise TypeError(f"dtype must be float32 or float64, got {dtype}")
    legacy = dict(legacy)
    columns, _ = take_legacy(legacy, columns, None, ("drop_trivial", "multiplicity_tol"))
    random_sign, generator = sign_generator(random_sign, legacy)
    refuse_unknown(legacy, "laplacian_pe()")
    drop_trivial = True if columns.drop_trivial is None else columns.drop_trivial
    result = pe_outputs(edge_index, (num_nodes, k, num_graphs), edge_weight, batch,
                        normalization, drop_trivial, columns.multiplicity_tol, convention,
                        dtype, device, eigh_options, (random_sign, generator))  # fmt: skip
    return to_numpy_fields(result) if isinstance(edge_index, np.ndarray) else result


def pe_outputs(
    edge_index: Any,
    sizes: tuple[int | None, int, int | None],
    edge_weight: Any,
    batch: Any,
    normalization: str | None,
    drop_trivial: bool,
    multiplicity_tol: float,
    convention: str,
    dtype: torch.dtype,
    device: Any,
    eigh_options: Mapping[str, Any] | None = None,
    signs: tuple[bool, torch.Generator | None] | None = (False, None),
) -> LaplacianPEResult:
    """:func:`laplacian_pe` after its argument handling, tensors out. ``sizes``:
    ``(num_nodes, k, num_graphs)``; ``signs``: ``(random_sign, generator)``, or ``None``
    to draw no signs at all (the compiled path draws them in its own op)."""
    num_nodes, k, num_graphs = sizes
    edges, _, _, out_device = graph_input(
        edge_index, edge_weight, batch, num_nodes, num_graphs, device, torch.float64
    )
    random_sign, generator = signs if signs is not None else (False, None)
    spec, (pe, mask, vals, groups) = pe_pipeline(
        edges,
        k,
        normalization,
        drop_trivial=drop_trivial,
        random_sign=random_sign,
        generator=generator,
        multiplicity_tol=multiplicity_tol,
        convention=convention,
        eigh_options=eigh_options,
        draw_signs=signs is not None,
    )
    return LaplacianPEResult(
        pe.to(device=out_device, dtype=dtype),
        mask.to(out_device),
        vals.to(device=out_device, dtype=dtype),
        groups.to(out_device),
        spec.num_components.to(out_device),
    )


def _compiled(
    edge_index: Any,
    sizes: tuple[int | None, int, int | None],
    edge_weight: Any,
    batch: Any,
    normalization: str | None,
    columns: PEColumns | None,
    random_sign: bool | torch.Generator,
    dtype: torch.dtype,
    device: Any,
    convention: str,
) -> LaplacianPEResult:
    """:func:`laplacian_pe` under ``torch.compile``: checks, then the custom ops."""
    from ._compile import compiled_laplacian_pe

    check_count(sizes[1], "k")
    if dtype not in (torch.float32, torch.float64):
        raise TypeError(f"dtype must be float32 or float64, got {dtype}")
    cols = columns if columns is not None else PEColumns()
    drop = True if cols.drop_trivial is None else cols.drop_trivial
    out = compiled_laplacian_pe(edge_index, sizes, edge_weight, batch, normalization, drop,
                                cols.multiplicity_tol, random_sign, dtype, device,
                                convention)  # fmt: skip
    return LaplacianPEResult(*out)
