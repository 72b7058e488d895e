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
    m = read_wannier90(f, dim=3)
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
    m = read_wannier90(f, dim=3)  # picks up ws_wsvec.dat automatically
    k = np.random.default_rng(14).random((8, 3))
    f_k = 0.5 * (np.exp(2j * np.pi * k[:, 0]) + np.exp(2j * np.pi * (k[:, 0] + k[:, 1])))
    ref = np.zeros((8, 2, 2), complex)
    ref[:, 0, 0], ref[:, 1, 1] = 0.5, -0.5
    ref[:, 0, 1] = t * f_k
    ref[:, 1, 0] = np.conj(t * f_k)
    np.testing.assert_allclose(m.hamiltonian(k), ref, atol=1e-12)
    plain = read_wannier90(f, auto=False, dim=3)  # without the shifts: plain R = (1, 0, 0)
    np.testing.assert_allclose(
        plain.hamiltonian(k)[:, 0, 1], t * np.exp(2j * np.pi * k[:, 0]), atol=1e-12
    )


def test_shipped_data_files():
    m = read_wannier90(DATA / "graphene_hr.dat")
    assert m.nstates == 2 and m.dim_k == 2 and m.units == "eV"  # 2-D detected from R
    np.testing.assert_allclose(np.linalg.norm(m.lattice[0]), 2.46)
    k = np.array([[2 / 3, 1 / 3], [0.0, 0.0]])
    np.testing.assert_allclose(m.bands(k), [[0, 0], [-8.1, 8.1]], atol=1e-9)
    h = read_wannier90(DATA / "haldane_hr.dat")
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


def _graphene_file(tmp_path):
    f = tmp_path / "g_hr.dat"
    write_wannier90(graphene(), f, centres=False)
    return f, f.read_text().splitlines()


@pytest.mark.parametrize(
    ("column", "token", "what"),
    [(3, "1.7", "m"), (4, "2.0", "n"), (0, "1.4", "R1"), (2, "0.5", "R3"), (1, "x", "R2")],
)
def test_non_integer_indices_are_refused_with_file_and_line(tmp_path, column, token, what):
    from spectra.core.domain import InputError

    f, lines = _graphene_file(tmp_path)
    first = next(i for i, ln in enumerate(lines) if len(ln.split()) == 7)
    target = first + 5  # some body line
    tok = lines[target].split()
    tok[column] = token
    lines[target] = " ".join(tok)
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=rf"g_hr\.dat:{target + 1} {what} '{token}' is not an"):
        read_wannier90(f)
    with pytest.raises(ValueError, match="not an integer"):  # InputError is a ValueError
        parse_hr(f)


def test_non_integer_weight_and_bad_counts_are_refused(tmp_path):
    from spectra.core.domain import InputError

    f, lines = _graphene_file(tmp_path)
    bad = list(lines)
    bad[3] = bad[3].replace("1", "1.5", 1)
    f.write_text("\n".join(bad) + "\n")
    with pytest.raises(InputError, match=r"g_hr\.dat:4 degeneracy weight '1.5'"):
        read_wannier90(f)
    bad = list(lines)
    bad[1] = "2.5"
    f.write_text("\n".join(bad) + "\n")
    with pytest.raises(InputError, match=r"g_hr\.dat:2 must hold num_wann"):
        read_wannier90(f)
    bad = list(lines)
    bad[-1] = bad[-1] + " 0.0"
    f.write_text("\n".join(bad) + "\n")
    with pytest.raises(InputError, match=rf"g_hr\.dat:{len(lines)} expected 7 numbers"):
        read_wannier90(f)
    bad = list(lines)
    tok = bad[-1].split()
    tok[3] = "3"  # orbital 3 of 2
    bad[-1] = " ".join(tok)
    f.write_text("\n".join(bad) + "\n")
    with pytest.raises(InputError, match=rf"g_hr\.dat:{len(lines)} orbital index outside 1..2"):
        read_wannier90(f)


def _wsvec_lines(zero_at=None):
    lines = ["## use_ws_distance = T"]
    for r in [(-1, 0, 0), (0, 0, 0), (1, 0, 0)]:
        for m in range(2):
            for n in range(2):
                lines.append(f"{r[0]:5d}{r[1]:5d}{r[2]:5d}{m + 1:5d}{n + 1:5d}")
                if (r, m, n) == zero_at:
                    lines.append("    0")
                else:
                    lines += ["    1", "    0    0    0"]
    return lines


def test_wsvec_with_zero_shifts_or_fractions_is_refused(tmp_path):
    from spectra.core.domain import InputError
    from spectra.tightbinding._wannier90 import parse_wsvec

    f = tmp_path / "x_wsvec.dat"
    f.write_text("\n".join(_wsvec_lines()) + "\n")
    assert len(parse_wsvec(f, 2)) == 12
    lines = _wsvec_lines(zero_at=((0, 0, 0), 0, 1))
    f.write_text("\n".join(lines) + "\n")
    line = lines.index("    0") + 1
    with pytest.raises(InputError, match=rf"x_wsvec\.dat:{line} lists 0 shifts"):
        parse_wsvec(f, 2)
    lines = _wsvec_lines()
    lines[3] = "    0    0.5    0"
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"x_wsvec\.dat:4 expected a shift"):
        parse_wsvec(f, 2)
    f.write_text("\n".join(_wsvec_lines()[:-1]) + "\n")
    with pytest.raises(InputError, match="ends early"):
        parse_wsvec(f, 2)
    # read_wannier90 refuses a zero-shift entry instead of dropping the hopping
    hr = tmp_path / "x_hr.dat"
    blocks = {r: 0.1 * np.ones((2, 2), complex) for r in [(-1, 0, 0), (0, 0, 0), (1, 0, 0)]}
    write_hr(hr, blocks, dict.fromkeys(blocks, 1))
    f.write_text("\n".join(_wsvec_lines(zero_at=((1, 0, 0), 1, 0))) + "\n")
    with pytest.raises(InputError, match="0 would silently delete"):
        read_wannier90(hr)


def test_dim_detected_from_hoppings_and_overridable(tmp_path):
    from spectra.tightbinding import kpath, monkhorst_pack

    m = Model.from_wannier90(DATA / "graphene_hr.dat")
    assert m.dim == 2 and m.dim_k == 2
    k = monkhorst_pack([10, 10])
    assert m.bands(k).shape == (100, 2)
    path = kpath(m)
    assert path.labels == ["Γ", "K", "M", "Γ"]  # not the 3-D A, L, H path
    np.testing.assert_allclose(m.bands(path), m.bands(path.k))
    m3 = Model.from_wannier90(DATA / "graphene_hr.dat", dim=3)
    assert m3.dim_k == 3
    kk = np.c_[k, np.zeros(len(k))]
    np.testing.assert_allclose(m3.bands(kk), m.bands(k), atol=1e-12)
    chain = Model([[1.0]], 1)
    chain.add_hopping(-1.0, 0, 0, [1])
    write_wannier90(chain, tmp_path / "c_hr.dat")
    assert read_wannier90(tmp_path / "c_hr.dat").dim_k == 1
    with pytest.raises(ValueError, match="dim must be 1, 2 or 3"):
        read_wannier90(tmp_path / "c_hr.dat", dim=4)
