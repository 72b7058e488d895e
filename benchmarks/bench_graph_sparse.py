"""Benchmark: graphs of mixed and large sizes (issue 28, graph part), spectra vs PyG's
AddLaplacianEigenvectorPE in the same run.

    .venv/bin/python -m benchmarks.bench_graph_sparse [--quick] [--json FILE]

Rows:

- ``mixed``: a ``Batch`` of 30 small graphs (20-50 nodes) plus one 2,000-node graph vs that
  graph alone (goal: at most 1.5x), and the same with one 6,000-node graph under
  ``max_memory`` (goal: runs; peak RSS reported).
- ``D&D-like``: 128 graphs with sizes drawn like D&D (log-normal, mean ~284, largest
  ~5,700 nodes): ``LaplacianPE(8)`` on one ``Batch`` vs PyG's transform looped over the
  graphs (goal: at least 5x).
- ``k=8 at N``: ``LaplacianPE(8)`` on the largest component of a random geometric graph
  (mean degree ~10) of 3,000 and 20,000 nodes vs PyG's transform (ARPACK) on it.

``ratio`` is ``peer / spectra`` (> 1: spectra is faster); for ``mixed`` it is
``batch / alone`` (the overhead of the small graphs). One run per row (the large rows take
seconds), medians of 3 for the rest.
"""

from __future__ import annotations

import copy
import resource
import statistics
import time
import warnings
from typing import Any

import numpy as np

from benchmarks._timing import bench_main
from benchmarks.bench_graph import molecule_like


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
    """Graph sizes log-normal like D&D (mean ~284, heavy tail), largest forced to ~5,700."""
    from torch_geometric.data import Data

    rng = np.random.default_rng(seed)
    sizes = np.clip(rng.lognormal(np.log(200), 0.8, size=count), 30, 5748).astype(int)
    sizes[int(np.argmax(sizes))] = 5748
    out = []
    for i, n in enumerate(sizes):
        if n >= 1000:
            g = geometric(int(n), seed=seed + i)  # largest component ~ n nodes
        else:
            g = Data(edge_index=molecule_like(rng, int(n)), num_nodes=int(n))
        out.append(g)
    return out


def timed(fn: Any, repeats: int = 1) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(quick: bool = False, device: str = "cpu") -> list[dict[str, Any]]:
    from torch_geometric.data import Batch
    from torch_geometric.transforms import AddLaplacianEigenvectorPE

    from spectra.graph import LaplacianPE

    warnings.filterwarnings("ignore")
    rows: list[dict[str, Any]] = []
    pe = LaplacianPE(8, device=device)
    pyg = AddLaplacianEigenvectorPE(8, is_undirected=True)

    big = geometric(2000, seed=1)  # largest component ~2,000 nodes
    mixed = Batch.from_data_list([*small_graphs(30, 2)[:15], big, *small_graphs(30, 2)[15:]])
    pe(copy.copy(big))
    alone = timed(lambda: pe(copy.copy(big)), 3)
    together = timed(lambda: pe(copy.copy(mixed)), 3)
    rows.append({"row": f"mixed: 30 small + {big.num_nodes}", "spectra_s": together,
                 "peer_s": alone, "peer": "the large graph alone",
                 "ratio": together / alone, "goal": "<= 1.5"})  # fmt: skip

    if not quick:
        huge = geometric(6000, seed=3)
        mixed6 = Batch.from_data_list([*small_graphs(30, 4), huge])
        limited = LaplacianPE(8, eigh_options={"max_memory": 2 * 2**30})
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = timed(lambda: limited(copy.copy(mixed6)))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        rows.append({"row": f"mixed: 30 small + {huge.num_nodes}, max_memory 2 GiB",
                     "spectra_s": t, "peak_rss_gib": peak / 2**20,
                     "rss_growth_gib": (peak - before) / 2**20,
                     "goal": "runs within max_memory"})  # fmt: skip

    count = 32 if quick else 128
    graphs = dd_like(count, seed=5)
    batch = Batch.from_data_list(graphs)
    ours = timed(lambda: pe(copy.copy(batch)))
    theirs = timed(lambda: [pyg(copy.copy(g)) for g in graphs])
    sizes = [g.num_nodes for g in graphs]
    rows.append({"row": f"D&D-like {count} graphs (mean {np.mean(sizes):.0f}, max {max(sizes)})",
                 "spectra_s": ours, "peer_s": theirs, "peer": "PyG loop",
                 "ratio": theirs / ours, "goal": ">= 5"})  # fmt: skip

    for n in (3000,) if quick else (3000, 20000):
        g = geometric(n, seed=7)  # largest component ~n nodes
        ours = timed(lambda g=g: pe(copy.copy(g)), 1 if n > 5000 else 3)
        theirs = timed(lambda g=g: pyg(copy.copy(g)), 1 if n > 5000 else 3)
        rows.append({"row": f"k=8 at {g.num_nodes} nodes", "spectra_s": ours, "peer_s": theirs,
                     "peer": "PyG (ARPACK)", "ratio": theirs / ours, "goal": ">= 1"})  # fmt: skip
    return rows


def _print(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        extra = ", ".join(
            f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in r.items()
            if k != "row"
        )
        print(f"{r['row']:55s} {extra}")


def main(argv: list[str] | None = None) -> None:
    bench_main(__doc__, run, _print, argv)


if __name__ == "__main__":
    main()
