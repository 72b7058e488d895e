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
        (["explain", "4", "ten"], "expected an integer, got 'ten'"),
        (["explain", "4", "10", "--strategy", "nosuch"], "unknown strategy 'nosuch'"),
        (["explain", "4", "10", "--device", "gpu"], "use cpu, cuda or cuda:N"),
        (["explain", "4", "10", "--max-memory", "0"], "--max-memory must be >= 1"),
        (["explain", "4", "10", "--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        (["check", "--device", "gpu"], "use cpu, cuda or cuda:N"),
        (["check", "--json", missing + ".json"], "does not exist"),
        (["bands", str(ROOT / "README.md"), "--out", str(tmp / "b.png")], "Wannier90"),
        (["bands", str(tmp / "missing_hr.dat"), "--out", str(tmp / "b.png")], "no such file"),
        (["bands", GRAPHENE, "--out", missing + ".png"], "does not exist"),
        (["bands", GRAPHENE, "--out", str(tmp)], "is a folder"),
        (["bands", GRAPHENE, "--out", str(tmp / "b.txt")], ".png, .svg or .pdf"),
        (["bands", GRAPHENE, "--electrons", "5", "--out", str(tmp / "b.png")], "outside [0, 4]"),
        (["bands", GRAPHENE, "--electrons", "-1", "--out", str(tmp / "b.png")], "outside"),
        (["nosuchcommand"], "invalid choice"),
        # issue 24: every numeric option finite and in range, sizes checked against memory
        (["bands", GRAPHENE, "--spin-degeneracy", "inf", "--electrons", "2"], "finite number"),
        (["bands", GRAPHENE, "--spin-degeneracy", "nan"], "expected a finite number, got 'nan'"),
        (["bands", GRAPHENE, "--spin-degeneracy", "0"], "must be positive"),
        (["bands", GRAPHENE, "--electrons", "nan"], "finite number"),
        (["bands", GRAPHENE, "--electrons=-inf"], "finite number"),
        (["bands", GRAPHENE, "--electrons", "1e999"], "finite number"),
        (["bands", GRAPHENE, "--nk", "2.5"], "expected an integer, got '2.5'"),
        (["bands", GRAPHENE, "--nk", "1e3"], "expected an integer"),
        (["bands", GRAPHENE, "--nk", "2000000000", "--out", str(tmp / "b.png")], "memory"),
        (["bands", GRAPHENE, "--dos", "--grid", "200000", "--out", str(tmp / "b.png")], "memory"),
        (
            [
                "bands",
                GRAPHENE,
                "--electrons",
                "2",
                "--grid",
                "200000",
                "--out",
                str(tmp / "b.png"),
            ],
            "--grid 200000 needs about",
        ),
        (["bench", "--sizes", "100000:100000"], "--sizes 100000:100000 needs about"),
        (["bench", "--sizes", "8:0"], "positive n:batch"),
        (["bench", "--device", "tpu"], "use cpu, cuda or cuda:N"),
        (["bench", "--repeats", "0"], "positive integer"),
        (["bench", "--repeats", "100000"], "--repeats must be at most 1000"),
        (["bench", "--dask", "100000"], "local workers"),
        (["explain", "4", "10", "--device", "tpu"], "use cpu, cuda or cuda:N"),
        (["explain", "4", "10", "--max-memory", "1e9"], "expected an integer"),
        (["check", "--device", "tpu"], "use cpu, cuda or cuda:N"),
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


def _numeric_actions():
    import argparse

    from spectra._commands.validate import finite_float, whole_number
    from spectra.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for command, parser in sub.choices.items():
        for action in parser._actions:
            yield command, action, finite_float, whole_number


def test_every_numeric_option_of_every_command_is_checked(tmp_path, capsys):
    """No option keeps a bare ``float``/``int`` type, and each refuses nan/inf/non-integers."""
    seen = 0
    for command, action, finite_float, whole_number in _numeric_actions():
        assert action.type not in (float, int), (command, action.dest)
        if action.type not in (finite_float, whole_number) or not action.option_strings:
            continue
        seen += 1
        bads = ["nan", "inf", "-inf"] if action.type is finite_float else ["2.5", "inf"]
        for bad in bads:
            argv = [command, f"{action.option_strings[0]}={bad}"]
            with pytest.raises(SystemExit) as exc:
                main(argv)
            err = capsys.readouterr().err.strip().splitlines()
            assert exc.value.code == 2 and len(err) == 1, (argv, err)
            assert err[0].startswith(f"spectra {command}: error: argument "), err
    assert seen >= 7  # bands --nk/--grid/--electrons/--spin-degeneracy/--dim, explain x2


def test_sizes_are_checked_against_free_memory_before_any_work(tmp_path, capsys, monkeypatch):
    """With 64 MiB free, sizes that fit a normal machine are refused up front (one line)."""
    from spectra.core._support import _memory  # the one memory check every command uses

    monkeypatch.setattr(_memory, "available_memory", lambda device: 64 << 20)
    report = tmp_path / "bench.json"
    # 1024 matrices 128 x 128 need ~0.5 GiB at the draw's peak
    assert main(["bench", "--sizes", "128:1024", "--json", str(report)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "spectra bench: error: --sizes 128:1024 needs about 512.0 MiB of memory, more than "
        "the 64.0 MiB available here"
    ]
    out = tmp_path / "b.png"
    assert main(["bands", GRAPHENE, "--nk", "1000000", "--out", str(out)]) == 2
    assert "--nk 1000000 needs about 122.1 MiB" in capsys.readouterr().err
    assert main(["bands", GRAPHENE, "--dos", "--grid", "300", "--out", str(out)]) == 2
    assert "--grid 300 needs about 93.4 MiB" in capsys.readouterr().err  # 300^2 k-points
    assert not list(tmp_path.iterdir())
    # the same small run fits: the estimate is not a blanket refusal
    assert main(["bands", GRAPHENE, "--nk", "50", "--out", str(out)]) == 0
    assert out.stat().st_size > 0


def test_a_failed_allocation_is_an_input_error_not_an_internal_one(capsys, monkeypatch):
    import spectra._commands.explain as explain

    def boom(args):
        raise RuntimeError(
            "[enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: can't allocate memory"
        )

    monkeypatch.setattr(explain, "run", boom)
    assert main(["explain", "4", "10"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("spectra explain: error: out of memory")
    assert "internal error" not in err[0] and "please report" not in err[0]


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
    fermi = float(re.search(r"E_F = ([^\s;]+)", line).group(1))
    assert abs(fermi) < 1e-6  # the Dirac point, not the top of the band (8.1 eV)
    assert out.stat().st_size > 0
    # a spin degeneracy of 1 puts 2 electrons at the top of the two bands
    assert main(["bands", GRAPHENE, "--electrons", "2", "--grid", "30",
                 "--spin-degeneracy", "1", "--out", str(out)]) == 0  # fmt: skip
    top = float(re.search(r"E_F = ([^\s;]+)", capsys.readouterr().out).group(1))
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
