"""Benchmark: spectra.distributed on 2 local Dask worker processes vs the core in 1 process.

    .venv/bin/python -m benchmarks.bench_distributed [--quick] [--device cpu|cuda]
                                                      [--workers N] [--json FILE]

A batch of 64x64 float64 matrices sized to take ~10 s in one process (~0.75 s with
``--quick``) is solved by ``spectra.eigh`` on the whole array and by
``spectra.distributed.eigh`` over a ``LocalCluster`` (data already on the workers).
``ratio = one_process_s / dask_s``: on a 2-core machine expect ~1x (the core already uses
both cores); the point is exactness (reported) and the path to more machines.
"""

from __future__ import annotations

import argparse
import json

from spectra.distributed._bench import format_rows, run_dask_bench


def run(quick: bool = False, device: str = "cpu", workers: int = 2) -> list[dict]:
    """Rows of the benchmark (see :func:`spectra.distributed._bench.run_dask_bench`)."""
    rows = run_dask_bench(workers, quick, device=device)
    for row in rows:  # the names the other benchmark scripts use
        row["spectra_s"] = row["dask_s"]
        row["peer"] = "spectra.eigh, 1 process"
        row["peer_s"] = row["one_process_s"]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = run(args.quick, args.device, args.workers)
    print(format_rows(rows))
    if rows and rows[0]["dashboard"]:
        print(f"dashboard was at {rows[0]['dashboard']}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
