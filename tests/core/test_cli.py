"""The ``spectra check`` and ``spectra explain`` commands."""

from __future__ import annotations

import json

import torch

from spectra.cli import main
from spectra.core._support._selfcheck import run_checks

from .helpers import patch_torch_strategy


def test_check_passes_on_cpu_and_writes_json(tmp_path, capsys):
    out = tmp_path / "check.json"
    assert main(["check", "--device", "cpu", "--quick", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "PASS" in text and "FAIL" not in text.replace("0 failed", "")
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) >= 40 and all(r["passed"] for r in rows)


def test_check_detects_a_broken_solver(monkeypatch):
    from spectra.core import STRATEGIES
    from spectra.core._pipeline import _plan

    real = STRATEGIES["torch"].solve

    def wrong(a, vectors):
        w, v = real(a, vectors)
        return w * 1.001, v

    patch_torch_strategy(monkeypatch, wrong)
    # the planner would send the small "random" case to a kernel: keep it on torch here
    monkeypatch.setattr(_plan, "claims", lambda *args: [])
    monkeypatch.setattr(_plan, "preferred", lambda *args: None)
    _plan._plan_cached.cache_clear()
    try:
        rows = run_checks("cpu", quick=True, dtypes=(torch.float64,))
    finally:
        _plan._plan_cached.cache_clear()
    assert not all(r.passed for r in rows if r.case == "random")


def test_explain_prints_the_plan(capsys):
    assert main(["explain", "64", "1024", "--dtype", "float32", "--max-memory", "1000000"]) == 0
    text = capsys.readouterr().out
    assert "1024 matrices of 64x64 float32" in text and "chunks" in text
