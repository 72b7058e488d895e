"""Benchmark: LaplacianPE applied per graph (``dataset.transform = ...``) and on one Batch,
against PyG's AddLaplacianEigenvectorPE in the same run, interleaved.

    .venv/bin/python -m benchmarks.bench_graph_pe [--quick] [--json FILE]

Rows:

- ``per Data``: 25-node molecule-like graphs, ``k=4``, the transform applied to each
  ``Data`` (the direct path) vs PyG's transform on each: rounds alternate spectra / PyG,
  each round times a pass over the same graphs; medians per graph with the spread
  (min..max over rounds).
- ``Batch vs PyG loop``: the same graphs collated into one ``Batch`` and transformed by
  one call vs PyG's transform looped over them.

Ratios are ``pyg_time / spectra_time`` (> 1: spectra is faster), paired by round, with
their spread and quartiles; ``os.getloadavg()`` before and after each row is in the JSON
(the machine is shared).
"""

from __future__ import annotations

import copy
import os
import statistics
import time
import warnings
from typing import Any

from benchmarks._timing import bench_main
from benchmarks.bench_graph import make_graphs


def _pass(transform: Any, graphs: list[Any]) -> float:
    t0 = time.perf_counter()
    for d in graphs:
        transform(copy.copy(d))
    return (time.perf_counter() - t0) / len(graphs)


def _rounds(fns: dict[str, Any], rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):  # interleaved: load changes hit both sides alike
        for name, fn in fns.items():
            times[name].append(fn())
    return times


def _row(name: str, times: dict[str, list[float]], unit: float) -> dict[str, Any]:
    ours, theirs = times["spectra"], times["pyg"]
    ratios = [t / o for o, t in zip(ours, theirs, strict=True)]
    return {
        "row": name,
        "spectra_us": statistics.median(ours) / unit,
        "spectra_spread_us": [min(ours) / unit, max(ours) / unit],
        "pyg_us": statistics.median(theirs) / unit,
        "pyg_spread_us": [min(theirs) / unit, max(theirs) / unit],
        "ratio": statistics.median(ratios),
        "ratio_spread": [min(ratios), max(ratios)],
        "ratio_quartiles": statistics.quantiles(ratios, n=4, method="inclusive")[::2],
        "rounds": len(ratios),
    }


def run(quick: bool = False, device: str = "cpu") -> list[dict[str, Any]]:
    import torch
    from torch_geometric.data import Batch
    from torch_geometric.transforms import AddLaplacianEigenvectorPE

    from spectra.graph import LaplacianPE

    warnings.filterwarnings("ignore")
    count, rounds = (100, 5) if quick else (400, 11)
    graphs = make_graphs(count, low=25, high=25, seed=1)
    ours = LaplacianPE(4, device=device)
    theirs = AddLaplacianEigenvectorPE(4, is_undirected=True)
    assert ours.path(graphs[0]) == "single"
    _pass(ours, graphs[:10])
    _pass(theirs, graphs[:10])
    per_data = {"spectra": lambda: _pass(ours, graphs), "pyg": lambda: _pass(theirs, graphs)}
    load = os.getloadavg()
    rows = [_row("per Data (25 nodes, k=4)", _rounds(per_data, rounds), 1e-6)]
    rows[-1].update(load_before=load, load_after=os.getloadavg())
    batch = Batch.from_data_list(graphs)

    def one_call() -> float:
        t0 = time.perf_counter()
        ours(copy.copy(batch))
        return time.perf_counter() - t0

    def loop() -> float:
        return _pass(theirs, graphs) * len(graphs)

    one_call()
    load = os.getloadavg()
    times = _rounds({"spectra": one_call, "pyg": loop}, max(5, rounds))
    rows.append(_row(f"Batch of {count} vs PyG loop (total)", times, 1e-6))
    rows[-1].update(threads=torch.get_num_threads(), load_before=load,
                    load_after=os.getloadavg())  # fmt: skip
    return rows


def _print(rows: list[dict[str, Any]]) -> None:
    print(f"{'row':40s} {'spectra us':>14s} {'PyG us':>14s} {'ratio':>18s}")
    for r in rows:
        lo, hi = r["spectra_spread_us"]
        s = f"{r['spectra_us']:.0f} ({lo:.0f}-{hi:.0f})"
        lo, hi = r["pyg_spread_us"]
        p = f"{r['pyg_us']:.0f} ({lo:.0f}-{hi:.0f})"
        q = f"{r['ratio']:.2f}x ({r['ratio_spread'][0]:.2f}-{r['ratio_spread'][1]:.2f})"
        print(f"{r['row']:40s} {s:>14s} {p:>14s} {q:>18s}")


def main(argv: list[str] | None = None) -> None:
    bench_main(__doc__, run, _print, argv)


if __name__ == "__main__":
    main()
