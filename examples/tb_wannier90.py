"""Read a Wannier90 hr.dat (data/haldane_hr.dat, with its .win and _centres.xyz), plot its
bands, and check a round trip through a written file -> examples/out/tb_wannier90.png.

    .venv/bin/python examples/tb_wannier90.py [path/to/seedname_hr.dat]
"""

import sys
import tempfile
from pathlib import Path

import numpy as np

from spectra.tightbinding import Model, chern_number, kpath, plot_bands

default = Path(__file__).resolve().parents[1] / "data" / "haldane_hr.dat"
path = Path(sys.argv[1]) if len(sys.argv) > 1 else default
model = Model.from_wannier90(path, dim=2)  # a layer: keep the two in-plane directions
print(model)
p = kpath(model, None, 240)
bands = model.bands(p.k)
print(
    f"gap {(bands[:, 1] - bands[:, 0]).min():.4f}; "
    f"Chern number of band 1: {chern_number(model, 1, (24, 24)):+.3f}"
)

with tempfile.TemporaryDirectory() as tmp:
    model.to_wannier90(Path(tmp) / "copy_hr.dat")
    again = Model.from_wannier90(Path(tmp) / "copy_hr.dat", dim=2)
    print("round trip max |dE| =", float(np.abs(again.bands(p.k) - bands).max()))

OUT = Path(__file__).resolve().parent / "out"
OUT.mkdir(exist_ok=True)
plot_bands(p, bands, out=OUT / "tb_wannier90.png", title=path.name, units="eV")
print(f"wrote {OUT / 'tb_wannier90.png'}")
