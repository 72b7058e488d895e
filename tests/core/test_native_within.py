"""The compiled test "Hermitian within a tolerance" (``native_within_tolerance``,
``_native_eigh.c``): it only ever accepts what :func:`quick_check`'s torch test accepts,
accepts what that test accepts by a margin, and leaves everything else to it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from spectra.core._pipeline._checks import InputRejected, check_block, quick_check
from spectra.core._solvers._native import native_module, native_within_tolerance

from .helpers import DTYPES

pytestmark = pytest.mark.skipif(native_module() is None, reason="the compiled helper is not built")
TOL = {torch.float32: 1e-3, torch.complex64: 1e-3, torch.float64: 1e-8, torch.complex128: 1e-8}


def _reference(a: torch.Tensor, tol: float) -> bool:
    """quick_check's test in NumPy, in double: every matrix finite and
    max |A - A^H| <= tol * max |A| (tol where A = 0)."""
    x = a.detach().numpy().astype(np.complex128 if a.is_complex() else np.float64)
    x = x.reshape(-1, *x.shape[-2:])
    if not np.isfinite(x).all():
        return False
    diff = np.abs(x - np.conj(np.swapaxes(x, -1, -2))).max(axis=(-1, -2))
    scale = np.abs(x).max(axis=(-1, -2))
    return bool((diff <= tol * np.where(scale > 0, scale, 1.0)).all())


def _rounded(b: int, n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """``X X^H / n + I``: Hermitian to rounding only (an overlap matrix's shape)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, n, n, dtype=torch.float64, generator=g)
    if dtype.is_complex:
        x = x + 1j * torch.randn(b, n, n, dtype=torch.float64, generator=g)
    x = x.to(dtype)
    return x @ x.mH / n + torch.eye(n, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_hermitian_to_rounding_is_accepted_like_the_torch_test(dtype: torch.dtype) -> None:
    for n in (1, 2, 5, 17, 64):
        a = _rounded(6, n, dtype, n)
        assert _reference(a, TOL[dtype])
        assert native_within_tolerance(a, TOL[dtype]) is True, n
        assert native_within_tolerance(a[2], TOL[dtype]) is True, n  # one matrix
        assert native_within_tolerance(a.mT, TOL[dtype]) is True, n  # strided
        quick_check(a, TOL[dtype], finite=True)  # the torch test agrees


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_never_accepts_what_the_torch_test_refuses(dtype: torch.dtype) -> None:
    """Random perturbations around the bound (0.3x to 3x the tolerance, one entry or many,
    real or imaginary parts, the diagonal's imaginary part): the compiled test accepts only
    what the reference accepts, and everything the reference accepts with a 1e-4 margin."""
    gen = torch.Generator().manual_seed(11)
    tol = TOL[dtype]
    accepted = refused = 0
    for trial in range(300):
        n = int(torch.randint(1, 12, (1,), generator=gen))
        a = _rounded(1, n, dtype, trial)[0].clone()
        scale = float(a.abs().max())
        factor = float(torch.empty(1).uniform_(0.3, 3.0, generator=gen))
        i, j = (int(k) for k in torch.randint(0, n, (2,), generator=gen))
        bump = factor * tol * scale
        if dtype.is_complex and trial % 3 == 0:
            a[i, j] = a[i, j] + 1j * bump  # (i == j: the diagonal's imaginary part)
        else:
            a[i, j] = a[i, j] + bump
        got = native_within_tolerance(a, tol)
        ref = _reference(a, tol)
        if got:
            assert ref, (trial, factor)
            accepted += 1
        else:
            refused += 1
        if _reference(a, tol * (1 - 1e-4)):
            assert got, (trial, factor)
    assert accepted > 20 and refused > 20  # both sides of the bound were reached


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_not_finite_or_out_of_bound_is_left_to_the_torch_test(dtype: torch.dtype) -> None:
    tol = TOL[dtype]
    a = _rounded(4, 6, dtype, 3)
    for value in (float("nan"), float("inf"), -float("inf")):
        for i, j in ((0, 5), (5, 0), (2, 2)):
            bad = a.clone()
            bad[1, i, j] = value
            assert native_within_tolerance(bad, tol) is False, (value, i, j)
            with pytest.raises(InputRejected):
                check_block(bad, tol)
    zero = torch.zeros(3, 3, dtype=dtype)
    zero[0, 1] = tol / 2  # A = 0 but for one entry: the bound is tol * max|A|
    assert native_within_tolerance(zero, tol) is False
    assert native_within_tolerance(torch.zeros(2, 3, 3, dtype=dtype), tol) is True
    assert native_within_tolerance(a, 1.0) is False  # a bound of the matrix's size: torch's
    assert native_within_tolerance(a[:0], tol) is True  # an empty batch


def test_what_the_helper_cannot_read_is_none() -> None:
    a = _rounded(2, 4, torch.complex128, 1)
    assert native_within_tolerance(a.conj(), 1e-8) is None
    assert native_within_tolerance(a.real.to(torch.int64), 1e-8) is None  # not a solver dtype
    assert native_within_tolerance(a[None], 1e-8) is None  # four dimensions


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128], ids=str)
def test_scales_whose_squares_would_overflow_or_underflow_are_left_to_the_torch_test(
    dtype: torch.dtype,
) -> None:
    """The test compares squares: where the largest one would leave double's range it
    decides nothing, so an asymmetry at 1e-170 (squares that underflow to zero) is never
    accepted, and the torch test, which compares magnitudes, refuses it."""
    tol = TOL[dtype]
    a = _rounded(2, 5, dtype, 9)
    tiny = a * 1e-170
    tiny[0, 0, 1] += 1e-171  # 10% asymmetric
    assert native_within_tolerance(tiny, tol) is False
    assert not _reference(tiny, tol)
    with pytest.raises(InputRejected):
        check_block(tiny, tol)
    huge = a * 1e160  # squares overflow: the torch test accepts it
    assert native_within_tolerance(huge, tol) is False
    assert _reference(huge, tol)
    check_block(huge, tol)
    for scale in (1e-120, 1e120):  # squares in range: decided here, as the torch test
        assert native_within_tolerance(a * scale, tol) is True
