"""torch's own ``linalg.eigh`` / ``linalg.eigvalsh`` tests, ported to spectra.

Sources (pytorch/pytorch): ``test/test_linalg.py`` (``test_eigh``, ``test_eigvalsh``,
``test_eigh_lower_uplo``, ``test_eigh_errors_and_warnings``,
``test_eigvalsh_errors_and_warnings``, ``test_eigh_svd_illcondition_matrix_input_should_
not_crash``) and the ``linalg.eigh`` / ``linalg.eigvalsh`` OpInfos
(``torch/testing/_internal/opinfo/definitions/linalg.py``: ``sample_inputs_linalg_eigh``
on ``sample_inputs_linalg_invertible``, ``gradcheck_wrapper_hermitian_input``,
``supports_forward_ad``, ``supports_fwgrad_bwgrad``; gradcheck in float64/complex128 as
``test_ops`` runs it). Inputs, shapes and tolerances are torch's (``precisionOverride``
1e-4 for float32/complex64; torch's default assertEqual tolerances otherwise).

Documented differences (docs/guarantees.md, "Peer tests"), each marked DIFFERENCE below:
  1. no ``UPLO``: spectra always reads the lower triangle (``UPLO="L"``); ``UPLO="U"`` is
     ``spectra.eigh(a.mH, check=False)``;
  2. no ``out=`` variant (its warnings and dtype/device checks are not ported);
  3. a non-square input raises spectra's ``InputError`` (a ValueError), not RuntimeError;
  4. eigenvectors are in spectra's gauge (largest entry real positive), so, as torch's
     own tests do, they are compared up to a phase per column;
  5. ``test_eigh_lwork_lapack`` (one 3000x3000 solve, a LAPACK workspace crash check) is
     not ported: it is torch's LAPACK call, which spectra uses unchanged, and too slow for
     the 2-core CI.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import spectra
from spectra.core._errors import InputError

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]
SHAPES = (0, 3, 5)
BATCHES = ((), (3,), (2, 2))


def _tols(dtype):
    """torch's test tolerances: precisionOverride({float32: 1e-4, complex64: 1e-4})."""
    if dtype in (torch.float32, torch.complex64):
        return {"atol": 1e-4, "rtol": 1.3e-6}
    return {"atol": 1e-7, "rtol": 1e-7}


