"""The randomized solver (svd_solver="randomized", Halko et al.) against sklearn's
PCA(svd_solver="randomized") and the exact PCA(svd_solver="full"), dataset by dataset."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import make_low_rank_matrix
from sklearn.decomposition import PCA

from spectra.pca import BatchPCA

# error floors per dtype: a randomized fit is "as accurate as sklearn's" when its error
# against the exact PCA is at most 10x sklearn's randomized error plus this floor
FLOOR = {np.float32: 1e-4, np.float64: 1e-10}


def _datasets(n_sets, n, d, dtype, seed=0, rank=12):
    rng = np.random.default_rng(seed)
    out = []
    for b in range(n_sets):
        x = make_low_rank_matrix(n, d, effective_rank=rank, tail_strength=0.3, random_state=b)
        out.append((x * 100 + rng.normal(size=d) * 5).astype(dtype))
    return np.stack(out)


def _angle(a, b):
    """Largest principal angle (sine) between the row spaces of a and b (k, D)."""
    qa, _ = np.linalg.qr(a.T.astype(np.float64))
    qb, _ = np.linalg.qr(b.T.astype(np.float64))
    s = np.linalg.svd(qa.T @ qb, compute_uv=False)
    return float(np.sqrt(max(0.0, 1.0 - s.min() ** 2)))


def _errors(ev, comps, full, k):
    ev_err = np.abs(ev - full.explained_variance_[:k]).max() / full.explained_variance_[0]
    return ev_err, _angle(comps, full.components_[:k])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("iterated_power", ["auto", 1])
def test_within_sklearns_randomized_accuracy(dtype, iterated_power):
    # one dataset repeated: each copy gets its own random test matrix, so the batch gives
    # the spread of our errors, compared with sklearn's over as many seeds
    k, copies = 5, 6
    x = _datasets(1, 150, 400, dtype)[0]
    xb = x.astype(np.float64)
    full = PCA(k, svd_solver="full").fit(xb)
    model = BatchPCA(k, svd_solver="randomized", iterated_power=iterated_power, random_state=0).fit(
        np.stack([x] * copies)
    )
    assert model.plan_.route == "randomized" and model.components_.dtype == dtype
    ours = [
        _errors(model.explained_variance_[b], model.components_[b], full, k) for b in range(copies)
    ]
    theirs = []
    for seed in range(copies):
        sk = PCA(k, svd_solver="randomized", iterated_power=iterated_power, random_state=seed)
        theirs.append(_errors(sk.fit(xb).explained_variance_, sk.components_, full, k))
    (ours_ev, ours_angle), (sk_ev, sk_angle) = np.median(ours, 0), np.median(theirs, 0)
    assert ours_ev <= 3 * sk_ev + FLOOR[dtype], (ours_ev, sk_ev)
    assert ours_angle <= 3 * sk_angle + 10 * FLOOR[dtype] ** 0.5, (ours_angle, sk_angle)
    # sklearn's conventions: total variance, ratios, noise, singular values, signs
    tol = 1e-4 if dtype == np.float32 else 1e-9
    total = full.explained_variance_.sum() / full.explained_variance_ratio_.sum()
    ev = model.explained_variance_.astype(np.float64)
    np.testing.assert_allclose(ev / model.explained_variance_ratio_, total, rtol=tol)
    rest = (total - ev.sum(-1)) / (min(x.shape) - k)
    np.testing.assert_allclose(model.noise_variance_, rest, rtol=tol)
    np.testing.assert_allclose(model.singular_values_**2, ev * (len(x) - 1), rtol=tol)
    np.testing.assert_allclose(model.mean_[0], full.mean_, rtol=tol, atol=tol)
    if iterated_power == "auto":  # accurate enough to compare with the exact PCA
        signs = np.sign((model.components_ * full.components_).sum(-1))
        assert np.all(signs > 0)  # the largest-|entry| rule picks the same signs
        z = model.transform(x)[0]
        np.testing.assert_allclose(z, full.transform(xb), atol=1e-3 * np.abs(z).max())


def test_exact_on_low_rank_data_with_enough_oversampling():
    # rank-6 data and k + p >= 6: the range finder captures the whole range, so the
    # randomized fit equals the full one to round-off (sklearn's behaviour too)
    rng = np.random.default_rng(3)
    x = np.stack([rng.normal(size=(80, 6)) @ rng.normal(size=(6, 300)) for _ in range(4)])
    model = BatchPCA(3, svd_solver="randomized", random_state=1).fit(x)
    for b in range(4):
        full = PCA(3, svd_solver="full").fit(x[b])
        np.testing.assert_allclose(model.components_[b], full.components_, atol=1e-10)
        np.testing.assert_allclose(
            model.explained_variance_[b], full.explained_variance_, rtol=1e-10
        )
        np.testing.assert_allclose(model.noise_variance_[b], full.noise_variance_, atol=1e-10)


def test_ragged_and_torch_input():
    x = _datasets(3, 120, 300, np.float64, seed=5)
    xs = [x[0], x[1, :70], x[2, :100]]
    model = BatchPCA(4, svd_solver="randomized", random_state=0).fit(xs)
    assert list(model.n_samples_) == [120, 70, 100]
    for b, xb in enumerate(xs):
        full = PCA(4, svd_solver="full").fit(xb)
        assert _angle(model.components_[b], full.components_) < 1e-3
    t = BatchPCA(4, svd_solver="randomized", random_state=0).fit(torch.from_numpy(x))
    assert isinstance(t.components_, torch.Tensor) and t.components_.shape == (3, 4, 300)


def test_seeded_fits_are_reproducible_and_seeds_differ():
    x = _datasets(2, 100, 250, np.float64, seed=2)
    a = BatchPCA(3, svd_solver="randomized", iterated_power=0, random_state=7).fit(x)
    b = BatchPCA(3, svd_solver="randomized", iterated_power=0, random_state=7).fit(x)
    c = BatchPCA(3, svd_solver="randomized", iterated_power=0, random_state=8).fit(x)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert not np.array_equal(a.components_, c.components_)


def test_auto_chooses_randomized_for_many_features_and_few_components():
    plan = BatchPCA(10).plan(shape=(20, 2000, 5000))
    assert (plan.svd_solver, plan.route, plan.n_iter, plan.n_oversamples) == (
        "randomized",
        "randomized",
        7,
        10,
    )
    assert "5000 >= 1000 features" in plan.reason and "randomized" in str(plan)
    # few features, a float or "mle" n_components, an explicit route or svd_solver: exact
    assert BatchPCA(10).plan(shape=(20, 2000, 500)).svd_solver == "full"
    assert BatchPCA(0.9).plan(shape=(20, 2000, 5000)).svd_solver == "full"
    assert BatchPCA(10, solver="gram").plan(shape=(20, 2000, 5000)).route == "gram"
    assert BatchPCA(10, svd_solver="full").plan(shape=(20, 2000, 5000)).svd_solver == "full"
    # many components: the exact route is cheaper
    assert BatchPCA(200).plan(shape=(20, 2000, 5000)).svd_solver == "full"
    # sklearn's iteration rule: 4 power iterations from k >= 0.1 min(N, D)
    assert BatchPCA(30, svd_solver="randomized").plan(shape=(1, 200, 5000)).n_iter == 4


def test_auto_randomized_fit_matches_the_plan():
    x = _datasets(2, 700, 1000, np.float64, seed=4)
    model = BatchPCA(3, random_state=0).fit(x)
    assert model.plan_.route == "randomized"
    for b in range(2):
        full = PCA(3, svd_solver="full").fit(x[b])
        assert _angle(model.components_[b], full.components_) < 1e-3


def test_rank_deficient_data_gives_orthonormal_components():
    # rank 2 after centering, 4 components asked: the null ones are completed (as an SVD)
    rng = np.random.default_rng(6)
    x = rng.normal(size=(2, 40, 2)) @ rng.normal(size=(2, 30))
    model = BatchPCA(4, svd_solver="randomized", random_state=0).fit(x)
    for b in range(2):
        c = model.components_[b]
        np.testing.assert_allclose(c @ c.T, np.eye(4), atol=1e-12)
        assert np.all(model.explained_variance_[b, 2:] == 0)
        full = PCA(2, svd_solver="full").fit(x[b])
        np.testing.assert_allclose(c[:2], full.components_, atol=1e-10)
