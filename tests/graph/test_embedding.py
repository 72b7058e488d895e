"""spectral_embedding / spectral_clustering against scikit-learn; batched k-means."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.manifold import spectral_embedding as sk_embedding
from sklearn.metrics import adjusted_rand_score

from spectra.graph import batched_kmeans, spectral_clustering, spectral_embedding

from .graphs import align_signs


def random_affinity(rng, n, density=0.5):
    a = rng.random((n, n)) * (rng.random((n, n)) < density)
    a = np.triu(a, 1)
    a = a + a.T
    a[np.arange(n - 1), np.arange(1, n)] += 0.2  # a path keeps it connected
    a[np.arange(1, n), np.arange(n - 1)] += 0.2
    return a


def separated(a, k, norm):
    """The first k+2 eigenvalues of the graph are well separated (sign-only ambiguity)."""
    from scipy.sparse.csgraph import laplacian as cs_lap

    lap = cs_lap(a, normed=norm)
    w = np.linalg.eigvalsh(lap)[: k + 2]
    return np.min(np.diff(w)) > 1e-3


def sbm(rng, sizes, p_in, p_out):
    labels = np.repeat(np.arange(len(sizes)), sizes)
    p = np.where(labels[:, None] == labels[None, :], p_in, p_out)
    up = np.triu(rng.random(p.shape) < p, 1)
    return (up | up.T).astype(float), labels


@pytest.mark.parametrize("norm_laplacian", [True, False])
@pytest.mark.parametrize("drop_first", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_embedding_matches_sklearn_up_to_sign(norm_laplacian, drop_first, dtype):
    rng = np.random.default_rng(40)
    k = 3
    mats = []
    while len(mats) < 4:
        a = random_affinity(rng, 12)
        if separated(a, k, norm_laplacian):
            mats.append(a)
    batch = np.stack(mats).astype(dtype)
    ours = spectral_embedding(
        batch, n_components=k, norm_laplacian=norm_laplacian, drop_first=drop_first
    )
    assert isinstance(ours, np.ndarray) and ours.dtype == dtype and ours.shape == (4, 12, k)
    tol = 1e-4 if dtype == np.float32 else 1e-8
    for g, a in enumerate(mats):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = sk_embedding(
                a,
                n_components=k,
                norm_laplacian=norm_laplacian,
                drop_first=drop_first,
                random_state=0,
            )
        got = ours[g].astype(np.float64)
        np.testing.assert_allclose(align_signs(got, ref), ref, atol=tol * np.abs(ref).max())
        # single-graph call gives the same as its row of the batch
        single = spectral_embedding(
            batch[g], n_components=k, norm_laplacian=norm_laplacian, drop_first=drop_first
        )
        np.testing.assert_allclose(single, ours[g], atol=tol)


def test_ragged_list_and_torch_padded_with_num_nodes():
    rng = np.random.default_rng(41)
    mats = [random_affinity(rng, n) for n in (5, 9, 3)]
    ragged = spectral_embedding([torch.from_numpy(m) for m in mats], n_components=2)
    assert isinstance(ragged, list) and [r.shape for r in ragged] == [(5, 2), (9, 2), (3, 2)]
    padded = torch.zeros(3, 9, 9, dtype=torch.float64)
    for i, m in enumerate(mats):
        padded[i, : len(m), : len(m)] = torch.from_numpy(m)
    emb = spectral_embedding(padded, n_components=2, num_nodes=[5, 9, 3])
    assert isinstance(emb, torch.Tensor) and emb.shape == (3, 9, 2)
    for i, m in enumerate(mats):
        torch.testing.assert_close(emb[i, : len(m)], ragged[i], atol=1e-10, rtol=0)
        torch.testing.assert_close(
            ragged[i], torch.from_numpy(spectral_embedding(m, n_components=2)), atol=1e-10, rtol=0
        )
        assert torch.all(emb[i, len(m) :] == 0)


def test_diagonal_is_ignored():
    rng = np.random.default_rng(46)
    a = random_affinity(rng, 10)
    b = a + np.diag(rng.random(10) * 5)
    np.testing.assert_allclose(spectral_embedding(b, 3), spectral_embedding(a, 3), atol=1e-12)
    assert np.array_equal(spectral_clustering(b, 2), spectral_clustering(a, 2))


def test_small_graph_gets_zero_columns():
    emb = spectral_embedding(np.ones((2, 2)), n_components=3)
    assert emb.shape == (2, 3)
    assert np.all(emb[:, 1:] == 0) and np.all(np.abs(emb[:, 0]) > 0.1)


def test_clustering_recovers_planted_partition_in_many_graphs():
    rng = np.random.default_rng(42)
    mats, truth = [], []
    for _ in range(12):
        a, lab = sbm(rng, [15, 12, 10], 0.8, 0.03)
        mats.append(a)
        truth.append(lab)
    labels = spectral_clustering(np.stack(mats), n_clusters=3, random_state=0)
    assert labels.shape == (12, 37) and labels.dtype == np.int64
    for g in range(12):
        assert adjusted_rand_score(truth[g], labels[g]) == 1.0
        assert labels[g, 0] == 0  # numbered by first appearance


def test_clustering_agrees_with_sklearn_and_is_deterministic():
    rng = np.random.default_rng(43)
    mats = [sbm(rng, [10, 10, 8, 9], 0.5, 0.08)[0] for _ in range(5)]
    ours = spectral_clustering([torch.from_numpy(m) for m in mats], n_clusters=4)
    again = spectral_clustering([torch.from_numpy(m) for m in mats], n_clusters=4)
    for a, b, m in zip(ours, again, mats, strict=True):
        assert torch.equal(a, b)
        ref = SpectralClustering(4, affinity="precomputed", random_state=0).fit_predict(m)
        assert adjusted_rand_score(ref, a.numpy()) > 0.9


def test_clustering_padded_batch_masks_padding():
    rng = np.random.default_rng(44)
    a1, l1 = sbm(rng, [8, 8], 0.8, 0.02)
    a2, l2 = sbm(rng, [5, 6], 0.9, 0.02)
    pad = np.zeros((2, 16, 16))
    pad[0] = a1
    pad[1, :11, :11] = a2
    labels = spectral_clustering(torch.from_numpy(pad), n_clusters=2, num_nodes=[16, 11])
    assert labels.dtype == torch.int64
    assert adjusted_rand_score(l1, labels[0].numpy()) == 1.0
    assert adjusted_rand_score(l2, labels[1, :11].numpy()) == 1.0
    assert torch.all(labels[1, 11:] == -1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_batched_kmeans_matches_sklearn_on_blobs(dtype):
    rng = np.random.default_rng(45)
    sets = []
    for _ in range(6):
        centers = rng.normal(scale=10, size=(4, 2))
        sets.append(np.concatenate([c + rng.normal(scale=0.5, size=(20, 2)) for c in centers]))
    x = torch.tensor(np.stack(sets), dtype=dtype)
    labels, inertia = batched_kmeans(x, 4, n_init=5, seed=1)
    for g, pts in enumerate(sets):
        km = KMeans(4, n_init=10, random_state=0).fit(pts)
        assert adjusted_rand_score(km.labels_, labels[g].numpy()) == 1.0
        np.testing.assert_allclose(float(inertia[g]), km.inertia_, rtol=1e-4)


def test_bad_affinity_inputs():
    with pytest.raises(ValueError, match="directed"):
        spectral_embedding(np.array([[0.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="square"):
        spectral_embedding(np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        spectral_clustering(np.array([[0.0, np.nan], [np.nan, 0.0]]), n_clusters=1)
    with pytest.raises(ValueError, match="n_clusters"):
        spectral_clustering(np.ones((3, 3)), n_clusters=0)
    with pytest.raises(ValueError, match="num_nodes"):
        spectral_embedding(np.ones((2, 3, 3)), num_nodes=[3])
