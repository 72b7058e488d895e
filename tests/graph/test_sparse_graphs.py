"""Large graphs take the core's sparse path: compared with SciPy's shift-invert ``eigsh``
(values, and eigenspaces as subspaces), with the dense path, and with PyG."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.linalg
import torch
from torch_geometric.data import Batch, Data

import spectra.graph._sparse_path as sparse_path
from spectra.graph import (
    LaplacianPE,
    heat_kernel_diagonal,
    laplacian_pe,
    magnetic_laplacian_pe,
    spectral_clustering,
    spectral_embedding,
)

from .graphs import (
    batch_of,
    geometric_graph,
    principal_angle,
    random_graph,
    scipy_lowest,
    scipy_sparse_laplacian,
)

pytestmark = pytest.mark.skipif(
    not sparse_path.core_has_sparse(), reason="this core has no sparse path"
)
SMALL_THRESHOLD = {"sparse_from": 200}  # so that graphs of a few hundred nodes go sparse
TOL = {torch.float64: (1e-8, 1e-6), torch.float32: (1e-4, 1e-3)}  # values (rel), angles


def spy(monkeypatch):
    calls = []
    real = sparse_path.eigh

    def counting(a, *args, **kwargs):
        calls.append(([tuple(x.shape) for x in a], kwargs.get("k")))
        return real(a, *args, **kwargs)

    monkeypatch.setattr(sparse_path, "eigh", counting)
    return calls


def groups_close(w: np.ndarray, v: np.ndarray, w_ref: np.ndarray, v_ref: np.ndarray, tol):
    """Values to ``tol[0]`` relative; vectors compared as eigenspaces (groups of equal
    values), each group's largest principal angle below ``tol[1]``."""
    np.testing.assert_allclose(w, w_ref, rtol=tol[0], atol=tol[0])
    start = 0
    for j in range(1, len(w_ref) + 1):
        if j == len(w_ref) or w_ref[j] - w_ref[j - 1] > 1e-6:
            if j < len(w_ref):  # a group cut by the window's end is not comparable
                assert principal_angle(v[:, start:j], v_ref[:, start:j]) < tol[1]
            start = j


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_large_graph_matches_shift_invert_eigsh(dtype, monkeypatch):
    n, k = 1200, 8
    ei, _ = geometric_graph(n, seed=1)
    calls = spy(monkeypatch)
    out = laplacian_pe(ei, n, k=k, dtype=dtype)
    assert calls and calls[0][0] == [(n, n)]  # the sparse path, at the default threshold
    c = int(out.num_components[0])
    w_ref, v_ref = scipy_lowest(scipy_sparse_laplacian(ei, n), c + k + 1)
    groups_close(
        out.eigenvalues[0].double().numpy(), out.pe.double().numpy(), w_ref[c : c + k],
        v_ref[:, c : c + k], TOL[dtype],
    )  # fmt: skip
    assert np.allclose(w_ref[:c], 0, atol=1e-8)


def test_disconnected_weighted_graph_with_isolated_nodes(monkeypatch):
    # two geometric graphs side by side plus isolated nodes: the null space (one vector per
    # component) is deflated, the k next eigenpairs match the dense solve
    a, wa = geometric_graph(260, seed=2, weighted=True)
    b, wb = geometric_graph(200, seed=3, weighted=True)
    ei = torch.cat([a, b + 260], 1)
    ew = torch.cat([wa, wb])
    n = 260 + 200 + 5
    calls = spy(monkeypatch)
    out = laplacian_pe(
        ei, n, k=6, edge_weight=ew, dtype=torch.float64, eigh_options=SMALL_THRESHOLD
    )
    assert calls
    dense = laplacian_pe(ei, n, k=6, edge_weight=ew, dtype=torch.float64,
                         eigh_options={"sparse_from": 10**9})  # fmt: skip
    assert int(out.num_components[0]) == int(dense.num_components[0]) >= 7
    groups_close(out.eigenvalues[0].numpy(), out.pe.numpy(), dense.eigenvalues[0].numpy(),
                 dense.pe.numpy(), TOL[torch.float64])  # fmt: skip
    for norm in ("rw", None):
        s = laplacian_pe(ei, n, k=4, edge_weight=ew, dtype=torch.float64, normalization=norm,
                         eigh_options=SMALL_THRESHOLD)  # fmt: skip
        d = laplacian_pe(ei, n, k=4, edge_weight=ew, dtype=torch.float64, normalization=norm,
                         eigh_options={"sparse_from": 10**9})  # fmt: skip
        np.testing.assert_allclose(s.eigenvalues.numpy(), d.eigenvalues.numpy(), rtol=1e-8)
        assert principal_angle(s.pe.numpy(), d.pe.numpy()) < 1e-6


