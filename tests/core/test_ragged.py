"""Ragged lists: matrices of different sizes, bucketed and padded, stripped exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import spectra
from spectra.core._pipeline._ragged import choose_buckets

from .helpers import random_hermitian, tol


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex128])
def test_ragged_sizes_1_to_40_match_the_reference(dtype):
    sizes = [1, 40, 3, 2, 17, 16, 39, 5, 1, 8, 33, 12]
    mats = [random_hermitian((), n, dtype, seed=n) for n in sizes]
    w, v = spectra.eigh(mats)
    ref = spectra.reference(mats)
    assert isinstance(w, list) and len(w) == len(sizes)
    for i, n in enumerate(sizes):
        assert w[i].shape == (n,) and v[i].shape == (n, n) and v[i].dtype == dtype
        scale = max(1.0, float(np.abs(ref.eigenvalues[i]).max()))
        assert np.abs(w[i].numpy() - ref.eigenvalues[i]).max() <= tol(dtype) * scale * 10
        single = spectra.eigh(mats[i])
        torch.testing.assert_close(w[i], single.eigenvalues, atol=tol(dtype) * scale * 10, rtol=0)
        torch.testing.assert_close(v[i], single.eigenvectors, atol=tol(dtype) * 1e3, rtol=0)


def test_ragged_numpy_k_and_generalized():
    sizes = [3, 5, 4]
    mats = [random_hermitian((), n, torch.float64, seed=n).numpy() for n in sizes]
    bs = [np.eye(n) * 2.0 for n in sizes]
    w, _v = spectra.eigh(mats, bs, k=2, largest=True)
    for i in range(3):
        ref = spectra.reference(mats[i], bs[i], k=2, largest=True)
        assert isinstance(w[i], np.ndarray)
        np.testing.assert_allclose(w[i], ref.eigenvalues, atol=1e-12)


def test_ragged_errors_name_the_item():
    mats = [np.eye(2), np.array([[1.0, 2.0], [0.0, 1.0]])]
    with pytest.raises(ValueError, match=r"a\[1\] is not symmetric"):
        spectra.eigh(mats)
    with pytest.raises(ValueError, match=r"for a\[0\]"):
        spectra.eigh([np.eye(2), np.eye(3)], k=3)


def test_buckets_cost_model_and_legacy_cuda_boundary(monkeypatch):
    cpu = torch.device("cpu")
    assert choose_buckets([5, 5, 5], cpu) == [5]
    assert choose_buckets([10, 11, 12], cpu) == [12]  # padding is cheaper than 3 calls
    many = [40] * 5000 + [10] * 5000
    assert choose_buckets(many, cpu) == [10, 40]  # padding 5000 matrices 10 -> 40 is not
    from spectra.core._pipeline import _ragged

    monkeypatch.setattr(_ragged, "cuda_batched_everywhere", lambda: False)
    assert choose_buckets([31, 32, 33], torch.device("cuda")) == [32, 33]
    assert choose_buckets([31, 32, 33], cpu) == [33]


def test_symmetric_inf_in_a_ragged_list_is_named():
    mats = [np.eye(2), np.eye(3), np.eye(3)]
    mats[2][1, 1] = np.inf
    with pytest.raises(ValueError, match=r"a\[2\] contains NaN or Inf"):
        spectra.eigh(mats)
