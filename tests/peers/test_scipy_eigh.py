"""SciPy's ``TestEigh`` (``scipy/linalg/tests/test_decomp.py``, as shipped in the installed
scipy wheel), ported to spectra: SciPy's inputs, expected values and tolerances.

Ported: ``test_wrong_inputs``, ``test_nonpositive_b``, ``test_eigh_integer``,
``test_eigh_of_sparse``, ``test_various_drivers_standard``, ``test_1x1_lwork``,
``test_various_drivers_generalized``, ``test_eigvalsh_new_args``, ``test_empty``,
``TestOverwrite.test_eigh`` and the ``check_finite`` behaviour; a degenerate-spectrum case
built with SciPy's own ``symrand`` helper (eigenvalues given, random orthogonal basis).
SciPy's ``_random_hermitian_matrix`` draws from the global NumPy RNG; here it is seeded.

Documented differences (docs/architecture.md, "Peer tests"), each marked DIFFERENCE below:
  1. ``driver=``: spectra has no LAPACK driver choice; the registered CPU strategies take
     the drivers' place in the parametrization (same inputs, same residual tolerance).
  2. ``type=2`` / ``type=3`` generalized problems: only ``type=1`` (``A v = w B v``);
     ``type=`` is an unknown keyword (TypeError).
  3. ``subset_by_value``: not offered (TypeError); ``subset_by_index=[lo, hi]`` maps to
     ``k`` only for the lowest (``k=hi+1``) or highest (``largest=True``) window; a middle
     window is the matching slice of ``k=hi+1``.
  4. ``lower=False``: spectra always reads the lower triangle (``a.mH`` for the upper).
  5. a non-Hermitian diagonal (``[[1j]]``) is refused by ``check=True``; SciPy (LAPACK)
     silently drops its imaginary part, as spectra does with ``check=False``.
  6. a sparse matrix (or an object array holding one) raises ``TypeError``, not ValueError.
  7. the drivers' tests run each strategy at a size it solves on its own path (the closed
     form only solves n <= 3, numba-jacobi only real matrices), not always at n = 20.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse
import torch
from numpy.testing import assert_allclose, assert_equal
from scipy.stats import ortho_group

import spectra

REAL_DTYPES = [np.float32, np.float64]
COMPLEX_DTYPES = [np.complex64, np.complex128]
DTYPES = REAL_DTYPES + COMPLEX_DTYPES
#: the CPU strategies stand in for SciPy's LAPACK drivers (DIFFERENCE 1)
CPU_STRATEGIES = sorted(
    n for n, s in spectra.core.STRATEGIES.items() if s.supports(torch.device("cpu"))
)


def _random_hermitian_matrix(n, posdef=False, dtype=float, seed=0):
    """SciPy's helper, with a seeded generator instead of the global one."""
    rng = np.random.default_rng(seed)
    if dtype in COMPLEX_DTYPES:
        a = rng.random((n, n)) + rng.random((n, n)) * 1.0j
        a = (a + a.conj().T) / 2
    else:
        a = rng.random((n, n))
        a = (a + a.T) / 2
    if posdef:
        a += np.sqrt(2 * n) * np.eye(n)
    return a.astype(dtype)


def symrand(eigenvalues, rng):
    """SciPy's ``symrand``: a symmetric matrix with the given eigenvalues."""
    v = ortho_group.rvs(len(eigenvalues), random_state=rng)
    h = v.T.conj() @ np.diag(eigenvalues) @ v
    return 0.5 * (h.T + h)


def test_wrong_inputs():
    with pytest.raises(ValueError):  # nonsquare a
        spectra.eigh(np.ones([1, 2]))
    with pytest.raises(ValueError):  # nonsquare b
        spectra.eigh(np.ones([2, 2]), np.ones([2, 1]))
    with pytest.raises(ValueError):  # incompatible a, b sizes
        spectra.eigh(np.ones([3, 3]), np.ones([2, 2]))
    with pytest.raises(ValueError):  # invalid upper index: subset_by_index=[0, 4] of 3x3
        spectra.eigh(np.ones([3, 3]), np.eye(3), k=5)
    with pytest.raises(ValueError):  # invalid lower index: subset_by_index=[-2, 2]
        spectra.eigh(np.ones([3, 3]), np.eye(3), k=-2)
    # DIFFERENCE 1-3: driver=, type=, subset_by_value= are not spectra keywords
    for kwargs in ({"type": 4}, {"driver": "wrong"}, {"subset_by_value": [1, 2]}):
        with pytest.raises(TypeError, match="unknown option"):
            spectra.eigh(np.ones([3, 3]), np.eye(3), **kwargs)


