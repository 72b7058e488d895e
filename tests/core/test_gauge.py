"""The gauge rule on hand-made columns, including near-ties of opposite sign."""

from __future__ import annotations

import pytest
import torch

import spectra


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sign_follows_the_largest_magnitude_entry(dtype):
    v = torch.tensor([[0.6, 0.1], [-0.8, -0.995]], dtype=dtype)
    out = spectra.fix_gauge(v)
    torch.testing.assert_close(out, torch.tensor([[-0.6, -0.1], [0.8, 0.995]], dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex128])
def test_near_ties_resolve_to_the_first_entry_whatever_the_round_off(dtype):
    s = 2**-0.5
    eps = 1e-12 if dtype != torch.float32 else 1e-6
    for bump in (eps, -eps):  # which entry is larger by round-off must not matter
        v = torch.tensor([[s], [-(s + bump)]], dtype=dtype)
        out = spectra.fix_gauge(v)
        assert out[0, 0].real > 0 and out[1, 0].real < 0


def test_complex_phase_makes_the_pivot_real_positive():
    v = torch.tensor([[0.6j], [0.8 * torch.exp(torch.tensor(1.0j)).item()]], dtype=torch.complex128)
    out = spectra.fix_gauge(v)
    assert abs(out[1, 0].imag) < 1e-15 and out[1, 0].real > 0
    torch.testing.assert_close(out.abs(), v.abs())


def test_zero_columns_and_empty_inputs_are_left_alone():
    v = torch.zeros(3, 2, dtype=torch.float64)
    assert torch.equal(spectra.fix_gauge(v), v)
    assert spectra.fix_gauge(torch.zeros(0, 3, 3)).shape == (0, 3, 3)


def test_degenerate_graph_like_spectrum_is_deterministic_across_strategies():
    # the cycle graph C_6 Laplacian: repeated eigenvalues, entries equal up to round-off
    n = 6
    lap = 2 * torch.eye(n, dtype=torch.float64)
    for i in range(n):
        lap[i, (i + 1) % n] = lap[(i + 1) % n, i] = -1
    _w1, v1 = spectra.eigh(lap, strategy="torch")
    _w2, v2 = spectra.eigh(lap, strategy="scipy")
    # non-degenerate columns (eigenvalues 0 and 4) must agree exactly up to round-off
    for j in (0, n - 1):
        torch.testing.assert_close(v1[:, j], v2[:, j], atol=1e-12, rtol=0)


def _adversarial_columns(batch: int, n: int, dtype: torch.dtype) -> torch.Tensor:
    """Column-major eigenvector-like blocks with exact and near ties of opposite sign, zero
    and signed-zero columns, infinities and NaN (every branch of the sign decision)."""
    g = torch.Generator().manual_seed(n)
    v = torch.randn(batch, n, n, generator=g, dtype=torch.float64).to(dtype)
    v[:5, :, 0] = 0.0
    v[5:10, :, 1] = -0.0
    v[10:20, 0, 2] = 5.0
    v[10:20, n - 1, 2] = -5.0  # exact opposite-sign tie: the first entry decides
    v[20:30, 1, 2] = -5.0
    v[20:30, n - 2, 2] = 5.0 * (1 - 1e-12)  # near tie within the tolerance
    v[30:35, 0, 3] = float("inf")
    v[35:40, 1, 3] = float("-inf")
    v[40:45, 2, 3] = float("nan")
    return v.mT.contiguous().mT  # columns contiguous, as LAPACK and the executor write them


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n", [4, 33, 64])
def test_numba_gauge_pass_is_bitwise_the_torch_gauge(monkeypatch, dtype, n):
    """The executor's one-pass numba gauge (CPU blocks of at least
    ``NUMBA_PASS_MIN_ENTRIES``) makes exactly the decisions of the torch path."""
    from spectra.core._pipeline import _gauge
    from spectra.core._solvers._kernels import _numba_gauge
    from spectra.core._support._arrays import NUMBA_PASS_MIN_ENTRIES

    batch = max(64, NUMBA_PASS_MIN_ENTRIES // (n * n) + 1)
    v = _adversarial_columns(batch, n, dtype)
    expected = v * _gauge.gauge_phase(v)  # the torch path
    calls = []
    real = _numba_gauge.gauge_rows
    monkeypatch.setattr(_numba_gauge, "gauge_rows", lambda *a: calls.append(1) or real(*a))
    _gauge._numba_gauge_kernel.cache_clear()
    try:
        got = torch.empty_strided(v.shape, v.stride(), dtype=dtype).copy_(v)
        _gauge.fix_gauge_(got)
    finally:
        _gauge._numba_gauge_kernel.cache_clear()
    assert calls == [1]  # the numba pass ran
    assert torch.equal(got.isnan(), expected.isnan())
    same = (got == expected) | got.isnan()
    assert bool(same.all())
    # signed zeros included (a NaN's sign bit carries nothing: x86 keeps it under * -1)
    assert torch.equal(got.signbit() | got.isnan(), expected.signbit() | got.isnan())


def test_small_or_row_major_blocks_take_the_torch_gauge(monkeypatch):
    from spectra.core._pipeline import _gauge

    monkeypatch.setattr(_gauge, "_numba_gauge_kernel", lambda dtype: pytest.fail("numba"))
    small = _adversarial_columns(64, 4, torch.float64)  # 1,024 entries: below the minimum
    rows = _adversarial_columns(64, 64, torch.float64).contiguous()  # rows contiguous
    for v in (small, rows):
        expected = v * _gauge.gauge_phase(v)
        got = _gauge.fix_gauge_(v.clone())
        assert bool(((got == expected) | got.isnan()).all())
