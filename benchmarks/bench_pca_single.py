"""Benchmark: one dataset per fit, ``BatchPCA(k).fit(X)`` against sklearn's ``PCA(k).fit(X)``.

    PYTHONPATH=. .venv/bin/python -m benchmarks.bench_pca_single [--quick] [--json FILE]

The way a user calls PCA on one dataset at a time: X is one ``(N, D)`` NumPy array
(sklearn's bundled iris, wine and digits, and a wide synthetic one that takes the Gram
route), default threads, a new estimator per fit. Both sides are timed in rounds of
``calls`` fits, the order rotating from round to round, with a 0.3 s pause before each
timed block (sklearn's OpenBLAS workers spin ~0.1 s after its calls and slowed whatever
ran right after them 1.7-2x). Reports medians of the per-fit times and the paired ratio
``spectra / sklearn`` per round (quartiles; below 1: spectra is faster).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks._timing import bench_main, rotating_rounds


def _cases() -> list[tuple[str, np.ndarray, int]]:
    from sklearn.datasets import load_digits, load_iris, load_wine

    wide = np.random.default_rng(0).standard_normal((40, 64))
    return [
        ("iris 150 x 4, k = 2", load_iris().data, 2),
        ("wine 178 x 13, k = 5", load_wine().data, 5),
        ("digits 1,797 x 64, k = 10", load_digits().data, 10),
        ("wide 40 x 64 (Gram route), k = 10", wide, 10),
        ("500 x 20, k = 10", np.random.default_rng(1).standard_normal((500, 20)), 10),
    ]


def _row(name: str, x: np.ndarray, k: int, rounds: int, calls: int) -> dict[str, Any]:
    from sklearn.decomposition import PCA

    from spectra.pca import BatchPCA

    ours, ref = BatchPCA(k).fit(x), PCA(k).fit(x)
    err = float(np.abs(ours.explained_variance_ - ref.explained_variance_).max())
    fns: dict[str, Callable[[], Any]] = {
        "spectra": lambda: BatchPCA(k).fit(x),
        "sklearn": lambda: PCA(k).fit(x),
    }
    for fn in fns.values():
        for _ in range(5):
            fn()
    times = rotating_rounds(fns, rounds, calls, settle=0.3)
    ratios = [a / b for a, b in zip(times["spectra"], times["sklearn"], strict=True)]
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    return {
        "row": name,
        "shape": list(x.shape),
        "k": k,
        "spectra_us": statistics.median(times["spectra"]) * 1e6,
        "sklearn_us": statistics.median(times["sklearn"]) * 1e6,
        "ratio": {"median": statistics.median(ratios), "q1": q[0], "q3": q[2]},
        "repeats_us": {n: [t * 1e6 for t in ts] for n, ts in times.items()},
        "max_explained_variance_error": err,
    }


def run(quick: bool = False, device: str = "cpu") -> list[dict[str, Any]]:
    """One row per dataset (``device`` must be the CPU: sklearn's side is)."""
    if device != "cpu":
        raise SystemExit("bench_pca_single compares against sklearn on the CPU only")
    rows = []
    for name, x, k in _cases():
        rows.append(_row(name, x, k, 5 if quick else 11, 20 if quick else 50))
        _print(rows[-1:])
    return rows


def _print(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        q = r["ratio"]
        print(
            f"{r['row']:36s} spectra {r['spectra_us']:8.0f} us  sklearn {r['sklearn_us']:8.0f}"
            f" us  ratio {q['median']:.2f}x [{q['q1']:.2f}, {q['q3']:.2f}]",
            flush=True,
        )


def main(argv: list[str] | None = None) -> None:
    bench_main(__doc__, run, lambda rows: None, argv)


if __name__ == "__main__":
    main()
