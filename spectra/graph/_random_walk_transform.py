"""``RandomWalkPE``: random-walk structural encodings as a PyG transform."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ..core.domain import check_count
from ._layout import Layout
from ._random_walk import edges_walk
from ._transform_base import PETransform


class RandomWalkPE(PETransform):
    r"""Random-walk structural encodings ``(P^t)_ii``, ``t = 1..walk_length``: a drop-in for
    PyG's ``AddRandomWalkPE(walk_length, attr_name)`` that solves a whole ``Batch`` with one
    eigendecomposition (see :func:`spectra.graph.random_walk_pe`; self-loops are removed).

    Examples
    --------
    >>> import torch
    >>> from torch_geometric.data import Data
    >>> from spectra.graph import RandomWalkPE
    >>> tri = torch.tensor([[0, 1, 2, 1, 2, 0], [1, 2, 0, 0, 1, 2]])
    >>> RandomWalkPE(3)(Data(edge_index=tri, num_nodes=3)).random_walk_pe[0]
    tensor([0.0000, 0.5000, 0.2500])
    """

    default_attr = "random_walk_pe"

    def __init__(
        self,
        walk_length: int,
        attr_name: str | None = "random_walk_pe",
        *,
        weight_attr: str | None = "edge_weight",
        dtype: torch.dtype = torch.float32,
        device: Any = "cpu",
        eigh_options: Mapping[str, Any] | None = None,
    ) -> None:
        check_count(walk_length, "walk_length")
        self._store(attr_name, weight_attr, dtype, device, dict(eigh_options or {}))
        self.walk_length = walk_length

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(walk_length={self.walk_length})"

    def _features(self, data: Any) -> tuple[dict[str, torch.Tensor], Layout]:
        edges, layout, _, out_device = self._graph(data, torch.float64)
        rw = edges_walk(edges, self.walk_length, self.eigh_options)
        return {"pe": rw.to(out_device, self.dtype)}, layout
