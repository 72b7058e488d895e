"""The generalized problem A v = w B v against scipy.linalg.eigh(a, b)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import spectra

from .helpers import DTYPES, random_hermitian, tol, with_spectrum


def _spd(batch, n, dtype, cond, seed):
    w = torch.logspace(0, np.log10(cond), n, dtype=torch.float64).repeat(*batch, 1)
    return with_spectrum(w, dtype, seed=seed)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cond", [1e1, 1e6])
def test_generalized_against_scipy(dtype, cond):
    if dtype in (torch.float32, torch.complex64) and cond > 1e3:
        pytest.skip("a condition number of 1e6 is beyond single precision")
    a = random_hermitian((2, 3), 8, dtype, seed=1)
    b = _spd((2, 3), 8, dtype, cond, seed=2)
    w, v = spectra.eigh(a, b)
    ref = spectra.reference(a, b)
    scale = float(np.abs(ref.eigenvalues).max())
    assert np.abs(w.numpy() - ref.eigenvalues).max() <= tol(dtype) * scale * (
        10 if cond > 10 else 1
    )
    m = spectra.validate(a, w, v, b)
    assert m.worst()["orthogonality"] <= 100 * tol(dtype) * (cond if cond > 10 else 1) ** 0.5


def test_b_broadcasts_over_the_batch_of_a():
    a = random_hermitian((5,), 6, torch.float64, seed=3)
    b = _spd((), 6, torch.float64, 10.0, seed=4)
    w, _ = spectra.eigh(a, b)
    ref = spectra.reference(a, b.expand(5, 6, 6))
    np.testing.assert_allclose(w.numpy(), ref.eigenvalues, atol=1e-12)


def test_canonical_orthogonalization_equals_cholesky_when_nothing_is_dropped():
    a = random_hermitian((3,), 7, torch.complex128, seed=5)
    b = _spd((3,), 7, torch.complex128, 100.0, seed=6)
    w1, v1 = spectra.eigh(a, b)
    w2, v2 = spectra.eigh(a, b, lindep=1e-6)
    torch.testing.assert_close(w1, w2, atol=1e-11, rtol=0)
    torch.testing.assert_close(v1, v2, atol=1e-9, rtol=0)


def test_canonical_orthogonalization_drops_the_near_null_space():
    n = 6
    s = torch.tensor(
        [[1e-12, 1e-9, 0.5, 1.0, 2.0, 3.0], [1e-3, 0.1, 0.5, 1.0, 2.0, 3.0]], dtype=torch.float64
    )
    b = with_spectrum(s, torch.float64, seed=7)
    a = random_hermitian((2,), n, torch.float64, seed=8)
    w, v = spectra.eigh(a, b, lindep=1e-6, lindep_fill=1e30)
    assert (w[0, 4:] == 1e30).all() and (v[0, :, 4:] == 0).all()
    assert (w[1] < 1e30).all()
    # reference: solve in the kept eigenspace of b by hand with scipy
    import scipy.linalg

    for i, kept in ((0, 4), (1, 6)):
        sv, u = scipy.linalg.eigh(b[i].numpy())
        x = u[:, n - kept :] / np.sqrt(sv[n - kept :])
        ref = scipy.linalg.eigh(x.T @ a[i].numpy() @ x, eigvals_only=True)
        np.testing.assert_allclose(w[i, :kept].numpy(), ref, atol=1e-9)
    largest = spectra.eigh(a, b, lindep=1e-6, k=2, largest=True).eigenvalues
    torch.testing.assert_close(largest[0], w[0, 2:4])
    torch.testing.assert_close(largest[1], w[1, 4:6])


def test_not_positive_definite_b_names_the_indices():
    a = random_hermitian((2, 2), 4, torch.float64, seed=9)
    b = torch.eye(4, dtype=torch.float64).repeat(2, 2, 1, 1)
    b[1, 0, 2, 2] = -1.0
    with pytest.raises(spectra.LinAlgError, match=r"\(1, 0\)") as info:
        spectra.eigh(a, b)
    assert info.value.indices == [(1, 0)]
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128, torch.float32])
def test_fanned_generalized_pipeline_is_bitwise_the_serial_one(monkeypatch, dtype):
    """From a batch that fans out, the whole reduction runs inside the workers (issue 26):
    the same numbers as the serial path, and a non-positive-definite ``b`` still named."""
    from spectra.core._pipeline import _solve

    n, batch = 24, 256
    assert spectra.plan(n, batch, dtype, workers=2).workers == 2
    a = random_hermitian((batch,), n, dtype, seed=3)
    x = random_hermitian((batch,), n, dtype, seed=4)
    b = x @ x.mH + n * torch.eye(n, dtype=dtype)
    calls = []
    real = _solve._cholesky_fanned
    monkeypatch.setattr(_solve, "_cholesky_fanned", lambda *args: calls.append(1) or real(*args))
    w, v = spectra.eigh(a, b, workers=2)
    assert calls and real(a, b, True, spectra.Options(workers=2)) is not None  # it fanned
    ws, vs = spectra.eigh(a, b, workers=1)  # serial: the reduction in the caller's thread
    assert real(a, b, True, spectra.Options(workers=1)) is None
    assert torch.equal(w, ws) and torch.equal(v, vs)
    assert torch.equal(spectra.eigvalsh(a, b, workers=2), spectra.eigvalsh(a, b, workers=1))
    bad = b.clone()
    bad[7] = -bad[7]
    bad[200] = -bad[200]
    with pytest.raises(spectra.LinAlgError, match="not positive definite") as info:
        spectra.eigh(a, bad, workers=2)
    assert info.value.indices == [(7,), (200,)]
