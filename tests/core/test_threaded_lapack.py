"""One matrix of ``n >= threaded_from`` on a single worker runs torch's LAPACK on the
caller's kernel threads, as ``torch.linalg.eigh`` does (``_torch_lapack.threaded_from``:
from n = 50 real, 48 complex, with eigenvectors; measured 1.1-1.56x faster on two threads
than on one, ``benchmarks/results/threaded-lapack-2026-12-05.json``). Below it, and in every
fan-out, each solve has one kernel thread. Asserted here: the plan says which, no thread
count is set on the threaded route, the C++ entry takes such a size as threaded, the
results are torch's own call's bits at the caller's settings, the same call after call,
within tolerance of the fanned-out batch (bitwise under one caller thread), and every
thread count is left as found."""

from __future__ import annotations

from typing import Any

import pytest
import scipy.linalg
import torch

import spectra
from spectra.core._pipeline import _direct
from spectra.core._solvers import _native
from spectra.core._solvers._torch_lapack import THREADED_FROM, one_kernel_thread, threaded_from
from spectra.core._strategies import registry_version
from spectra.core._support._threads import thread_knobs

from .helpers import (
    DTYPES,
    batch_that_fans_out,
    bitwise_threads,
    pin_cpu_vendor,
    random_hermitian,
    tol,
)


