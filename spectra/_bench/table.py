"""The printed tables of ``spectra bench``: full column names, units, legend, verdict."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

from .peers import DESCRIPTIONS
from .timing import MAX_SPREAD


def fmt_ms(seconds: float) -> str:
    """Milliseconds with 3-4 significant digits: ``fmt_ms(0.01234) == '12.3'``."""
    ms = 1e3 * seconds
    if ms >= 100:
        return f"{ms:.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    if ms >= 1:
        return f"{ms:.2f}"
    return f"{ms:.3f}"


def fmt_cell(cell: dict[str, Any], max_spread: float = MAX_SPREAD) -> str:
    """``median (spread%)``, then ``*`` if extrapolated and ``!`` if still too wide.

    >>> fmt_cell({"median_s": 0.0843, "spread": 0.052, "extrapolated": True})
    '84.3 (5%)*'
    """
    text = f"{fmt_ms(cell['median_s'])} ({100 * cell['spread']:.0f}%)"
    if cell.get("extrapolated"):
        text += "*"
    if cell["spread"] > max_spread:
        text += "!"
    return text


def grid(header: list[str], lines: list[list[str]], left: int = 1) -> list[str]:
    """Columns as wide as their widest entry; the first ``left`` columns left-aligned."""
    widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header))]

    def fmt(r: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ).rstrip()

    out = [fmt(header), "-" * len(fmt(header))]
    return out + [fmt(r) for r in lines]


def extrapolations(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per column: in how many rows it was extrapolated, and from how many items."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        for name, c in r["cells"].items():
            if c.get("extrapolated"):
                e = out.setdefault(name, {"rows": 0, "timed_on": [], "of": []})
                e["rows"] += 1
                e["timed_on"].append(c["timed_on"])
                e["of"].append(c["total"])
    return out


def compared(ratio: float) -> str:
    """``1.48`` -> ``'1.48x faster'``, ``0.8`` -> ``'1.25x slower'`` (ratio: peer / spectra).

    >>> compared(1.48), compared(0.8)
    ('1.48x faster', '1.25x slower')
    """
    return f"{ratio:.2f}x faster" if ratio >= 1 else f"{1 / ratio:.2f}x slower"


def verdict(rows: list[dict[str, Any]], where: str) -> dict[str, dict[str, Any]]:
    """Median and worst speed-up of spectra over the best peer, per dtype, in words.

    The line names the peer that was best most often (and in how many rows when it was
    not best everywhere) and the worst row's size and peer.

    >>> rows = [{"dtype": "float64", "n": n, "speedup_vs_best_peer": s,
    ...          "best_peer": "thread fan-out"} for n, s in ((8, 1.02), (32, 1.45), (64, 1.5))]
    >>> verdict(rows, "2 cores")["float64"]["line"]  # doctest: +NORMALIZE_WHITESPACE
    'spectra is 1.45x faster than the best peer (thread fan-out), median of 3 sizes; worst
     1.02x faster (n=8, vs thread fan-out) (float64, 2 cores)'
    """
    out = {}
    for dtype in dict.fromkeys(r["dtype"] for r in rows):
        mine = [r for r in rows if r["dtype"] == dtype]
        s = [r["speedup_vs_best_peer"] for r in mine]
        worst, med = min(s), statistics.median(s)
        peers = [r.get("best_peer") or "?" for r in mine]
        common = max(dict.fromkeys(peers), key=peers.count)
        count = peers.count(common)
        peer = common if count == len(peers) else f"{common} in {count} of {len(peers)} sizes"
        low = min(mine, key=lambda r: r["speedup_vs_best_peer"])
        sizes = f"{len(s)} size{'s' if len(s) > 1 else ''}"
        at = f"n={low.get('n', '?')}, vs {low.get('best_peer') or '?'}"
        out[dtype] = {
            "worst": worst,
            "median": med,
            "rows": len(s),
            "best_peer": common,
            "line": f"spectra is {compared(med)} than the best peer ({peer}), median of "
            f"{sizes}; worst {compared(worst)} ({at}) ({dtype}, {where})",
        }
    return out


def core_table(rows: list[dict[str, Any]]) -> list[str]:
    """The core table: one line per (dtype, n, batch)."""
    names = list(dict.fromkeys(k for r in rows for k in r["cells"]))
    peers = [k for k in names if k != "spectra"]
    header = ["dtype", "n", "batch", *peers, "spectra", "best peer", "speed-up", "max error"]
    header.append("spectra path")
    lines = []
    for r in rows:
        cells = [fmt_cell(r["cells"][k]) if k in r["cells"] else "-" for k in peers]
        err = r.get("max_eigenvalue_error_vs_scipy")
        lines.append(
            [
                r["dtype"],
                str(r["n"]),
                f"{r['batch']:,}",
                *cells,
                fmt_cell(r["cells"]["spectra"]),
                r["best_peer"],
                f"{r['speedup_vs_best_peer']:.2f}x",
                "-" if err is None else f"{err:.0e}",
                r.get("strategy") or "-",
            ]
        )
    return grid(header, lines)


def legend(rows: list[dict[str, Any]], cores: int, device: str) -> list[str]:
    """What each column is, what the ratio means, and what was extrapolated."""
    names = list(dict.fromkeys(k for r in rows for k in r["cells"]))
    repeats = sorted({c["repeats"] for r in rows for c in r["cells"].values()})
    attempts = sum(r.get("attempts", 1) - 1 for r in rows)
    rep = f"{repeats[0]}" if len(repeats) == 1 else f"{repeats[0]}-{repeats[-1]}"
    out = [
        f"Times in ms per whole batch: the median of {rep} repeats, every column of a row "
        "timed in turn (round-robin, the order rotating each repeat) after one warm-up call "
        "each.",
        f"(p%) = spread of the repeats, (max - min) / median; a row with a cell above "
        f"{100 * MAX_SPREAD:.0f}% is timed again ({attempts} re-run(s) in this table); "
        "! = still above.",
        "speed-up = best peer's time / spectra's time (above 1x: spectra is faster); best "
        "peer = the fastest peer column of the row. max error = max |w - w_scipy| / ||A||_2 "
        "over the first 64 matrices. spectra path = the core's strategy for that row "
        "(spectra.core.plan).",
        "Columns:",
    ]
    for k in names:
        desc = DESCRIPTIONS.get(k, "")
        if k == "thread fan-out":
            desc = desc.replace("one Python thread per core", f"{cores} Python threads")
        out.append(f"  {k}: {desc}")
    for k, e in extrapolations(rows).items():
        sample = sorted(set(e["timed_on"]))
        on = ", ".join(str(s) for s in sample)
        out.append(
            f"* extrapolated: {k} was timed on the first {on} matrices of the batch and "
            f"scaled linearly to the whole batch, in {e['rows']} of {len(rows)} rows."
        )
    return out


def domain_table(table: dict[str, Any]) -> list[str]:
    """One domain's table: a line per case, a column per implementation, ratios last."""
    rows = table["rows"]
    out = [f"== {table['title']} =="]
    if rows:
        impls = list(dict.fromkeys(k for r in rows for k in r["cells"]))
        header = ["case", *impls]
        lines = []
        for r in rows:
            cells = []
            for k in impls:
                text = fmt_cell(r["cells"][k]) if k in r["cells"] else "-"
                if k in r["ratios"]:
                    text += f" = {r['ratios'][k]:.2f}x"
                cells.append(text)
            lines.append([r["case"], *cells])
        out += grid(header, lines)
        out.append(
            "Times in ms, median of repeats (round-robin); (p%) spread; '= 2.50x' after a "
            "peer: its time / spectra's time (above 1x: spectra is faster)."
        )
        for k, e in extrapolations(rows).items():
            pairs = ", ".join(f"{a} of {b}" for a, b in zip(e["timed_on"], e["of"], strict=True))
            out.append(
                f"* extrapolated: {k} timed on {pairs} {table.get('unit', 'items')} and "
                "scaled linearly."
            )
    for note in table.get("notes", []):
        out.append(note)
    for s in table.get("skipped", []):
        out.append(f"skipped {s['peer']}: {s['reason']}")
    return out
