"""The partial dense solve (``lapack-subset``): ``k`` of ``n`` eigenpairs by LAPACK's
``?syevr``/``?heevr`` with an index range, taken by the planner where its cost model says
so, with the core's contract (ascending values, gauge, errors, types, memory)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra
from spectra.core import STRATEGIES, fix_gauge, plan
from spectra.core._solvers import _lapack_subset
from spectra.core._strategies._subset import full_seconds, subset_seconds, window_claim

from .helpers import DTYPES, projector_distance, random_hermitian, tol, with_spectrum

N = 120  # large enough for the planner to take the partial solve at small k


def reference(a: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """SciPy's full decomposition of every matrix, vectors in the core's gauge."""
    x = a.detach().numpy().astype(np.complex128 if a.is_complex() else np.float64)
    ws, vs = zip(*(scipy.linalg.eigh(m) for m in x.reshape(-1, *x.shape[-2:])), strict=True)
    w = np.stack(ws).reshape(*x.shape[:-1])
    v = fix_gauge(torch.from_numpy(np.stack(vs))).numpy().reshape(x.shape)
    return w, v


# ---- the plan --------------------------------------------------------------------------


def test_plan_takes_the_window_for_few_eigenpairs():
    p = plan(300, 40, torch.float64, k=9)
    assert (p.strategy, p.window) == ("lapack-subset", (0, 9))
    assert plan(300, 40, torch.float64, k=9, largest=True).window == (291, 300)
    assert "window       eigenpairs 0..8 only" in str(p)
    assert any("?syevr" in r for r in p.reasons)


@pytest.mark.parametrize("n, k", [(16, 2), (300, 250), (300, 300), (40, 30)])
def test_plan_without_a_window_is_the_plan_without_k(n, k):
    p = plan(n, 64, torch.float64, k=k)
    assert p.window is None
    assert p == plan(n, 64, torch.float64)


def test_eigenvalues_only_keep_the_full_solve():
    assert plan(300, 40, torch.float64, vectors=False, k=9).window is None


def test_cost_model_claims_where_it_measured_faster():
    cpu = torch.device("cpu")
    assert window_claim(300, 9, torch.float64, cpu, True) is not None
    assert window_claim(300, 150, torch.float64, cpu, True) is None
    assert window_claim(300, 9, torch.float64, torch.device("meta"), True) is None
    assert subset_seconds(550, 17, torch.float64) < 0.5 * full_seconds(550, torch.float64)


def test_plan_k_is_checked():
    with pytest.raises(ValueError, match="exceeds"):
        plan(10, 4, torch.float64, k=11)
    with pytest.raises(ValueError):
        plan(10, 4, torch.float64, k=0)


# ---- results against SciPy's full decomposition ----------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("largest", [False, True])
def test_window_is_the_slice_of_the_full_decomposition(dtype, largest, windows):
    k = 7
    a = random_hermitian((3,), N, dtype, seed=1)
    w, v = spectra.eigh(a, k=k, largest=largest)
    assert windows and set(windows) == {(N, N - k, N) if largest else (N, 0, k)}
    assert w.dtype == a.real.dtype and v.dtype == dtype and v.shape == (3, N, k)
    wr, vr = reference(a)
    sl = slice(N - k, N) if largest else slice(0, k)
    scale = np.abs(wr).max()
    np.testing.assert_allclose(w.numpy(), wr[..., sl], atol=10 * tol(dtype) * scale, rtol=0)
    # random spectra are well separated: the vectors themselves, in the core's gauge
    np.testing.assert_allclose(v.numpy(), vr[..., sl], atol=100 * tol(dtype) * np.sqrt(N))
    assert bool((w[..., 1:] >= w[..., :-1]).all())


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_degenerate_and_clustered_windows_are_the_same_subspaces(dtype, windows):
    base = torch.arange(N, dtype=torch.float64)
    base[:6] = torch.tensor([0.0, 0.0, 0.0, 1.0, 1.0 + 1e-13, 1.0 + 2e-13])
    a = with_spectrum(torch.stack([base, base.flip(0)]).sort(-1).values, dtype, seed=3)
    w, v = spectra.eigh(a, k=8)
    assert windows and windows[0][1:] == (0, 8)
    wr, vr = reference(a)
    np.testing.assert_allclose(w.numpy(), wr[..., :8], atol=1e-10 * N)
    for i in range(2):
        gap = projector_distance(v[i].numpy(), vr[i][:, :8], wr[i][:8], 1e-8)
        assert gap < 1e-8
        eye = v[i].mH @ v[i]
        torch.testing.assert_close(eye, torch.eye(8, dtype=dtype), atol=1e-12, rtol=0)


def test_numpy_in_numpy_out_and_batch_shape(windows):
    a = random_hermitian((2, 3), N, torch.float64, seed=5).numpy()
    w, v = spectra.eigh(a, k=4)
    assert isinstance(w, np.ndarray) and w.shape == (2, 3, 4) and v.shape == (2, 3, N, 4)
    assert windows
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a)[..., :4], atol=1e-10 * N)


def test_ragged_list_buckets_take_the_window(windows):
    sizes = [90, 130, 200, 61]
    mats = [random_hermitian((), n, torch.float64, seed=n) for n in sizes]
    ws, vs = spectra.eigh(mats, k=5)
    assert windows and all(lo == 0 and hi == 5 for _, lo, hi in windows)
    for m, w, v in zip(mats, ws, vs, strict=True):
        wr, vr = reference(m)
        assert v.shape == (m.shape[-1], 5)
        np.testing.assert_allclose(w.numpy(), wr[:5], atol=1e-10 * m.shape[-1])
        np.testing.assert_allclose(v.numpy(), vr[:, :5], atol=1e-8)


def test_ragged_largest_solves_in_full(windows):
    mats = [random_hermitian((), n, torch.float64, seed=n) for n in (90, 130)]
    ws, _ = spectra.eigh(mats, k=3, largest=True)
    assert windows == []  # padding sits on top of each bucket: the full solve, sliced
    for m, w in zip(mats, ws, strict=True):
        np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(m.numpy())[-3:], atol=1e-10)


def test_chunks_under_max_memory_are_bitwise_the_whole_batch(windows):
    a = random_hermitian((12,), N, torch.float64, seed=6)
    p = plan(
        N,
        12,
        torch.float64,
        k=5,
        max_memory=4 * STRATEGIES["lapack-subset"].bytes_per_matrix(N, torch.float64),
    )
    assert p.window == (0, 5) and p.n_chunks == 3
    whole = spectra.eigh(a, k=5)
    chunked = spectra.eigh(a, k=5, max_memory=p.memory_budget)
    assert torch.equal(whole[0], chunked[0]) and torch.equal(whole[1], chunked[1])


def test_forced_strategy_solves_everything_with_it():
    a = random_hermitian((2,), 20, torch.complex128, seed=7)
    w, v = spectra.eigh(a, strategy="lapack-subset")
    wr, vr = reference(a)
    np.testing.assert_allclose(w.numpy(), wr, atol=1e-12)
    assert projector_distance(v[0].numpy(), vr[0], wr[0], 1e-8) < 1e-10


# ---- what keeps the full path, and failures --------------------------------------------


def test_gradients_keep_the_full_path(windows):
    a = random_hermitian((3,), N, torch.float64, seed=8)
    x = a.clone().requires_grad_()
    w, v = spectra.eigh(x, k=4)
    (w.sum() + (v**2)[:, 0].sum()).backward()
    assert windows == []  # no eigenvector-complete backward for a partial solve
    y = a.clone().requires_grad_()
    wf, vf = spectra.eigh(y)
    (wf[:, :4].sum() + (vf[..., :4] ** 2)[:, 0].sum()).backward()
    torch.testing.assert_close(x.grad, y.grad)


def test_nan_is_named_by_index():
    a = random_hermitian((4,), N, torch.float64, seed=9)
    a[2, 5, 5] = float("nan")
    with pytest.raises(spectra.InputError, match=r"\[2\]"):
        spectra.eigh(a, k=3)


def test_lapack_failures_are_recomputed_in_full(monkeypatch):
    inner = _lapack_subset.window_into

    def failing(a, w, v, lo, hi):
        inner(a, w, v, lo, hi)
        w[1] = float("nan")  # what LAPACK left is discarded for the failed matrix
        return [1]

    monkeypatch.setattr(_lapack_subset, "window_into", failing)
    a = random_hermitian((3,), N, torch.float64, seed=10)
    w, _ = spectra.eigh(a, k=4)
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(a.numpy())[:, :4], atol=1e-10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scipy_wrapper_route_is_the_same(monkeypatch, dtype):
    a = random_hermitian((2,), 60, dtype, seed=11)
    lapack = _lapack_subset._lapack()
    monkeypatch.setattr(lapack, "routines", {})
    assert not _lapack_subset.uses_ctypes(dtype)
    w, v = _lapack_subset.window_solve(a, True, 0, 6)
    monkeypatch.undo()
    assert _lapack_subset.uses_ctypes(dtype)  # SciPy's bundled LAPACK is found here
    w2, v2 = _lapack_subset.window_solve(a, True, 0, 6)
    torch.testing.assert_close(w, w2, atol=tol(dtype) * 60, rtol=0)
    torch.testing.assert_close(v.abs(), v2.abs(), atol=100 * tol(dtype), rtol=0)


def test_the_lower_triangle_is_read():
    a = random_hermitian((), 70, torch.complex128, seed=12)
    junk = torch.triu(torch.full_like(a, 5 + 3j), diagonal=1)
    w, v = spectra.eigh(torch.tril(a) + junk, k=4, check=False)
    wr, vr = reference(a)
    np.testing.assert_allclose(w.numpy(), wr[:4], atol=1e-10)
    np.testing.assert_allclose(v.numpy(), vr[:, :4], atol=1e-8)


def test_window_strategy_needs_a_partial_solve():
    s = dataclasses.replace(STRATEGIES["lapack-subset"])
    assert s.abilities.window is not None and s.runs.prefers_window is window_claim


def test_a_matrix_gives_the_same_bits_anywhere_in_the_batch():
    n = 101  # odd: the matrices of a batch start on every alignment
    a = random_hermitian((20,), n, torch.float64, seed=13)
    w, v = spectra.eigh(a, k=5)
    for lo in (1, 3, 10):  # other batches (of more than 8: fewer take the direct path)
        wi, vi = spectra.eigh(a[lo:], k=5)
        assert plan(n, 20 - lo, torch.float64, k=5).window == (0, 5)
        assert torch.equal(w[lo:], wi) and torch.equal(v[lo:], vi)
    ws, vs = spectra.eigh([a[3], a[5, :99, :99]], k=5)  # the ragged path: unpadded
    assert torch.equal(ws[0], w[3]) and torch.equal(vs[0], v[3])


def test_explain_shows_the_window(capsys):
    from spectra.cli import main

    assert main(["explain", "300", "40", "--k", "9", "--largest"]) == 0
    text = capsys.readouterr().out
    assert "lapack-subset" in text and "window       eigenpairs 291..299 only" in text
