"""``spectra scan`` on the command line: output format, exit codes, --json, --diff/--fix."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from spectra.cli import main

from .helpers import CORPUS

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^(?P<path>[^:]+):(?:cell_\d+:)?\d+:\d+: SPX\d{3} (\[\*\] )?\S")


def test_findings_exit_1_in_linter_format(capsys):
    assert main(["scan", str(CORPUS / "tb_kloop.py")]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and all(LINE.match(line) for line in out[:3])
    assert out[0].startswith(f"{CORPUS / 'tb_kloop.py'}:18:12: SPX001 [*] ")
    assert out[-1] == "Found 3 per-matrix eigensolver calls (1 fixable with --fix)."


def test_clean_file_exits_0(capsys):
    assert main(["scan", str(CORPUS / "single_calls.py")]) == 0
    assert capsys.readouterr().out.strip() == "No per-matrix eigensolver calls found."


def test_notebook_lines_name_the_cell(capsys):
    assert main(["scan", str(CORPUS / "bands.ipynb")]) == 1
    out = capsys.readouterr().out
    assert f"{CORPUS / 'bands.ipynb'}:cell_4:3:21: SPX001 " in out


def test_lines_not_rewritten_say_why(tmp_path, capsys):
    """Issue 27: a finding --fix leaves alone names the reason on its line, not only in JSON."""
    src = tmp_path / "why.py"
    src.write_text(
        "import numpy as np\nfor m in ms:\n    print(np.linalg.eigh(m))\n"
        "ws = [np.linalg.eigvalsh(m)[0] for m in ms]\n"
    )
    assert main(["scan", str(src)]) == 1
    first, second, summary = capsys.readouterr().out.strip().splitlines()
    assert first.endswith(
        "(not rewritten by --fix: the loop body does more than append each result to a list)"
    )
    assert " [*] " in second and "not rewritten" not in second
    assert "batch it: `[w[0] for w in spectra.eigvalsh(list(ms))]`" in second
    assert summary == "Found 2 per-matrix eigensolver calls (1 fixable with --fix)."


def test_bad_input_exits_2_with_one_line(tmp_path, capsys):
    assert main(["scan", str(tmp_path / "nope.py")]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert err == [f"spectra scan: error: {tmp_path / 'nope.py'}: no such file or folder"]
    assert captured.out == ""  # no "No per-matrix eigensolver calls found." for no file
    (tmp_path / "broken.py").write_text("x = (\n")
    assert main(["scan", str(tmp_path / "broken.py")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "syntax error" in captured.err
    shutil.copy(CORPUS / "single_calls.py", tmp_path / "clean.py")
    assert main(["scan", str(tmp_path / "clean.py"), str(tmp_path / "nope.py")]) == 2
    captured = capsys.readouterr()  # one file was scanned: its (empty) result is reported
    assert captured.out == "No per-matrix eigensolver calls found.\n"
    assert main(["scan", "--select", "E501", str(CORPUS)]) == 2
    assert "unknown code 'E501'" in capsys.readouterr().err


def test_syntax_error_does_not_hide_other_findings(tmp_path, capsys):
    (tmp_path / "broken.py").write_text("def f(:\n")
    shutil.copy(CORPUS / "nested.py", tmp_path / "nested.py")
    assert main(["scan", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "nested.py:13:20: SPX001" in captured.out
    assert re.fullmatch(
        r"spectra scan: error: .*broken\.py:1:\d+: syntax error: .*\n", captured.err
    )


def test_json_schema(capsys, tmp_path):
    (tmp_path / "broken.py").write_text("x = (\n")
    code = main(["scan", "--json", str(CORPUS / "pca_datasets.py"), str(tmp_path / "broken.py")])
    assert code == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["version"] == 1 and doc["fixed"] == []
    assert [e["path"] for e in doc["errors"]] == [str(tmp_path / "broken.py")]
    assert set(doc["errors"][0]) == {"path", "line", "col", "message"}
    keys = {"path", "cell", "line", "col", "end_line", "end_col", "code", "message", "call",
            "solver", "replacement", "fixable", "fix_blocker"}  # fmt: skip
    assert all(set(f) == keys for f in doc["findings"])
    first = doc["findings"][0]
    assert (first["line"], first["code"], first["fixable"], first["cell"]) == (
        11,
        "SPX002",
        True,
        None,
    )
    assert first["solver"] == "numpy.linalg.eigh" and first["call"] == "np.linalg.eigh(np.cov(x.T))"
    blocked = [f for f in doc["findings"] if not f["fixable"]]
    assert blocked and all(f["fix_blocker"] for f in blocked)


def test_select_and_ignore_flags(capsys):
    assert main(["scan", "--select", "SPX003", str(CORPUS / "graph_transform.py")]) == 1
    out = capsys.readouterr().out
    assert " SPX003 " in out and " SPX001 " not in out
    assert main(["scan", "--ignore", "SPX00", str(CORPUS / "graph_transform.py")]) == 0


def test_diff_is_a_dry_run_and_fix_writes(tmp_path, capsys):
    path = tmp_path / "graph_transform.py"
    shutil.copy(CORPUS / "graph_transform.py", path)
    before = path.read_text()
    assert main(["scan", "--diff", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("# spectra scan --fix: batched rewrites; eigenvalues as before")
    assert f"--- {path}\n+++ {path}\n" in out and path.read_text() == before
    assert main(["scan", "--fix", str(path)]) == 1  # three loops rewritten, three left
    out = capsys.readouterr().out
    assert "Rewrote 3 call(s) in place." in out and "(0 fixable with --fix)" in out
    assert path.read_text() != before and "spectra.eigh(list(graphs))" in path.read_text()
    assert main(["scan", "--fix", "--json", str(path)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["fixed"] == [] and len(doc["findings"]) == 3


def test_fix_and_diff_are_exclusive():
    with pytest.raises(SystemExit) as exc:
        main(["scan", "--fix", "--diff", str(CORPUS)])
    assert exc.value.code == 2


def test_pre_commit_hook_declares_the_command():
    yaml = pytest.importorskip("yaml")
    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "spectra-scan" and hook["entry"] == "spectra scan"
    assert hook["language"] == "python" and hook["types"] == ["python"]
    # pre-commit appends the staged file names to the entry
    assert main([*hook["entry"].split()[1:], str(CORPUS / "single_calls.py")]) == 0
