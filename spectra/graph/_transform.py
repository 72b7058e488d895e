"""``LaplacianPE``: a PyG transform for one ``Data``, a whole ``Batch``, or a dataset."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ._pyg import require_pyg

require_pyg()

from torch_geometric.data import Batch, Data  # noqa: E402
from torch_geometric.transforms import BaseTransform  # noqa: E402

from ._heat import heat_kernel_from_spectrum  # noqa: E402
from ._layout import edges_of, make_layout  # noqa: E402
from ._pe import random_signs, select_pe  # noqa: E402
from ._spectrum import edges_laplacian_eigh  # noqa: E402


class LaplacianPE(BaseTransform):
    r"""Laplacian eigenvector positional encodings, a drop-in for PyG's
    ``AddLaplacianEigenvectorPE(k, is_undirected=True)`` that batches.

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

    Parameters
    ----------
    k : number of eigenvectors per graph.
    normalization : ``"sym"`` (default, as PyG), ``"rw"`` or ``None``.
    attr_name : node attribute for the ``(N, k)`` encodings; ``None`` concatenates them
        to ``data.x`` (as PyG).
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

    def __init__(
        self,
        k: int,
        normalization: str | None = "sym",
        attr_name: str | None = "laplacian_eigenvector_pe",
        *,
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
    ) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError(f"k must be a non-negative integer, got {k!r}")
        if normalization not in (None, "sym", "rw"):
            raise ValueError(f"normalization must be None, 'sym' or 'rw', got {normalization!r}")
        self.k = k
        self.normalization = normalization
        self.attr_name = attr_name
        if mask_attr == "default":
            mask_attr = f"{attr_name or 'laplacian_eigenvector_pe'}_mask"
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
        self.eigh_options = dict(eigh_options or {})

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(k={self.k}, normalization={self.normalization!r}, "
            f"random_sign={self.random_sign})"
        )

    def _features(self, data: Any) -> dict[str, torch.Tensor]:
        if getattr(data, "edge_index", None) is None:
            raise ValueError("LaplacianPE needs data.edge_index")
        edge_index = data.edge_index
        out_device = edge_index.device
        solve = out_device if self.device is None else torch.device(self.device)
        weight = None
        if self.weight_attr is not None and self.weight_attr in data:
            weight = data[self.weight_attr]
            if weight.ndim == 2 and weight.shape[-1] == 1:
                weight = weight.view(-1)
            weight = weight.to(solve)
        batch = getattr(data, "batch", None) if isinstance(data, Batch) else None
        num_graphs = data.num_graphs if isinstance(data, Batch) else None
        layout = make_layout(
            edge_index.to(solve),
            data.num_nodes,
            batch.to(solve) if batch is not None else None,
            num_graphs,
        )
        edges = edges_of(edge_index.to(solve), weight, layout, torch.float64)
        spec = edges_laplacian_eigh(edges, self.normalization, **self.eigh_options)
        pe, mask, vals, groups = select_pe(
            spec, layout, self.k, self.drop_trivial, self.multiplicity_tol
        )
        if self.random_sign:
            signs = random_signs(layout.num_graphs, self.k, self.generator).to(pe.device)
            pe = pe * signs[layout.batch]
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
        return feats

    def forward(self, data: Any) -> Any:
        """Add the features to ``data`` (a ``Data`` or a ``Batch``) and return it."""
        if not isinstance(data, Data):
            raise TypeError(
                f"LaplacianPE works on torch_geometric Data/Batch, got {type(data).__name__}"
            )
        feats = self._features(data)
        pe = feats.pop("pe")
        added = dict(feats)
        if self.attr_name is None:
            x = data.x
            if x is None:
                added["x"] = pe
            else:
                x = x.view(-1, 1) if x.dim() == 1 else x
                data.x = torch.cat([x, pe.to(x.device, x.dtype)], dim=-1)
        else:
            added[self.attr_name] = pe
        for name, value in added.items():
            data[name] = value
        if isinstance(data, Batch) and hasattr(data, "_slice_dict"):
            ptr = data.ptr if getattr(data, "ptr", None) is not None else None
            if ptr is not None:
                zeros = torch.zeros(data.num_graphs, dtype=torch.long)
                data._slice_dict = {**data._slice_dict, **{name: ptr.cpu() for name in added}}
                data._inc_dict = {**data._inc_dict, **dict.fromkeys(added, zeros)}
        return data

    def apply_many(self, data_list: Sequence[Any]) -> list[Any]:
        """Transform a list of ``Data`` with one eigendecomposition call for all of them.

        Equivalent to ``[self(d) for d in data_list]`` (up to the basis chosen inside
        repeated eigenvalues), much faster. Returns new objects; the inputs are unchanged.
        """
        items = list(data_list)
        if not items:
            return []
        batch = Batch.from_data_list(items)
        batch = self.forward(batch)
        return batch.to_data_list()
