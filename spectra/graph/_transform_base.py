"""Shared plumbing of the PyG positional-encoding transforms (``LaplacianPE``,
``MagneticLaplacianPE``, ``RandomWalkPE``): PyG keyword handling, common attributes,
``Data``/``Batch`` input, storing the features and separating a ``Batch`` back per graph."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ._pyg import require_pyg

require_pyg()

from torch_geometric.data import Batch, Data  # noqa: E402
from torch_geometric.transforms import BaseTransform  # noqa: E402

from ..core.domain import EIGH_OPTION_NAMES, InputError  # noqa: E402
from ._layout import Layout, glue_threads, graph_input  # noqa: E402

# options of scipy.sparse.linalg.eigs/eigsh that PyG's **kwargs forward: accepted for a
# one-line swap and ignored (the dense batched solve is exact and needs no iteration knobs)
SCIPY_EIGS_OPTIONS = frozenset(
    {"tol", "maxiter", "ncv", "v0", "sigma", "mode", "M", "Minv", "OPinv", "OPpart", "which"}
)


def _largest_graph(data: Any) -> int:
    """The largest graph's node count (a ``Batch``: from its ``ptr``), for the thread rule."""
    ptr = getattr(data, "ptr", None) if isinstance(data, Batch) else None
    if isinstance(ptr, torch.Tensor) and ptr.numel() > 1:
        return int((ptr[1:] - ptr[:-1]).max())
    n = getattr(data, "num_nodes", None)
    return int(n) if n is not None else 0


def split_pyg_kwargs(kwargs: Mapping[str, Any], eigh_options: Mapping[str, Any] | None) -> dict:
    """PyG's ``**kwargs``: spectra.eigh options go to the core, SciPy ``eigsh`` options are
    ignored, anything else is a ``TypeError``. Returns the core options."""
    core = EIGH_OPTION_NAMES  # the core's list of the keywords a domain may forward
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
    dtype: torch.dtype
    device: Any
    eigh_options: dict[str, Any]
    k: int
    normalization: str | None
    drop_trivial: bool
    multiplicity_tol: float
    mask_attr: str | None
    eigenvalues_attr: str | None

    def _store(
        self,
        attr_name: str | None,
        weight_attr: str | None,
        dtype: torch.dtype,
        device: Any,
        eigh_options: dict[str, Any],
    ) -> None:
        """The attributes every transform has."""
        self.attr_name = attr_name
        self.weight_attr = weight_attr
        self.dtype = dtype
        self.device = device
        self.eigh_options = eigh_options

    def _store_columns(
        self,
        k: int,
        normalization: str | None,
        drop_trivial: bool,
        multiplicity_tol: float,
        mask_attr: str | None,
        eigenvalues_attr: str | None,
    ) -> None:
        """The eigenvector-column settings, and where the per-column mask and eigenvalues
        go (mask ``"default"``: named after the PE)."""
        self.k = k
        self.normalization = normalization
        self.drop_trivial = drop_trivial
        self.multiplicity_tol = multiplicity_tol
        if mask_attr == "default":
            mask_attr = f"{self.attr_name or self.default_attr}_mask"
        self.mask_attr = mask_attr
        self.eigenvalues_attr = eigenvalues_attr

    def _column_features(
        self,
        feats: dict[str, torch.Tensor],
        layout: Layout,
        out_device: Any,
        mask: torch.Tensor,
        vals: torch.Tensor,
    ) -> None:
        """Add the ``(G, k)`` mask and eigenvalues, repeated per node, to ``feats``."""
        if self.mask_attr is not None:
            feats[self.mask_attr] = mask[layout.batch].to(out_device)
        if self.eigenvalues_attr is not None:
            feats[self.eigenvalues_attr] = vals[layout.batch].to(out_device, self.dtype)

    def _features(self, data: Any) -> tuple[dict[str, torch.Tensor], Layout]:
        raise NotImplementedError

    def _weight(self, data: Any) -> Any:
        """The edge weights ``data[weight_attr]`` (``(E, 1)`` read as ``(E,)``), or None."""
        weight = None
        if self.weight_attr is not None and self.weight_attr in data:
            weight = data[self.weight_attr]
            if isinstance(weight, torch.Tensor) and weight.ndim == 2 and weight.shape[-1] == 1:
                weight = weight.view(-1)
        return weight

    def _graph(self, data: Any, dtype: torch.dtype) -> Any:
        if not isinstance(data, Data):
            raise TypeError(
                f"{type(self).__name__} works on torch_geometric Data/Batch, "
                f"got {type(data).__name__}"
            )
        if getattr(data, "edge_index", None) is None:
            raise InputError("data", f"has no edge_index ({type(self).__name__} needs one)")
        weight = self._weight(data)
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

        A ``Batch`` made by ``Batch.from_data_list`` is solved in one call; the new node
        attributes are registered in its per-graph slices (node-level, like ``x``), so
        they separate back with ``to_data_list()``; where that bookkeeping is not there,
        the batch is split with ``to_data_list`` and collated again (PyG's public API). A
        ``Batch`` built by hand (no per-graph slices) gets the attributes directly.
        """
        with glue_threads(_largest_graph(data)):
            feats, layout = self._features(data)
        with glue_threads(1):  # attaching and slicing: no kernel work worth a thread team
            if isinstance(data, Batch):
                if self._attach_sliced(data, feats, layout):
                    return data
                try:
                    parts = data.to_data_list()
                except RuntimeError:  # not made by from_data_list: nothing to separate back
                    parts = None
                if parts is not None:
                    self._attach_parts(parts, feats, layout)
                    return Batch.from_data_list(parts)
            self._attach(data, feats)
            return data

    def _attach_sliced(self, data: Any, feats: Mapping[str, torch.Tensor], layout: Layout) -> bool:
        """Attach node features to a collated ``Batch`` and register their per-graph slices
        (the node pointer, no increment) so that ``to_data_list`` separates them; False
        where the batch has no such bookkeeping (then nothing is changed)."""
        slices = getattr(data, "_slice_dict", None)
        incs = getattr(data, "_inc_dict", None)
        ptr = getattr(data, "ptr", None)
        if not isinstance(slices, dict) or not isinstance(incs, dict) or ptr is None:
            return False
        node_ptr = layout.ptr.to("cpu")
        if node_ptr.numel() != ptr.numel() or not torch.equal(node_ptr, ptr.to("cpu")):
            return False
        self._attach(data, feats)
        slices, incs = dict(slices), dict(incs)  # a transform's input is a shallow copy
        data._slice_dict, data._inc_dict = slices, incs
        zeros = torch.zeros(layout.num_graphs, dtype=torch.long)
        for name in feats:
            key = (
                "x"
                if name == "pe" and self.attr_name is None
                else (self.attr_name if name == "pe" else name)
            )
            slices[key] = node_ptr
            incs[key] = zeros
        return True

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
