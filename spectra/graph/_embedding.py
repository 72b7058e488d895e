"""Laplacian eigenmaps and spectral clustering of many graphs (dense affinities) at once."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ._kmeans import batched_kmeans
from ._layout import Layout, check_count, require_undirected
from ._spectrum import LaplacianSpectrum, padded_laplacian_eigh


def _layout_from_counts(counts: torch.Tensor, n_max: int) -> Layout:
    g = counts.numel()
    device = counts.device
    ptr = torch.zeros(g + 1, dtype=torch.long, device=device)
    ptr[1:] = torch.cumsum(counts, 0)
    batch = torch.repeat_interleave(torch.arange(g, device=device), counts)
    local = torch.arange(batch.numel(), device=device) - ptr[batch]
    return Layout(batch, local, counts, ptr, n_max)


class _Affinities:
    """Dense affinities of one graph, a padded batch, or a ragged list, as one padded batch."""

    def __init__(self, affinity: Any, num_nodes: Any, name: str = "affinity") -> None:
        self.ragged = isinstance(affinity, (list, tuple))
        self.numpy = False
        mats: list[torch.Tensor] = []
        items = list(affinity) if self.ragged else [affinity]
        for i, a in enumerate(items):
            where = f"{name}[{i}]" if self.ragged else name
            if isinstance(a, np.ndarray):
                self.numpy = True
                a = torch.from_numpy(np.ascontiguousarray(a))
            elif not isinstance(a, torch.Tensor):
                raise TypeError(
                    f"{where}: expected a torch.Tensor or numpy.ndarray, got {type(a).__name__}"
                )
            if a.is_complex():
                raise TypeError(f"{where}: affinities must be real")
            if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
                raise ValueError(f"{where}: expected square (n, n) matrices, got {tuple(a.shape)}")
            if self.ragged and a.ndim != 2:
                raise ValueError(f"{where}: a ragged list holds single (n, n) matrices")
            mats.append(a)
        self.out_dtype = mats[0].dtype if mats and mats[0].is_floating_point() else torch.float64
        self.device = mats[0].device if mats else torch.device("cpu")
        if self.ragged:
            self.batch_shape: tuple[int, ...] = (len(mats),)
            sizes = [m.shape[-1] for m in mats]
            n_max = max(sizes, default=0)
            adj = torch.zeros((len(mats), n_max, n_max), dtype=torch.float64)
            for i, m in enumerate(mats):  # packing only; the math below is batched
                adj[i, : m.shape[-1], : m.shape[-1]] = m.detach().cpu().to(torch.float64)
            counts = torch.tensor(sizes, dtype=torch.long)
        else:
            a = mats[0]
            self.batch_shape = tuple(a.shape[:-2])
            n_max = a.shape[-1]
            adj = a.detach().cpu().to(torch.float64).reshape(-1, n_max, n_max)
            if num_nodes is None:
                counts = torch.full((adj.shape[0],), n_max, dtype=torch.long)
            else:
                counts = torch.as_tensor(np.asarray(num_nodes), dtype=torch.long).reshape(-1)
                if counts.numel() != adj.shape[0]:
                    raise ValueError(
                        f"num_nodes has {counts.numel()} entries for {adj.shape[0]} graphs"
                    )
                if bool(((counts < 0) | (counts > n_max)).any()):
                    raise ValueError(f"num_nodes must lie in [0, {n_max}]")
        bad = (~torch.isfinite(adj)).flatten(1).any(-1).nonzero().flatten().tolist()
        if bad:
            raise ValueError(f"{name}: NaN/Inf in graph(s) {bad[:10]}")
        self.layout = _layout_from_counts(counts, n_max)
        mask = self.layout.node_mask()
        keep = mask.unsqueeze(-1) & mask.unsqueeze(-2)
        keep &= ~torch.eye(n_max, dtype=torch.bool)  # the diagonal (self-affinity) is ignored
        self.adj = adj * keep
        require_undirected(self.adj, 1e-8)

    def spectrum(self, norm_laplacian: bool) -> LaplacianSpectrum:
        return padded_laplacian_eigh(self.adj, self.layout, "rw" if norm_laplacian else None)

    def give_back(self, padded: torch.Tensor, dtype: torch.dtype | None) -> Any:
        """``(G, n_max, ...)`` -> the caller's form (list for ragged input)."""
        if dtype is not None:
            padded = padded.to(dtype)
        if self.ragged:
            counts = self.layout.counts.tolist()
            out = [padded[i, :c] for i, c in enumerate(counts)]
            if self.numpy:
                return [o.numpy() for o in out]
            return [o.to(self.device) for o in out]
        n = self.layout.n_max
        padded = padded.reshape(*self.batch_shape, n, *padded.shape[2:])
        return padded.numpy() if self.numpy else padded.to(self.device)


