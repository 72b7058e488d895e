"""scikit-learn's own PCA tests (sklearn/decomposition/tests/test_pca.py, scikit-learn 1.9.1,
as shipped in the wheel), ported to BatchPCA for the full solver: the same inputs, expected
values and tolerances. BatchPCA fitted on one (n_samples, n_features) array is sklearn's
PCA(svd_solver="full") API.

Ported: 31 of sklearn's test functions that exercise the full solver, as 32 functions
(72 cases; test_pca_dtype_preservation is split in two, as its two helpers); left out: sparse input,
array-API dispatch, the other solvers (arpack, randomized) and the solver choice, and
test_assess_dimension_bad_rank (sklearn's private per-rank API). All pass; the convention
differences, each marked DIFFERENCE and listed in docs/pca.md ("Peer tests"):
  1. the error message for an invalid n_components is spectra's (same ValueError);
  2. Minka's log-likelihood is ``assess_dimensions(spectrum, n)`` over all ranks at once
     (sklearn: ``_assess_dimension(spectrum, rank, n)`` one rank per call);
  3. feature names are ``batchpca0, ...`` (sklearn: ``pca0, ...``, the class name);
  4. the solver-equivalence test runs spectra's two routes (covariance, gram) against
     sklearn's full SVD, with sklearn's tolerances.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from numpy.testing import assert_array_equal
from sklearn import datasets
from sklearn.datasets import load_iris, make_low_rank_matrix
from sklearn.decomposition import PCA
from sklearn.utils._testing import assert_allclose

from spectra.pca import BatchPCA
from spectra.pca._likelihood import assess_dimensions, infer_dimension

iris = datasets.load_iris()
GLOBAL_RANDOM_SEED = 42  # sklearn's default global_random_seed fixture value


def _assess(spectrum, rank, n_samples):
    ll = assess_dimensions(
        torch.as_tensor(np.asarray(spectrum, float))[None], torch.tensor([n_samples])
    )
    return float(ll[0, rank])


def _infer(spectrum, n_samples):
    return int(
        infer_dimension(
            torch.as_tensor(np.asarray(spectrum, float))[None], torch.tensor([n_samples])
        )[0]
    )


@pytest.mark.parametrize("n_components", range(1, iris.data.shape[1]))
def test_pca(n_components):
    X = iris.data
    pca = BatchPCA(n_components=n_components)
    X_r = pca.fit(X).transform(X)
    assert X_r.shape[1] == n_components
    X_r2 = pca.fit_transform(X)
    assert_allclose(X_r, X_r2)
    X_r = pca.transform(X)
    assert_allclose(X_r, X_r2)
    cov = pca.get_covariance()
    precision = pca.get_precision()
    assert_allclose(np.dot(cov, precision), np.eye(X.shape[1]), atol=1e-12)


def test_no_empty_slice_warning():
    n_components = 10
    n_features = n_components + 2
    X = np.random.RandomState(0).uniform(-1, 1, size=(n_components, n_features))  # seeded
    pca = BatchPCA(n_components=n_components)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        pca.fit(X)


def test_whitening():
    rng = np.random.RandomState(0)
    n_samples, n_features, n_components, rank = 100, 80, 30, 50
    X = np.dot(
        rng.randn(n_samples, rank),
        np.dot(np.diag(np.linspace(10.0, 1.0, rank)), rng.randn(rank, n_features)),
    )
    X[:, :50] *= 3
    assert X.shape == (n_samples, n_features)
    assert X.std(axis=0).std() > 43.8
    X_ = X.copy()
    pca = BatchPCA(n_components=n_components, whiten=True)
    X_whitened = pca.fit_transform(X_.copy())
    assert X_whitened.shape == (n_samples, n_components)
    X_whitened2 = pca.transform(X_)
    assert_allclose(X_whitened, X_whitened2, rtol=5e-4)
    assert_allclose(X_whitened.std(ddof=1, axis=0), np.ones(n_components))
    assert_allclose(X_whitened.mean(axis=0), np.zeros(n_components), atol=1e-12)
    X_ = X.copy()
    pca = BatchPCA(n_components=n_components, whiten=False).fit(X_.copy())
    X_unwhitened = pca.transform(X_)
    assert X_unwhitened.shape == (n_samples, n_components)
    assert X_unwhitened.std(axis=0).std() == pytest.approx(74.1, rel=1e-1)


@pytest.mark.parametrize("solver", ["covariance", "gram"])
@pytest.mark.parametrize("data_shape", ["tall", "wide"])
@pytest.mark.parametrize("rank_deficient", [False, True])
@pytest.mark.parametrize("whiten", [False, True])
@pytest.mark.parametrize("global_dtype", [np.float32, np.float64])
def test_pca_solver_equivalence(solver, data_shape, rank_deficient, whiten, global_dtype):
    # DIFFERENCE 4: spectra's routes against sklearn's full SVD
    global_random_seed = GLOBAL_RANDOM_SEED
    n_samples, n_features = (100, 30) if data_shape == "tall" else (30, 100)
    n_samples_test = 10
    if rank_deficient:
        rng = np.random.default_rng(global_random_seed)
        rank = min(n_samples, n_features) // 2
        X = rng.standard_normal(size=(n_samples + n_samples_test, rank)) @ rng.standard_normal(
            size=(rank, n_features)
        )
    else:
        X = make_low_rank_matrix(
            n_samples=n_samples + n_samples_test,
            n_features=n_features,
            tail_strength=0.5,
            random_state=global_random_seed,
        )
        rank = min(n_samples, n_features)
    X = X.astype(global_dtype, copy=False)
    X_train, X_test = X[:n_samples], X[n_samples:]
    if global_dtype == np.float32:
        tols = {"atol": 3e-2, "rtol": 1e-5}
        variance_threshold = 1e-5
    else:
        tols = {"atol": 1e-10, "rtol": 1e-12}
        variance_threshold = 1e-12
    pca_full = PCA(n_components=None, svd_solver="full", whiten=whiten)
    pca_other = BatchPCA(n_components=None, solver=solver, whiten=whiten)
    X_trans_full_train = pca_full.fit_transform(X_train)
    X_trans_other_train = pca_other.fit_transform(X_train)
    assert np.isfinite(X_trans_other_train).all()
    assert X_trans_other_train.dtype == global_dtype
    assert_allclose(pca_full.explained_variance_, pca_other.explained_variance_, **tols)
    assert_allclose(pca_full.explained_variance_ratio_, pca_other.explained_variance_ratio_, **tols)
    reference_components = pca_full.components_
    other_components = pca_other.components_
    assert np.isfinite(other_components).all()
    stable = pca_full.explained_variance_ > variance_threshold
    assert stable.sum() > 1
    assert_allclose(reference_components[stable], other_components[stable], **tols)
    assert_allclose(X_trans_other_train[:, stable], X_trans_full_train[:, stable], **tols)
    X_trans_full_test = pca_full.transform(X_test)
    X_trans_other_test = pca_other.transform(X_test)
    assert np.isfinite(X_trans_other_test).all()
    assert X_trans_other_test.dtype == global_dtype
    assert_allclose(X_trans_other_test[:, stable], X_trans_full_test[:, stable], **tols)
    X_recons_full_test = pca_full.inverse_transform(X_trans_full_test)
    X_recons_other_test = pca_other.inverse_transform(X_trans_other_test)
    assert np.isfinite(X_recons_other_test).all()
    assert X_recons_other_test.dtype == global_dtype
    if pca_full.components_.shape[0] == pca_full.components_.shape[1]:
        assert_allclose(X_recons_full_test, X_test, **tols)
        assert_allclose(X_recons_other_test, X_test, **tols)
    elif pca_full.components_.shape[0] < rank:
        assert pca_full.explained_variance_.min() > variance_threshold
        assert_allclose(X_recons_full_test, X_recons_other_test, **tols)
    else:
        assert_allclose(
            pca_full.transform(X_recons_full_test)[:, stable],
            pca_other.transform(X_recons_other_test)[:, stable],
            **tols,
        )


@pytest.mark.parametrize(
    "X",
    [
        np.random.RandomState(0).randn(100, 80),
        datasets.make_classification(100, 80, n_informative=78, random_state=0)[0],
        np.random.RandomState(0).randn(10, 100),
    ],
    ids=["random-tall", "correlated-tall", "random-wide"],
)
def test_pca_explained_variance_empirical(X):
    pca = BatchPCA(n_components=2)
    X_pca = pca.fit_transform(X)
    assert_allclose(pca.explained_variance_, np.var(X_pca, ddof=1, axis=0))
    expected_result = np.linalg.eig(np.cov(X, rowvar=False))[0]
    expected_result = sorted(expected_result, reverse=True)[:2]
    assert_allclose(pca.explained_variance_, expected_result, rtol=5e-3)


def test_pca_singular_values():
    rng = np.random.RandomState(0)
    n_samples, n_features = 100, 80
    X = rng.randn(n_samples, n_features)
    pca = BatchPCA(n_components=2)
    X_trans = pca.fit_transform(X)
    assert_allclose(np.sum(pca.singular_values_**2), np.linalg.norm(X_trans, "fro") ** 2)
    assert_allclose(pca.singular_values_, np.sqrt(np.sum(X_trans**2, axis=0)))
    n_samples, n_features = 100, 110
    X = rng.randn(n_samples, n_features)
    pca = BatchPCA(n_components=3)
    X_trans = pca.fit_transform(X)
    X_trans /= np.sqrt(np.sum(X_trans**2, axis=0))
    X_trans[:, 0] *= 3.142
    X_trans[:, 1] *= 2.718
    X_hat = np.dot(X_trans, pca.components_)
    pca.fit(X_hat)
    assert_allclose(pca.singular_values_, [3.142, 2.718, 1.0])


def test_pca_check_projection():
    rng = np.random.RandomState(0)
    n, p = 100, 3
    X = rng.randn(n, p) * 0.1
    X[:10] += np.array([3, 4, 5])
    Xt = 0.1 * rng.randn(1, p) + np.array([3, 4, 5])
    Yt = BatchPCA(n_components=2).fit(X).transform(Xt)
    Yt /= np.sqrt((Yt**2).sum())
    assert_allclose(np.abs(Yt[0][0]), 1.0, rtol=5e-3)


def test_pca_check_projection_list():
    X = [[1.0, 0.0], [0.0, 1.0]]
    pca = BatchPCA(n_components=1)
    X_trans = pca.fit_transform(X)
    assert X_trans.shape == (2, 1)
    assert_allclose(X_trans.mean(), 0.00, atol=1e-12)
    assert_allclose(X_trans.std(), 0.71, rtol=5e-3)


@pytest.mark.parametrize("whiten", [False, True])
def test_pca_inverse(whiten):
    rng = np.random.RandomState(0)
    n, p = 50, 3
    X = rng.randn(n, p)
    X[:, 1] *= 0.00001
    X += [5, 4, 3]
    pca = BatchPCA(n_components=2, whiten=whiten).fit(X)
    Y = pca.transform(X)
    Y_inverse = pca.inverse_transform(Y)
    assert_allclose(X, Y_inverse, rtol=5e-6)


@pytest.mark.parametrize(
    "data", [np.array([[0, 1, 0], [1, 0, 0]]), np.array([[0, 1, 0], [1, 0, 0]]).T]
)
def test_pca_validation(data):
    # sklearn: ("auto", 3, "n_components=3 must be between 0 and min(n_samples,
    # n_features)=2 with svd_solver='full'"); DIFFERENCE 1: spectra's wording
    pca_fitted = BatchPCA(3)
    with pytest.raises(ValueError, match=r"n_components=3 must be <= min\(n_samples, n_features\)"):
        pca_fitted.fit(data)


@pytest.mark.parametrize("data", [iris.data, iris.data.T])
def test_n_components_none(data):
    pca = BatchPCA()
    pca.fit(data)
    assert pca.n_components_ == min(iris.data.shape)


def test_n_components_mle():
    rng = np.random.RandomState(0)
    n_samples, n_features = 600, 10
    X = rng.randn(n_samples, n_features)
    pca = BatchPCA(n_components="mle")
    pca.fit(X)
    assert pca.n_components_ == 1


def test_pca_dim():
    rng = np.random.RandomState(0)
    n, p = 100, 5
    X = rng.randn(n, p) * 0.1
    X[:10] += np.array([3, 4, 5, 1, 2])
    pca = BatchPCA(n_components="mle").fit(X)
    assert pca.n_components == "mle"
    assert pca.n_components_ == 1


def test_infer_dim_1():
    n, p = 1000, 5
    rng = np.random.RandomState(0)
    X = (
        rng.randn(n, p) * 0.1
        + rng.randn(n, 1) * np.array([3, 4, 5, 1, 2])
        + np.array([1, 0, 7, 4, 6])
    )
    pca = BatchPCA(n_components=p)
    pca.fit(X)
    spect = pca.explained_variance_
    ll = np.array([_assess(spect, k, n) for k in range(1, p)])  # DIFFERENCE 2
    assert ll[1] > ll.max() - 0.01 * n


def test_infer_dim_2():
    n, p = 1000, 5
    rng = np.random.RandomState(0)
    X = rng.randn(n, p) * 0.1
    X[:10] += np.array([3, 4, 5, 1, 2])
    X[10:20] += np.array([6, 0, 7, 2, -1])
    pca = BatchPCA(n_components=p)
    pca.fit(X)
    spect = pca.explained_variance_
    assert _infer(spect, n) > 1


def test_infer_dim_3():
    n, p = 100, 5
    rng = np.random.RandomState(0)
    X = rng.randn(n, p) * 0.1
    X[:10] += np.array([3, 4, 5, 1, 2])
    X[10:20] += np.array([6, 0, 7, 2, -1])
    X[30:40] += 2 * np.array([-1, 1, -1, 1, -1])
    pca = BatchPCA(n_components=p)
    pca.fit(X)
    spect = pca.explained_variance_
    assert _infer(spect, n) > 2


@pytest.mark.parametrize(
    "X, n_components, n_components_validated",
    [
        (iris.data, 0.95, 2),
        (iris.data, 0.01, 1),
        (np.random.RandomState(0).rand(5, 20), 0.5, 2),
    ],
)
def test_infer_dim_by_explained_variance(X, n_components, n_components_validated):
    pca = BatchPCA(n_components=n_components)
    pca.fit(X)
    assert pca.n_components == pytest.approx(n_components)
    assert pca.n_components_ == n_components_validated


def test_pca_score():
    n, p = 1000, 3
    rng = np.random.RandomState(0)
    X = rng.randn(n, p) * 0.1 + np.array([3, 4, 5])
    pca = BatchPCA(n_components=2)
    pca.fit(X)
    ll1 = pca.score(X)
    h = -0.5 * np.log(2 * np.pi * np.exp(1) * 0.1**2) * p
    assert_allclose(ll1 / h, 1, rtol=5e-2)
    ll2 = pca.score(rng.randn(n, p) * 0.2 + np.array([3, 4, 5]))
    assert ll1 > ll2
    pca = BatchPCA(n_components=2, whiten=True)
    pca.fit(X)
    ll2 = pca.score(X)
    assert ll1 > ll2


def test_pca_score3():
    n, p = 200, 3
    rng = np.random.RandomState(0)
    Xl = rng.randn(n, p) + rng.randn(n, 1) * np.array([3, 4, 5]) + np.array([1, 0, 7])
    Xt = rng.randn(n, p) + rng.randn(n, 1) * np.array([3, 4, 5]) + np.array([1, 0, 7])
    ll = np.zeros(p)
    for k in range(p):
        pca = BatchPCA(n_components=k)
        pca.fit(Xl)
        ll[k] = pca.score(Xt)
    assert ll.argmax() == 1


def test_pca_sanity_noise_variance():
    X, _ = datasets.load_digits(return_X_y=True)
    pca = BatchPCA(n_components=30)
    pca.fit(X)
    assert np.all((pca.explained_variance_ - pca.noise_variance_) >= 0)


def test_pca_zero_noise_variance_edge_cases():
    n, p = 100, 3
    rng = np.random.RandomState(0)
    X = rng.randn(n, p) * 0.1 + np.array([3, 4, 5])
    pca = BatchPCA(n_components=p)
    pca.fit(X)
    assert pca.noise_variance_ == 0
    pca.score(X)
    pca.fit(X.T)
    assert pca.noise_variance_ == 0
    pca.score(X.T)


def test_pca_deterministic_output():
    rng = np.random.RandomState(0)
    X = rng.rand(10, 10)
    transformed_X = np.zeros((20, 2))
    for i in range(20):
        pca = BatchPCA(n_components=2)
        transformed_X[i, :] = pca.fit_transform(X)[0]
    assert_allclose(transformed_X, np.tile(transformed_X[0, :], 20).reshape(20, 2))


def test_pca_float_dtype_preservation():
    seed = GLOBAL_RANDOM_SEED
    X = np.random.RandomState(seed).rand(1000, 4)
    X_float64 = X.astype(np.float64, copy=False)
    X_float32 = X.astype(np.float32)
    pca_64 = BatchPCA(n_components=3).fit(X_float64)
    pca_32 = BatchPCA(n_components=3).fit(X_float32)
    assert pca_64.components_.dtype == np.float64
    assert pca_32.components_.dtype == np.float32
    assert pca_64.transform(X_float64).dtype == np.float64
    assert pca_32.transform(X_float32).dtype == np.float32
    assert_allclose(pca_64.components_, pca_32.components_, rtol=1e-3, atol=1e-3)


def test_pca_int_dtype_upcast_to_double():
    X_i64 = np.random.RandomState(0).randint(0, 1000, (1000, 4))
    X_i64 = X_i64.astype(np.int64, copy=False)
    X_i32 = X_i64.astype(np.int32, copy=False)
    pca_64 = BatchPCA(n_components=3).fit(X_i64)
    pca_32 = BatchPCA(n_components=3).fit(X_i32)
    assert pca_64.components_.dtype == np.float64
    assert pca_32.components_.dtype == np.float64
    assert pca_64.transform(X_i64).dtype == np.float64
    assert pca_32.transform(X_i32).dtype == np.float64
    assert_allclose(pca_64.components_, pca_32.components_, rtol=1e-4)


def test_pca_n_components_mostly_explained_variance_ratio():
    X, y = load_iris(return_X_y=True)
    pca1 = BatchPCA().fit(X, y)
    n_components = pca1.explained_variance_ratio_.cumsum()[-2]
    pca2 = BatchPCA(n_components=n_components).fit(X, y)
    assert pca2.n_components_ == X.shape[1]


def test_small_eigenvalues_mle():
    spectrum = np.array([1, 1e-30, 1e-30, 1e-30])
    assert _assess(spectrum, rank=1, n_samples=10) > -np.inf
    for rank in (2, 3):
        assert _assess(spectrum, rank, 10) == -np.inf
    assert _infer(spectrum, 10) == 1


def test_mle_redundant_data():
    X, _ = datasets.make_classification(
        n_features=20,
        n_informative=1,
        n_repeated=18,
        n_redundant=1,
        n_clusters_per_class=1,
        random_state=42,
    )
    pca = BatchPCA(n_components="mle").fit(X)
    assert pca.n_components_ == 1


def test_fit_mle_too_few_samples():
    X, _ = datasets.make_classification(n_samples=20, n_features=21, random_state=42)
    pca = BatchPCA(n_components="mle")
    with pytest.raises(
        ValueError, match="n_components='mle' is only supported if n_samples >= n_features"
    ):
        pca.fit(X)


def test_mle_simple_case():
    n_samples, n_dim = 1000, 10
    X = np.random.RandomState(0).randn(n_samples, n_dim)
    X[:, -1] = np.mean(X[:, :-1], axis=-1)
    pca_skl = BatchPCA("mle")
    pca_skl.fit(X)
    assert pca_skl.n_components_ == n_dim - 1


def test_assess_dimension_rank_one():
    n_samples, n_features = 9, 6
    X = np.ones((n_samples, n_features))
    _, s, _ = np.linalg.svd(X, full_matrices=True)
    assert_allclose(s[1:], np.zeros(n_features - 1), atol=1e-12)
    assert np.isfinite(_assess(s, rank=1, n_samples=n_samples))
    for rank in range(2, n_features):
        assert _assess(s, rank, n_samples) == -np.inf


def test_feature_names_out():
    pca = BatchPCA(n_components=2).fit(iris.data)
    names = pca.get_feature_names_out()
    assert_array_equal(
        [f"batchpca{i}" for i in range(2)], names
    )  # DIFFERENCE 3 (sklearn: pca0, pca1)


def test_variance_correctness():
    rng = np.random.RandomState(0)
    X = rng.randn(1000, 200)
    pca = BatchPCA().fit(X)
    pca_var = pca.explained_variance_ / pca.explained_variance_ratio_
    true_var = np.var(X, ddof=1, axis=0).sum()
    np.testing.assert_allclose(pca_var, true_var)


# ---------------------------------------------------------------------------------------
# The randomized solver (svd_solver="randomized"), added with it: sklearn's tests of that
# solver, with sklearn's inputs and tolerances. DIFFERENCE 5: random_state is an int seed
# (sklearn also takes a RandomState object); DIFFERENCE 6: the error message for
# n_components=0 is spectra's (same ValueError); DIFFERENCE 7: svd_solver="auto" picks
# randomized by its own cost rule (D >= 1000, docs/pca.md), so sklearn's
# test_pca_svd_solver_auto is not ported. arpack has no counterpart.


def test_pca_randomized_singular_values_consistency():
    rng = np.random.RandomState(0)
    n_samples, n_features = 100, 80
    X = rng.randn(n_samples, n_features)
    pca_full = BatchPCA(n_components=2, svd_solver="full").fit(X)
    pca_other = BatchPCA(n_components=2, svd_solver="randomized", random_state=0).fit(X)
    assert_allclose(pca_full.singular_values_, pca_other.singular_values_, rtol=5e-3)


def test_pca_randomized_check_projection():
    rng = np.random.RandomState(0)
    n, p = 100, 3
    X = rng.randn(n, p) * 0.1
    X[:10] += np.array([3, 4, 5])
    Xt = 0.1 * rng.randn(1, p) + np.array([3, 4, 5])
    Yt = BatchPCA(n_components=2, svd_solver="randomized").fit(X).transform(Xt)
    Yt /= np.sqrt((Yt**2).sum())
    assert_allclose(np.abs(Yt[0][0]), 1.0, rtol=5e-3)


def test_pca_randomized_check_projection_list():
    X = [[1.0, 0.0], [0.0, 1.0]]
    pca = BatchPCA(n_components=1, svd_solver="randomized", random_state=0)
    X_trans = pca.fit_transform(X)
    assert X_trans.shape, (2, 1)
    assert_allclose(X_trans.mean(), 0.00, atol=1e-12)
    assert_allclose(X_trans.std(), 0.71, rtol=5e-3)


@pytest.mark.parametrize("whiten", [False, True])
def test_pca_randomized_inverse(whiten):
    rng = np.random.RandomState(0)
    n, p = 50, 3
    X = rng.randn(n, p)  # spherical data
    X[:, 1] *= 0.00001  # make middle component relatively small
    X += [5, 4, 3]  # make a large mean
    pca = BatchPCA(n_components=2, svd_solver="randomized", whiten=whiten).fit(X)
    Y = pca.transform(X)
    Y_inverse = pca.inverse_transform(Y)
    assert_allclose(X, Y_inverse, rtol=5e-6)


@pytest.mark.parametrize(
    "data", [np.array([[0, 1, 0], [1, 0, 0]]), np.array([[0, 1, 0], [1, 0, 0]]).T]
)
def test_pca_randomized_validation(data):
    with pytest.raises(ValueError, match="must be an int >= 1"):  # DIFFERENCE 6
        BatchPCA(0, svd_solver="randomized").fit(data)


def test_pca_randomized_score():
    n, p = 1000, 3
    rng = np.random.RandomState(0)
    X = rng.randn(n, p) * 0.1 + np.array([3, 4, 5])
    pca = BatchPCA(n_components=2, svd_solver="randomized").fit(X)
    ll1 = pca.score(X)
    h = -0.5 * np.log(2 * np.pi * np.exp(1) * 0.1**2) * p
    assert_allclose(ll1 / h, 1, rtol=5e-2)
    ll2 = pca.score(rng.randn(n, p) * 0.2 + np.array([3, 4, 5]))
    assert ll1 > ll2
    pca = BatchPCA(n_components=2, whiten=True, svd_solver="randomized").fit(X)
    ll2 = pca.score(X)
    assert ll1 > ll2


def test_pca_randomized_sanity_noise_variance():
    X, _ = datasets.load_digits(return_X_y=True)
    pca = BatchPCA(n_components=30, svd_solver="randomized", random_state=0).fit(X)
    assert np.all((pca.explained_variance_ - pca.noise_variance_) >= 0)


def test_pca_randomized_score_consistency_solvers():
    X, _ = datasets.load_digits(return_X_y=True)
    pca_full = BatchPCA(n_components=30, svd_solver="full").fit(X)
    pca_other = BatchPCA(n_components=30, svd_solver="randomized", random_state=0).fit(X)
    assert_allclose(pca_full.score(X), pca_other.score(X), rtol=5e-6)


def test_pca_randomized_zero_noise_variance_edge_cases():
    n, p = 100, 3
    rng = np.random.RandomState(0)
    X = rng.randn(n, p) * 0.1 + np.array([3, 4, 5])
    pca = BatchPCA(n_components=p, svd_solver="randomized")
    pca.fit(X)
    assert pca.noise_variance_ == 0
    pca.score(X)
    pca.fit(X.T)
    assert pca.noise_variance_ == 0
    pca.score(X.T)


def test_pca_randomized_deterministic_output():
    rng = np.random.RandomState(0)
    X = rng.rand(10, 10)
    transformed_X = np.zeros((20, 2))
    for i in range(20):
        pca = BatchPCA(n_components=2, svd_solver="randomized", random_state=i)  # DIFFERENCE 5
        transformed_X[i, :] = pca.fit_transform(X)[0]
    assert_allclose(transformed_X, np.tile(transformed_X[0, :], 20).reshape(20, 2))


def test_pca_randomized_svd_n_oversamples():
    rng = np.random.RandomState(0)
    n_features = 100
    X = rng.randn(1_000, n_features)
    pca_randomized = BatchPCA(
        n_components=1, svd_solver="randomized", n_oversamples=n_features, random_state=0
    ).fit(X)
    pca_full = BatchPCA(n_components=1, svd_solver="full").fit(X)
    assert_allclose(np.abs(pca_randomized.components_), np.abs(pca_full.components_))
