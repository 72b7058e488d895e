"""Bad input gets a clear error naming what is wrong and where."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import spectra


def test_non_square_and_mismatched_shapes():
    with pytest.raises(ValueError, match=r"shape \(\.\.\., n, n\).*\(3, 4\)"):
        spectra.eigh(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="shape"):
        spectra.eigh(np.zeros(5))
    with pytest.raises(ValueError, match="same matrix size"):
        spectra.eigh(np.eye(3), np.eye(4))
    with pytest.raises(ValueError, match="do not broadcast"):
        spectra.eigh(np.stack([np.eye(3)] * 2), np.stack([np.eye(3)] * 3))


def test_nan_and_inf_name_the_batch_indices():
    a = np.stack([np.eye(3)] * 6).reshape(2, 3, 3, 3)
    a[1, 2, 0, 0] = np.nan
    a[0, 1, 2, 1] = a[0, 1, 1, 2] = np.inf
    with pytest.raises(ValueError, match=r"NaN or Inf.*\[\(0, 1\), \(1, 2\)\]"):
        spectra.eigh(a)
    b = np.stack([np.eye(3)] * 6).reshape(2, 3, 3, 3)
    b[0, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match=r"^b contains NaN"):
        spectra.eigh(np.eye(3), b)


def test_non_symmetric_beyond_tolerance_names_indices():
    a = torch.eye(4, dtype=torch.float64).repeat(3, 1, 1)
    a[2, 0, 1] = 0.5
    with pytest.raises(ValueError, match=r"not symmetric.*\[2\]"):
        spectra.eigh(a)
    a[2, 0, 1] = 1e-12  # round-off level asymmetry passes
    spectra.eigh(a)
    c = torch.eye(2, dtype=torch.complex128)
    c[0, 1] = 1j
    c[1, 0] = 1j  # symmetric but not Hermitian
    with pytest.raises(ValueError, match="not Hermitian"):
        spectra.eigh(c)
    a[2, 0, 1] = 0.5
    spectra.eigh(a, check=False)  # the caller's choice: lower triangle used


def test_bad_k_dtype_and_type():
    with pytest.raises(ValueError, match=r"k must be an integer in \[0, n=3\]"):
        spectra.eigh(np.eye(3), k=4)
    with pytest.raises(ValueError, match="k must be"):
        spectra.eigh(np.eye(3), k=-1)
    with pytest.raises(TypeError, match=r"expected a torch\.Tensor or numpy\.ndarray"):
        spectra.eigh("not a matrix")
    with pytest.raises(ValueError, match="unknown strategy"):
        spectra.eigh(np.eye(3), strategy="magic")


def test_symmetric_inf_alone_is_still_named():
    a = np.stack([np.eye(3)] * 8)
    a[5, 0, 0] = np.inf
    with pytest.raises(ValueError, match=r"NaN or Inf.*\[5\]"):
        spectra.eigh(a, workers=2)
    with pytest.raises(ValueError, match=r"NaN or Inf.*\[5\]"):
        spectra.eigvalsh(a, workers=2)


def test_bad_matrices_in_different_worker_parts_are_all_named():
    assert spectra.plan(32, 64, torch.float64, "cpu", workers=2).workers > 1  # 2 parts
    a = np.stack([np.eye(32)] * 64)
    a[1, 0, 2] = 0.5
    a[63, 1, 0] = 0.5
    with pytest.raises(ValueError, match=r"not symmetric.*\[1, 63\]"):
        spectra.eigh(a, workers=2)
