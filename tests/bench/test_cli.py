"""``spectra bench`` end to end on a tiny batch (no timed assertions) and its argument errors."""

from __future__ import annotations

import json
import re

import pytest

from spectra import cli
from spectra._bench import timing

TINY = ["bench", "--quick", "--sizes", "2:300", "--dtype", "float64", "--repeats", "1"]
QUIET = {"loadavg": [0.1, 0.1, 0.1], "cpu_share": 0.99}
BUSY = {"loadavg": [7.5, 6.0, 5.0], "cpu_share": 0.3}


@pytest.fixture
def load(monkeypatch):
    """Inject the load snapshots the command sees (no probe, no real load average)."""
    snapshots: list[dict] = []
    monkeypatch.setattr(timing, "load_snapshot", lambda cores, probe=True: snapshots.pop(0))
    return snapshots


def test_json_schema_has_fan_out_spread_extrapolations_load_and_verdict(tmp_path, capsys, load):
    load += [QUIET, QUIET]
    out = tmp_path / "b.json"
    assert cli.main([*TINY, "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["schema"] == "spectra-bench/2"
    assert report["mode"] == "quick"
    assert report["load"] == {"before": QUIET, "after": QUIET}
    (row,) = report["rows"]
    assert (row["n"], row["batch"], row["dtype"]) == (2, 300, "float64")
    assert {"thread fan-out", "torch batched", "numpy batched", "scipy loop", "spectra"} <= set(
        row["cells"]
    )
    for cell in row["cells"].values():
        assert {"median_s", "min_s", "max_s", "spread", "times_s", "extrapolated"} <= set(cell)
        assert cell["min_s"] <= cell["median_s"] <= cell["max_s"]
    # the SciPy loop ran on the --quick loop sample (32) of the 300 matrices
    assert row["cells"]["scipy loop"]["timed_on"] == 32
    assert report["extrapolated"] == {"scipy loop": {"rows": 1, "timed_on": [32], "of": [300]}}
    assert "thread fan-out" in report["peers"]
    assert row["max_eigenvalue_error_vs_scipy"] < 1e-12
    captured = capsys.readouterr()
    text = captured.out.strip().splitlines()
    assert text[-1] == report["verdict"]["float64"]["line"]
    assert re.fullmatch(
        r"spectra is \d+\.\d\dx (faster|slower) than the best peer \([a-z0-9 -]+\), median "
        r"of 1 size; worst \d+\.\d\dx (faster|slower) \(n=2, vs [a-z0-9 -]+\) "
        r"\(float64, \d+ cores\)",
        text[-1],
    ), text[-1]
    assert report["verdict"]["float64"]["best_peer"] in text[-1]
    # stderr is not a terminal here: one plain progress line per case, no \r redraws
    assert re.fullmatch(r"case 1/1 n=2 batch=300 float64  \[0:\d\d, ETA \?\]\n", captured.err)
    assert report["warning"] is None or "unreliable" in report["warning"]


def test_busy_machine_prints_the_warning_and_stores_it(tmp_path, capsys, load):
    load += [BUSY, BUSY]
    out = tmp_path / "b.json"
    assert cli.main([*TINY, "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert "load average 7.5 on" in report["warning"]
    text = capsys.readouterr().out.strip().splitlines()
    assert text[-2] == report["warning"]
    assert "ratios are unreliable" in text[-2]


def test_plot_writes_a_png(tmp_path, capsys, load):
    load += [QUIET, QUIET]
    fig = tmp_path / "speedup.png"
    assert cli.main([*TINY, "--plot", str(fig)]) == 0
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"figure: {fig}" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "--sizes", "8x16"],
        ["bench", "--sizes", "0:16"],
        ["bench", "--dtype", "float16"],
        ["bench", "--repeats", "0"],
        ["bench", "--dask", "two"],
        ["bench", "--no-such-flag"],
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("spectra bench: error: ")
