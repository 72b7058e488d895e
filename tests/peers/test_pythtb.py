"""PythTB's own examples, ported: the same model built in PythTB and in spectra, compared in
the same process (bands, k-paths, Berry phases, Wilson loops, Berry fluxes, Chern numbers).

Ported from pythtb/pythtb ``examples/`` (graphene.py, haldane.py, haldane_bp.py, kane_mele.py,
checkerboard.py, 3site_cycle.py, edge.py, supercell.py) and the inputs of their golden tests
(``tests/test_examples``). Their tolerances (``np.allclose`` defaults) are kept or tightened.

Documented differences (marked where they matter):

- ``k_dist``: spectra's default ``kpath`` distance carries the ``2 pi`` of ``|k|`` and
  spreads points by leg length; ``kpath(..., convention="pythtb")`` reproduces PythTB's
  ``k_path`` exactly (its ``k_vec``, ``k_dist``, ``k_node``).
- Eigenvectors: PythTB returns them as rows ``evec[band, k, orbital]`` in the orbital
  convention; spectra's ``Model.eigh(k, convention="orbital")`` returns columns.
- Phases: spectra returns Berry phases in ``(-pi, pi]``; PythTB's ``contin=True`` makes them
  continuous along the string, so they are compared modulo ``2 pi``.
"""

from __future__ import annotations

import numpy as np
import pytest
from pythtb import tb_model, wf_array

from spectra.tightbinding import (
    Model,
    berry_flux,
    berry_phase,
    chern_number,
    cut,
    kpath,
    supercell,
    wilson_loop,
)

HEX = [[1.0, 0.0], [0.5, np.sqrt(3.0) / 2.0]]
HONEY = [[1.0 / 3.0, 1.0 / 3.0], [2.0 / 3.0, 2.0 / 3.0]]
PAULI = [
    np.eye(2),
    np.array([[0, 1], [1, 0]], complex),
    np.array([[0, -1j], [1j, 0]]),
    np.diag([1.0, -1.0]).astype(complex),
]


def _spin(vec):
    """PythTB's spin vector ``[a0, ax, ay, az]`` as a ``(2, 2)`` matrix."""
    return sum(a * s for a, s in zip(vec, PAULI, strict=True))


def _twins(lat, orb, onsite, hops, *, nspin=1, per=None):
    """The same model in PythTB (``set_hop(..., mode='add')``) and spectra (hoppings with the
    same ``(i, j, R)`` summed first, as ``add_hopping`` refuses duplicates)."""
    dim = len(lat)
    p = tb_model(dim, dim, lat, orb, nspin=nspin, per=per)
    p.set_onsite(onsite)
    m = Model(lat, orb, nspin=nspin, periodic=per)
    for i, value in enumerate(onsite):
        m.set_onsite(_spin(value) if nspin == 2 and np.ndim(value) else value, i)
    summed: dict = {}
    for t, i, j, r in hops:
        p.set_hop(t, i, j, r, mode="add")
        amp = t if nspin == 1 else (_spin(t) if np.ndim(t) else t * np.eye(2))
        key = (i, j, tuple(r))
        summed[key] = summed.get(key, 0) + amp
    for (i, j, r), t in summed.items():
        m.add_hopping(t, i, j, list(r))
    return p, m


def graphene_twins(delta=0.0, t=-1.0):
    hops = [(t, 0, 1, [0, 0]), (t, 1, 0, [1, 0]), (t, 1, 0, [0, 1])]
    return _twins(HEX, HONEY, [-delta, delta], hops)


T2 = 0.15 * np.exp(1j * np.pi / 2.0)


def haldane_twins(delta=0.2, t=-1.0, t2=T2):
    t2c = np.conjugate(t2)
    hops = [
        (t, 0, 1, [0, 0]),
        (t, 1, 0, [1, 0]),
        (t, 1, 0, [0, 1]),
        (t2, 0, 0, [1, 0]),
        (t2, 1, 1, [1, -1]),
        (t2, 1, 1, [0, 1]),
        (t2c, 1, 1, [1, 0]),
        (t2c, 0, 0, [1, -1]),
        (t2c, 0, 0, [0, 1]),
    ]
    return _twins(HEX, HONEY, [-delta, delta], hops)


