"""The "one call" table of ``spectra bench --domains`` (issue 26): its rows, their peers, the
calls each cell loops over, the skips, and the progress steps."""

from __future__ import annotations

import pytest
import torch

import spectra.core
from spectra._bench import domains, one_call
from spectra._bench.table import domain_table
from spectra._bench.timing import Timer


@pytest.fixture
def small(monkeypatch):
    """A few calls per cell, so that the table runs in about a second."""
    monkeypatch.setattr(
        one_call, "MATRIX_ROWS", ((3, torch.float64, 4, 6), (8, torch.complex128, 4, 6))
    )
    monkeypatch.setattr(one_call, "BACKWARD_ROW", (5, 3, 5))
    monkeypatch.setattr(one_call, "GENERALIZED_ROW", (8, 3, 5))
    monkeypatch.setattr(one_call, "GRAPH_ROW", (25, 4, 3, 5))
    monkeypatch.setattr(one_call, "STIEFEL_ROW", (50, 5, 3, 5))
    monkeypatch.setattr(one_call, "STEPS", 2 + 2 + 3)


def _timer() -> Timer:
    return Timer(repeats=1, min_repeats=1, pause_s=0.0)


def test_every_row_times_spectra_against_the_tool_it_replaces(small):
    pytest.importorskip("torch_geometric")
    pytest.importorskip("geoopt")
    steps: list[str] = []
    table = one_call.one_call(True, _timer(), steps.append)
    cases = {r["case"]: r for r in table["rows"]}
    assert list(cases) == [
        "eigh, one 3x3 float64",
        "eigh, one 8x8 complex128",
        "eigh, one 5x5 float64, forward + backward",
        "eigh(a, b), one 8x8 float64 pair",
        "LaplacianPE(4) as a per-graph transform, 25 nodes",
        "RSGD step, one St(50, 5) float64",
        "RAdam step, one St(50, 5) float64",
    ]
    peers = {case: set(r["ratios"]) for case, r in cases.items()}
    assert peers["eigh, one 3x3 float64"] == {"torch batched"}
    assert peers["eigh(a, b), one 8x8 float64 pair"] == {"torch reduction", "scipy loop (a, b)"}
    assert peers["LaplacianPE(4) as a per-graph transform, 25 nodes"] == {
        "PyG AddLaplacianEigenvectorPE"
    }
    assert peers["RSGD step, one St(50, 5) float64"] == {"geoopt EuclideanStiefel (QR)"}
    assert set(cases["RSGD step, one St(50, 5) float64"]["cells"]) == {
        "spectra polar",
        "spectra qr",
        "geoopt EuclideanStiefel (QR)",
    }
    quick_calls = [4, 4, 3, 3, 3, 3, 3]
    assert [r["calls"] for r in table["rows"]] == quick_calls
    for r in table["rows"]:
        assert all(c["median_s"] > 0 and c["repeats"] == 1 for c in r["cells"].values())
        assert all(ratio > 0 for ratio in r["ratios"].values())
    assert len(steps) == one_call.STEPS and table["skipped"] == []
    text = "\n".join(domain_table(table))
    assert "one call" in text and "ms / calls x 1000" in text


def test_the_spectra_cells_call_spectra_and_each_call_is_one_matrix(small, monkeypatch):
    seen: list[tuple[int, ...]] = []
    real = spectra.core.eigh

    def counting(a, *args, **kwargs):
        seen.append(tuple(a.shape))
        return real(a, *args, **kwargs)

    monkeypatch.setattr(spectra.core, "eigh", counting)
    monkeypatch.setattr(one_call, "missing", lambda module, extra="": {"peer": module})
    one_call.one_call(False, _timer(), lambda label: None)
    # full run: 6 calls per loop (5 for the backward and pair rows), a warm-up and one
    # repeat each
    assert seen == [(3, 3)] * 12 + [(8, 8)] * 12 + [(5, 5)] * 10 + [(8, 8)] * 10


def test_missing_peers_skip_their_rows_and_keep_the_progress_steps(small, monkeypatch):
    monkeypatch.setattr(
        one_call, "missing", lambda module, extra="x": {"peer": module, "reason": extra}
    )
    steps: list[str] = []
    table = one_call.one_call(True, _timer(), steps.append)
    assert [r["case"] for r in table["rows"]] == [
        "eigh, one 3x3 float64",
        "eigh, one 8x8 complex128",
        "eigh, one 5x5 float64, forward + backward",
        "eigh(a, b), one 8x8 float64 pair",
    ]
    assert [s["peer"] for s in table["skipped"]] == ["torch_geometric", "geoopt"]
    assert len(steps) == one_call.STEPS


def test_the_table_is_one_of_the_domains():
    assert domains.DOMAINS["one_call"] is one_call.one_call
    assert domains.STEPS["one_call"] == (one_call.STEPS, one_call.STEPS)
    assert len(one_call.MATRIX_ROWS) + 5 == one_call.STEPS
