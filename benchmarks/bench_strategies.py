"""Benchmark: ``spectra.eigh`` now against the same call at an earlier commit (issue 23).

The strategies package and the one memory model must change no behaviour and cost no time:
this times ``spectra.eigh(a)`` of the working tree and of ``spectra`` at git commit
``--against`` (default ``c5aacf6``, the commit before the change; ``benchmarks/_release.py``
imports it next to the working tree) in the same process, with the plain thread fan-out as
the peer, in interleaved rounds whose order rotates (``_timing.rotating_rounds``). Each row
reports medians and quartiles of the per-round times and of the same-round ratios
``before / now`` (above 1: now is faster) and ``fan-out / now``; the JSON records the load
average before and after (the machine is shared with other sessions: read it as noisy).

Rows: the sizes of ``spectra bench --quick`` (the kernels, LAPACK fanned out, complex) and
the one-call sizes the direct path and the executor's fixed cost decide (n = 8, 1-16
matrices).

    .venv/bin/python -m benchmarks.bench_strategies [--quick] [--against REF] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

#: (n, batch, dtype name): the quick bench's rows and the direct-path/fixed-cost ones
ROWS = [
    (3, 65536, "float64"),
    (8, 8192, "float32"),
    (8, 8192, "float64"),
    (32, 1024, "float64"),
    (64, 256, "float64"),
    (128, 64, "float32"),
    (16, 1024, "complex128"),
    (32, 256, "complex128"),
    (8, 1, "float64"),
    (8, 16, "float64"),
    (24, 4, "complex128"),
]


def quartiles(values: list[float]) -> dict[str, float]:
    """Median and quartiles.

    >>> quartiles([1.0, 2.0, 3.0])
    {'median': 2.0, 'q1': 1.5, 'q3': 2.5}
    """
    if len(values) == 1:
        return {"median": values[0], "q1": values[0], "q3": values[0]}
    q = statistics.quantiles(values, n=4, method="inclusive")
    return {"median": statistics.median(values), "q1": q[0], "q3": q[2]}


def _calls_for(seconds: float) -> int:
    """Calls per round so that a round of one implementation takes about 20 ms."""
    return max(1, min(2000, int(0.02 / max(seconds, 1e-7))))


def run(quick: bool, against: str) -> dict[str, Any]:
    import torch

    import spectra
    from benchmarks import _release
    from benchmarks._timing import rotating_rounds
    from spectra.core import baselines

    old = _release.load(against)
    fan = baselines.ThreadFanOut(os.cpu_count() or 1)
    rounds = 7 if quick else 15
    load_before = os.getloadavg()
    rows = []
    for n, batch, dtype_name in ROWS:
        dtype = getattr(torch, dtype_name)
        a = torch.randn(batch, n, n, dtype=dtype, generator=torch.Generator().manual_seed(n))
        a = a + a.mH
        if batch == 1:
            a = a[0]
        fns = {
            "now": lambda a=a: spectra.eigh(a),
            "before": lambda a=a: old.eigh(a),
            "thread fan-out": lambda a=a: fan(a if a.dim() == 3 else a[None]),
        }
        for fn in fns.values():  # warm-up: kernels, caches, thread pools
            fn()
        t0 = time.perf_counter()
        fns["now"]()
        calls = _calls_for(time.perf_counter() - t0)
        times = rotating_rounds(fns, rounds, calls)
        w_now, w_before = spectra.eigh(a), old.eigh(a)
        same = bool(
            torch.equal(w_now.eigenvalues, w_before.eigenvalues)
            and torch.equal(w_now.eigenvectors, w_before.eigenvectors)
        )
        row = {
            "n": n,
            "batch": batch,
            "dtype": dtype_name,
            "strategy": spectra.plan(n, batch, dtype).strategy,
            "calls_per_round": calls,
            "rounds": rounds,
            "seconds": {k: quartiles(v) for k, v in times.items()},
            "before/now": quartiles(
                [b / x for b, x in zip(times["before"], times["now"], strict=True)]
            ),
            "fan-out/now": quartiles(
                [f / x for f, x in zip(times["thread fan-out"], times["now"], strict=True)]
            ),
            "bitwise_equal_to_before": same,
        }
        rows.append(row)
        print(_line(row), flush=True)
    return {
        "command": "python -m benchmarks.bench_strategies " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "against": against,
        "torch": torch.__version__,
        "cores": os.cpu_count(),
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "note": "shared 2-core machine, other sessions running: ratios are same-round pairs",
        "rows": rows,
    }


def _line(row: dict[str, Any]) -> str:
    s = row["seconds"]
    r, f = row["before/now"], row["fan-out/now"]
    return (
        f"{row['dtype']:>10} n={row['n']:<4} batch={row['batch']:<6} {row['strategy']:<12} "
        f"now {1e6 * s['now']['median']:10.1f} us  before {1e6 * s['before']['median']:10.1f} us  "
        f"before/now {r['median']:.3f} [{r['q1']:.3f}, {r['q3']:.3f}]  "
        f"fan-out/now {f['median']:.2f}  bitwise {row['bitwise_equal_to_before']}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="7 rounds instead of 15")
    parser.add_argument("--against", default="c5aacf6", help="the git commit to compare with")
    parser.add_argument("--json", help="write the rows to this JSON file")
    args = parser.parse_args(argv)
    result = run(args.quick, args.against)
    print(f"load average before {result['load_before']}, after {result['load_after']}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
