"""Benchmark: spectra.graph vs PyG's AddLaplacianEigenvectorPE and scikit-learn, same run.

    .venv/bin/python -m benchmarks.bench_graph [--quick] [--device cpu|cuda] [--json FILE]

Rows:

- ``pe batch``: Laplacian PE (k=8) for 2,000 molecule-sized graphs (10-40 nodes):
  ``LaplacianPE(8)`` on one collated ``Batch`` (one eigh call) vs
  ``AddLaplacianEigenvectorPE(8, is_undirected=True)`` applied graph by graph.
- ``pe apply_many``: the same from a list of ``Data`` (collate + solve + separate).
- ``pe 1 thread``: both sides limited to one CPU thread (torch, BLAS and spectra's
  ``workers=1``), as in the issue.
- ``clustering``: ``spectral_clustering`` of many SBM graphs vs a loop of
  ``sklearn.cluster.SpectralClustering(affinity="precomputed")``.

Ratios are ``peer_time / spectra_time`` (> 1: spectra is faster). Medians of a few runs
(PyG's loop, which takes seconds, once per thread setting with ``--quick``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch

from benchmarks._timing import bench_main, median_time


def molecule_like(rng: np.random.Generator, n: int) -> torch.Tensor:
    """An undirected, connected, sparse graph: a random tree plus a few ring closures."""
    parents = [int(rng.integers(0, i)) for i in range(1, n)]
    edges = [(i, p) for i, p in zip(range(1, n), parents, strict=True)]
    for _ in range(max(1, n // 6)):
        a, b = (int(x) for x in rng.choice(n, 2, replace=False))
        edges.append((a, b))
    e = np.array(sorted({(min(a, b), max(a, b)) for a, b in edges}), dtype=np.int64).T
    return torch.from_numpy(np.concatenate([e, e[::-1]], axis=1).copy())


def make_graphs(count: int, low: int = 10, high: int = 40, seed: int = 0) -> list[Any]:
    from torch_geometric.data import Data

    rng = np.random.default_rng(seed)
    sizes = rng.integers(low, high + 1, size=count)
    return [Data(edge_index=molecule_like(rng, int(n)), num_nodes=int(n)) for n in sizes]


def _sbm(rng: np.random.Generator, n: int, blocks: int) -> np.ndarray:
    labels = np.arange(n) % blocks
    p = np.where(labels[:, None] == labels[None, :], 0.5, 0.05)
    up = np.triu(rng.random((n, n)) < p, 1)
    return (up | up.T).astype(np.float64)


class _threads:
    """Limit torch and BLAS to ``n`` threads inside the block (restored afterwards)."""

    def __init__(self, n: int | None) -> None:
        self.n = n

    def __enter__(self) -> None:
        if self.n is None:
            return
        from threadpoolctl import threadpool_limits

        self.saved = torch.get_num_threads()
        self.limits = threadpool_limits(self.n)  # before torch's: it records the originals
        torch.set_num_threads(self.n)

    def __exit__(self, *exc: Any) -> None:
        if self.n is None:
            return
        self.limits.restore_original_limits()
        torch.set_num_threads(self.saved)


def _pe_rows(
    count: int, k: int, device: str, repeats: int, peer_repeats: int, budget: float
) -> list[dict[str, Any]]:
    from torch_geometric.data import Batch
    from torch_geometric.transforms import AddLaplacianEigenvectorPE

    from spectra.graph import LaplacianPE

    graphs = make_graphs(count)
    batch = Batch.from_data_list(graphs)
    pyg = AddLaplacianEigenvectorPE(k, is_undirected=True)
    if device == "cpu":
        ours, ours_1 = LaplacianPE(k), LaplacianPE(k, eigh_options={"workers": 1})
        batch_in = batch
    else:
        ours = ours_1 = LaplacianPE(k, device=None)
        batch_in = batch.to(device)

    def pyg_loop() -> None:
        for d in graphs:
            pyg(d)

    rows = []
    base = {"graphs": count, "nodes": "10-40", "k": k, "device": device}
    peer_times: dict[int | None, float] = {}
    for name, threads, fn in [
        ("pe batch", None, lambda: ours(batch_in)),
        ("pe apply_many", None, lambda: ours.apply_many(graphs)),
        ("pe 1 thread", 1, lambda: ours_1(batch_in)),
    ]:
        with _threads(threads):
            used = torch.get_num_threads()
            t_ours = median_time(fn, repeats=repeats, device=device, budget_s=budget)
            if threads not in peer_times:  # PyG's loop is long: timed once per setting
                peer_times[threads] = median_time(
                    pyg_loop, repeats=peer_repeats, warmup=0, budget_s=budget
                )
        t_pyg = peer_times[threads]
        rows.append(
            {
                **base,
                "name": name,
                "threads": used,
                "spectra_s": t_ours,
                "peer": "pyg AddLaplacianEigenvectorPE",
                "peer_s": t_pyg,
                "ratio": t_pyg / t_ours,
            }
        )
    return rows


def _clustering_row(
    count: int, n: int, blocks: int, repeats: int, budget: float, device: str
) -> dict[str, Any]:
    from sklearn.cluster import SpectralClustering

    from spectra.graph import spectral_clustering

    rng = np.random.default_rng(1)
    mats = np.stack([_sbm(rng, n, blocks) for _ in range(count)])
    ours_in: Any = mats if device == "cpu" else torch.from_numpy(mats).to(device)

    def sklearn_loop() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for m in mats:
                SpectralClustering(blocks, affinity="precomputed", random_state=0).fit(m)

    t_ours = median_time(
        lambda: spectral_clustering(ours_in, blocks),
        repeats=repeats,
        device=device,
        budget_s=budget,
    )
    t_sk = median_time(sklearn_loop, repeats=repeats, budget_s=budget)
    return {
        "name": "clustering",
        "graphs": count,
        "nodes": str(n),
        "k": blocks,
        "device": device,
        "threads": torch.get_num_threads(),
        "spectra_s": t_ours,
        "peer": "sklearn SpectralClustering loop",
        "peer_s": t_sk,
        "ratio": t_sk / t_ours,
    }


def run(quick: bool = False, device: str = "cpu") -> list[dict[str, Any]]:
    """Time every case; one dict per row (median seconds per implementation and the ratio)."""
    repeats, peer_repeats, budget = (3, 1, 4.0) if quick else (7, 3, 30.0)
    rows = _pe_rows(2000, 8, device, repeats, peer_repeats, budget)
    rows.append(_clustering_row(50 if quick else 200, 60, 3, repeats, budget, device))
    return rows


def _print(rows: list[dict[str, Any]]) -> None:
    head = (
        f"{'case':14} {'graphs':>6} {'nodes':>6} {'k':>3} {'dev':5} {'thr':>3} "
        f"{'spectra s':>10} {'peer s':>9} {'ratio':>7}  peer"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['name']:14} {r['graphs']:6d} {r['nodes']:>6} {r['k']:3d} {r['device']:5} "
            f"{r['threads']:3d} {r['spectra_s']:10.4f} {r['peer_s']:9.4f} "
            f"{r['ratio']:6.1f}x  {r['peer']}"
        )


def main(argv: list[str] | None = None) -> None:
    bench_main(__doc__, run, _print, argv, threads=False)


if __name__ == "__main__":
    main()
