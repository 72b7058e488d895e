"""The shift-invert ``"factor"`` preconditioner and the plan that chooses it, against SciPy.

References: dense ``scipy.linalg.eigh`` for n <= 1,500, shift-invert ARPACK
(``eigsh(sigma=...)``, tol 1e-14) above; eigenspaces compared per multiplicity group by the
largest principal angle. The path is asserted (the plan's preconditioner, the factorization
built), never assumed.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla
import torch

import spectra
from spectra.core._sparse import _api, _factor, _precondition
from tests.core.sparse_helpers import (
    adjacency_rgg,
    dense_reference,
    expander,
    grid,
    largest_angle,
    largest_component,
    lobpcg_iterations,
    magnetic_laplacian,
    normalized_laplacian,
)


def _shift_invert_reference(a: sp.spmatrix, k: int) -> tuple[np.ndarray, np.ndarray]:
    w, v = sla.eigsh(a, k=k, sigma=-1e-3, which="LM", tol=1e-14)
    order = np.argsort(w)
    return w[order], v[:, order]


@pytest.fixture
def factored(monkeypatch):
    """Records every shift-invert factorization built: (n, sigma, fill)."""
    built: list[tuple[int, float, int]] = []
    real = _precondition.ShiftInvert

    def record(*args, **kwargs):
        solver = real(*args, **kwargs)
        built.append((args[0].shape[0], solver.sigma, solver.fill))
        return solver

    monkeypatch.setattr(_precondition, "ShiftInvert", record)
    return built


def test_auto_factors_a_geometric_graph_and_keeps_the_accuracy(factored):
    """The issue's case: default tol 1e-8; eigenvalues within 1e-8 relative (1e-12 * ||A||
    absolute for the zero eigenvalue), eigenspaces within 1e-6."""
    lap = normalized_laplacian(largest_component(adjacency_rgg(4000, seed=31)))
    plan = spectra.plan(lap, k=8)
    assert plan.methods == ("lanczos",) and plan.preconditioners == ("factor",)
    assert "shift-invert" in str(plan)
    w, v = spectra.eigh(lap, k=8)
    assert len(factored) == 1 and factored[0][0] == lap.shape[0]
    assert -1e-3 < factored[0][1] < 0  # the semidefinite shift, not Gershgorin's -0.x
    ref_w, ref_v = _shift_invert_reference(lap, 10)
    np.testing.assert_allclose(w, ref_w[:8], rtol=1e-8, atol=2e-12)
    assert largest_angle(v, ref_v, ref_w, 8) < 1e-6


def test_factor_takes_fewer_iterations_than_amg(monkeypatch):
    pytest.importorskip("pyamg")
    counts = lobpcg_iterations(monkeypatch)
    lap = normalized_laplacian(largest_component(adjacency_rgg(3000, seed=32)))
    w1 = spectra.eigvalsh(lap, k=8, precondition="factor", method="lobpcg")
    w2 = spectra.eigvalsh(lap, k=8, precondition="amg", spectrum_bound=(0, 2))
    np.testing.assert_allclose(w1, w2, atol=1e-12)
    assert counts[0] < counts[1]


def test_indefinite_matrix_falls_back_to_the_gershgorin_shift(factored):
    """``L - 0.5 I`` has negative eigenvalues: the semidefinite guess fails the inertia test
    (negative pivots), the proven Gershgorin bound is used, and the result is right."""
    lap = normalized_laplacian(adjacency_rgg(1200, seed=33))
    a = (lap - 0.5 * sp.identity(1200)).tocsr()
    ref_w, ref_v = dense_reference(a)
    w, v = spectra.eigh(a, k=5, tol=1e-10, precondition="factor", method="lobpcg")
    lo = float((a.diagonal() - (abs(a).sum(axis=1).A1 - abs(a.diagonal()))).min())
    assert factored[0][1] < lo  # the Gershgorin shift, below every eigenvalue
    np.testing.assert_allclose(w, ref_w[:5], rtol=1e-8, atol=1e-12)
    assert largest_angle(v, ref_v, ref_w, 5) < 1e-6


def test_inertia_of_the_factorization_counts_eigenvalues_below_the_shift():
    lap = normalized_laplacian(adjacency_rgg(800, seed=34))
    w = np.linalg.eigvalsh(lap.toarray())
    eye = sp.identity(800, format="csr")
    assert _factor._definite(_factor._factorize(lap + 1e-6 * eye))
    shift = (w[3] + w[4]) / 2
    lu = _factor._factorize(lap - shift * eye)
    assert int((lu.U.diagonal() < 0).sum()) == 4
    assert not _factor._definite(lu)


def test_largest_with_factor_and_a_wrong_bound(factored):
    lap = normalized_laplacian(adjacency_rgg(1100, seed=35))
    ref_w, ref_v = dense_reference(lap)
    w, v = spectra.eigh(lap, k=4, largest=True, tol=1e-10, precondition="factor", method="lobpcg")
    np.testing.assert_allclose(w, ref_w[-4:], rtol=1e-8)
    flip = lambda x: x[..., ::-1]  # noqa: E731
    assert largest_angle(flip(v), flip(ref_v), -ref_w[::-1], 4) < 1e-6
    # a spectrum_bound that is wrong: the inertia test refuses its shift, the answer is
    # still right, and the bound check then names the mismatch
    with pytest.raises(spectra.InputError, match="spectrum_bound"):
        spectra.eigh(lap, k=3, largest=True, spectrum_bound=(0, 1.0), precondition="factor")
    assert len(factored) == 2


def test_disconnected_and_repeated_eigenvalues_with_factor():
    parts = [adjacency_rgg(400, seed=s) for s in (36, 37)] + [grid(20, 20)]
    lap = normalized_laplacian(sp.block_diag(parts).tocsr())
    ref_w, ref_v = dense_reference(lap)
    zeros = int((np.abs(ref_w) < 1e-9).sum())
    assert zeros >= 3
    k = zeros + 4
    while abs(ref_w[k] - ref_w[k - 1]) < 1e-6:  # do not cut a multiplicity group
        k += 1
    w, v = spectra.eigh(lap, k=k, tol=1e-10, precondition="factor", method="lobpcg")
    np.testing.assert_allclose(w, ref_w[:k], rtol=1e-8, atol=1e-12)
    assert largest_angle(v, ref_v, ref_w, k) < 1e-6


def test_complex_hermitian_and_float32_with_factor():
    mag = magnetic_laplacian(adjacency_rgg(900, seed=38))
    ref_w, ref_v = dense_reference(mag)
    w, v = spectra.eigh(mag, k=5, tol=1e-10, precondition="factor", method="lobpcg")
    assert v.dtype == np.complex128
    np.testing.assert_allclose(w, ref_w[:5], rtol=1e-8, atol=1e-12)
    assert largest_angle(v, ref_v, ref_w, 5) < 1e-6
    lap = normalized_laplacian(adjacency_rgg(900, seed=39)).astype(np.float32)
    ref32 = dense_reference(lap.astype(np.float64))
    t = torch.sparse_coo_tensor(np.vstack(lap.nonzero()), lap.data, lap.shape)
    w32, v32 = spectra.eigh(t, k=4, precondition="factor", method="lobpcg")
    assert w32.dtype == torch.float32 and v32.dtype == torch.float32
    norm = float(abs(lap).sum(axis=1).max())
    np.testing.assert_allclose(w32.double().numpy(), ref32[0][:4], atol=1e-5 * norm)
    resid = np.linalg.norm(lap @ v32.double().numpy() - v32.double().numpy() * w32.numpy(), axis=0)
    assert resid.max() <= 3e-5 * norm


def test_expander_graph_is_not_factored():
    """A random 8-regular graph has no small separators: minimum degree fills 50 nnz, and
    the factorization's work (51,000 per entry) is over the cap: the plan refuses it (AMG or
    Jacobi instead)."""
    adj = expander(3000, seed=40)
    plan = spectra.plan(normalized_laplacian(adj), k=6)
    assert plan.preconditioners[0] in ("amg", "jacobi")
    assert f"work over {spectra.core._sparse._plan.WORK_CAP} nnz" in plan.preconditioner_reasons[0]


def test_fill_estimate_is_the_fill_of_the_factorization_built():
    """The estimate is SuperLU's fill in the ordering the factorization uses (exactly:
    ``L.nnz == U.nnz == fill``); tests/core/test_sparse_fill.py has the other families."""
    for lap in (
        normalized_laplacian(adjacency_rgg(2500, seed=41)),
        normalized_laplacian(grid(40, 60)),
    ):
        est = _factor.fill_estimate(lap)
        p = _factor.ordering(lap)
        lu = _factor._factorize((lap + 1e-3 * sp.identity(lap.shape[0]))[p][:, p])
        assert lu.L.nnz == est and lu.U.nnz == est


def test_non_convergence_with_factor_names_residuals_or_warns():
    lap = normalized_laplacian(adjacency_rgg(2000, seed=42))
    with pytest.raises(spectra.LinAlgError, match=r"did not converge in 1 iterations.*residual"):
        spectra.eigh(lap, k=6, maxiter=1, precondition="factor")
    with pytest.warns(spectra.core.SparseConvergenceWarning, match="residuals"):
        w, _ = spectra.eigh(lap, k=6, maxiter=1, precondition="factor", on_fail="warn")
    assert w.shape == (6,)


def test_factor_refuses_a_linear_operator():
    lap = normalized_laplacian(adjacency_rgg(700, seed=43))
    with pytest.raises(spectra.InputError, match="explicit sparse matrix"):
        spectra.eigh(sla.aslinearoperator(lap), k=2, precondition="factor", method="lobpcg")


def test_small_max_memory_never_densifies_and_bounds_the_factor(monkeypatch):
    """A budget below the dense matrix: the iterative path, no n x n array anywhere
    (densifying is made to fail), the factorization only while it fits."""

    def refuse(*args, **kwargs):
        raise AssertionError("densified")

    monkeypatch.setattr(_api, "_densify", refuse)
    lap = normalized_laplacian(largest_component(adjacency_rgg(3000, seed=44)))
    n = lap.shape[0]
    budget = 12 << 20  # the dense n x n float64 matrix alone is 72 MiB
    plan = spectra.plan(lap, k=4, max_memory=budget)
    assert plan.methods == ("lanczos",) and "does not fit" in plan.reasons[0]
    assert plan.preconditioners == ("factor",) and plan.memory[0] <= budget
    w = spectra.eigvalsh(lap, k=4, max_memory=budget)
    np.testing.assert_allclose(w, _shift_invert_reference(lap, 6)[0][:4], rtol=1e-8, atol=2e-12)
    tight = spectra.plan(lap, k=4, max_memory=3 << 20)  # the factor does not fit either
    assert tight.preconditioners[0] != "factor" and "over max_memory" in str(tight)
    assert tight.memory[0] < 30 * (lap.nnz + n * 6) * 8  # O(nnz + n k)
    with pytest.raises(spectra.InputError, match="would need"):
        spectra.eigh(lap, k=4, method="dense", max_memory=budget)


def test_plan_of_sparse_input_needs_k_and_explain_shows_it(tmp_path, capsys):
    from spectra.cli import main

    lap = normalized_laplacian(adjacency_rgg(2000, seed=45))
    with pytest.raises(TypeError, match="needs k"):
        spectra.plan(lap)
    assert isinstance(spectra.plan(lap, k=3), spectra.core.SparsePlan)
    assert spectra.plan([lap, lap[:300, :300]], k=3).methods == ("lanczos", "dense")
    path = tmp_path / "lap.npz"
    sp.save_npz(path, lap)
    assert main(["explain", "--sparse", str(path), "--k", "8"]) == 0
    out = capsys.readouterr().out
    assert "n 2,000" in out and "lanczos" in out and "factor" in out and "density" in out
    assert main(["explain", "--sparse", str(path), "--k", "8", "--max-memory", "100000"]) == 0
    assert "does not fit" in capsys.readouterr().out
    dense = sp.random(600, 600, density=0.5, random_state=0, format="csr")
    sp.save_npz(path, dense + dense.T)
    assert main(["explain", "--sparse", str(path), "--k", "4"]) == 0
    assert "dense: density" in capsys.readouterr().out


def test_a_list_orders_each_pattern_once_and_keeps_two_after_the_call(monkeypatch):
    """The plan's orderings of a list of five matrices (above ``DIRECT_MAX_N`` rows, where
    the plan counts the fill first) are the ones its factors use (the cache holds the
    whole call), and only the last two outlive the call."""
    from tests.core.sparse_helpers import adjacency_rgg, largest_component, normalized_laplacian

    mats = [
        normalized_laplacian(largest_component(adjacency_rgg(1200 + 40 * i, seed=80 + i)))
        for i in range(5)
    ]
    assert min(m.shape[0] for m in mats) > _factor.DIRECT_MAX_N
    _factor._ORDERED.items.clear()
    ordered: list[int] = []
    real = _factor._mmd_order

    def counted(pattern):
        ordered.append(pattern.shape[0])
        return real(pattern)

    real_factorize = _factor._factorize

    def factorize(mat, order="NATURAL"):
        if order != "NATURAL":  # the plan's trial factorization orders the pattern
            ordered.append(mat.shape[0])
        return real_factorize(mat, order)

    monkeypatch.setattr(_factor, "_mmd_order", counted)
    monkeypatch.setattr(_factor, "_factorize", factorize)
    ws, _ = spectra.eigh(mats, k=4, method="auto")
    assert sorted(ordered) == sorted(m.shape[0] for m in mats)
    assert len(_factor._ORDERED.items) == 2 and _factor._ORDERED.held == 0
    for a, w in zip(mats, ws, strict=True):
        ref = np.linalg.eigvalsh(a.toarray())[:4]
        np.testing.assert_allclose(w, ref, rtol=1e-8, atol=1e-12)


def test_small_matrices_are_factored_in_superlu_ordering(monkeypatch):
    """Up to ``DIRECT_MAX_N`` rows the plan takes the factor without ordering or counting
    first (a dense fill would fit), SuperLU orders the shifted matrix itself, and the
    solves need no permutation: the same solves as the permuted route, the eigenpairs
    shift-invert ARPACK's; under a ``max_memory`` the dense bound does not fit, the plan
    counts the fill as before."""
    from tests.core.sparse_helpers import adjacency_rgg, largest_component, normalized_laplacian

    lap = normalized_laplacian(largest_component(adjacency_rgg(700, seed=91)))
    n = lap.shape[0]
    assert n <= _factor.DIRECT_MAX_N
    ordered, orders = [], []
    real_mmd, real_factorize = _factor._mmd_order, _factor._factorize
    monkeypatch.setattr(_factor, "_mmd_order", lambda p: ordered.append(1) or real_mmd(p))
    monkeypatch.setattr(
        _factor,
        "_factorize",
        lambda m, order="NATURAL": orders.append(order) or real_factorize(m, order),
    )
    plan = spectra.plan(lap, k=6)
    assert plan.preconditioners == ("factor",)
    assert "SuperLU's ordering" in plan.preconditioner_reasons[0]
    w, v = spectra.eigh(lap, k=6)
    assert ordered == [] and orders and set(orders) == {"MMD_AT_PLUS_A"}
    ref = sla.eigsh(lap, k=6, sigma=-1e-3, which="LM", tol=1e-14)[0]
    np.testing.assert_allclose(w, np.sort(ref), rtol=1e-8, atol=2e-12)
    assert np.abs(lap @ v - v * w).max() < 1e-7
    # the solve against the permuted route's, on one block
    direct = _factor.ShiftInvert(lap, 1.0, -1.0, 0.0, 2.0)
    assert direct.order is None and -1e-3 < direct.sigma < 0
    monkeypatch.setattr(_factor, "DIRECT_MAX_N", 0)
    permuted = _factor.ShiftInvert(lap, 1.0, -1.0, 0.0, 2.0)
    assert permuted.order is not None and permuted.sigma == direct.sigma
    r = np.random.default_rng(0).standard_normal((n, 3))
    x1, x2 = np.empty_like(r), np.empty_like(r)
    direct.solve_into(r, x1)
    permuted.solve_into(r, x2)
    np.testing.assert_allclose(x1, x2, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose((lap - direct.sigma * sp.identity(n)) @ x1, r, atol=1e-10)
    # under a budget the dense bound exceeds, the fill is counted first (as above the bound)
    monkeypatch.setattr(_factor, "DIRECT_MAX_N", 1024)
    tight = spectra.core.plan_sparse(lap, k=6, max_memory=_factor.direct_bytes(n, lap.nnz) - 1)
    assert tight.preconditioners == ("factor",)
    assert "fill " in tight.preconditioner_reasons[0]
