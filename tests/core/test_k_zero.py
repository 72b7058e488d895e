"""``k = 0`` returns the empty slice of the full decomposition on every dense route."""

from __future__ import annotations

import pytest
import torch

import spectra


@pytest.mark.parametrize("strategy", [None, "torch", "numpy", "lapack-subset"])
@pytest.mark.parametrize("largest", [False, True])
def test_k_zero_is_the_empty_slice(strategy: str | None, largest: bool) -> None:
    a = torch.randn(4, 3, 3, dtype=torch.float64)
    a = a + a.mT
    options = spectra.Options(strategy=strategy) if strategy else None
    w, v = spectra.eigh(a, k=0, largest=largest, options=options)
    assert w.shape == (4, 0) and v.shape == (4, 3, 0)
    assert spectra.eigvalsh(a, k=0, largest=largest, options=options).shape == (4, 0)
    big = torch.randn(2, 300, 300, dtype=torch.float64)
    w, v = spectra.eigh(big + big.mT, k=0, options=options)  # where a partial solve would run
    assert w.shape == (2, 0) and v.shape == (2, 300, 0)
