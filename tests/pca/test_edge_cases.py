"""Adversarial inputs: constant features, tiny datasets, degenerate spectra, precision."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from spectra.pca import BatchPCA

from .helpers import check_dataset, make_data, reference, to_np

DTYPES = [np.float32, np.float64]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("solver", ["covariance", "gram", "svd"])
def test_constant_features(dtype, solver):
    rng = np.random.default_rng(1)
    x = make_data(rng, 3, 30, 6, dtype)
    x[0, :, 2] = 4.0  # one constant feature: null direction e_2, unique
    x[1, :, [0, 5]] = -1.5  # two constant features
    x[2, :, :] = x[2, :1, :]  # every feature constant
    model = BatchPCA(6, solver=solver).fit(x)
    for i in range(2):
        check_dataset(model, i, x[i], reference(x[i], 6), dtype, x[i])
    # the unique null direction of dataset 0 is +e_2 (largest entry positive), as sklearn
    np.testing.assert_allclose(model.components_[0, -1], np.eye(6)[2], atol=1e-6)
    assert np.all(model.explained_variance_[0, -1:] == 0)
    assert np.all(model.explained_variance_[1, -2:] == 0)
    # an all-constant dataset: zero variance everywhere, NaN ratios (0/0) as sklearn gives
    assert np.all(model.explained_variance_[2] == 0)
    assert np.all(np.isnan(model.explained_variance_ratio_[2]))
    c = model.components_[2].astype(np.float64)
    np.testing.assert_allclose(c @ c.T, np.eye(6), atol=1e-6)
    # whitening does not blow up on zero-variance components
    z = BatchPCA(6, whiten=True, solver=solver).fit(x).transform(x)
    assert np.all(np.isfinite(z))


@pytest.mark.parametrize("dtype", DTYPES)
def test_two_samples_and_one_feature(dtype):
    rng = np.random.default_rng(8)
    x = rng.normal(size=(5, 2, 4)).astype(dtype)
    model = BatchPCA(1).fit(x)
    for i in range(5):
        check_dataset(model, i, x[i], reference(x[i], 1), dtype, x[i])
    x1 = rng.normal(size=(3, 10, 1)).astype(dtype)
    model = BatchPCA(1).fit(x1)
    np.testing.assert_array_equal(model.components_, np.ones((3, 1, 1), dtype=dtype))
    for i in range(3):
        check_dataset(model, i, x1[i], reference(x1[i], 1), dtype, x1[i])


def test_zero_components():
    x = make_data(np.random.default_rng(0), 2, 10, 3)
    model = BatchPCA(0).fit(x)
    assert model.components_.shape == (2, 0, 3)
    assert model.transform(x).shape == (2, 10, 0)
    np.testing.assert_allclose(
        model.noise_variance_, [reference(xi, 0).noise_variance_ for xi in x], atol=1e-10
    )
    np.testing.assert_allclose(
        model.inverse_transform(np.zeros((2, 4, 0))),
        np.broadcast_to(x.mean(1)[:, None], (2, 4, 3)),
        atol=1e-12,
    )


def test_degenerate_spectrum_gives_an_orthonormal_basis_of_the_right_subspace():
    rng = np.random.default_rng(6)
    # exactly isotropic in the first two directions: any rotation in that plane is valid
    base = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]], dtype=float) * 3
    x = np.concatenate(
        [np.pad(base, ((0, 0), (0, 2))), np.pad(rng.normal(size=(4, 2)) * 0.1, ((0, 0), (2, 0)))]
    )[None]
    model = BatchPCA(2).fit(x)
    c = model.components_[0]
    np.testing.assert_allclose(c @ c.T, np.eye(2), atol=1e-12)
    proj = c.T @ c
    want = reference(x[0], 2).components_
    np.testing.assert_allclose(proj, want.T @ want, atol=1e-10)


def test_precision_float64_for_float32_data():
    rng = np.random.default_rng(12)
    # two close variances (relative gap 1e-3) that float32 covariance cannot separate well
    scales = np.sqrt([1.0, 0.999, 0.3, 0.1])
    x = []
    for _ in range(20):
        q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
        z = rng.normal(size=(400, 4))
        z = (z - z.mean(0)) @ np.linalg.inv(np.linalg.cholesky(np.cov(z.T)).T)  # whiten
        x.append((z * scales) @ q.T + 100.0)  # large offset: float32 moments lose digits
    x = np.stack(x).astype(np.float32)
    hi = BatchPCA(2, precision="float64").fit(torch.from_numpy(x))
    assert hi.components_.dtype == torch.float32
    err = []
    for i in range(20):
        ref = reference(x[i], 2)
        c = hi.components_[i].double().numpy()
        err.append(np.abs(c - ref.components_).max())
        np.testing.assert_allclose(
            hi.explained_variance_[i].double().numpy(), ref.explained_variance_, rtol=1e-5
        )
    assert max(err) < 1e-6  # float32 accumulation gives ~1e-4 here


def test_uncentered_matches_svd():
    rng = np.random.default_rng(13)
    x = make_data(rng, 3, 12, 5)
    for solver in ("covariance", "gram", "svd"):
        model = BatchPCA(3, center=False, solver=solver).fit(x)
        np.testing.assert_array_equal(model.mean_, 0)
        for i in range(3):
            _, s, vt = np.linalg.svd(x[i], full_matrices=False)
            np.testing.assert_allclose(model.singular_values_[i], s[:3], rtol=1e-10)
            np.testing.assert_allclose(model.explained_variance_[i], s[:3] ** 2 / 11, rtol=1e-10)
            np.testing.assert_allclose(
                np.abs(np.einsum("kd,kd->k", model.components_[i], vt[:3])), 1, atol=1e-10
            )
            np.testing.assert_allclose(
                model.explained_variance_ratio_[i], s[:3] ** 2 / (s**2).sum(), rtol=1e-10
            )


def test_integer_data_becomes_float64():
    x = np.random.default_rng(0).integers(0, 10, size=(2, 20, 3))
    model = BatchPCA(2).fit(x)
    assert model.components_.dtype == np.float64
    check_dataset(
        model,
        1,
        x[1].astype(float),
        reference(x[1].astype(float), 2),
        np.float64,
        x[1].astype(float),
    )


def test_eigh_options_pass_through(monkeypatch):
    import spectra.pca._solve as solve

    x = make_data(np.random.default_rng(0), 9, 15, 4)
    seen = []
    real = solve.eigh

    def spy(a, **kw):
        seen.append({k: kw.get(k) for k in ("chunk_size", "workers")})
        return real(a, **kw)

    monkeypatch.setattr(solve, "eigh", spy)
    a = BatchPCA(2, chunk_size=2, workers=1).fit(x)
    assert seen == [{"chunk_size": 2, "workers": 1}]  # reached the core call unchanged
    b = BatchPCA(2).fit(x)
    assert seen[-1] == {"chunk_size": None, "workers": None}
    np.testing.assert_allclose(a.components_, b.components_, atol=1e-12)


def test_solver_routes_agree_and_auto_picks_gram_for_wide_data(monkeypatch):
    import spectra.pca._solve as solve

    x = make_data(np.random.default_rng(0), 4, 6, 30)
    sizes = []
    real = solve.eigh

    def spy(a, **kw):
        sizes.append(tuple(a.shape))
        return real(a, **kw)

    monkeypatch.setattr(solve, "eigh", spy)
    auto = BatchPCA(4).fit(x)
    assert sizes == [(4, 6, 6)]  # one call, on the 6x6 Gram matrices
    cov = BatchPCA(4, solver="covariance").fit(x)
    assert sizes[-1] == (4, 30, 30)
    np.testing.assert_allclose(auto.components_, cov.components_, atol=1e-9)
    np.testing.assert_allclose(to_np(auto.explained_variance_), cov.explained_variance_, rtol=1e-10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_batch_and_no_features(dtype):
    model = BatchPCA(2).fit(np.zeros((0, 5, 3), dtype=dtype))
    assert model.components_.shape == (0, 2, 3) and model.components_.dtype == dtype
    assert model.transform(np.zeros((0, 4, 3), dtype=dtype)).shape == (0, 4, 2)
    model = BatchPCA(None).fit(torch.from_numpy(np.zeros((2, 5, 0), dtype=dtype)))
    assert tuple(model.components_.shape) == (2, 0, 0)
    assert model.n_components_.tolist() == [0, 0]
