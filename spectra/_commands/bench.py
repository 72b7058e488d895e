"""``spectra bench``: spectra.eigh against its peers, measured in the same run (the main job)."""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import platform
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench",
        help="time spectra.eigh against a Python loop, torch, NumPy and "
        "SciPy on the default device",
    )
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    p.add_argument("--quick", action="store_true", help="fewer repeats (< 60 s on 2 cores)")
    p.add_argument("--dtype", choices=["float32", "float64", "both"], default="both")
    p.add_argument("--json", metavar="FILE", help="write the numbers as JSON")
    p.add_argument(
        "--dask",
        type=int,
        metavar="N",
        default=None,
        help="also run the benchmark batch across N local Dask workers",
    )
    p.add_argument(
        "--domains",
        action="store_true",
        help="also run benchmarks/bench_*.py (from a source checkout)",
    )
    p.set_defaults(func=run)


def _progress():
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is optional
        return lambda msg: print(f"  {msg}", file=sys.stderr, flush=True), lambda: None
    bar = tqdm(total=None, file=sys.stderr, leave=False, bar_format="{desc} [{elapsed}]")

    def update(msg: str) -> None:
        bar.set_description_str(msg)
        bar.update()

    return update, bar.close


def run(args: argparse.Namespace) -> int:
    import numpy as np
    import torch

    from spectra.core._benchmark import bench_core, format_rows
    from spectra.core._threads import cpu_count

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtypes = {
        "float32": (torch.float32,),
        "float64": (torch.float64,),
        "both": (torch.float32, torch.float64),
    }[args.dtype]
    update, close = _progress()
    try:
        rows = bench_core(
            device,
            dtypes,
            repeats=1 if args.quick else 7,
            budget_s=0.6 if args.quick else 3.0,
            progress=update,
            loop_sample=512 if args.quick else None,
            pause_s=0.1 if args.quick else 0.2,
        )
    finally:
        close()
    name = torch.cuda.get_device_name() if device.startswith("cuda") else platform.processor()
    print(
        f"spectra bench on {device} ({name or platform.machine()}, {cpu_count()} cores), "
        f"torch {torch.__version__}, numpy {np.__version__}"
    )
    print(format_rows(rows))
    report = {
        "date": datetime.date.today().isoformat(),
        "device": device,
        "device_name": name,
        "cores": cpu_count(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "rows": rows,
    }
    if args.dask:
        from spectra.distributed._bench import format_rows as dask_rows
        from spectra.distributed._bench import run_dask_bench

        report["dask"] = run_dask_bench(args.dask, quick=args.quick)
        print(dask_rows(report["dask"]))
    if args.domains:
        import os

        if os.getcwd() not in sys.path:  # benchmarks/ lives in the source checkout
            sys.path.insert(0, os.getcwd())
        report["domains"] = {}
        for mod in ("pca", "tightbinding", "graph", "stiefel"):
            try:
                bench = importlib.import_module(f"benchmarks.bench_{mod}")
            except ModuleNotFoundError:
                print(f"(benchmarks/bench_{mod}.py not found: run from a source checkout)")
                continue
            report["domains"][mod] = bench.run(quick=args.quick, device=device)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1, default=str)
    return 0
