"""Laplacian eigenmaps and spectral clustering of many graphs (dense affinities) at once."""

from __future__ import annotations

from typing import Any

import torch

from ..core.domain import check_count
from ._affinity import Affinities
from ._kmeans import batched_kmeans
from ._parts import GraphSpectra
from ._sparse_path import Lowest


def _columns(spec: GraphSpectra, start: int, count: int) -> torch.Tensor:
    """``(N, count)``: columns ``start .. start + count - 1`` of each graph (zero where the
    graph is smaller)."""
    first = torch.full((spec.layout.num_graphs,), start, dtype=torch.long)
    return spec.columns(first, count)[0]


def spectral_embedding(
    adjacency: Any,
    n_components: int = 8,
    *,
    norm_laplacian: bool = True,
    drop_first: bool = True,
    num_nodes: Any = None,
    eigh_options: Any = None,
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
        (torch or NumPy), a list of ``(n_i, n_i)`` matrices of different sizes (each solved
        at its own size), or one SciPy sparse matrix / torch sparse tensor (never
        densified). The diagonal is ignored.
    n_components : number of columns of the embedding.
    norm_laplacian, drop_first : as scikit-learn.
    num_nodes : for a padded batch, the real size of each graph (rows beyond are padding).
    eigh_options : as :func:`spectra.graph.laplacian_pe`: graphs of at least
        ``sparse_from`` nodes (default: the cost model's ~550) take the sparse path (the
        ``n_components + drop_first`` lowest eigenpairs of the sparse Laplacian).

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
    check_count(n_components, "n_components", 0)
    aff = Affinities(adjacency, num_nodes, "adjacency")
    spec = aff.spectra(norm_laplacian, Lowest(n_components + int(drop_first)), eigh_options)
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
    eigh_options: Any = None,
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
    eigh_options : as :func:`spectral_embedding` (large graphs: the sparse path).

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
    check_count(n_clusters, "n_clusters")
    n_comp = n_clusters if n_components is None else n_components
    aff = Affinities(affinity, num_nodes, "affinity")
    spec = aff.spectra(True, Lowest(n_comp), eigh_options)
    maps = aff.padded(_columns(spec, 0, n_comp))
    labels, _ = batched_kmeans(
        maps,
        n_clusters,
        aff.layout.node_mask(),
        n_init=n_init,
        max_iter=max_iter,
        seed=random_state,
    )
    lay = aff.layout
    nodes = labels[lay.batch, lay.local] if lay.num_nodes else labels.new_zeros((0,))
    return aff.give_back(nodes, None, fill=-1)
