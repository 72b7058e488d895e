"""Graphene: bands along Γ-K-M-Γ with a tetrahedron DOS panel -> examples/out/tb_graphene.png.

.venv/bin/python examples/tb_graphene.py
"""

from pathlib import Path

import numpy as np

from spectra.tightbinding import dos, fermi_level, graphene, kpath, monkhorst_pack, plot_bands

OUT = Path(__file__).resolve().parent / "out"
OUT.mkdir(exist_ok=True)
model = graphene(t=-2.7)  # eV
path = kpath(model, "G,K,M,G", 300)
bands = model.bands(path.k)  # all 300 k-points in one batched call

grid = [120, 120]
energies = model.bands(monkhorst_pack(grid, gamma_centered=True))  # 14400 k-points
e = np.linspace(-9, 9, 721)
density = dos(energies, e, method="tetrahedron", kgrid=grid)
ef = fermi_level(energies, 2)  # 2 electrons per cell; a spinless band holds 2: Dirac point
print(f"Fermi level {ef:.4f} eV; bandwidth {energies.max() - energies.min():.3f} eV")
plot_bands(
    path,
    bands,
    dos=(e, density),
    fermi=ef,
    out=OUT / "tb_graphene.png",
    title="graphene, t = -2.7 eV",
    units="eV",
)
print(f"wrote {OUT / 'tb_graphene.png'}")
