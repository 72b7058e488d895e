"""Ragged lists, lengths and masks: each dataset must get exactly its own sklearn PCA."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from spectra.pca import BatchPCA

from .helpers import check_dataset, check_transforms, make_data, reference, to_np, zero_unresolved

DTYPES = [np.float32, np.float64]


def _ragged(rng, sizes, d, dtype):
    return [make_data(rng, 1, n, d, dtype)[0] for n in sizes]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_components", [2, 0.8, None])
@pytest.mark.parametrize("solver", ["auto", "covariance", "gram"])
@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_ragged_list(dtype, n_components, solver, kind):
    rng = np.random.default_rng(5)
    sizes = [30, 3, 9, 2, 17]
    xs = _ragged(rng, sizes, 6, dtype)
    new = [make_data(rng, 1, m, 6, dtype)[0] for m in (4, 1, 6, 2, 3)]
    wrap = torch.from_numpy if kind == "torch" else (lambda a: a)
    model = BatchPCA(n_components, solver=solver, whiten=n_components == 2)
    model.fit([wrap(x) for x in xs])
    refs = [reference(x, n_components, n_components == 2) for x in xs]
    kmax = max(int(r.n_components_) for r in refs)
    for i, x in enumerate(xs):
        check_dataset(model, i, x, refs[i], dtype, new[i], kmax)
    z = model.transform([wrap(x) for x in new])
    assert isinstance(z, list) and len(z) == len(xs)
    for i, zi in enumerate(z):
        assert isinstance(zi, torch.Tensor if kind == "torch" else np.ndarray)
        assert zi.shape == (new[i].shape[0], int(refs[i].n_components_))
    z_in = zero_unresolved(rng.normal(size=(5, 3, kmax)).astype(dtype), refs, dtype)
    back = model.inverse_transform(
        [wrap(z_in[i, :, : int(r.n_components_)]) for i, r in enumerate(refs)]
    )
    assert [b.shape for b in back] == [(3, 6)] * 5
    zp = np.zeros((5, 6, kmax), dtype=dtype)
    for i, zi in enumerate(z):
        zp[i, : zi.shape[0], : zi.shape[1]] = to_np(zi)
    for i in range(5):
        m = new[i].shape[0]
        check_transforms(zp[i, :m], to_np(back[i]), refs[i], dtype, new[i], z_in[i])


@pytest.mark.parametrize("dtype", DTYPES)
def test_lengths_and_mask_equal_ragged(dtype):
    rng = np.random.default_rng(9)
    sizes = [12, 4, 7]
    xs = _ragged(rng, sizes, 5, dtype)
    padded = np.full((3, 12, 5), np.nan, dtype=dtype)  # NaN padding must be ignored
    for i, x in enumerate(xs):
        padded[i, : len(x)] = x
    ragged = BatchPCA(3).fit(xs)
    by_len = BatchPCA(3).fit(padded, lengths=sizes)
    # a non-prefix mask: scatter each dataset's rows over the padded axis
    perm = np.stack([rng.permutation(12) for _ in range(3)])
    scattered = np.take_along_axis(padded, perm[..., None], 1)
    mask = np.take_along_axis(np.arange(12)[None] < np.array(sizes)[:, None], perm, 1)
    by_mask = BatchPCA(3).fit(torch.from_numpy(scattered), mask=torch.from_numpy(mask))
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for other in (by_len, by_mask):
        for name in (
            "components_",
            "explained_variance_",
            "singular_values_",
            "mean_",
            "noise_variance_",
            "explained_variance_ratio_",
        ):
            np.testing.assert_allclose(
                to_np(getattr(other, name)), getattr(ragged, name), rtol=0, atol=tol * 10
            )
    for i, x in enumerate(xs):
        check_dataset(by_mask, i, x, reference(x, 3), dtype, x)
    z = to_np(by_mask.transform(torch.from_numpy(scattered), mask=torch.from_numpy(mask)))
    assert np.all(z[~mask] == 0) and np.all(np.isfinite(z))
    z_len = by_len.fit_transform(padded, lengths=sizes)
    assert np.all(z_len[np.arange(12)[None] >= np.array(sizes)[:, None]] == 0)
    np.testing.assert_allclose(
        z_len[0], reference(xs[0], 3).transform(xs[0].astype(float)), rtol=0, atol=tol * 10
    )


def test_float_n_components_is_per_dataset():
    rng = np.random.default_rng(2)
    # dataset 0 has one dominant direction, dataset 1 an isotropic spectrum
    x0 = rng.normal(size=(50, 6)) * np.array([10, 0.1, 0.1, 0.1, 0.1, 0.1])
    x1 = rng.normal(size=(50, 6))
    model = BatchPCA(0.9).fit(np.stack([x0, x1]))
    k = model.n_components_
    assert k[0] == reference(x0, 0.9).n_components_ == 1
    assert k[1] == reference(x1, 0.9).n_components_ > 1
    assert model.components_.shape == (2, k[1], 6)
    assert model.components_mask_[0].tolist() == [True] + [False] * (k[1] - 1)
    z = model.transform(np.stack([x0, x1]))
    assert np.all(z[0, :, 1:] == 0)


def test_transform_broadcasts_one_array_over_datasets():
    rng = np.random.default_rng(4)
    x = make_data(rng, 3, 20, 4)
    probe = rng.normal(size=(6, 4))
    model = BatchPCA(2).fit(x)
    z = model.transform(probe)
    assert z.shape == (3, 6, 2)
    for i in range(3):
        np.testing.assert_allclose(z[i], reference(x[i], 2).transform(probe), atol=1e-10)
    back = model.inverse_transform(z[0])
    assert back.shape == (3, 6, 4)
