"""Berry phases, Wilson loops and Chern numbers against PythTB and the Haldane phase diagram."""

from __future__ import annotations

import numpy as np
import pytest
import pythtb
import torch

from spectra.tightbinding import (
    berry_flux,
    berry_phase,
    chern_number,
    graphene,
    haldane,
    ssh,
    supercell,
    wilson_loop,
)
from spectra.tightbinding._topology import unitary_phases

from .helpers import random_model, to_pythtb


@pytest.mark.parametrize(
    "mass, phi, expected",
    [
        (0.1, np.pi / 2, -1),
        (-0.3, np.pi / 2, -1),
        (0.1, -np.pi / 2, 1),
        (0.5, 1.0, -1),
        (1.0, np.pi / 2, 0),
        (-1.0, -np.pi / 2, 0),
        (0.9, 0.3, 0),
    ],
)
def test_haldane_chern_number_phase_diagram(mass, phi, expected):
    t2 = 0.15
    topological = abs(mass) < 3 * np.sqrt(3) * abs(t2 * np.sin(phi))
    assert topological == (expected != 0)  # the parametrization is on the right side
    c = chern_number(haldane(t2=t2, phi=phi, mass=mass), 1, (24, 24))
    assert abs(c - expected) < 1e-8
    # the whole band set has zero Chern number
    assert abs(chern_number(haldane(t2=t2, phi=phi, mass=mass), 2, (12, 12))) < 1e-8


def test_chern_sign_and_flux_match_pythtb():
    m = haldane(t2=0.15, phi=0.7, mass=0.2)
    w = pythtb.wf_array(to_pythtb(m), [31, 31])
    w.solve_on_grid([0, 0])
    ref = w.berry_flux([0], individual_phases=True)  # (30, 30) plaquette phases
    ours = berry_flux(m, 1, (30, 30))
    np.testing.assert_allclose(ours, ref, atol=1e-9)
    assert round(chern_number(m, 1, (30, 30))) == round(w.berry_flux([0]) / (2 * np.pi))


def test_chern_on_supercell_is_additive():
    m = supercell(haldane(t2=0.15, phi=np.pi / 2, mass=0.1), [[2, 0], [0, 1]])
    assert abs(chern_number(m, 2, (16, 16)) - (-1)) < 1e-8


def loops_along(direction, n1, n2):
    k0 = np.arange(n1) / n1
    t = np.linspace(0, 1, n2 + 1)
    out = np.zeros((n1, n2 + 1, 2))
    out[:, :, 1 - direction] = k0[:, None]
    out[:, :, direction] = t[None, :]
    return out


@pytest.mark.parametrize("direction", [0, 1])
def test_berry_phase_and_wilson_loop_match_pythtb(direction):
    rng = np.random.default_rng(3)
    m = random_model(rng, 2, norb=4, nhop=14, reach=1)
    p = to_pythtb(m)
    n1, n2 = 8, 40
    w = pythtb.wf_array(p, [n1 + 1, n2 + 1] if direction == 1 else [n2 + 1, n1 + 1])
    w.solve_on_grid([0, 0])
    occ = [0, 1]
    ref_phase = w.berry_phase(occ, dir=direction, contin=False)[:n1]
    ref_evals = w.berry_phase(occ, dir=direction, contin=False, berry_evals=True)[:n1]
    loops = loops_along(direction, n1, n2)
    ours = berry_phase(m, loops, 2)
    np.testing.assert_allclose(np.angle(np.exp(1j * (ours - ref_phase))), 0, atol=1e-9)
    ours_w = wilson_loop(m, loops, occ)
    np.testing.assert_allclose(ours_w, np.sort(ref_evals, axis=-1), atol=1e-9)
    # the phases add up to the Berry phase (mod 2 pi)
    np.testing.assert_allclose(np.angle(np.exp(1j * (ours_w.sum(-1) - ours))), 0, atol=1e-9)


def test_ssh_zak_phase_and_torch_input():
    loop = np.linspace(0, 1, 61)[:, None]
    # Wannier centre at 1/4 (intra > inter: on the 0-0.5 bond) or 3/4; phase = 2 pi x
    assert abs(berry_phase(ssh(1.0, 0.5), loop, 1) - (np.pi / 2)) < 1e-10
    assert abs(berry_phase(ssh(0.5, 1.0), loop, 1) - (-np.pi / 2)) < 1e-10
    out = wilson_loop(ssh(1.0, 0.5), torch.from_numpy(loop), 1)
    assert isinstance(out, torch.Tensor) and abs(float(out[0]) - np.pi / 2) < 1e-10


def test_unitary_phases_with_degeneracies_and_pi():
    rng = np.random.default_rng(5)
    theta = np.array(
        [[np.pi, -np.pi + 1e-3, 0.3, 0.3], [0.0, 0.0, 0.0, 0.0], [-2.0, 2.0, 1.0, -1.0]]
    )
    q, _ = np.linalg.qr(rng.standard_normal((3, 4, 4)) + 1j * rng.standard_normal((3, 4, 4)))
    u = q @ (np.exp(1j * theta)[..., None] * q.conj().transpose(0, 2, 1))
    scaled = torch.from_numpy(u * 0.7)  # the polar step removes the non-unitary part
    got = unitary_phases(scaled).numpy()
    assert np.all(got > -np.pi) and np.all(got <= np.pi) and np.all(np.diff(got, axis=-1) >= 0)
    # the same multiset of points on the circle (pi and -pi are one phase)
    want = -theta
    dist = np.abs(np.angle(np.exp(1j * (got[:, :, None] - want[:, None, :]))))
    for row in dist:
        used = set()
        for i in range(row.shape[0]):
            j = min((j for j in range(row.shape[1]) if j not in used), key=lambda j: row[i, j])
            used.add(j)
            assert row[i, j] < 1e-8


def test_topology_errors():
    m = graphene()
    with pytest.raises(ValueError, match="not closed"):
        berry_phase(m, np.array([[0, 0], [0.3, 0], [0.5, 0.1]]), 1)
    with pytest.raises(ValueError, match="bands"):
        chern_number(m, 3)
    with pytest.raises(ValueError, match="grid"):
        chern_number(m, 1, (1, 5))
    m.add_overlap(0.1, 0, 1, [0, 0])
    with pytest.raises(NotImplementedError, match="orthogonal"):
        chern_number(m, 1)


def test_singular_link_is_refused_not_clamped():
    """Two uncoupled orbitals whose bands cross: the lowest band jumps from one orbital to the
    other between mesh points, so <u(k)|u(k')> = 0 there. The old polar factor clamped the
    zero Gram eigenvalue and returned a finite, meaningless phase."""
    import spectra
    from spectra.tightbinding import Model, berry_phase, wilson_loop

    m = Model([[1.0]], 2)
    m.add_hopping(0.5, 0, 0, [1])  # eps_0 = cos(2 pi k)
    m.add_hopping(-0.5, 1, 1, [1])  # eps_1 = -cos(2 pi k)
    loop = np.linspace(0, 1, 41)[:, None]
    with pytest.raises(spectra.LinAlgError, match="singular"):
        berry_phase(m, loop, 1)
    with pytest.raises(spectra.LinAlgError, match="refine the k mesh"):
        wilson_loop(m, loop, 1)
    # both bands together are a smooth (trivial) subspace: fine
    assert abs(float(berry_phase(m, loop, 2))) < 1e-12
