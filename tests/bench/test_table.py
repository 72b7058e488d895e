"""The printed core and domain tables: names, units, legend, extrapolation labels, verdict."""

from __future__ import annotations

import pytest

from spectra._bench.table import (
    core_table,
    domain_table,
    extrapolations,
    fmt_cell,
    fmt_ms,
    legend,
    verdict,
)

from .helpers import PEERS, make_row, rows_with_speedups


def test_fmt_ms_keeps_three_significant_digits():
    assert [fmt_ms(s) for s in (1.2345, 0.012345, 0.0012345, 0.00012345)] == [
        "1234",
        "12.3",
        "1.23",
        "0.123",
    ]


@pytest.mark.parametrize(
    ("spread", "extrapolated", "expected"),
    [(0.05, False, "84.3 (5%)"), (0.05, True, "84.3 (5%)*"), (0.6, False, "84.3 (60%)!")],
)
def test_cell_shows_spread_extrapolation_and_wide_marks(spread, extrapolated, expected):
    assert fmt_cell({"median_s": 0.0843, "spread": spread, "extrapolated": extrapolated}) == (
        expected
    )


def test_core_table_has_full_column_names_and_one_line_per_row():
    rows = rows_with_speedups([1.5, 2.0]) + rows_with_speedups([1.1], "float32")
    lines = core_table(rows)
    header = lines[0]
    for name in (*PEERS, "spectra", "best peer", "speed-up", "max error"):
        assert name in header
    assert set(lines[1]) == {"-"}
    assert len(lines) == 2 + len(rows)
    assert lines[2].split()[:3] == ["float64", "4", "4,096"]
    assert "1.50x" in lines[2] and "thread fan-out" in lines[2]
    assert lines[4].startswith("float32")


def test_legend_names_every_column_units_ratio_and_extrapolation_counts():
    rows = [
        make_row(8, 1000, "float64", 1.0, dict.fromkeys(PEERS, 2.0), sample=256),
        make_row(64, 100, "float64", 1.0, dict.fromkeys(PEERS, 2.0), sample=256),
    ]
    text = "\n".join(legend(rows, cores=2, device="cpu"))
    assert "ms per whole batch" in text
    assert "best peer's time / spectra's time" in text
    for name in (*PEERS, "spectra"):
        assert f"  {name}: " in text
    assert "2 Python threads" in text
    # the loop was sampled in the first row only (the second batch is below the sample)
    assert "scipy loop was timed on the first 256 matrices" in text
    assert "in 1 of 2 rows" in text
    assert extrapolations(rows) == {"scipy loop": {"rows": 1, "timed_on": [256], "of": [1000]}}


def test_verdict_is_worst_and_median_over_rows_per_dtype():
    rows = rows_with_speedups([1.45, 1.02, 2.0, 1.6]) + rows_with_speedups([0.9, 1.3], "float32")
    v = verdict(rows, "2 cores")
    assert v["float64"]["worst"] == pytest.approx(1.02)
    assert v["float64"]["median"] == pytest.approx((1.45 + 1.6) / 2)
    assert v["float64"]["line"] == (
        "spectra is 1.52x faster than the best peer (thread fan-out), median of 4 sizes; "
        "worst 1.02x faster (n=8, vs thread fan-out) (float64, 2 cores)"
    )
    assert v["float32"]["line"] == (
        "spectra is 1.10x faster than the best peer (thread fan-out), median of 2 sizes; "
        "worst 1.11x slower (n=4, vs thread fan-out) (float32, 2 cores)"
    )
    rows[1]["best_peer"] = "numpy batched"  # not the best everywhere: say where
    assert "(thread fan-out in 3 of 4 sizes)" in verdict(rows, "2 cores")["float64"]["line"]
    assert "(n=8, vs numpy batched)" in verdict(rows, "2 cores")["float64"]["line"]
    slow = verdict(rows_with_speedups([0.5, 0.8, 0.9]), "cuda")["float64"]["line"]
    assert slow.startswith("spectra is 1.25x slower than the best peer (thread fan-out)")


def test_best_peer_is_the_fastest_peer_column():
    row = make_row(8, 64, "float64", 2.0, {"torch batched": 3.0, "thread fan-out": 2.2})
    assert row["best_peer"] == "thread fan-out"
    assert row["speedup_vs_best_peer"] == pytest.approx(1.1)
    assert row["speedup"]["torch batched"] == pytest.approx(1.5)


def test_domain_table_labels_ratios_extrapolations_and_skips():
    row = make_row(8, 200, "float64", 0.1, {"scipy loop": 0.5}, sample=50)
    table = {
        "title": "PCA: x",
        "unit": "datasets",
        "rows": [{"case": "200 datasets", "cells": row["cells"], "ratios": {"scipy loop": 5.0}}],
        "skipped": [{"peer": "sklearn", "reason": "sklearn is not installed (pip install x)"}],
    }
    text = "\n".join(domain_table(table))
    assert text.startswith("== PCA: x ==")
    assert "500 (10%)* = 5.00x" in text
    assert "scipy loop timed on 50 of 200 datasets" in text
    assert "skipped sklearn: sklearn is not installed (pip install x)" in text
