"""Hypothesis: random shapes, ragged sizes and component counts, checked against sklearn."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spectra.pca import BatchPCA

from .helpers import check_dataset, make_data, reference


@st.composite
def problems(draw):
    d = draw(st.integers(1, 7))
    sizes = draw(st.lists(st.integers(2, 12), min_size=1, max_size=4))
    spec = draw(st.one_of(st.none(), st.integers(0, min(min(sizes), d)), st.floats(0.05, 0.95)))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    solver = draw(st.sampled_from(["auto", "covariance", "gram"]))
    seed = draw(st.integers(0, 2**31))
    return d, sizes, spec, dtype, solver, seed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_random_problems_match_sklearn(problem):
    d, sizes, spec, dtype, solver, seed = problem
    rng = np.random.default_rng(seed)
    xs = [make_data(rng, 1, n, d, dtype)[0] for n in sizes]
    model = BatchPCA(spec, solver=solver).fit(xs)
    for i, x in enumerate(xs):
        check_dataset(model, i, x, reference(x, spec), dtype, x)
    # projections reconstruct the data exactly when every direction is kept
    full = BatchPCA(None, solver=solver).fit(xs)
    back = full.inverse_transform(full.transform(xs))
    tol = 1e-3 if dtype == np.float32 else 1e-9
    for x, xb in zip(xs, back, strict=True):
        np.testing.assert_allclose(xb, x, rtol=0, atol=tol * (np.abs(x).max() + 1))
