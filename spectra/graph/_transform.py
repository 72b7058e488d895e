"""``LaplacianPE``: a PyG transform for one ``Data``, a whole ``Batch``, or a dataset."""

from __future__ import annotations

import copy
import dataclasses
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ._pyg import require_pyg

require_pyg()

from torch_geometric.data import Batch, Data  # noqa: E402
from torch_geometric.transforms import BaseTransform  # noqa: E402

from ..core import Options, eigh  # noqa: E402
from ._heat import heat_kernel_from_spectrum  # noqa: E402
from ._layout import Layout, graph_input  # noqa: E402
from ._pe import pe_pipeline  # noqa: E402

# options of scipy.sparse.linalg.eigs/eigsh that PyG's **kwargs forward: accepted for a
# one-line swap and ignored (the dense batched solve is exact and needs no iteration knobs)
SCIPY_EIGS_OPTIONS = frozenset(
    {"tol", "maxiter", "ncv", "v0", "sigma", "mode", "M", "Minv", "OPinv", "OPpart", "which"}
)


def split_pyg_kwargs(kwargs: Mapping[str, Any], eigh_options: Mapping[str, Any] | None) -> dict:
    """PyG's ``**kwargs``: spectra.eigh options go to the core, SciPy ``eigsh`` options are
    ignored, anything else is a ``TypeError``. Returns the core options."""
    params = inspect.signature(eigh).parameters
    core = {
        n
        for n, p in params.items()
        if p.kind == p.KEYWORD_ONLY and n not in ("k", "largest", "lindep", "lindep_fill")
    }
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        core |= {f.name for f in dataclasses.fields(Options)}  # eigh's **execution
    out = dict(eigh_options or {})
    for name, value in kwargs.items():
        if name in core:
            out[name] = value
        elif name not in SCIPY_EIGS_OPTIONS:
            raise TypeError(
                f"unexpected keyword argument {name!r}: not an option of spectra.eigh "
                f"({sorted(core)}) nor of scipy's eigsh (accepted and ignored)"
            )
    return out


class PETransform(BaseTransform):
    """Shared plumbing: node features for a ``Data``, a ``Batch`` (through PyG's public
    ``to_data_list`` / ``Batch.from_data_list``) or a list of graphs (``apply_many``)."""

    attr_name: str | None
    default_attr: str
    weight_attr: str | None
    device: Any

    def _features(self, data: Any) -> tuple[dict[str, torch.Tensor], Layout]:
        raise NotImplementedError

    def _graph(self, data: Any, dtype: torch.dtype) -> Any:
        if not isinstance(data, Data):
            raise TypeError(
                f"{type(self).__name__} works on torch_geometric Data/Batch, "
                f"got {type(data).__name__}"
            )
        if getattr(data, "edge_index", None) is None:
            raise ValueError(f"{type(self).__name__} needs data.edge_index")
        weight = None
        if self.weight_attr is not None and self.weight_attr in data:
            weight = data[self.weight_attr]
            if weight.ndim == 2 and weight.shape[-1] == 1:
                weight = weight.view(-1)
        is_batch = isinstance(data, Batch)
        return graph_input(
            data.edge_index,
            weight,
            getattr(data, "batch", None) if is_batch else None,
            data.num_nodes,
            data.num_graphs if is_batch else None,
            self.device,
            dtype,
        )

    def _attach(self, data: Any, feats: Mapping[str, torch.Tensor]) -> None:
        for name, value in feats.items():
            if name == "pe" and self.attr_name is None:  # concatenated to x, as PyG
                x = data.x
                if x is None:
                    data.x = value
                else:
                    x = x.view(-1, 1) if x.dim() == 1 else x
                    data.x = torch.cat([x, value.to(x.device, x.dtype)], dim=-1)
            else:
                data[self.attr_name if name == "pe" else name] = value

    def _attach_parts(
        self, parts: Sequence[Any], feats: Mapping[str, torch.Tensor], layout: Layout
    ) -> None:
        ptr = layout.ptr.tolist()
        for i, part in enumerate(parts):
            self._attach(part, {n: v[ptr[i] : ptr[i + 1]] for n, v in feats.items()})

    def forward(self, data: Any) -> Any:
        """Add the features to ``data`` (a ``Data`` or a ``Batch``) and return it.

        A ``Batch`` made by ``Batch.from_data_list`` is solved in one call, then split with
        ``to_data_list`` and collated again with ``Batch.from_data_list`` (PyG's public API),
        so the new attributes separate back per graph. A ``Batch`` built by hand (no
        per-graph slices) gets the attributes directly.
        """
        feats, layout = self._features(data)
        if isinstance(data, Batch):
            try:
                parts = data.to_data_list()
            except RuntimeError:  # not made by from_data_list: nothing to separate back
                parts = None
            if parts is not None:
                self._attach_parts(parts, feats, layout)
                return Batch.from_data_list(parts)
        self._attach(data, feats)
        return data

    def apply_many(self, data_list: Sequence[Any]) -> list[Any]:
        """Transform a list of ``Data`` with one eigendecomposition call for all of them.

        Equivalent to ``[self(d) for d in data_list]`` (up to the basis chosen inside
        repeated eigenvalues), much faster. Returns new objects; the inputs are unchanged.
        """
        items = list(data_list)
        if not items:
            return []
        feats, layout = self._features(Batch.from_data_list(items))
        parts = [copy.copy(d) for d in items]
        self._attach_parts(parts, feats, layout)
        return parts