def test_nonpositive_b():
    with pytest.raises(np.linalg.LinAlgError):  # SciPy's LinAlgError is NumPy's
        spectra.eigh(np.ones([3, 3]), np.ones([3, 3]))


def test_eigh_integer():
    a = np.array([[1, 2], [2, 7]])
    b = np.array([[3, 1], [1, 5]])
    w, z = spectra.eigh(a)
    assert_allclose(w, scipy.linalg.eigh(a)[0], rtol=1e-14)
    w, z = spectra.eigh(a, b)
    ws, _ = scipy.linalg.eigh(a, b)
    assert_allclose(w, ws, rtol=1e-13)
    assert_allclose(a @ z - (b @ z) * w, 0.0, atol=1e-13)


def test_eigh_of_sparse():
    a = scipy.sparse.identity(2).tocsc()
    b = np.atleast_2d(a)
    with pytest.raises(TypeError):  # DIFFERENCE 6: SciPy raises ValueError
        spectra.eigh(a)
    with pytest.raises(TypeError):
        spectra.eigh(b)


def _served(strategy: str, dtype, n: int) -> int:
    """The largest size <= n that ``strategy`` solves on its own path (skip if none)."""
    torch_dtype = torch.from_numpy(np.zeros(1, dtype=dtype)).dtype
    serves = spectra.core.STRATEGIES[strategy].serves
    for m in range(n, 0, -1):
        if serves(m, torch_dtype):
            return m
    pytest.skip(f"{strategy} hands {dtype} to another solver")
    raise AssertionError  # pragma: no cover


@pytest.mark.parametrize("dtype_", DTYPES)
@pytest.mark.parametrize("strategy", CPU_STRATEGIES)  # DIFFERENCE 1: strategies for drivers
def test_various_drivers_standard(strategy, dtype_):
    # DIFFERENCE 7: each strategy at a size it solves itself (the closed form: n <= 3)
    n = _served(strategy, dtype_, 20)
    a = _random_hermitian_matrix(n=n, dtype=dtype_)
    w, v = spectra.eigh(a, strategy=strategy)
    assert_allclose(a @ v - (v * w), 0.0, atol=1000 * np.finfo(dtype_).eps, rtol=0.0)


@pytest.mark.parametrize("strategy", CPU_STRATEGIES)
def test_1x1_lwork(strategy):
    w, v = spectra.eigh([[1]], strategy=strategy)
    assert_allclose(w, np.array([1.0]), atol=1e-15)
    assert_allclose(v, np.array([[1.0]]), atol=1e-15)
    # complex case: DIFFERENCE 5, [[1j]] is not Hermitian; with check=False its imaginary
    # diagonal is dropped as LAPACK (and so SciPy) drops it
    with pytest.raises(ValueError, match="not Hermitian"):
        spectra.eigh(np.array([[1j]]), strategy=strategy)
    w, v = spectra.eigh(np.array([[1j]]), strategy=strategy, check=False)
    assert_allclose(w, np.array([0]), atol=1e-15)
    assert_allclose(v, np.array([[1.0]]), atol=1e-15)


@pytest.mark.parametrize("strategy", CPU_STRATEGIES)  # DIFFERENCE 1
def test_various_drivers_generalized(strategy):
    atol = np.spacing(5000.0)
    n = _served(strategy, np.float64, 20)  # DIFFERENCE 7
    a = _random_hermitian_matrix(n, seed=1)
    b = _random_hermitian_matrix(n, posdef=True, seed=2)
    w, v = spectra.eigh(a=a, b=b, strategy=strategy)  # type=1, the only type (DIFFERENCE 2)
    assert_allclose(a @ v - w * (b @ v), 0.0, atol=atol, rtol=0.0)
    with pytest.raises(TypeError, match="unknown option"):
        spectra.eigh(a=a, b=b, type=2)


