"""Graphene: band structure along Γ-K-M-Γ with a tetrahedron DOS panel -> tb_graphene.png.

.venv/bin/python examples/tb_graphene.py
"""

import numpy as np

from spectra.tightbinding import dos, fermi_level, graphene, kpath, monkhorst_pack, plot_bands

model = graphene(t=-2.7)  # eV
path = kpath(model, "G,K,M,G", 300)
bands = model.bands(path.k)  # all 300 k-points in one batched call

grid = [120, 120]
energies = model.bands(monkhorst_pack(grid, gamma_centered=True))  # 14400 k-points
e = np.linspace(-9, 9, 721)
density = dos(energies, e, method="tetrahedron", kgrid=grid)
ef = fermi_level(energies, 2, degeneracy=2)  # two spin-degenerate electrons per cell
print(f"Fermi level {ef:.4f} eV; bandwidth {energies.max() - energies.min():.3f} eV")
plot_bands(
    path,
    bands,
    dos=(e, density),
    fermi=ef,
    out="tb_graphene.png",
    title="graphene, t = -2.7 eV",
    ylabel="E (eV)",
)
print("wrote tb_graphene.png")
