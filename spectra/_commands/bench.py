"""``spectra bench``: spectra.eigh against its peers, measured in the same run (the main job).

The timing, peers, tables and figure live in :mod:`spectra._bench`; this module is the
command line: arguments, progress, the report (printed and as JSON).
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
from typing import Any, NoReturn


def _sizes(text: str) -> tuple[tuple[int, int], ...]:
    """``"8:1024,64:256"`` -> ((8, 1024), (64, 256))."""
    try:
        out = tuple(
            (int(n), int(b)) for n, b in (part.split(":") for part in text.split(",") if part)
        )
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected n:batch[,n:batch...], got {text!r}") from None
    if not out or any(n < 1 or b < 1 for n, b in out):
        raise argparse.ArgumentTypeError(f"sizes must be positive n:batch pairs, got {text!r}")
    return out


#: Bytes per matrix entry the bench holds at its peak: the float64 draw ``X``, ``X + X^T``
#: and its half (``random_symmetric``), then the input, eigenvectors and a peer's copy.
DRAW_BYTES_PER_ENTRY = 32
MAX_REPEATS = 1000


def check_sizes(
    sizes: tuple[tuple[int, int], ...], device: str, itemsize: int, given: bool = True
) -> None:
    """Refuse (one line, before any work) an ``n:batch`` whose matrices cannot fit in memory."""
    from spectra._commands.validate import check_fits

    for n, batch in sizes:
        what = f"--sizes {n}:{batch}" if given else f"the benchmark size {n}:{batch}"
        entries = float(batch) * n * n
        check_fits(DRAW_BYTES_PER_ENTRY * entries, what)  # drawn on the CPU
        if device.startswith("cuda"):
            check_fits(3 * itemsize * entries, what, device)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench",
        help="time spectra.eigh against torch, NumPy, SciPy and a plain thread fan-out",
        description="Time spectra.eigh against what a user would write instead, in the same "
        "run (interleaved repeats), and print a table, its legend and a verdict.",
    )
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    p.add_argument(
        "--quick", action="store_true", help="smaller batches, 3 repeats (<= 60 s on 2 cores)"
    )
    p.add_argument("--dtype", choices=["float32", "float64", "both"], default="both")
    p.add_argument("--json", metavar="FILE", help="write the numbers as JSON")
    p.add_argument("--plot", metavar="FILE", help="save a speed-up vs n figure (needs [plot])")
    p.add_argument("--sizes", type=_sizes, default=None, help="n:batch pairs, e.g. 8:16384,64:1024")
    p.add_argument("--repeats", type=_positive, default=None, help="repeats per cell")
    p.add_argument(
        "--dask",
        type=_positive,
        metavar="N",
        default=None,
        help="also run the benchmark batch across N local Dask workers",
    )
    p.add_argument(
        "--domains",
        action="store_true",
        help="also time PCA, tight-binding, graph and Stiefel against their peers",
    )

    def error(message: str) -> NoReturn:  # one line, exit status 2
        print(f"spectra bench: error: {message} (see spectra bench --help)", file=sys.stderr)
        sys.exit(2)

    p.error = error  # type: ignore[method-assign]
    known = p.parse_known_args

    def strict(args: Any = None, namespace: Any = None) -> Any:
        # unknown options would otherwise reach the top-level parser (usage + error lines)
        ns, extra = known(args, namespace)
        if extra:
            error(f"unrecognized arguments: {' '.join(extra)}")
        return ns, extra

    p.parse_known_args = strict  # type: ignore[method-assign]
    p.set_defaults(func=run)


def _timer(args: argparse.Namespace, sync: Any) -> Any:
    from spectra._bench.timing import Timer

    if args.quick:
        t = Timer(repeats=3, min_repeats=3, budget_s=2.0, pause_s=0.05, reruns=1, sync=sync)
    else:
        t = Timer(repeats=7, min_repeats=3, budget_s=10.0, pause_s=0.2, reruns=1, sync=sync)
    if args.quick:  # past 40 s (a busy machine): no re-runs, 2 repeats, all still reported
        t.deadline = t.clock() + 40.0
    if args.repeats:
        t.repeats = t.min_repeats = args.repeats
    return t


def check_counts(args: argparse.Namespace) -> None:
    """``--repeats`` and ``--dask`` within reach (each is a positive integer already)."""
    import os

    if args.repeats is not None and args.repeats > MAX_REPEATS:
        raise ValueError(f"--repeats must be at most {MAX_REPEATS}, got {args.repeats}")
    most = 4 * (os.cpu_count() or 1)
    if args.dask is not None and args.dask > most:
        raise ValueError(
            f"--dask {args.dask}: at most {most} local workers (4 per core on this machine)"
        )


def run(args: argparse.Namespace) -> int:
    check_counts(args)
    if args.plot:
        try:
            from spectra._bench.plot import require_matplotlib

            require_matplotlib()
        except ImportError as exc:
            print(f"spectra bench: error: {exc}", file=sys.stderr)
            return 2
    import numpy as np
    import scipy
    import torch

    from spectra._bench import domains as dom
    from spectra._bench.progress import Progress
    from spectra._bench.suite import (
        FULL_SIZES,
        LOOP_SAMPLE,
        QUICK_SIZES,
        bench_core,
        bench_extra,
        extra_steps,
    )
    from spectra._bench.table import core_table, domain_table, extrapolations, legend, verdict
    from spectra._bench.timing import busy_warning, load_snapshot
    from spectra._commands.validate import check_device
    from spectra.core.domain import cpu_count

    device = check_device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    cuda = device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    dtypes = {
        "float32": (torch.float32,),
        "float64": (torch.float64,),
        "both": (torch.float32, torch.float64),
    }[args.dtype]
    sizes = args.sizes or (QUICK_SIZES if args.quick else FULL_SIZES)
    check_sizes(sizes, device, max(d.itemsize for d in dtypes), given=args.sizes is not None)
    sample = LOOP_SAMPLE["cuda" if cuda else ("cpu-quick" if args.quick else "cpu")]
    cores = cpu_count()
    timer = _timer(args, sync)
    steps = len(dtypes) * len(sizes)
    # the complex and generalized rows join a default run (both real dtypes, no --sizes)
    extra = args.sizes is None and args.dtype == "both"
    steps += extra_steps(args.quick, device) if extra else 0
    if args.domains:
        steps += sum(s[0 if args.quick else 1] for s in dom.STEPS.values())
    before = load_snapshot(cores)
    report: dict[str, Any] = {"schema": "spectra-bench/2", "command": _command()}
    with Progress(steps) as progress:
        rows = bench_core(device, dtypes, sizes, timer, sample, cores, progress.step)
        if extra:
            rows += bench_extra(device, args.quick, timer, sample, cores, progress.step)
        tables = {}
        if args.domains:
            for name, fn in dom.DOMAINS.items():
                tables[name] = fn(args.quick, timer, progress.step)
    after = load_snapshot(cores)
    spreads = [c["spread"] for r in rows for c in r["cells"].values()]
    spreads += [
        c["spread"] for t in tables.values() for r in t["rows"] for c in r["cells"].values()
    ]
    warning = busy_warning(before, after, cores, spreads, timer.max_spread)
    name = torch.cuda.get_device_name() if cuda else platform.processor() or platform.machine()
    where = device if cuda else f"{cores} cores"
    verdicts = verdict(rows, where)
    report.update(
        {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "mode": "quick" if args.quick else "full",
            "device": device,
            "device_name": name,
            "cores": cores,
            "python": platform.python_version(),
            "torch": torch.__version__,
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "timer": {
                "repeats": timer.repeats,
                "min_repeats": timer.min_repeats,
                "pause_s": timer.pause_s,
                "max_spread": timer.max_spread,
                "reruns": timer.reruns,
            },
            "load": {"before": before, "after": after},
            "warning": warning,
            "peers": _peer_descriptions(rows, cores),
            "extrapolated": extrapolations(rows),
            "rows": rows,
            "verdict": verdicts,
        }
    )
    print(f"spectra bench on {device} ({name}, {cores} cores), torch {torch.__version__}")
    print("\n".join(core_table(rows)))
    print()
    print("\n".join(legend(rows, cores, device)))
    if tables:
        report["domains"] = tables
        for t in tables.values():
            print()
            print("\n".join(domain_table(t)))
    if args.dask:
        from spectra.distributed import format_rows as dask_rows
        from spectra.distributed import run_dask_bench

        report["dask"] = run_dask_bench(args.dask, quick=args.quick)
        print()
        print(dask_rows(report["dask"]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1, default=str)
    if args.plot:
        from spectra._bench.plot import plot_speedups

        plot_speedups(rows, args.plot, f"spectra.eigh vs peers ({device}, {where})")
        print(f"figure: {args.plot}")
    print()
    if warning:
        print(warning)
    for v in verdicts.values():
        print(v["line"])
    return 0


def _peer_descriptions(rows: list[dict[str, Any]], cores: int) -> dict[str, str]:
    from spectra._bench.peers import DESCRIPTIONS

    names = dict.fromkeys(k for r in rows for k in r["cells"])
    out = {k: DESCRIPTIONS.get(k, "") for k in names}
    if "thread fan-out" in out:
        out["thread fan-out"] += f" [{cores} threads here]"
    return out


def _command() -> str:
    return " ".join(["spectra", *sys.argv[1:]]) if sys.argv else "spectra bench"
