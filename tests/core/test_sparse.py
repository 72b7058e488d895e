"""The sparse path: k extreme eigenpairs of sparse Hermitian matrices against SciPy.

References: dense ``scipy.linalg.eigh`` for n <= 1,500 and shift-invert
``scipy.sparse.linalg.eigsh`` above; eigenspaces compared per multiplicity group by their
largest principal angle (``scipy.linalg.subspace_angles``).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla
import torch

import spectra
from tests.core.sparse_helpers import (
    adjacency_rgg,
    cycle,
    dense_reference,
    grid,
    largest_angle,
    magnetic_laplacian,
    normalized_laplacian,
)

LOBPCG = {"method": "lobpcg"}


def _rgg_laplacian(n: int, seed: int = 0) -> sp.csr_matrix:
    return normalized_laplacian(adjacency_rgg(n, seed=seed))


@pytest.mark.parametrize("precondition", ["jacobi", "amg"])
def test_rgg_laplacian_float64_matches_dense_scipy(precondition):
    if precondition == "amg":
        pytest.importorskip("pyamg")
    lap = _rgg_laplacian(1200, seed=3)
    ref_w, ref_v = dense_reference(lap)
    k = 8
    w, v = spectra.eigh(lap, k=k, tol=1e-10, precondition=precondition, **LOBPCG)
    assert isinstance(w, np.ndarray) and w.dtype == np.float64 and v.shape == (1200, k)
    np.testing.assert_allclose(w, ref_w[:k], rtol=1e-8, atol=1e-12)
    assert largest_angle(v, ref_v, ref_w, k) < 1e-6


def test_larger_rgg_matches_shift_invert_eigsh():
    lap = _rgg_laplacian(5000, seed=1)
    k = 6
    ref_w, ref_v = sla.eigsh(lap, k=k + 2, sigma=-1e-3, which="LM", tol=1e-14)
    order = np.argsort(ref_w)
    ref_w, ref_v = ref_w[order], ref_v[:, order]
    w, v = spectra.eigh(lap, k=k, tol=1e-10, precondition="amg" if _has_pyamg() else "jacobi")
    np.testing.assert_allclose(w, ref_w[:k], rtol=1e-8, atol=1e-12)
    assert largest_angle(v, ref_v, ref_w, k) < 1e-6


def _has_pyamg() -> bool:
    try:
        import pyamg  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize(
    "adj, k",
    [(cycle(400), 5), (grid(20, 30), 7), (grid(24, 24), 6)],
    ids=["cycle", "grid", "square-grid"],
)
def test_repeated_eigenvalues_compared_as_spaces(adj, k):
    lap = normalized_laplacian(adj)
    ref_w, ref_v = dense_reference(lap)
    w, v = spectra.eigh(lap, k=k, tol=1e-10, **LOBPCG)
    np.testing.assert_allclose(w, ref_w[:k], rtol=1e-8, atol=1e-12)
    assert largest_angle(v, ref_v, ref_w, k) < 1e-6


def test_disconnected_graph_and_deflated_null_vectors():
    parts = [adjacency_rgg(350, seed=s) for s in (5, 6, 7)]
    adj = sp.block_diag(parts).tocsr()
    lap = normalized_laplacian(adj)
    ref_w, ref_v = dense_reference(lap)
    zeros = int((np.abs(ref_w) < 1e-9).sum())
    assert zeros >= 3  # one per component (at least)
    w, v = spectra.eigh(lap, k=zeros + 3, tol=1e-10, **LOBPCG)
    np.testing.assert_allclose(w, ref_w[: zeros + 3], rtol=1e-8, atol=1e-12)
    assert largest_angle(v, ref_v, ref_w, zeros + 3) < 1e-6
    # the null space deflated: the next eigenpairs (D^1/2 1 on each component)
    null = ref_v[:, :zeros]
    w2, v2 = spectra.eigh(lap, k=3, tol=1e-10, deflate=null, **LOBPCG)
    np.testing.assert_allclose(w2, ref_w[zeros : zeros + 3], rtol=1e-8)
    assert np.abs(null.T @ v2).max() < 1e-10
    assert largest_angle(v2, ref_v[:, zeros:], ref_w[zeros:], 3) < 1e-6


def test_largest_and_spectrum_bound():
    lap = _rgg_laplacian(1000, seed=2)
    ref_w, ref_v = dense_reference(lap)
    w, v = spectra.eigh(lap, k=5, largest=True, tol=1e-10, **LOBPCG)
    np.testing.assert_allclose(w, ref_w[-5:], rtol=1e-8)
    assert np.all(np.diff(w) >= 0)
    flip = lambda x: x[..., ::-1]  # noqa: E731
    assert largest_angle(flip(v), flip(ref_v), -ref_w[::-1], 5) < 1e-6
    w2, _ = spectra.eigh(lap, k=5, tol=1e-10, spectrum_bound=(0, 2), **LOBPCG)
    np.testing.assert_allclose(w2, ref_w[:5], rtol=1e-8, atol=1e-12)
    with pytest.raises(spectra.InputError, match="spectrum_bound"):
        spectra.eigh(lap, k=3, largest=True, spectrum_bound=(0, 1.0), **LOBPCG)


def test_complex_hermitian_magnetic_laplacian():
    mag = magnetic_laplacian(adjacency_rgg(700, seed=4))
    ref_w, ref_v = dense_reference(mag)
    w, v = spectra.eigh(mag, k=6, tol=1e-10, **LOBPCG)
    assert v.dtype == np.complex128 and w.dtype == np.float64
    np.testing.assert_allclose(w, ref_w[:6], rtol=1e-8, atol=1e-12)
    assert largest_angle(v, ref_v, ref_w, 6) < 1e-6
    _assert_gauge(v)


def _assert_gauge(v: np.ndarray) -> None:
    """The core's gauge: the first entry within 1e-9 of the largest magnitude is real > 0
    (graphs with small components have exactly tied magnitudes)."""
    mag = np.abs(v)
    first = (mag >= mag.max(axis=0) * (1 - 1e-9)).argmax(axis=0)
    pivot = v[first, np.arange(v.shape[1])]
    assert np.all(pivot.real > 0) and np.allclose(np.imag(pivot), 0, atol=1e-12)


def _torch_csr(a: sp.csr_matrix, dtype: torch.dtype) -> torch.Tensor:
    return torch.sparse_csr_tensor(
        torch.from_numpy(a.indptr.astype(np.int64)),
        torch.from_numpy(a.indices.astype(np.int64)),
        torch.from_numpy(a.data).to(dtype),
        size=a.shape,
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_torch_sparse_in_torch_dense_out(dtype, layout):
    lap = _rgg_laplacian(700, seed=8)
    ref_w, ref_v = dense_reference(lap)
    t = _torch_csr(lap, dtype)
    if layout == "coo":
        t = t.to_sparse_coo()
    k = 5
    w, v = spectra.eigh(t, k=k, **LOBPCG)  # the per-dtype default tolerance
    assert isinstance(w, torch.Tensor) and w.dtype == dtype and v.dtype == dtype
    assert v.shape == (700, k)
    tol = spectra.core._sparse.default_tol(dtype)
    norm = float(abs(lap).sum(axis=1).max())  # the Gershgorin ||A|| the tolerance uses
    # eigenvalue error <= residual^2 / gap, well within tol * ||A||; residuals checked in double
    np.testing.assert_allclose(w.double().numpy(), ref_w[:k], atol=tol * norm)
    vd = v.double().numpy()
    resid = np.linalg.norm(lap @ vd - vd * w.double().numpy(), axis=0)
    assert resid.max() <= tol * norm * (1 if dtype == torch.float64 else 3)
    gap = np.min(np.diff(ref_w[: k + 1]))
    assert largest_angle(vd, ref_v, ref_w, k) < 10 * tol * norm / gap + 1e-6
    _assert_gauge(vd)


def test_eigvalsh_and_scipy_array_and_float32_scipy():
    lap = _rgg_laplacian(800, seed=9)
    ref_w = dense_reference(lap)[0]
    w = spectra.eigvalsh(sp.csr_array(lap), k=4, tol=1e-10, **LOBPCG)
    np.testing.assert_allclose(w, ref_w[:4], rtol=1e-8, atol=1e-12)
    w32 = spectra.eigvalsh(lap.astype(np.float32), k=4, **LOBPCG)
    assert w32.dtype == np.float32
    np.testing.assert_allclose(w32, ref_w[:4], atol=1e-5 * 2)


class TorchOperator:
    """A linear operator in torch: ``shape``, ``dtype`` and a block ``matmul``."""

    def __init__(self, a: sp.csr_matrix):
        self.a = _torch_csr(a, torch.float64)
        self.shape = a.shape
        self.dtype = torch.float64

    def matmul(self, x: torch.Tensor) -> torch.Tensor:
        return self.a @ x


def test_linear_operators():
    lap = _rgg_laplacian(700, seed=10)
    ref_w, ref_v = dense_reference(lap)
    w, v = spectra.eigh(sla.aslinearoperator(lap), k=4, tol=1e-10, **LOBPCG)
    assert isinstance(w, np.ndarray)
    np.testing.assert_allclose(w, ref_w[:4], rtol=1e-8, atol=1e-12)
    assert largest_angle(v, ref_v, ref_w, 4) < 1e-6
    wt, vt = spectra.eigh(TorchOperator(lap), k=4, tol=1e-10, **LOBPCG)
    assert isinstance(wt, torch.Tensor)
    np.testing.assert_allclose(wt.numpy(), w, rtol=1e-9, atol=1e-13)
    assert largest_angle(vt.numpy(), ref_v, ref_w, 4) < 1e-6


def test_batch_solved_together_matches_singles_and_dense_for_small():
    mats = [_rgg_laplacian(n, seed=s) for n, s in ((600, 11), (700, 12), (300, 13))]
    ws, vs = spectra.eigh(mats, k=4, tol=1e-10, **LOBPCG)
    assert isinstance(ws, list) and len(ws) == 3
    for a, w, v in zip(mats, ws, vs, strict=True):
        ref_w, ref_v = dense_reference(a)
        np.testing.assert_allclose(w, ref_w[:4], rtol=1e-8, atol=1e-12)
        assert largest_angle(v, ref_v, ref_w, 4) < 1e-6
    auto = spectra.eigvalsh(mats, k=4, tol=1e-10)  # n = 300 goes dense by default
    for w, a in zip(auto, mats, strict=True):
        np.testing.assert_allclose(w, dense_reference(a)[0][:4], rtol=1e-8, atol=1e-12)


def test_dense_method_for_small_and_auto_agree():
    lap = _rgg_laplacian(300, seed=14)
    ref_w, ref_v = dense_reference(lap)
    w, v = spectra.eigh(lap, k=5)  # auto: dense at this size
    w2, v2 = spectra.eigh(lap, k=5, tol=1e-10, **LOBPCG)
    np.testing.assert_allclose(w, ref_w[:5], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(w2, w, rtol=1e-8, atol=1e-12)
    assert largest_angle(v, v2, w, 5) < 1e-6 or largest_angle(v, ref_v, ref_w, 5) < 1e-9


# ---- refusals ------------------------------------------------------------------------------


def test_refuses_non_square():
    with pytest.raises(spectra.InputError, match="square"):
        spectra.eigh(sp.random(30, 40, density=0.1, format="csr"), k=2)
    with pytest.raises(spectra.InputError, match="square"):
        spectra.eigh(torch.eye(3, 4).to_sparse(), k=1)


def test_refuses_asymmetric_beyond_tolerance():
    lap = _rgg_laplacian(600, seed=15).tolil()
    lap[0, 1] += 1e-3
    with pytest.raises(spectra.InputError, match="not symmetric"):
        spectra.eigh(lap.tocsr(), k=2)
    with pytest.raises(spectra.InputError, match="not symmetric"):
        spectra.eigh(_torch_csr(lap.tocsr(), torch.float64), k=2)
    small = _rgg_laplacian(600, seed=15).tolil()
    small[0, 1] += 1e-12  # within the default symmetry_tol
    spectra.eigvalsh(small.tocsr(), k=2, maxiter=5, on_fail="warn")
    op = sla.LinearOperator((600, 600), matvec=lambda x: lap.tocsr() @ x, dtype=np.float64)
    with pytest.raises(spectra.InputError, match="not symmetric"):
        spectra.eigh(op, k=2)
    mag = magnetic_laplacian(adjacency_rgg(600, seed=16)).tolil()
    mag[0, 0] = 1 + 1e-2j
    with pytest.raises(spectra.InputError, match="not Hermitian"):
        spectra.eigh(mag.tocsr(), k=2)


@pytest.mark.parametrize("k", [0, 600, 601, -1])
def test_refuses_k_out_of_range(k):
    with pytest.raises(spectra.InputError, match="k must be in"):
        spectra.eigh(_rgg_laplacian(600), k=k)


def test_refuses_missing_k_and_k_at_deflated_size():
    lap = _rgg_laplacian(600)
    with pytest.raises(TypeError, match="needs k"):
        spectra.eigh(lap)
    null = np.ones((600, 1))
    with pytest.raises(spectra.InputError, match="deflated"):
        spectra.eigh(lap, k=599, deflate=null)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_refuses_nan_inf(bad):
    lap = _rgg_laplacian(600).tolil()
    lap[3, 3] = bad
    with pytest.raises(spectra.InputError, match="NaN or Inf"):
        spectra.eigh(lap.tocsr(), k=2)
    with pytest.raises(spectra.InputError, match="NaN or Inf"):
        spectra.eigh(_torch_csr(lap.tocsr(), torch.float64).to_sparse_coo(), k=2)


def test_non_convergence_names_the_residuals():
    lap = _rgg_laplacian(2000, seed=17)
    with pytest.raises(spectra.LinAlgError, match=r"did not converge in 3 iterations.*residual"):
        spectra.eigh(lap, k=4, maxiter=3, **LOBPCG)
    with pytest.warns(spectra.core._sparse.SparseConvergenceWarning, match="residual"):
        w, _ = spectra.eigh(lap, k=4, maxiter=3, on_fail="warn", **LOBPCG)
    assert w.shape == (4,)


def test_batch_errors_name_the_item():
    mats = [_rgg_laplacian(700, seed=1), _rgg_laplacian(800, seed=2)]
    bad = mats[1].tolil()
    bad[2, 5] += 0.5
    with pytest.raises(spectra.InputError, match=r"a\[1\] is not symmetric"):
        spectra.eigh([mats[0], bad.tocsr()], k=2)
    with pytest.raises(spectra.LinAlgError) as info:
        spectra.eigh(mats, k=3, maxiter=2, **LOBPCG)
    assert info.value.indices == [(0,), (1,)]


def test_refuses_bad_keywords():
    lap = _rgg_laplacian(600)
    with pytest.raises(spectra.InputError, match="b is not supported"):
        spectra.eigh(lap, sp.identity(600), k=2)
    with pytest.raises(spectra.InputError, match="method"):
        spectra.eigh(lap, k=2, method="arpack")
    with pytest.raises(spectra.InputError, match="precondition"):
        spectra.eigh(lap, k=2, precondition="ilu", **LOBPCG)
    with pytest.raises(spectra.InputError, match="deflate"):
        spectra.eigh(lap, k=2, deflate=np.ones((5, 1)))
    with pytest.raises(spectra.InputError, match="spectrum_bound"):
        spectra.eigh(lap, k=2, spectrum_bound=(2, 0))
    with pytest.raises(spectra.InputError, match="max_memory"):
        spectra.eigh(lap, k=2, method="dense", max_memory=1000)
    with pytest.raises(TypeError, match="unknown option"):
        spectra.eigh(lap, k=2, tolerance=1e-3)


def test_callable_preconditioner_is_used():
    lap = _rgg_laplacian(900, seed=18)
    calls = []

    def identity(r):
        calls.append(r.shape)
        assert isinstance(r, np.ndarray)
        return r

    w = spectra.eigvalsh(lap, k=3, tol=1e-10, precondition=identity, **LOBPCG)
    assert calls and calls[0][0] == 900
    np.testing.assert_allclose(w, dense_reference(lap)[0][:3], rtol=1e-8, atol=1e-12)


# ---- the dense-or-iterative plan -----------------------------------------------------------


def test_plan_sparse_says_dense_or_iterative_and_never_densifies_past_max_memory():
    small, large = _rgg_laplacian(300, seed=19), _rgg_laplacian(3000, seed=20)
    p = spectra.core.plan_sparse([small, large], k=4)
    assert p.methods == ("dense", "lanczos")  # a geometric graph: shift-invert Lanczos
    text = str(p)
    assert "dense" in text and "lanczos" in text and "n 3,000" in text
    # a budget the dense matrix does not fit: iterative even though n is small
    tight = spectra.core.plan_sparse(small, k=4, max_memory=100_000)
    assert tight.methods == ("lobpcg",) and "does not fit" in tight.reasons[0]
    w = spectra.eigvalsh(small, k=4, max_memory=100_000, tol=1e-10)
    np.testing.assert_allclose(w, dense_reference(small)[0][:4], rtol=1e-8, atol=1e-12)
    with pytest.raises(spectra.InputError, match="would need"):
        spectra.core.plan_sparse(large, k=4, method="dense", max_memory=1 << 20)
    # k a large share of n: dense when it fits
    assert spectra.core.plan_sparse(_rgg_laplacian(700, seed=21), k=200).methods == ("dense",)


@pytest.mark.cuda
def test_torch_sparse_on_cuda_stays_on_cuda():
    lap = _rgg_laplacian(2000, seed=22)
    ref_w, ref_v = dense_reference(lap)
    t = _torch_csr(lap, torch.float64).to("cuda")
    w, v = spectra.eigh(t, k=4, tol=1e-10, **LOBPCG)
    assert w.device.type == "cuda" and v.device.type == "cuda"
    np.testing.assert_allclose(w.cpu().numpy(), ref_w[:4], rtol=1e-8, atol=1e-12)
    assert largest_angle(v.cpu().numpy(), ref_v, ref_w, 4) < 1e-6


def test_auto_preconditioner_takes_amg_when_the_factorization_does_not_fit(monkeypatch):
    pytest.importorskip("pyamg")
    from spectra.core._sparse import _precondition

    built = []
    real = _precondition.BlockVCycle
    monkeypatch.setattr(_precondition, "BlockVCycle", lambda m: built.append(m.shape) or real(m))
    lap = _rgg_laplacian(2500, seed=23)
    plan = spectra.core.plan_sparse(lap, k=3, max_memory=3 << 20)
    assert plan.preconditioners == ("amg",) and "over max_memory" in plan.preconditioner_reasons[0]
    w = spectra.eigvalsh(lap, k=3, tol=1e-10, max_memory=3 << 20)  # precondition="auto"
    assert built == [(2500, 2500)]
    ref = sla.eigsh(lap, k=3, sigma=-1e-3, return_eigenvectors=False)
    np.testing.assert_allclose(w, np.sort(ref), rtol=1e-8, atol=1e-12)
    spectra.eigvalsh(_rgg_laplacian(1500, seed=24), k=3, method="lobpcg", max_memory=1 << 20)
    assert len(built) == 1  # below AMG_MIN_N: Jacobi
