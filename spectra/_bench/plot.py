"""``spectra bench --plot FILE``: spectra's speed-up over each peer against n (log axes)."""

from __future__ import annotations

from typing import Any


def require_matplotlib() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError(
            "spectra bench --plot needs matplotlib: pip install 'torch-spectra[plot]'"
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_speedups(rows: list[dict[str, Any]], path: str, title: str = "") -> str:
    """One line per (peer, dtype): peer time / spectra time vs n, the 1x line drawn."""
    plt = require_matplotlib()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    styles = ["-", "--", ":", "-."]
    peers = list(dict.fromkeys(k for r in rows for k in r.get("speedup", {})))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for j, dtype in enumerate(dtypes):
        sub = sorted((r for r in rows if r["dtype"] == dtype), key=lambda r: r["n"])
        for i, peer in enumerate(peers):
            pts = [(r["n"], r["speedup"][peer]) for r in sub if peer in r["speedup"]]
            if not pts:
                continue
            xs, ys = zip(*pts, strict=True)
            label = f"{peer} ({dtype})" if len(dtypes) > 1 else peer
            ax.plot(
                xs,
                ys,
                styles[j % len(styles)],
                marker="o",
                color=colors[i % len(colors)],
                label=label,
            )
    ax.axhline(1.0, color="black", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("matrix size n")
    ax.set_ylabel("speed-up of spectra = peer time / spectra time")
    ax.set_title(title or "spectra.eigh vs peers (above 1: spectra is faster)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
