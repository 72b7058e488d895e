"""Generate the Wannier90 runs in ``data/`` that exercise the ``.win`` / ``_tb.dat`` readers.

``python data/make_w90_data.py`` (from the repo root) writes:

- ``spinor_chain/``: a chain of spinor s orbitals (``spinors = .true.``, 2 Wannier functions
  per cell) with spin-orbit hopping, as a whole Wannier90 folder: ``chain.win`` (cell in
  bohr, ``kpoint_path``, ``fermi_energy``, ``atoms_frac``, comments and mixed separators),
  ``chain_hr.dat`` (a Latin-1 degree sign in its header, as some builds write),
  ``chain_centres.xyz`` and ``chain_tb.dat``. Its bands are
  ``E(k) = -2 t cos(2 pi k) +- 2 lam sin(2 pi k) = -A cos(2 pi k -+ phi)``,
  ``A = 2 sqrt(t^2 + lam^2)``: with one electron per spinor band and ``N`` electrons per cell
  each band is ``N / 2`` full, so ``E_F = -A cos(pi N / 2)`` (``fermi_energy`` is the value
  for ``N = 1``, 0 eV);
- ``graphene_xz/``: graphene (a = 2.46 A, t = -2.7 eV) whose layer lies in the x-z plane
  (the Cartesian axes of ``graphene_hr.dat`` relabelled (x, y, z) -> (x, z, y)), with a
  ``kpoint_path``;
- ``haldane_tb.dat``: the Haldane model of ``haldane_hr.dat`` as a Wannier90 >= 3
  ``_tb.dat`` (lattice, H(R) and the position matrix, centres on its R = 0 diagonal).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
from make_tb_data import haldane_3d  # the same lifted Haldane model as haldane_hr.dat

from spectra.tightbinding import Model, write_wannier90

HERE = Path(__file__).resolve().parent
BOHR = 0.52917721092
#: the spinor chain's hopping and spin-orbit strength (eV), its lattice constant (Angstrom)
T, LAM, A_CHAIN = 1.0, 0.4, 2.5


def spinor_chain() -> Model:
    """Two spinor Wannier functions per cell, ``H(k) = -2t cos k + 2 lam sin k n.sigma``."""
    lattice = np.diag([A_CHAIN, 10.0, 10.0])
    m = Model(lattice, [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    axis = np.array([0.6, 0.0, 0.8])  # n.sigma with n = (0.6, 0, 0.8)
    sx = np.array([[0, 1], [1, 0]], complex)
    sz = np.array([[1, 0], [0, -1]], complex)
    soc = axis[0] * sx + axis[2] * sz
    block = -T * np.eye(2) - 1j * LAM * soc  # H(R = +a1); 2 lam sin k from -i lam (e^ik - e^-ik)
    rv = np.array([[0, 0, 0], [1, 0, 0], [-1, 0, 0]])
    m.set_blocks(rv, np.stack([np.zeros((2, 2), complex), block, block.conj().T]))
    m.spinors = True
    return m


def _chain_win() -> str:
    cell = A_CHAIN / BOHR
    big = 10.0 / BOHR
    return f"""! spinor chain for spectra's tests (data/make_w90_data.py)
Num_Wann : 2
num_bands   2        # no disentanglement
SPINORS = T
fermi_energy = 0.0
begin kpoint_path
X -0.5 0.0 0.0  G 0.0 0.0 0.0
G 0.0 0.0 0.0   X 0.5 0.0 0.0
end kpoint_path
Begin Unit_Cell_Cart
bohr
{cell:.10f} 0.0 0.0
0.0 {big:.10f} 0.0
0.0 0.0 {big:.10f}
End Unit_Cell_Cart
begin atoms_frac
H 0.0 0.0 0.0
end atoms_frac
mp_grid = 8 1 1
"""


def graphene_xz(a: float = 2.46, t: float = -2.7, c: float = 10.0) -> Model:
    """Graphene in a 3D cell with the layer in the x-z plane (vacuum along y)."""
    lattice = np.array([[a, 0.0, 0.0], [a / 2, 0.0, a * np.sqrt(3) / 2], [0.0, c, 0.0]])
    m = Model(lattice, [[1 / 3, 1 / 3, 0.0], [2 / 3, 2 / 3, 0.0]])
    for r in ([0, 0, 0], [-1, 0, 0], [0, -1, 0]):
        m.add_hopping(t, 0, 1, r)
    return m


def main() -> None:
    folder = HERE / "spinor_chain"
    folder.mkdir(exist_ok=True)
    write_wannier90(spinor_chain(), folder / "chain_hr.dat", tb=True, header="chain")
    (folder / "chain.win").write_text(_chain_win())
    hr = folder / "chain_hr.dat"
    lines = hr.read_bytes().split(b"\n")
    lines[0] = "spinor chain, written 01Dec2026 at 20:00:00, T = 25\xb0C".encode("latin-1")
    hr.write_bytes(b"\n".join(lines))
    folder = HERE / "graphene_xz"
    folder.mkdir(exist_ok=True)
    write_wannier90(
        graphene_xz(),
        folder / "graphene_xz_hr.dat",
        header="graphene, layer in the x-z plane (spectra data/make_w90_data.py)",
        win="begin kpoint_path\nG 0 0 0 K 0.6666666667 0.3333333333 0\n"
        "K 0.6666666667 0.3333333333 0 M 0.5 0.5 0\nM 0.5 0.5 0 G 0 0 0\nend kpoint_path\n",
    )
    with tempfile.TemporaryDirectory() as tmp:  # haldane_hr.dat holds the same H(R)
        write_wannier90(
            haldane_3d(),
            Path(tmp) / "haldane_hr.dat",
            tb=True,
            centres=False,
            header="Haldane model t2 = 0.15, phi = pi/2, M = 0.1 (spectra data/make_w90_data.py)",
        )
        shutil.copy(Path(tmp) / "haldane_tb.dat", HERE / "haldane_tb.dat")


if __name__ == "__main__":
    main()
