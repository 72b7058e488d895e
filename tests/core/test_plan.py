"""Plan, then execute: the planner's choices, chunking, threads and the explain text."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import spectra
from spectra.core import plan

from .helpers import patch_torch_strategy, pin_cpu_vendor, random_hermitian


def test_cpu_plan_fans_out_and_is_cached(monkeypatch):
    pin_cpu_vendor(monkeypatch, "GenuineIntel")  # torch's LAPACK (no vendor's claim)
    p = plan(64, 1024, torch.float64, "cpu", workers=2)
    assert p.strategy == "torch" and p.workers == 2 and p.n_chunks == 1
    assert plan(64, 1024, torch.float64, "cpu", workers=2) is p
    assert plan(64, 1, torch.float64, "cpu", workers=2).workers == 1
    assert plan(64, 1024, torch.float64, "cpu", workers=1).workers == 1
    assert "split across threads" in str(p) and "1024 matrices of 64x64 float64" in str(p)


def test_memory_budget_cuts_chunks():
    p = plan(32, 1000, torch.float64, "cpu", max_memory=64 * 32 * 32 * 8 * 4, strategy="torch")
    assert p.chunk_size <= 64 and p.n_chunks >= 16
    assert sum(stop - start for start, stop in p.chunks()) == 1000
    assert plan(32, 1000, torch.float64, "cpu", chunk_size=7).n_chunks == 143
    with pytest.raises(ValueError, match="chunk_size"):
        plan(32, 10, torch.float64, "cpu", chunk_size=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex128])
def test_chunked_equals_unchunked_exactly(dtype):
    a = random_hermitian((37,), 12, dtype, seed=1)
    w0, v0 = spectra.eigh(a)
    for kwargs in ({"chunk_size": 5}, {"max_memory": 3 * 4 * 12 * 12 * 16}, {"chunk_size": 1}):
        w, v = spectra.eigh(a, **kwargs)
        assert torch.equal(w, w0) and torch.equal(v, v0)


def test_thread_settings_are_restored():
    assert plan(32, 256, torch.float64, "cpu", workers=2).workers > 1  # really threaded
    before = torch.get_num_threads()
    spectra.eigh(random_hermitian((256,), 32, torch.float64), workers=2)
    assert torch.get_num_threads() == before


def test_worker_errors_reach_the_caller(monkeypatch):
    from spectra.core import _strategies

    def boom(*args, **kwargs):
        raise RuntimeError("worker failed")

    from spectra.core._solvers import _native

    monkeypatch.setattr(_strategies.torch.linalg, "eigh", boom)
    # torch's LAPACK call is the executor's separate step: the compiled fused pass (the
    # same routine, which reports failures instead of raising) is switched off
    monkeypatch.setattr(_native, "native_module", lambda: None)
    assert plan(32, 256, torch.float64, "cpu", strategy="torch", workers=2).workers > 1
    with pytest.raises(RuntimeError, match="worker failed"):
        spectra.eigh(random_hermitian((256,), 32, torch.float64), strategy="torch", workers=2)


def test_gradients_flow_through_the_threaded_path():
    assert plan(32, 256, torch.float64, "cpu", workers=2).workers > 1  # really threaded
    a = random_hermitian((256,), 32, torch.float64, seed=2).requires_grad_()
    w, _ = spectra.eigh(0.5 * (a + a.mT), workers=2)
    (g,) = torch.autograd.grad(w.sum(), a)
    torch.testing.assert_close(g, torch.eye(32, dtype=torch.float64).expand(256, 32, 32))


def test_verification_recomputes_broken_eigenvectors(monkeypatch):
    from spectra.core import STRATEGIES

    real = STRATEGIES["torch"].solve

    def broken(a, vectors):
        w, v = real(a, vectors)
        if v is not None:
            v = v.clone()
            v[1] = 1.0  # simulate cuSOLVER returning garbage vectors for one matrix
        return w, v

    patch_torch_strategy(monkeypatch, broken)
    a = random_hermitian((3,), 6, torch.complex64, seed=3)
    w, v = spectra.eigh(a, strategy="torch", verify=True, workers=1)
    assert spectra.validate(a, w, v).ok(1e-4)
    w, v = spectra.eigh(a, strategy="torch", verify=False, workers=1)
    assert not spectra.validate(a, w, v).ok(1e-4)


def test_numpy_input_can_be_solved_on_another_device_argument():
    a = np.stack([np.diag([3.0, 1.0, 2.0])] * 2)
    w, _v = spectra.eigh(a, device="cpu")
    assert isinstance(w, np.ndarray)
    np.testing.assert_allclose(w, [[1, 2, 3]] * 2)


@pytest.mark.cuda
def test_numpy_input_on_cuda_comes_back_as_numpy():
    a = random_hermitian((100,), 40, torch.float64, seed=4).numpy()
    w, _v = spectra.eigh(a, device="cuda")
    assert isinstance(w, np.ndarray)
    np.testing.assert_allclose(w, spectra.reference(a).eigenvalues, atol=1e-10 * 40)


def test_autotune_times_the_tunable_strategies_and_explains():
    p = plan(12, 64, torch.float64, "cpu", autotune=True, workers=2)
    tunable = {name for name, s in spectra.core.STRATEGIES.items() if "cpu" in s.runs.tunable_on}
    assert p.strategy in tunable and {"torch", "numpy"} <= tunable
    assert any("autotuned" in r for r in p.reasons)
    assert "scipy" not in " ".join(p.reasons)  # the slow reference is never a candidate
    a = random_hermitian((64,), 12, torch.float64, seed=5)
    w, v = spectra.eigh(a, autotune=True, workers=2)
    assert spectra.validate(a, w, v, reference=True).ok(1e-10)


def test_legacy_cuda_planning_stays_batched(monkeypatch):
    from spectra.core._pipeline import _plan

    monkeypatch.setattr(_plan, "cuda_batched_everywhere", lambda: False)
    monkeypatch.setattr(_plan, "autotune", lambda *a: ("cupy-syevj", (("cupy-syevj", 1.0),)))
    _plan._plan_cached.cache_clear()
    cuda = torch.device("cuda", 0)
    p = _plan._plan_cached(_plan.Ask(64, 1024, torch.float32, cuda))
    assert p.strategy == "cupy-syevj" and p.verify
    p = _plan._plan_cached(_plan.Ask(16, 1024, torch.float32, cuda))
    assert p.strategy == "torch"
    _plan._plan_cached.cache_clear()


def test_legacy_cuda_without_autotuning_takes_the_claims(monkeypatch):
    """Autotuning off on a torch that loops syevd for n > 32 on CUDA: the batched paths
    claim those sizes (``Runs.prefers``), CuPy's above spectra's Jacobi; n <= 32 stays."""
    from spectra.core._pipeline import _plan
    from spectra.core._strategies import _cupy

    monkeypatch.setattr(_plan, "cuda_batched_everywhere", lambda: False)
    monkeypatch.setattr(_cupy, "cuda_batched_everywhere", lambda: False)
    _plan._plan_cached.cache_clear()
    cuda = torch.device("cuda", 0)
    try:
        p = _plan._plan_cached(_plan.Ask(64, 1024, torch.float32, cuda, autotune=False))
        expected = "cupy-syevj" if _cupy.cupy_available() else "jacobi"
        assert p.strategy == expected and "stays batched" in p.reasons[0]
        small = _plan._plan_cached(_plan.Ask(32, 1024, torch.float32, cuda, autotune=False))
        assert small.strategy == "torch"
        fake_cupy = dataclasses.replace(
            spectra.core.STRATEGIES["cupy-syevj"],
            runs=dataclasses.replace(
                spectra.core.STRATEGIES["cupy-syevj"].runs, available=lambda: True
            ),
        )
        monkeypatch.setitem(spectra.core.STRATEGIES, "cupy-syevj", fake_cupy)  # a new version
        ask = _plan.Ask(64, 1024, torch.float32, cuda, autotune=False)
        p = _plan._plan_cached(ask, _plan.registry_version())
        assert p.strategy == "cupy-syevj"  # rank 1 beats the Jacobi's rank 0
    finally:
        _plan._plan_cached.cache_clear()


def test_the_chooser_asks_the_strategies_claims(monkeypatch):
    """A registered strategy that claims a problem (``Runs.prefers``) is the default there,
    from the batch size it claims it for; elsewhere the default stays."""
    from spectra.core import Claim, Runs, Strategy, register, unregister

    def claim(n, dtype, device, vectors):
        return Claim(f"demo claims n = {n}", min_batch=4, rank=5) if n == 7 else None

    torch_solve = spectra.core.STRATEGIES["torch"].solve
    register(Strategy("demo-claim", ("cpu",), torch_solve, "demo", runs=Runs(prefers=claim)))
    try:
        p = plan(7, 4, torch.float64, "cpu", workers=1)
        assert p.strategy == "demo-claim" and p.reasons[0] == "demo claims n = 7"
        small = plan(7, 3, torch.float64, "cpu", workers=1)
        assert small.strategy == "torch" and "3 < 4 matrices" in small.reasons[0]
        assert small.direct  # a claim from a larger batch on leaves small calls direct
        assert plan(8, 4, torch.float64, "cpu", workers=1).strategy != "demo-claim"
        a = random_hermitian((5,), 7, torch.float64, seed=3)
        w = spectra.eigvalsh(a)
        np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(a.numpy()), atol=1e-12)
    finally:
        unregister("demo-claim")
    assert plan(7, 4, torch.float64, "cpu", workers=1).strategy == "torch"


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex64, torch.complex128])
def test_results_are_bitwise_independent_of_position_in_the_batch(dtype):
    a = random_hermitian((23,), 7, dtype, seed=6)
    w, v = spectra.eigh(a)
    for start in range(0, 11):
        ws, vs = spectra.eigh(a[start:11])
        assert torch.equal(vs[-1], v[10]) and torch.equal(ws[-1], w[10])
    for i in (0, 10, 22):  # a single matrix runs in the caller's thread: same bits
        assert torch.equal(spectra.eigh(a[i]).eigenvectors, v[i])


def test_misaligned_numpy_memory_is_copied_not_crashed():
    buf = bytearray(8 + 16 * 9)
    arr = np.frombuffer(buf, np.complex128, offset=8).reshape(3, 3)
    arr[:] = np.diag([3.0, 1.0, 2.0])
    w, _ = spectra.eigh(arr)
    np.testing.assert_allclose(w, [1.0, 2.0, 3.0])


def test_autotune_times_what_execute_runs(monkeypatch):
    """The autotuner calls execute with the candidate's plan (its workers, its chunks)."""
    from spectra.core._pipeline import _autotune, _execute, _plan

    seen = []
    real = _execute.execute

    def spy(p, a, pre=None, post=None):
        seen.append((p.strategy, p.workers, p.n, a.shape[0]))
        return real(p, a, pre, post)

    monkeypatch.setattr(_execute, "execute", spy)
    _autotune.autotune.cache_clear()
    candidates = _plan._candidates(
        _plan.Ask(24, 256, torch.float64, torch.device("cpu"), workers=2)
    )
    best, timings = _autotune.autotune(candidates)
    _autotune.autotune.cache_clear()
    timed = {name for name, _ in timings}
    assert best in timed and {"torch", "numpy"} <= timed
    assert timed <= {s for s, *_ in seen}  # every timed strategy ran through execute
    # the sample is planned like the real call: the torch candidate fans out on 2 workers
    assert ("torch", 2, 24, 256) in seen


