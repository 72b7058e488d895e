"""Benchmark: graphs of mixed and large sizes (issue 28, graph part), spectra vs PyG's
AddLaplacianEigenvectorPE in the same run.

    .venv/bin/python -m benchmarks.bench_graph_sparse [--quick] [--json FILE]

Rows:

- ``k=8 at N``: ``LaplacianPE(8)`` on the largest component of a random geometric graph
  (mean degree ~10) of 3,000 and 20,000 nodes vs PyG's transform (ARPACK) on it (goal: at
  least 1x); the time spectra spent inside the core's sparse solve is reported too, so the
  transform's own cost (assembly, checks, columns) is the difference.
- ``mixed``: a ``Batch`` of 30 small graphs (20-50 nodes) plus one 2,000-node graph vs that
  graph alone (goal: at most 1.5x), and the same with one 6,000-node graph under
  ``max_memory`` 2 GiB (goal: runs; peak RSS and the largest dense buffer handed to the core
  reported).
- ``D&D-like``: 128 graphs with sizes drawn like D&D (log-normal, mean ~260-290, largest
  5,748 nodes): ``LaplacianPE(8)`` on one ``Batch`` vs PyG's transform looped over the
  graphs (goal: at least 5x); how many graphs the core solved by its partial dense solve
  (`partial_dense_solves`, the `k` lowest eigenpairs only) and their size range; the same
  transform with its sparse and dense calls in turn instead of overlapped over the
  workers (``in_turn_s``, and ``overlap_gain`` = in turn / overlapped, same rounds).
  Each call starts after a pause of ``SETTLE_S`` (not timed): after PyG's loop, OpenBLAS's
  idle workers spin for ~0.1 s and took a core from whatever ran next (spectra's call
  right after PyG's loop: 286 ms, after 0.3 s: 253 ms; without the pause three of the five
  rounds timed spectra in PyG's wake).

Every row interleaves spectra and its peer round by round (the order rotating,
``benchmarks._timing.rotating_rounds``) and reports medians with quartiles of each side and
of the same-round ratios; ``ratio`` is ``peer / spectra`` (> 1: spectra is faster), for
``mixed`` it is ``batch / alone`` (the small graphs' overhead). The machine is shared:
``os.getloadavg()`` before and after each row is in the JSON.
"""

from __future__ import annotations

import copy
import os
import resource
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks._timing import bench_main, rotating_rounds
from benchmarks.bench_graph import molecule_like

#: the untimed pause before each timed call of the D&D-like row (seconds)
SETTLE_S = 0.3


def quartiles(xs: list[float]) -> dict[str, float]:
    """Median and quartiles (``statistics.quantiles``, inclusive) of ``xs``."""
    if len(xs) == 1:
        return {"median": xs[0], "q1": xs[0], "q3": xs[0]}
    q1, q2, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return {"median": q2, "q1": q1, "q3": q3}


def paired(name: str, times: dict[str, list[float]], ours_key: str, peer_key: str,
           **extra: Any) -> dict[str, Any]:  # fmt: skip
    """One row: each side's median/quartiles and the same-round ratios ``peer / ours``."""
    ours, theirs = times[ours_key], times[peer_key]
    ratios = [p / o for o, p in zip(ours, theirs, strict=True)]
    return {"row": name, "spectra_s": quartiles(ours), "peer_s": quartiles(theirs),
            "ratio": quartiles(ratios), "rounds": len(ratios), **extra}  # fmt: skip


def geometric(n: int, seed: int = 0, degree: float = 10.0) -> Any:
    """The largest component of a random geometric graph as a ``Data``."""
    import torch
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    from scipy.spatial import cKDTree
    from torch_geometric.data import Data

    pts = np.random.default_rng(seed).random((n, 2))
    pairs = cKDTree(pts).query_pairs(np.sqrt(degree / (np.pi * n)), output_type="ndarray")
    e = np.concatenate([pairs.T, pairs[:, ::-1].T], axis=1)
    _, labels = connected_components(coo_matrix((np.ones(e.shape[1]), e), shape=(n, n)))
    keep = np.flatnonzero(labels == np.bincount(labels).argmax())
    remap = -np.ones(n, dtype=np.int64)
    remap[keep] = np.arange(keep.size)
    sub = remap[e]
    sub = sub[:, (sub >= 0).all(0)]
    return Data(edge_index=torch.from_numpy(np.ascontiguousarray(sub)), num_nodes=int(keep.size))


