"""Benchmark: the small-matrix kernels against torch and the plain thread fan-out.

    .venv/bin/python -m benchmarks.bench_kernels [--quick] [--json FILE]

Rows (float64 unless named, CPU, eigenvalues and eigenvectors), each timed interleaved
(round-robin, :class:`spectra._bench.timing.Timer`: medians and spread per cell):

- n = 3 (1,000,000), 8 (65,536), 16 (16,384), 32 (4,096), 64 (1,024), 128 (256);
- peers: ``torch batched``, ``torch 1-thread`` and ``thread fan-out`` (one Python thread per
  core, torch at one intra-op thread: :class:`spectra.core.baselines.ThreadFanOut`);
- ``spectra``: ``spectra.eigh(a)`` as planned (checks and gauge included), and
  ``spectra[<kernel>]`` with each applicable kernel strategy forced, same pipeline;
- ``spectra@<ref>`` with ``--against REF``: ``spectra.eigh`` as it was at git commit ``REF``
  (``benchmarks/_release.py``; ``--against release`` is the first release), same process;
- ``ratio``: best peer median / spectra median (> 1: spectra is faster);
- ``paired``: the median over rounds of (thread fan-out time / spectra time) in the same
  round, which cancels the slow drifts of a shared machine that medians of separate cells
  keep, with its interquartile range.

A Stiefel row times the polar retraction of 1,024 frames 64 x 8 float32 (one core call on
the 8 x 8 Gram matrices) against geoopt's ``EuclideanStiefel`` QR retraction, the same
frames and step.

The JSON (``--json``, default ``benchmarks/results/kernels-<date>.json``) records every
cell's repeat times, the load averages before and after (``os.getloadavg()``; the machine
is shared) and the planner's choice per row. ``--quick``: batches / 8, fewer repeats.
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import warnings
from typing import Any

ROWS = [(3, 1_000_000), (8, 65_536), (16, 16_384), (32, 4_096), (64, 1_024), (128, 256)]
KERNELS_FOR = {3: ["closed-form"], 8: ["numba-jacobi", "numba-ql"]}  # default: numba-ql


def _kernels(n: int) -> list[str]:
    return KERNELS_FOR.get(n, ["numba-ql"])


def paired(base: list[float], other: list[float]) -> dict[str, float]:
    """Median and quartiles over rounds of ``base[i] / other[i]`` (same-round ratios).

    >>> paired([2.0, 2.2, 1.8], [1.0, 1.0, 1.0])
    {'median': 2.0, 'q1': 1.8, 'q3': 2.2}
    """
    import statistics

    r = sorted(b / o for b, o in zip(base, other, strict=True))
    q = statistics.quantiles(r, n=4, method="inclusive") if len(r) > 1 else [r[0]] * 3
    return {"median": statistics.median(r), "q1": q[0], "q3": q[2]}


def _eigh_row(
    n: int, batch: int, timer: Any, fan: Any, old: Any = None, ref: str = ""
) -> dict[str, Any]:
    import torch

    import spectra
    from spectra._bench.peers import random_symmetric
    from spectra._bench.timing import Impl
    from spectra.core import baselines, plan

    a = random_symmetric(batch, n, torch.float64, seed=n)
    impls = {
        "torch batched": Impl(lambda: baselines.torch_batched(a)),
        "torch 1-thread": Impl(lambda: baselines.torch_one_thread(a)),
        "thread fan-out": Impl(lambda: fan(a)),
        "spectra": Impl(lambda: spectra.eigh(a)),
    }
    if old is not None:
        impls[f"spectra@{ref}"] = Impl(lambda: old.eigh(a))
    for k in _kernels(n) if n <= 32 else []:
        impls[f"spectra[{k}]"] = Impl(lambda k=k: spectra.eigh(a, strategy=k))
    for impl in impls.values():  # compile / load the kernels before timing
        impl.fn()
    cells, attempts = timer.measure(impls)
    peers = ["torch batched", "torch 1-thread", "thread fan-out"]
    best_peer = min(cells[p].median for p in peers)
    return {
        "row": f"eigh n={n}",
        "n": n,
        "batch": batch,
        "dtype": "float64",
        "planned": plan(n, batch, torch.float64, "cpu").strategy,
        "cells": {k: c.to_json() for k, c in cells.items()},
        "best_peer_s": best_peer,
        "ratios": {k: best_peer / c.median for k, c in cells.items() if k.startswith("spectra")},
        "vs_fan_out": {
            k: cells["thread fan-out"].median / c.median
            for k, c in cells.items()
            if k.startswith("spectra")
        },
        "paired_vs_fan_out": {
            k: paired(cells["thread fan-out"].times, c.times)
            for k, c in cells.items()
            if k.startswith("spectra")
        },
        "attempts": attempts,
    }


def _stiefel_row(frames: int, timer: Any) -> dict[str, Any]:
    import torch

    from spectra._bench.timing import Impl
    from spectra.stiefel import Stiefel

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import geoopt

    st = Stiefel()
    gen = torch.Generator().manual_seed(0)
    x = torch.linalg.qr(torch.randn(frames, 64, 8, generator=gen)).Q
    xi = st.proj(x, 0.1 * torch.randn(frames, 64, 8, generator=gen))
    man = geoopt.EuclideanStiefel()

    def torch_polar() -> Any:  # the same retraction with torch.linalg.eigh (what it was)
        y = x + xi
        w, v = torch.linalg.eigh(y.mT @ y)
        return y @ (v * w.rsqrt()[..., None, :]) @ v.mT

    impls = {
        "geoopt EuclideanStiefel qr": Impl(lambda: man.retr(x, xi)),
        "polar via torch.linalg.eigh": Impl(torch_polar),
        "spectra polar": Impl(lambda: st.retract(x, xi)),
    }
    with torch.no_grad():
        for impl in impls.values():
            impl.fn()
        cells, attempts = timer.measure(impls)
    geo = cells["geoopt EuclideanStiefel qr"]
    return {
        "row": f"stiefel polar retraction {frames} x 64x8 float32",
        "cells": {k: c.to_json() for k, c in cells.items()},
        "ratio_vs_geoopt": geo.median / cells["spectra polar"].median,
        "paired_vs_geoopt": paired(geo.times, cells["spectra polar"].times),
        "attempts": attempts,
    }


CALIBRATE_N = [2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 64]


def calibrate(quick: bool = False) -> dict[str, Any]:
    """Single-thread microseconds per matrix of each kernel and of ``torch.linalg.eigh``
    (interleaved, same inputs, no pipeline): the planner's cost table comes from this."""
    import torch

    from spectra._bench.timing import Impl, Timer
    from spectra.core import STRATEGIES
    from spectra.core._support._samples import random_hermitian

    timer = Timer(repeats=3 if quick else 5, min_repeats=3, budget_s=3.0, pause_s=0.02)
    table = []
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for dtype in (torch.float64, torch.float32, torch.complex128):
            for vectors in (True, False):
                for n in CALIBRATE_N:
                    if dtype.is_complex and n > 3:
                        continue
                    batch = max(64, min(8192, int(2e6 / n**3)))
                    a = random_hermitian((batch,), n, dtype, seed=n)
                    names = ["torch"]
                    names += ["closed-form"] if n <= 3 else ["numba-jacobi", "numba-ql"]
                    impls = {
                        k: Impl(lambda k=k, a=a, v=vectors: STRATEGIES[k].solve(a, v))
                        for k in names
                    }
                    for impl in impls.values():
                        impl.fn()
                    cells, _ = timer.measure(impls)
                    us = {k: round(1e6 * c.median / batch, 4) for k, c in cells.items()}
                    table.append({"dtype": str(dtype)[6:], "vectors": vectors, "n": n, "us": us})
                    print(table[-1], flush=True)
    finally:
        torch.set_num_threads(old)
    return {"loadavg": os.getloadavg(), "table": table}