def test_a_plan_can_be_handed_back_to_eigh():
    a = random_hermitian((40,), 9, torch.float64, seed=7)
    p = plan(9, 40, torch.float64, "cpu", workers=1, chunk_size=7)
    w, v = spectra.eigh(a, plan=p)
    w0, v0 = spectra.eigh(a, chunk_size=7, workers=1)
    assert torch.equal(w, w0) and torch.equal(v, v0)
    torch.testing.assert_close(spectra.eigvalsh(a, plan=p), w0)
    # generalized problems use the same plan for each of their solves
    b = torch.eye(9, dtype=torch.float64).expand(40, 9, 9)
    torch.testing.assert_close(spectra.eigh(a, b, plan=p).eigenvalues, w0)
    with pytest.raises(spectra.InputError, match=r"plan does not match the input: n 9 \(input: 8"):
        spectra.eigh(a[:, :8, :8], plan=p)
    with pytest.raises(spectra.InputError, match=r"batch 40 \(input: 3\)"):
        spectra.eigh(a[:3], plan=p)
    with pytest.raises(spectra.InputError, match=r"dtype torch.float64 \(input: torch.float32\)"):
        spectra.eigh(a.float(), plan=p)
    with pytest.raises(TypeError, match="plan must be a spectra Plan"):
        spectra.eigh(a, plan="fast")
    with pytest.raises(spectra.InputError, match="ragged"):
        spectra.eigh([a[0], a[1, :3, :3]], plan=p)