def test_the_measured_sizes() -> None:
    assert [threaded_from(d, True) for d in DTYPES] == [50, 50, 48, 48]
    # eigenvalues only: real ones never gained below 256, complex64 from 128
    assert [threaded_from(d, False) for d in DTYPES] == [256, 256, 128, 48]
    assert set(THREADED_FROM.values()) <= set(range(32, 256))
    assert not one_kernel_thread(25, torch.float64, True)  # sequential LAPACK: no setting
    # from 26 MKL's divide and conquer opens an OpenMP region: one kernel thread is set
    assert one_kernel_thread(26, torch.float64, True) and one_kernel_thread(31, torch.float32, True)
    assert one_kernel_thread(32, torch.float64, True) and one_kernel_thread(49, torch.float64, True)
    assert not one_kernel_thread(50, torch.float64, True)
    assert one_kernel_thread(100, torch.float64, False)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_plan_says_threaded_from_the_measured_size(
    dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    pin_cpu_vendor(monkeypatch, "AuthenticAMD")  # off Intel too: one matrix is torch's
    n = threaded_from(dtype, True)
    at = spectra.plan(n, 1, dtype)
    assert at.strategy == "torch" and at.direct and not at.single_threaded, str(at)
    assert f"n >= {n}: threaded LAPACK inside the one call" in at.reasons
    below = spectra.plan(n - 1, 1, dtype)
    assert below.single_threaded and "one kernel thread per solve" in below.reasons
    fanned = spectra.plan(n, 64, dtype, workers=2)
    assert fanned.workers == 2 and fanned.single_threaded  # a fan-out: one per worker
    values = spectra.plan(n, 1, dtype, vectors=False)
    assert values.single_threaded == (n < threaded_from(dtype, False))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_one_matrix_keeps_the_callers_kernel_threads(
    dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = threaded_from(dtype, True) + 3
    a = random_hermitian((), n, dtype, seed=n)
    _native.native_module()  # loaded first (its one-time agreement test runs on one thread)
    set_to: list[int] = []
    for module in (_direct, _native):
        real = module.set_thread_kernel_threads
        monkeypatch.setattr(
            module, "set_thread_kernel_threads", lambda c, real=real: set_to.append(c) or real(c)
        )
    knobs = thread_knobs()
    before = (torch.get_num_threads(), knobs.omp_get() if knobs.omp_get else None)
    _native.reset_entry_routes()
    first = spectra.eigh(a)  # the Python route (it marks the size for the C++ entry)
    assert set_to == []  # no kernel thread count set: the caller's
    if _direct._entry(registry_version())[0] is not None:
        kind = {torch.float32: 0, torch.float64: 1, torch.complex64: 2, torch.complex128: 3}
        assert _native._ROUTES[(kind[dtype] * 2 + 1) * 256 + n] == 2  # taken as threaded
    again = spectra.eigh(a)  # the C++ entry where built
    assert torch.equal(first.eigenvalues, again.eigenvalues)
    assert torch.equal(first.eigenvectors, again.eigenvectors)
    # torch's own call at the same settings: the same LAPACK call, so the same eigenvalues
    assert torch.equal(first.eigenvalues, torch.linalg.eigh(a).eigenvalues)
    assert (torch.get_num_threads(), knobs.omp_get() if knobs.omp_get else None) == before
    # against SciPy, to the dtype's rounding
    ref = scipy.linalg.eigh(a.to(torch.complex128).numpy(), eigvals_only=True)
    scale = max(1.0, float(abs(ref).max()))
    assert float(abs(first.eigenvalues.double().numpy() - ref).max()) < tol(dtype) * scale


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_fanned_out_batch_agrees_and_is_bitwise_on_one_caller_thread(
    dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    # torch's LAPACK for the batch (off Intel CPUs the vendor strategies may claim it:
    # another algorithm, within tolerance of this one: tests/core/test_twisted.py)
    pin_cpu_vendor(monkeypatch, "GenuineIntel")
    n = threaded_from(dtype, True)
    size = batch_that_fans_out("torch", n, dtype, start=8)
    fanned = spectra.plan(n, size, dtype, workers=2)
    assert fanned.workers == 2 and fanned.single_threaded, str(fanned)
    a = random_hermitian((size,), n, dtype, seed=5)
    batch = spectra.eigh(a, workers=2)
    one = spectra.eigh(a[4])  # threaded LAPACK: within tolerance of the fan-out's
    scale = float(batch.eigenvalues.abs().max())
    assert float((one.eigenvalues - batch.eigenvalues[4]).abs().max()) <= 20 * tol(dtype) * scale
    overlap = (one.eigenvectors.mH @ batch.eigenvectors[4]).abs().diagonal()
    limit = 1e-3 if dtype in (torch.float32, torch.complex64) else 1e-8
    assert float((overlap - 1).abs().max()) < limit
    with bitwise_threads(n, dtype):  # one caller thread: the fan-out's bits
        alone = spectra.eigh(a[4])
        assert torch.equal(alone.eigenvalues, batch.eigenvalues[4])
        assert torch.equal(alone.eigenvectors, batch.eigenvectors[4])


def test_forward_and_backward_on_the_callers_threads() -> None:
    """A tracked real matrix (torch's own node) and a complex one (the light node) of a
    threaded size, alone and as a batch of one: the same gradients to rounding."""
    for dtype in (torch.float64, torch.complex128):
        n = threaded_from(dtype, True) + 1
        base = random_hermitian((), n, dtype, seed=2)
        grads = []
        for batched in (False, True):
            x = base.clone().requires_grad_(True)
            w, v = spectra.eigh(x[None] if batched else x)  # the direct path, the pipeline
            w, v = (w[0], v[0]) if batched else (w, v)
            (w[:3].sum() + (v[:, :2].abs() ** 2 * torch.arange(float(n))[:, None]).sum()).backward()
            assert x.grad is not None
            grads.append(x.grad)
        torch.testing.assert_close(grads[0], grads[1], rtol=0, atol=1e-9)


def _threads_lapack_sees(monkeypatch: pytest.MonkeyPatch, call: Any) -> set[int]:
    """The OpenMP thread counts ``torch.linalg.eigh`` ran with during ``call()``, on the
    executor's separate steps (the compiled helper switched off)."""
    knobs = thread_knobs()
    if knobs.omp_get is None:
        pytest.skip("no per-thread OpenMP knob in this torch")
    seen: set[int] = set()
    eigh = torch.linalg.eigh

    def spy(x, *args, **kw):  # type: ignore[no-untyped-def]
        seen.add(int(knobs.omp_get()))
        return eigh(x, *args, **kw)

    with monkeypatch.context() as m:
        m.setattr(_native, "native_module", lambda: None)
        m.setattr(torch.linalg, "eigh", spy)
        call()
    return seen


def test_the_executor_runs_the_plans_kernel_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A single-worker plan of a threaded size runs LAPACK on the caller's threads, also
    inside the core's own one-thread setting around the pipeline; below that size, in a
    fan-out, and inside a domain's one-thread block (the caller asked for one) on one."""
    from spectra.core.domain import caller_kernel_threads

    pin_cpu_vendor(monkeypatch, "GenuineIntel")
    caller = torch.get_num_threads()
    a = random_hermitian((3,), 64, torch.float64, seed=1)
    assert not spectra.plan(64, 3, torch.float64, workers=1).single_threaded
    assert _threads_lapack_sees(monkeypatch, lambda: spectra.eigh(a, workers=1)) == {caller}
    small = random_hermitian((3,), 40, torch.float64, seed=2)
    assert _threads_lapack_sees(monkeypatch, lambda: spectra.eigh(small, workers=1)) == {1}

    def in_domain() -> None:
        with caller_kernel_threads(torch.empty(0, 8, 8), None):
            spectra.eigh(a, workers=1)

    assert _threads_lapack_sees(monkeypatch, in_domain) == {1}
    size = batch_that_fans_out("torch", 64, torch.float64, start=8)
    big = random_hermitian((size,), 64, torch.float64, seed=3)
    assert _threads_lapack_sees(monkeypatch, lambda: spectra.eigh(big, workers=2)) == {1}
    assert torch.get_num_threads() == caller
