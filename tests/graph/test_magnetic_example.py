"""examples/graph_magnetic_pe.py runs in an empty working directory and writes its figure."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_magnetic_pe_example(tmp_path):
    start = time.time() - 1
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "graph_magnetic_pe.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "spectra differ by 0.0e+00" in done.stdout  # q = 0 cannot see directions
    assert "phase monotone along the path: True" in done.stdout
    assert not list(tmp_path.iterdir())
    figure = ROOT / "examples" / "out" / "graph_magnetic_pe.png"
    assert figure.exists() and figure.stat().st_mtime >= start
