"""The direct path for one matrix or a handful (issue 26): the plan says so, the pipeline
and the pool are not used, and the results are bitwise those of the planned path."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest
import torch

import spectra
from spectra.core import _eigh
from spectra.core._pipeline import _direct, _execute, _gauge
from spectra.core._pipeline._plan import DIRECT_MAX_BATCH
from spectra.core._request import Request
from spectra.core._solvers._kernels._choice import KERNEL_MIN_BATCH, lane_min_batch
from spectra.core._solvers._native import native_module
from spectra.core._strategies import _kernels
from spectra.core._support import _threads

from .helpers import planned, random_hermitian, served_spy, without_native_entry

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]


def _full_path(x, **kw):
    """The same call through the whole pipeline (``workers=1``, what the plan of a small
    call says anyway, with the direct path switched off: ``helpers.planned``)."""
    return planned(spectra.eigh, x, **kw)


def _no_pipeline(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("the pipeline ran")

    monkeypatch.setattr(_execute, "execute", fail)
    monkeypatch.setattr(_threads, "fan_out", fail)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 16, 33, 50, 64, 100])
@pytest.mark.parametrize("shape", [(), (1,), (3,), (2, 2)])
def test_direct_results_are_bitwise_the_planned_path(shape, n, dtype):
    a = random_hermitian(shape or (1,), n, dtype, seed=n)
    a = a.reshape(*shape, n, n)
    batch = int(np.prod(shape)) if shape else 1
    p = spectra.plan(n, batch, dtype)
    if not p.direct and p.strategy == "openblas":  # claimed (off Intel CPUs): its own route
        if not shape:  # one matrix: the claimed strategy's one-matrix route, not the pipeline
            assert _direct._solve_one(a, True, True, None) is not None
        w, v = spectra.eigh(a)
        wf, vf = _full_path(a)
        assert torch.equal(w, wf) and torch.equal(v, vf)
        return
    if not p.direct:
        assert batch * n**3 > 3e5, str(p)  # only work enough to fan out leaves the path
        pytest.skip("planned on more than one worker")
    closed = n <= 3 and native_module() is not None
    assert p.strategy == ("closed-form" if closed else "torch"), str(p)  # compiled closed form
    assert p.workers == 1 and p.n_chunks == 1
    assert _direct.solve_direct(a, Request()) is not None
    if not shape and n < 256:  # one matrix: the shortest route is the one taken
        assert _direct._solve_one(a, True, True, None) is not None
    w, v = spectra.eigh(a)
    wf, vf = _full_path(a)
    assert torch.equal(w, wf) and torch.equal(v, vf)
    assert w.shape == (*shape, n) and v.shape == (*shape, n, n)
    assert torch.equal(spectra.eigvalsh(a), planned(spectra.eigvalsh, a))
    k = max(1, n // 2)
    for largest in (False, True):
        wk, vk = spectra.eigh(a, k=k, largest=largest)
        wkf, vkf = _full_path(a, k=k, largest=largest)
        assert torch.equal(wk, wkf) and torch.equal(vk, vkf)


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_numpy_in_numpy_out_on_the_direct_path(monkeypatch, dtype):
    x = random_hermitian((1,), 6, torch.float64, seed=3)[0].numpy().astype(dtype)
    full = _full_path(x)
    _no_pipeline(monkeypatch)
    w, v = spectra.eigh(x)
    assert isinstance(w, np.ndarray) and isinstance(v, np.ndarray)
    assert w.dtype == full.eigenvalues.dtype and v.dtype == x.dtype
    assert np.array_equal(w, full.eigenvalues) and np.array_equal(v, full.eigenvectors)


def test_a_small_call_uses_neither_the_pipeline_nor_the_pool(monkeypatch):
    a = random_hermitian((4,), 8, torch.float64, seed=1)
    assert spectra.plan(8, 4, torch.float64).direct
    _no_pipeline(monkeypatch)
    w, v = spectra.eigh(a)
    assert spectra.validate(a, w, v).ok()
    spectra.eigvalsh(a[0])


def test_the_plan_shows_the_direct_path_and_its_limits():
    p = spectra.plan(8, 1, torch.float64)
    assert p.direct and any("direct path" in r for r in p.reasons)
    assert "direct path" in str(p)
    assert not spectra.plan(8, 4096, torch.float64).direct  # kernels and the pool
    assert not spectra.plan(8, DIRECT_MAX_BATCH + 1, torch.float64).direct
    assert not spectra.plan(300, 1, torch.float64).direct  # threaded LAPACK
    assert not spectra.plan(8, 1, torch.float64, "cpu", chunk_size=1, strategy="jacobi").direct


@pytest.fixture
def without_compiled_closed_form(monkeypatch):
    """Plans as without the compiled helper's closed form (which claims from one matrix)."""
    monkeypatch.setattr(_kernels, "native_module", lambda: None)
    _kernels._replan()
    yield
    monkeypatch.undo()
    _kernels._replan()


