"""The public surfaces: spectra.core's user surface, the domain surface, array types and
dtypes in and out, Dask dispatch, k-results that own their memory."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
import torch

import spectra
import spectra.core
import spectra.core.domain

from .helpers import random_hermitian


def test_core_all_is_the_user_surface_only():
    internals = {"fan_out", "restore", "execute", "as_tensor", "cpu_count", "Origin"}
    assert not internals & set(spectra.core.__all__)
    for name in spectra.core.__all__:
        assert getattr(spectra.core, name) is not None
    for name in internals:
        assert not hasattr(spectra.core, name)
        assert name in spectra.core.domain.__all__
    assert {"eigh", "eigvalsh", "Options", "Plan", "plan", "register"} <= set(spectra.core.__all__)


def test_big_endian_numpy_input_is_accepted():
    a = np.diag([3.0, 1.0, 2.0]).astype(">f8")
    w, v = spectra.eigh(a)
    np.testing.assert_array_equal(w, [1.0, 2.0, 3.0])
    assert w.dtype == np.float64 and v.dtype == np.float64
    c = (np.eye(2) + 1j * np.array([[0, 1], [-1, 0]])).astype(">c16")
    np.testing.assert_allclose(spectra.eigvalsh(c), [0.0, 2.0], atol=1e-14)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_is_solved_in_float32_and_returned_in_its_dtype(dtype):
    a32 = random_hermitian((6,), 5, torch.float32, seed=1)
    a = a32.to(dtype)
    w, v = spectra.eigh(a)
    assert w.dtype == dtype and v.dtype == dtype
    w_ref, v_ref = spectra.eigh(a.to(torch.float32))
    torch.testing.assert_close(w, w_ref.to(dtype), rtol=0, atol=0)
    torch.testing.assert_close(v, v_ref.to(dtype), rtol=0, atol=0)
    assert spectra.eigvalsh(a, k=2).dtype == dtype
    ragged = spectra.eigvalsh([a[0], a[1, :3, :3]])
    assert [x.dtype for x in ragged] == [dtype, dtype]


def test_numpy_float16_comes_back_as_float16():
    a = np.diag([3.0, 1.0]).astype(np.float16)
    w, v = spectra.eigh(a)
    assert w.dtype == np.float16 and v.dtype == np.float16
    np.testing.assert_array_equal(w, np.array([1.0, 3.0], np.float16))


def test_dask_input_dispatches_to_spectra_distributed():
    x = random_hermitian((5,), 4, torch.float64, seed=2).numpy()
    xd = da.from_array(x, chunks=(2, 4, 4))
    w, v = spectra.eigh(xd, k=2, largest=True, workers=1)
    assert isinstance(w, da.Array) and isinstance(v, da.Array)
    w0, v0 = spectra.eigh(x, k=2, largest=True)
    np.testing.assert_array_equal(w.compute(), w0)
    np.testing.assert_array_equal(v.compute(), v0)
    wv = spectra.eigvalsh(xd)
    assert isinstance(wv, da.Array)
    np.testing.assert_allclose(wv.compute(), spectra.eigvalsh(x), rtol=1e-12, atol=1e-12)
    with pytest.raises(spectra.InputError, match="plan"):
        spectra.eigh(xd, plan=spectra.plan(4, 5, torch.float64))


@pytest.mark.parametrize("largest", [False, True])
def test_k_results_own_their_memory(largest):
    a = random_hermitian((8,), 16, torch.float64, seed=3)
    w, v = spectra.eigh(a, k=3, largest=largest)
    assert v.untyped_storage().nbytes() == v.numel() * v.element_size()
    assert w.untyped_storage().nbytes() == w.numel() * w.element_size()
    w_full, v_full = spectra.eigh(a)
    sl = slice(13, 16) if largest else slice(0, 3)
    assert torch.equal(w, w_full[:, sl]) and torch.equal(v, v_full[:, :, sl])
    _, vn = spectra.eigh(a.numpy(), k=3, largest=largest)
    assert vn.base is None or vn.base.nbytes == vn.nbytes


def test_ragged_lindep_k_largest_gives_the_pair_the_matrix_alone_gives():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 5))
    a = x + x.T
    q, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    b = q @ np.diag([1.0, 2.0, 1e-13, 3.0, 0.5]) @ q.T  # one direction below lindep
    alone = spectra.eigh(a, b, lindep=1e-8, k=2, largest=True)
    ragged = spectra.eigh([a, np.eye(3)], [b, np.eye(3)], lindep=1e-8, k=2, largest=True)
    assert np.isfinite(ragged.eigenvalues[0]).all()
    np.testing.assert_allclose(ragged.eigenvalues[0], alone.eigenvalues, rtol=1e-12)
    np.testing.assert_allclose(ragged.eigenvectors[0], alone.eigenvectors, atol=1e-10)
    assert np.linalg.norm(ragged.eigenvectors[0], axis=0).min() > 0.1  # no zero vector
    # against the reference: the top 2 of the 4-dimensional kept space
    s, u = np.linalg.eigh(b)
    keep = u[:, s > 1e-8] / np.sqrt(s[s > 1e-8])
    ref = np.linalg.eigvalsh(keep.T @ a @ keep)[-2:]
    np.testing.assert_allclose(ragged.eigenvalues[0], ref, rtol=1e-10)
    np.testing.assert_array_equal(ragged.eigenvalues[1], [1.0, 1.0])
    with pytest.raises(spectra.InputError, match=r"k for a\[0\] = 5 exceeds"):
        spectra.eigvalsh([a, np.eye(5)], [b, np.eye(5)], lindep=1e-8, k=5, largest=True)