def _random_hermitian_matrix(n, *batch, dtype, seed):
    """torch.testing._internal.common_utils.random_hermitian_matrix, seeded."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(*batch, n, n, dtype=dtype, generator=g)
    return (a + a.mH) / 2


def _close(actual, expected, dtype):
    expected = torch.as_tensor(expected)
    torch.testing.assert_close(actual, expected.to(actual.dtype), **_tols(dtype))


# ---- test_eigh / test_eigvalsh (vs NumPy) -------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("n", "batch"), list(itertools.product(SHAPES, BATCHES)))
def test_eigh(dtype, n, batch):
    matrix = _random_hermitian_matrix(n, *batch, dtype=dtype, seed=n * 10 + len(batch))
    expected_w, expected_v = np.linalg.eigh(matrix.numpy(), UPLO="L")  # DIFFERENCE 1
    actual_w, actual_v = spectra.eigh(matrix)
    _close(actual_w, expected_w, dtype)
    # sign of eigenvectors is not unique and therefore absolute values are compared
    _close(actual_v.abs(), np.abs(expected_v), dtype)
    # DIFFERENCE 4: rotate each column by the phase making its first entry NumPy's
    if matrix.numel() > 0:
        phase = torch.from_numpy(expected_v[..., 0, :]).div(actual_v[..., 0, :])
        _close(actual_v * phase.unsqueeze(-2).expand_as(actual_v), expected_v, dtype)
    # DIFFERENCE 2: no out= variant


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("n", "batch"), list(itertools.product(SHAPES, BATCHES)))
def test_eigvalsh(dtype, n, batch):
    matrix = _random_hermitian_matrix(n, *batch, dtype=dtype, seed=100 + n * 10 + len(batch))
    expected_w = np.linalg.eigvalsh(matrix.numpy(), UPLO="L")
    _close(spectra.eigvalsh(matrix), expected_w, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("uplo", ["l", "u"])
def test_eigh_lower_uplo(dtype, uplo):
    # use non-symmetric input to check which triangle is read
    g = torch.Generator().manual_seed(7)
    matrix = torch.randn(2, 2, 3, 3, dtype=dtype, generator=g)
    expected_w, expected_v = np.linalg.eigh(matrix.numpy(), UPLO=uplo)
    # DIFFERENCE 1: the upper triangle of A is the lower triangle of A^H
    arg = matrix if uplo == "l" else matrix.mH
    actual_w, actual_v = spectra.eigh(arg, check=False)
    _close(actual_w, expected_w, dtype)
    _close(actual_v.abs(), np.abs(expected_v), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [spectra.eigh, spectra.eigvalsh], ids=["eigh", "eigvalsh"])
def test_eigh_errors_and_warnings(dtype, fn):
    # eigh requires a square matrix; DIFFERENCE 3: InputError (ValueError), not RuntimeError
    t = torch.randn(2, 3, dtype=dtype)
    with pytest.raises(InputError, match=r"\(\.\.\., n, n\)"):
        fn(t)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_eigh_svd_illcondition_matrix_input_should_not_crash(dtype):
    a = torch.ones(512, 512, dtype=dtype)
    a[0, 0] = 1.0e-5
    a[-1, -1] = 1.0e5
    w = spectra.eigh(a).eigenvalues
    # torch compares the two largest eigenvalues, 1e5 and 511, with atol 1, rtol 1e-2
    torch.testing.assert_close(
        w.sort(descending=True).values[:2],
        torch.tensor([1.0e5, 511.0], dtype=dtype),
        atol=1.0,
        rtol=1.0e-2,
    )


# ---- the OpInfo gradient checks ----------------------------------------------------------


def _fullrank_distinct_singular_values(*shape, dtype, seed):
    """torch's make_fullrank_matrices_with_distinct_singular_values (seeded): singular
    values 1 + 1/s for s = 2, -3, 4, ... (condition number 9/4)."""
    g = torch.Generator().manual_seed(seed)
    real = torch.float64 if dtype in (torch.float64, torch.complex128) else torch.float32
    t = torch.randn(shape, dtype=dtype, generator=g)
    u, _, vh = torch.linalg.svd(t, full_matrices=False)
    k = min(shape[-1], shape[-2])
    s = torch.arange(2, k + 2, dtype=real)
    s[1::2] *= -1.0
    s = s.reciprocal() + 1.0
    return (u * s.to(u.dtype)) @ vh


# sample_inputs_linalg_invertible: batches (), (0,), (2,), (1, 1) times n = 5, 0
SAMPLES = list(itertools.product([(), (0,), (2,), (1, 1)], [5, 0]))


def _eigh_fn(x):
    # gradcheck_wrapper_hermitian_input, then the OpInfo's output_process_fn_grad
    w, v = spectra.eigh(x + x.mH)
    return w, v.abs()


def _eigvalsh_fn(x):
    return spectra.eigvalsh(x + x.mH)


OPS = {"eigh": _eigh_fn, "eigvalsh": _eigvalsh_fn}


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize(("batch", "n"), SAMPLES)
def test_opinfo_gradcheck_with_forward_ad(op, dtype, batch, n):
    x = _fullrank_distinct_singular_values(*batch, n, n, dtype=dtype, seed=n + len(batch))
    x.requires_grad_()
    assert torch.autograd.gradcheck(OPS[op], (x,), check_forward_ad=True)


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize(("batch", "n"), [s for s in SAMPLES if s[1] > 0 and 0 not in s[0]])
def test_opinfo_gradgradcheck_and_fwgrad_bwgrad(op, dtype, batch, n):
    x = _fullrank_distinct_singular_values(*batch, n, n, dtype=dtype, seed=20 + len(batch))
    x.requires_grad_()
    # fast mode (a random projection of the second-order Jacobian), as torch's
    # gradcheck_fast_mode linalg OpInfos: the full check costs minutes on 2 cores
    assert torch.autograd.gradgradcheck(OPS[op], (x,), check_fwd_over_rev=True, fast_mode=True)