def _columns(spec: LaplacianSpectrum, start: int, count: int) -> torch.Tensor:
    """Columns ``start .. start + count - 1`` of each graph, zero where the graph is smaller."""
    g, n = spec.eigenvalues.shape
    idx = start + torch.arange(count)
    keep = idx.unsqueeze(0) < spec.num_nodes.unsqueeze(-1)  # (G, count)
    safe = idx.clamp_max(max(n - 1, 0))
    if n == 0:
        return spec.eigenvectors.new_zeros((g, 0, count))
    cols = spec.eigenvectors[:, :, safe]
    return cols * keep.unsqueeze(-2)


def spectral_embedding(
    adjacency: Any,
    n_components: int = 8,
    *,
    norm_laplacian: bool = True,
    drop_first: bool = True,
    num_nodes: Any = None,
) -> Any:
    """Laplacian eigenmaps of many graphs at once, as ``sklearn.manifold.spectral_embedding``.

    The eigenvectors of the smallest eigenvalues of each graph's Laplacian: with
    ``norm_laplacian`` those of the ``sym`` Laplacian scaled by ``D^{-1/2}`` (the
    eigenvectors of ``I - D^{-1} A``, as scikit-learn), otherwise those of ``D - A``;
    ``drop_first`` drops the first one (the constant vector of a connected graph), as
    scikit-learn does, which returns ``n_components`` columns either way. Each column's
    largest-|entry| is positive (scikit-learn's ``_deterministic_vector_sign_flip``).
    One batched eigendecomposition, in float64, for all graphs.

    Differs from scikit-learn on isolated nodes: their Laplacian row is zero (see
    :func:`spectra.graph.laplacian`), where scikit-learn puts 1 on the diagonal.

    Parameters
    ----------
    adjacency : symmetric, non-negative affinities ``(n, n)`` or a batch ``(..., n, n)``
        (torch or NumPy), or a list of ``(n_i, n_i)`` matrices of different sizes. The
        diagonal is ignored.
    n_components : number of columns of the embedding.
    norm_laplacian, drop_first : as scikit-learn.
    num_nodes : for a padded batch, the real size of each graph (rows beyond are padding).

    Returns
    -------
    ``(..., n, n_components)`` in the input's form and floating dtype (a list for a list);
    columns beyond a small graph's size, and padded rows, are zero.

    Examples
    --------
    >>> import numpy as np
    >>> from spectra.graph import spectral_embedding
    >>> two_pairs = np.kron(np.eye(2), np.ones((2, 2))) + 0.01
    >>> spectral_embedding(two_pairs, n_components=1).round(3)
    array([[ 0.493],
           [ 0.493],
           [-0.493],
           [-0.493]])
    """
    check_count("n_components", n_components)
    aff = _Affinities(adjacency, num_nodes, "adjacency")
    spec = aff.spectrum(norm_laplacian)
    emb = _columns(spec, 1 if drop_first else 0, n_components)
    return aff.give_back(emb, aff.out_dtype)


def spectral_clustering(
    affinity: Any,
    n_clusters: int = 8,
    *,
    n_components: int | None = None,
    n_init: int = 10,
    max_iter: int = 300,
    random_state: int = 0,
    num_nodes: Any = None,
) -> Any:
    """Spectral clustering of many graphs at once, as ``sklearn.cluster.spectral_clustering``
    (``SpectralClustering(affinity="precomputed", assign_labels="kmeans")``).

    Embeds each graph with :func:`spectral_embedding` (``drop_first=False``,
    ``n_components`` columns, default ``n_clusters``; one eigendecomposition call for all
    graphs), then labels the embeddings with a batched k-means (k-means++ seeding,
    ``n_init`` restarts, seeded by ``random_state``; all graphs and restarts at once).

    Parameters
    ----------
    affinity : as ``adjacency`` of :func:`spectral_embedding`.
    n_clusters : clusters per graph.
    n_components, n_init, max_iter, random_state : as scikit-learn.
    num_nodes : for a padded batch, the real size of each graph.

    Returns
    -------
    Labels ``(..., n)`` int64 (a list for a list), numbered by first appearance (node 0 is
    in cluster 0); ``-1`` on padded rows.

    Examples
    --------
    >>> import torch
    >>> from spectra.graph import spectral_clustering
    >>> blocks = torch.block_diag(torch.ones(3, 3), torch.ones(2, 2)) + 0.01
    >>> spectral_clustering(blocks, n_clusters=2)
    tensor([0, 0, 0, 1, 1])
    """
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, int) or n_clusters < 1:
        raise ValueError(f"n_clusters must be a positive integer, got {n_clusters!r}")
    n_comp = n_clusters if n_components is None else n_components
    aff = _Affinities(affinity, num_nodes, "affinity")
    spec = aff.spectrum(norm_laplacian=True)
    maps = _columns(spec, 0, n_comp)
    labels, _ = batched_kmeans(
        maps,
        n_clusters,
        aff.layout.node_mask(),
        n_init=n_init,
        max_iter=max_iter,
        seed=random_state,
    )
    return aff.give_back(labels, None)
