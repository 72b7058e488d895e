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
