"""The eigenpairs of many graphs, held in parts that are never padded to the largest graph.

A part is one core call's result: a padded batch of similar small graphs, one larger graph
of a ragged call, or a graph solved on the sparse path (only its ``m`` lowest eigenpairs).
Everything the features need (columns per graph, per-node spectral sums, a padded view)
is read part by part and written straight into per-node / per-graph outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ._layout import Layout


@dataclass(frozen=True)
class Part:
    """Eigenpairs of the graphs ``graphs`` ``(B,)``: ``eigenvalues`` ``(B, m)`` ascending,
    ``eigenvectors`` ``(B, n, m)`` (rows ``>= counts`` zero), ``valid`` ``(B,)`` the number of
    real columns per graph (``counts`` on the dense paths, ``min(m, counts)`` on the sparse
    one); ``complete`` tells whether every eigenpair of each graph is there."""

    graphs: torch.Tensor
    eigenvalues: torch.Tensor
    eigenvectors: torch.Tensor
    counts: torch.Tensor
    valid: torch.Tensor
    complete: bool
    path: str  # "padded", "ragged" or "sparse"

    def column_mask(self) -> torch.Tensor:
        """``(B, m)``: True for real eigenpairs."""
        ar = torch.arange(self.eigenvalues.shape[-1], device=self.eigenvalues.device)
        return ar < self.valid.unsqueeze(-1)

    def rows(self, layout: Layout) -> tuple[torch.Tensor, torch.Tensor]:
        """``(B, n)`` row mask (real nodes) and the global node index of every real row."""
        dev = self.eigenvectors.device
        ar = torch.arange(self.eigenvectors.shape[-2], device=dev)
        mask = ar < self.counts.to(dev).unsqueeze(-1)
        nodes = layout.ptr.to(dev)[self.graphs.to(dev)].unsqueeze(-1) + ar
        return mask, nodes[mask]


@dataclass(frozen=True)
class GraphSpectra:
    """The parts of all graphs of a layout, with per-graph components and per-node degrees."""

    layout: Layout
    parts: tuple[Part, ...]
    num_components: torch.Tensor  # (G,)
    degree: torch.Tensor  # (N,) weighted degree
    normalization: str | None
    vector_dtype: torch.dtype  # the eigenvectors' (complex for magnetic Laplacians)

    @property
    def paths(self) -> tuple[str, ...]:
        """The path of each part, in order (what ran; tests assert it)."""
        return tuple(p.path for p in self.parts)

    def columns(
        self, first: torch.Tensor, k: int
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Columns ``first[g] .. first[g] + k - 1`` of every graph: ``(pe (N, k), mask (G, k),
        eigenvalues (G, k))``, zero where a graph has fewer eigenpairs."""
        lay = self.layout
        dtype, device = self.degree.dtype, self.degree.device
        vdtype = self.vector_dtype
        pe = torch.zeros((lay.num_nodes, k), dtype=vdtype, device=device)
        mask = torch.zeros((lay.num_graphs, k), dtype=torch.bool, device=device)
        vals = torch.zeros((lay.num_graphs, k), dtype=dtype, device=device)
        first = first.to(device)
        for part in self.parts:
            w, v = part.eigenvalues, part.eigenvectors
            b, n, m = v.shape
            idx = first[part.graphs].unsqueeze(-1) + torch.arange(k, device=device)
            ok = idx < part.valid.unsqueeze(-1)
            if not part.complete and bool((~ok & (idx < part.counts.unsqueeze(-1))).any()):
                raise RuntimeError("a sparse part lacks requested eigenpairs")  # a bug, not input
            if m == 0 or n == 0:
                continue
            if b <= FEW_GRAPHS:  # each graph's nodes and columns are slices: no masks
                _sliced_columns(part, lay, idx, ok, pe, mask, vals)
                continue
            safe = torch.where(ok, idx, torch.zeros_like(idx)).clamp_max(m - 1)
            vals[part.graphs] = w.gather(-1, safe) * ok
            mask[part.graphs] = ok
            cols = v.gather(-1, safe.unsqueeze(-2).expand(b, n, k)) * ok.unsqueeze(-2)
            rows, nodes = part.rows(lay)
            pe[nodes] = cols[rows]
        return pe, mask, vals

    def count_below(self, tol: float) -> torch.Tensor:
        """``(G,)`` number of real eigenvalues ``<= tol`` per graph."""
        out = torch.zeros(self.layout.num_graphs, dtype=torch.long, device=self.degree.device)
        for part in self.parts:
            out[part.graphs] = ((part.eigenvalues <= tol) & part.column_mask()).sum(-1)
        return out

    def node_sums(self, fn: Callable[[torch.Tensor], torch.Tensor], width: int) -> torch.Tensor:
        """``(N, width)``: ``sum_j |u_ij|^2 fn(w)_j`` over each node's graph's eigenpairs,
        ``u`` the orthonormal (``sym``) eigenvectors; ``fn`` maps ``(B, m)`` eigenvalues to
        ``(B, m, width)``."""
        lay = self.layout
        out = torch.zeros(
            (lay.num_nodes, width), dtype=self.degree.dtype, device=self.degree.device
        )
        for part in self.parts:
            v = part.eigenvectors
            rows, nodes = part.rows(lay)
            if self.normalization == "rw":  # back to the orthonormal sym eigenvectors
                deg = torch.zeros(rows.shape, dtype=self.degree.dtype, device=v.device)
                deg[rows] = self.degree[nodes]
                v = v * torch.where(deg > 0, deg, torch.ones_like(deg)).sqrt().unsqueeze(-1)
            weights = fn(part.eigenvalues) * part.column_mask().unsqueeze(-1)
            sq = (v * v.conj()).real if v.is_complex() else v * v
            out[nodes] = (sq @ weights)[rows]
        return out

    def padded(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(G, n_max)`` eigenvalues and ``(G, n_max, n_max)`` eigenvectors, zero-padded
        (the public :class:`~spectra.graph.LaplacianSpectrum`; memory ``G n_max^2``)."""
        lay = self.layout
        g, n = lay.num_graphs, lay.n_max
        vdtype = self.vector_dtype
        w = torch.zeros((g, n), dtype=self.degree.dtype, device=self.degree.device)
        v = torch.zeros((g, n, n), dtype=vdtype, device=self.degree.device)
        for part in self.parts:
            if part.path == "padded" and part.graphs.numel() == g:
                return part.eigenvalues, part.eigenvectors
            nb, m = part.eigenvectors.shape[-2:]
            w[part.graphs, :m] = part.eigenvalues * part.column_mask()
            v[part.graphs, :nb, :m] = part.eigenvectors
        return w, v


#: parts of at most this many graphs are written graph by graph (slices)
FEW_GRAPHS = 16
_NUMPY = (torch.float32, torch.float64, torch.complex64, torch.complex128)


def _sliced_columns(
    part: Part,
    layout: Layout,
    idx: torch.Tensor,
    ok: torch.Tensor,
    pe: torch.Tensor,
    mask: torch.Tensor,
    vals: torch.Tensor,
) -> None:
    """:meth:`GraphSpectra.columns` of a part of few graphs: each graph's nodes are one
    slice of ``pe`` and its wanted columns one slice of the part's (``ok`` is a prefix of
    the ``k`` columns), where the general route gathers and masks the whole padded part
    (D&D-like batch, 12 sparse parts of one graph and 10 ragged ones of 9-14: the selection
    6.1 -> 3.6 ms)."""
    graphs = part.graphs.tolist()
    counts = part.counts.tolist()
    firsts = idx[:, 0].tolist()
    takes = ok.sum(-1).tolist()
    starts = layout.ptr[part.graphs].tolist()
    mask[part.graphs] = ok  # (vals and pe start as zeros: only the wanted columns are set)
    w, v, pe_, vals_ = part.eigenvalues, part.eigenvectors, pe, vals
    tensors = (w, v, pe, vals)
    if all(t.device.type == "cpu" and not t.requires_grad and t.dtype in _NUMPY for t in tensors):
        # NumPy views of the same memory: a slice copy costs ~1 us there, ~5 us in torch
        w, v, pe_, vals_ = (t.resolve_conj().numpy() for t in tensors)  # type: ignore[assignment]
    for i, g in enumerate(graphs):
        first, count, start, n = firsts[i], takes[i], starts[i], counts[i]
        if count:
            vals_[g, :count] = w[i, first : first + count]
            pe_[start : start + n, :count] = v[i, :n, first : first + count]
