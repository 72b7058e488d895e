"""Wannier90 hr.dat I/O: round trips, degeneracy weights, _wsvec.dat, centres and .win."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spectra.tightbinding import Model, graphene, read_wannier90, write_wannier90
from spectra.tightbinding._wannier90 import parse_hr

from .helpers import random_model

DATA = Path(__file__).resolve().parents[2] / "data"


def write_hr(path, blocks, ndegen, header="test"):
    """An hr.dat written the way Wannier90 does (F12.6, m fastest), blocks undivided."""
    rvecs = sorted(blocks)
    nw = blocks[rvecs[0]].shape[0]
    lines = [header, f"{nw:12d}", f"{len(rvecs):12d}"]
    deg = [f"{ndegen[r]:5d}" for r in rvecs]
    lines += ["".join(deg[i : i + 15]) for i in range(0, len(deg), 15)]
    for r in rvecs:
        for n in range(nw):
            for m in range(nw):
                v = blocks[r][m, n]
                lines.append(
                    f"{r[0]:5d}{r[1]:5d}{r[2]:5d}{m + 1:5d}{n + 1:5d}{v.real:12.6f}{v.imag:12.6f}"
                )
    Path(path).write_text("\n".join(lines) + "\n")


def test_written_then_read_reproduces_bands(tmp_path):
    rng = np.random.default_rng(11)
    m = random_model(rng, 3, norb=4, nhop=15)
    f = tmp_path / "rand_hr.dat"
    m.to_wannier90(f)
    back = Model.from_wannier90(f)
    k = rng.random((50, 3))
    np.testing.assert_allclose(back.bands(k), m.bands(k), atol=1e-12)
    # centres and lattice come back through _centres.xyz and .win, so states match too
    np.testing.assert_allclose(back.lattice, m.lattice, atol=1e-10)
    np.testing.assert_allclose(back.orbitals, m.orbitals, atol=1e-10)
    np.testing.assert_allclose(
        back.hamiltonian(k, convention="orbital"), m.hamiltonian(k, convention="orbital"), atol=1e-9
    )


def test_2d_and_spinful_round_trip(tmp_path):
    rng = np.random.default_rng(12)
    g = graphene(-2.7, 0.3)
    write_wannier90(g, tmp_path / "g_hr.dat")
    back = read_wannier90(tmp_path / "g_hr.dat", dim=2)
    k = rng.random((20, 2))
    np.testing.assert_allclose(back.bands(k), g.bands(k), atol=1e-12)
    s = random_model(rng, 2, norb=2, nhop=5, nspin=2)
    write_wannier90(s, tmp_path / "s_hr.dat")
    back = read_wannier90(tmp_path / "s_hr.dat", dim=2)
    assert back.nstates == 4
    np.testing.assert_allclose(back.bands(k), s.bands(k), atol=1e-12)
    with pytest.raises(ValueError, match="hoppings along"):
        read_wannier90(tmp_path / "s_hr.dat", dim=1)


def test_degeneracy_weights_are_divided_out(tmp_path):
    rng = np.random.default_rng(13)
    nw = 2
    ndegen, true = {}, {}
    for r in [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)]:
        a = rng.standard_normal((nw, nw)) + 1j * rng.standard_normal((nw, nw))
        if not any(r):
            a = a + a.conj().T
        d = int(rng.integers(1, 5))
        true[r] = np.round(a, 6)
        true[tuple(-x for x in r)] = np.round(a, 6).conj().T
        ndegen[r] = ndegen[tuple(-x for x in r)] = d
    blocks = {r: true[r] * ndegen[r] for r in true}
    # more than 15 R vectors: several lines of degeneracy weights
    for i in range(2, 10):
        for r in ((i, 0, 0), (-i, 0, 0)):
            blocks[r] = np.zeros((nw, nw), complex)
            true[r] = blocks[r]
            ndegen[r] = 1
    f = tmp_path / "deg_hr.dat"
    write_hr(f, blocks, ndegen)
    m = read_wannier90(f)
    k = rng.random((10, 3))
    ref = np.array(
        [sum(np.exp(2j * np.pi * kk @ np.array(r)) * b for r, b in true.items()) for kk in k]
    )
    np.testing.assert_allclose(m.hamiltonian(k), ref, atol=1e-9)
    rv, nd, _hr = parse_hr(f)
    assert len(rv) == len(blocks)
    assert [int(d) for d in nd] == [ndegen[tuple(int(x) for x in r)] for r in rv]


def test_wsvec_shifts(tmp_path):
    # one hopping <1,0|H|2,R=(1,0,0)> = t with ndegen 2, split by _wsvec.dat over R and R+T
    nw = 2
    t = 0.8
    h0 = np.array([[0.5, 0.0], [0.0, -0.5]], complex)
    hop = np.zeros((nw, nw), complex)
    hop[0, 1] = t * 2
    blocks = {(0, 0, 0): h0, (1, 0, 0): hop, (-1, 0, 0): hop.conj().T}
    ndegen = {(0, 0, 0): 1, (1, 0, 0): 2, (-1, 0, 0): 2}
    f = tmp_path / "ws_hr.dat"
    write_hr(f, blocks, ndegen)
    lines = ["## use_ws_distance = T"]
    for r in sorted(blocks):
        for m in range(nw):
            for n in range(nw):
                lines.append(f"{r[0]:5d}{r[1]:5d}{r[2]:5d}{m + 1:5d}{n + 1:5d}")
                if r == (1, 0, 0) and (m, n) == (0, 1):
                    lines += ["    2", "    0    0    0", "    0    1    0"]
                elif r == (-1, 0, 0) and (m, n) == (1, 0):
                    lines += ["    2", "    0    0    0", "    0   -1    0"]
                else:
                    lines += ["    1", "    0    0    0"]
    (tmp_path / "ws_wsvec.dat").write_text("\n".join(lines) + "\n")
    m = read_wannier90(f)  # picks up ws_wsvec.dat automatically
    k = np.random.default_rng(14).random((8, 3))
    f_k = 0.5 * (np.exp(2j * np.pi * k[:, 0]) + np.exp(2j * np.pi * (k[:, 0] + k[:, 1])))
    ref = np.zeros((8, 2, 2), complex)
    ref[:, 0, 0], ref[:, 1, 1] = 0.5, -0.5
    ref[:, 0, 1] = t * f_k
    ref[:, 1, 0] = np.conj(t * f_k)
    np.testing.assert_allclose(m.hamiltonian(k), ref, atol=1e-12)
    plain = read_wannier90(f, auto=False)  # without the shifts: plain R = (1, 0, 0)
    np.testing.assert_allclose(
        plain.hamiltonian(k)[:, 0, 1], t * np.exp(2j * np.pi * k[:, 0]), atol=1e-12
    )


def test_shipped_data_files():
    m = read_wannier90(DATA / "graphene_hr.dat")
    assert m.nstates == 2
    np.testing.assert_allclose(np.linalg.norm(m.lattice[0]), 2.46)
    k = np.array([[2 / 3, 1 / 3, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(m.bands(k), [[0, 0], [-8.1, 8.1]], atol=1e-9)
    h = read_wannier90(DATA / "haldane_hr.dat", dim=2)
    from spectra.tightbinding import chern_number

    assert round(chern_number(h, 1, (12, 12))) == -1


def test_malformed_files(tmp_path):
    f = tmp_path / "bad_hr.dat"
    f.write_text("header\n2\n")
    with pytest.raises(ValueError, match="too short"):
        read_wannier90(f)
    f.write_text("header\n2\n1\n1\n0 0 0 1 1 1.0 0.0\n")
    with pytest.raises(ValueError, match="expected 1 x 2"):
        read_wannier90(f)
    write_hr(f, {(0, 0, 0): np.array([[1.0, 0.5], [0.0, 1.0]], complex)}, {(0, 0, 0): 1})
    with pytest.raises(ValueError, match="not Hermitian"):
        read_wannier90(f)
    write_hr(f, {(1, 0, 0): np.eye(2, dtype=complex)}, {(1, 0, 0): 1})
    with pytest.raises(ValueError, match="partner"):
        read_wannier90(f)
    g = graphene()
    g.add_overlap(0.1, 0, 1, [0, 0])
    with pytest.raises(ValueError, match="non-orthogonal"):
        write_wannier90(g, tmp_path / "x_hr.dat")
