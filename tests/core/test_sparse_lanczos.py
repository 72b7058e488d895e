"""The block shift-invert Lanczos of the sparse path (``method="lanczos"``), against SciPy.

References: dense ``scipy.linalg.eigh`` for n <= 2,000, shift-invert ARPACK
(``eigsh(sigma=...)``, tol 1e-14) above; eigenspaces compared per multiplicity group by the
largest principal angle. Every test asserts that the Lanczos iteration ran (and, where it
matters, that the block was widened), never assumes it.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla
import torch

import spectra
from spectra.core._sparse import _krylov, _krylov_one
from tests.core.sparse_helpers import (
    adjacency_rgg,
    dense_reference,
    grid,
    largest_angle,
    largest_component,
    lobpcg_iterations,
    magnetic_laplacian,
    normalized_laplacian,
)


def _rgg(n: int, seed: int) -> sp.csr_matrix:
    return normalized_laplacian(largest_component(adjacency_rgg(n, seed=seed)))


def _shift_invert_reference(a: sp.spmatrix, k: int) -> tuple[np.ndarray, np.ndarray]:
    w, v = sla.eigsh(a, k=k, sigma=-1e-3, which="LM", tol=1e-14)
    order = np.argsort(w)
    return w[order], v[:, order]


@pytest.fixture(params=["one", "batch"])
def runs(monkeypatch, request):
    """Records each Lanczos run: (problems, block width, solves, converged, route):
    converged within the caller's tolerance (the run aims below it with the factor,
    ``settle``); route ``"one"`` for the one-problem iteration (``_krylov_one``), else
    ``"batch"``. Each test runs twice: single problems on their own iteration, then forced
    onto the batched one (which lists always take); the record asserts the route."""
    seen: list[tuple[int, int, int, bool, str]] = []
    real = _krylov._solve
    if request.param == "batch":
        monkeypatch.setattr(_krylov_one, "serves", lambda batch, x0: False)

    def record(batch, x0, k, tol, maxiter, deflate, settle, b, room):
        res, widen = real(batch, x0, k, tol, maxiter, deflate, settle, b, room)
        caller = tol if settle is None else settle[0]
        ok = bool((res.residuals <= caller.unsqueeze(-1)).all())
        route = "one" if _krylov_one.serves(batch, x0) else "batch"
        assert route == (request.param if x0.shape[0] == 1 else "batch")
        seen.append((x0.shape[0], b, res.iterations, ok, route))
        return res, widen

    monkeypatch.setattr(_krylov, "_solve", record)
    return seen


def test_auto_takes_lanczos_on_a_geometric_graph_within_the_issue_accuracy(runs):
    """The issue's case at 4,000 nodes, default tol: eigenvalues within 1e-8 relative of
    shift-invert ARPACK (1e-12 absolute for the zero one), eigenspaces within 1e-6."""
    lap = _rgg(4000, seed=51)
    plan = spectra.plan(lap, k=9)
    assert plan.methods == ("lanczos",) and plan.preconditioners == ("factor",)
    w, v = spectra.eigh(lap, k=9)
    assert len(runs) == 1 and runs[0][1] == _krylov.BLOCK and runs[0][3]
    ref_w, ref_v = _shift_invert_reference(lap, 12)
    np.testing.assert_allclose(w, ref_w[:9], rtol=1e-8, atol=1e-12)
    assert largest_angle(v, ref_v, ref_w, 9) < 1e-6
    # far fewer solved columns than the block LOBPCG on the same factor
    assert runs[0][2] * _krylov.BLOCK < 100


def test_what_laplacian_pe_calls_deflated_with_the_spectrum_bound(runs):
    lap = _rgg(3000, seed=52)
    adj_deg = np.asarray(abs(lap).sum(axis=1)).ravel()  # any positive vector would do
    assert adj_deg.min() > 0
    ref_w, ref_v = _shift_invert_reference(lap, 12)
    null = ref_v[:, :1]
    ws, vs = spectra.eigh([lap], k=8, spectrum_bound=(0.0, 2.0), deflate=[null])
    assert len(runs) == 1 and runs[0][3]
    np.testing.assert_allclose(ws[0], ref_w[1:9], rtol=1e-8)
    assert np.abs(null.T @ vs[0]).max() < 1e-10
    full = np.concatenate([null, vs[0]], axis=1)
    assert largest_angle(full, ref_v, ref_w, 9) < 1e-6


def test_repeated_eigenvalues_widen_the_block(runs):
    """Four copies of one graph: every eigenvalue has multiplicity 4, more than the
    block of 3; the first run sees a cluster of 3 and the block is widened."""
    one = _rgg(400, seed=53)
    four = sp.block_diag([one] * 4, format="csr")
    w, v = spectra.eigh(four, k=9, method="lanczos")
    ref_w, ref_v = dense_reference(four)
    np.testing.assert_allclose(w, ref_w[:9], rtol=1e-8, atol=1e-12)
    assert largest_angle(v, ref_v, ref_w, 8) < 1e-6  # groups 0-3, 4-7 (8 starts the next)
    assert [r[1] for r in runs] == [_krylov.BLOCK, 2 * _krylov.BLOCK]


def test_a_grid_pair_and_a_disconnected_graph_without_deflation(runs):
    square = normalized_laplacian(grid(30, 30))  # repeated pairs (the square's symmetry)
    w, v = spectra.eigh(square, k=8, method="lanczos")
    ref_w, ref_v = dense_reference(square)
    np.testing.assert_allclose(w, ref_w[:8], rtol=1e-8, atol=1e-12)
    assert largest_angle(v, ref_v, ref_w, 8) < 1e-6
    # five components, no deflation: the zero eigenvalue five times
    parts = [_rgg(300 + 40 * s, seed=60 + s) for s in range(5)]
    apart = sp.block_diag(parts, format="csr")
    w, v = spectra.eigh(apart, k=7, method="lanczos")
    ref_w, ref_v = dense_reference(apart)
    np.testing.assert_allclose(w, ref_w[:7], rtol=1e-8, atol=1e-12)
    assert np.abs(w[:5]).max() < 1e-12 and w[5] > 1e-4
    assert largest_angle(v, ref_v, ref_w, 5) < 1e-6
    assert runs and all(r[3] for r in runs)


def test_float32_and_complex_hermitian(runs):
    lap = _rgg(2500, seed=54)
    t = torch.from_numpy(lap.toarray().astype(np.float32)).to_sparse_csr()
    w32, v32 = spectra.eigh(t, k=4, method="lanczos")
    assert w32.dtype == torch.float32 and v32.dtype == torch.float32
    ref_w, ref_v = _shift_invert_reference(lap, 6)
    np.testing.assert_allclose(w32.numpy(), ref_w[:4], atol=1e-5)
    assert largest_angle(v32.double().numpy(), ref_v, ref_w, 4) < 1e-3
    mag = magnetic_laplacian(largest_component(adjacency_rgg(1500, seed=55)))
    w, v = spectra.eigh(mag, k=5, tol=1e-10, method="lanczos")
    assert v.dtype == np.complex128
    ref_w, ref_v = dense_reference(mag)
    np.testing.assert_allclose(w, ref_w[:5], rtol=1e-8, atol=1e-12)
    assert largest_angle(v, ref_v, ref_w, 5) < 1e-6
    assert len(runs) == 2 and all(r[3] for r in runs)


def test_largest_and_a_batch_of_sizes(runs):
    lap = _rgg(1200, seed=56)
    w, v = spectra.eigh(lap, k=4, largest=True, tol=1e-10, method="lanczos")
    ref_w, ref_v = dense_reference(lap)
    np.testing.assert_allclose(w, ref_w[-4:], rtol=1e-8)
    assert largest_angle(v[:, ::-1], ref_v[:, ::-1], -ref_w[::-1], 4) < 1e-6
    mats = [_rgg(n, seed=57 + i) for i, n in enumerate((900, 1500, 1100))]
    ws, vs = spectra.eigh(mats, k=5, method="lanczos")
    assert runs[-1][0] == 3  # solved together, padded to the largest
    for a, wi, vi in zip(mats, ws, vs, strict=True):
        ref_w, ref_v = dense_reference(a)
        np.testing.assert_allclose(wi, ref_w[:5], rtol=1e-8, atol=1e-12)
        assert largest_angle(vi, ref_v, ref_w, 5) < 1e-6


def test_not_converging_within_maxiter_names_the_residuals():
    lap = _rgg(2000, seed=58)
    with pytest.raises(spectra.LinAlgError, match=r"did not converge in 2 iterations.*residuals"):
        spectra.eigh(lap, k=6, maxiter=2, method="lanczos")
    with pytest.warns(spectra.core.SparseConvergenceWarning, match="residuals"):
        w = spectra.eigvalsh(lap, k=6, maxiter=2, method="lanczos", on_fail="warn")
    assert w.shape == (6,)


def test_refusals():
    lap = _rgg(1000, seed=59)
    with pytest.raises(spectra.InputError, match=r"lanczos.*precondition='amg'"):
        spectra.eigh(lap, k=3, method="lanczos", precondition="amg")
    with pytest.raises(spectra.InputError, match="explicit sparse matrix"):
        spectra.eigh(sla.aslinearoperator(lap), k=3, method="lanczos")


def test_orthonormalize_drops_dependent_columns_and_keeps_the_span():
    gen = torch.Generator().manual_seed(3)
    w = torch.randn(1, 50, 3, generator=gen, dtype=torch.float64)
    q, kept = _krylov._orthonormalize(w)
    assert bool(kept.all())
    torch.testing.assert_close(q[0].mT @ q[0], torch.eye(3, dtype=torch.float64))
    torch.testing.assert_close(q[0] @ (q[0].mT @ w[0]), w[0])
    dependent = torch.cat([w, w[..., :1] * 2.0], -1)  # Cholesky QR fails: SVQB drops one
    q, kept = _krylov._orthonormalize(dependent)
    assert int(kept.sum()) == 3
    torch.testing.assert_close(q[0].mT @ q[0], torch.diag(kept[0].double()))


def test_lanczos_solves_fewer_columns_than_lobpcg_with_the_same_factor(monkeypatch, runs):
    counts = lobpcg_iterations(monkeypatch)
    lap = _rgg(3000, seed=61)
    w1 = spectra.eigvalsh(lap, k=8)
    w2 = spectra.eigvalsh(lap, k=8, method="lobpcg", precondition="factor")
    np.testing.assert_allclose(w1, w2, atol=1e-12)
    assert len(runs) == 1 and len(counts) == 1
    m = 8 + 2  # the LOBPCG block with the factor: k and max(2, k // 4) guards
    assert runs[0][2] * runs[0][1] < counts[0] * m


def _tree_like(rng: np.random.Generator, n: int) -> sp.csr_matrix:
    """A random tree plus ``n // 6`` ring closures (the D&D-like benchmark's graphs): its
    lowest eigenvalues are small and close together."""
    parents = [int(rng.integers(0, i)) for i in range(1, n)]
    rows = list(range(1, n)) + [int(x) for x in rng.integers(0, n, n // 6)]
    cols = parents + [int(x) for x in rng.integers(0, n, n // 6)]
    adj = sp.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n)).tocsr()
    adj = ((adj + adj.T) > 0).astype(float)
    adj.setdiag(0)
    adj.eliminate_zeros()
    return normalized_laplacian(adj)


def test_a_batch_of_tree_like_graphs_skips_rayleigh_ritz_steps(monkeypatch, runs):
    """The D&D-like batch's medium graphs, solved together and deflated as LaplacianPE asks:
    within the issue's accuracy, with fewer Rayleigh-Ritz steps of the basis than block
    solves (the steps predicted not to converge skip them, ``_krylov._Skip``), and the
    basis orthonormal although the first Gram-Schmidt pass only sees the coupled blocks."""
    rng = np.random.default_rng(70)
    mats = [_tree_like(rng, n) for n in (160, 230, 290, 310)]
    refs = [dense_reference(a) for a in mats]
    nulls = [ref_v[:, :1] for _, ref_v in refs]
    sizes: list[int] = []
    real = _krylov.dense_eigh

    def counted(h, *args):
        sizes.append(h.shape[-1])
        return real(h, *args)

    monkeypatch.setattr(_krylov, "dense_eigh", counted)
    ws, vs = spectra.eigh(
        mats, k=8, spectrum_bound=(0.0, 2.0), deflate=nulls, method="lanczos", check=False
    )
    assert len(runs) == 1 and runs[0][0] == 4 and runs[0][3]
    basis_steps = sum(s > 10 for s in sizes)  # m = 10: the basis' RR, not the Ritz block's
    assert 0 < basis_steps < runs[0][2] - 3
    for (ref_w, ref_v), w, v, null in zip(refs, ws, vs, nulls, strict=True):
        np.testing.assert_allclose(w, ref_w[1:9], rtol=1e-8)
        full = np.concatenate([null, v], axis=1)
        assert largest_angle(full, ref_v, ref_w, 9) < 1e-6
        assert np.abs(full.T @ full - np.eye(9)).max() < 1e-12