@pytest.mark.parametrize(
    ("n", "dtype", "least"),
    [
        (2, torch.float64, KERNEL_MIN_BATCH),
        (3, torch.float64, KERNEL_MIN_BATCH),
        (4, torch.float64, 160),
        (8, torch.float64, 64),
        (16, torch.float64, 48),
        (8, torch.complex128, 128),
    ],
)
def test_kernels_only_from_the_batch_where_they_pay(n, dtype, least, without_compiled_closed_form):
    if n > 3:
        assert lane_min_batch(n, dtype.is_complex, True) == least
    small = spectra.plan(n, least - 1, dtype)
    big = spectra.plan(n, least, dtype)
    assert small.strategy == "torch", str(small)
    assert big.strategy != "torch", str(big)
    assert any(f"< {least} matrices" in r for r in small.reasons)
    # below the lanes' batch a call that is too little work to fan out takes the direct path
    assert small.direct == (small.workers == 1 and least - 1 <= DIRECT_MAX_BATCH), str(small)
    # the strategy follows the whole call's batch, never a chunk of it
    assert spectra.plan(n, 4 * least, dtype, chunk_size=3).strategy == big.strategy


def test_eigenvalues_only_stay_on_the_direct_path_longer():
    """Without eigenvectors the lanes beat the direct path's LAPACK loop only on larger
    batches (measured): 160 eigenvalue problems of 8 x 8 go direct, their eigenpairs not."""
    assert lane_min_batch(8, False, False) > 160 > lane_min_batch(8, False, True)
    assert spectra.plan(8, 160, torch.float64, vectors=False).direct
    assert not spectra.plan(8, 160, torch.float64).direct


def test_the_compiled_closed_form_claims_from_one_matrix():
    if native_module() is None:
        pytest.skip("the compiled helper is not built")
    for batch in (1, KERNEL_MIN_BATCH - 1, KERNEL_MIN_BATCH, 10_000):
        assert spectra.plan(3, batch, torch.float64).strategy == "closed-form", batch
    assert spectra.plan(3, KERNEL_MIN_BATCH - 1, torch.float64).direct
    assert not spectra.plan(3, 10_000, torch.float64).direct


def test_bad_input_gets_the_full_paths_errors():
    a = torch.eye(4, dtype=torch.float64)
    asymmetric, symmetric_inf = a.clone(), a.clone()
    asymmetric[1, 2] = 5.0
    symmetric_inf[2, 2] = float("inf")  # passes the exact-symmetry test: caught after the solve
    for bad, match in [
        (asymmetric, "not symmetric"),
        (torch.full((4, 4), float("nan"), dtype=torch.float64), "NaN or Inf"),
        (symmetric_inf, "NaN or Inf"),
    ]:
        with pytest.raises(ValueError, match=match):
            spectra.eigh(bad)
    with pytest.raises(ValueError, match="k"):
        spectra.eigh(a, k=5)
    slightly = a.clone()
    slightly[0, 1] = 1e-14  # asymmetric within the tolerance: accepted, as the full path does
    assert torch.equal(spectra.eigh(slightly).eigenvalues, _full_path(slightly).eigenvalues)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_gradients_on_the_direct_path_are_bitwise_the_planned_paths(monkeypatch, dtype):
    a0 = random_hermitian((2,), 5, dtype, seed=2)
    grads = []
    for kw in ({}, {"workers": 1}):  # direct, then the full pipeline
        a = a0.clone().requires_grad_(True)
        w, v = spectra.eigh(a, **kw)
        (w.square().sum() + (v.abs() ** 3).sum()).backward()
        grads.append((w.detach(), v.detach(), a.grad))
    for got, want in zip(grads[0], grads[1], strict=True):
        assert torch.equal(got, want)
    x = a0.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(spectra.eigvalsh(x).sum(), [x])
    torch.testing.assert_close(g, torch.eye(5, dtype=dtype).expand(2, 5, 5))
    _no_pipeline(monkeypatch)
    a = a0.clone().requires_grad_(True)
    spectra.eigh(a).eigenvalues.sum().backward()  # forward and backward without the pipeline
    assert a.grad is not None


