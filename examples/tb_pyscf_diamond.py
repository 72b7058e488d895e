"""Diamond (gth-szv, LDA, 2x2x2 k-mesh) band structure from PySCF, all band k-points solved in
one generalized batched call, compared with kmf.get_bands -> tb_pyscf_diamond.png.

    .venv/bin/python examples/tb_pyscf_diamond.py
"""

import time

import numpy as np
from pyscf.pbc import dft, gto

from spectra.tightbinding import kpath, plot_bands, pyscf_bands

HARTREE_EV = 27.211386245988

cell = gto.Cell()
cell.atom = "C 0 0 0; C 0.8925 0.8925 0.8925"
cell.a = [[0, 1.785, 1.785], [1.785, 0, 1.785], [1.785, 1.785, 0]]
cell.basis, cell.pseudo, cell.verbose = "gth-szv", "gth-pade", 0
cell.mesh = [13, 13, 13]  # a coarse FFT mesh keeps the example quick
cell.build()
kmf = dft.KRKS(cell, cell.make_kpts([2, 2, 2]))
kmf.xc = "lda"
kmf.kernel()
print(f"E_tot = {kmf.e_tot:.8f} Ha")

path = kpath(cell.lattice_vectors(), "L,G,X,W,K,G", 40)  # fcc detected from cell.a
kpts = cell.get_abs_kpts(path.k)
t0 = time.perf_counter()
energies, _ = pyscf_bands(kmf, kpts)
t1 = time.perf_counter()
reference, _ = kmf.get_bands(kpts)
t2 = time.perf_counter()
print(
    f"pyscf_bands {t1 - t0:.2f} s, get_bands {t2 - t1:.2f} s, "
    f"max |dE| = {np.abs(energies - np.asarray(reference)).max():.2e} Ha"
)

nocc = cell.nelectron // 2
vbm = energies[:, :nocc].max()
plot_bands(
    path,
    (energies - vbm) * HARTREE_EV,
    fermi=0.0,
    out="tb_pyscf_diamond.png",
    title="diamond, LDA/gth-szv",
    ylabel="E - VBM (eV)",
)
print("wrote tb_pyscf_diamond.png")
