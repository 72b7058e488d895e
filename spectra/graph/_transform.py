"""``LaplacianPE``: a PyG transform for one ``Data``, a whole ``Batch``, or a dataset."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch_geometric.data import Batch, Data

from ..core.domain import InputError, check_count
from ._heat import heat_nodes
from ._layout import Layout, check_normalization, glue_threads
from ._options import PEAttrs, PEColumns, sign_generator, take_legacy
from ._pe import CONVENTIONS, multiplicity_groups, pe_pipeline, random_signs
from ._single import single_columns, single_heat, single_spectrum, single_takes
from ._transform_base import PETransform, split_pyg_kwargs

#: the flat keywords of earlier releases LaplacianPE still accepts
LEGACY = ("mask_attr", "eigenvalues_attr", "groups_attr", "heat_attr", "weight_attr",
          "drop_trivial", "multiplicity_tol")  # fmt: skip


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
    k : number of eigenvectors per graph, at least 1 (``k=0`` raises: an encoding without
        columns is a mistake, as is ``k=-2``).
    attr_name : node attribute for the ``(N, k)`` encodings; ``None`` concatenates them
        to ``data.x`` (as PyG).
    is_undirected : PyG's flag, accepted for a one-line swap: the graphs must be undirected
        either way (a directed graph raises; use :class:`MagneticLaplacianPE` or
        ``torch_geometric.utils.to_undirected``).
    normalization : ``"sym"`` (default, as PyG), ``"rw"`` or ``None``.
    convention : ``"spectra"`` (default) or ``"pyg"`` (see above).
    attrs : a :class:`~spectra.graph.PEAttrs`: the attributes read and written besides
        ``attr_name``: ``mask`` (the ``(N, k)`` bool column mask of each node's graph;
        default ``f"{attr_name}_mask"``; ``None`` to skip), ``eigenvalues`` (``(N, k)``,
        repeated per node as GraphGPS stores them; 0 where masked), ``groups`` (``(N, k)``
        multiplicity group of each column, BasisNet's eigenspaces; -1 where masked; a group
        cut by the ``k``-th column is incomplete), ``heat`` (for ``heat_times``) and
        ``weight`` (the edge weights read, default ``"edge_weight"`` if present). The older
        keywords ``mask_attr``, ``eigenvalues_attr``, ``groups_attr``, ``heat_attr`` and
        ``weight_attr`` are still accepted.
    columns : a :class:`~spectra.graph.PEColumns`: ``drop_trivial`` (drop the null
        eigenvectors, one per component; default True) and ``multiplicity_tol`` (the gap
        that separates multiplicity groups); the keywords ``drop_trivial`` and
        ``multiplicity_tol`` are still accepted.
    heat_times : also store heat-kernel features ``diag(exp(-t L))`` ``(N, T)`` at these
        times, from the same eigenpairs (graphs on the sparse path: from the ``c + k``
        lowest eigenpairs only, the low-frequency part, exact as ``t`` grows).
    random_sign : random column signs on every call: ``True`` (the global generator) or a
        ``torch.Generator`` to draw from (``generator=`` is still accepted).
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
    >>> from spectra.graph import LaplacianPE, PEAttrs
    >>> ring = torch.tensor([[0, 1, 2, 3, 4, 1, 2, 3, 4, 0], [1, 2, 3, 4, 0, 0, 1, 2, 3, 4]])
    >>> pe = LaplacianPE(k=3, attrs=PEAttrs(groups="pe_groups"))
    >>> data = pe(Data(edge_index=ring, num_nodes=5))
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
        attrs: PEAttrs | None = None,
        columns: PEColumns | None = None,
        heat_times: Sequence[float] | None = None,
        random_sign: bool | torch.Generator = False,
        dtype: torch.dtype = torch.float32,
        device: Any = "cpu",
        eigh_options: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        check_count(k, "k")
        check_normalization(normalization)
        if convention not in CONVENTIONS:
            raise InputError("convention", f"must be 'spectra' or 'pyg', got {convention!r}")
        kwargs = dict(kwargs)
        columns, attrs = take_legacy(kwargs, columns, attrs, LEGACY)
        self.random_sign, self.generator = sign_generator(random_sign, kwargs)
        self.attrs, self.columns = attrs, columns
        self._store(attr_name, attrs.weight, dtype, device, split_pyg_kwargs(kwargs, eigh_options))
        drop = True if columns.drop_trivial is None else columns.drop_trivial
        self._store_columns(
            k, normalization, drop, columns.multiplicity_tol, attrs.mask, attrs.eigenvalues
        )
        self.is_undirected = is_undirected
        self.kwargs = kwargs
        self.convention = convention
        self.groups_attr = attrs.groups
        self.heat_times = None if heat_times is None else tuple(float(t) for t in heat_times)
        self.heat_attr = attrs.heat

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(k={self.k}, normalization={self.normalization!r}, "
            f"convention={self.convention!r}, random_sign={self.random_sign})"
        )

    def path(self, data: Any) -> str:
        """The path ``self(data)`` takes: ``"single"`` (one small ``Data`` on the CPU: the
        direct path, no batch bookkeeping) or ``"batch"`` (a ``Batch``, a large graph, or
        one on another device; the parts it was solved in are then those of
        :func:`spectra.graph.laplacian_pe`)."""
        one = isinstance(data, Data) and not isinstance(data, Batch)
        if one and getattr(data, "edge_index", None) is not None:
            takes = single_takes(data, self.device, self._weight(data), self.eigh_options)
            return "single" if takes else "batch"
        return "batch"

    def forward(self, data: Any) -> Any:
        if type(data) is Data or (isinstance(data, Data) and not isinstance(data, Batch)):
            weight = self._weight(data)  # read once: PyG's attribute lookups cost ~10 us
            if getattr(data, "edge_index", None) is not None and single_takes(
                data, self.device, weight, self.eigh_options
            ):
                with glue_threads(1):
                    self._attach(data, self._single_features(data, weight))
                return data
        return super().forward(data)

    def _single_features(self, data: Any, weight: Any) -> dict[str, torch.Tensor]:
        """The features of one small ``Data`` (the direct path, see :mod:`._single`)."""
        n = int(data.num_nodes)
        pyg = self.convention == "pyg"
        if pyg and self.normalization != "sym":
            raise InputError(
                "convention", "'pyg' is PyG's sym-normalized Laplacian: normalization='sym'"
            )
        partial = self.heat_times is None  # the heat kernel sums over every eigenpair
        lowest = self.k + (int(self.drop_trivial) if pyg else 0) if partial else None
        spec = single_spectrum(
            data.edge_index, weight, n, self.normalization, pyg, self.eigh_options,
            lowest, plus_components=partial and not pyg and self.drop_trivial,
        )  # fmt: skip
        first = int(self.drop_trivial) if pyg else (spec.comps if self.drop_trivial else 0)
        pe, mask, vals = single_columns(spec, first, self.k)
        pe_t = torch.from_numpy(pe)
        if self.random_sign or pyg:
            pe_t = pe_t * random_signs(1, self.k, self.generator)
        device = data.edge_index.device
        feats = {"pe": pe_t.to(device=device, dtype=self.dtype)}
        if self.mask_attr is not None:
            feats[self.mask_attr] = torch.from_numpy(mask).expand(n, self.k).clone()
        if self.eigenvalues_attr is not None:
            feats[self.eigenvalues_attr] = (
                torch.from_numpy(vals).to(self.dtype).expand(n, self.k).clone()
            )
        if self.groups_attr is not None:
            groups = multiplicity_groups(
                torch.from_numpy(vals)[None], torch.from_numpy(mask)[None], self.multiplicity_tol
            )
            feats[self.groups_attr] = groups.expand(n, self.k).clone()
        if self.heat_times is not None:
            heat = single_heat(spec, self.heat_times, self.normalization == "rw")
            feats[self.heat_attr] = torch.from_numpy(heat).to(self.dtype)
        return feats

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
            partial=self.heat_times is None,  # the heat kernel sums over every eigenpair
        )
        with glue_threads(1):  # per-node copies: one kernel thread
            feats = {"pe": pe.to(device=out_device, dtype=self.dtype)}
            self._column_features(feats, layout, out_device, mask, vals)
            if self.groups_attr is not None:
                feats[self.groups_attr] = groups[layout.batch].to(out_device)
            if self.heat_times is not None:
                heat = heat_nodes(spec, self.heat_times)
                feats[self.heat_attr] = heat.to(out_device, self.dtype)
        return feats, layout
