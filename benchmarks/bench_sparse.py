"""k smallest eigenpairs of large sparse normalized Laplacians: spectra vs the peers.

The matrix is the sym-normalized Laplacian of a random geometric graph in the unit square
with mean degree ~10 (the graphs of issue #28). Rows, one per (size, solver):

- ``spectra-amg``: ``spectra.eigh(L, k=8, precondition="amg", spectrum_bound=(0, 2))``
  (block LOBPCG with a pyamg smoothed-aggregation V-cycle), and ``spectra-jacobi`` (the
  default preconditioner, the identity on a normalized Laplacian) up to 20,000 nodes;
- ``scipy-eigsh``: ARPACK ``eigsh(L, k=8, which="SA")`` (PyG's transform calls it so);
- ``scipy-eigsh-2I-L``: ARPACK ``eigsh(2I - L, k=8, which="LA")`` (the spectrum bound);
- ``sklearn-amg``: sklearn's ``spectral_embedding(eigen_solver="amg")`` (scipy lobpcg +
  pyamg) when pyamg is installed (its own normalization: timed, not compared);
- ``primme``: ``primme.eigsh(L, k=8, which="SA")`` when the package imports.

Every row reports wall time, peak traced memory (tracemalloc: NumPy/SciPy allocations;
torch's are not traced, so the process's peak RSS from ``resource`` is reported too) and
the largest eigenvalue difference from the spectra result. Peers that would exceed
``--peer-timeout`` by their trend are skipped (marked, never silently).

    python benchmarks/bench_sparse.py --sizes 3000 20000 --out /tmp/sparse.json
    python benchmarks/bench_sparse.py --million   # adds the 1,000,000-node row (minutes)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from scipy.spatial import cKDTree

import spectra


def rgg_laplacian(n: int, degree: float = 10.0, seed: int = 0) -> sp.csr_matrix:
    """The sym-normalized Laplacian of a random geometric graph (mean degree ~degree)."""
    rng = np.random.default_rng(seed)
    pts = rng.random((n, 2))
    pairs = cKDTree(pts).query_pairs(np.sqrt(degree / (np.pi * n)), output_type="ndarray")
    rows = np.concatenate([pairs[:, 0], pairs[:, 1]])
    cols = np.concatenate([pairs[:, 1], pairs[:, 0]])
    adj = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    d = np.asarray(adj.sum(axis=1)).ravel()
    inv = np.where(d > 0, 1 / np.sqrt(np.where(d > 0, d, 1)), 0.0)
    dh = sp.diags(inv)
    return (sp.identity(n, format="csr") - dh @ adj @ dh).tocsr()


def _measure(fn: Callable[[], Any]) -> tuple[Any, float, int]:
    tracemalloc.start()
    t0 = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, seconds, peak


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def solvers(k: int, tol: float) -> dict[str, Callable[[sp.csr_matrix], np.ndarray]]:
    def spectra_amg(lap: sp.csr_matrix) -> np.ndarray:
        return spectra.eigvalsh(
            lap, k=k, precondition="amg", spectrum_bound=(0, 2), tol=tol, method="lobpcg"
        )

    def spectra_jacobi(lap: sp.csr_matrix) -> np.ndarray:
        return spectra.eigvalsh(lap, k=k, tol=tol, method="lobpcg", maxiter=20000)

    def eigsh_sa(lap: sp.csr_matrix) -> np.ndarray:
        return np.sort(sla.eigsh(lap, k=k, which="SA", tol=tol, return_eigenvectors=False))

    def eigsh_flip(lap: sp.csr_matrix) -> np.ndarray:
        shifted = (2 * sp.identity(lap.shape[0], format="csr") - lap).tocsr()
        top = sla.eigsh(shifted, k=k, which="LA", tol=tol, return_eigenvectors=False)
        return np.sort(2 - top)

    out: dict[str, Callable[[sp.csr_matrix], np.ndarray]] = {
        "spectra-amg": spectra_amg,
        "spectra-jacobi": spectra_jacobi,
        "scipy-eigsh": eigsh_sa,
        "scipy-eigsh-2I-L": eigsh_flip,
    }
    try:
        import pyamg  # noqa: F401
        from sklearn.manifold import spectral_embedding

        def sklearn_amg(lap: sp.csr_matrix) -> np.ndarray:
            adj = (sp.identity(lap.shape[0]) - lap).tocsr()  # same graph, its own normalization
            adj.setdiag(0)
            spectral_embedding(adj, n_components=k, eigen_solver="amg", random_state=0)
            return np.full(k, np.nan)

        out["sklearn-amg"] = sklearn_amg
    except ImportError:
        pass
    try:
        import primme

        def primme_sa(lap: sp.csr_matrix) -> np.ndarray:
            return np.sort(primme.eigsh(lap, k=k, which="SA", tol=tol, return_eigenvectors=False))

        out["primme"] = primme_sa
    except ImportError:
        pass
    return out


#: solvers too slow to run past these sizes on the 2-core machine (minutes by their trend)
#: (ARPACK "SA" on 200,000 nodes ran past 13 minutes on the loaded machine)
MAX_N = {"spectra-jacobi": 20_000, "scipy-eigsh": 20_000, "scipy-eigsh-2I-L": 200_000}


def batch_rows(graphs: int, n: int, k: int, tol: float) -> list[dict[str, Any]]:
    """One ``spectra.eigvalsh`` call on a list of graphs (solved together) vs a loop."""
    laps = [rgg_laplacian(n, seed=s) for s in range(graphs)]
    calls: dict[str, Callable[[], Any]] = {
        "spectra-amg-batch": lambda: spectra.eigvalsh(
            laps, k=k, precondition="amg", spectrum_bound=(0, 2), tol=tol, method="lobpcg"
        ),
        "scipy-eigsh-loop": lambda: [
            np.sort(sla.eigsh(a, k=k, which="SA", tol=tol, return_eigenvectors=False)) for a in laps
        ],
    }
    rows, ref = [], None
    for name, fn in calls.items():
        w, seconds, peak = _measure(fn)
        ref = w if ref is None else ref
        diff = max(float(np.abs(a - b).max()) for a, b in zip(w, ref, strict=True))
        rows.append(
            {
                "n": n,
                "graphs": graphs,
                "solver": name,
                "seconds": seconds,
                "traced_peak_mib": peak / 2**20,
                "max_abs_diff_vs_spectra": diff,
            }
        )
        print(f"{graphs} x n={n:,} {name:<18} {seconds:8.2f} s  diff {diff:.2e}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[3_000, 20_000, 200_000])
    parser.add_argument("--million", action="store_true", help="add n = 1,000,000")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--tol", type=float, default=1e-8)
    parser.add_argument("--only", nargs="*", help="solver names to run (default: all)")
    parser.add_argument("--out", default=None, help="write the rows as JSON here")
    parser.add_argument(
        "--batch",
        type=int,
        nargs=2,
        metavar=("GRAPHS", "N"),
        help="also time one call on a list of GRAPHS graphs of N nodes vs a loop of eigsh",
    )
    args = parser.parse_args(argv)
    sizes = list(args.sizes) + ([1_000_000] if args.million else [])
    rows = []
    if args.batch:
        rows += batch_rows(*args.batch, k=args.k, tol=args.tol)
    for n in sizes:
        t0 = time.perf_counter()
        lap = rgg_laplacian(n)
        build = time.perf_counter() - t0
        ref = None
        for name, fn in solvers(args.k, args.tol).items():
            if args.only and name not in args.only:
                continue
            if n > MAX_N.get(name, 10**9):
                rows.append({"n": n, "solver": name, "skipped": f"n > {MAX_N[name]}"})
                print(f"n={n:>9,} {name:<18} skipped (n > {MAX_N[name]:,})", flush=True)
                continue
            try:
                w, seconds, peak = _measure(lambda fn=fn, lap=lap: fn(lap))
            except Exception as exc:  # report the failure as a row, keep going
                rows.append({"n": n, "solver": name, "error": f"{type(exc).__name__}: {exc}"})
                print(f"n={n:>9,} {name:<18} FAILED {type(exc).__name__}: {exc}", flush=True)
                continue
            if ref is None and name.startswith("spectra"):
                ref = w
            diff = float(np.nanmax(np.abs(w - ref))) if ref is not None else None
            row = {
                "n": n,
                "nnz": int(lap.nnz),
                "solver": name,
                "seconds": seconds,
                "traced_peak_mib": peak / 2**20,
                "rss_peak_mib": _rss_mib(),
                "max_abs_diff_vs_spectra": diff if diff == diff else None,
                "eigenvalues": [float(x) for x in w],
                "build_seconds": build,
            }
            rows.append(row)
            _write(args.out, args, rows)  # after every row: a long run killed keeps its rows
            print(
                f"n={n:>9,} {name:<18} {seconds:8.2f} s  traced peak "
                f"{peak / 2**20:8.1f} MiB  rss {_rss_mib():8.1f} MiB  diff {diff}",
                flush=True,
            )
    return _write(args.out, args, rows)


def _write(path: str | None, args: argparse.Namespace, rows: list[dict[str, Any]]) -> dict:
    result = {
        "benchmark": "bench_sparse",
        "k": args.k,
        "tol": args.tol,
        "machine": platform.platform(),
        "load_average": list(os.getloadavg()),
        "rows": rows,
    }
    if path:
        with open(path, "w") as fh:
            json.dump(result, fh, indent=1)
    return result


if __name__ == "__main__":
    main()
