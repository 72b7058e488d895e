"""A few k-points given as a list or NumPy array (a PythTB user's loop): NumPy builds the
Bloch sums (``_bloch._solve_few``), with the torch path's results to rounding, its shapes,
dtypes and errors; tensors, devices and large calls keep the torch path."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import spectra.tightbinding as tb
from spectra.core.domain import InputError
from spectra.tightbinding import _bloch

from .helpers import TOL, pythtb_bands, random_model, to_pythtb


@pytest.fixture
def route(monkeypatch):
    """Which path each solve took: ``"numpy"`` (the few k-points') or ``"torch"``."""
    seen: list[str] = []
    few, chunk = _bloch._solve_few, _bloch.solve_chunk

    def spy(name, real):
        return lambda *a, **kw: seen.append(name) or real(*a, **kw)

    monkeypatch.setattr(_bloch, "_solve_few", spy("numpy", few))
    monkeypatch.setattr(_bloch, "solve_chunk", spy("torch", chunk))
    return seen


def _overlapping(rng: np.random.Generator) -> tb.Model:
    m = random_model(rng, 2, 3)
    m.add_overlap(0.1 + 0.05j, 0, 1, [0, 0])
    m.add_overlap(0.08, 1, 2, [1, 0])
    m.set_overlap_onsite(1.2, 0)
    return m


@pytest.mark.parametrize("convention", ["lattice", "orbital"])
@pytest.mark.parametrize("kind", ["plain", "overlap", "spinful"])
def test_a_few_kpoints_equal_the_torch_path_to_rounding(route, convention, kind):
    rng = np.random.default_rng(4)
    m = {
        "plain": lambda: random_model(rng, 2, 4),
        "overlap": lambda: _overlapping(rng),
        "spinful": lambda: random_model(rng, 2, 2, nspin=2),
    }[kind]()
    k = rng.random((3, 2))
    w, v = m.eigh(k, convention=convention)
    assert route == ["numpy"]
    wt, vt = m.eigh(torch.from_numpy(k), convention=convention)
    assert route == ["numpy", "torch"]
    assert isinstance(w, np.ndarray) and w.dtype == np.float64 and v.dtype == np.complex128
    np.testing.assert_allclose(w, wt.numpy(), atol=1e-12)
    # the same gauge: the same columns to rounding, not up to a phase
    np.testing.assert_allclose(v, vt.numpy(), atol=1e-10)
    np.testing.assert_allclose(m.bands(k, convention=convention), w, atol=1e-12)
    assert route[-1] == "numpy"


def test_one_kpoint_against_pythtb(route):
    rng = np.random.default_rng(5)
    m = random_model(rng, 2, 8)
    p = to_pythtb(m)
    for k in ([0.1, 0.2], [0, 0], (0.5, -0.25)):
        w, v = m.eigh(k, convention="orbital")
        assert w.shape == (1, 8) and v.shape == (1, 8, 8)
        ref = pythtb_bands(p, np.array([k], dtype=float))[0]
        np.testing.assert_allclose(w[0], ref, atol=TOL[np.float64])
        _, evecs = p.solve_one(list(map(float, k)), eig_vectors=True)
        # PythTB's states are rows; the same states up to a phase each
        overlap = np.abs(np.einsum("ij,ji->i", evecs.conj(), v[0]))
        np.testing.assert_allclose(overlap, 1.0, atol=1e-10)
    assert set(route) == {"numpy"}


def test_shapes_dtypes_and_a_1d_model(route):
    m = tb.haldane()
    k = np.random.default_rng(6).random((2, 3, 2))
    w, v = m.eigh(k)
    assert w.shape == (2, 3, 2) and v.shape == (2, 3, 2, 2)
    w32 = m.bands(k.astype(np.float32))
    assert w32.dtype == np.float32
    np.testing.assert_allclose(w32, w, atol=TOL[np.float32])
    chain = tb.Model([[1.0]], [[0.0]])
    chain.add_hopping(-1.0, 0, 0, [1])
    np.testing.assert_allclose(chain.bands([0.0, 0.25, 0.5])[:, 0], [-2.0, 0.0, 2.0], atol=1e-12)
    assert set(route) == {"numpy"}


def test_tensors_devices_budgets_and_large_calls_keep_the_torch_path(route, monkeypatch):
    m = tb.haldane()
    m.eigh(torch.tensor([[0.1, 0.2]], dtype=torch.float64))
    m.eigh([[0.1, 0.2]], device="cpu")
    assert route == ["torch", "torch"]
    route.clear()
    k = np.random.default_rng(7).random((40, 2))
    w = m.bands(k, max_memory=4096)  # a budget the 40 k-points do not fit in one call
    assert len(route) > 1 and set(route) == {"torch"}  # chunked: several core calls
    route.clear()
    np.testing.assert_allclose(w, m.bands(k), atol=1e-12)
    assert route == ["numpy"]  # without the budget: one call
    route.clear()
    monkeypatch.setattr(_bloch, "FEW_ENTRIES", 10)  # Haldane: 7 R x 4 entries per k-point
    m.eigh([[0.1, 0.2]])
    assert route == ["torch"]


def test_bad_kpoints_are_named_as_before(route):
    m = tb.haldane()
    with pytest.raises(InputError, match=r"NaN/Inf at k-point indices \[1\]"):
        m.eigh([[0.1, 0.2], [np.nan, 0.0]])
    with pytest.raises(InputError, match=r"must have shape \(nk, 2\)"):
        m.bands([[0.1, 0.2, 0.3]])
    with pytest.raises(TypeError, match="real reduced coordinates"):
        m.bands(np.array([[0.1 + 1j, 0.2]]))
    assert route == []  # refused before any solve