def test_repeated_eigenvalues_compared_as_subspaces():
    # a 2-D grid torus: eigenvalues of multiplicity 2 and 4
    side = 16
    idx = np.arange(side * side).reshape(side, side)
    right = np.stack([idx.ravel(), np.roll(idx, -1, 1).ravel()])
    down = np.stack([idx.ravel(), np.roll(idx, -1, 0).ravel()])
    e = np.concatenate([right, down], 1)
    ei = torch.from_numpy(np.concatenate([e, e[::-1]], 1).copy())
    n = side * side
    out = laplacian_pe(ei, n, k=9, dtype=torch.float64, eigh_options=SMALL_THRESHOLD)
    # closed form: 1 - (cos(2 pi a / side) + cos(2 pi b / side)) / 2 (ARPACK can miss copies
    # of a repeated eigenvalue, so the vectors are compared with a dense SciPy solve)
    a = 2 * np.pi * np.arange(side) / side
    closed = np.sort((1 - (np.cos(a)[:, None] + np.cos(a)[None, :]) / 2).ravel())
    w_ref, v_ref = scipy.linalg.eigh(scipy_sparse_laplacian(ei, n).toarray())
    np.testing.assert_allclose(w_ref, closed, atol=1e-12)
    assert out.groups[0].tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 2]  # 4 + 4 + a cut group
    groups_close(out.eigenvalues[0].numpy(), out.pe.numpy(), w_ref[1:10], v_ref[:, 1:10],
                 TOL[torch.float64])  # fmt: skip


def test_mixed_batch_small_dense_large_sparse(monkeypatch):
    rng = np.random.default_rng(70)
    graphs = [(*random_graph(rng, int(m)), int(m)) for m in rng.integers(20, 50, size=10)]
    big, _ = geometric_graph(300, seed=4)
    graphs.insert(3, (big, None, 300))
    _, _, _, sizes = batch_of(graphs)
    calls = spy(monkeypatch)
    t = LaplacianPE(4, dtype=torch.float64, eigh_options=SMALL_THRESHOLD)
    datas = [Data(edge_index=g, num_nodes=m) for g, _, m in graphs]
    out = t(Batch.from_data_list(datas))
    assert [c[0] for c in calls] == [[(300, 300)]]
    ptr = np.cumsum([0, *sizes])
    for g, d in enumerate(datas):
        one = t(d).laplacian_eigenvector_pe.numpy()
        mine = out.laplacian_eigenvector_pe[ptr[g] : ptr[g + 1]].numpy()
        assert principal_angle(mine, one) < 1e-6


def test_pyg_convention_on_a_large_graph():
    n = 400
    ei, _ = geometric_graph(n, seed=5, degree=14)
    out = laplacian_pe(ei, n, k=5, dtype=torch.float64, convention="pyg",
                       eigh_options=SMALL_THRESHOLD)  # fmt: skip
    ref = laplacian_pe(ei, n, k=5, dtype=torch.float64, convention="pyg",
                       eigh_options={"sparse_from": 10**9})  # fmt: skip
    assert principal_angle(out.pe.numpy(), ref.pe.numpy()) < 1e-6


def test_heat_low_frequency_part():
    n = 400
    ei, _ = geometric_graph(n, seed=6)
    t = [5.0, 50.0]
    exact = heat_kernel_diagonal(ei, n, t, dtype=torch.float64)
    low = heat_kernel_diagonal(ei, n, t, dtype=torch.float64, k=30, eigh_options=SMALL_THRESHOLD)
    w_ref, _ = scipy_lowest(scipy_sparse_laplacian(ei, n), 40)
    # what the truncation leaves out is bounded by exp(-t w_(c+k+1)) per node
    c = int(np.sum(w_ref < 1e-8))
    bound = np.exp(-np.array(t) * w_ref[c + 30])
    err = (exact - low).numpy()
    assert (err >= -1e-10).all() and (err <= bound[None, :] + 1e-10).all()
    assert err[:, 1].max() < 1e-6


def test_magnetic_pe_on_a_large_directed_graph():
    n = 300
    ei, _ = geometric_graph(n, seed=7)
    keep = ei[0] < ei[1]  # one direction only: a directed graph
    directed = ei[:, keep]
    out = magnetic_laplacian_pe(directed, n, k=4, q=0.1, dtype=torch.float64,
                                eigh_options=SMALL_THRESHOLD)  # fmt: skip
    ref = magnetic_laplacian_pe(directed, n, k=4, q=0.1, dtype=torch.float64,
                                eigh_options={"sparse_from": 10**9})  # fmt: skip
    np.testing.assert_allclose(out.eigenvalues.numpy(), ref.eigenvalues.numpy(), rtol=1e-8)
    a, b = out.pe.numpy(), ref.pe.numpy()
    for j in range(4):  # complex eigenvectors equal up to the gauge: |<a, b>| = 1
        assert abs(abs(np.vdot(a[:, j], b[:, j])) - 1) < 1e-6


def test_embedding_and_clustering_of_a_sparse_affinity():
    import scipy.sparse as sp
    from sklearn.manifold import spectral_embedding as sk_embedding

    n = 500
    ei, ew = geometric_graph(n, seed=8, degree=16, weighted=True)
    aff = sp.coo_matrix((ew.numpy(), (ei[0].numpy(), ei[1].numpy())), shape=(n, n)).tocsr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = sk_embedding(aff, n_components=4, eigen_solver="arpack", random_state=0,
                           drop_first=True)  # fmt: skip
    ours = spectral_embedding(aff, n_components=4, eigh_options=SMALL_THRESHOLD)
    assert isinstance(ours, np.ndarray) and ours.shape == (n, 4)
    if int(sp.csgraph.connected_components(aff)[0]) == 1:
        assert principal_angle(ours, ref) < 1e-5
    labels = spectral_clustering(aff, n_clusters=3, eigh_options=SMALL_THRESHOLD)
    assert labels.shape == (n,) and set(np.unique(labels)) == {0, 1, 2}
