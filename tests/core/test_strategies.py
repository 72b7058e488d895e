"""Every registered strategy against the SciPy reference (opt_einsum's pattern)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import spectra
from spectra.core import STRATEGIES

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
