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
    """The core's result on the whole array, element for element.

    Eigenvalues and real eigenvectors must be bit-identical. Complex eigenvectors are
    held to 4 ulp: the core's complex gauge multiply (torch's vectorized complex mul)
    rounds differently depending on a matrix's position inside a solved slice, which a
    blocking changes (see ``test_complex_gauge_is_bitwise_position_invariant``).
    """
    assert_same(w, ref.eigenvalues)
    if not np.iscomplexobj(v):
        assert_same(v, ref.eigenvectors)
        return
    want = ref.eigenvectors
    assert type(v) is type(want) and v.dtype == want.dtype and v.shape == want.shape
    eps = np.finfo(v.real.dtype).eps
    assert np.all(np.abs(v - want) <= 4 * eps * np.maximum(np.abs(want), eps))
