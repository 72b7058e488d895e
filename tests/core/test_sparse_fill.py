"""The shift-invert factor's fill estimate (issue 28) against the fill SuperLU really makes.

References: ``scipy.sparse.linalg.splu`` itself, called as SciPy's users call it on the
unpermuted matrix with the ordering it would choose (``permc_spec="MMD_AT_PLUS_A"``), whose
``L.nnz`` / ``U.nnz`` the estimate must equal; and a dense numerical Cholesky factor
(``numpy.linalg.cholesky``, random values on the pattern: no cancellation) for the column
counts. The families: random geometric graphs, a grid, Barabasi-Albert (power law), a
disconnected graph with isolated nodes, a random regular expander, a complex Hermitian
matrix, a pattern without its diagonal.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import spectra
from spectra.core._sparse import _factor, _plan, _precondition
from spectra.core._sparse._symbolic import column_counts
from tests.core.sparse_helpers import (
    adjacency_rgg,
    expander,
    grid,
    largest_component,
    magnetic_laplacian,
    normalized_laplacian,
)


def _barabasi_albert(n: int, m: int, seed: int) -> sp.csr_matrix:
    g = nx.barabasi_albert_graph(n, m, seed=seed)
    return sp.csr_matrix(nx.to_scipy_sparse_array(g, format="csr").astype(float))


def _disconnected() -> sp.csr_matrix:
    parts = [adjacency_rgg(1500, seed=51), grid(20, 30), sp.csr_matrix((40, 40))]
    return sp.block_diag(parts).tocsr()  # the last 40 nodes are isolated


FAMILIES = {
    "geometric": lambda: normalized_laplacian(largest_component(adjacency_rgg(20000, seed=52))),
    "grid": lambda: normalized_laplacian(grid(120, 90)),
    "barabasi-albert": lambda: normalized_laplacian(_barabasi_albert(2000, 4, seed=53)),
    "disconnected": lambda: normalized_laplacian(_disconnected()),
    "expander": lambda: normalized_laplacian(expander(1500, seed=54)),
    "magnetic": lambda: magnetic_laplacian(adjacency_rgg(3000, seed=55)),
    "adjacency": lambda: adjacency_rgg(3000, seed=56),  # no diagonal stored
}


def _splu_default_mmd(a: sp.spmatrix, shift: float) -> sla.SuperLU:
    """SuperLU as a SciPy user would call it (the shift makes the matrix definite)."""
    eye = sp.identity(a.shape[0], dtype=a.dtype, format="csc")
    return sla.splu(
        (a + shift * eye).tocsc(),
        permc_spec="MMD_AT_PLUS_A",
        diag_pivot_thresh=0.0,
        options={"SymmetricMode": True},
    )


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_estimate_is_superlus_fill(family):
    a = FAMILIES[family]().tocsr()
    est = _factor.estimate(a)
    assert est.exact
    shift = float(abs(a).sum(axis=1).max()) + 1.0  # diagonally dominant: no zero pivot
    lu = _splu_default_mmd(a, shift)
    assert lu.L.nnz == est.fill and lu.U.nnz == est.fill
    assert np.array_equal(lu.perm_r, lu.perm_c)  # diagonal pivots, as the estimate assumes
    # the factorization the preconditioner builds: the same fill, ordered once
    p = _factor.ordering(a)
    own = _factor._factorize((a + shift * sp.identity(a.shape[0]))[p][:, p])
    assert own.nnz == 2 * est.fill
    assert est.fill >= a.shape[0]  # the diagonal at least


@pytest.mark.parametrize("family", ["grid", "barabasi-albert", "magnetic", "geometric"])
def test_the_trial_factorization_and_the_symbolic_count_agree(family, monkeypatch):
    """Without the compiled helper small patterns read the fill off a factorization (no
    numba), larger ones count it; with it every pattern is counted by it: the three ways
    agree, order included."""
    a = FAMILIES[family]().tocsr()
    counted = []
    monkeypatch.setattr(_factor, "TRIAL_PROFILE", np.inf)
    for small, helper in ((0, False), (10**9, False), (10**9, True)):
        monkeypatch.setattr(_factor, "SMALL_NNZ", small)
        if helper:
            monkeypatch.undo()
            if not _factor.native_column_counts_available():
                continue
        else:
            monkeypatch.setattr(_factor, "native_column_counts_available", lambda: False)
        _factor._ORDERED.items.clear()
        counted.append((_factor.estimate(a), _factor.ordering(a)))
    assert all(c[0] == counted[0][0] and c[0].exact for c in counted)
    assert all(np.array_equal(c[1], counted[0][1]) for c in counted)


def test_column_counts_match_a_dense_cholesky():
    rng = np.random.default_rng(57)
    for adj in (adjacency_rgg(300, seed=58), expander(120, seed=59), grid(9, 11)):
        n = adj.shape[0]
        perm = rng.permutation(n)  # an arbitrary ordering: the counts are of any ordering
        pattern = adj[perm][:, perm].tocsr()
        values = sp.triu(pattern, 1)
        values.data = rng.uniform(0.1, 1.0, values.nnz)
        dense = (values + values.T).toarray()
        dense += np.diag(np.abs(dense).sum(axis=1) + 1.0)
        chol = np.linalg.cholesky(dense)
        expected = (np.abs(chol) > 0).sum(axis=0)
        full = (pattern + sp.identity(n)).tocsr()
        np.testing.assert_array_equal(column_counts(full), expected)


def test_the_estimate_is_far_below_the_profile_on_geometric_graphs():
    """The issue's graphs: the previous estimate (the RCM profile) refused the factor."""
    lap = FAMILIES["geometric"]()
    est = _factor.estimate(lap)
    assert est.fill / lap.nnz < 2.5  # 1.7 at 20,000 nodes
    assert _factor.profile(lap) > 10 * est.fill


