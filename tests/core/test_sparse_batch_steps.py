"""The batched steps of the sparse iterations: the fused shift-invert solves of a padded
batch, the compiled dense eigh of the projected problems, and the row-stored Gram-Schmidt
projection.

References: each :class:`FactorSolve` on its own block (the route the fused one replaces,
bitwise), SciPy's ``eigh`` for the projected problems, the column-form projection
``w - Q (Q^H w)`` in float64, and a whole Lanczos solve of a list of graphs against
shift-invert ARPACK. Each test asserts that the route it names was taken.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as ssla
import torch

import spectra
from spectra.core._solvers._native import native_module
from spectra.core._sparse import _krylov, _lobpcg
from spectra.core._sparse._factor import ShiftInvert
from spectra.core._sparse._lobpcg import Batch, dense_eigh
from spectra.core._sparse._operators import as_operator
from spectra.core._sparse._precondition import FactorSolve, factor_solve_batch
from tests.core.sparse_helpers import adjacency_rgg, largest_component, normalized_laplacian

SIZES = (40, 73, 120)


def _spy_route(monkeypatch, module, name):
    """Record, per call of ``module.name``, whether it served the call (returned a value)."""
    served: list[bool] = []
    real = getattr(module, name)

    def spy(*args):
        out = real(*args)
        served.append(out is not None)
        return out

    monkeypatch.setattr(module, name, spy)
    return served


def _laplacians(sizes=SIZES, seed=3):
    return [
        normalized_laplacian(largest_component(adjacency_rgg(n, seed=seed + i)))
        for i, n in enumerate(sizes)
    ]


def _solvers(mats, dtype=torch.float64):
    out = []
    for a in mats:
        solver = ShiftInvert(sp.csr_matrix(a), 1.0, -1.0, 0.0, 2.0)
        out.append(FactorSolve(solver, torch.device("cpu"), dtype))
    return out


def _padded(mats, c, dtype=torch.float64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    n_max = max(a.shape[0] for a in mats)
    r = torch.zeros(len(mats), n_max, c, dtype=dtype)
    for g, a in enumerate(mats):
        r[g, : a.shape[0]] = torch.randn(a.shape[0], c, generator=gen, dtype=torch.float64).to(
            dtype
        )
    return r


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_fused_solves_equal_each_factor_solve_bitwise(dtype):
    mats = _laplacians()
    pres = _solvers(mats, dtype)
    sizes = [a.shape[0] for a in mats]
    r = _padded(mats, 3, dtype)
    active = torch.tensor([[True] * 3, [False] * 3, [True] * 3])
    fused = factor_solve_batch(pres, sizes, r, active)
    assert fused is not None and fused.dtype == dtype
    for g, (pre, n) in enumerate(zip(pres, sizes, strict=True)):
        if bool(active[g].any()):
            assert torch.equal(fused[g, :n], pre(r[g, :n]))
        else:
            assert not bool(fused[g].any())  # a finished problem stays zero
        assert not bool(fused[g, n:].any())  # padded rows stay zero
    # and the solve is the shift-invert one: (B - sigma I) x = r
    a, x = mats[0].toarray(), fused[0, : sizes[0]].double().numpy()
    sigma = pres[0].sigma
    np.testing.assert_allclose(
        (a - sigma * np.eye(sizes[0])) @ x,
        r[0, : sizes[0]].double().numpy(),
        atol=1e-9 if dtype == torch.float64 else 1e-3,
    )


def test_fused_solves_decline_what_they_do_not_serve():
    mats = _laplacians()
    pres = _solvers(mats)
    sizes = [a.shape[0] for a in mats]
    r = _padded(mats, 3)
    partly = torch.tensor([[True, False, True], [True] * 3, [True] * 3])
    assert factor_solve_batch(pres, sizes, r, partly) is None  # soft-locked columns
    every = torch.ones(3, 3, dtype=torch.bool)
    assert factor_solve_batch([None, *pres[1:]], sizes, r, every) is None  # not a factor
    assert factor_solve_batch(pres, sizes, r.float(), every) is None  # another dtype
    # the batch's own route then solves it per problem, as before
    ops = [as_operator(sp.csr_matrix(a), f"a[{i}]", True, None, "cpu") for i, a in enumerate(mats)]
    batch = Batch(ops, 1.0, pres)
    out = batch.precondition(r, partly)
    n = sizes[0]
    assert torch.equal(out[0, :n, 0], pres[0](r[0, :n][:, [0, 2]])[:, 0])
    assert not bool(out[0, :, 1].any())


def test_the_batch_takes_the_fused_solves(monkeypatch):
    mats = _laplacians()
    pres = _solvers(mats)
    ops = [as_operator(sp.csr_matrix(a), f"a[{i}]", True, None, "cpu") for i, a in enumerate(mats)]
    calls = _spy_route(monkeypatch, _lobpcg, "factor_solve_batch")
    r = _padded(mats, 2)
    Batch(ops, 1.0, pres).precondition(r, torch.ones(3, 2, dtype=torch.bool))
    assert calls == [True]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.complex128])
@pytest.mark.parametrize("s", [3, 17, 44])
def test_dense_eigh_of_a_batch_against_scipy(dtype, s):
    gen = torch.Generator().manual_seed(s)
    h = torch.randn(7, s, s, generator=gen, dtype=torch.float64).to(dtype)
    if dtype.is_complex:
        h = h + 1j * torch.randn(7, s, s, generator=gen, dtype=torch.float64).to(dtype)
    h[2] = torch.diag(torch.tensor([1.0] * (s // 2) + [2.0] * (s - s // 2))).to(dtype)  # ties
    w, v = dense_eigh(h)
    sym = ((h + h.mH) / 2).to(torch.complex128 if dtype.is_complex else torch.float64).numpy()
    tol = 1e-4 if dtype == torch.float32 else 1e-11
    for g in range(7):
        ref = sla.eigvalsh(sym[g])
        np.testing.assert_allclose(w[g].double().numpy(), ref, atol=tol * max(1, abs(ref).max()))
        vg = v[g].to(torch.complex128).numpy()
        np.testing.assert_allclose(vg.conj().T @ vg, np.eye(s), atol=tol * 10)
        resid = sym[g] @ vg - vg * w[g].double().numpy()
        assert np.abs(resid).max() < tol * 10 * max(1, abs(ref).max())
    # one matrix of the batch gives the bits it gives alone, wherever it sits
    w1, v1 = dense_eigh(h[3:4].repeat(2, 1, 1))
    assert torch.equal(w1[0], w[3]) and torch.equal(v1[1], v[3])


@pytest.mark.skipif(native_module() is None, reason="the compiled helper is not built")
def test_dense_eigh_takes_the_compiled_batch(monkeypatch):
    seen = _spy_route(monkeypatch, _lobpcg, "native_solve_batch")
    h = torch.randn(5, 9, 9, dtype=torch.float64)
    dense_eigh(h)
    assert seen == [True]


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_row_projection_equals_the_column_form(dtype):
    gen = torch.Generator().manual_seed(1)
    basis = torch.linalg.qr(torch.randn(4, 50, 12, generator=gen, dtype=torch.float64).to(dtype))[0]
    rows_of_basis = basis.mT.contiguous()  # (G, s, n): as the Lanczos basis is stored
    w = torch.randn(4, 50, 3, generator=gen, dtype=torch.float64).to(dtype)
    rows = w.mT.contiguous()
    part = _krylov._project_(rows, rows_of_basis)
    expected_part = basis.mH @ w
    expected = w - basis @ expected_part
    torch.testing.assert_close(part, expected_part, rtol=0, atol=1e-13)
    torch.testing.assert_close(rows.mT, expected, rtol=0, atol=1e-13)
    assert float((basis.mH @ rows.mT).abs().max()) < 1e-13


def test_a_list_of_graphs_by_lanczos_against_arpack(monkeypatch):
    """The whole iteration with the new steps: every graph of a list, against shift-invert
    ARPACK, and the fused solves served every step of it."""
    mats = _laplacians(sizes=(600, 700, 900), seed=11)
    used = _spy_route(monkeypatch, _lobpcg, "factor_solve_batch")
    w, v = spectra.eigh(mats, k=6, largest=False, method="lanczos")
    assert used and all(used)
    for a, wi, vi in zip(mats, w, v, strict=True):
        ref_w, _ = ssla.eigsh(a, k=6, sigma=-1e-3, which="LM", tol=1e-14)
        np.testing.assert_allclose(wi, np.sort(ref_w), rtol=1e-8, atol=1e-10)
        resid = a @ vi - vi * wi
        assert np.abs(resid).max() < 1e-7


def test_orthonormalize_keeps_a_converged_problem_zero_on_the_cholesky_route(monkeypatch):
    """A converged problem's all-zero block no longer sends the batch to SVQB."""
    gen = torch.Generator().manual_seed(4)
    w = torch.randn(3, 60, 3, generator=gen, dtype=torch.float64)
    w[1] = 0.0
    calls = []
    real = _krylov.svqb
    monkeypatch.setattr(_krylov, "svqb", lambda q: calls.append(1) or real(q))
    q, kept = _krylov._orthonormalize(w)
    assert calls == []  # Cholesky QR twice for the whole batch
    assert kept.tolist() == [[True] * 3, [False] * 3, [True] * 3]
    assert not bool(q[1].any())
    for g in (0, 2):
        torch.testing.assert_close(q[g].mT @ q[g], torch.eye(3, dtype=torch.float64))
        # the same span: q = w R^-1
        coef = torch.linalg.lstsq(w[g], q[g]).solution
        torch.testing.assert_close(w[g] @ coef, q[g], atol=1e-12, rtol=0)
        # and the same bits as the problem alone
        alone, _ = _krylov._orthonormalize(w[g : g + 1])
        assert torch.equal(alone[0], q[g])
    # a dependent column of a live problem still takes SVQB (and is dropped)
    w[2, :, 2] = w[2, :, 0]
    q, kept = _krylov._orthonormalize(w)
    assert calls and kept[2].sum() == 2 and kept[1].sum() == 0