def test_options_object_and_keywords_are_one_thing():
    a = random_hermitian((12,), 5, torch.float64, seed=8)
    opts = spectra.Options(chunk_size=5, workers=1)
    w, v = spectra.eigh(a, options=opts)
    w2, v2 = spectra.eigh(a, chunk_size=5, workers=1)
    assert torch.equal(w, w2) and torch.equal(v, v2)
    # keywords override the object's fields; unknown names are refused up front
    torch.testing.assert_close(spectra.eigvalsh(a, options=opts, chunk_size=2), w)
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['svd_solver'\]"):
        spectra.eigh(a, svd_solver="full")
    with pytest.raises(TypeError, match="options must be a spectra Options"):
        spectra.eigh(a, options={"workers": 1})


def test_register_refuses_a_taken_name_unless_replacing():
    from spectra.core import STRATEGIES, Runs, Strategy, register

    torch_strategy = STRATEGIES["torch"]
    with pytest.raises(ValueError, match="already registered"):
        register(torch_strategy)
    try:
        copy = Strategy(
            "torch-copy", ("cpu",), torch_strategy.solve, "a copy", runs=Runs(fan_out=True)
        )
        register(copy)
        assert register(copy, replace=True) is copy
        a = random_hermitian((4,), 6, torch.float64, seed=9)
        w, _ = spectra.eigh(a, strategy="torch-copy")
        torch.testing.assert_close(w, spectra.eigvalsh(a))
    finally:
        STRATEGIES.pop("torch-copy", None)


