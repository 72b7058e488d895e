"""k smallest eigenpairs of large sparse normalized Laplacians: spectra vs the peers.

The matrix is the sym-normalized Laplacian of the largest connected component of a random
geometric graph in the unit square with mean degree ~10 (the graphs of issue #28); k = 8
non-trivial eigenpairs, i.e. the 9 lowest with the null vector. Solvers, all in one run,
timed in interleaved rounds whose order rotates (medians with quartiles; the ratio of each
peer to ``spectra`` is taken per round):

- ``spectra``: ``spectra.eigh(L, k=9)`` (the default plan: the block shift-invert Lanczos
  on a sparse LU where the fill estimate allows, else block LOBPCG with AMG);
- ``spectra-pe``: what ``LaplacianPE(k=8)`` calls, ``spectra.eigh([L], k=8,
  spectrum_bound=(0, 2), deflate=[null vector])``;
- ``spectra-lobpcg``: the previous default, block LOBPCG with the same sparse LU as its
  preconditioner (``method="lobpcg"``);
- ``spectra-amg``: the one before, ``precondition="amg"`` (pyamg's hierarchy);
- ``pyg``: ``torch_geometric.transforms.AddLaplacianEigenvectorPE(8)`` on a ``Data``
  (its default ``is_undirected=False``: ARPACK ``eigs(k=9, which="SR")``, tol 0, including
  building the Laplacian), and ``pyg-undirected`` (``is_undirected=True``: ``eigsh "SA"``);
- ``scipy-eigsh``: ARPACK ``eigsh(L, k=9, which="SA", tol=1e-8)``;
- ``scipy-eigsh-si``: ARPACK shift-invert ``eigsh(L, k=9, sigma=-1e-3, tol=1e-8)`` (a
  SuperLU factorization, as spectra's preconditioner);
- ``sklearn-amg``: ``spectral_embedding(adjacency, n_components=9, eigen_solver="amg")``
  (scipy lobpcg + pyamg, its own tolerance and normalization: timed, not compared);
- ``primme``: ``primme.eigsh(L, k=9, which="SA", tol=1e-8)`` when the package imports.

Accuracy against shift-invert ARPACK at tol 1e-14 (untimed): the largest eigenvalue error
relative to ``||L|| = 2`` and the largest principal angle between eigenspaces (multiplicity
groups as spaces). Memory: the peak of NumPy/SciPy allocations (tracemalloc, in one extra
untimed call; torch's allocations are not traced) and the process's peak RSS. The load
average is recorded before and after: the 2-core machine is shared with other sessions.

    python benchmarks/bench_sparse.py --sizes 3000 20000 --batch 64 5000 \\
        --out benchmarks/results/sparse-2026-12-01b.json
    python benchmarks/bench_sparse.py --sizes 200000 --rounds 1 --out /tmp/sparse-200k.json
    python benchmarks/bench_sparse.py --million --sizes --out /tmp/sparse-million.json

Each timed call also records its process CPU seconds (``cpu_*`` in the JSON): on the
shared machine the wall clock mostly measures the other sessions. ``--million`` adds the
1,000,000-node row: ``spectra`` alone, one call, its peak RSS (the process's, the graph
included, and the growth during the call) and its true residuals (no ARPACK reference).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import rotating_rounds

import spectra

K = 8
TOL = 1e-8


def rgg_adjacency(n: int, degree: float = 10.0, seed: int = 0) -> sp.csr_matrix:
    """The largest connected component of a random geometric graph (mean degree ~degree)."""
    rng = np.random.default_rng(seed)
    pts = rng.random((n, 2))
    pairs = cKDTree(pts).query_pairs(np.sqrt(degree / (np.pi * n)), output_type="ndarray")
    rows = np.concatenate([pairs[:, 0], pairs[:, 1]])
    cols = np.concatenate([pairs[:, 1], pairs[:, 0]])
    adj = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    _, labels = connected_components(adj, directed=False)
    keep = np.flatnonzero(labels == np.bincount(labels).argmax())
    return adj[keep][:, keep].tocsr()


def normalized_laplacian(adj: sp.csr_matrix) -> sp.csr_matrix:
    d = np.asarray(adj.sum(axis=1)).ravel()
    dh = sp.diags(1 / np.sqrt(d))
    return (sp.identity(adj.shape[0], format="csr") - dh @ adj @ dh).tocsr()


def rgg_laplacian(n: int, seed: int = 0) -> sp.csr_matrix:
    return normalized_laplacian(rgg_adjacency(n, seed=seed))


class Graph:
    """One test graph: adjacency, Laplacian, PyG ``Data``, null vector, reference."""

    def __init__(self, n: int, seed: int = 0):
        self.adj = rgg_adjacency(n, seed=seed)
        self.lap = normalized_laplacian(self.adj)
        self.n = self.lap.shape[0]
        d = np.asarray(self.adj.sum(axis=1)).ravel()
        self.null = (np.sqrt(d) / np.linalg.norm(np.sqrt(d)))[:, None]
        self._data = None

    def data(self) -> Any:
        if self._data is None:
            import torch
            from torch_geometric.data import Data

            c = self.adj.tocoo()
            index = torch.from_numpy(np.vstack([c.row, c.col]).astype(np.int64))
            self._data = Data(edge_index=index, num_nodes=self.n)
        return self._data

    def reference(self) -> tuple[np.ndarray, np.ndarray]:
        w, v = sla.eigsh(self.lap, k=K + 3, sigma=-1e-3, which="LM", tol=1e-14)
        order = np.argsort(w)
        return w[order], v[:, order]


def solvers(g: Graph) -> dict[str, Callable[[], tuple[np.ndarray, np.ndarray | None]]]:
    lap = g.lap

    def spectra_default():
        return spectra.eigh(lap, k=K + 1)

    def spectra_pe():
        ws, vs = spectra.eigh([lap], k=K, spectrum_bound=(0.0, 2.0), deflate=[g.null])
        return np.concatenate([[0.0], ws[0]]), np.concatenate([g.null, vs[0]], axis=1)

    def spectra_lobpcg():
        return spectra.eigh(lap, k=K + 1, method="lobpcg", precondition="factor")

    def spectra_amg():
        return spectra.eigh(lap, k=K + 1, precondition="amg", spectrum_bound=(0, 2))

    def pyg(undirected: bool) -> Callable[[], tuple[np.ndarray, np.ndarray | None]]:
        from torch_geometric.transforms import AddLaplacianEigenvectorPE

        transform = AddLaplacianEigenvectorPE(K, is_undirected=undirected)

        def run():
            out = transform(g.data().clone())
            return np.full(K + 1, np.nan), out.laplacian_eigenvector_pe.numpy()

        return run

    def eigsh_sa():
        w, v = sla.eigsh(lap, k=K + 1, which="SA", tol=TOL)
        order = np.argsort(w)
        return w[order], v[:, order]

    def eigsh_si():
        w, v = sla.eigsh(lap, k=K + 1, sigma=-1e-3, which="LM", tol=TOL)
        order = np.argsort(w)
        return w[order], v[:, order]

    out: dict[str, Callable[[], tuple[np.ndarray, np.ndarray | None]]] = {
        "spectra": spectra_default,
        "spectra-pe": spectra_pe,
        "spectra-lobpcg": spectra_lobpcg,
        "spectra-amg": spectra_amg,
    }
    try:
        import torch_geometric  # noqa: F401

        out["pyg"] = pyg(False)
        out["pyg-undirected"] = pyg(True)
    except ImportError:
        pass
    out["scipy-eigsh"] = eigsh_sa
    out["scipy-eigsh-si"] = eigsh_si
    try:
        import pyamg  # noqa: F401
        from sklearn.manifold import spectral_embedding

        def sklearn_amg():
            spectral_embedding(g.adj, n_components=K + 1, eigen_solver="amg", random_state=0)
            return np.full(K + 1, np.nan), None

        out["sklearn-amg"] = sklearn_amg
    except ImportError:
        pass
    try:
        import primme

        def primme_sa():
            w, v = primme.eigsh(lap, k=K + 1, which="SA", tol=TOL)
            order = np.argsort(w)
            return w[order], v[:, order]

        out["primme"] = primme_sa
    except ImportError:
        pass
    return out


#: peers too slow past these sizes on the 2-core machine (minutes by their trend)
MAX_N = {"scipy-eigsh": 25_000, "pyg": 25_000, "pyg-undirected": 25_000, "spectra-amg": 250_000}


def _largest_angle(v: np.ndarray, ref_v: np.ndarray, ref_w: np.ndarray, k: int) -> float:
    worst, start = 0.0, 0
    for i in range(1, len(ref_w) + 1):
        if i == len(ref_w) or ref_w[i] - ref_w[i - 1] > 1e-6:
            if i > k:
                break
            cols = np.arange(start, i)
            worst = max(worst, float(la.subspace_angles(v[:, cols], ref_v[:, cols]).max()))
            start = i
    return worst


def _stats(xs: list[float]) -> dict[str, float]:
    q = np.quantile(xs, [0.25, 0.5, 0.75]) if xs else [np.nan] * 3
    return {"q1": float(q[0]), "median": float(q[1]), "q3": float(q[2])}


def _traced_peak(fn: Callable[[], Any]) -> tuple[Any, float]:
    tracemalloc.start()
    out = fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, peak / 2**20


#: seconds of rest before each timed call: OpenBLAS's threads (ARPACK's, PyG's) keep
#: spinning after a call and were billed to whatever ran next (the default spectra call,
#: which followed PyG's transform in 3 of 4 rounds, cost 0.079 s CPU there, 0.055 s not)
PAUSE = 0.25


def _cpu_timed(
    fn: Callable[[], Any], out: list[float], wall: list[float] | None = None
) -> Callable[[], None]:
    """``fn`` after a ``PAUSE``, appending its process CPU seconds to ``out`` (and its wall
    seconds, the pause excluded, to ``wall``)."""

    def run() -> None:
        time.sleep(PAUSE)
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        out.append(time.process_time() - c0)
        if wall is not None:
            wall.append(time.perf_counter() - t0)

    return run


def million_row(n: int = 1_000_000) -> dict[str, Any]:
    """One call of ``spectra.eigh(L, k=9, spectrum_bound=(0, 2))`` (the normalized
    Laplacian's bound, which ``LaplacianPE`` passes too; without it AMG is built on
    ``L - lo I`` for Gershgorin's ``lo < 0``, a poor preconditioner for eigenvalues ~1e-6:
    it ran past 9 minutes) on the largest component of a 1,000,000-node random geometric
    graph: seconds, CPU seconds, peak RSS, true residuals."""
    g = Graph(n)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    t0, c0 = time.perf_counter(), time.process_time()
    w, v = spectra.eigh(g.lap, k=K + 1, spectrum_bound=(0.0, 2.0))
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    residual = float(np.linalg.norm(g.lap @ v - v * w, axis=0).max()) / 2
    row = {
        "n": g.n,
        "nnz": int(g.lap.nnz),
        "solver": "spectra",
        "call": "spectra.eigh(L, k=9, spectrum_bound=(0, 2))",
        "plan": str(spectra.plan(g.lap, k=K + 1)),
        "seconds": seconds,
        "cpu_seconds": cpu,
        "rss_peak_gib": rss,
        "rss_before_call_gib": rss0,
        "largest_relative_residual": residual,
        "eigenvalues": [float(x) for x in w],
    }
    print(
        f"n={g.n:>9,} spectra {seconds:.1f} s (cpu {cpu:.1f} s), peak RSS {rss:.2f} GiB "
        f"(before the call {rss0:.2f}), residual {residual:.1e}",
        flush=True,
    )
    return row


def size_rows(n: int, rounds: int, only: list[str] | None) -> list[dict[str, Any]]:
    g = Graph(n)
    ref_w, ref_v = g.reference()
    fns = {
        name: fn
        for name, fn in solvers(g).items()
        if (not only or name in only) and g.n <= MAX_N.get(name, 10**9)
    }
    rows: dict[str, dict[str, Any]] = {}
    for name, fn in fns.items():  # accuracy and traced memory: one untimed call each
        (w, v), peak = _traced_peak(fn)
        err = (
            float(np.nanmax(np.abs(w[: K + 1] - ref_w[: K + 1]))) / 2
            if np.isfinite(w).all()
            else None
        )
        angle = None
        if v is not None and v.shape[1] == K + 1:
            angle = _largest_angle(np.asarray(v), ref_v, ref_w, K + 1)
        elif v is not None and v.shape[1] == K:  # PyG: eigenvectors 1..k, the null one dropped
            angle = _largest_angle(np.concatenate([g.null, v], axis=1), ref_v, ref_w, K + 1)
        rows[name] = {
            "n": g.n,
            "nnz": int(g.lap.nnz),
            "solver": name,
            "eigenvalue_error_rel": err,
            "largest_angle": angle,
            "traced_peak_mib": peak,
        }
        print(f"n={g.n:>9,} {name:<15} err {err}  angle {angle}  traced {peak:.1f} MiB", flush=True)
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    times: dict[str, list[float]] = {name: [] for name in fns}
    rotating_rounds({k: _cpu_timed(f, cpu[k], times[k]) for k, f in fns.items()}, rounds, 1)
    for name, row in rows.items():
        row.update(_stats(times[name]))
        row["rounds"] = times[name]
        row["cpu"] = _stats(cpu[name])
        row["cpu_rounds"] = cpu[name]
        if name != "spectra" and "spectra" in times:
            ratios = [p / s for p, s in zip(times[name], times["spectra"], strict=True)]
            row["ratio_vs_spectra"] = _stats(ratios)
        row["rss_peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"n={g.n:>9,} {name:<15} {row['median']:8.3f} s "
            f"[{row['q1']:.3f}, {row['q3']:.3f}]"
            + (
                f"  {row['ratio_vs_spectra']['median']:.2f}x spectra"
                if "ratio_vs_spectra" in row
                else ""
            ),
            flush=True,
        )
    return list(rows.values())


def batch_rows(graphs: int, n: int, rounds: int) -> list[dict[str, Any]]:
    """One call on a list of graphs (and on their BlockDiagonal) vs loops of single calls."""
    gs = [Graph(n, seed=s) for s in range(graphs)]
    laps = [g.lap for g in gs]
    ptr = np.concatenate([[0], np.cumsum([g.n for g in gs])])
    big = sp.block_diag(laps, format="csr")
    calls: dict[str, Callable[[], Any]] = {
        "spectra-batch": lambda: spectra.eigh(laps, k=K + 1),
        "spectra-blockdiag": lambda: spectra.eigh(spectra.BlockDiagonal(big, ptr), k=K + 1),
        "spectra-loop": lambda: [spectra.eigh(a, k=K + 1) for a in laps],
        "scipy-eigsh-loop": lambda: [sla.eigsh(a, k=K + 1, which="SA", tol=TOL) for a in laps],
        "scipy-eigsh-si-loop": lambda: [
            sla.eigsh(a, k=K + 1, sigma=-1e-3, which="LM", tol=TOL) for a in laps
        ],
    }
    check = [g.reference() for g in gs[:4]]
    ws, vs = calls["spectra-batch"]()
    err = max(float(np.abs(w - r[0][: K + 1]).max()) / 2 for w, r in zip(ws, check, strict=False))
    angle = max(_largest_angle(v, r[1], r[0], K + 1) for v, r in zip(vs, check, strict=False))
    print(f"{graphs} x {n:,}: spectra-batch err {err:.2e} angle {angle:.2e} (4 graphs)", flush=True)
    cpu: dict[str, list[float]] = {name: [] for name in calls}
    times: dict[str, list[float]] = {name: [] for name in calls}
    rotating_rounds({k: _cpu_timed(f, cpu[k], times[k]) for k, f in calls.items()}, rounds, 1)
    rows = []
    for name in calls:
        row: dict[str, Any] = {"n": n, "graphs": graphs, "solver": name, **_stats(times[name])}
        row["rounds"] = times[name]
        row["cpu"], row["cpu_rounds"] = _stats(cpu[name]), cpu[name]
        if name != "spectra-batch":
            ratios = [p / s for p, s in zip(times[name], times["spectra-batch"], strict=True)]
            row["ratio_vs_spectra_batch"] = _stats(ratios)
        if name == "spectra-batch":
            row["eigenvalue_error_rel"], row["largest_angle"] = err, angle
        rows.append(row)
        extra = row.get("ratio_vs_spectra_batch", {}).get("median")
        print(
            f"{graphs} x {n:,} {name:<20} {row['median']:8.2f} s"
            + (f"  {extra:.2f}x spectra-batch" if extra else ""),
            flush=True,
        )
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[3_000, 20_000])
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds (default by n)")
    parser.add_argument("--only", nargs="*", help="solver names to run (default: all)")
    parser.add_argument("--out", default=None, help="write the rows as JSON here")
    parser.add_argument("--batch", type=int, nargs=2, metavar=("GRAPHS", "N"))
    parser.add_argument("--batch-rounds", type=int, default=2)
    parser.add_argument("--million", action="store_true", help="add the 1,000,000-node row")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {
        "benchmark": "bench_sparse",
        "k": K,
        "tol": TOL,
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "note": "2-core machine shared with other sessions: see the load averages",
        "load_average_before": list(os.getloadavg()),
        "command": " ".join(["python", "benchmarks/bench_sparse.py", *(argv or sys.argv[1:])]),
        "rows": [],
    }
    if args.batch:
        result["rows"] += batch_rows(*args.batch, rounds=args.batch_rounds)
        _write(args.out, result)
    for n in args.sizes:
        rounds = args.rounds or (7 if n <= 5_000 else 3 if n <= 50_000 else 1)
        result["rows"] += size_rows(n, rounds, args.only)
        _write(args.out, result)
    if args.million:
        result["rows"].append(million_row())
    return _write(args.out, result)


def _write(path: str | None, result: dict[str, Any]) -> dict[str, Any]:
    result["load_average_after"] = list(os.getloadavg())
    if path:
        with open(path, "w") as fh:
            json.dump(result, fh, indent=1)
    return result


if __name__ == "__main__":
    main()