class LaplacianPE(PETransform):
    r"""Laplacian eigenvector positional encodings, a drop-in for PyG's
    ``AddLaplacianEigenvectorPE`` (same arguments ``k, attr_name, is_undirected, **kwargs``)
    that batches.

    On a ``Data`` it adds ``data[attr_name]`` ``(N, k)``, eigenvectors ``1..k`` of the
    graph's Laplacian; on a ``Batch`` it does the same for every graph with **one**
    eigendecomposition call (and the result separates back with ``to_data_list()``); as
    a dataset ``pre_transform`` it runs per graph. :meth:`apply_many` transforms a list of
    graphs in one call (the fast way to precompute a dataset).

    Differences from PyG (all documented in :func:`spectra.graph.laplacian_pe`):

    - deterministic signs (the spectra gauge); ``random_sign=True`` flips each column of
      each graph at random on every call, as PyG does;
    - graphs with fewer than ``k + c`` nodes (``c`` components) get zero columns and a
      mask instead of a crash;
    - disconnected graphs: all ``c`` null eigenvectors are dropped, one per component;
      isolated nodes are components of their own (``L_ii = 0``, see
      :func:`spectra.graph.laplacian`);
    - solved in float64, stored in ``dtype`` (float32 by default).

    ``convention="pyg"`` reproduces PyG's choices instead (isolated ``L_ii = 1``, only the
    first eigenvector dropped, PyG's random signs from the global generator).

    Parameters
    ----------
    k : number of eigenvectors per graph.
    attr_name : node attribute for the ``(N, k)`` encodings; ``None`` concatenates them
        to ``data.x`` (as PyG).
    is_undirected : PyG's flag, accepted for a one-line swap: the graphs must be undirected
        either way (a directed graph raises; use :class:`MagneticLaplacianPE` or
        ``torch_geometric.utils.to_undirected``).
    normalization : ``"sym"`` (default, as PyG), ``"rw"`` or ``None``.
    convention : ``"spectra"`` (default) or ``"pyg"`` (see above).
    mask_attr : node attribute for the ``(N, k)`` bool mask (the graph's column mask,
        repeated per node); default ``f"{attr_name}_mask"``; ``None`` to skip.
    eigenvalues_attr : node attribute for the ``(N, k)`` eigenvalues (repeated per node,
        as GraphGPS stores them; 0 where masked), e.g. ``"laplacian_eigenvalues"``.
    groups_attr : node attribute for the ``(N, k)`` multiplicity group of each column
        (BasisNet: columns with equal ids span one eigenspace; -1 where masked). A group
        cut by the ``k``-th column is incomplete.
    heat_times, heat_attr : also store heat-kernel features ``diag(exp(-t L))`` ``(N, T)``
        at these times, from the same eigenpairs (``heat_attr`` default
        ``"heat_kernel_diag"``).
    random_sign, generator : random column signs on every call.
    drop_trivial : drop the null eigenvectors (one per component).
    multiplicity_tol : eigenvalue gap that separates multiplicity groups.
    weight_attr : edge attribute read as weights (default ``"edge_weight"``, if present).
    dtype : dtype of the stored features.
    device : where to solve (default ``"cpu"``; ``None``: where the graph lives).
    eigh_options : execution options passed to :func:`spectra.eigh` (``workers``,
        ``chunk_size``, ``max_memory``, ``strategy``).
    **kwargs : PyG's eigensolver keywords: :func:`spectra.eigh` options are forwarded,
        SciPy ``eigsh`` options (``tol``, ``maxiter``, ``ncv``, ``v0``, ``sigma``, ...) are
        accepted and ignored (the dense solve is exact), others raise ``TypeError``.

    Examples
    --------
    >>> import torch
    >>> from torch_geometric.data import Data
    >>> from spectra.graph import LaplacianPE
    >>> ring = torch.tensor([[0, 1, 2, 3, 4, 1, 2, 3, 4, 0], [1, 2, 3, 4, 0, 0, 1, 2, 3, 4]])
    >>> data = LaplacianPE(k=3, groups_attr="pe_groups")(Data(edge_index=ring, num_nodes=5))
    >>> data.laplacian_eigenvector_pe.shape, data.pe_groups[0].tolist()
    (torch.Size([5, 3]), [0, 0, 1])
    """

    default_attr = "laplacian_eigenvector_pe"

    def __init__(
        self,
        k: int,
        attr_name: str | None = "laplacian_eigenvector_pe",
        is_undirected: bool = False,
        *,
        normalization: str | None = "sym",
        convention: str = "spectra",
        mask_attr: str | None = "default",
        eigenvalues_attr: str | None = None,
        groups_attr: str | None = None,
        heat_times: Sequence[float] | None = None,
        heat_attr: str = "heat_kernel_diag",
        random_sign: bool = False,
        generator: torch.Generator | None = None,
        drop_trivial: bool = True,
        multiplicity_tol: float = 1e-6,
        weight_attr: str | None = "edge_weight",
        dtype: torch.dtype = torch.float32,
        device: Any = "cpu",
        eigh_options: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError(f"k must be a non-negative integer, got {k!r}")
        if normalization not in (None, "sym", "rw"):
            raise ValueError(f"normalization must be None, 'sym' or 'rw', got {normalization!r}")
        if convention not in ("spectra", "pyg"):
            raise ValueError(f"convention must be 'spectra' or 'pyg', got {convention!r}")
        self.k = k
        self.attr_name = attr_name
        self.is_undirected = is_undirected
        self.kwargs = kwargs
        self.normalization = normalization
        self.convention = convention
        if mask_attr == "default":
            mask_attr = f"{attr_name or self.default_attr}_mask"
        self.mask_attr = mask_attr
        self.eigenvalues_attr = eigenvalues_attr
        self.groups_attr = groups_attr
        self.heat_times = None if heat_times is None else tuple(float(t) for t in heat_times)
        self.heat_attr = heat_attr
        self.random_sign = random_sign
        self.generator = generator
        self.drop_trivial = drop_trivial
        self.multiplicity_tol = multiplicity_tol
        self.weight_attr = weight_attr
        self.dtype = dtype
        self.device = device
        self.eigh_options = split_pyg_kwargs(kwargs, eigh_options)

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(k={self.k}, normalization={self.normalization!r}, "
            f"convention={self.convention!r}, random_sign={self.random_sign})"
        )

    def _features(self, data: Any) -> tuple[dict[str, torch.Tensor], Layout]:
        edges, layout, _, out_device = self._graph(data, torch.float64)
        spec, (pe, mask, vals, groups) = pe_pipeline(
            edges,
            self.k,
            self.normalization,
            drop_trivial=self.drop_trivial,
            random_sign=self.random_sign,
            generator=self.generator,
            multiplicity_tol=self.multiplicity_tol,
            convention=self.convention,
            eigh_options=self.eigh_options,
        )
        node_graph = layout.batch
        feats = {"pe": pe.to(device=out_device, dtype=self.dtype)}
        if self.mask_attr is not None:
            feats[self.mask_attr] = mask[node_graph].to(out_device)
        if self.eigenvalues_attr is not None:
            feats[self.eigenvalues_attr] = vals[node_graph].to(out_device, self.dtype)
        if self.groups_attr is not None:
            feats[self.groups_attr] = groups[node_graph].to(out_device)
        if self.heat_times is not None:
            heat = heat_kernel_from_spectrum(spec, self.heat_times)
            feats[self.heat_attr] = heat[layout.batch, layout.local].to(out_device, self.dtype)
        return feats, layout