def kane_mele_twins(topological):
    esite = 2.5 if topological == "even" else 1.0
    thop, so, rashba = 1.0, 0.6 * 0.5, 0.25
    sx, sy, sz = [0.0, 1, 0, 0], [0.0, 0, 1, 0], [0.0, 0, 0, 1]
    r3h = np.sqrt(3.0) / 2.0
    hops = [
        (thop, 0, 1, [0, 0]),
        (thop, 0, 1, [0, -1]),
        (thop, 0, 1, [-1, 0]),
        (-1j * so * np.array(sz), 0, 0, [0, 1]),
        (1j * so * np.array(sz), 0, 0, [1, 0]),
        (-1j * so * np.array(sz), 0, 0, [1, -1]),
        (1j * so * np.array(sz), 1, 1, [0, 1]),
        (-1j * so * np.array(sz), 1, 1, [1, 0]),
        (1j * so * np.array(sz), 1, 1, [1, -1]),
        (1j * rashba * (0.5 * np.array(sx) - r3h * np.array(sy)), 0, 1, [0, 0]),
        (1j * rashba * (-1.0 * np.array(sx)), 0, 1, [0, -1]),
        (1j * rashba * (0.5 * np.array(sx) + r3h * np.array(sy)), 0, 1, [-1, 0]),
    ]
    return _twins(HEX, HONEY, [esite, -esite], hops, nspin=2)


def checkerboard_twins(delta=1.1, t=0.6):
    hops = [(t, 1, 0, [0, 0]), (t, 1, 0, [1, 0]), (t, 1, 0, [0, 1]), (t, 1, 0, [1, 1])]
    return _twins([[1.0, 0.0], [0.0, 1.0]], [[0.0, 0.0], [0.5, 0.5]], [-delta, delta], hops)


HEX_PATH = [[0.0, 0.0], [2.0 / 3.0, 1.0 / 3.0], [0.5, 0.5], [1.0 / 3.0, 2.0 / 3.0], [0.0, 0.0]]

