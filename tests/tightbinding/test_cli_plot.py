"""``spectra bands`` and the band-structure figure."""

from __future__ import annotations

import subprocess
import sys

import matplotlib  # noqa: F401  (a declared test dependency: never skipped)
import numpy as np
import pytest

from spectra.cli import main
from spectra.tightbinding import dos, graphene, kpath, monkhorst_pack, plot_bands


def test_bands_default_model_png(tmp_path, capsys):
    out = tmp_path / "bands.png"
    assert main(["bands", "--out", str(out), "--nk", "60", "--dos", "--grid", "30"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = capsys.readouterr().out
    assert "graphene_hr.dat" in text and "Γ-K-M-Γ" in text and "[-8.1, 8.1]" in text


def test_bands_file_path_svg_and_fermi(tmp_path, capsys):
    from spectra.tightbinding import write_wannier90

    write_wannier90(graphene(-1.0, 0.5), tmp_path / "gap_hr.dat")
    out = tmp_path / "b.svg"
    assert (
        main(
            [
                "bands",
                str(tmp_path / "gap_hr.dat"),
                "--path",
                "G,K,M,G",
                "--out",
                str(out),
                "--electrons",
                "2",  # one spin-degenerate band filled
                "--grid",
                "24",
            ]
        )
        == 0
    )
    assert out.read_text().lstrip().startswith(("<?xml", "<svg"))
    assert "E_F = 0" in capsys.readouterr().out  # mid-gap of the symmetric gapped model
    capsys.readouterr()
    assert main(["bands", str(tmp_path / "gap_hr.dat"), "--path", "G,Q", "--out", str(out)]) == 2
    assert "unknown k-point" in capsys.readouterr().err
    assert main(["bands", str(tmp_path / "missing_hr.dat")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_import_is_light():
    code = (
        "import sys, spectra.tightbinding, spectra.cli; spectra.cli.build_parser(); "
        "print('matplotlib' in sys.modules, 'pyscf' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_plot_bands_with_dos_panel(tmp_path):
    m = graphene()
    p = kpath(m, "G,K|M,G", 40)
    e = m.bands(p.k)
    grid = np.linspace(-3.5, 3.5, 200)
    g = dos(m.bands(monkhorst_pack([20, 20])), grid, sigma=0.1)
    fig = plot_bands(p, e, dos=(grid, g), fermi=0.0, out=tmp_path / "x.png", title="t")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Γ", "K|M", "Γ"]
    assert len(fig.axes) == 2
    with pytest.raises(ValueError, match="energies"):
        plot_bands(p, e[:-1])