@pytest.fixture
def orderings(monkeypatch):
    """Counts the minimum degree orderings computed."""
    calls: list[int] = []
    real = _factor._mmd_order

    def spy(pattern):
        calls.append(pattern.shape[0])
        return real(pattern)

    monkeypatch.setattr(_factor, "_mmd_order", spy)
    _factor._ORDERED.items.clear()
    return calls


def test_dense_filling_graphs_are_refused_by_the_profile_without_ordering(orderings):
    """Minimum degree on a 20,000-node expander or Barabasi-Albert graph takes 10-17 s (2.3 s
    on a 6,000-node expander): the profile (over screen_factor(n) times the cap) refuses
    them before any ordering."""
    for adj in (
        expander(20000, seed=60),
        _barabasi_albert(20000, 5, seed=61),
        expander(6000, seed=66),
    ):
        lap = normalized_laplacian(adj)
        plan = spectra.plan(lap, k=6)
        assert plan.preconditioners[0] == "amg"
        why = plan.preconditioner_reasons[0]
        assert "RCM profile, not ordered" in why and f"over {_plan.FILL_CAP} nnz" in why
        est = _factor.estimate(lap, refuse_above=_plan.FILL_CAP)
        assert not est.exact and est.fill == _factor.profile(lap)
    assert orderings == []


def test_the_plan_and_the_factorization_order_once(orderings):
    lap = normalized_laplacian(largest_component(adjacency_rgg(9000, seed=62)))
    assert lap.nnz > _factor.SMALL_NNZ  # the symbolic count (smaller: test_small_patterns_*)
    plan = spectra.plan(lap, k=8)
    assert plan.preconditioners == ("factor",) and plan.methods == ("lanczos",)
    fill = _factor.fill_estimate(lap)
    assert f"fill {fill:,} = " in plan.preconditioner_reasons[0]
    built = []
    real = _precondition.ShiftInvert

    def record(*args, **kwargs):
        solver = real(*args, **kwargs)
        built.append(solver.fill)
        return solver

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_precondition, "ShiftInvert", record)
        w = spectra.eigvalsh(lap, k=8)
    assert built == [2 * fill]  # the factor made has the fill the plan counted
    assert orderings == [lap.shape[0]]  # the plan's ordering, reused by the factorization
    ref = sla.eigsh(lap, k=8, sigma=-1e-3, which="LM", tol=1e-14)[0]
    np.testing.assert_allclose(w, np.sort(ref), rtol=1e-8, atol=2e-12)


