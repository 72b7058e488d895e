"""BatchPCA speaks sklearn: clone, Pipeline, GridSearchCV, one (N, D) dataset, "mle",
score/score_samples/get_precision, NotFittedError, Dask transform; against sklearn's
PCA(svd_solver="full") in the same process."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.datasets import load_digits, load_iris
from sklearn.decomposition import PCA
from sklearn.exceptions import NotFittedError as SkNotFitted
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from spectra.pca import BatchPCA, NotFittedError

from .helpers import make_data, to_np

DTYPES = [np.float32, np.float64]
TOL = {np.float32: 2e-4, np.float64: 1e-9}


def _close(got, want, dtype, scale=1.0):
    tol = TOL[dtype]
    np.testing.assert_allclose(to_np(got), want, rtol=tol, atol=tol * scale)


def test_clone_get_set_params_keep_values_and_eigh_options():
    model = BatchPCA(3, whiten=True, solver="covariance", workers=1, chunk_size=4)
    params = model.get_params()
    assert params == {
        "n_components": 3,
        "whiten": True,
        "center": True,
        "solver": "covariance",
        "svd_solver": "auto",
        "precision": "data",
        "iterated_power": "auto",
        "n_oversamples": 10,
        "random_state": None,
        "workers": 1,
        "chunk_size": 4,
    }
    twin = clone(model)
    assert twin is not model and twin.get_params() == params
    assert twin.set_params(n_components=2, workers=2) is twin
    assert twin.n_components == 2 and twin.eigh_options == {"workers": 2, "chunk_size": 4}
    assert model.get_params()["workers"] == 1  # the original is untouched
    assert "whiten=True" in repr(model) and "workers=1" in repr(model)
    assert "precision" not in repr(model)  # defaults are not shown, as sklearn's repr


def test_pickle_round_trip_of_a_fitted_model():
    import pickle

    x = make_data(np.random.default_rng(8), 1, 30, 4)[0]
    model = BatchPCA(2, workers=1).fit(x)
    back = pickle.loads(pickle.dumps(model))
    assert back.get_params() == model.get_params()
    np.testing.assert_array_equal(back.transform(x), model.transform(x))


def test_set_params_validates_at_fit():
    model = BatchPCA(2).set_params(solver="arpack")
    with pytest.raises(ValueError, match="solver"):
        model.fit(np.ones((4, 3)))


def test_not_fitted_is_sklearns_error():
    assert NotFittedError is SkNotFitted
    with pytest.raises(SkNotFitted):
        BatchPCA(2).transform(np.ones((3, 2)))
    with pytest.raises(SkNotFitted):
        check_is_fitted(BatchPCA(2))
    check_is_fitted(BatchPCA(1).fit(np.random.default_rng(0).normal(size=(5, 2))))


def test_tags_preserve_float32_and_float64():
    tags = BatchPCA(2).__sklearn_tags__()
    assert tags.transformer_tags.preserves_dtype == ["float64", "float32"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("whiten", [False, True])
@pytest.mark.parametrize("n_components", [3, 0.8, "mle", None])
def test_one_dataset_equals_sklearn(dtype, whiten, n_components):
    rng = np.random.default_rng(5)
    x = make_data(rng, 1, 60, 6, dtype)[0]
    x_new = make_data(rng, 1, 9, 6, dtype)[0]
    ours = BatchPCA(n_components, whiten=whiten).fit(x)
    ref = PCA(n_components, whiten=whiten, svd_solver="full").fit(x.astype(np.float64))
    assert ours.n_components_ == ref.n_components_ and isinstance(ours.n_components_, int)
    assert ours.n_samples_ == 60 and ours.components_.shape == ref.components_.shape
    assert ours.components_.dtype == dtype
    _close(ours.components_, ref.components_, dtype)
    for name in ("explained_variance_", "explained_variance_ratio_", "singular_values_"):
        _close(getattr(ours, name), getattr(ref, name), dtype)
    _close(ours.mean_, ref.mean_, dtype, 10)
    _close(ours.noise_variance_, ref.noise_variance_, dtype)
    _close(ours.transform(x_new), ref.transform(x_new.astype(np.float64)), dtype, 10)
    assert ours.transform(x_new).shape == (9, ref.n_components_)
    z = ref.transform(x_new.astype(np.float64)).astype(dtype)
    _close(ours.inverse_transform(z), ref.inverse_transform(z.astype(np.float64)), dtype, 10)
    _close(ours.get_covariance(), ref.get_covariance(), dtype, 10)
    prec = ref.get_precision()
    _close(ours.get_precision(), prec, dtype, np.abs(prec).max())
    _close(ours.score_samples(x_new), ref.score_samples(x_new.astype(np.float64)), dtype, 10)
    score = ours.score(x_new)
    assert isinstance(score, float)
    assert score == pytest.approx(ref.score(x_new.astype(np.float64)), rel=TOL[dtype] * 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_mle_score_precision_equal_sklearn_per_dataset(dtype):
    rng = np.random.default_rng(11)
    # datasets with 1, 2 and 4 strong directions: "mle" picks a different count in each
    xs = []
    for strong in (1, 2, 4):
        scales = np.r_[np.full(strong, 30.0), np.full(8 - strong, 1.0)]
        xs.append((rng.normal(size=(200, 8)) * scales).astype(dtype))
    x = np.stack(xs)
    ours = BatchPCA("mle").fit(torch.from_numpy(x))
    refs = [PCA("mle", svd_solver="full").fit(xi.astype(np.float64)) for xi in xs]
    assert ours.n_components_.tolist() == [r.n_components_ for r in refs] == [1, 2, 4]
    ll = to_np(ours.score_samples(torch.from_numpy(x)))
    scores = to_np(ours.score(torch.from_numpy(x)))
    prec = to_np(ours.get_precision())
    for i, ref in enumerate(refs):
        k = ref.n_components_
        _close(ours.components_[i, :k], ref.components_, dtype)
        assert not to_np(ours.components_[i, k:]).any()  # padding is zero
        _close(ours.noise_variance_[i], ref.noise_variance_, dtype)
        _close(prec[i], ref.get_precision(), dtype, np.abs(ref.get_precision()).max())
        _close(ll[i], ref.score_samples(xs[i].astype(np.float64)), dtype, 10)
        _close(scores[i], ref.score(xs[i].astype(np.float64)), dtype, 10)


def test_mle_refuses_fewer_samples_than_features():
    with pytest.raises(ValueError, match=r"'mle' is only supported.*batch indices \[1\]"):
        BatchPCA("mle").fit([np.ones((10, 4)), np.ones((3, 4))])


def test_zero_noise_precision_is_the_inverse_covariance():
    x = make_data(np.random.default_rng(2), 2, 30, 4)
    model = BatchPCA(None).fit(x)  # every component kept: noise variance 0
    assert not model.noise_variance_.any()
    for i in range(2):
        ref = PCA(None, svd_solver="full").fit(x[i])
        np.testing.assert_allclose(model.get_precision()[i], ref.get_precision(), rtol=1e-8)


def test_pipeline_on_iris_equals_sklearn():
    x, _ = load_iris(return_X_y=True)
    ours = make_pipeline(StandardScaler(), BatchPCA(3))
    ref = make_pipeline(StandardScaler(), PCA(3, svd_solver="full"))
    z = ours.fit_transform(x)
    assert z.shape == (150, 3)
    np.testing.assert_allclose(z, ref.fit_transform(x), atol=1e-10)
    np.testing.assert_allclose(clone(ours).fit(x).transform(x), z, atol=1e-12)
    assert ours.score(x) == pytest.approx(ref.score(x), rel=1e-10)


def test_grid_search_on_digits_equals_sklearn():
    # (not "mle" here: digits has constant pixels, where sklearn's noise variance is a
    # round-off value ~1e-31 that dominates its score; ours is exactly 0, see docs/pca.md)
    x, _ = load_digits(return_X_y=True)
    x = x[:300]
    counts = [5, 10, 20]
    ours = GridSearchCV(
        make_pipeline(StandardScaler(), BatchPCA()), {"batchpca__n_components": counts}, cv=3
    ).fit(x)
    ref = GridSearchCV(
        make_pipeline(StandardScaler(), PCA(svd_solver="full")), {"pca__n_components": counts}, cv=3
    ).fit(x)
    np.testing.assert_allclose(
        ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"], rtol=1e-8
    )
    assert ours.best_params_["batchpca__n_components"] == ref.best_params_["pca__n_components"]
    assert ours.best_estimator_.transform(x[:5]).shape == (
        5,
        ours.best_params_["batchpca__n_components"],
    )


def test_dask_transform_equals_in_memory():
    import dask.array as da

    x = make_data(np.random.default_rng(4), 5, 40, 6)
    model = BatchPCA(3, whiten=True).fit(x)
    lazy = model.transform(da.from_array(x, chunks=(2, 15, 6)))
    assert isinstance(lazy, da.Array) and lazy.chunks[0] == (2, 2, 1)
    np.testing.assert_allclose(lazy.compute(), model.transform(x), rtol=1e-12, atol=1e-12)
    one = BatchPCA(2).fit(x[0])
    np.testing.assert_allclose(
        one.transform(da.from_array(x[1], chunks=(7, 6))).compute(), one.transform(x[1]), atol=1e-12
    )
    fitted = BatchPCA(2).fit(da.from_array(x[0], chunks=(10, 6)))  # one (N, D) Dask dataset
    np.testing.assert_allclose(fitted.components_, one.components_, atol=1e-10)
    with pytest.raises(ValueError, match="fitted on 5"):
        model.transform(da.from_array(x[:2], chunks=(1, 40, 6)))
