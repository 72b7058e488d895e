"""Inputs for the distributed tests: Hermitian batches, SPD batches, tolerances."""

from __future__ import annotations

import numpy as np

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def tol(dtype) -> float:
    return 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def hermitian(shape, n, dtype, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((*shape, n, n))
    if np.issubdtype(np.dtype(dtype), np.complexfloating):
        x = x + 1j * rng.standard_normal((*shape, n, n))
    return (0.5 * (x + np.conj(np.swapaxes(x, -1, -2)))).astype(dtype)


def positive_definite(shape, n, dtype, seed=1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((*shape, n, n))
    if np.issubdtype(np.dtype(dtype), np.complexfloating):
        x = x + 1j * rng.standard_normal((*shape, n, n))
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)


def assert_same(got, want) -> None:
    """Element-for-element equality (same dtype, same bits), NaN-free."""
    assert type(got) is type(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want, strict=True)


def assert_same_pairs(w, v, ref) -> None:
    """The core's result on the whole array, element for element (same bits), real and
    complex alike: the core's results do not depend on how the batch is blocked."""
    assert_same(w, ref.eigenvalues)
    assert_same(v, ref.eigenvectors)
