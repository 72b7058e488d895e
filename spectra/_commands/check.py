"""``spectra check``: verify an install against the SciPy reference (pass/fail table)."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="run the core against SciPy on random and adversarial "
        "batches and print a pass/fail table",
    )
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)")
    p.add_argument("--quick", action="store_true", help="smaller batches")
    p.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from spectra._commands.validate import check_device
    from spectra.core import warm_kernels
    from spectra.core.selfcheck import format_table, rows_as_dicts, run_checks

    check_device(args.device)
    warm_kernels()  # compiles the numba kernels once (later calls never wait for it)
    rows = run_checks(args.device, quick=args.quick)
    print(format_table(rows))
    failed = [r for r in rows if not r.passed]
    print(
        f"\n{len(rows) - len(failed)} passed, {len(failed)} failed on {args.device} "
        f"(torch {torch.__version__})"
    )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(
                {"device": args.device, "torch": torch.__version__, "rows": rows_as_dicts(rows)},
                fh,
                indent=1,
            )
    return 1 if failed else 0
