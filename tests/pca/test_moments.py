"""Sufficient statistics and the distributed-fit hook ``fit_from_moments``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from spectra.pca import BatchPCA, combine_moments, moments

from .helpers import make_data

DTYPES = [np.float32, np.float64]


@pytest.mark.parametrize("dtype", DTYPES)
def test_moments_against_numpy(dtype):
    rng = np.random.default_rng(0)
    xs = [make_data(rng, 1, n, 5, dtype)[0] for n in (3, 12, 7)]
    count, mean, scatter = moments(xs)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_array_equal(count, [3, 12, 7])
    for i, x in enumerate(xs):
        x64 = x.astype(np.float64)
        np.testing.assert_allclose(mean[i], x64.mean(0), rtol=tol, atol=tol)
        want = np.cov(x64.T) * (len(x) - 1)
        np.testing.assert_allclose(scatter[i], want, rtol=0, atol=tol * np.abs(want).max())
    m64 = moments(torch.from_numpy(np.stack([xs[1], xs[1]])), dtype=torch.float64)
    assert m64.scatter.dtype == torch.float64
    m0 = moments(np.stack([xs[1]]), center=False)
    np.testing.assert_allclose(m0.scatter[0], xs[1].T.astype(float) @ xs[1], rtol=tol)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_combine_equals_whole(kind):
    rng = np.random.default_rng(1)
    x = make_data(rng, 4, 30, 6)
    xt = torch.from_numpy(x) if kind == "torch" else x
    # uneven split, with one dataset that has no samples in the first part
    mask_a = np.zeros((4, 30), bool)
    mask_a[0, :10] = mask_a[1, :1] = mask_a[3, :29] = True
    mask_b = ~mask_a
    conv = torch.from_numpy if kind == "torch" else (lambda a: a)
    a = moments(xt, mask=conv(mask_a))
    b = moments(xt, mask=conv(mask_b))
    whole = moments(xt)
    merged = combine_moments(a, b)
    assert type(merged.scatter) is type(whole.scatter)
    for got, want in zip(merged, whole, strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)
    fitted = BatchPCA(3, whiten=True).fit_from_moments(*merged)
    direct = BatchPCA(3, whiten=True, solver="covariance").fit(xt)
    for name in (
        "components_",
        "explained_variance_",
        "explained_variance_ratio_",
        "singular_values_",
        "noise_variance_",
        "mean_",
        "n_samples_",
    ):
        np.testing.assert_allclose(
            np.asarray(getattr(fitted, name)),
            np.asarray(getattr(direct, name)),
            rtol=1e-10,
            atol=1e-12,
        )
    np.testing.assert_allclose(
        np.asarray(fitted.transform(xt)), np.asarray(direct.transform(xt)), atol=1e-10
    )


def test_moments_precision_option():
    x = make_data(np.random.default_rng(3), 2, 50, 4, np.float32)
    m = moments(x)
    model = BatchPCA(2, precision="float64").fit_from_moments(*m)
    assert model.components_.dtype == np.float32
    ref = BatchPCA(2).fit(x.astype(np.float64))
    np.testing.assert_allclose(model.explained_variance_, ref.explained_variance_, rtol=1e-5)