def test_transforms_and_unusual_tensors_leave_the_direct_path():
    a = random_hermitian((1,), 5, torch.float64, seed=2)[0]
    assert _direct.solve_direct(a, Request()) is not None
    assert _direct.solve_direct(a.to(torch.float16), Request()) is None
    c = a.to(torch.complex128)
    assert _direct.solve_direct(c.conj(), Request()) is None  # conj bit
    got = torch.func.vmap(lambda m: spectra.eigvalsh(m))(a.expand(3, 5, 5))
    torch.testing.assert_close(got, spectra.eigvalsh(a.expand(3, 5, 5).contiguous()))
    import torch.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        dual = fwAD.make_dual(a, torch.eye(5, dtype=torch.float64))
        assert _direct.solve_direct(dual, Request()) is None
        w = spectra.eigvalsh(dual)
        torch.testing.assert_close(fwAD.unpack_dual(w).tangent.sum(), torch.tensor(5.0).double())


def _gauge_cases(dtype: torch.dtype) -> torch.Tensor:
    """Eigenvector-like blocks with exact and near ties of both signs, zeros, -0.0."""
    gen = torch.Generator().manual_seed(5)
    real = torch.float32 if dtype in (torch.float32, torch.complex64) else torch.float64
    tol = 1e-4 if real == torch.float32 else 1e-10
    v = torch.randn(40, 6, 6, generator=gen, dtype=real)
    v[0, :, 0] = torch.tensor([0.5, -0.5, 0.1, 0.0, -0.0, 0.2])  # exact opposite tie
    v[1, :, 1] = torch.tensor([-0.5, 0.5 * (1 - tol / 3), 0.0, 0.1, 0.2, 0.3])  # near tie
    v[2, :, 2] = torch.tensor([0.3, 0.3, -0.3, 0.1, 0.0, 0.0])
    v[3, :, 3] = torch.tensor([-0.0, 0.0, 0.0, 0.0, 0.0, 0.0])  # a zero column
    v[4, :, 4] = torch.tensor([0.4 * (1 - 2 * tol), -0.4, 0.4, 0.0, 0.0, 0.0])  # outside
    if dtype.is_complex:
        im = torch.randn(40, 6, 6, generator=gen, dtype=real)
        im[0, :, 0] = torch.tensor([0.5, -0.5, 0.0, 0.0, 0.0, 0.0])
        v = torch.complex(v, im)
    return v.mT.contiguous().mT  # column-major, as LAPACK writes eigenvectors


@pytest.mark.parametrize("dtype", DTYPES)
def test_small_gauge_is_bitwise_the_torch_gauge(dtype):
    v = _gauge_cases(dtype)
    want = _gauge.fix_gauge_(v.clone())
    got = _gauge.fix_gauge_small_(v.clone())
    assert torch.equal(got, want)
    for i in range(v.shape[0]):  # one block at a time, as the direct path runs
        assert torch.equal(_gauge.fix_gauge_small_(v[i : i + 1].clone()), want[i : i + 1])
    if not dtype.is_complex:  # both real routes ran: Python signs, and NumPy on near-ties
        tol = 1e-4 if dtype == torch.float32 else 1e-10
        rows = [v[i : i + 1].mT.numpy() for i in range(v.shape[0])]
        assert _gauge._python_flips(rows[0], tol) is None  # the exact opposite tie
        assert _gauge._python_flips(rows[-1], tol) is not None  # a random block
        nan = rows[-1].copy()
        nan[0, 0, 0] = np.nan
        assert _gauge._python_flips(nan, tol) is None  # NaN: torch's max decides
        flips = _gauge._python_flips(rows[-1], tol)
        peaks = np.take_along_axis(rows[-1][0], np.abs(rows[-1][0]).argmax(-1)[:, None], -1)
        assert flips == [int(i) for i in np.flatnonzero(peaks[:, 0] < 0)]


