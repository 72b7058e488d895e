"""A large generated file is scanned (and every rewrite planned) in linear time.

Before the scanner kept one index per file, every loop rebuilt the file's parent map and
re-walked its scope: 2,000 generated loops took ~170 s and 8,000 would take ~45 min. The
limit below is generous (a loaded 2-core machine scans these ~0.6 MB in well under a
minute); the test asserts completion and the findings, never a time.
"""

from __future__ import annotations

import pytest

from benchmarks.bench_scan import generated_source
from spectra.scan import fix_source, scan_source

LOOPS = 8_000


@pytest.mark.timeout(400)
def test_a_large_generated_file_is_scanned_and_planned_completely():
    source = generated_source(LOOPS, "mixed")
    assert len(source) > 500_000
    findings = scan_source(source, "generated.py")
    assert len(findings) == LOOPS
    units = LOOPS // 4
    module_units, function_units = units // 2, units - units // 2
    # per module unit: the k loop is read after it (print(k)), the h loop and the [0]
    # comprehension are rewritten, the while loop is reported only; per function: the
    # append loop and the comprehension are rewritten, the loop read after it (return j)
    # and the map() are not
    assert sum(f.fixable for f in findings) == 2 * module_units + 2 * function_units
    blockers = {f.fix_blocker for f in findings if not f.fixable}
    first_read = source.splitlines().index("print(k)") + 1
    assert f"`k` is used outside the loop (line {first_read})" in blockers
    assert "while loops are reported, not rewritten" in blockers


@pytest.mark.timeout(400)
def test_fix_of_a_large_generated_file_parses_and_keeps_the_unfixable_loops():
    source = generated_source(2_000, "module")
    result = fix_source(source, "generated.py")
    assert len(result.applied) == 2 * 500
    assert result.fixed.count("[w[0] for w in spectra.eigvalsh(") == 500  # the [0] lists
    assert result.fixed.count("spectra.eigh(") == 500  # the h loops
    assert result.fixed.count("for k in range(len(hk") == 500  # read after: kept
    assert result.fixed.count("print(np.linalg.eigvalsh(") == 500  # while loops stay
    compile(result.fixed, "generated.py", "exec")