def small_graphs(count: int, seed: int) -> list[Any]:
    from torch_geometric.data import Data

    rng = np.random.default_rng(seed)
    sizes = rng.integers(20, 51, size=count)
    return [Data(edge_index=molecule_like(rng, int(n)), num_nodes=int(n)) for n in sizes]


def dd_like(count: int, seed: int = 0) -> list[Any]:
    """Graph sizes log-normal like D&D's (heavy tail), the largest set to D&D's 5,748 and
    the others scaled so that the mean is D&D's 284 (min 30)."""
    from torch_geometric.data import Data

    rng = np.random.default_rng(seed)
    raw = rng.lognormal(np.log(200), 0.8, size=count)
    top = int(np.argmax(raw))
    rest = np.delete(np.arange(count), top)
    raw[rest] *= (284 * count - 5748) / raw[rest].sum()
    sizes = np.clip(raw, 30, 5748).astype(int)
    sizes[top] = 5748
    out = []
    for i, n in enumerate(sizes):
        if n >= 1000:
            g = geometric(int(n), seed=seed + i)  # largest component ~ n nodes
        else:
            g = Data(edge_index=molecule_like(rng, int(n)), num_nodes=int(n))
        out.append(g)
    return out


def _solve_spy() -> tuple[list[float], Any]:
    """Time spent in the core's sparse solve (seconds per call, appended), and the undo."""
    import spectra.graph._sparse_path as sparse_path

    spent: list[float] = []
    real = sparse_path.eigh

    def timed_eigh(a: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        out = real(a, *args, **kwargs)
        spent.append(time.perf_counter() - t0)
        return out

    sparse_path.eigh = timed_eigh

    def undo() -> None:
        sparse_path.eigh = real

    return spent, undo


def _dense_spy() -> tuple[list[int], Any]:
    """Bytes of the dense matrices handed to the core (per call), and the undo."""
    import spectra.graph._spectrum as spectrum

    sizes: list[int] = []
    real = spectrum.eigh

    def counting(a: Any, *args: Any, **kwargs: Any) -> Any:
        items = a if isinstance(a, list) else [a]
        sizes.append(sum(x.numel() * x.element_size() for x in items))
        return real(a, *args, **kwargs)

    spectrum.eigh = counting

    def undo() -> None:
        spectrum.eigh = real

    return sizes, undo


def _fresh(fn: Callable[[Any], Any], data: Any) -> Callable[[], Any]:
    """``fn`` on a fresh shallow copy of ``data`` at every call (transforms write into it)."""
    return lambda: fn(copy.copy(data))


def _window_spy() -> tuple[list[int], Any]:
    """Sizes of the matrices the core's partial dense solve took (``lapack-subset``: the
    ``k`` lowest eigenpairs only), and the undo; nothing where the core has none."""
    try:
        from spectra.core._solvers import _lapack_subset as subset
    except ImportError:  # an older core
        return [], lambda: None
    sizes: list[int] = []
    real = subset.window_into

    def counting(a: Any, *args: Any) -> Any:
        sizes.extend([a.shape[-1]] * a.shape[0])
        return real(a, *args)

    subset.window_into = counting  # type: ignore[assignment]

    def undo() -> None:
        subset.window_into = real

    return sizes, undo


def _in_turn(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` with the graph domain's sparse and dense calls in turn, not overlapped over
    the workers (``spectra.graph._buckets.overlapped`` answering 1): the same-run "before"
    of the overlap; ``fn`` itself where the domain has no overlap."""
    try:
        import spectra.graph._spectrum as spectrum

        real = spectrum.overlapped
    except (ImportError, AttributeError):  # an older domain
        return fn

    def run() -> Any:
        spectrum.overlapped = lambda *args: 1
        try:
            return fn()
        finally:
            spectrum.overlapped = real

    return run


def run(quick: bool = False, device: str = "cpu") -> list[dict[str, Any]]:
    from torch_geometric.data import Batch
    from torch_geometric.transforms import AddLaplacianEigenvectorPE

    from spectra.graph import LaplacianPE

    warnings.filterwarnings("ignore")
    rows: list[dict[str, Any]] = []
    pe = LaplacianPE(8, device=device)
    pyg = AddLaplacianEigenvectorPE(8, is_undirected=True)

    for n in (3000,) if quick else (3000, 20000):
        g = geometric(n, seed=7)  # largest component ~n nodes
        pe(copy.copy(g))
        pyg(copy.copy(g))
        load = os.getloadavg()
        spent, undo = _solve_spy()
        fns: dict[str, Callable[[], Any]] = {"spectra": _fresh(pe, g), "pyg": _fresh(pyg, g)}
        times = rotating_rounds(fns, rounds=3 if quick or n > 5000 else 7, calls=1)
        undo()
        solve = spent[1:] if len(spent) > len(times["spectra"]) else spent  # the warm-up
        rows.append(paired(f"k=8 at {g.num_nodes} nodes", times, "spectra", "pyg",
                           peer="PyG AddLaplacianEigenvectorPE(8) (ARPACK eigsh)",
                           core_solve_s=quartiles(solve[-len(times["spectra"]):]),
                           goal=">= 1", load_before=load, load_after=os.getloadavg()))  # fmt: skip

    big = geometric(2000, seed=1)  # largest component ~2,000 nodes
    mixed = Batch.from_data_list([*small_graphs(30, 2)[:15], big, *small_graphs(30, 2)[15:]])
    pe(copy.copy(big))
    pe(copy.copy(mixed))
    load = os.getloadavg()
    fns = {"batch": lambda: pe(copy.copy(mixed)), "alone": lambda: pe(copy.copy(big))}
    times = rotating_rounds(fns, rounds=5 if quick else 9, calls=1)
    row = paired(f"mixed: 30 small + {big.num_nodes}", times, "alone", "batch",
                 peer="the large graph alone", goal="ratio (batch / alone) <= 1.5",
                 load_before=load, load_after=os.getloadavg())  # fmt: skip
    row["spectra_s"], row["peer_s"] = row["peer_s"], row["spectra_s"]  # batch, alone
    rows.append(row)

    if not quick:
        huge = geometric(6000, seed=3)
        mixed6 = Batch.from_data_list([*small_graphs(30, 4), huge])
        budget = 2 * 2**30
        limited = LaplacianPE(8, eigh_options={"max_memory": budget})
        load = os.getloadavg()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        dense, undo = _dense_spy()
        t0 = time.perf_counter()
        limited(copy.copy(mixed6))
        t = time.perf_counter() - t0
        undo()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        padded_all = 31 * huge.num_nodes**2 * 8
        rows.append({"row": f"mixed: 30 small + {huge.num_nodes}, max_memory 2 GiB",
                     "spectra_s": t, "peak_rss_gib": peak / 2**20,
                     "rss_growth_gib": (peak - before) / 2**20,
                     "largest_dense_input_mib": max(dense, default=0) / 2**20,
                     "padded_to_largest_would_be_gib": padded_all / 2**30,
                     "goal": "runs within max_memory", "load_before": load,
                     "load_after": os.getloadavg()})  # fmt: skip

    count = 32 if quick else 128
    graphs = dd_like(count, seed=5)
    batch = Batch.from_data_list(graphs)
    windows, undo = _window_spy()
    pe(copy.copy(batch))
    undo()
    in_turn = _in_turn(lambda: pe(copy.copy(batch)))
    in_turn()
    load = os.getloadavg()
    fns = {"spectra": lambda: pe(copy.copy(batch)), "in_turn": in_turn,
           "pyg": lambda: [pyg(copy.copy(g)) for g in graphs]}  # fmt: skip
    # a rested start for every side: PyG's ARPACK leaves OpenBLAS's workers spinning
    times = rotating_rounds(fns, rounds=3 if quick else 5, calls=1, settle=SETTLE_S)
    sizes = [g.num_nodes for g in graphs]
    gain = [t / o for o, t in zip(times["spectra"], times["in_turn"], strict=True)]
    rows.append(paired(f"D&D-like {count} graphs (mean {np.mean(sizes):.0f}, max {max(sizes)})",
                       times, "spectra", "pyg", peer="PyG loop", goal=">= 5",
                       partial_dense_solves=len(windows),
                       partial_dense_sizes=[min(windows, default=0), max(windows, default=0)],
                       in_turn_s=quartiles(times["in_turn"]),
                       overlap_gain=quartiles(gain),
                       load_before=load, load_after=os.getloadavg()))  # fmt: skip
    return rows


def _print(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        parts = []
        for k, v in r.items():
            if k == "row":
                continue
            if isinstance(v, dict):
                v = f"{v['median']:.3g} ({v['q1']:.3g}-{v['q3']:.3g})"
            elif isinstance(v, float):
                v = f"{v:.3g}"
            elif isinstance(v, tuple):
                v = "/".join(f"{x:.1f}" for x in v)
            parts.append(f"{k}={v}")
        print(f"{r['row']:50s} " + ", ".join(parts))


def main(argv: list[str] | None = None) -> None:
    bench_main(__doc__, run, _print, argv)


if __name__ == "__main__":
    main()