def test_a_first_small_call_never_imports_numba():
    code = (
        "import sys, torch, spectra\n"
        "a = torch.randn(200, 40, 40, dtype=torch.float64)\n"
        "spectra.eigh(a + a.mT)\n"
        "for n in (2, 3, 8, 16):\n"
        "    x = torch.randn(n, n); spectra.eigh(x + x.mT)\n"
        "assert 'numba' not in sys.modules, 'numba imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


@pytest.mark.parametrize("batch", [(), (40,)])  # the direct path and the pipeline
def test_conjugate_and_negative_views_are_resolved(batch):
    x = random_hermitian(batch or (1,), 6, torch.complex128, seed=8).reshape(*batch, 6, 6)
    lazy = x.conj()
    assert lazy.is_conj()
    w, v = spectra.eigh(lazy)
    we, ve = spectra.eigh(lazy.resolve_conj())
    assert torch.equal(w, we) and torch.equal(v, ve)
    neg = torch.neg(x.conj())  # may carry the negative bit
    torch.testing.assert_close(spectra.eigvalsh(neg), spectra.eigvalsh((-x.conj()).contiguous()))
    w_np = spectra.eigvalsh(lazy.numpy(force=True))  # the NumPy route agrees
    torch.testing.assert_close(torch.from_numpy(w_np), we)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
def test_small_lapack_calls_are_sequential_so_one_matrix_sets_no_threads(dtype, monkeypatch):
    """Below SEQUENTIAL_LAPACK_N one matrix's eigh gives the same bits on one thread and
    on torch's default threads (the premise), so the one-matrix route sets none; above it
    the route still runs on one kernel thread."""
    from spectra.core._pipeline._direct import SEQUENTIAL_LAPACK_N

    for n in (1, 2, 3, 5, 8, 13, 16, 24, SEQUENTIAL_LAPACK_N - 1):
        a = random_hermitian((), n, dtype, seed=n)
        w0, v0 = torch.linalg.eigh(a)
        old = _threads.set_thread_kernel_threads(1)
        try:
            w1, v1 = torch.linalg.eigh(a)
        finally:
            _threads.restore_thread_kernel_threads(old)
        assert torch.equal(w0, w1) and torch.equal(v0, v1), n
    calls = []
    real = _direct.set_thread_kernel_threads
    monkeypatch.setattr(_direct, "set_thread_kernel_threads", lambda c: calls.append(c) or real(c))
    from spectra.core._solvers import _native  # the compiled route sets it the same way

    monkeypatch.setattr(_native, "set_thread_kernel_threads", lambda c: calls.append(c) or real(c))
    for n, expected in ((8, []), (SEQUENTIAL_LAPACK_N, [1])):
        calls.clear()
        a = random_hermitian((), n, dtype, seed=1)
        w, v = spectra.eigh(a)
        assert calls == expected, n
        ref_w, ref_v = planned(spectra.eigh, a[None])  # the planned path
        assert torch.equal(w, ref_w[0]) and torch.equal(v, ref_v[0]), n


def test_one_matrix_shortcut_keeps_the_checks_and_options():
    a = torch.eye(3, dtype=torch.float64)
    with pytest.raises(spectra.core.domain.InputError, match="symmetry_tol"):
        spectra.eigh(a, symmetry_tol=-1.0)
    bad = a.clone()
    bad[0, 1] = 1.0
    with pytest.raises(spectra.core.domain.InputError, match="not symmetric"):
        spectra.eigvalsh(bad)
    assert spectra.eigvalsh(a, k=1).shape == (1,)  # k takes the normal route
    assert type(spectra.eigvalsh(a)) is torch.Tensor


def test_a_tracked_small_matrix_takes_torchs_own_node_where_separated(monkeypatch):
    # without the compiled one-call route (tests/core/test_backward_one.py has that one)
    without_native_entry(monkeypatch)
    monkeypatch.setattr(_direct, "native_solve", lambda *args: None)
    a0 = random_hermitian((1,), 5, torch.float64, seed=21)[0]
    calls = []
    real = _direct._solve_native
    monkeypatch.setattr(_direct, "_solve_native", lambda x: calls.append(1) or real(x))
    a = a0.clone().requires_grad_()
    w, v = spectra.eigh(a)
    assert calls == [1]
    assert "LinalgEighBackward" in type(w.grad_fn).__name__  # torch's node, no Python rule
    (w.sum() + (v * v.detach().roll(1, 0)).sum()).backward()
    b = a0.clone().requires_grad_()
    wt, vt = torch.linalg.eigh(b)
    sign = torch.sign(vt.detach().gather(0, vt.detach().abs().argmax(0, keepdim=True)))
    vt = vt * sign  # the same gauge
    assert torch.equal(w.detach(), wt.detach()) and torch.equal(v.detach(), vt.detach())
    (wt.sum() + (vt * vt.detach().roll(1, 0)).sum()).backward()
    torch.testing.assert_close(a.grad, b.grad, rtol=1e-12, atol=1e-12)
    with torch.no_grad():  # the same values as the untracked direct path
        w0, v0 = spectra.eigh(a0)
    assert torch.equal(w.detach(), w0) and torch.equal(v.detach(), v0)


def test_a_tracked_degenerate_matrix_keeps_the_degenerate_safe_rule():
    a = torch.diag(torch.tensor([1.0, 1.0, 2.0], dtype=torch.float64)).requires_grad_()
    w, v = spectra.eigh(a)
    assert "LinalgEighBackward" not in type(w.grad_fn).__name__
    (w.sum() + v.sum()).backward()
    assert bool(torch.isfinite(a.grad).all())


def test_k_of_n_that_the_planner_windows_leaves_the_direct_path():
    import scipy.linalg

    a = random_hermitian((1,), 200, torch.float64, seed=22)[0]
    assert spectra.plan(200, 1, torch.float64, k=9).window is not None
    assert _direct.solve_direct(a, Request(k=9)) is None  # the partial solve runs it
    assert _direct.solve_direct(a, Request()) is not None  # in full: still direct
    small = random_hermitian((1,), 8, torch.float64, seed=23)[0]
    assert spectra.plan(8, 1, torch.float64, k=3).window is None
    assert _direct.solve_direct(small, Request(k=3)) is not None  # sliced, as before
    w, v = spectra.eigh(a, k=9)
    want = scipy.linalg.eigh(a.numpy(), eigvals_only=True)[:9]
    np.testing.assert_allclose(w.numpy(), want, rtol=0, atol=1e-11 * abs(want).max())
    np.testing.assert_allclose((a @ v - v * w).abs().max().item(), 0, atol=1e-10)
    with torch.enable_grad():  # tracked input: solved in full, on the direct path
        t = a.clone().requires_grad_()
        assert _direct.solve_direct(t, Request(k=9)) is not None


def test_a_tracked_plain_matrix_takes_the_shortcut(monkeypatch):
    monkeypatch.setattr(_direct, "native_solve", lambda *args: None)  # torch's node then
    a0 = random_hermitian((1,), 6, torch.float64, seed=24)[0]
    want_w, want_v = spectra.eigh(a0.clone().requires_grad_())  # whichever route
    from spectra.core import _eigh

    calls = []
    real = _eigh.solve_direct
    monkeypatch.setattr(_eigh, "solve_direct", lambda *args: calls.append(1) or real(*args))
    a = a0.clone().requires_grad_()
    w, v = spectra.eigh(a)
    assert calls == []  # solve_one answered: no request, no solve_direct
    assert "LinalgEighBackward" in type(w.grad_fn).__name__
    assert torch.equal(w.detach(), want_w.detach()) and torch.equal(v.detach(), want_v.detach())
    v.sum().backward()
    assert a.grad is not None and bool(torch.isfinite(a.grad).all())
    with pytest.raises(ValueError, match=r"symmetric|Hermitian"):  # the checks still refuse
        spectra.eigh(torch.triu(a0).requires_grad_())


@pytest.mark.parametrize("degenerate", [False, True])
def test_tracked_eigenvalues_skip_the_gauge_and_keep_the_gradients_bits(monkeypatch, degenerate):
    a0 = random_hermitian((1,), 6, torch.float64, seed=25)[0]
    if degenerate:
        a0 = torch.diag(torch.tensor([1.0, 1.0, 2.0, 3.0, 3.0, 3.0], dtype=torch.float64))
    # eigh's eigenvalues on the same direct path: gauged eigenvectors under the same rule
    b = a0.clone().requires_grad_()
    (spectra.eigh(b).eigenvalues ** 2).sum().backward()
    monkeypatch.setattr(_direct, "gauge_fresh", lambda v: pytest.fail("gauge computed"))
    monkeypatch.setattr(_direct, "fix_gauge_small_", lambda v: pytest.fail("gauge computed"))
    a = a0.clone().requires_grad_()
    w = spectra.eigvalsh(a)
    (w**2).sum().backward()
    assert torch.equal(a.grad, b.grad)
    c = a0.clone().requires_grad_()
    (torch.linalg.eigvalsh(c) ** 2).sum().backward()
    torch.testing.assert_close(a.grad, c.grad, rtol=1e-12, atol=1e-12)


def _count_pipeline(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the calls that ran a plan (the pipeline, or its executor straight from the
    entry: ``_planned_direct``), not the direct path."""
    from spectra.core import _eigh

    runs: list[int] = []
    real = _eigh._run_dense
    monkeypatch.setattr(_eigh, "_run_dense", lambda *a: runs.append(1) or real(*a))
    planned_batch = _eigh.solve_planned  # the plan's executor without the layers

    def solve_planned(*args: Any) -> Any:
        out = planned_batch(*args)
        if out is not None:
            runs.append(1)
        return out

    monkeypatch.setattr(_eigh, "solve_planned", solve_planned)
    return runs


@pytest.mark.parametrize(
    "x, kw",
    [
        (random_hermitian((), 8, torch.float64, seed=3), {}),
        (random_hermitian((), 40, torch.complex128, seed=4), {}),
        (random_hermitian((16,), 8, torch.float32, seed=5), {}),
        (random_hermitian((), 12, torch.float64, seed=6).numpy(), {}),
        (random_hermitian((3,), 20, torch.complex64, seed=7), {"k": 3, "largest": True}),
        (random_hermitian((), 70, torch.float64, seed=8), {"k": 0}),
    ],
    ids=["8 float64", "40 complex128", "16 x 8 float32", "NumPy", "k of a handful", "k = 0"],
)
def test_options_that_plan_the_default_call_take_the_direct_path(
    monkeypatch: pytest.MonkeyPatch, x, kw
) -> None:
    """``workers=1``, the default strategy forced, an ``Options``, a plan handed back, a
    backward option on input without history: the planner plans the call as the default
    one, so it runs as that one does (no pipeline), bitwise; options that change the plan
    (verification, another strategy) take the pipeline."""
    n, batch = x.shape[-1], int(np.prod(x.shape[:-2]))
    dtype = x.dtype if isinstance(x, torch.Tensor) else torch.from_numpy(x).dtype
    default = spectra.plan(n, batch, dtype)
    assert default.direct and default.strategy == "torch", str(default)
    w0, v0 = spectra.eigh(x, **kw)
    runs = _count_pipeline(monkeypatch)
    same = [
        {"workers": 1},
        {"strategy": "torch", "chunk_size": batch},
        {"options": spectra.Options(workers=1, max_memory=2**30)},
        {"plan": default},
        {"degenerate": "nan", "broadening": 1e-9},
    ]
    for opts in same:
        w, v = spectra.eigh(x, **kw, **opts)
        assert runs == [] and type(w) is type(w0), opts
        assert np.array_equal(np.asarray(w), np.asarray(w0)), opts
        assert np.array_equal(np.asarray(v), np.asarray(v0)), opts
        assert spectra.plan(
            n, batch, dtype, **opts.get("options", spectra.Options()).planning()
        ).direct
    assert spectra.plan(n, batch, dtype, workers=1).direct
    assert any(r.startswith("direct path: the call runs") for r in default.reasons)
    for i, opts in enumerate([{"verify": True}, {"strategy": "numpy"}], start=1):
        w, v = spectra.eigh(x, **kw, **opts)
        assert runs == [1] * i, opts  # the pipeline's route, the same eigenpairs
        assert np.allclose(
            np.asarray(w),
            np.asarray(w0),
            rtol=1e-4,
            atol=1e-4 * abs(np.asarray(w0)).max(initial=1.0),
        )
    # the pipeline itself agrees bitwise (the planned call, the direct path switched off)
    pw, pv = planned(spectra.eigh, x, **kw)
    assert runs == [1, 1, 1]
    assert np.array_equal(np.asarray(pw), np.asarray(w0))
    assert np.array_equal(np.asarray(pv), np.asarray(v0))


def test_one_matrix_with_options_takes_the_entrys_shortcut(monkeypatch: pytest.MonkeyPatch) -> None:
    """One 2-D tensor whose options plan it as the default call (``workers=1``, an
    ``Options``, the default strategy forced) is served by the entry's shortcut
    (``solve_one_alike``) before any request is built, bitwise the plain call, its verdict
    remembered per options and size; options that change the plan, input with history,
    ``k`` and a bad option take the normal route (which raises the option's error on every
    call)."""
    from spectra.core.domain import InputError

    served = served_spy(monkeypatch, "solve_one_alike", _eigh)
    monkeypatch.setattr(_direct, "_ALIKE", {})
    runs = _count_pipeline(monkeypatch)
    for dtype in (torch.float64, torch.complex64):
        a = random_hermitian((), 8, dtype, seed=12)
        w0, v0 = spectra.eigh(a)
        values = spectra.eigvalsh(a)
        for opts in (
            {"workers": 1},
            {"options": spectra.Options(workers=1)},
            {"strategy": "torch", "symmetry_tol": 1e-9},
        ):
            served.clear()
            w, v = spectra.eigh(a, **opts)
            assert served == [True], opts
            assert torch.equal(w, w0) and torch.equal(v, v0), opts
            assert torch.equal(spectra.eigvalsh(a, **opts), values), opts
    assert runs == []
    # 2 dtypes x 3 option sets x eigenvectors or not
    assert len(_direct._ALIKE) == 12 and all(_direct._ALIKE.values())
    a = random_hermitian((), 8, torch.float64, seed=13)
    served.clear()
    spectra.eigh(a, verify=True)
    spectra.eigh(a, strategy="numpy")
    assert served == [False, False] and runs == [1, 1]  # plans of their own: the pipeline
    for _ in range(2):
        with pytest.raises(InputError, match="workers"):
            spectra.eigh(a, workers=0)
    assert served[-2:] == [False, False]
    served.clear()
    spectra.eigh(a, workers=1, k=2)  # k: the normal route (the direct path slices)
    tracked = a.clone().requires_grad_(True)
    w, _ = spectra.eigh(tracked, workers=1)
    assert served == [False]  # history: the full path, whose backward takes the options
    w.sum().backward()
    assert tracked.grad is not None


def test_options_keep_the_pipeline_for_input_with_history(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its backward takes the options (here the degenerate policy): the pipeline runs it."""
    runs = _count_pipeline(monkeypatch)
    a = random_hermitian((), 6, torch.float64, seed=9).requires_grad_(True)
    w, _ = spectra.eigh(a, degenerate="nan")
    assert runs == [1]
    w.sum().backward()
    assert a.grad is not None and torch.allclose(a.grad, torch.eye(6, dtype=torch.float64))


def test_repeated_options_are_validated_once_and_bad_ones_every_time() -> None:
    """A call that repeats its options (``workers=1`` in a loop) builds them once
    (``build_cached``); a value of another type is another key (``workers=True`` is
    refused on every call, never served as ``workers=1``); errors are not remembered; an
    unhashable value is built (and refused) every time; the planner's key is the values
    of ``planning()``."""
    from spectra.core._options import Options, build_cached
    from spectra.core.domain import InputError

    one = build_cached(None, {"workers": 1})
    assert build_cached(None, {"workers": 1}) is one
    assert one == Options(workers=1) and one.planning_key == tuple(one.planning().values())
    base = Options(strategy="torch")
    both = build_cached(base, {"workers": 1})
    assert both is build_cached(base, {"workers": 1}) and both.strategy == "torch"
    for _ in range(2):
        with pytest.raises(InputError, match="workers"):
            build_cached(None, {"workers": True})
        with pytest.raises(InputError, match="workers"):
            build_cached(None, {"workers": 0})
        with pytest.raises((InputError, TypeError)):
            build_cached(None, {"max_memory": [1]})
        with pytest.raises(TypeError, match="unknown option"):
            build_cached(None, {"wrokers": 1})
    a = random_hermitian((), 8, torch.float64, seed=3)
    with pytest.raises(InputError, match="workers"):
        spectra.eigh(a, workers=True)
    w, v = spectra.eigh(a, workers=1)
    assert torch.equal(w, spectra.eigh(a)[0]) and torch.equal(v, spectra.eigh(a)[1])
