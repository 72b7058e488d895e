"""Bad command lines: one line on stderr, exit status 2, no traceback; paths checked first."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from spectra.cli import main

ROOT = Path(__file__).resolve().parents[1]
GRAPHENE = str(ROOT / "data" / "graphene_hr.dat")
NO_CUDA = not torch.cuda.is_available()


def _bad_lines(tmp: Path) -> list[tuple[list[str], str]]:
    missing = str(tmp / "no-such-folder" / "x")
    cases = [
        (["explain", "-5", "10"], "n must be >= 1"),
        (["explain", "4", "-1"], "batch must be >= 0"),
        (["explain", "4", "ten"], "invalid int value"),
        (["explain", "4", "10", "--strategy", "nosuch"], "unknown strategy 'nosuch'"),
        (["explain", "4", "10", "--device", "gpu"], "use cpu, cuda or cuda:N"),
        (["explain", "4", "10", "--max-memory", "0"], "--max-memory must be >= 1"),
        (["explain", "4", "10", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        (["check", "--device", "gpu"], "use cpu, cuda or cuda:N"),
        (["check", "--json", missing + ".json"], "does not exist"),
        (["bands", str(ROOT / "README.md"), "--out", str(tmp / "b.png")], "not a Wannier90"),
        (["bands", str(tmp / "missing_hr.dat"), "--out", str(tmp / "b.png")], "no such file"),
        (["bands", GRAPHENE, "--out", missing + ".png"], "does not exist"),
        (["bands", GRAPHENE, "--out", str(tmp)], "is a folder"),
        (["bands", GRAPHENE, "--out", str(tmp / "b.txt")], ".png, .svg or .pdf"),
        (["bands", GRAPHENE, "--electrons", "5", "--out", str(tmp / "b.png")], "outside [0, 4]"),
        (["bands", GRAPHENE, "--electrons", "-1", "--out", str(tmp / "b.png")], "outside"),
        (["nosuchcommand"], "invalid choice"),
    ]
    if NO_CUDA:
        cases.append((["explain", "64", "1024", "--device", "cuda"], "no CUDA device"))
        cases.append((["check", "--device", "cuda:0"], "no CUDA device"))
    return cases


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    for argv, expected in _bad_lines(tmp_path):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's own errors
            code = exc.code
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert code == 2, (argv, captured.err)
        assert len(lines) == 1, (argv, captured.err)
        assert expected in lines[0], (argv, lines[0])
        assert lines[0].startswith("spectra"), lines[0]
        assert "Traceback" not in captured.err + captured.out
    assert not list(tmp_path.iterdir())  # nothing was written by a refused command


def test_explain_prints_readable_budget_and_warns_on_one_huge_matrix(capsys):
    assert main(["explain", "64", "100", "--max-memory", str(3 << 30)]) == 0
    out = capsys.readouterr()
    assert "budget 3.0 GiB" in out.out and out.err == ""
    assert main(["explain", "4096", "2", "--max-memory", str(1 << 20)]) == 0
    out = capsys.readouterr()
    assert "budget 1.0 MiB" in out.out
    assert re.search(r"warning: one 4096x4096 float64 matrix needs [\d.]+ MiB", out.err)


def test_bands_counts_two_electrons_per_spinless_band(tmp_path, capsys):
    out = tmp_path / "graphene.png"
    assert main(["bands", GRAPHENE, "--electrons", "2", "--grid", "60", "--out", str(out)]) == 0
    line = capsys.readouterr().out
    fermi = float(re.search(r"E_F = (\S+) ", line).group(1))
    assert abs(fermi) < 1e-6  # the Dirac point, not the top of the band (8.1 eV)
    assert out.stat().st_size > 0
    # a spin degeneracy of 1 puts 2 electrons at the top of the two bands
    assert main(["bands", GRAPHENE, "--electrons", "2", "--grid", "30",
                 "--spin-degeneracy", "1", "--out", str(out)]) == 0  # fmt: skip
    top = float(re.search(r"E_F = (\S+) ", capsys.readouterr().out).group(1))
    assert top > 8.0


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "spectra", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_python_m_spectra_version_and_errors_in_a_real_process():
    from spectra import __version__

    done = _run("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"spectra {__version__}"
    done = _run("explain", "-5", "10")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "spectra explain: error: matrix size n must be >= 1, got -5"
    ]


def test_spectra_debug_reraises(monkeypatch):
    monkeypatch.setenv("SPECTRA_DEBUG", "1")
    with pytest.raises(ValueError, match="n must be >= 1"):
        main(["explain", "-5", "10"])


def test_what_a_new_user_sees_in_the_repl():
    """Subpackages after ``import spectra``, short reprs, a verdict, helpful errors."""
    import numpy as np

    import spectra

    assert spectra.pca.BatchPCA is not None and spectra.stiefel.Stiefel is not None
    assert spectra.tightbinding.Model is not None and spectra.graph.laplacian is not None
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        spectra.nosuch

    from spectra.tightbinding import graphene, kpath

    text = repr(kpath(graphene(), "G,K,M,G", 300))
    assert text.startswith("KPath(Γ-K-M-Γ, 300 k-points") and "\n" not in text

    a = torch.randn(50, 6, 6, dtype=torch.float64)
    a = a + a.mT
    check = spectra.validate(a, *spectra.eigh(a))
    assert check.ok()
    assert repr(check).startswith("Validation(50 matrices, float64): OK at tol 1e-10")
    w, v = spectra.eigh(a.float())
    assert spectra.validate(a.float(), w, v).ok()  # float32 default tolerance 1e-4
    assert not spectra.validate(a, w.double() + 1e-3, v.double()).ok()
    assert "FAILED" in repr(spectra.validate(a, w.double() + 1e-3, v.double()))

    from spectra.stiefel import StiefelParameter

    with pytest.raises(ValueError, match="project=True") as exc:
        StiefelParameter(torch.from_numpy(np.ones((5, 3))))
    assert "batch indices ()" not in str(exc.value)