def test_small_patterns_order_and_count_in_one_trial_factorization(orderings, monkeypatch):
    """Without the compiled helper, up to SMALL_NNZ entries: no separate ordering, no numba;
    the factor built later has the counted fill."""
    from spectra.core._sparse import _symbolic

    def refuse(*args):
        raise AssertionError("counted symbolically")

    monkeypatch.setattr(_symbolic, "column_counts", refuse)
    monkeypatch.setattr(_factor, "native_column_counts_available", lambda: False)
    lap = normalized_laplacian(largest_component(adjacency_rgg(3000, seed=64)))
    assert lap.nnz <= _factor.SMALL_NNZ
    est = _factor.estimate(lap)
    p = _factor.ordering(lap)  # the trial's ordering, cached
    own = _factor._factorize((lap + 1e-3 * sp.identity(lap.shape[0]))[p][:, p])
    assert own.nnz == 2 * est.fill and orderings == []


def test_with_the_compiled_helper_small_patterns_are_counted_not_factored(orderings, monkeypatch):
    """With the compiled helper even a small pattern is ordered once (the incomplete
    factorization that keeps no fill) and counted by the helper: no trial factorization,
    no numba, and the factor built later has the counted fill."""
    from spectra.core._sparse import _symbolic

    if not _factor.native_column_counts_available():
        pytest.skip("the compiled helper is not built here")

    def refuse(*args):
        raise AssertionError("not this way")

    monkeypatch.setattr(_symbolic, "column_counts", refuse)
    trials = []
    real = _factor._factorize
    monkeypatch.setattr(_factor, "_factorize", lambda *a: trials.append(1) or real(*a))
    lap = normalized_laplacian(largest_component(adjacency_rgg(3000, seed=64)))
    assert lap.nnz <= _factor.SMALL_NNZ
    est = _factor.estimate(lap)
    assert trials == [] and est.exact and orderings == [lap.shape[0]]
    p = _factor.ordering(lap)  # cached: no second ordering
    own = real((lap + 1e-3 * sp.identity(lap.shape[0]))[p][:, p])
    assert own.nnz == 2 * est.fill and orderings == [lap.shape[0]]


def test_small_patterns_that_fill_densely_are_counted_not_factored(monkeypatch):
    """A small expander's profile is over TRIAL_PROFILE nnz: no trial factorization (its
    fill would be ~n^2 / 2), the symbolic count instead, and the same answer."""
    lap = normalized_laplacian(expander(1500, seed=65))
    assert lap.nnz <= _factor.SMALL_NNZ
    assert _factor.profile(lap) > _factor.TRIAL_PROFILE * lap.nnz
    _factor._ORDERED.items.clear()
    trials = []
    real = _factor._factorize
    monkeypatch.setattr(_factor, "_factorize", lambda *a: trials.append(1) or real(*a))
    est = _factor.estimate(lap)
    assert trials == [] and est.exact
    assert est.fill == _splu_default_mmd(lap, 3.0).L.nnz


def test_max_memory_counts_the_factor_with_its_peak():
    """The planned bytes cover SuperLU's stored factor 1.5x over (its reallocations) plus
    two matrix copies; a budget below that refuses the factor."""
    lap = normalized_laplacian(largest_component(adjacency_rgg(5000, seed=63)))
    fill = _factor.fill_estimate(lap)
    need = _factor.factor_bytes(fill, lap.nnz)
    assert need >= 1.5 * (2 * fill) * 12 + 2 * lap.nnz * 12
    plan = spectra.plan(lap, k=4)
    base = _plan.iterative_bytes(_plan.as_operator(lap, "a", False, None, None), 4)
    assert plan.preconditioners == ("factor",) and plan.memory[0] == base + need
    short = spectra.plan(lap, k=4, max_memory=base + need - 1)
    assert short.preconditioners[0] != "factor" and "over max_memory" in str(short)


def test_empty_and_tiny_patterns():
    assert _factor.estimate(sp.csr_matrix((0, 0))) == _factor.FillEstimate(0, 0.0, True)
    one = sp.csr_matrix(np.array([[2.0]]))
    assert _factor.fill_estimate(one) == 1
    assert column_counts(sp.identity(4, format="csr")).tolist() == [1, 1, 1, 1]
