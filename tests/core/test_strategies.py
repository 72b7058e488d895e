"""Every registered strategy against the SciPy reference (opt_einsum's pattern)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import spectra
from spectra.core import STRATEGIES, Cost, Strategy

from .helpers import DTYPES, random_hermitian, served_size, tol

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