def test_projected_eigh_solves_only_the_live_problems():
    gen = torch.Generator().manual_seed(5)
    h = torch.randn(4, 20, 20, generator=gen, dtype=torch.float64)
    h = h + h.mT
    done = torch.tensor([False, True, False, True])
    neg, y = _krylov._projected_eigh(h, done)
    full_neg, full_y = dense_eigh(-h)
    for g in (0, 2):  # bitwise what the whole batch gives them
        assert torch.equal(neg[g], full_neg[g]) and torch.equal(y[g], full_y[g])
        np.testing.assert_allclose(neg[g].numpy(), np.sort(-sla.eigvalsh(h[g].numpy())), atol=1e-11)
    for g in (1, 3):
        assert not bool(neg[g].any())
        assert torch.equal(y[g], torch.eye(20, dtype=torch.float64))
    neg0, y0 = _krylov._projected_eigh(h, torch.ones(4, dtype=torch.bool))
    assert not bool(neg0.any()) and torch.equal(y0[2], torch.eye(20, dtype=torch.float64))


def test_a_list_is_solved_in_groups_whose_basis_fits_the_budget(monkeypatch):
    """Sizes within 2x still share a group only up to GROUP_BYTES of padded basis: the
    spy sees the groups, and every graph's pairs are the ones ARPACK finds."""
    from spectra.core._sparse import _api

    mats = _laplacians(sizes=(600, 650, 700, 800), seed=21)
    seen: list[int] = []
    real = _api._iterate

    def spy(ops, *args, **kwargs):
        seen.append(len(ops))
        return real(ops, *args, **kwargs)

    monkeypatch.setattr(_api, "_iterate", spy)
    spectra.eigh(mats, k=6, largest=False, method="lanczos")
    assert seen == [4]  # 4 x ~800 nodes: well within the budget
    seen.clear()
    one = 800 * _api.BASIS_VECTORS * _lobpcg_block(6) * 8
    monkeypatch.setattr(_api, "GROUP_BYTES", 2 * one)
    w, v = spectra.eigh(mats, k=6, largest=False, method="lanczos")
    assert seen == [2, 2]
    for a, wi, vi in zip(mats, w, v, strict=True):
        ref_w, _ = ssla.eigsh(a, k=6, sigma=-1e-3, which="LM", tol=1e-14)
        np.testing.assert_allclose(wi, np.sort(ref_w), rtol=1e-8, atol=1e-10)
        assert np.abs(a @ vi - vi * wi).max() < 1e-7


