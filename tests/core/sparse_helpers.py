"""Sparse test matrices (graph Laplacians) and eigenspace comparisons for the sparse tests."""

from __future__ import annotations

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
from scipy.spatial import cKDTree


def adjacency_rgg(n: int, degree: float = 10.0, seed: int = 0) -> sp.csr_matrix:
    """Random geometric graph in the unit square with mean degree ~``degree``."""
    rng = np.random.default_rng(seed)
    pts = rng.random((n, 2))
    pairs = cKDTree(pts).query_pairs(np.sqrt(degree / (np.pi * n)), output_type="ndarray")
    a = sp.coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    return (a + a.T).tocsr()


def normalized_laplacian(adj: sp.spmatrix) -> sp.csr_matrix:
    """``I - D^-1/2 A D^-1/2`` (isolated nodes: a 1 on the diagonal)."""
    d = np.asarray(adj.sum(axis=1)).ravel()
    inv = np.where(d > 0, 1 / np.sqrt(np.where(d > 0, d, 1)), 0.0)
    dh = sp.diags(inv)
    return (sp.identity(adj.shape[0]) - dh @ adj @ dh).tocsr()


def cycle(n: int) -> sp.csr_matrix:
    i = np.arange(n)
    a = sp.coo_matrix((np.ones(n), (i, (i + 1) % n)), shape=(n, n))
    return (a + a.T).tocsr()


def grid(rows: int, cols: int) -> sp.csr_matrix:
    """The 2-D grid graph (eigenvalues repeat: the square grid's symmetric pairs)."""
    path = lambda m: sp.diags([np.ones(m - 1), np.ones(m - 1)], [-1, 1])  # noqa: E731
    return (sp.kron(path(rows), sp.identity(cols)) + sp.kron(sp.identity(rows), path(cols))).tocsr()


def expander(n: int, seed: int) -> sp.csr_matrix:
    """A random 8-regular-like graph (four random perfect matchings, no self-loops): no
    small separators, so any ordering fills it densely."""
    rng = np.random.default_rng(seed)
    rows = np.concatenate([rng.permutation(n) for _ in range(4)])
    cols = np.concatenate([rng.permutation(n) for _ in range(4)])
    adj = sp.coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    adj = ((adj + adj.T) > 0).astype(float).tocsr()
    adj.setdiag(0)
    adj.eliminate_zeros()
    return adj


def magnetic_laplacian(adj: sp.spmatrix, q: float = 0.25, seed: int = 0) -> sp.csr_matrix:
    """Normalized magnetic Laplacian of a random orientation of ``adj`` (complex Hermitian)."""
    upper = sp.triu(adj, 1).tocoo()
    rng = np.random.default_rng(seed)
    flip = rng.random(upper.nnz) < 0.5
    rows = np.where(flip, upper.col, upper.row)
    cols = np.where(flip, upper.row, upper.col)
    phase = np.exp(2j * np.pi * q)
    h = sp.coo_matrix((np.full(len(rows), phase), (rows, cols)), shape=adj.shape)
    h = (h + h.conj().T).tocsr()
    d = np.asarray(abs(h).sum(axis=1)).ravel()
    inv = sp.diags(np.where(d > 0, 1 / np.sqrt(np.where(d > 0, d, 1)), 0.0))
    return (sp.identity(adj.shape[0]) - inv @ h @ inv).tocsr()


def groups(values: np.ndarray, rel: float = 1e-6) -> list[np.ndarray]:
    """Index groups of (numerically) repeated eigenvalues, ascending."""
    out, start = [], 0
    scale = max(np.abs(values).max(), 1.0)
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] - values[i - 1] > rel * scale:
            out.append(np.arange(start, i))
            start = i
    return out


def largest_angle(v: np.ndarray, ref: np.ndarray, ref_values: np.ndarray, k: int) -> float:
    """The largest principal angle between matching multiplicity groups of the first ``k``
    columns (groups are taken from ``ref_values``, which must extend past ``k``)."""
    worst = 0.0
    for g in groups(ref_values):
        if g[-1] >= k:
            assert g[0] >= k, "a multiplicity group straddles k: choose another k"
            break
        worst = max(worst, float(la.subspace_angles(v[:, g], ref[:, g]).max()))
    return worst


def dense_reference(a: sp.spmatrix) -> tuple[np.ndarray, np.ndarray]:
    return la.eigh(a.toarray())


def largest_component(adj: sp.csr_matrix) -> sp.csr_matrix:
    """The largest connected component of the graph ``adj`` (its rows and columns)."""
    from scipy.sparse.csgraph import connected_components

    _, labels = connected_components(adj, directed=False)
    keep = np.flatnonzero(labels == np.bincount(labels).argmax())
    return adj[keep][:, keep].tocsr()


def lobpcg_iterations(monkeypatch) -> list[int]:
    """The iteration count of every sparse LOBPCG run from now on (a spy on the core's
    ``_sparse._api.lobpcg``), in the order they ran."""
    from spectra.core._sparse import _api

    counts: list[int] = []
    real = _api.lobpcg

    def count(*args, **kwargs):
        res = real(*args, **kwargs)
        counts.append(res.iterations)
        return res

    monkeypatch.setattr(_api, "lobpcg", count)
    return counts
