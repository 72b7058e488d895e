"""examples/graph_magnetic_pe.py runs in an empty working directory and writes its figure."""

from __future__ import annotations

from ..test_examples import _run


def test_magnetic_pe_example(tmp_path):
    stdout = _run("graph_magnetic_pe", ["graph_magnetic_pe.png"], tmp_path)
    assert "spectra differ by 0.0e+00" in stdout  # q = 0 cannot see directions
    assert "phase monotone along the path: True" in stdout