def _lobpcg_block(k: int) -> int:
    from spectra.core._sparse._plan import block_size

    return block_size(k, k + max(4, k // 2))


def _four_groups(monkeypatch):
    from spectra.core._sparse import _api

    mats = _laplacians(sizes=(600, 650, 700, 800), seed=21)
    one = 800 * _api.BASIS_VECTORS * _lobpcg_block(6) * 8
    monkeypatch.setattr(_api, "GROUP_BYTES", one)  # one graph per group
    return _api, mats


def test_groups_run_on_the_workers_with_the_same_bits(monkeypatch):
    """Several CPU groups go to the core's threads (the spy sees the fan-out), and each
    graph's result is bitwise what the call on one thread gives."""
    _api, mats = _four_groups(monkeypatch)
    threads = []
    real = _api.pull

    def spy(order, run, workers, *args, **kwargs):
        threads.append(workers)
        return real(order, run, workers, *args, **kwargs)

    monkeypatch.setattr(_api, "pull", spy)
    w2, v2 = spectra.eigh(mats, k=6, largest=False, method="lanczos", workers=2)
    assert threads == [2]
    w1, v1 = spectra.eigh(mats, k=6, largest=False, method="lanczos", workers=1)
    assert threads == [2]  # workers=1: in turn, no fan-out
    for a, b, c, d in zip(w1, w2, v1, v2, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(c, d)
    for a, wi in zip(mats, w2, strict=True):
        ref_w, _ = ssla.eigsh(a, k=6, sigma=-1e-3, which="LM", tol=1e-14)
        np.testing.assert_allclose(wi, np.sort(ref_w), rtol=1e-8, atol=1e-10)


def test_group_threads_plan(monkeypatch):
    _api, mats = _four_groups(monkeypatch)
    ops = [as_operator(a, f"a[{i}]", True, None, "cpu") for i, a in enumerate(mats)]
    groups = _api._groups(ops, list(range(4)), ("lanczos",) * 4, 6)
    assert [len(g) for g in groups] == [1, 1, 1, 1]
    assert _api._group_workers(groups, ops, 6, 2) == 2
    assert _api._group_workers(groups, ops, 6, 8) == 4  # no more threads than groups
    assert _api._group_workers(groups, ops, 6, 1) == 1
    assert _api._group_workers(groups[:1], ops, 6, 2) == 1
    monkeypatch.setattr(_api, "SMALL_BLOCK_ENTRIES", 100)  # blocks that thread themselves
    assert _api._group_workers(groups, ops, 6, 2) == 1


def test_a_failing_group_on_a_worker_raises_as_in_turn(monkeypatch):
    _api, mats = _four_groups(monkeypatch)
    errors = []
    for workers in (2, 1):
        with pytest.raises(spectra.LinAlgError) as info:
            spectra.eigh(mats, k=6, largest=False, method="lanczos", maxiter=2, workers=workers)
        errors.append(str(info.value))
    assert "did not converge" in errors[0]
    assert errors[0] == errors[1]


def test_rayleigh_ritz_follows_each_problems_forecast(monkeypatch):
    """Problems converging at different steps take their Rayleigh-Ritz steps on their own
    forecasts: fewer projected problems are solved than with a step for every problem
    still iterating at every step (the schedule forced), and every graph still matches
    ARPACK."""
    mats = _laplacians(sizes=(500, 650, 800, 900, 1000), seed=31)
    solved: list[int] = []
    real = _krylov._projected_eigh

    def spy(sym, skip):
        solved.append(int((~skip).sum()))
        return real(sym, skip)

    monkeypatch.setattr(_krylov, "_projected_eigh", spy)
    w, _ = spectra.eigh(mats, k=6, largest=False, method="lanczos", workers=1)
    forecast = sum(solved)
    solved.clear()
    monkeypatch.setattr(
        _krylov._Skip, "due", lambda self, step: torch.ones_like(self.next, dtype=torch.bool)
    )
    w_every, _ = spectra.eigh(mats, k=6, largest=False, method="lanczos", workers=1)
    assert 0 < forecast < sum(solved)
    for a, wi, we in zip(mats, w, w_every, strict=True):
        ref_w, _ = ssla.eigsh(a, k=6, sigma=-1e-3, which="LM", tol=1e-14)
        np.testing.assert_allclose(wi, np.sort(ref_w), rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(we, np.sort(ref_w), rtol=1e-8, atol=1e-10)
