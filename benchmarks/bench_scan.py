"""Benchmark: ``spectra scan`` (and ``--fix`` planning) on large generated files.

    .venv/bin/python -m benchmarks.bench_scan [--quick] [--json FILE]

Each row generates a Python file with ``L`` eigensolver loops (for loops that append,
comprehensions, ``while`` loops, ``map()``, loop variables read after their loop, at module
level with the same names reused, and inside functions), scans it with
``spectra.scan.scan_report`` (which also plans every ``--fix`` rewrite) and reports the
seconds (wall and this process's CPU), the file size and the time per MB. A linear scanner
keeps ``s/MB`` flat as ``L`` grows (read the CPU column on a shared machine); before the
fix 2,000 loops took ~170 s and 80,000 (5.4 MB) did not finish within 300 s.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

#: One module-level unit of 4 loops; ``{i}`` numbers the data.
_MODULE_UNIT = """\
ws = []
for k in range(len(hk{i})):
    ws.append(sla.eigvalsh(hk{i}[k], sk{i}[k]))
es, vs = [], []
for h in hs{i}:
    e, v = np.linalg.eigh(h)
    es.append(e)
    vs.append(v)
lows = [sla.eigvalsh(mats{i}[j])[0] for j in range(len(mats{i}))]
j = 0
while j < 3:
    print(np.linalg.eigvalsh(mats{i}[j]))
    j += 1
print(k)
"""

#: One function holding 4 loops.
_FUNCTION_UNIT = """\
def f{i}(mats, xs):
    out = []
    for m in mats:
        out.append(np.linalg.eigh(m))
    ws = [sla.eigvalsh(x) for x in xs]
    for j in range(len(xs)):
        print(np.linalg.eigvalsh(xs[j])[0])
    total = list(map(np.linalg.eigvalsh, xs))
    return out, ws, total, j

"""


def generated_source(loops: int, shape: str = "mixed") -> str:
    """A valid Python file with about ``loops`` per-matrix eigensolver loops.

    ``shape``: ``"module"`` (all at module level, names reused), ``"functions"`` (4 loops
    per function) or ``"mixed"`` (half each).

    >>> src = generated_source(8)
    >>> compile(src, "<generated>", "exec") is not None and src.count("eigvalsh") > 4
    True
    """
    units = max(1, loops // 4)
    head = "import numpy as np\nimport scipy.linalg as sla\n\n"
    if shape == "module":
        body = [_MODULE_UNIT.format(i=i) for i in range(units)]
    elif shape == "functions":
        body = [_FUNCTION_UNIT.format(i=i) for i in range(units)]
    elif shape == "mixed":
        half = units // 2
        body = [_MODULE_UNIT.format(i=i) for i in range(half)]
        body += [_FUNCTION_UNIT.format(i=i) for i in range(units - half)]
    else:
        raise ValueError(f"shape must be module, functions or mixed, got {shape!r}")
    return head + "".join(body)


def time_scan(loops: int, shape: str, folder: Path) -> dict[str, Any]:
    """Scan one generated file; seconds, size and findings."""
    from spectra.scan import scan_report

    path = folder / f"generated_{shape}_{loops}.py"
    path.write_text(generated_source(loops, shape))
    t0, c0 = time.perf_counter(), time.process_time()
    parsed, errors = scan_report([path])
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert not errors, errors
    findings = [f for p in parsed for f in p.findings]
    mb = path.stat().st_size / 1e6
    return {
        "shape": shape,
        "loops": loops,
        "mb": round(mb, 3),
        "seconds": round(seconds, 3),
        "cpu_s": round(cpu, 3),  # this process's CPU time: less sensitive to other load
        "s_per_mb": round(seconds / mb, 3),
        "cpu_s_per_mb": round(cpu / mb, 3),
        "findings": len(findings),
        "fixable": sum(f.fixable for f in findings),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="up to 20,000 loops only")
    parser.add_argument("--json", metavar="FILE", help="write the rows as JSON")
    args = parser.parse_args(argv)
    sizes = (2_000, 8_000, 20_000) if args.quick else (2_000, 8_000, 20_000, 80_000)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in ("module", "functions", "mixed"):
            for loops in sizes:
                row = time_scan(loops, shape, Path(tmp))
                rows.append(row)
                print(
                    f"{shape:>9} {loops:>6} loops {row['mb']:7.2f} MB {row['seconds']:8.2f} s "
                    f"({row['cpu_s']:.2f} s CPU) {row['s_per_mb']:6.2f} s/MB "
                    f"({row['cpu_s_per_mb']:.2f} CPU s/MB)  {row['findings']} findings "
                    f"({row['fixable']} fixable)",
                    flush=True,
                )
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
