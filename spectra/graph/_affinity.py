"""Dense affinities (one matrix, a padded batch, or a ragged list) read as weighted edges,
so that embeddings and clustering take the same never-padded path as the features."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..core.domain import InputError
from ._assemble import Entries, directed_error, require_undirected
from ._layout import Edges, Layout, glue_threads
from ._parts import GraphSpectra
from ._sparse_path import Lowest
from ._spectrum import edge_spectra


def layout_from_counts(counts: torch.Tensor, n_max: int) -> Layout:
    """The node layout of graphs of ``counts`` nodes, padded to ``n_max``."""
    g = counts.numel()
    device = counts.device
    ptr = torch.zeros(g + 1, dtype=torch.long, device=device)
    ptr[1:] = torch.cumsum(counts, 0)
    batch = torch.repeat_interleave(torch.arange(g, device=device), counts)
    local = torch.arange(batch.numel(), device=device) - ptr[batch]
    return Layout(batch, local, counts, ptr, n_max)


def _as_matrix(a: Any, where: str, ragged: bool) -> tuple[torch.Tensor, bool]:
    was_numpy = isinstance(a, np.ndarray)
    if was_numpy:
        a = torch.from_numpy(np.ascontiguousarray(a))
    elif not isinstance(a, torch.Tensor):
        raise TypeError(
            f"{where}: expected a torch.Tensor or numpy.ndarray, got {type(a).__name__}"
        )
    if a.is_complex():
        raise TypeError(f"{where}: affinities must be real")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise InputError(where, f"must hold square (n, n) matrices, got {tuple(a.shape)}")
    if ragged and a.ndim != 2:
        raise InputError(where, "must be one (n, n) matrix in a ragged list")
    return a, was_numpy


def _is_sparse(a: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return a.layout != torch.strided
    return type(a).__module__.startswith("scipy.sparse")


def _asymmetric(b: torch.Tensor, tol: float) -> bool:
    if b.numel() == 0 or torch.equal(b, b.mT):
        return False
    return float((b - b.mT).abs().max()) > tol * max(float(b.abs().max()), 1.0)


class Affinities:
    """The weighted edges of dense affinities (the diagonal ignored, padding dropped)."""

    def __init__(self, affinity: Any, num_nodes: Any, name: str = "affinity") -> None:
        if _is_sparse(affinity):
            self._init_sparse(affinity, name)
            return
        self.ragged = isinstance(affinity, (list, tuple))
        items = list(affinity) if self.ragged else [affinity]
        mats, flags = [], []
        for i, a in enumerate(items):
            m, was_numpy = _as_matrix(a, f"{name}[{i}]" if self.ragged else name, self.ragged)
            mats.append(m)
            flags.append(was_numpy)
        self.numpy = any(flags)
        self.out_dtype = mats[0].dtype if mats and mats[0].is_floating_point() else torch.float64
        self.device = mats[0].device if mats else torch.device("cpu")
        if self.ragged:
            self.batch_shape: tuple[int, ...] = (len(mats),)
            blocks = [m.detach().cpu().to(torch.float64) for m in mats]
            counts = torch.tensor([b.shape[-1] for b in blocks], dtype=torch.long)
        else:
            a = mats[0].detach().cpu().to(torch.float64)
            self.batch_shape = tuple(a.shape[:-2])
            n = a.shape[-1]
            flat = a.reshape(-1, n, n)
            counts = self._counts(num_nodes, flat.shape[0], n)
            blocks = [flat[g, :c, :c] for g, c in enumerate(counts.tolist())]
        bad = [(g,) for g, b in enumerate(blocks) if not bool(torch.isfinite(b).all())]
        if bad:
            raise InputError(name, "contains NaN or Inf", bad)
        n_max = int(counts.max()) if counts.numel() else 0
        if not self.ragged:
            n_max = mats[0].shape[-1]
        self.layout = layout_from_counts(counts, n_max)
        directed = [(g,) for g, b in enumerate(blocks) if _asymmetric(b, 1e-8)]
        if directed:
            raise directed_error([g for (g,) in directed])
        self.edges = self._edges(blocks)

    def _init_sparse(self, affinity: Any, name: str) -> None:
        """One graph given as a SciPy sparse matrix or a torch sparse tensor: its
        nonzeros are the edges (never densified)."""
        self.ragged = False
        self.batch_shape = ()
        if isinstance(affinity, torch.Tensor):
            coo = affinity.detach().to_sparse_coo().coalesce().cpu()
            shape = tuple(coo.shape)
            rows, cols = coo.indices()
            vals = coo.values()
            self.numpy, self.device = False, affinity.device
            self.out_dtype = vals.dtype if vals.is_floating_point() else torch.float64
        else:
            m = affinity.tocoo()
            shape = m.shape
            rows, cols = (
                torch.from_numpy(m.row.astype(np.int64)),
                torch.from_numpy(m.col.astype(np.int64)),
            )
            vals = torch.from_numpy(np.asarray(m.data))
            self.numpy, self.device = True, torch.device("cpu")
            self.out_dtype = vals.dtype if vals.is_floating_point() else torch.float64
        if len(shape) != 2 or shape[0] != shape[1]:
            raise InputError(name, f"must be a square (n, n) matrix, got {tuple(shape)}")
        if vals.is_complex():
            raise TypeError(f"{name}: affinities must be real")
        vals = vals.to(torch.float64)
        if not bool(torch.isfinite(vals).all()):
            raise InputError(name, "contains NaN or Inf")
        n = int(shape[0])
        self.layout = layout_from_counts(torch.tensor([n]), n)
        keep = (rows != cols) & (vals != 0)
        self.edges = Edges(self.layout, rows[keep], cols[keep], vals[keep])
        entries = Entries(self.layout, self.edges.src, self.edges.dst, self.edges.weight)
        require_undirected(entries, 1e-8)

    @staticmethod
    def _counts(num_nodes: Any, g: int, n: int) -> torch.Tensor:
        if num_nodes is None:
            return torch.full((g,), n, dtype=torch.long)
        counts = torch.as_tensor(np.asarray(num_nodes), dtype=torch.long).reshape(-1)
        if counts.numel() != g:
            raise InputError("num_nodes", f"has {counts.numel()} entries for {g} graphs")
        bad = ((counts < 0) | (counts > n)).nonzero().flatten().tolist()
        if bad:
            raise InputError("num_nodes", f"must lie in [0, {n}]", [(i,) for i in bad])
        return counts

    def _edges(self, blocks: list[torch.Tensor]) -> Edges:
        ptr = self.layout.ptr.tolist()
        src, dst, w = [], [], []
        for g, b in enumerate(blocks):
            i, j = (b != 0).nonzero(as_tuple=True)
            off = i != j  # the diagonal (self-affinity) is ignored
            i, j = i[off], j[off]
            src.append(i + ptr[g])
            dst.append(j + ptr[g])
            w.append(b[i, j])
        empty = torch.zeros(0, dtype=torch.long)
        return Edges(
            self.layout,
            torch.cat(src) if src else empty,
            torch.cat(dst) if dst else empty,
            torch.cat(w) if w else torch.zeros(0, dtype=torch.float64),
        )

    def spectra(
        self, norm_laplacian: bool, lowest: Lowest | None = None, eigh_options: Any = None
    ) -> GraphSpectra:
        """The eigenpairs (large graphs: only the ``lowest``, on the sparse path)."""
        with glue_threads(self.layout.n_max):
            return edge_spectra(
                self.edges,
                "rw" if norm_laplacian else None,
                undirected_tol=None,  # checked on the affinities
                lowest=lowest,
                **dict(eigh_options or {}),
            )

    def padded(self, nodes: torch.Tensor, fill: float = 0.0) -> torch.Tensor:
        """``(N, F)`` per-node values -> ``(G, n_max, F)``, ``fill`` on padded rows."""
        lay = self.layout
        out = nodes.new_full((lay.num_graphs, lay.n_max, *nodes.shape[1:]), fill)
        if lay.num_nodes:
            out[lay.batch, lay.local] = nodes
        return out

    def give_back(self, nodes: torch.Tensor, dtype: torch.dtype | None, fill: float = 0.0) -> Any:
        """``(N, ...)`` per-node values -> the caller's form (a list for ragged input)."""
        if dtype is not None:
            nodes = nodes.to(dtype)
        if self.ragged:
            ptr = self.layout.ptr.tolist()
            out = [nodes[ptr[g] : ptr[g + 1]] for g in range(len(ptr) - 1)]
            if self.numpy:
                return [o.numpy() for o in out]
            return [o.to(self.device) for o in out]
        padded = self.padded(nodes, fill)
        padded = padded.reshape(*self.batch_shape, self.layout.n_max, *padded.shape[2:])
        return padded.numpy() if self.numpy else padded.to(self.device)
