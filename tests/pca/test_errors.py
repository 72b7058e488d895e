"""Bad input gets a clear error that says what is wrong and where."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from spectra.core.domain import InputError
from spectra.pca import BatchPCA, NotFittedError


def _x(b=3, n=10, d=4, seed=0):
    return np.random.default_rng(seed).normal(size=(b, n, d))


def test_too_few_samples_names_datasets():
    xs = [np.ones((5, 3)), np.ones((1, 3)), np.ones((4, 3)), np.zeros((0, 3))]
    with pytest.raises(
        InputError, match=r"at least 2 samples.*have \[0, 1\]\) at batch indices \[1, 3\]"
    ) as err:
        BatchPCA(1).fit(xs)
    assert err.value.what == "X" and err.value.indices == [(1,), (3,)]
    with pytest.raises(ValueError, match=r"batch indices \[2\]"):
        BatchPCA(1).fit(_x(), lengths=[10, 5, 1])
    with pytest.raises(ValueError, match="at least 2 samples"):
        BatchPCA(1).fit(_x(n=1))


def test_too_many_components_names_datasets():
    with pytest.raises(
        InputError, match=r"n_components=5.*allow only \[4\] at batch indices \[0, 1, 2\]"
    ):
        BatchPCA(5).fit(_x())
    xs = [np.random.default_rng(i).normal(size=(n, 6)) for i, n in enumerate((10, 3, 8))]
    with pytest.raises(ValueError, match=r"allow only \[3\] at batch indices \[1\]"):
        BatchPCA(4).fit(xs)
    with pytest.raises(ValueError, match=r"batch indices \[1\]"):
        BatchPCA(4).fit_from_moments(
            np.array([10, 3]), np.zeros((2, 6)), np.broadcast_to(np.eye(6), (2, 6, 6))
        )


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_names_dataset_and_sample(bad):
    x = _x(b=4)
    x[2, 7, 1] = bad
    want = r"X contains NaN or Inf \(first in dataset 2, sample 7\) at batch indices \[2\]"
    with pytest.raises(ValueError, match=want):
        BatchPCA(2).fit(x)
    with pytest.raises(ValueError, match=r"batch indices \[2\]"):
        BatchPCA(2).fit(torch.from_numpy(x))
    xs = list(_x(b=3))
    xs[1] = xs[1].copy()
    xs[1][0, 0] = bad
    with pytest.raises(ValueError, match=r"batch indices \[1\]"):
        BatchPCA(2).fit(xs)
    model = BatchPCA(2).fit(_x(b=4))
    with pytest.raises(ValueError, match=r"NaN or Inf.*batch indices \[2\]"):
        model.transform(x)


def test_mismatched_features_in_ragged_list():
    xs = [np.ones((5, 3)), np.ones((5, 4)), np.ones((6, 3)), np.ones((2, 2))]
    want = r"needs 3 features.*have \[2, 4\] at batch indices \[1, 3\]"
    with pytest.raises(ValueError, match=want):
        BatchPCA(1).fit(xs)
    with pytest.raises(ValueError, match=r"X\[1\] must be one \(n_samples, n_features\)"):
        BatchPCA(1).fit([np.ones((5, 3)), np.ones((2, 5, 3))])


def test_bad_shapes_and_types():
    with pytest.raises(ValueError, match=r"shape \(n_datasets, n_samples, n_features\)"):
        BatchPCA(1).fit(np.ones((2, 5, 3, 1)))
    with pytest.raises(ValueError, match="not to one"):  # one (N, D) dataset: no lengths
        BatchPCA(1).fit(np.ones((5, 3)), lengths=[5])
    with pytest.raises(ValueError, match="empty list"):
        BatchPCA(1).fit([])
    with pytest.raises(TypeError, match="real data"):
        BatchPCA(1).fit(torch.ones(2, 5, 3, dtype=torch.complex64))
    with pytest.raises(ValueError, match=r"lengths must have shape \(3,\)"):
        BatchPCA(1).fit(_x(), lengths=[10, 10])
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, 10\].*batch indices \[1\]"):
        BatchPCA(1).fit(_x(), lengths=[10, 11, 3])
    with pytest.raises(ValueError, match="lengths must be integers"):
        BatchPCA(1).fit(_x(), lengths=[10, 2.5, 3])
    with pytest.raises(ValueError, match="either lengths or mask"):
        BatchPCA(1).fit(_x(), lengths=[10, 10, 10], mask=np.ones((3, 10), bool))
    with pytest.raises(ValueError, match=r"mask must have shape \(3, 10\)"):
        BatchPCA(1).fit(_x(), mask=np.ones((3, 9), bool))
    with pytest.raises(TypeError, match="mask must be boolean"):
        BatchPCA(1).fit(_x(), mask=np.ones((3, 10)))
    with pytest.raises(ValueError, match="not to a ragged list"):
        BatchPCA(1).fit(list(_x()), lengths=[10, 10, 10])


@pytest.mark.parametrize("spec", [-1, 1.0, 0.0, 1.5, "MLE", "auto", True])
def test_bad_n_components(spec):
    with pytest.raises((ValueError, TypeError), match="n_components"):
        BatchPCA(spec)


def test_bad_options():
    with pytest.raises(InputError, match="solver must be one of"):
        BatchPCA(1, solver="arpack")
    with pytest.raises(InputError, match=r"svd_solver must be one of.*'arpack'"):
        BatchPCA(1, svd_solver="arpack")
    with pytest.raises(InputError, match="precision must be"):
        BatchPCA(1, precision="float16")
    with pytest.raises(InputError, match="iterated_power must be"):
        BatchPCA(1, iterated_power=-1)
    with pytest.raises(InputError, match="n_oversamples must be"):
        BatchPCA(1, n_oversamples=0)
    with pytest.raises(InputError, match="random_state must be None or an int"):
        BatchPCA(1, random_state="x")
    with pytest.raises(TypeError, match="'k'"):
        BatchPCA(1, k=3)
    # sklearn's options that mean nothing here are refused at construction, not in eigh
    with pytest.raises(TypeError, match=r"'tol'.*power_iteration_normalizer"):
        BatchPCA(1, tol=0.1)
    with pytest.raises(ValueError, match="Invalid parameter 'tol'"):
        BatchPCA(1).set_params(tol=0.1)
    # sklearn's svd_solver / random_state are parameters now
    assert BatchPCA(1).set_params(svd_solver="full", random_state=0).svd_solver == "full"


def test_randomized_needs_an_int_number_of_components():
    for spec in (None, 0.5, "mle", 0):
        with pytest.raises(InputError, match="n_components"):
            BatchPCA(spec, svd_solver="randomized").fit(_x())
    with pytest.raises(InputError, match=r"n_components=5.*batch indices \[0, 1, 2\]"):
        BatchPCA(5, svd_solver="randomized").fit(_x())


def test_transform_checks():
    model = BatchPCA(2)
    with pytest.raises(NotFittedError, match="not fitted"):
        model.transform(_x())
    with pytest.raises(AttributeError):
        model.get_covariance()
    model.fit(_x())
    with pytest.raises(ValueError, match="5 features, but the model was fitted with 4"):
        model.transform(_x(d=5))
    with pytest.raises(ValueError, match="holds 2 datasets but the model was fitted on 3"):
        model.transform(_x(b=2))
    with pytest.raises(ValueError, match="Z has 3 components per row, the model keeps 2"):
        model.inverse_transform(np.ones((3, 4, 3)))
    with pytest.raises(ValueError, match=r"Z\[0\] must be an \(M, k\) array with k <= 2"):
        model.inverse_transform([np.ones((4, 3))] * 3)


def test_moments_input_checks():
    with pytest.raises(ValueError, match=r"scatter must have shape \(B, D, D\)"):
        BatchPCA(1).fit_from_moments([5], np.zeros((1, 3)), np.zeros((1, 3, 4)))
    with pytest.raises(ValueError, match="count must have shape"):
        BatchPCA(1).fit_from_moments([5, 5], np.zeros((1, 3)), np.zeros((1, 3, 3)))
    with pytest.raises(ValueError, match="at least 2 samples"):
        BatchPCA(1).fit_from_moments([1], np.zeros((1, 3)), np.zeros((1, 3, 3)))


def test_overflow_is_reported_not_returned():
    x = _x()
    x[1] *= 1e200  # finite data whose squares overflow float64
    with pytest.raises(InputError, match=r"not finite.*overflow.*batch indices \[1\]"):
        BatchPCA(2).fit(x)
    for route in ("gram", "svd"):
        with pytest.raises(ValueError, match=r"batch indices \[1\]"):
            BatchPCA(2, solver=route).fit(x)
    with pytest.raises(ValueError, match=r"batch indices \[1\]"):
        BatchPCA(2, svd_solver="randomized").fit(x)
    with pytest.raises(ValueError, match=r"not finite.*batch indices \[0\]"):
        BatchPCA(1).fit_from_moments([5], np.zeros((1, 3)), np.full((1, 3, 3), np.nan))


@pytest.mark.parametrize(
    ("call", "what"),
    [
        (lambda: BatchPCA(1).fit([np.ones((5, 3)), np.ones((1, 3))]), "X"),
        (lambda: BatchPCA(5).fit(_x()), "n_components=5"),
        (lambda: BatchPCA(1).fit(_x(), lengths=[10, 11, 3]), "lengths"),
        (lambda: BatchPCA(1).fit(_x(), mask=np.ones((3, 9), bool)), "mask"),
        (lambda: BatchPCA(1).fit([np.ones((5, 3)), np.ones((2, 5, 3))]), "X[1]"),
        (lambda: BatchPCA(1, solver="arpack"), "solver"),
        (lambda: BatchPCA(2).fit(_x()).transform(_x(d=5)), "X"),
        (lambda: BatchPCA(2).fit(_x()).inverse_transform(np.ones((3, 4, 3))), "Z"),
        (
            lambda: BatchPCA(1).fit_from_moments([5], np.zeros((1, 3)), np.zeros((1, 3, 4))),
            "scatter",
        ),
        (lambda: BatchPCA("mle").fit(_x(n=3)), "n_components='mle'"),
        (lambda: BatchPCA(0, svd_solver="randomized").fit(_x()), "n_components"),
    ],
)
def test_bad_input_raises_input_error_naming_what(call, what):
    with pytest.raises(InputError) as err:
        call()
    assert isinstance(err.value, ValueError)  # InputError is a ValueError, as before
    assert err.value.what == what and str(err.value).startswith(what)