CASES = {
    # name: (twins, path, nk) as in the example scripts
    "graphene": (graphene_twins, [*HEX_PATH[:3], [0.0, 0.0]], 121),
    "haldane": (haldane_twins, HEX_PATH, 101),
    "kane_mele_even": (lambda: kane_mele_twins("even"), HEX_PATH, 101),
    "kane_mele_odd": (lambda: kane_mele_twins("odd"), HEX_PATH, 101),
    "checkerboard": (checkerboard_twins, [[0.0, 0.0], [0.0, 0.5], [0.5, 0.5], [0.0, 0.0]], 301),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_k_path_and_bands_equal_pythtb(name):
    twins, path, nk = CASES[name]
    p, m = twins()
    k_vec, k_dist, k_node = p.k_path(path, nk, report=False)
    ours = kpath(m, path, nk, convention="pythtb")
    np.testing.assert_allclose(ours.k, k_vec, atol=1e-14)
    np.testing.assert_allclose(ours.distance, k_dist, atol=1e-13)
    np.testing.assert_allclose(ours.ticks, k_node, atol=1e-13)
    # spectra's own path: the same nodes, distances 2 pi times PythTB's
    own = kpath(m, path, nk)
    np.testing.assert_allclose(own.ticks, 2 * np.pi * k_node, rtol=1e-12)
    evals = p.solve_all(k_vec)  # (nband, nk)
    np.testing.assert_allclose(m.bands(ours), evals.T, atol=1e-12)
    np.testing.assert_allclose(m.bands(k_vec), m.bands(ours), atol=0)


@pytest.mark.parametrize("name", ["haldane", "kane_mele_odd"])
def test_eigenvectors_match_pythtb_up_to_phase(name):
    """PythTB's states (orbital convention, rows) against spectra's (columns)."""
    p, m = CASES[name][0]()
    k = np.random.default_rng(3).random((40, 2))
    evals, evecs = p.solve_all(k, eig_vectors=True)
    w, v = m.eigh(k, convention="orbital")
    np.testing.assert_allclose(w, evals.T, atol=1e-12)
    ref = evecs.reshape(evecs.shape[0], len(k), -1)  # (band, k, state)
    gap = np.diff(w, axis=1).min()
    assert gap > 1e-3  # nondegenerate: states unique up to a phase
    overlap = np.einsum("bks,ksb->kb", ref.conj(), v)
    np.testing.assert_allclose(np.abs(overlap), 1.0, atol=1e-10)


def test_haldane_dense_mesh_eigenvalues():
    """haldane.py: all eigenvalues on the 20 x 20 mesh (the DOS input)."""
    p, m = haldane_twins()
    kpts = [[i / 20, j / 20] for i in range(20) for j in range(20)]
    np.testing.assert_allclose(m.bands(kpts).T.ravel(), p.solve_all(kpts).ravel(), atol=1e-12)


def _wrap(a):
    return np.angle(np.exp(1j * np.asarray(a)))


def test_haldane_bp_berry_phases_and_flux():
    """haldane_bp.py: Berry phases of band 0, band 1 and both along kx for each ky
    (contin=True in PythTB: compared mod 2 pi), and the Berry flux of band 0."""
    p, m = haldane_twins(delta=0.0)
    arr = wf_array(p, [31, 31])
    arr.solve_on_grid([-0.5, -0.5])
    kx = np.linspace(-0.5, 0.5, 31)
    ky = np.linspace(-0.5, 0.5, 31)
    loops = np.stack(np.meshgrid(kx, ky, indexing="ij"), -1).transpose(1, 0, 2)  # (ky, kx, 2)
    for bands, ours_bands in (([0], [0]), ([1], [1]), ([0, 1], 2)):
        ref = arr.berry_phase(bands, 0, contin=True)
        ours = berry_phase(m, loops, ours_bands)
        np.testing.assert_allclose(_wrap(ours - ref), 0.0, atol=1e-9)
    flux = arr.berry_flux([0])
    ours_flux = berry_flux(m, 1, (30, 30), k0=None)
    assert abs(ours_flux.sum() - flux) < 1e-9  # the total, 2 pi C
    assert round(flux / (2 * np.pi)) == round(chern_number(m, 1, (30, 30)))
    per_plaquette = arr.berry_flux([0], individual_phases=True)  # mesh from (-1/2, -1/2)
    shifted = np.roll(ours_flux, (-15, -15), axis=(0, 1))  # ours starts at k = 0
    np.testing.assert_allclose(_wrap(shifted - per_plaquette), 0.0, atol=1e-9)


@pytest.mark.parametrize("topological", ["even", "odd"])
def test_kane_mele_wannier_centres(topological):
    """kane_mele.py: hybrid Wannier centres of the two occupied bands along ky for each kx
    (berry_evals=True, contin=False) on the 41 x 41 grid from (-1/2, -1/2); PythTB's example
    plots them to read off Z2, so the whole flow is compared."""
    p, m = kane_mele_twins(topological)
    arr = wf_array(p, [41, 41])
    arr.solve_on_grid([-0.5, -0.5])
    ref = arr.berry_phase([0, 1], dir=1, contin=False, berry_evals=True)  # (41, 2)
    k = np.linspace(-0.5, 0.5, 41)
    loops = np.stack(np.meshgrid(k, k, indexing="ij"), -1)  # (kx, ky, 2): loops along ky
    ours = wilson_loop(m, loops, 2)
    np.testing.assert_allclose(np.sort(_wrap(ref), -1), np.sort(_wrap(ours), -1), atol=1e-9)
    # Kramers pairs at the time-reversal invariant kx = 0 and 1/2
    np.testing.assert_allclose(ours[20, 0], ours[20, 1], atol=1e-9)
    np.testing.assert_allclose(ours[40, 0], ours[40, 1], atol=1e-9)


def test_3site_cycle_wannier_centre_pumping():
    """3site_cycle.py: a 1-D three-site chain with on-site energies cycled by lambda; the
    Berry phase of the lowest band along k for each lambda (PythTB: one wf_array over
    (k, lambda)), and the charge pumped over the cycle (Berry flux / 2 pi = -1 in PythTB)."""
    delta, t, steps, nk = 2.0, -1.0, 21, 31
    lambdas = np.linspace(0.0, 1.0, steps)
    p = tb_model(1, 1, [[1.0]], [[0.0], [1.0 / 3.0], [2.0 / 3.0]])
    p.set_hop(t, 0, 1, [0])
    p.set_hop(t, 1, 2, [0])
    p.set_hop(t, 2, 0, [1])
    arr = wf_array(p, [nk, steps])
    ours = []
    for i, lam in enumerate(lambdas):
        onsite = [-delta * np.cos(2 * np.pi * (lam - s / 3.0)) for s in range(3)]
        p.set_onsite(onsite, mode="reset")
        k_vec, _, _ = p.k_path([[-0.5], [0.5]], nk, report=False)
        _, evec = p.solve_all(k_vec, eig_vectors=True)
        for j in range(nk):
            arr[j, i] = evec[:, j, :]
        m = Model([[1.0]], [[0.0], [1.0 / 3.0], [2.0 / 3.0]])
        m.set_onsite(onsite)
        m.add_hopping(t, 0, 1, [0])
        m.add_hopping(t, 1, 2, [0])
        m.add_hopping(t, 2, 0, [1])
        ours.append(float(berry_phase(m, k_vec, 1)))
    arr.impose_pbc(0, 0)
    ref = arr.berry_phase([0], 0)
    np.testing.assert_allclose(_wrap(np.array(ours) - ref), 0.0, atol=1e-9)
    # the pumped charge: the continuous change of the phase over the cycle; by Stokes it is
    # minus PythTB's Berry flux through its (k, lambda) mesh (plaquette orientation)
    pumped = np.sum(_wrap(np.diff(ours))) / (2 * np.pi)
    assert round(pumped) == 1
    assert round(arr.berry_flux([0]) / (2 * np.pi)) == -1
    assert abs(pumped + arr.berry_flux([0]) / (2 * np.pi)) < 1e-9


def test_edge_ribbon_bands_match_pythtb_cut_piece():
    """edge.py: a Haldane ribbon 10 cells wide (PythTB's cut_piece(10, 1, glue_edgs=False))."""
    p, m = haldane_twins(delta=0.0, t2=T2)
    ribbon_p = p.cut_piece(10, 1, glue_edgs=False)
    ribbon = cut(m, 1, 10)
    k_vec, _, _ = ribbon_p.k_path("full", 100, report=False)
    np.testing.assert_allclose(ribbon.bands(k_vec), ribbon_p.solve_all(k_vec).T, atol=1e-12)


def test_supercell_slab_bands_match_pythtb():
    """supercell.py: graphene in the supercell [[2, 1], [-1, 2]], then a slab 6 cells thick
    (PythTB: make_supercell(..., to_home=True).cut_piece(6, 1, glue_edgs=False))."""
    p, m = graphene_twins()
    sc = [[2, 1], [-1, 2]]
    sc_p = p.make_supercell(sc, to_home=True)
    sc_m = supercell(m, sc)
    k = np.random.default_rng(4).random((25, 2))
    np.testing.assert_allclose(sc_m.bands(k), sc_p.solve_all(k).T, atol=1e-12)
    slab_p = sc_p.cut_piece(6, 1, glue_edgs=False)
    k_vec, _, _ = slab_p.k_path("full", 100, report=False)
    np.testing.assert_allclose(cut(sc_m, 1, 6).bands(k_vec), slab_p.solve_all(k_vec).T, atol=1e-12)


#: Ported tests, counted for the closing note of the trust issue.
PORTED = {
    "graphene.py": 1,
    "haldane.py": 3,
    "haldane_bp.py": 1,
    "kane_mele.py": 6,
    "checkerboard.py": 1,
    "3site_cycle.py": 1,
    "edge.py": 1,
    "supercell.py": 1,
}
