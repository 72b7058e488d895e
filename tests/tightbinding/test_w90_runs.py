"""Whole Wannier90 runs: the .win file, _tb.dat, folders, spinors, layers in any orientation."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from spectra.cli import main
from spectra.core.domain import InputError
from spectra.tightbinding import Model, berry_phase, dos, kpath, read_wannier90
from spectra.tightbinding._tbdat import parse_tb, write_tb
from spectra.tightbinding._win import BOHR, read_win

DATA = Path(__file__).resolve().parents[2] / "data"
#: the shipped spinor chain (data/make_w90_data.py): t, lambda, so A = 2 sqrt(t^2 + lambda^2)
T, LAM = 1.0, 0.4
AMP = 2 * np.hypot(T, LAM)
TOL = {np.float64: 1e-10, np.float32: 2e-4}

WIN = """! a .win as people write them
NUM_WANN = 2   ! two
Spinors : .TRUE.
fermi_energy 1.25d0
# blocks in any order, unknown keywords ignored
begin ATOMS_CART
bohr
Pt 0.0 0.0 1.0
End atoms_cart
dis_froz_max = 12.0
begin kpoint_path
G 0 0 0 X 0.5 0 0
X 0.5 0 0 M 0.5 0.5 0
R 0.5 0.5 0.5 G 0 0 0
end kpoint_path
begin unit_cell_cart
  bohr
  2.0 0.0 0.0
  0.0 2.0 0.0
  0.0 0.0 2.0