def run(
    quick: bool = False,
    sizes: list[int] | None = None,
    stiefel: bool = True,
    against: str | None = None,
) -> dict[str, Any]:
    from spectra._bench.timing import Timer
    from spectra.core.baselines import ThreadFanOut
    from spectra.core.domain import cpu_count

    cores = cpu_count()
    fan = ThreadFanOut(cores)
    timer = Timer(repeats=3 if quick else 7, min_repeats=3, budget_s=20.0 if quick else 60.0)
    before = os.getloadavg()
    old = None
    if against is not None:
        from benchmarks import _release

        against = _release.FIRST_RELEASE if against == "release" else against
        old = _release.load(against)
    rows = []
    for n, batch in ROWS:
        if sizes is not None and n not in sizes:
            continue
        rows.append(_eigh_row(n, batch // 8 if quick else batch, timer, fan, old, against or ""))
        print(_line(rows[-1]), flush=True)
    if stiefel:  # ~15 ms calls spread widely on a shared VM: many short rounds
        many = Timer(repeats=15 if quick else 61, min_repeats=5, budget_s=20.0, pause_s=0.01)
        rows.append(_stiefel_row(1024, many))
        print(_line(rows[-1]), flush=True)
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cores": cores,
        "quick": quick,
        "against": against,
        "loadavg_before": before,
        "loadavg_after": os.getloadavg(),
        "rows": rows,
    }


def _line(row: dict[str, Any]) -> str:
    cells = row["cells"]
    parts = [
        f"{k} {1e3 * c['median_s']:.1f} ms (±{100 * c['spread']:.0f}%)" for k, c in cells.items()
    ]
    ratio = row.get("ratios") or {"spectra polar vs geoopt": row.get("ratio_vs_geoopt")}
    shown = ", ".join(f"{k} {v:.2f}x" for k, v in ratio.items())
    extra = f" [planned: {row['planned']}]" if "planned" in row else ""
    line = f"{row['row']}{extra}: " + "; ".join(parts) + f"\n    ratio vs best peer: {shown}"
    if "paired_vs_geoopt" in row:
        p = row["paired_vs_geoopt"]
        line += f"\n    paired vs geoopt: {p['median']:.2f}x [{p['q1']:.2f}-{p['q3']:.2f}]"
    if "paired_vs_fan_out" in row:
        pairs = ", ".join(
            f"{k} {p['median']:.2f}x [{p['q1']:.2f}-{p['q3']:.2f}]"
            for k, p in row["paired_vs_fan_out"].items()
        )
        line += f"\n    paired vs thread fan-out: {pairs}"
    return line


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="batches / 8, fewer repeats")
    parser.add_argument("--json", help="write the results here (default: benchmarks/results/)")
    parser.add_argument(
        "--calibrate", action="store_true", help="per-matrix single-thread kernel times only"
    )
    parser.add_argument("--sizes", help="only these n, comma-separated (e.g. 3,8)")
    parser.add_argument("--no-stiefel", action="store_true", help="skip the Stiefel row")
    parser.add_argument(
        "--against",
        metavar="REF",
        help="also time spectra at this git commit ('release': the first release)",
    )
    args = parser.parse_args(argv)
    if args.calibrate:
        result = calibrate(quick=args.quick)
        path = pathlib.Path(args.json or "benchmarks/results/kernels-calibration.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=2))
        print(f"wrote {path}")
        return
    sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else None
    result = run(quick=args.quick, sizes=sizes, stiefel=not args.no_stiefel, against=args.against)
    print(f"load average before {result['loadavg_before']}, after {result['loadavg_after']}")
    day = datetime.date.today().isoformat()
    default = (
        pathlib.Path(__file__).parent
        / "results"
        / f"kernels{'-quick' if args.quick else ''}-{day}.json"
    )
    path = pathlib.Path(args.json) if args.json else default
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, default=str))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
