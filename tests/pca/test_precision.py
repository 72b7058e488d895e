"""Ill-conditioned data (issue 24): unscaled breast-cancer columns, whose variances span
1e-4..1e5, against sklearn's full SVD and against an exact reference in 50-digit arithmetic
(mpmath), with the route that BatchPCA chose for it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import load_breast_cancer
from sklearn.decomposition import PCA

from spectra.pca import BatchPCA

mpmath = pytest.importorskip("mpmath")


def _rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.fixture(scope="module")
def data():
    return load_breast_cancer().data[:, :12]


@pytest.fixture(scope="module")
def exact(data):
    """The probabilistic PCA of ``data`` with 11 components, in 50 digits."""
    mp = mpmath.mp.clone()
    mp.dps = 50
    x = mp.matrix(data.tolist())
    n, d = data.shape
    mean = [mp.fsum(x[i, j] for i in range(n)) / n for j in range(d)]
    xc = mp.matrix(n, d)
    for i in range(n):
        for j in range(d):
            xc[i, j] = x[i, j] - mean[j]
    w, q = mp.eigsy(xc.T * xc)
    order = sorted(range(d), key=lambda i: -w[i])
    lam = [w[i] / (n - 1) for i in order]
    vecs = [[q[r, i] for r in range(d)] for i in order]
    k = 11
    noise = mp.fsum(lam[k:]) / (d - k)
    model = lam[:k] + [noise] * (d - k)
    cov = np.zeros((d, d))
    prec = np.zeros((d, d))
    for a in range(d):
        for b in range(d):
            cov[a, b] = float(mp.fsum(vecs[t][a] * vecs[t][b] * model[t] for t in range(d)))
            prec[a, b] = float(mp.fsum(vecs[t][a] * vecs[t][b] / model[t] for t in range(d)))
    logdet = mp.fsum(-mp.log(m) for m in model)
    const = (d * mp.log(2 * mp.pi) - logdet) / 2
    samples = []
    for i in range(n):
        row = [xc[i, j] for j in range(d)]
        quad = mp.fsum(
            mp.fsum(row[j] * vecs[t][j] for j in range(d)) ** 2 / model[t] for t in range(d)
        )
        samples.append(float(-quad / 2 - const))
    ss = np.array(samples)
    return {
        "ev": np.array([float(v) for v in lam[:k]]),
        "noise": float(noise),
        "get_covariance": cov,
        "get_precision": prec,
        "score_samples": ss,
        "score": float(mp.fsum(samples) / n),
    }


def _results(model, x):
    return {
        "get_covariance": model.get_covariance(),
        "get_precision": model.get_precision(),
        "score_samples": model.score_samples(x),
        "score": model.score(x),
    }


def test_mle_on_unscaled_breast_cancer_takes_the_svd_route(data, exact):
    model = BatchPCA("mle").fit(data)
    assert model.plan_.route == "auto" and model.plan_.svd_datasets == (0,)
    assert "SVD route: datasets [0]" in str(model.plan_)
    ref = PCA("mle", svd_solver="full").fit(data)
    assert model.n_components_ == ref.n_components_ == 11
    ours, sk = _results(model, data), _results(ref, data)
    # the exact values: every result to 1e-10 relative (norm-wise)
    for name, got in ours.items():
        assert _rel(got, exact[name]) < 1e-10, name
    assert _rel(model.explained_variance_, exact["ev"]) < 1e-13
    assert _rel(model.noise_variance_, exact["noise"]) < 1e-12
    # sklearn: the fitted model and its covariance/precision to 1e-10
    assert _rel(model.explained_variance_, ref.explained_variance_) < 1e-13
    assert np.abs(model.components_ - ref.components_).max() < 1e-10
    for name in ("get_covariance", "get_precision"):
        assert _rel(ours[name], sk[name]) < 1e-10, name
    # sklearn's own score/score_samples carry its rounding (x^T P x with P from the
    # inversion lemma cancels ~eps lambda_max / sigma2): ours are closer to the exact values
    for name in ("score", "score_samples"):
        assert _rel(ours[name], exact[name]) <= _rel(sk[name], exact[name]), name
        assert _rel(ours[name], sk[name]) <= 2 * _rel(sk[name], exact[name]) + 1e-14, name


def test_the_covariance_route_loses_what_the_svd_route_keeps(data, exact):
    # the smallest variance (1e-9 of the largest) to eps * kappa relative by covariance + eigh,
    # to a few ulps by QR + the dilation eigh
    lam = np.append(exact["ev"], exact["noise"])  # all 12 variances (noise = the 12th)
    cov = BatchPCA(None, solver="covariance").fit(data)
    svd = BatchPCA(None, solver="svd").fit(data)
    assert cov.plan_.svd_datasets == () and svd.plan_.svd_datasets == (0,)
    lost = np.abs(cov.explained_variance_ / lam - 1).max()
    kept = np.abs(svd.explained_variance_ / lam - 1).max()
    assert lost > 1e-12 > 1e-14 > kept


def test_auto_keeps_well_conditioned_data_on_the_covariance_route(data):
    scaled = (data - data.mean(0)) / data.std(0)
    x = np.stack([scaled, data])  # one well-conditioned dataset, one not
    model = BatchPCA("mle").fit(x)
    assert model.plan_.svd_datasets == (1,)
    for b in range(2):
        ref = PCA("mle", svd_solver="full").fit(x[b])
        assert _rel(model.get_covariance()[b], ref.get_covariance()) < 1e-10
        assert (
            _rel(model.explained_variance_[b, : ref.n_components_], ref.explained_variance_) < 1e-12
        )


@pytest.mark.parametrize("shape", [(40, 12), (8, 12)])
def test_svd_route_matches_sklearn_wide_and_tall(shape):
    # tall (QR of X_c) and wide (QR of X_c^T, null directions completed) data
    rng = np.random.default_rng(1)
    n, d = shape
    x = rng.normal(size=(3, n, d)) * np.geomspace(1e3, 1e-2, d)
    k = min(n, d)
    model = BatchPCA(k, solver="svd").fit(torch.from_numpy(x))
    for b in range(3):
        ref = PCA(k, svd_solver="full").fit(x[b])
        ev = model.explained_variance_[b].numpy()
        good = ref.explained_variance_ > 1e-12 * ref.explained_variance_[0]
        np.testing.assert_allclose(ev[good], ref.explained_variance_[good], rtol=1e-10)
        comps = model.components_[b].numpy()
        np.testing.assert_allclose(comps[good], ref.components_[good], atol=1e-8)
        gram = comps @ comps.T
        np.testing.assert_allclose(gram, np.eye(k), atol=1e-12)  # completed: orthonormal


def test_svd_route_float32():
    rng = np.random.default_rng(2)
    x = (rng.normal(size=(4, 60, 6)) * np.geomspace(1e2, 1e-1, 6)).astype(np.float32)
    model = BatchPCA(6).fit(x)  # variances span 1e6 > 203 = eps32^(-1/3): SVD route
    assert model.plan_.svd_datasets == (0, 1, 2, 3)
    assert model.components_.dtype == np.float32
    for b in range(4):
        ref = PCA(6, svd_solver="full").fit(x[b].astype(np.float64))
        np.testing.assert_allclose(model.explained_variance_[b], ref.explained_variance_, rtol=1e-4)
