"""The fused checks' one-reduction tests agree with the elementwise ones (issue 26)."""

from __future__ import annotations

import math

import pytest
import torch

from spectra.core._pipeline._checks import all_finite, exactly_hermitian

from .helpers import random_hermitian

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]


def _cases(dtype: torch.dtype) -> list[torch.Tensor]:
    big = torch.finfo(dtype).max
    a = random_hermitian((6,), 5, dtype, seed=3)
    out = [a, torch.zeros(0, 5, 5, dtype=dtype), torch.zeros(2, 1, 1, dtype=dtype)]
    for value in (math.nan, math.inf, -math.inf):
        x = a.clone()
        x[4, 1, 3] = value  # one triangle only
        out.append(x)
        y = a.clone()
        y[2, 0, 0] = value
        out.append(y)
    cancel = a.clone()  # +Inf and -Inf: the sum is NaN, still caught
    cancel[0, 0, 1], cancel[0, 1, 0] = math.inf, -math.inf
    out.append(cancel)
    overflow = torch.full((3, 4, 4), big, dtype=dtype)  # finite entries, overflowing sum
    out.append(overflow)
    if dtype.is_complex:
        imag = a.clone()
        imag[1, 2, 3] = complex(1.0, math.inf)
        out.append(imag)
        imag_nan = a.clone()
        imag_nan[5, 4, 4] = complex(0.0, math.nan)
        out.append(imag_nan)
        huge = torch.full((2, 3, 3), complex(big, -big), dtype=dtype)
        out.append(huge)
    return out


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_all_finite_is_the_elementwise_test(dtype):
    for x in _cases(dtype):
        assert all_finite(x) == bool(torch.isfinite(x).all()), x


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_exactly_hermitian_is_torch_equal_to_the_conjugate_transpose(dtype):
    a = random_hermitian((8,), 6, dtype, seed=5)
    cases = [a, a[:, :1, :1], torch.zeros(0, 3, 3, dtype=dtype)]
    for i, j in ((0, 1), (3, 3), (5, 2)):
        x = a.clone()
        x[2, i, j] = x[2, i, j] + torch.finfo(dtype).eps * 4  # one entry off by a few ulps
        cases.append(x)
    if dtype.is_complex:
        x = a.clone()
        x[1, 2, 2] = complex(float(x[1, 2, 2].real), 1e-30)  # imaginary diagonal
        cases.append(x)
        y = a.clone()
        y[1, 2, 4] = y[1, 2, 4].conj()  # one entry conjugated, its mirror not
        cases.append(y)
    z = a.clone()
    z[0, 1, 2], z[0, 2, 1] = -0.0, 0.0  # signed zeros compare equal
    cases.append(z)
    n = a.clone()
    n[3, 0, 0] = math.nan  # NaN never equals itself
    cases.append(n)
    cases.append(a.transpose(-2, -1))  # non-contiguous input
    for x in cases:
        assert exactly_hermitian(x) == torch.equal(x, x.mH.resolve_conj()), x


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_squared_pivot_makes_the_abs_rule_s_decisions(dtype, monkeypatch):
    """The gauge's complex pivot from |v|^2 is the pivot from |v|, near-ties included."""
    from spectra.core._pipeline import _gauge
    from spectra.core._support._arrays import default_tolerance

    tol = default_tolerance(dtype)
    gen = torch.Generator().manual_seed(7)
    v = torch.randn(50, 9, 9, dtype=dtype, generator=gen)
    # near-ties: entry 5 of each column at a magnitude ratio to entry 2 (the peak) just
    # inside or outside the tolerance band, at a phase
    ratios = torch.tensor([1 - 0.5 * tol, 1 - 0.9 * tol, 1 - 1.1 * tol, 1 - 2 * tol, 1.0])
    for j in range(9):
        r = float(ratios[j % len(ratios)])
        v[:, 2, j] = 10 * torch.exp(1j * torch.tensor(0.3 * j)).to(dtype)
        v[:, 5, j] = 10 * r * torch.exp(1j * torch.tensor(1.1 * j)).to(dtype)
    v[3, :, 4] = 0  # a zero column
    tiny = v[:4] * 1e-200 if dtype == torch.complex128 else v[:4] * 1e-25  # squares underflow
    for x in (v, tiny):
        fast = _gauge._pivot_first_near_max(x)
        with monkeypatch.context() as m:
            m.setattr(_gauge, "_SQUARE_SAFE", {})  # force the abs rule
            exact = _gauge._pivot_first_near_max(x)
        assert torch.equal(fast, exact)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 16, 33])
def test_small_complex_gauge_in_numpy_is_bitwise_the_torch_gauge(dtype, n, monkeypatch):
    """The direct path's NumPy phase pass makes the torch pass's decisions, bit for bit:
    random eigenvectors, near-tied moduli, zero columns and tiny entries (torch route)."""
    from spectra.core._pipeline import _gauge
    from spectra.core._support._arrays import default_tolerance

    tol = default_tolerance(dtype)
    phase = torch.exp(1j * torch.tensor(0.7)).to(dtype)
    for seed in range(12):
        a = random_hermitian((4,), n, dtype, seed=seed)
        v = torch.linalg.eigh(a)[1]
        if seed == 1 and n > 2:  # a near-tie in modulus at another phase, in every column
            v[:, 1, :] = v[:, 0, :].abs() * (1 - 0.5 * tol) * phase
        if seed == 2:
            v[1, :, 0] = 0  # a zero column
        if seed == 3:
            v = v * (1e-25 if dtype == torch.complex64 else 1e-200)  # squares underflow
        ref = _gauge._complex_phase_(v.clone())
        out = _gauge.fix_gauge_small_(v.clone())
        assert torch.equal(torch.view_as_real(out), torch.view_as_real(ref)), seed
        calls: list[int] = []
        real = _gauge._complex_phase_
        monkeypatch.setattr(
            _gauge, "_complex_phase_", lambda x, r=real, c=calls: c.append(1) or r(x)
        )
        _gauge.fix_gauge_small_(v.clone())
        monkeypatch.undo()
        assert calls == ([1] if seed in (2, 3) else []), seed  # which route ran


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("layout", ["lapack", "strided"])
def test_numpy_complex_phase_routes_make_the_torch_bits(dtype, layout):
    """Both NumPy routes (interleaved reals for C-contiguous rows, the complex view
    otherwise) make the torch pass's bits; out-of-range squares change nothing."""
    import numpy as np

    from spectra.core._pipeline import _gauge
    from spectra.core._support._arrays import default_tolerance

    tol = default_tolerance(dtype)
    for seed in range(8):
        v = torch.linalg.eigh(random_hermitian((3,), 7, dtype, seed=seed))[1]
        if seed == 1:
            v[:, 1, :] = v[:, 0, :].abs() * (1 - 0.5 * tol)  # near-ties in modulus
        if seed == 2:
            v[0, :, 3] = 0  # a zero column: the torch pass's magnitude rule
        if layout == "strided":
            v = v.contiguous()  # row-major: the rows view is not C-contiguous
        want = _gauge._complex_phase_(v.clone())
        got = v.clone()
        rows = np.swapaxes(got.numpy(), -1, -2)
        assert rows.flags.c_contiguous == (layout == "lapack")
        done = _gauge._numpy_complex_phase_(rows, tol, dtype)
        assert done == (seed != 2), seed
        if done:
            assert torch.equal(torch.view_as_real(got), torch.view_as_real(want)), seed
        else:
            assert torch.equal(torch.view_as_real(got), torch.view_as_real(v)), seed
