"""The numba complex gauge pass (``_kernels._numba_phase``) against the torch pass, bitwise."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import spectra
from spectra.core._pipeline import _gauge

pytest.importorskip("numba")

DTYPES = [torch.complex64, torch.complex128]


@pytest.fixture(autouse=True)
def _without_the_compiled_gauge(monkeypatch: pytest.MonkeyPatch) -> None:
    """The routes asserted here are the numba and torch passes (the compiled gauge,
    which comes first where built, is tested in test_native.py on these inputs too)."""
    monkeypatch.setattr(_gauge, "native_gauge_", lambda vectors: False)


def _rows(v: torch.Tensor) -> np.ndarray:
    n, m = v.shape[-2], v.shape[-1]
    return torch.view_as_real(v.mT.reshape(-1, m, n)).reshape(-1, m, 2 * n).numpy()


def _eigenvectors(batch: int, n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(batch, n, n, dtype=dtype, generator=g)
    v = torch.linalg.eigh(a + a.mH).eigenvectors
    if n > 1:  # exact ties in magnitude, and near-ties one rounding apart
        v[0] = torch.eye(n, dtype=dtype) * (1 + 1j) / abs(1 + 1j)
        v[1, :, 0] = torch.tensor([1j] + [-1j] * (n - 1), dtype=dtype) / n**0.5
        x = torch.randn(n, dtype=dtype, generator=g)
        v[2, :, 0] = x / x.abs() / n**0.5
    return v


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 3, 8, 16, 33])
def test_the_numba_pass_makes_the_torch_pass_bits(dtype: torch.dtype, n: int) -> None:
    for seed in range(3):
        v = _eigenvectors(64, n, dtype, seed)
        want = _gauge._complex_phase_(v.clone())
        got = v.clone()
        kernel = _gauge._numba_phase_kernel(dtype)
        assert kernel is not None
        assert kernel(_rows(got)) is True
        assert torch.equal(torch.view_as_real(got), torch.view_as_real(want))
        pivots = got.gather(-2, _gauge._pivot_first_near_max(got))
        eps = torch.finfo(pivots.real.dtype).eps
        assert bool((pivots.imag.abs() <= 4 * eps * pivots.abs()).all())  # real to rounding
        assert bool((pivots.real > 0).all())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", [0.0, 1e-200, 1e200])
def test_out_of_range_squares_change_nothing_and_fall_back(
    dtype: torch.dtype, scale: float
) -> None:
    v = _eigenvectors(8, 4, dtype, 0)
    v[5, :, 1] *= scale  # a zero, underflowing or overflowing column
    if not bool(torch.isfinite(torch.view_as_real(v)).all()):
        pytest.skip("the scale overflows this dtype itself")
    kernel = _gauge._numba_phase_kernel(dtype)
    assert kernel is not None
    got = v.clone()
    if dtype == torch.complex128 and scale == 1e-200:
        pytest.skip("1e-200 squared is still inside complex128's safe range")
    assert kernel(_rows(got)) is False
    assert torch.equal(torch.view_as_real(got), torch.view_as_real(v))  # untouched


def test_fix_gauge_routes_large_complex_blocks_through_the_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import numba  # noqa: F401  (numba loaded: the pass is worth it from NUMBA_PASS_MIN_ENTRIES)

    v = _eigenvectors(512, 16, torch.complex128, 1)
    want = _gauge._complex_phase_(v.clone())
    calls: list[int] = []
    real = _gauge._numba_phase_kernel(torch.complex128)
    assert real is not None
    monkeypatch.setattr(
        _gauge, "_numba_phase_kernel", lambda dtype: lambda rows: calls.append(1) or real(rows)
    )
    got = _gauge.fix_gauge_(v.clone())
    assert calls == [1]
    assert torch.equal(torch.view_as_real(got), torch.view_as_real(want))


def test_small_blocks_keep_the_torch_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    v = _eigenvectors(4, 8, torch.complex128, 2)
    monkeypatch.setattr(_gauge, "_numba_phase_kernel", lambda dtype: pytest.fail("numba ran"))
    want = _gauge._complex_phase_(v.clone())
    assert torch.equal(_gauge.fix_gauge_(v.clone()), want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_results_are_the_same_with_and_without_the_pass(
    dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numba  # noqa: F401

    g = torch.Generator().manual_seed(3)
    a = torch.randn(512, 16, 16, dtype=dtype, generator=g)
    a = a + a.mH
    options = spectra.Options(strategy="torch")
    w, v = spectra.eigh(a, options=options)
    monkeypatch.setattr(_gauge, "_numba_phase_", lambda vectors: False)
    w0, v0 = spectra.eigh(a, options=options)
    assert torch.equal(w, w0)
    assert torch.equal(torch.view_as_real(v), torch.view_as_real(v0))


def test_the_rounded_sqrt_is_ieee() -> None:
    x = torch.rand(100_000, dtype=torch.float64) * torch.rand(100_000, dtype=torch.float64)
    assert np.array_equal(_gauge._sqrt_rounded(x).numpy(), np.sqrt(x.numpy()))


@pytest.mark.parametrize("dtype", DTYPES)
def test_small_blocks_take_the_pass_once_it_has_run(
    dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numba  # noqa: F401

    monkeypatch.setattr(_gauge, "_NUMBA_GAUGE_WARM", set())
    small = _eigenvectors(4, 8, dtype, 4)[1]
    want = _gauge._complex_phase_(small.clone())
    real = _gauge._numba_phase_kernel(dtype)
    assert real is not None
    calls: list[int] = []
    monkeypatch.setattr(
        _gauge, "_numba_phase_kernel", lambda d: lambda rows: calls.append(1) or real(rows)
    )
    assert torch.equal(_gauge.fix_gauge_small_(small.clone()), want)
    assert calls == []  # not warm yet: NumPy's passes
    _gauge.fix_gauge_(_eigenvectors(512, 16, dtype, 5))  # a large block runs the pass
    assert dtype in _gauge._NUMBA_GAUGE_WARM and calls == [1]
    got = _gauge.fix_gauge_small_(small.clone())
    assert calls == [1, 1]
    assert torch.equal(torch.view_as_real(got), torch.view_as_real(want))


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_no_pass_runs_where_the_kernels_are_not_ready(
    dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numba  # noqa: F401

    g = torch.Generator().manual_seed(6)
    a = torch.randn(512, 16, 16, dtype=dtype, generator=g)
    v = torch.linalg.eigh(a + a.mH).eigenvectors
    monkeypatch.setattr(_gauge, "numba_passes_ready", lambda d: False)  # a cold cache
    monkeypatch.setattr(_gauge, "_numba_phase_kernel", lambda d: pytest.fail("compiles"))
    monkeypatch.setattr(_gauge, "_numba_gauge_kernel", lambda d: pytest.fail("compiles"))
    assert not _gauge._numba_phase_(v.clone()) and not _gauge._numba_gauge_(v.clone())
    got = _gauge.fix_gauge_(v.clone())  # the torch pass
    pivots = got.gather(-2, _gauge._pivot_first_near_max(got))
    assert bool((pivots.real > 0).all())