# ---- the one memory model (spectra.core._support._memory) ---------------------------------------


def test_rows_within_is_the_floor_of_the_budget_between_one_and_the_batch():
    from spectra.core.domain import matrix_bytes, rows_within

    for budget, per, batch in [(10_000, 333, 1000), (10**9, 7, 5), (1, 10, 3), (333, 333, 2)]:
        expected = max(1, min(batch, budget // per))
        assert rows_within(budget, per, batch) == expected
    assert rows_within(None, 10, 7) == 7 and rows_within(None, 10, 0) == 1
    assert rows_within(0, 10, 7) == 1  # one item over the budget is still solved
    # the planner's chunks are the model's rows for the chosen strategy's working set
    p = plan(16, 1000, torch.float64, "cpu", max_memory=50 * 16 * 16 * 8 * 4, strategy="torch")
    per = matrix_bytes(16, 8, spectra.core.STRATEGIES["torch"].cost.memory)
    assert p.bytes_per_matrix == per and p.chunk_size == rows_within(p.memory_budget, per, 1000)
    assert p.chunk_size < 50  # the eigenvalue rows count too


def test_memory_budget_is_the_core_option_or_half_the_free_memory():
    from spectra.core._support._memory import available_memory, default_budget
    from spectra.core.domain import memory_budget

    assert memory_budget(12345.7) == 12345 and memory_budget(0.5) == 1
    free = memory_budget(None)
    assert free == default_budget(torch.device("cpu")) and free % (64 << 20) == 0
    assert free <= max(64 << 20, available_memory(torch.device("cpu")))
    for bad in (0, -1, float("inf"), float("nan"), "lots", True):
        with pytest.raises(spectra.InputError, match="max_memory"):
            memory_budget(bad)


def test_tightbinding_chunks_from_the_core_budget_and_passes_it_on(monkeypatch):
    """The tight-binding ``max_memory`` is the core's option: its k-point chunks come from
    the core's model (``rows_within``), and each core call gets the same budget."""
    from spectra import tightbinding as tb
    from spectra.core._pipeline import _planned_direct, _solve
    from spectra.tightbinding import _bloch

    seen, chunks = [], []
    real_plan, real_chunk = _solve.plan, _bloch.solve_chunk

    def spy_plan(*args, **kwargs):
        seen.append(kwargs.get("max_memory"))
        return real_plan(*args, **kwargs)

    def spy_chunk(k, *args, **kwargs):
        chunks.append(len(k))
        return real_chunk(k, *args, **kwargs)

    monkeypatch.setattr(_solve, "plan", spy_plan)
    monkeypatch.setattr(_planned_direct, "plan", spy_plan)  # (a batch without the layers)
    monkeypatch.setattr(_bloch, "solve_chunk", spy_chunk)
    monkeypatch.setattr(_bloch, "FEW_ENTRIES", 0)  # (the few k-points' path: one call)
    model = tb.graphene()
    k = np.random.default_rng(0).random((300, 2))
    full = model.bands(k)
    assert chunks == [300] and None in seen  # the core's default budget: one chunk
    chunks.clear()
    seen.clear()
    budget = 20_000
    chunked = model.bands(k, max_memory=budget)
    np.testing.assert_array_equal(chunked, full)
    data = model.data()
    per_k = 16 * (data.rvecs.shape[0] + 2 + 4 * 4)
    assert chunks[0] == budget // per_k and sum(chunks) == 300
    assert seen and set(seen) == {budget}  # every core call got the same budget
