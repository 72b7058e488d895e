"""``spectra scan``: find per-matrix eigensolver loops; ``--fix`` batches the safe ones."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "scan",
        help="find eigh/eigvalsh calls made once per matrix in loops (and batch them)",
        description=(
            "Report eigensolver calls that run once per loop iteration, comprehension "
            "element or map() item, as file:line:col: CODE message. Exit status: 0 nothing "
            "found, 1 something found, 2 a path could not be scanned (missing, not valid "
            "Python) or bad options; findings are printed either way."
        ),
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help=".py/.ipynb files or folders")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--select", default=None, help="comma-separated codes or prefixes to keep")
    p.add_argument("--ignore", default=None, help="comma-separated codes or prefixes to drop")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--fix", action="store_true", help="rewrite the provably safe ones")
    mode.add_argument("--diff", action="store_true", help="print what --fix would change")
    p.set_defaults(func=run)


def _codes(text: str | None) -> list[str] | None:
    return None if text is None else [c for c in text.split(",") if c.strip()]


def run(args: argparse.Namespace) -> int:
    from spectra.scan import as_json, fix_parsed, format_finding, scan_report, summary

    try:
        parsed, errors = scan_report(args.paths, _codes(args.select), _codes(args.ignore))
    except ValueError as exc:
        print(f"spectra scan: error: {exc}", file=sys.stderr)
        return 2
    fixed = []
    if args.fix or args.diff:
        results = [fix_parsed(p) for p in parsed]
        diffs = [r.diff for r in results if r.diff]
        if diffs and not args.json:
            print("".join(diffs), end="")
        for r in results:
            fixed.extend(r.applied)
            if args.fix:
                r.write()
    done = {id(f) for f in fixed} if args.fix else set()
    findings = [f for p in parsed for f in p.findings if id(f) not in done]
    if args.json:
        print(as_json(findings, [e.as_dict() for e in errors], fixed if args.fix else None))
    else:
        for f in findings:
            print(format_finding(f))
        if args.fix and fixed:
            print(f"Rewrote {len(fixed)} call(s) in place.")
        if (findings or not fixed) and (parsed or not errors):  # nothing scanned: errors only
            print(summary(findings))
    for e in errors:
        print(f"spectra scan: error: {e}", file=sys.stderr)
    if errors:
        return 2
    return 1 if findings else 0
