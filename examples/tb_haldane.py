"""Haldane model: Chern number of the lower band vs the mass -> examples/out/tb_haldane.png.

The model is topological (C = -1 in PythTB's sign convention for phi = pi/2) for
|M| < 3 sqrt(3) t2 and trivial beyond; the Fukui-Hatsugai-Suzuki mesh gives integers.

    .venv/bin/python examples/tb_haldane.py
"""

from pathlib import Path

import numpy as np

from spectra.tightbinding import chern_number, haldane

t2, phi = 0.15, np.pi / 2
masses = np.linspace(-1.2, 1.2, 49)
chern = [chern_number(haldane(t2=t2, phi=phi, mass=m), 1, (30, 30)) for m in masses]
critical = 3 * np.sqrt(3) * t2 * abs(np.sin(phi))
for m, c in zip(masses[::6], chern[::6], strict=True):
    print(f"M = {m:+.2f}  C = {c:+.3f}")
print(f"phase boundary |M| = 3 sqrt(3) t2 = {critical:.4f}")

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
except ImportError:
    raise SystemExit("matplotlib not installed: pip install torch-spectra[plot]") from None
OUT = Path(__file__).resolve().parent / "out"
OUT.mkdir(exist_ok=True)
fig, ax = plt.subplots(figsize=(5, 3.2), layout="constrained")
ax.plot(masses, chern, "o-", ms=3)
for x in (-critical, critical):
    ax.axvline(x, color="0.6", ls="--")
ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # Chern numbers are integers
ax.set_xlabel("sublattice mass M (units of |t1|)")
ax.set_ylabel("Chern number (lower band)")
ax.set_title(f"Haldane model, t2 = {t2}, φ = π/2")
fig.savefig(OUT / "tb_haldane.png", dpi=150)
print(f"wrote {OUT / 'tb_haldane.png'}")
