"""--plot's figure from synthetic rows, the progress line, and domain peers that are missing."""

from __future__ import annotations

import io

import pytest

from spectra._bench import domains
from spectra._bench.plot import plot_speedups
from spectra._bench.progress import Progress, enabled

from .helpers import rows_with_speedups


def test_plot_draws_one_line_per_peer_and_the_one_x_line(tmp_path, monkeypatch):
    import matplotlib.axes

    drawn: list[str] = []
    original = matplotlib.axes.Axes.plot

    def spy(self, *args, **kw):
        drawn.append(kw.get("label", ""))
        return original(self, *args, **kw)

    monkeypatch.setattr(matplotlib.axes.Axes, "plot", spy)
    rows = rows_with_speedups([1.5, 1.2, 1.1])
    path = plot_speedups(rows, str(tmp_path / "f.png"))
    assert (tmp_path / "f.png").stat().st_size > 1000
    assert path.endswith("f.png")
    assert sorted(drawn) == sorted(rows[0]["speedup"])


def test_progress_line_counts_cases_and_gives_an_eta():
    out = io.StringIO()
    p = Progress(3, stream=out, on=True)
    p.step("n=8")
    assert p.text().startswith("case 1/3 n=8")
    assert "ETA ?" in p.text()
    p.step("n=16")
    line = p.text(now=p.t_case)
    assert line.startswith("case 2/3 n=16") and "ETA 0:0" in line


def test_progress_draws_on_a_terminal_and_clears_at_the_end():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    with Progress(2, stream=out, on=True) as p:
        p.step("first")
        p.step("second")
    text = out.getvalue()
    assert "case 1/2 first" in text and "case 2/2 second" in text
    assert text.endswith("\r")


def test_progress_is_plain_lines_without_a_terminal_or_under_ci(monkeypatch):
    """Issue 27: a log or a pipe still shows where a long run is, one line per case."""

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("CI", raising=False)
    assert enabled(Tty()) and not enabled(io.StringIO())
    for stream in (io.StringIO(), Tty()):
        if isinstance(stream, Tty):
            monkeypatch.setenv("CI", "1")
        with Progress(2, stream=stream) as p:
            p.step("n=8")
            p.step("n=16")
        lines = stream.getvalue().split("\n")
        assert "\r" not in stream.getvalue() and lines[-1] == ""
        assert lines[0].startswith("case 1/2 n=8  [0:00, ETA ?]")
        assert lines[1].startswith("case 2/2 n=16  [0:00, ETA ")
    silent = io.StringIO()
    with Progress(2, stream=silent, lines=False) as p:
        p.step("x")
    assert silent.getvalue() == ""


def test_missing_peer_names_the_extra_to_install():
    assert domains.missing("numpy") is None
    skip = domains.missing("no_such_peer_module_xyz")
    assert skip == {
        "peer": "no_such_peer_module_xyz",
        "reason": "no_such_peer_module_xyz is not installed (pip install 'torch-spectra[peers]')",
    }


def test_missing_pyg_skips_the_graph_table_cleanly(monkeypatch):
    real = domains.missing
    monkeypatch.setattr(
        domains, "missing", lambda m, extra=domains.PEERS_EXTRA: real("no_such_" + m, extra)
    )
    table = domains.graph(True, None, lambda label: None)
    assert table["rows"] == []
    assert table["skipped"][0]["reason"].endswith("(pip install 'torch-spectra[graph]')")


@pytest.mark.parametrize("name", sorted(domains.DOMAINS))
def test_every_domain_has_progress_steps(name):
    assert name in domains.STEPS
