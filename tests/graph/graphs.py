"""Random test graphs and independent (SciPy/NumPy) references for the graph tests."""

from __future__ import annotations

import numpy as np
import scipy.linalg
import torch

TOL = {torch.float32: 2e-4, torch.float64: 1e-9}


def random_graph(
    rng: np.random.Generator, n: int, p: float = 0.3, connected: bool = True, weighted: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Undirected graph as (edge_index with both directions, edge_weight or None)."""
    upper = np.triu(rng.random((n, n)) < p, 1)
    if connected and n > 1:
        order = rng.permutation(n)
        for i in range(1, n):  # a random spanning tree
            a, b = order[i], order[rng.integers(0, i)]
            upper[min(a, b), max(a, b)] = True
    src, dst = np.nonzero(upper)
    w = rng.uniform(0.5, 2.0, size=src.size) if weighted else None
    ei = np.concatenate([np.stack([src, dst]), np.stack([dst, src])], axis=1)
    ew = None if w is None else torch.from_numpy(np.concatenate([w, w]))
    return torch.from_numpy(ei).long(), ew


def dense_adj(edge_index: torch.Tensor, n: int, edge_weight=None) -> np.ndarray:
    a = np.zeros((n, n))
    w = np.ones(edge_index.shape[1]) if edge_weight is None else np.asarray(edge_weight)
    for (i, j), x in zip(edge_index.T.tolist(), w, strict=True):
        if i != j:
            a[i, j] += x
    return a


def ref_laplacian(a: np.ndarray, normalization: str | None) -> np.ndarray:
    """Laplacian with our isolated-node rule (zero row), written independently."""
    deg = a.sum(1)
    if normalization is None:
        return np.diag(deg) - a
    n = a.shape[0]
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if deg[i] == 0 or deg[j] == 0:
                continue
            if normalization == "sym":
                out[i, j] = (i == j) - a[i, j] / np.sqrt(deg[i] * deg[j])
            else:
                out[i, j] = (i == j) - a[i, j] / deg[i]
    return out


def ref_eigh(lap: np.ndarray):
    return scipy.linalg.eigh(lap)


def min_gap(w: np.ndarray, upto: int) -> float:
    w = w[: upto + 1]
    return float(np.min(np.diff(w))) if w.size > 1 else np.inf


def separated_graph(rng, n: int, k: int, weighted: bool = False, gap: float = 1e-3):
    """A connected graph whose first k+2 sym-Laplacian eigenvalues are separated by > gap."""
    for _ in range(200):
        ei, ew = random_graph(rng, n, p=0.35, weighted=weighted)
        w = ref_eigh(ref_laplacian(dense_adj(ei, n, ew), "sym"))[0]
        if min_gap(w, min(k + 2, n - 1)) > gap:
            return ei, ew
    raise RuntimeError("no separated graph found")  # pragma: no cover


def batch_of(graphs):
    """(edge_index, edge_weight or None, batch, sizes) of graphs [(ei, ew, n), ...]."""
    eis, ews, bs, off = [], [], [], 0
    for g, (ei, ew, n) in enumerate(graphs):
        eis.append(ei + off)
        ews.append(ew if ew is not None else torch.ones(ei.shape[1], dtype=torch.float64))
        bs.append(torch.full((n,), g, dtype=torch.long))
        off += n
    weighted = any(ew is not None for _, ew, _ in graphs)
    return (
        torch.cat(eis, 1) if eis else torch.zeros(2, 0, dtype=torch.long),
        torch.cat(ews) if weighted else None,
        torch.cat(bs) if bs else torch.zeros(0, dtype=torch.long),
        [n for *_, n in graphs],
    )


def align_signs(x: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """x with each column's sign flipped to best match ref."""
    s = np.sign(np.sum(x * ref, axis=0))
    s[s == 0] = 1
    return x * s


def same_subspace(a: np.ndarray, b: np.ndarray) -> float:
    """Distance between the column spaces of orthonormal-column a and b (projector norm)."""
    return float(np.linalg.norm(a @ a.T - b @ b.T))


def assert_batch_equals_singles(batch, singles, names, atol: float) -> None:
    """Each node attribute of a transformed ``Batch`` equals the per-graph results stacked
    (floats to ``atol``, masks/groups exactly)."""
    for name in names:
        whole = torch.cat([s[name] for s in singles])
        if whole.is_floating_point():
            torch.testing.assert_close(batch[name], whole, atol=atol, rtol=0)
        else:
            assert torch.equal(batch[name], whole)


def geometric_graph(n: int, degree: float = 10.0, seed: int = 0, weighted: bool = False):
    """A random geometric graph in the unit square (mean degree ~``degree``), both edge
    directions, as the large graphs of node-level tasks; may have several components."""
    from scipy.spatial import cKDTree

    rng = np.random.default_rng(seed)
    pts = rng.random((n, 2))
    pairs = cKDTree(pts).query_pairs(np.sqrt(degree / (np.pi * n)), output_type="ndarray")
    ei = np.concatenate([pairs.T, pairs[:, ::-1].T], axis=1)
    ew = None
    if weighted:
        w = rng.uniform(0.5, 2.0, size=pairs.shape[0])
        ew = torch.from_numpy(np.concatenate([w, w]))
    return torch.from_numpy(np.ascontiguousarray(ei)).long(), ew


def scipy_sparse_laplacian(edge_index: torch.Tensor, n: int, edge_weight=None, normed=True):
    """The sym (or D - A) Laplacian as a SciPy CSR matrix (isolated nodes: zero rows),
    written independently of spectra."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import laplacian as csgraph_laplacian

    ei = edge_index.numpy()
    w = np.ones(ei.shape[1]) if edge_weight is None else np.asarray(edge_weight)
    keep = ei[0] != ei[1]
    a = sp.coo_matrix((w[keep], (ei[0][keep], ei[1][keep])), shape=(n, n)).tocsr()
    return csgraph_laplacian(a, normed=normed).tocsr()


def scipy_lowest(lap, k: int):
    """The k smallest eigenpairs by shift-invert ARPACK (sigma just below 0)."""
    import scipy.sparse.linalg as sla

    w, v = sla.eigsh(lap, k=k, sigma=-1e-3, which="LM", tol=1e-12)
    order = np.argsort(w)
    return w[order], v[:, order]


def principal_angle(a: np.ndarray, b: np.ndarray) -> float:
    """Sine of the largest principal angle between the column spaces of a and b."""
    qa, _ = np.linalg.qr(a)
    qb, _ = np.linalg.qr(b)
    s = np.linalg.svd(qa.T @ qb, compute_uv=False)
    return float(np.sqrt(max(0.0, 1.0 - float(s.min()) ** 2)))
