"""``MagneticLaplacianPE``: magnetic Laplacian encodings of directed graphs as a PyG transform."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ..core.domain import check_count
from ._layout import Layout
from ._magnetic import _check, magnetic_pe_from_edges
from ._options import PEAttrs, PEColumns, refuse_unknown, take_legacy
from ._transform_base import PETransform

#: the flat keywords of earlier releases MagneticLaplacianPE still accepts
LEGACY = ("drop_trivial", "trivial_tol", "multiplicity_tol", "mask_attr", "eigenvalues_attr",
          "weight_attr")  # fmt: skip


class MagneticLaplacianPE(PETransform):
    r"""Magnetic Laplacian positional encodings of directed graphs (Geisler et al. 2023).

    Adds ``data[attr_name]`` ``(N, 2k)``: the real and imaginary parts ``[Re | Im]`` of the
    eigenvectors of the ``k`` smallest eigenvalues of each graph's magnetic Laplacian with
    potential ``q`` (see :func:`spectra.graph.magnetic_laplacian_pe`), and the column mask
    ``(N, k)``. A ``Batch`` is solved with **one** complex batched eigh call and separates
    back with ``to_data_list()``; :meth:`apply_many` does a list of graphs in one call.
    The phase of each eigenvector is fixed by the core's gauge (deterministic).

    Parameters
    ----------
    k : eigenvectors per graph (at least 1).
    q : the potential (0 gives the symmetrized graph's Laplacian PE).
    attr_name : node attribute (``None``: concatenated to ``data.x``).
    normalization : ``"sym"`` (default) or ``None``.
    symmetrize : ``"max"`` (default, ``A OR A^T``) or ``"mean"`` (``(A + A^T) / 2``).
    attrs : a :class:`~spectra.graph.PEAttrs` (``mask``, default ``f"{attr_name}_mask"``;
        ``eigenvalues``; ``weight``), as :class:`LaplacianPE`.
    columns : a :class:`~spectra.graph.PEColumns` (``drop_trivial``, default False;
        ``trivial_tol``; ``multiplicity_tol``), as the function.
    dtype, device, eigh_options : as :class:`LaplacianPE`.
    **legacy : the older flat keywords ``drop_trivial``, ``trivial_tol``,
        ``multiplicity_tol``, ``mask_attr``, ``eigenvalues_attr``, ``weight_attr``.

    Examples
    --------
    >>> import torch
    >>> from torch_geometric.data import Data
    >>> from spectra.graph import MagneticLaplacianPE
    >>> path = torch.tensor([[0, 1, 2], [1, 2, 3]])  # directed path 0 -> 1 -> 2 -> 3
    >>> data = MagneticLaplacianPE(k=2, q=0.1)(Data(edge_index=path, num_nodes=4))
    >>> data.magnetic_laplacian_pe.shape, data.magnetic_laplacian_pe_mask.all().item()
    (torch.Size([4, 4]), True)
    """

    default_attr = "magnetic_laplacian_pe"

    def __init__(
        self,
        k: int,
        q: float = 0.25,
        attr_name: str | None = "magnetic_laplacian_pe",
        *,
        normalization: str | None = "sym",
        symmetrize: str = "max",
        attrs: PEAttrs | None = None,
        columns: PEColumns | None = None,
        dtype: torch.dtype = torch.float32,
        device: Any = "cpu",
        eigh_options: Mapping[str, Any] | None = None,
        **legacy: Any,
    ) -> None:
        check_count(k, "k")
        _check(q, normalization, symmetrize)
        legacy = dict(legacy)
        columns, attrs = take_legacy(legacy, columns, attrs, LEGACY)
        refuse_unknown(legacy, "MagneticLaplacianPE")
        self.attrs, self.columns = attrs, columns
        self._store(attr_name, attrs.weight, dtype, device, dict(eigh_options or {}))
        drop = bool(columns.drop_trivial)  # None: False, the magnetic default
        self._store_columns(
            k, normalization, drop, columns.multiplicity_tol, attrs.mask, attrs.eigenvalues
        )
        self.q = q
        self.symmetrize = symmetrize
        self.trivial_tol = columns.trivial_tol

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(k={self.k}, q={self.q})"

    def _features(self, data: Any) -> tuple[dict[str, torch.Tensor], Layout]:
        edges, layout, _, out_device = self._graph(data, torch.float64)
        pe, mask, vals, _ = magnetic_pe_from_edges(
            edges,
            self.k,
            self.q,
            self.normalization,
            self.symmetrize,
            self.drop_trivial,
            self.trivial_tol,
            self.multiplicity_tol,
            self.eigh_options,
        )
        feats = {"pe": torch.cat([pe.real, pe.imag], dim=-1).to(out_device, self.dtype)}
        self._column_features(feats, layout, out_device, mask, vals)
        return feats, layout
