"""spectra.eigh against the SciPy reference on random and adversarial batches."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra

from .helpers import DTYPES, projector_distance, random_hermitian, tol, with_spectrum


def _check_against_reference(a, w, v, b=None, k=None, largest=False):
    dtype = a.dtype
    t = tol(dtype)
    ref = spectra.reference(a, b, k=k, largest=largest)
    scale = (
        max(float(torch.linalg.matrix_norm(a.to(torch.complex128), ord=2).max()), 1e-300)
        if a.numel()
        else 1.0
    )
    assert w.dtype == (a.real.dtype if a.is_complex() else a.dtype)
    assert np.abs(w.numpy() - ref.eigenvalues).max(initial=0) <= t * scale
    metrics = spectra.validate(a, w, v, b)
    assert metrics.worst()["residual"] <= 10 * t
    assert metrics.worst()["orthogonality"] <= 10 * t


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 7, 33])
def test_random_batches(dtype, n):
    a = random_hermitian((2, 3), n, dtype, seed=n)
    w, v = spectra.eigh(a)
    assert w.shape == (2, 3, n) and v.shape == (2, 3, n, n) and v.dtype == dtype
    _check_against_reference(a, w, v)


@pytest.mark.parametrize("dtype", DTYPES)
def test_exactly_repeated_eigenvalues_give_the_reference_subspaces(dtype):
    w_true = torch.tensor([[1.0, 1.0, 1.0, 2.0, 5.0, 5.0]] * 4, dtype=torch.float64)
    a = with_spectrum(w_true, dtype, seed=3)
    w, v = spectra.eigh(a)
    ref = spectra.reference(a)
    t = tol(dtype)
    assert np.abs(w.numpy() - ref.eigenvalues).max() <= 10 * t
    for i in range(4):
        d = projector_distance(
            v[i].numpy().astype(np.complex128),
            ref.eigenvectors[i].astype(np.complex128),
            ref.eigenvalues[i],
            0.5,
        )
        assert d <= 100 * t


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_tight_clusters(dtype):
    base = torch.tensor([1.0, 1.0 + 1e-9, 1.0 + 2e-9, 3.0, 3.0 + 1e-12, 7.0], dtype=torch.float64)
    a = with_spectrum(base.repeat(5, 1), dtype, seed=4)
    w, v = spectra.eigh(a)
    _check_against_reference(a, w, v)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_values_spanning_sixteen_decades(dtype):
    base = torch.logspace(-8, 8, 12, dtype=torch.float64) * torch.tensor([1, -1] * 6)
    a = with_spectrum(base.repeat(3, 1), dtype, seed=5)
    w, v = spectra.eigh(a)
    _check_against_reference(a, w, v)


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_batch_and_empty_matrix(dtype):
    w, v = spectra.eigh(torch.zeros(0, 5, 5, dtype=dtype))
    assert w.shape == (0, 5) and v.shape == (0, 5, 5)
    w, v = spectra.eigh(torch.zeros(3, 0, 0, dtype=dtype))
    assert w.shape == (3, 0) and v.shape == (3, 0, 0)
    assert spectra.eigvalsh(np.zeros((2, 0, 4, 4))).shape == (2, 0, 4)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("keywords", [{}, {"lindep": 1e-6}], ids=["cholesky", "lindep"])
def test_pairs_of_empty_matrices(dtype, keywords):
    """Pairs of 0 x 0 matrices give the empty results of the standard problem (they raised
    a reshape error inside the generalized path), as SciPy's ``eigh(a, b)`` of one such
    pair gives an empty spectrum."""
    a = torch.zeros(3, 0, 0, dtype=dtype)
    w, v = spectra.eigh(a, a.clone(), **keywords)
    assert w.shape == (3, 0) and v.shape == (3, 0, 0) and not w.dtype.is_complex
    assert v.dtype == dtype
    assert spectra.eigvalsh(a, torch.zeros(0, 0, dtype=dtype), **keywords).shape == (3, 0)
    ref = scipy.linalg.eigh(np.zeros((0, 0)), np.zeros((0, 0)), eigvals_only=True)
    assert w[0].numpy().shape == ref.shape
    x = torch.zeros(2, 0, 0, dtype=dtype, requires_grad=True)
    w, v = spectra.eigh(x, torch.zeros(2, 0, 0, dtype=dtype), **keywords)
    (w.sum() + v.abs().sum()).backward()
    assert x.grad is not None and x.grad.shape == x.shape


def test_n_equals_one_and_a_single_matrix():
    w, v = spectra.eigh(torch.tensor([[-3.5]], dtype=torch.float64))
    assert w.item() == -3.5 and v.item() == 1.0
    a = random_hermitian((), 9, torch.float64, seed=7)
    w, v = spectra.eigh(a)
    _check_against_reference(a, w, v)


def test_numpy_in_numpy_out_and_integers_promote():
    a = np.array([[2, 1], [1, 2]])
    w, _v = spectra.eigh(a)
    assert isinstance(w, np.ndarray) and w.dtype == np.float64
    np.testing.assert_allclose(w, [1.0, 3.0], atol=1e-14)
    assert isinstance(spectra.eigvalsh(a.astype(np.float32)), np.ndarray)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("largest", [False, True])
def test_k_is_the_slice_of_the_full_result(dtype, largest):
    a = random_hermitian((4,), 10, dtype, seed=8)
    w_full, v_full = spectra.eigh(a)
    wv_full = spectra.eigvalsh(a)
    for k in (0, 1, 3, 10):
        w, v = spectra.eigh(a, k=k, largest=largest)
        sl = slice(10 - k, 10) if largest else slice(0, k)
        assert torch.equal(w, w_full[..., sl])
        assert torch.equal(v, v_full[..., sl])
        assert torch.equal(spectra.eigvalsh(a, k=k, largest=largest), wv_full[..., sl])
        _check_against_reference(a, w, v, k=k, largest=largest)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigvalsh_matches_eigh(dtype):
    a = random_hermitian((3,), 12, dtype, seed=9)
    torch.testing.assert_close(
        spectra.eigvalsh(a), spectra.eigh(a).eigenvalues, atol=tol(dtype) * 10, rtol=0
    )
