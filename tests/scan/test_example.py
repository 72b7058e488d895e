"""examples/legacy_loops.py and the version ``spectra scan --fix`` made of it."""

from __future__ import annotations

from pathlib import Path

from spectra.scan import fix_source, scan

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_legacy_example_findings():
    found = [(f.line, f.code, f.fixable) for f in scan(EXAMPLES / "legacy_loops.py")]
    assert [code for _, code, _ in found] == ["SPX001", "SPX002", "SPX001", "SPX001"]
    assert [fixable for *_, fixable in found] == [True, True, True, False]


def test_committed_fixed_example_is_what_fix_produces():
    src = (EXAMPLES / "legacy_loops.py").read_text()
    result = fix_source(src, "examples/legacy_loops.py")
    assert len(result.applied) == 3
    assert (EXAMPLES / "legacy_loops_fixed.py").read_text() == result.fixed
    # only the loop left on purpose is still reported in the fixed version
    [left] = scan(EXAMPLES / "legacy_loops_fixed.py")
    assert left.code == "SPX001" and not left.fixable
