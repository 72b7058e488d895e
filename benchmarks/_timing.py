"""Shared timing helpers for the benchmark scripts (never run by pytest)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def sync(device: str) -> None:
    """Wait for queued CUDA work so wall-clock times are honest."""
    if str(device).startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def median_time(
    fn: Callable[[], Any],
    repeats: int = 5,
    warmup: int = 1,
    device: str = "cpu",
    budget_s: float | None = None,
) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs after ``warmup`` runs.

    With ``budget_s``, stops repeating early once that much time was spent (at least 1 run).
    """
    for _ in range(warmup):
        fn()
        sync(device)
    times: list[float] = []
    spent = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync(device)
        dt = time.perf_counter() - t0
        times.append(dt)
        spent += dt
        if budget_s is not None and spent > budget_s:
            break
    return statistics.median(times)


def rotating_rounds(
    fns: dict[str, Callable[[], Any]],
    rounds: int,
    calls: int,
    clock: Callable[[], float] = time.perf_counter,
    settle: float = 0.0,
) -> dict[str, list[float]]:
    """Per-call seconds of every ``fns[name]`` in each of ``rounds`` rounds of ``calls``
    calls, all of them timed in every round, the order rotating from round to round (so
    drift and load hit every implementation alike; pair them by round for ratios).
    ``settle``: seconds of pause, not timed, before each timed block, so that no side
    starts while the thread pools of the one before still spin (OpenBLAS's workers spin
    ~0.1 s after a threaded call: the D&D-like ``LaplacianPE`` took 286 ms right after
    PyG's loop, 253 ms after 0.3 s; ``benchmarks/bench_graph_sparse.py``)."""
    names = list(fns)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            fn = fns[name]
            if settle:
                time.sleep(settle)
            t0 = clock()
            for _ in range(calls):
                fn()
            times[name].append((clock() - t0) / calls)
    return times


def bench_main(
    doc: str | None,
    run: Callable[..., list[dict[str, Any]]],
    print_rows: Callable[[list[dict[str, Any]]], None],
    argv: list[str] | None = None,
    threads: bool = False,
) -> None:
    """The command line every ``benchmarks/bench_*.py`` shares:
    ``[--quick] [--device cpu|cuda] [--json FILE]`` (and ``--threads N`` where offered)."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller, faster run (< 60 s)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (spectra's device)")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    if threads:
        parser.add_argument(
            "--threads",
            type=int,
            default=None,
            help="pin torch/BLAS threads for every row (e.g. 1)",
        )
    args = parser.parse_args(argv)
    extra = {"threads": args.threads} if threads else {}
    rows = run(quick=args.quick, device=args.device, **extra)
    print_rows(rows)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2, default=str)
