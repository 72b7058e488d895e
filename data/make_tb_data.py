"""Generate the small tight-binding model files in ``data/`` (run from the repo root).

``python data/make_tb_data.py`` writes:

- ``graphene_hr.dat`` / ``graphene.win`` / ``graphene_centres.xyz``: nearest-neighbour
  graphene (a = 2.46 Angstrom, t = -2.7 eV) as Wannier90 files, the default model of
  ``spectra bands``;
- ``haldane_hr.dat`` / ``haldane.win`` / ``haldane_centres.xyz``: Haldane's model
  (t1 = -1, t2 = 0.15, phi = pi/2, mass = 0.1), a Chern insulator.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from spectra.tightbinding import Model, haldane, write_wannier90

HERE = Path(__file__).resolve().parent


def graphene_3d(a: float = 2.46, t: float = -2.7, c: float = 10.0) -> Model:
    """Graphene in a 3D cell (vacuum along z), ready for a Wannier90 file."""
    lattice = np.array([[a, 0.0, 0.0], [a / 2, a * np.sqrt(3) / 2, 0.0], [0.0, 0.0, c]])
    m = Model(lattice, [[1 / 3, 1 / 3, 0.0], [2 / 3, 2 / 3, 0.0]])
    for r in ([0, 0, 0], [-1, 0, 0], [0, -1, 0]):
        m.add_hopping(t, 0, 1, r)
    return m


def haldane_3d() -> Model:
    """Haldane's model lifted to a 3D cell (no hopping along z)."""
    flat = haldane(t1=-1.0, t2=0.15, phi=np.pi / 2, mass=0.1)
    lattice = np.eye(3)
    lattice[:2, :2] = flat.lattice
    lattice[2, 2] = 10.0
    orb = np.zeros((flat.norb, 3))
    orb[:, :2] = flat.orbitals
    m = Model(lattice, orb)
    rv, hr, _ = flat.blocks()
    m.set_blocks(np.hstack([rv, np.zeros((len(rv), 1), dtype=int)]), hr)
    return m


def main() -> None:
    write_wannier90(
        graphene_3d(),
        HERE / "graphene_hr.dat",
        header="graphene, t = -2.7 eV (spectra data/make_tb_data.py)",
    )
    write_wannier90(
        haldane_3d(),
        HERE / "haldane_hr.dat",
        header="Haldane model t2 = 0.15, phi = pi/2, M = 0.1 (spectra data/make_tb_data.py)",
    )


if __name__ == "__main__":
    main()
