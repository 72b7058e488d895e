"""Markdown tables for RESULTS.md from a ``spectra bench --json`` file (figures never by hand).

.venv/bin/python -m benchmarks.results_md benchmarks/results/cpu-full.json
"""

from __future__ import annotations

import json
import sys
from typing import Any

from spectra._bench.table import extrapolations, fmt_cell


def core_rows(report: dict[str, Any]) -> list[str]:
    rows = report["rows"]
    peers = list(dict.fromkeys(k for r in rows for k in r["cells"] if k != "spectra"))
    head = [
        "dtype",
        "n",
        "batch",
        *peers,
        "**spectra**",
        "speed-up vs best peer",
        "max error",
        "spectra path",
    ]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [fmt_cell(r["cells"][k]) if k in r["cells"] else "-" for k in peers]
        out.append(
            "| "
            + " | ".join(
                [
                    r["dtype"],
                    str(r["n"]),
                    f"{r['batch']:,}",
                    *cells,
                    f"**{fmt_cell(r['cells']['spectra'])}**",
                    f"**{r['speedup_vs_best_peer']:.2f}x** ({r['best_peer']})",
                    f"{r['max_eigenvalue_error_vs_scipy']:.0e}",
                    r.get("strategy") or "-",
                ]
            )
            + " |"
        )
    return out


def domain_rows(report: dict[str, Any]) -> list[str]:
    out = []
    for table in report.get("domains", {}).values():
        out += ["", f"**{table['title']}**", ""]
        out += ["| case | spectra | peer | peer / spectra |", "|---|---|---|---|"]
        for r in table["rows"]:
            base = next(k for k in r["cells"] if k.startswith("spectra"))
            ex = set(extrapolations([r]))
            for peer, ratio in r["ratios"].items():
                c = r["cells"][peer]
                note = f" (extrapolated from {c['timed_on']} of {c['total']})" if peer in ex else ""
                out.append(
                    f"| {r['case']} | {base} {fmt_cell(r['cells'][base])} | "
                    f"{peer} {fmt_cell(c)}{note} | {ratio:.2f}x |"
                )
        for s in table.get("skipped", []):
            out.append(f"| skipped {s['peer']} | | {s['reason']} | |")
    return out


def _avg(snapshot: dict[str, Any]) -> str:
    return " / ".join(f"{x:.1f}" for x in snapshot.get("loadavg") or [])


def main(argv: list[str] | None = None) -> None:
    for path in argv if argv is not None else sys.argv[1:]:
        with open(path) as fh:
            report = json.load(fh)
        load = report["load"]
        print(f"<!-- {path}: {report['command']} ({report['date']}) -->")
        print(
            f"Load average (1/5/15 min) before {_avg(load['before'])}, after "
            f"{_avg(load['after'])}; CPU share probe {load['before']['cpu_share']:.0%} / "
            f"{load['after']['cpu_share']:.0%}."
        )
        if report.get("warning"):
            print(f"\n> {report['warning']}\n")
        print("\n".join(core_rows(report)))
        for v in report["verdict"].values():
            print(f"\n`{v['line']}`")
        if report.get("domains"):
            print("\n".join(domain_rows(report)))


if __name__ == "__main__":
    main()
