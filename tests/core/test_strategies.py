"""Every registered strategy against the SciPy reference (opt_einsum's pattern)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import spectra
from spectra.core import STRATEGIES, Cost, Strategy
from spectra.core._solvers._kernels._choice import KERNEL_MIN_BATCH, lane_min_batch
from spectra.core._solvers._native import native_module

from .helpers import DTYPES, pin_cpu_vendor, random_hermitian, served_size, tol

CPU_STRATEGIES = sorted(name for name, s in STRATEGIES.items() if s.supports(torch.device("cpu")))
CUDA_STRATEGIES = sorted(name for name, s in STRATEGIES.items() if "cuda" in s.devices)


def test_the_cpu_registry_has_the_documented_paths():
    assert {"torch", "numpy", "scipy"} <= set(CPU_STRATEGIES)


@pytest.mark.parametrize("strategy", CPU_STRATEGIES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_cpu_strategy_matches_reference(strategy, dtype):
    n = served_size(strategy, dtype, 9)  # a size the strategy solves itself
    a = random_hermitian((5,), n, dtype, seed=11)
    w, v = spectra.eigh(a, strategy=strategy)
    ref = spectra.reference(a)
    scale = float(np.abs(ref.eigenvalues).max())
    assert np.abs(w.numpy() - ref.eigenvalues).max() <= tol(dtype) * scale
    assert spectra.validate(a, w, v).ok(10 * tol(dtype))
    wv = spectra.eigvalsh(a, strategy=strategy)
    assert np.abs(wv.numpy() - ref.eigenvalues).max() <= tol(dtype) * scale
    # every strategy lands in the same gauge
    base = spectra.eigh(a, strategy="scipy")
    torch.testing.assert_close(v, base.eigenvectors, atol=1e3 * tol(dtype), rtol=0)


@pytest.mark.cuda
@pytest.mark.parametrize("strategy", CUDA_STRATEGIES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [8, 33, 64])
def test_cuda_strategy_matches_reference(strategy, dtype, n):
    if not STRATEGIES[strategy].supports(torch.device("cuda")):
        pytest.skip(f"{strategy} is not available here")
    a = random_hermitian((64,), n, dtype, seed=12)
    w, v = spectra.eigh(a.cuda(), strategy=strategy)
    assert w.device.type == "cuda" and v.dtype == dtype
    ref = spectra.reference(a)
    scale = float(np.abs(ref.eigenvalues).max())
    assert np.abs(w.cpu().numpy() - ref.eigenvalues).max() <= 10 * tol(dtype) * scale
    assert spectra.validate(a, w.cpu(), v.cpu()).ok(100 * tol(dtype))


def test_replacing_or_removing_a_strategy_replans(monkeypatch):
    """Plans are cached by strategy name: a replaced or removed strategy must not survive
    in any cache (the registry's version is part of every key)."""
    from spectra.core import register, unregister
    from spectra.core._strategies import registry_version

    def halve(a, vectors):
        w, v = torch.linalg.eigh(a.double())
        return (w / 2).to(a.real.dtype), (v.to(a.dtype) if vectors else None)

    a = random_hermitian((3,), 4, torch.float64, seed=1)
    register(Strategy("demo-halve", ("cpu",), halve, "eigh, halved", cost=Cost(memory=2.0)))
    try:
        p = spectra.plan(4, 3, torch.float64, strategy="demo-halve")
        assert p.bytes_per_matrix == int(2.0 * 16 * 8) + 2 * 4 * 8
        w = spectra.eigvalsh(a, strategy="demo-halve")
        torch.testing.assert_close(2 * w, spectra.eigvalsh(a))
        before = registry_version()

        def third(x, vectors):
            w3, v3 = halve(x, vectors)
            return 2 * w3 / 3, v3

        register(
            Strategy("demo-halve", ("cpu",), third, "eigh / 3", cost=Cost(memory=3.0)), replace=True
        )
        assert registry_version() > before
        p = spectra.plan(4, 3, torch.float64, strategy="demo-halve")
        assert p.bytes_per_matrix == int(3.0 * 16 * 8) + 2 * 4 * 8  # replanned
        torch.testing.assert_close(
            3 * spectra.eigvalsh(a, strategy="demo-halve"), spectra.eigvalsh(a)
        )
    finally:
        unregister("demo-halve")
    with pytest.raises(ValueError, match="unknown strategy 'demo-halve'"):
        spectra.plan(4, 3, torch.float64, strategy="demo-halve")  # no cached plan survives
    with pytest.raises(ValueError, match="not registered"):
        unregister("demo-halve")


def test_a_replaced_torch_strategy_is_used_by_small_calls_too(monkeypatch):
    calls = []
    original = STRATEGIES["torch"]

    def counted(a, vectors):
        calls.append(a.shape)
        return original.solve(a, vectors)

    import dataclasses

    monkeypatch.setitem(
        STRATEGIES,
        "torch",
        dataclasses.replace(
            original, solve=counted, abilities=dataclasses.replace(original.abilities, into=None)
        ),
    )
    a = random_hermitian((2,), 5, torch.float64, seed=2)
    spectra.eigh(a)  # a direct-path size: the replacement must still run
    assert calls, "the replaced torch strategy was bypassed"


# ---- the strategy record: groups, abilities, claims, the registry's version ------------


def test_a_strategy_is_four_things_and_three_groups():
    import dataclasses

    names = [f.name for f in dataclasses.fields(Strategy)]
    assert names == ["name", "devices", "solve", "description", "runs", "cost", "abilities"]


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_every_strategy_declares_what_it_serves_and_costs(strategy):
    s = STRATEGIES[strategy]
    cpu = torch.device("cpu")
    for dtype in DTYPES:
        assert isinstance(s.serves(8, dtype), bool)
        assert s.bytes_per_matrix(8, dtype) >= 8 * 8 * dtype.itemsize  # at least its input
        assert 0 < s.matrix_seconds(8, dtype, cpu) < 1e-2
        claim = s.runs.prefers(8, dtype, cpu, True)
        assert claim is None or (claim.reason and claim.min_batch >= 1)
    # only the lane kernels claim CPU problems, and only from a whole lane group; the
    # compiled closed form (real n <= 3) from one matrix
    claims = [s.runs.prefers(n, torch.float64, cpu, True) for n in range(1, 65)]
    compiled = s.name == "closed-form" and native_module() is not None
    if s.name in ("closed-form", "numba-jacobi", "numba-ql") and s.supports(cpu):
        lane_group = [
            c for n, c in enumerate(claims, 1) if c is not None and not (compiled and n <= 3)
        ]
        # from the batch where the lanes beat the direct path's LAPACK loop (closed form:
        # the lanes' floor, 32 matrices)
        expected = [
            KERNEL_MIN_BATCH if n <= 3 else lane_min_batch(n, False, True)
            for n, c in enumerate(claims, 1)
            if c is not None and not (compiled and n <= 3)
        ]
        assert any(claims) and [c.min_batch for c in lane_group] == expected
        assert all(c.min_batch >= KERNEL_MIN_BATCH for c in lane_group)
        if compiled:
            assert all(c is not None and c.min_batch == 1 for c in claims[:3])
    elif s.name == "twisted":  # float64 from its measured sizes, off Intel CPUs only
        from spectra.core._strategies import _openblas, _twisted

        lo, hi = _twisted.RANGES[torch.float64]
        assert not any(c for n, c in enumerate(claims, 1) if not lo <= n < hi)
        if _openblas.cpu_vendor() not in _twisted.NON_INTEL_X86:
            assert not any(claims)
    else:
        assert not any(claims)


def test_the_kernel_claims_cover_the_measured_table_without_overlap(monkeypatch):
    from spectra.core._strategies import preferred

    cpu = torch.device("cpu")
    if not STRATEGIES["numba-ql"].supports(cpu):
        pytest.skip("numba is not installed")
    # off Intel CPUs only ``openblas`` and ``twisted`` overlap (complex128 from n = 56),
    # and ``twisted`` is ranked above: it takes them
    pin_cpu_vendor(monkeypatch, "AuthenticAMD")
    monkeypatch.setenv("SPECTRA_KERNELS", "eager")
    for n in (56, 64):
        owners = [
            name
            for name, s in STRATEGIES.items()
            if s.supports(cpu) and s.runs.prefers(n, torch.complex128, cpu, True) is not None
        ]
        assert sorted(owners) == (["openblas", "twisted"] if "twisted" in owners else ["openblas"])
        if "twisted" in owners:
            assert preferred(n, torch.complex128, cpu, True, 1 << 12)[0] == "twisted"
    monkeypatch.delenv("SPECTRA_KERNELS")
    pin_cpu_vendor(monkeypatch, "GenuineIntel")  # the lane kernels' table, vendor aside
    for dtype in (torch.float64, torch.complex128):
        for vectors in (True, False):
            for n in range(1, 65):
                owners = [
                    name
                    for name, s in STRATEGIES.items()
                    if s.runs.prefers(n, dtype, cpu, vectors) is not None
                ]
                assert len(owners) <= 1, (n, dtype, owners)
    expected = {
        2: "closed-form",
        3: "closed-form",
        4: "numba-jacobi",
        8: "numba-ql",
        32: "numba-ql",
    }
    for n, name in expected.items():
        least = KERNEL_MIN_BATCH if n <= 3 else lane_min_batch(n, False, True)
        assert preferred(n, torch.float64, cpu, True, least)[0] == name
        if n > 3 or native_module() is None:  # (the compiled closed form: from one)
            assert preferred(n, torch.float64, cpu, True, least - 1) is None  # LAPACK's
        else:
            assert preferred(n, torch.float64, cpu, True, 1)[0] == "closed-form"
    assert preferred(32, torch.float64, cpu, False, 64) is None  # eigenvalues only: to 28
    # complex 3x3: the compiled closed form at every batch size where it is built
    complex3 = "closed-form" if native_module() is not None else "numba-ql"
    assert preferred(3, torch.complex128, cpu, True, 64)[0] == complex3
    assert preferred(4, torch.complex128, cpu, True, 64) is None  # the direct path's LAPACK
    assert preferred(4, torch.complex128, cpu, True, 1 << 12)[0] == "numba-ql"
    assert preferred(33, torch.float64, cpu, True, 1 << 12) is None


class _Spy:
    """A per-block check that may be fused (it names its tolerance): records its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, block, offset):
        self.calls += 1

    def tolerance(self, dtype):
        return 1e-8


def test_input_check_fuses_only_a_fusable_check_and_defers_on_doubt():
    from spectra.core import Abilities
    from spectra.core._strategies import FusableCheck

    seen = []

    def fused(a, tol):
        seen.append(tol)
        return bool(a.sum() > 0)  # "sure" for positive blocks only

    s = Strategy(
        "demo-fused", ("cpu",), STRATEGIES["torch"].solve, "d", abilities=Abilities(check=fused)
    )
    spy = _Spy()
    assert isinstance(spy, FusableCheck)
    check = s.input_check(spy)
    assert check(torch.ones(2, 3, 3), 0) is True and spy.calls == 0 and seen == [1e-8]
    assert check(-torch.ones(2, 3, 3), 0) is False and spy.calls == 1  # doubt: pre decides
    plain = []
    check = s.input_check(lambda block, offset: plain.append(offset))  # not fusable
    assert check(torch.ones(2, 3, 3), 7) is False and plain == [7] and len(seen) == 2
    assert s.input_check(None) is None
    no_fused = Strategy("demo-plain", ("cpu",), STRATEGIES["torch"].solve, "d")
    assert no_fused.input_check(spy)(torch.ones(1, 2, 2), 0) is False and spy.calls == 2


def test_the_executor_uses_the_abilities_it_is_offered(monkeypatch):
    """``into`` writes the executor's outputs (no ``solve`` call on the chunked path), the
    fused check stands in for the standard one, ``gauged`` skips the gauge pass."""
    from spectra.core import Abilities, Runs, register, unregister
    from spectra.core._pipeline._checks import BlockCheck
    from spectra.core._pipeline._execute import execute
    from spectra.core._solvers._torch_lapack import torch_eigh_into

    calls = {"solve": 0, "into": 0, "check": 0, "post": 0}

    def solve(a, vectors):
        calls["solve"] += 1
        return STRATEGIES["torch"].solve(a, vectors)

    def into(a, w, v):
        calls["into"] += 1
        torch_eigh_into(a, w, v)

    def check(a, tol):
        calls["check"] += 1
        return True

    def post(v):
        calls["post"] += 1
        return v

    a = random_hermitian((12,), 6, torch.float64, seed=4)
    for gauged in (False, True):
        abilities = Abilities(into=into, check=check, gauged=gauged)
        register(
            Strategy(
                "demo-into", ("cpu",), solve, "d", runs=Runs(fan_out=True), abilities=abilities
            )
        )
        try:
            p = spectra.plan(6, 12, torch.float64, strategy="demo-into", chunk_size=4, workers=1)
            calls.update(dict.fromkeys(calls, 0))
            w, v = execute(p, a, BlockCheck(), post)
            assert calls == {"solve": 0, "into": 3, "check": 3, "post": 0 if gauged else 3}
            np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(a.numpy()), atol=1e-12)
            assert spectra.validate(a, w, v).ok(1e-10)
        finally:
            unregister("demo-into")


def test_autotune_sees_a_registered_and_an_unregistered_strategy():
    from spectra.core import Runs, register, unregister

    torch_solve = STRATEGIES["torch"].solve
    register(Strategy("demo-tuned", ("cpu",), torch_solve, "d", runs=Runs(tunable_on=("cpu",))))
    try:
        p = spectra.plan(6, 16, torch.float64, autotune=True, workers=1)
        assert "demo-tuned" in p.reasons[0]
        w = spectra.eigvalsh(random_hermitian((16,), 6, torch.float64, seed=2), autotune=True)
        assert w.shape == (16, 6)
    finally:
        unregister("demo-tuned")
    p = spectra.plan(6, 16, torch.float64, autotune=True, workers=1)
    assert "demo-tuned" not in p.reasons[0] and p.strategy != "demo-tuned"
    with pytest.raises(ValueError, match="unknown strategy 'demo-tuned'"):
        spectra.eigvalsh(random_hermitian((16,), 6, torch.float64, seed=2), strategy="demo-tuned")
