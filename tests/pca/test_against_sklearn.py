"""BatchPCA against sklearn's PCA(svd_solver="full"), dataset by dataset."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch

from spectra.pca import BatchPCA

from .helpers import (
    as_kind,
    check_dataset,
    check_transforms,
    make_data,
    reference,
    to_np,
    zero_unresolved,
)

SHAPES = [(40, 6), (5, 12), (8, 8), (2, 3)]
DTYPES = [np.float32, np.float64]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("solver", ["auto", "covariance", "gram", "svd"])
@pytest.mark.parametrize("n_components", [2, 0.9, None])
@pytest.mark.parametrize("whiten", [False, True])
def test_matches_sklearn(dtype, shape, solver, n_components, whiten):
    n, d = shape
    seed = zlib.crc32(repr((n, d, solver, n_components, whiten)).encode())  # not hash()
    rng = np.random.default_rng(seed)
    b = 4
    x = make_data(rng, b, n, d, dtype)
    x_new = make_data(rng, b, 7, d, dtype)
    kind = "torch" if whiten else "numpy"
    k = min(n_components, min(n, d)) if isinstance(n_components, int) else n_components
    model = BatchPCA(k, whiten=whiten, solver=solver).fit(as_kind(x, kind))
    assert isinstance(model.components_, torch.Tensor if kind == "torch" else np.ndarray)
    refs = [reference(x[i], k, whiten) for i in range(b)]
    kmax = max(int(r.n_components_) for r in refs)
    compared = sum(check_dataset(model, i, x[i], refs[i], dtype, x_new[i], kmax) for i in range(b))
    assert compared >= b  # at least the leading component of every dataset
    z = to_np(model.transform(as_kind(x_new, kind)))
    z_in = zero_unresolved(rng.normal(size=(b, 5, kmax)).astype(dtype), refs, dtype)
    x_back = to_np(model.inverse_transform(as_kind(z_in, kind)))
    assert z.shape == (b, 7, kmax) and x_back.shape == (b, 5, d)
    for i in range(b):
        check_transforms(z[i], x_back[i], refs[i], dtype, x_new[i], z_in[i])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("whiten", [False, True])
def test_fit_transform_and_covariance(dtype, whiten):
    rng = np.random.default_rng(7)
    x = make_data(rng, 3, 30, 5, dtype)
    model = BatchPCA(3, whiten=whiten)
    z = to_np(model.fit_transform(torch.from_numpy(x)))
    np.testing.assert_array_equal(z, to_np(model.transform(torch.from_numpy(x))))
    tol = 1e-4 if dtype == np.float32 else 1e-10
    cov = to_np(model.get_covariance())
    for i in range(3):
        ref = reference(x[i], 3, whiten)
        want = ref.fit_transform(x[i].astype(np.float64))
        np.testing.assert_allclose(z[i], want, rtol=0, atol=tol * np.abs(want).max())
        np.testing.assert_allclose(
            cov[i], ref.get_covariance(), rtol=0, atol=tol * np.abs(ref.get_covariance()).max()
        )


def test_sign_rule_is_sklearns():
    """Largest-|entry| positive, first maximal entry on exact ties (np.argmax)."""
    from spectra.pca import svd_flip_rows

    rows = torch.tensor(
        [[0.6, -0.8, 0.0], [-0.5, 0.5, 0.1], [-1.0, 0.0, 0.0], [0.0, 0.0, 0.0]], dtype=torch.float64
    )
    got = svd_flip_rows(rows)
    from sklearn.utils.extmath import svd_flip

    _, want = svd_flip(None, rows.numpy().copy(), u_based_decision=False)
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_signs_match_on_many_datasets(dtype):
    """The sign of every component, over 200 random datasets, through both routes."""
    rng = np.random.default_rng(11)
    for n, d in [(25, 6), (4, 9)]:
        x = make_data(rng, 200, n, d, dtype, spread=100.0)
        k = min(n, d) - 1
        for solver in ("covariance", "gram"):
            comps = to_np(BatchPCA(k, solver=solver).fit(x).components_)
            for i in range(200):
                ref = reference(x[i], k)
                good = ref.explained_variance_ > 1e-2 * ref.explained_variance_[0]
                dots = np.einsum("kd,kd->k", comps[i].astype(np.float64), ref.components_)
                assert np.all(dots[good] > 0.99), (solver, i, dots)


def test_k_equals_d_and_min():
    rng = np.random.default_rng(3)
    x = make_data(rng, 3, 20, 5)
    model = BatchPCA(5).fit(x)
    assert np.all(model.noise_variance_ == 0)
    np.testing.assert_allclose(model.explained_variance_ratio_.sum(-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(model.inverse_transform(model.transform(x)), x, atol=1e-12)
    for i in range(3):
        check_dataset(model, i, x[i], reference(x[i], 5), np.float64, x[i])
    # N < D, k = N: the last direction carries no variance (rank N - 1 after centering)
    x = make_data(rng, 3, 4, 9)
    for solver in ("gram", "covariance"):
        model = BatchPCA(4, solver=solver).fit(x)
        c = model.components_
        np.testing.assert_allclose(
            c @ c.transpose(0, 2, 1), np.broadcast_to(np.eye(4), (3, 4, 4)), atol=1e-12
        )
        np.testing.assert_array_equal(model.noise_variance_, 0.0)
        for i in range(3):
            check_dataset(model, i, x[i], reference(x[i], 4), np.float64, x[i])
        assert np.all(model.explained_variance_[:, -1] < 1e-12)
