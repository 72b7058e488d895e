"""The fanned generalized pipeline (issue 26): checks of ``a`` and ``b`` inside the
workers, the reduction's lower triangle as the solver reads it, sub-blocks, outputs
written in place; against SciPy's ``eigh(a, b)`` and bitwise against the serial path."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra
from spectra.core._options import Options
from spectra.core._pipeline import _solve
from spectra.core._pipeline._checks import BlockCheck, InputRejected, PairCheck
from spectra.core._pipeline._dense import solve_dense
from spectra.core._pipeline._gauge import fix_gauge
from spectra.core._request import Request
from spectra.core._solvers._native import native_module

from .helpers import DTYPES, random_hermitian, tol


def _pair(batch, n, dtype, seed=0):
    a = random_hermitian((batch,), n, dtype, seed=seed)
    x = random_hermitian((batch,), n, dtype, seed=seed + 1)
    return a, x @ x.mH + n * torch.eye(n, dtype=dtype)


def _checked(a, b, workers=2, strategy=None, **request):
    """``solve_dense`` as a checked call reaches it when the values are checked where the
    blocks are solved (``pre`` with ``b``)."""
    opts = Options(workers=workers, strategy=strategy)
    return solve_dense(a, b, Request(**request), opts, pre=BlockCheck())


@pytest.fixture
def small_blocks(monkeypatch):
    """Sub-blocks of a few matrices, so that every part walks several of them."""
    monkeypatch.setattr(_solve, "SUB_BLOCK_BYTES", 4096)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("n", "batch"), [(5, 4096), (24, 256)])
def test_fanned_pipeline_matches_scipy_and_the_serial_path(small_blocks, dtype, n, batch):
    a, b = _pair(batch, n, dtype, seed=n)
    p = spectra.plan(n, batch, dtype, workers=2)
    assert p.workers == 2 and _solve._cholesky_fanned(a, b, True, Options(workers=2))  # fans
    w, v = _checked(a, b, strategy=p.strategy)
    wide = torch.complex128 if dtype.is_complex else torch.float64
    pairs = zip(a[:300].to(wide).numpy(), b[:300].to(wide).numpy(), strict=True)
    ref_w = np.stack([scipy.linalg.eigh(x, y, eigvals_only=True) for x, y in pairs])
    scale = float(np.abs(ref_w).max())
    assert np.abs(w[:300].double().numpy() - ref_w).max() <= 10 * tol(dtype) * scale
    gram = v.mH @ b @ v  # B-orthonormal
    eye = torch.eye(n, dtype=dtype).expand_as(gram)
    assert float((gram - eye).abs().max()) <= 100 * tol(dtype)
    residual = a @ v - b @ v * w.unsqueeze(-2).to(dtype)
    assert float(residual.abs().max()) <= 100 * tol(dtype) * scale
    # in the gauge: fixing it again changes nothing (beyond a phase's rounding)
    torch.testing.assert_close(fix_gauge(v), v, atol=10 * tol(dtype), rtol=0)
    # the serial path: the reduction in this thread, on the whole batch
    ws, vs = _checked(a, b, workers=1, strategy=p.strategy)
    assert torch.equal(w, ws) and torch.equal(v, vs)
    values = _checked(a, b, strategy=p.strategy, vectors=False)[0]
    assert torch.equal(values, _checked(a, b, 1, p.strategy, vectors=False)[0])
    torch.testing.assert_close(values, w, atol=10 * tol(dtype) * scale, rtol=0)


def test_sub_blocks_start_on_the_serial_paths_boundaries():
    # float32 5x5 (100 bytes): a matrix of a fresh batch is 64-byte aligned every 16
    unit, step = _solve._sub_blocks(100, 2, 5, 4)
    assert unit == 16 and step % unit == 0 and step <= 50
    assert _solve._sub_blocks(2048, 2, 32, 16) == (1, 128)  # 16 KiB: 2 MiB of input
    assert _solve._sub_blocks(10, 2, 32, 16) == (1, 5)  # at most a part


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_check_false_reads_the_lower_triangles_in_the_workers(small_blocks, dtype):
    a, b = _pair(64, 6, dtype, seed=3)
    ga, gb = a.clone(), b.clone()
    upper = torch.ones(6, 6, dtype=torch.bool).triu(1)
    ga[:, upper] = 7.0
    gb[:, upper] = -3.0
    w, v = solve_dense(ga, gb, Request(), Options(workers=2))  # no pre: check=False
    wr, vr = _checked(a, b)
    torch.testing.assert_close(w, wr, atol=1e-12, rtol=0)
    torch.testing.assert_close(v, vr, atol=1e-10, rtol=0)
    ref = scipy.linalg.eigh(ga[9].numpy(), gb[9].numpy(), lower=True, eigvals_only=True)
    np.testing.assert_allclose(w[9].numpy(), ref, rtol=0, atol=1e-10)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize(
    ("operand", "value", "error", "message"),
    [
        ("a", float("nan"), spectra.InputError, "NaN or Inf"),
        ("b", float("inf"), spectra.InputError, "NaN or Inf"),
        ("a", "asymmetric", spectra.InputError, "not symmetric"),
        ("b", "asymmetric", spectra.InputError, "not symmetric"),
        ("b", "indefinite", spectra.LinAlgError, "not positive definite"),
    ],
)
def test_errors_found_in_the_workers_name_the_indices(
    small_blocks, workers, operand, value, error, message
):
    a, b = _pair(80, 6, torch.float64, seed=5)
    bad = {"a": a, "b": b}[operand]
    for i in (11, 70):
        if value == "asymmetric":
            bad[i, 0, 3] += 1.0
        elif value == "indefinite":
            bad[i] = -bad[i]
        else:
            bad[i, 2, 2] = value  # on the diagonal: symmetric, only the finite test sees it
    with pytest.raises(error, match=message) as info:
        _checked(a, b, workers=workers)
    assert info.value.indices == [(11,), (70,)]
    assert info.value.what == operand


def test_a_bad_a_is_named_before_a_non_positive_definite_b(small_blocks):
    a, b = _pair(80, 6, torch.float64, seed=6)
    b[3] = -b[3]  # found by the first part's factor
    a[75, 0, 1] += 1.0  # found by the second part's check
    with pytest.raises(spectra.InputError, match="not symmetric") as info:
        _checked(a, b)
    assert info.value.indices == [(75,)]


def test_a_broadcast_b_is_checked_once_and_named_by_its_own_index(monkeypatch):
    a, b = _pair(64, 5, torch.float64, seed=7)
    b2 = b[:2].clone()
    seen = []
    real = _solve._cholesky_fanned
    monkeypatch.setattr(_solve, "_cholesky_fanned", lambda *ar: seen.append(ar[4]) or real(*ar))
    w, _ = _checked(a.reshape(32, 2, 5, 5), b2)
    assert seen == [PairCheck(None, True, False)]  # b checked here, not in the workers
    pairs = zip(a, b2.repeat(32, 1, 1), strict=True)
    ref = np.stack([scipy.linalg.eigh(x, y, eigvals_only=True) for x, y in pairs])
    np.testing.assert_allclose(w.reshape(64, 5).numpy(), ref, rtol=0, atol=1e-10)
    b2[1, 4, 0] = float("nan")
    with pytest.raises(spectra.InputError, match="NaN") as info:
        _checked(a.reshape(32, 2, 5, 5), b2)
    assert info.value.what == "b" and info.value.indices == [(1,)]


def test_checked_canonical_path_names_the_indices():
    a, b = _pair(8, 5, torch.float64, seed=8)
    w, _ = _checked(a, b, lindep=1e-10)
    torch.testing.assert_close(w, _checked(a, b)[0], atol=1e-10, rtol=0)
    a[6, 1, 1] = float("inf")
    with pytest.raises(spectra.InputError, match="NaN or Inf") as info:
        _checked(a, b, lindep=1e-10)
    assert info.value.indices == [(6,)]


def test_quick_check_of_a_worker_is_rejected_not_raised(small_blocks):
    """A part refuses with ``InputRejected`` (the caller names the indices), never an
    error of its own naming indices of its block."""
    a, b = _pair(64, 6, torch.float64, seed=9)
    b[40, 1, 1] = float("nan")
    with pytest.raises(InputRejected):
        _solve.solve_cholesky(a, b, True, Options(workers=2), PairCheck(None, True, True))


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_gradient_of_the_reduction_without_symmetrizing(dtype):
    """The reduced matrix is no longer made exactly Hermitian: the gradients are still
    those of the reduction a user writes in torch (well separated spectra)."""
    a, b = _pair(3, 5, dtype, seed=10)
    xa, xb = a.clone().requires_grad_(), b.clone().requires_grad_()
    w, v = spectra.eigh(xa, xb)
    loss = (w * torch.arange(5.0, dtype=w.dtype)).sum() + (v.abs() ** 2)[..., 0].sum()
    ga, gb = torch.autograd.grad(loss, (xa, xb))
    ya, yb = a.clone().requires_grad_(), b.clone().requires_grad_()
    factor = torch.linalg.cholesky(yb)
    half = torch.linalg.solve_triangular(factor, ya, upper=False)
    c = torch.linalg.solve_triangular(factor, half.mH, upper=False)
    wr, u = torch.linalg.eigh(0.5 * (c + c.mH))
    vr = torch.linalg.solve_triangular(factor.mH, u, upper=True)
    lr = (wr * torch.arange(5.0, dtype=wr.dtype)).sum() + (vr.abs() ** 2)[..., 0].sum()
    ra, rb = torch.autograd.grad(lr, (ya, yb))
    torch.testing.assert_close(w, wr.detach(), atol=1e-12, rtol=0)
    torch.testing.assert_close(ga, ra, atol=1e-9, rtol=1e-9)
    torch.testing.assert_close(gb, rb, atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize("operand", ["a", "b"])
def test_public_call_names_the_bad_indices_of_a_fanned_batch(operand):
    """Through ``spectra.eigh``: whichever thread checks the values (the caller, or the
    workers of the fanned pipeline), the error names the operand and its indices."""
    a, b = _pair(256, 24, torch.complex128, seed=11)
    assert spectra.plan(24, 256, torch.complex128).workers == 2
    bad = {"a": a, "b": b}[operand]
    bad[3, 1, 2] += 1.0
    kept = bad[250, 4, 4].clone()
    bad[250, 4, 4] = float("nan")
    with pytest.raises(spectra.InputError, match="NaN or Inf") as info:
        spectra.eigh(a.reshape(2, 128, 24, 24), b.reshape(2, 128, 24, 24))
    assert info.value.what == operand and info.value.indices == [(1, 122)]
    bad[250, 4, 4] = kept
    with pytest.raises(spectra.InputError, match="not Hermitian") as info:
        spectra.eigh(a, b)
    assert info.value.what == operand and info.value.indices == [(3,)]
    # unchecked: the lower triangles are read (the strict upper one is where it differs)
    w = spectra.eigh(a, b, check=False).eigenvalues
    ref = scipy.linalg.eigh(a[3].numpy(), b[3].numpy(), lower=True, eigvals_only=True)
    np.testing.assert_allclose(w[3].numpy(), ref, rtol=0, atol=1e-10)


@pytest.fixture
def compiled_runs(monkeypatch):
    """Each sub-block the compiled pair was asked for: whether it served it."""
    runs: list[bool] = []
    real = _solve.native_pair

    def spy(*args, **kwargs):
        got = real(*args, **kwargs)
        runs.append(got is not None)
        return got

    monkeypatch.setattr(_solve, "native_pair", spy)
    return runs


@pytest.mark.parametrize("dtype", DTYPES)
def test_compiled_sub_blocks_on_torchs_lapack_are_the_serial_paths_bits(
    small_blocks, compiled_runs, dtype
):
    """Checked pairs on the ``torch`` strategy whose members lie on 64-byte boundaries:
    each sub-block in one compiled call (every one of them served), bitwise the serial
    path's torch calls; a sub-block it refuses (an ``a`` Hermitian only within the
    tolerance) takes the torch steps, and the results are still the serial path's."""
    if native_module() is None:
        pytest.skip("the compiled helper is not built (SPECTRA_NATIVE=0 or no compiler)")
    n, batch = 32, 128
    a, b = _pair(batch, n, dtype, seed=3)
    w, v = _checked(a, b, strategy="torch")
    assert len(compiled_runs) >= 4 and all(compiled_runs)  # several sub-blocks, all served
    ws, vs = _checked(a, b, workers=1, strategy="torch")
    assert torch.equal(w, ws) and torch.equal(v, vs)
    values = _checked(a, b, strategy="torch", vectors=False)[0]
    assert torch.equal(values, _checked(a, b, 1, "torch", vectors=False)[0])
    near = a.clone()
    near[120, 0, 1] += 100 * torch.finfo(near.dtype).eps * near[120].abs().max()  # within tol
    compiled_runs.clear()
    wn, vn = _checked(near, b, strategy="torch")
    assert True in compiled_runs and False in compiled_runs  # the last sub-block refused
    wsn, vsn = _checked(near, b, workers=1, strategy="torch")
    assert torch.equal(wn, wsn) and torch.equal(vn, vsn)


def test_misaligned_members_never_take_the_compiled_pairs(small_blocks, compiled_runs):
    a, b = _pair(4096, 5, torch.float64, seed=2)  # 200 bytes a matrix
    assert _solve._cholesky_fanned(a, b, True, Options(workers=2, strategy="torch"))  # fans
    w, v = _checked(a, b, strategy="torch")
    assert compiled_runs == []
    ws, vs = _checked(a, b, workers=1, strategy="torch")
    assert torch.equal(w, ws) and torch.equal(v, vs)


def test_a_machine_where_the_compiled_pair_differs_keeps_the_torch_steps(
    small_blocks, compiled_runs, monkeypatch
):
    monkeypatch.setattr(_solve, "compiled_agrees", lambda: False)
    a, b = _pair(128, 32, torch.float64, seed=4)
    w, v = _checked(a, b, strategy="torch")
    assert compiled_runs == []
    ws, vs = _checked(a, b, workers=1, strategy="torch")
    assert torch.equal(w, ws) and torch.equal(v, vs)