end unit_cell_cart
"""


def test_win_keywords_blocks_units_and_path(tmp_path):
    f = tmp_path / "x.win"
    f.write_text(WIN)
    w = read_win(f)
    assert w.num_wann == 2 and w.spinors is True and w.fermi_energy == 1.25
    np.testing.assert_allclose(w.unit_cell, 2 * BOHR * np.eye(3), rtol=1e-15)
    assert [a for a, _ in w.atoms] == ["Pt"]
    np.testing.assert_allclose(w.atoms[0][1], [0, 0, BOHR], rtol=1e-15)
    assert w.kpoint_path is not None and w.kpoint_path.path == "G,X,M|R,G"
    np.testing.assert_allclose(w.kpoint_path.points["R"], [0.5, 0.5, 0.5])
    # atoms_frac in units of the cell, spinors false spelled differently, angstrom cell
    f.write_text(
        "begin unit_cell_cart\n1 0 0\n0 2 0\n0 0 3\nend unit_cell_cart\nspinors=f\n"
        "begin atoms_frac\nC 0.5 0.5 0.5\nend atoms_frac\n"
    )
    w = read_win(f)
    assert w.spinors is False and w.num_wann is None and w.kpoint_path is None
    np.testing.assert_allclose(w.atoms[0][1], [0.5, 1.0, 1.5])


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        ("num_wann = two\n", 1, "num_wann"),
        ("num_wann = 2\nnum_wann = 3\n", 2, "given twice"),
        ("\nspinors = yes\n", 2, "not a logical"),
        ("fermi_energy = 1.0 eV\n", 1, "not one number"),
        ("begin unit_cell_cart\n1 0 0\n0 1 0\nend unit_cell_cart\n", 3, "3 lattice vectors"),
        ("begin unit_cell_cart\n1 0 0\n0 1 x\n0 0 1\nend unit_cell_cart\n", 3, "not numeric"),
        ("begin unit_cell_cart\n1 0 0\n0 1 0\n0 0 1\n", 1, "no 'end unit_cell_cart'"),
        ("begin kpoint_path\nG 0 0 0 X 0.5 0\nend kpoint_path\n", 2, "found 7"),
        ("begin atoms_frac\nC 0 0 0\nend atoms_frac\n", 2, "needs a unit_cell_cart"),
        ("begin atoms_cart\nC 0 0\nend atoms_cart\n", 2, "4 entries"),
    ],
)
def test_malformed_known_keyword_names_file_and_line(tmp_path, text, line, what):
    f = tmp_path / "bad.win"
    f.write_text(text)
    with pytest.raises(InputError, match=what) as err:
        read_win(f)
    assert str(err.value).startswith(f"{f}:{line}")


def test_spinor_folder_counts_one_electron_per_band():
    m = read_wannier90(DATA / "spinor_chain")  # the whole folder, in one line
    assert m.spinors and m.electrons_per_band == 1.0 and "spinor" in m.counting
    assert m.fermi_energy == 0.0 and m.nstates == 2 and m.dim_k == 1
    # E(k) = -A cos(2 pi k -+ phi): N electrons fill each band to N / 2
    for n in (1.0, 0.5, 1.5):
        exact = -AMP * np.cos(np.pi * n / 2)
        assert abs(m.fermi_level(n, [2000]) - exact) < 1e-4
        # counted as spinless (2 per band), the level is far off: what the issue saw
        wrong = m.fermi_level(min(n, 1.0), [2000], degeneracy=2)
        assert abs(wrong - exact) > 0.3 or n > 1
    assert abs(m.fermi_level(1.0, [2000]) - m.fermi_energy) < 1e-4
    # spinless models keep counting two per band
    plain = read_wannier90(DATA / "graphene_hr.dat")
    assert plain.electrons_per_band == 2.0 and not plain.spinors


def test_win_kpoint_path_is_the_default_path(capsys, tmp_path):
    m = read_wannier90(DATA / "spinor_chain" / "chain.win")
    p = m.kpath(npoints=41)
    assert p.labels == ["X", "Γ", "X"]
    np.testing.assert_allclose(p.k[[0, -1], 0], [-0.5, 0.5])
    np.testing.assert_allclose(p.distance[-1], 2 * np.pi / 2.5, rtol=1e-12)
    assert m.kpath("G,X", 11).labels == ["Γ", "X"]  # an explicit path still wins
    out = tmp_path / "b.png"
    args = ["bands", str(DATA / "spinor_chain"), "--out", str(out), "--nk", "40"]
    assert main([*args, "--electrons", "1", "--grid", "400"]) == 0
    text = capsys.readouterr().out
    assert "X-Γ-X" in text and "counting 1 electron(s) per band: spinor" in text
    assert abs(float(text.split("E_F = ")[1].split()[0])) < 2e-2
    assert main([*args, "--spin-degeneracy", "2"]) == 0
    assert "counting 2 electron(s) per band (--spin-degeneracy)" in capsys.readouterr().out


def test_num_wann_checked_against_hr(tmp_path):
    for name in ("chain_hr.dat", "chain_centres.xyz"):
        shutil.copy(DATA / "spinor_chain" / name, tmp_path / name)
    (tmp_path / "chain.win").write_text("num_wann = 4\n")
    with pytest.raises(InputError, match=r"num_wann = 4, but chain_hr\.dat has 2") as err:
        read_wannier90(tmp_path)
    assert str(err.value).startswith(str(tmp_path / "chain.win"))
    assert read_wannier90(tmp_path, win=False).nstates == 2
    (tmp_path / "other_hr.dat").write_bytes((tmp_path / "chain_hr.dat").read_bytes())
    with pytest.raises(InputError, match="one Wannier90 seedname"):
        read_wannier90(tmp_path)


@pytest.mark.parametrize("seed", ["haldane", "spinor_chain/chain"])
def test_tb_dat_and_hr_plus_centres_give_the_same_model(seed):
    tb = read_wannier90(DATA / f"{seed}_tb.dat")
    hr = read_wannier90(DATA / f"{seed}_hr.dat")
    rng = np.random.default_rng(0)
    k = rng.random((40, tb.dim_k))
    np.testing.assert_allclose(tb.bands(k), hr.bands(k), atol=1e-12)
    np.testing.assert_allclose(tb.lattice, hr.lattice, atol=1e-12)
    np.testing.assert_allclose(tb.orbitals, hr.orbitals, atol=1e-10)
    ho = hr.hamiltonian(k, convention="orbital")
    np.testing.assert_allclose(tb.hamiltonian(k, convention="orbital"), ho, atol=1e-10)
    assert tb.position_matrix is not None and hr.position_matrix is None


def test_tb_positions_feed_the_berry_phase():
    tb = read_wannier90(DATA / "haldane_tb.dat")
    hr = read_wannier90(DATA / "haldane_hr.dat")
    loop = np.stack([np.linspace(0, 1, 61), np.full(61, 0.3)], -1)
    for band in (0, 1):
        np.testing.assert_allclose(
            berry_phase(tb, loop, [band]), berry_phase(hr, loop, [band]), atol=1e-9
        )
    # the centres are what moved: with them at the origin the phase differs
    at_origin = read_wannier90(DATA / "haldane_hr.dat", centres=np.zeros((2, 3)))
    assert abs(berry_phase(at_origin, loop, [0]) - berry_phase(tb, loop, [0])) > 1e-3


def test_tb_dat_round_trip_with_weights_and_off_diagonal_positions(tmp_path):
    rng = np.random.default_rng(3)
    nw, rv = 3, np.array([[0, 0, 0], [1, 0, 0], [-1, 0, 0], [0, 2, -1], [0, -2, 1]])
    hr = rng.standard_normal((5, nw, nw)) + 1j * rng.standard_normal((5, nw, nw))
    hr[0] = hr[0] + hr[0].conj().T
    hr[2], hr[4] = hr[1].conj().T, hr[3].conj().T
    rr = rng.standard_normal((5, 3, nw, nw)) + 1j * rng.standard_normal((5, 3, nw, nw))
    lat = np.eye(3) + 0.2 * rng.standard_normal((3, 3))
    deg = np.array([1, 2, 2, 3, 3])
    f = tmp_path / "r_tb.dat"
    write_tb(f, lat, rv, hr, rr, ndegen=deg, header="caf\xe9")
    back = parse_tb(f)
    np.testing.assert_allclose(back.hr, hr, rtol=1e-13)
    np.testing.assert_allclose(back.rr, rr, rtol=1e-13)
    np.testing.assert_array_equal(back.ndegen, deg)
    np.testing.assert_allclose(back.lattice, lat, rtol=1e-13)
    # the reader divides by the weights: the file holds H * ndegen
    raw = f.read_text().splitlines()
    first = next(i for i, ln in enumerate(raw) if ln.split() == ["1", "0", "0"])
    m1, n1, re1, _ = raw[first + 1].split()
    assert (m1, n1) == ("1", "1") and np.isclose(float(re1), 2 * hr[1, 0, 0].real)
    model = read_wannier90(f)
    assert model.dim_k == 3
    np.testing.assert_allclose(model.orbitals @ lat, np.diagonal(rr[0], 0, 1, 2).real.T, atol=1e-12)


@pytest.mark.parametrize(
    ("edit", "what"),
    [
        (lambda ln: ln.__setitem__(2, "0.5 0.8 x"), "not numeric"),
        (lambda ln: ln.__setitem__(4, "two"), "num_wann"),
        (lambda ln: ln.__setitem__(8, "    0    0"), "expected 3 numbers"),
        (lambda ln: ln.__setitem__(8, "    0    0  0.5"), "R vector"),
        (lambda ln: ln.__setitem__(10, "    2    1    0.1"), "expected 4 numbers"),
        (lambda ln: ln.__setitem__(10, "    2    1    0.1\xb0 0.0"), "not numeric"),
        (lambda ln: ln.__setitem__(9, "    2    2    0.1 0.0"), "expected m n = 1 1"),
        (lambda ln: ln.pop(), "found"),
    ],
)
def test_malformed_tb_dat_names_file_and_line(tmp_path, edit, what):
    lines = (DATA / "haldane_tb.dat").read_text().splitlines()
    edit(lines)
    f = tmp_path / "bad_tb.dat"
    f.write_text("\n".join(lines) + "\n", encoding="latin-1")
    with pytest.raises(InputError, match=what) as err:
        parse_tb(f)
    assert str(err.value).startswith(str(f))


def test_headers_are_free_text_numbers_stay_strict(tmp_path):
    for name in ("chain_hr.dat", "chain_tb.dat", "chain_centres.xyz"):
        shutil.copy(DATA / "spinor_chain" / name, tmp_path / name)
    assert b"\xb0" in (tmp_path / "chain_hr.dat").read_bytes().splitlines()[0]
    (tmp_path / "chain.win").write_bytes("! \xb0C\nspinors = t\n".encode("latin-1"))
    m = read_wannier90(tmp_path / "chain_hr.dat")
    assert m.spinors and m.nstates == 2
    raw = (tmp_path / "chain_hr.dat").read_bytes().splitlines()
    raw[-1] = raw[-1][:-2] + b"\xb0"
    (tmp_path / "chain_hr.dat").write_bytes(b"\n".join(raw) + b"\n")
    with pytest.raises(InputError, match="Re/Im is not a number") as err:
        read_wannier90(tmp_path / "chain_hr.dat")
    assert str(err.value).startswith(f"{tmp_path / 'chain_hr.dat'}:{len(raw)}")


def _rotated_copy(src: Path, seed: str, dst: Path, rot: np.ndarray, order=(0, 1, 2)) -> Path:
    """The Wannier90 files of ``src/seed`` with the Cartesian axes rotated by ``rot`` and the
    lattice vectors relabelled by ``order`` (R components permuted to match)."""
    win = read_win(src / f"{seed}.win")
    cell = win.unit_cell[list(order)] @ rot.T
    lines = (src / f"{seed}_hr.dat").read_text().splitlines()
    nr = int(lines[2])
    start = 3 + (nr + 14) // 15
    for i in range(start, len(lines)):
        tok = lines[i].split()
        r = [tok[j] for j in order]
        lines[i] = " ".join([*r, *tok[3:]])
    (dst / f"{seed}_hr.dat").write_text("\n".join(lines) + "\n")
    cent = (src / f"{seed}_centres.xyz").read_text().splitlines()
    out = cent[:2]
    for ln in cent[2:]:
        tok = ln.split()
        x = np.array(tok[1:4], float) @ rot.T
        out.append(f"{tok[0]} {x[0]:.12f} {x[1]:.12f} {x[2]:.12f}")
    (dst / f"{seed}_centres.xyz").write_text("\n".join(out) + "\n")
    rows = "\n".join(" ".join(f"{x:.14f}" for x in row) for row in cell)
    (dst / f"{seed}.win").write_text(f"begin unit_cell_cart\n{rows}\nend unit_cell_cart\n")
    return dst / f"{seed}_hr.dat"


def _random_rotation(rng):
    q, r = np.linalg.qr(rng.standard_normal((3, 3)))
    return q * np.sign(np.diag(r))


RELABEL = np.array([[1.0, 0, 0], [0, 0, 1], [0, 1, 0]])  # (x, y, z) -> (x, z, y), det -1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("seed", ["graphene", "haldane"])
def test_layer_invariant_under_rotation_and_relabelling(tmp_path, seed, dtype):
    ref = read_wannier90(DATA / f"{seed}_hr.dat")
    rng = np.random.default_rng(7)
    cases = [(RELABEL, (0, 1, 2)), (_random_rotation(rng), (0, 1, 2))]
    cases += [(_random_rotation(rng), (2, 0, 1))]  # the vacuum vector first
    k = rng.random((30, 2)).astype(dtype)
    pref = kpath(ref, None, 60)
    for n, (rot, order) in enumerate(cases):
        d = tmp_path / str(n)
        d.mkdir()
        m = read_wannier90(_rotated_copy(DATA, seed, d, rot, order))
        assert m.dim_k == 2 and m.periodic == (0, 1)
        # reciprocal vectors: the same lengths and angle (1.1-3 1/A, not 400)
        g, gr = m.reciprocal, ref.reciprocal
        np.testing.assert_allclose(g @ g.T, gr @ gr.T, rtol=1e-10)
        np.testing.assert_allclose(abs(np.linalg.det(m.lattice)), abs(np.linalg.det(ref.lattice)))
        p = kpath(m, None, 60)
        assert p.labels == pref.labels
        np.testing.assert_allclose(p.distance, pref.distance, rtol=1e-10)
        e = m.bands(k)  # the periodic vectors keep their order (the vacuum one is dropped)
        np.testing.assert_allclose(e, ref.bands(k), atol=TOL[dtype] * 10)
        grid = np.linspace(-4, 4, 81)
        np.testing.assert_allclose(dos(e, grid), dos(ref.bands(k), grid), atol=TOL[dtype] * 1e3)


def test_shipped_layer_in_xz_plane_matches_graphene():
    xz = read_wannier90(DATA / "graphene_xz")
    xy = read_wannier90(DATA / "graphene_hr.dat")
    assert xz.dim_k == 2
    np.testing.assert_allclose(np.linalg.norm(xz.reciprocal, axis=1), 4 * np.pi / (2.46 * 3**0.5))
    p, q = xz.kpath(npoints=50), xy.kpath(npoints=50)
    assert p.labels == q.labels == ["Γ", "K", "M", "Γ"]
    np.testing.assert_allclose(p.distance[-1], q.distance[-1], rtol=1e-9)
    np.testing.assert_allclose(xz.bands(p.k), xy.bands(q.k), atol=1e-8)


def test_vacuum_along_first_lattice_vector_and_explicit_periodic(tmp_path):
    m = read_wannier90(_rotated_copy(DATA, "graphene", tmp_path, np.eye(3), (2, 0, 1)))
    assert m.dim_k == 2  # detected: R vectors live in directions 1 and 2
    np.testing.assert_allclose(
        m.lattice @ m.lattice.T,
        read_wannier90(DATA / "graphene_hr.dat").lattice
        @ read_wannier90(DATA / "graphene_hr.dat").lattice.T,
        atol=1e-12,
    )
    with pytest.raises(InputError, match="outside periodic"):
        read_wannier90(tmp_path / "graphene_hr.dat", periodic=[0, 1])
    assert read_wannier90(tmp_path / "graphene_hr.dat", periodic=[0, 1, 2]).dim_k == 3
    with pytest.raises(InputError, match="dim or periodic"):
        read_wannier90(tmp_path / "graphene_hr.dat", dim=2, periodic=[1, 2])


def test_model_kpath_without_win_path_is_the_lattice_default():
    g = Model([[1.0, 0.0], [0.5, 3**0.5 / 2]], [[1 / 3, 1 / 3], [2 / 3, 2 / 3]])
    assert g.kpath(npoints=20).labels == ["Γ", "K", "M", "Γ"]


def test_tb_lattice_must_agree_with_win_and_win_needs_data(tmp_path):
    shutil.copy(DATA / "haldane_tb.dat", tmp_path / "haldane_tb.dat")
    win = tmp_path / "haldane.win"
    win.write_text("begin unit_cell_cart\n1 0 0\n0.5 0.8660254038 0\n0 0 10\nend unit_cell_cart\n")
    assert read_wannier90(tmp_path / "haldane.win").nstates == 2  # the .win finds its _tb.dat
    win.write_text(
        "begin unit_cell_cart\n1.1 0 0\n0.5 0.8660254038 0\n0 0 10\nend unit_cell_cart\n"
    )
    with pytest.raises(InputError, match="differs from the lattice"):
        read_wannier90(tmp_path)
    other = tmp_path / "other.win"
    other.write_text("num_wann 2\n")
    with pytest.raises(InputError, match=r"has no other_tb\.dat or other_hr\.dat"):
        read_wannier90(other)
    other.write_text("num_wann 2\nspinors = .true.\n")
    m = read_wannier90(tmp_path / "haldane_tb.dat", win=other)
    assert m.spinors  # an explicit .win wins over the one next to the file