def test_eigvalsh_new_args():
    a = _random_hermitian_matrix(5)
    w = spectra.eigvalsh(a, k=3)[1:]  # subset_by_index=[1, 2] (DIFFERENCE 3)
    assert_equal(len(w), 2)
    assert_allclose(w, scipy.linalg.eigvalsh(a, subset_by_index=[1, 2]), rtol=1e-13)
    w2 = spectra.eigvalsh(a, k=2, largest=True)  # subset_by_index=[3, 4]
    assert_allclose(w2, scipy.linalg.eigvalsh(a, subset_by_index=[3, 4]), rtol=1e-13)
    b = np.diag([1, 1.2, 1.3, 1.5, 2])
    w3 = spectra.eigvalsh(b)  # subset_by_value=[1, 1.4] (DIFFERENCE 3): filter the result
    w3 = w3[(w3 > 1) & (w3 <= 1.4)]
    assert_equal(len(w3), 2)
    assert_allclose(w3, np.array([1.2, 1.3]))


@pytest.mark.parametrize("dt", [int, float, np.float32, complex, np.complex64])
def test_empty(dt):
    a = np.empty((0, 0), dtype=dt)
    w, v = spectra.eigh(a)
    w_n, v_n = spectra.eigh(np.eye(2, dtype=dt))
    assert w.shape == (0,)
    assert w.dtype == w_n.dtype
    assert v.shape == (0, 0)
    assert v.dtype == v_n.dtype
    w = spectra.eigvalsh(a)
    assert_allclose(w, np.empty((0,)))
    assert w.shape == (0,)
    assert w.dtype == w_n.dtype
    # the same dtypes as SciPy's
    ws, vs = scipy.linalg.eigh(np.eye(2, dtype=dt))
    assert (w_n.dtype, v_n.dtype) == (ws.dtype, vs.dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_no_overwrite(dtype):
    """``TestOverwrite.test_eigh``: inputs are left untouched."""
    a = _random_hermitian_matrix(3, dtype=dtype, seed=3)
    b = _random_hermitian_matrix(3, posdef=True, dtype=dtype, seed=4)
    a0, b0 = a.copy(), b.copy()
    spectra.eigh(a)
    spectra.eigh(a, b)
    spectra.eigvalsh(a, b, lindep=1e-6)
    assert_equal(a, a0)
    assert_equal(b, b0)


@pytest.mark.parametrize("value", [np.inf, np.nan])
def test_check_finite(value):
    """SciPy's ``check_finite=True`` (its default) raises ValueError; so does ``check``."""
    a = _random_hermitian_matrix(4)
    a[1, 2] = value
    with pytest.raises(ValueError):
        scipy.linalg.eigh(a)
    with pytest.raises(ValueError, match="NaN or Inf"):
        spectra.eigh(a)
    with pytest.raises(ValueError, match="NaN or Inf"):
        spectra.eigh(np.eye(4), a + np.eye(4) * 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_degenerate_spectrum(dtype):
    """``symrand`` with repeated eigenvalues: values exact, vectors orthonormal and a basis
    of each eigenspace (residual), at SciPy's decimal precision (``DIGITS``: 4 single, 11
    double)."""
    digits = 4 if dtype in (np.float32, np.complex64) else 11
    eig = np.array([1.0, 1.0, 2.0, 2.0, 2.0, 3.0])
    a = symrand(eig, np.random.default_rng(5)).astype(dtype)
    w, v = spectra.eigh(a)
    np.testing.assert_array_almost_equal(w, eig, digits)
    np.testing.assert_array_almost_equal(v.conj().T @ v, np.eye(6), digits)
    np.testing.assert_array_almost_equal(a @ v, v * w, digits)
    wl, vl = spectra.eigh(a, k=3, largest=True)
    np.testing.assert_array_almost_equal(wl, [2.0, 2.0, 3.0], digits)
    np.testing.assert_array_almost_equal(a @ vl, vl * wl, digits)
