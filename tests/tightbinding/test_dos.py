"""DOS (Gaussian, tetrahedron) and the Fermi level against independent computations."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.optimize import brentq
from scipy.special import expit

from spectra.tightbinding import (
    chain,
    cubic,
    dos,
    fermi_level,
    graphene,
    integrated_dos,
    monkhorst_pack,
)


def test_gaussian_dos_is_the_sum_of_gaussians():
    rng = np.random.default_rng(0)
    e = rng.standard_normal((50, 3))
    grid = np.linspace(-4, 4, 101)
    sigma = 0.2
    ref = np.exp(-0.5 * ((grid[:, None, None] - e[None]) / sigma) ** 2).sum((1, 2)) / (
        50 * sigma * np.sqrt(2 * np.pi)
    )
    np.testing.assert_allclose(dos(e, grid, sigma=sigma), ref, rtol=1e-12)
    np.testing.assert_allclose(dos(e, grid, sigma=sigma, chunk=7), ref, rtol=1e-12)
    fine = np.linspace(-8, 8, 4001)
    assert abs(np.trapezoid(dos(e, fine, sigma=sigma), fine) - 3) < 1e-6  # 3 bands per cell
    w = rng.random(50)
    w /= w.sum()
    refw = (np.exp(-0.5 * ((grid[:, None, None] - e[None]) / sigma) ** 2) * w[None, :, None]).sum(
        (1, 2)
    ) / (sigma * np.sqrt(2 * np.pi))
    np.testing.assert_allclose(
        dos(torch.from_numpy(e), grid, sigma=sigma, weights=w), refw, rtol=1e-12
    )


def test_tetrahedron_1d_chain_matches_analytic_dos():
    n = 4000
    e = chain(-1.0).bands(monkhorst_pack([n]))
    grid = np.linspace(-1.9, 1.9, 381)
    ref = 1 / (np.pi * np.sqrt(4 - grid**2))
    np.testing.assert_allclose(dos(e, grid, method="tetrahedron", kgrid=[n]), ref, rtol=2e-3)
    # integrated DOS: the fraction of the band below E is arccos(-E/2)/pi
    np.testing.assert_allclose(
        integrated_dos(e, grid, [n]), np.arccos(-grid / 2) / np.pi, atol=1e-3
    )


def test_tetrahedron_2d_graphene_integrates_to_band_count_and_vanishes_at_dirac():
    n = 90
    e = graphene().bands(monkhorst_pack([n, n], gamma_centered=True))
    grid = np.linspace(-3.2, 3.2, 1601)
    g = dos(e, grid, method="tetrahedron", kgrid=[n, n])
    assert abs(np.trapezoid(g, grid) - 2) < 2e-3
    # near the Dirac point the DOS is linear: |E| / (pi sqrt(3)/2 ... ) -> small at E = 0
    assert g[np.argmin(np.abs(grid))] < 0.02
    # van Hove singularity at |t| = 1
    assert np.argmax(g[grid > 0]) == np.argmin(np.abs(grid[grid > 0] - 1.0))


def test_tetrahedron_3d_integrated_dos_matches_dense_counting():
    n = 12
    e = cubic().bands(monkhorst_pack([n, n, n]))
    grid = np.linspace(-6.5, 6.5, 651)
    g = dos(e, grid, method="tetrahedron", kgrid=[n, n, n])
    assert abs(g.sum() * (grid[1] - grid[0]) - 1) < 1e-9  # bin averages integrate exactly
    integrated = integrated_dos(e, grid, [n, n, n])
    np.testing.assert_allclose(
        np.cumsum(g) * (grid[1] - grid[0]),
        integrated_dos(e, grid + 0.5 * (grid[1] - grid[0]), [n, n, n]),
        atol=1e-9,
    )
    dense = np.sort(cubic().bands(monkhorst_pack([48, 48, 48]))[:, 0])
    for level in (-4.0, -2.0, 0.0, 1.5, 3.0):
        count = np.searchsorted(dense, level) / dense.size
        assert abs(np.interp(level, grid, integrated) - count) < 8e-3
    assert abs(integrated[-1] - 1) < 1e-3


def test_dos_errors():
    e = np.zeros((4, 1))
    with pytest.raises(ValueError, match="kgrid"):
        dos(e, [0.0, 1.0], method="tetrahedron")
    with pytest.raises(ValueError, match="has 9 points"):
        dos(e, [0.0, 1.0], method="tetrahedron", kgrid=[3, 3])
    with pytest.raises(ValueError, match="method"):
        dos(e, [0.0, 1.0], method="lorentz")
    with pytest.raises(ValueError, match="NaN"):
        dos(np.array([[np.nan]]), [0.0, 1.0])


def test_fermi_level_step():
    rng = np.random.default_rng(1)
    e = np.sort(rng.standard_normal((30, 4)), axis=1)
    flat = np.sort(e.ravel())
    # a metal: the level sits on the state that completes the count
    for nel in (0.51, 1.0 + 0.5 / 30, 2.21):
        ef = fermi_level(e, nel, degeneracy=1)
        assert np.sum(e <= ef + 1e-12) / 30 >= nel - 1e-9
        assert np.sum(e < ef - 1e-12) / 30 < nel
    # an exact count lands between two levels: the midpoint
    assert fermi_level(e, 0.5, degeneracy=1) == pytest.approx(0.5 * (flat[14] + flat[15]))
    # an insulator: exactly two bands filled -> mid-gap
    gapped = np.concatenate([e[:, :2] - 10, e[:, 2:] + 10], axis=1)
    ef = fermi_level(gapped, 2, degeneracy=1)
    assert ef == pytest.approx(0.5 * (gapped[:, :2].max() + gapped[:, 2:].min()))
    # spin degeneracy: 4 electrons fill two bands twice
    assert fermi_level(gapped, 4, degeneracy=2) == pytest.approx(ef)
    assert fermi_level(e, 0, degeneracy=1) == flat[0]
    with pytest.raises(ValueError, match="outside"):
        fermi_level(e, 5, degeneracy=1)


def test_fermi_level_counts_spin():
    # a spinless band holds 2 electrons, a spinful one 1: graphene at half filling (2
    # electrons per cell) has its level at the Dirac point, E = 0
    from spectra.tightbinding import graphene, monkhorst_pack

    model = graphene(t=-2.7)
    k = monkhorst_pack([60, 60], gamma_centered=True)  # contains K = (2/3, 1/3)
    e = model.bands(k)
    assert fermi_level(e, 2) == pytest.approx(0.0, abs=1e-9)
    assert fermi_level(e, 2, nspin=1) == fermi_level(e, 1, degeneracy=1)
    spinful = model.with_spin().bands(k)
    assert fermi_level(spinful, 2, nspin=2) == pytest.approx(0.0, abs=1e-9)
    assert fermi_level(e, 4) == pytest.approx(e.max())  # full
    with pytest.raises(ValueError, match="2 bands hold 2 electrons each"):
        fermi_level(e, 4.5)
    with pytest.raises(ValueError, match="nspin"):
        fermi_level(e, 1, nspin=3)


@pytest.mark.parametrize("method", ["fermi-dirac", "gaussian"])
def test_fermi_level_smeared_matches_root_finding(method):
    from scipy.special import erfc

    rng = np.random.default_rng(2)
    e = rng.standard_normal((40, 3))
    w = rng.random(40)
    w /= w.sum()
    kt = 0.05

    def count(mu):
        z = (e - mu) / kt
        f = expit(-z) if method == "fermi-dirac" else 0.5 * erfc(z)
        return float((f * w[:, None]).sum()) * 2 - 3.3

    ref = brentq(count, -10, 10, xtol=1e-14)
    got = fermi_level(e, 3.3, weights=w, degeneracy=2, smearing=kt, method=method)
    assert got == pytest.approx(ref, abs=1e-10)


def _plain_gaussian_sum(e, grid, sigma, w):
    """The reference: every energy against every state, in NumPy, no cutoff."""
    z = (grid[:, None] - e.reshape(-1)[None, :]) / sigma
    wf = np.repeat(w, e.shape[1])
    return (np.exp(-0.5 * z * z) * wf).sum(1) / (sigma * np.sqrt(2 * np.pi))


@pytest.mark.parametrize("chunk", [1, 7, 500, 2**22])
@pytest.mark.parametrize("sigma", [1e-3, 0.05, 3.0])
def test_gaussian_dos_equals_the_plain_sum(chunk, sigma):
    rng = np.random.default_rng(5)
    e = np.sort(rng.standard_normal((40, 6)) * 2, axis=1)
    w = rng.random(40)
    w /= w.sum()
    grid = rng.permutation(np.linspace(-8, 8, 301))  # unsorted on purpose
    got = dos(e, grid, sigma=sigma, weights=w, chunk=chunk)
    ref = _plain_gaussian_sum(e, grid, sigma, w)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12 * ref.max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gaussian_dos_of_float32_energies(dtype):
    rng = np.random.default_rng(6)
    e = rng.standard_normal((50, 3)).astype(dtype)
    grid = np.linspace(-4, 4, 161)
    ref = _plain_gaussian_sum(e.astype(np.float64), grid, 0.1, np.full(50, 1 / 50))
    tol = {np.float32: 1e-5, np.float64: 1e-12}[dtype]
    np.testing.assert_allclose(dos(e, grid, sigma=0.1), ref, rtol=tol, atol=tol * ref.max())
