"""Benchmark: BatchPCA over many datasets vs a loop of sklearn PCA(svd_solver="full").

    .venv/bin/python -m benchmarks.bench_pca [--quick] [--device cpu|cuda] [--json FILE]
                                             [--threads 1]

Each row fits one PCA per dataset (B datasets x N samples x D features, k components) in the
same run, and reports the median seconds of each implementation and the ratio
``sklearn_time / spectra_time`` (> 1: spectra is faster). Data starts as NumPy on the host for
the CPU rows; with ``--device cuda`` spectra gets the data already on the GPU.
``--threads 1`` pins both to one CPU thread (torch and BLAS threads, one eigh worker).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks._timing import bench_main, median_time

CASES = [
    # name, B, N, D, k, dtype
    ("issue: 500x200x32 k=5", 500, 200, 32, 5, "float64"),
    ("issue: 500x200x32 k=5", 500, 200, 32, 5, "float32"),
    ("wide (Gram route) 500x20x64 k=5", 500, 20, 64, 5, "float64"),
    ("ragged 500x(50..300)x32 k=0.9", 500, 300, 32, 0.9, "float64"),
]
QUICK = [
    ("issue: 500x200x32 k=5", 500, 200, 32, 5, "float64"),
    ("issue: 500x200x32 k=5", 500, 200, 32, 5, "float32"),
]


def _data(b: int, n: int, d: int, dtype: str, ragged: bool, seed: int = 0) -> Any:
    rng = np.random.default_rng(seed)
    scales = np.geomspace(10.0, 1.0, d) ** 0.5
    x = (rng.normal(size=(b, n, d)) * scales).astype(dtype)
    if not ragged:
        return x
    sizes = rng.integers(50, n + 1, size=b)
    return [x[i, : sizes[i]] for i in range(b)]


def _row(
    name: str,
    b: int,
    n: int,
    d: int,
    k: Any,
    dtype: str,
    device: str,
    repeats: int,
    budget: float,
    threads: int | None,
) -> dict[str, Any]:
    import torch
    from sklearn.decomposition import PCA

    from spectra.pca import BatchPCA

    ragged = name.startswith("ragged")
    x = _data(b, n, d, dtype, ragged)
    datasets = list(x)

    def sklearn_loop() -> None:
        for xi in datasets:
            PCA(k, svd_solver="full").fit(xi)

    if device == "cpu":
        spectra_in: Any = x
    else:
        spectra_in = (
            [torch.from_numpy(xi).to(device) for xi in x]
            if ragged
            else torch.from_numpy(x).to(device)
        )

    options = {} if threads is None else {"workers": threads}

    def spectra_fit() -> None:
        BatchPCA(k, **options).fit(spectra_in)

    t_spectra = median_time(spectra_fit, repeats=repeats, device=device, budget_s=budget)
    t_sklearn = median_time(sklearn_loop, repeats=repeats, budget_s=budget)
    return {
        "name": name,
        "datasets": b,
        "samples": n,
        "features": d,
        "n_components": k,
        "dtype": dtype,
        "device": device,
        "threads": threads or "default",
        "spectra_s": t_spectra,
        "sklearn_loop_s": t_sklearn,
        "ratio_sklearn_over_spectra": t_sklearn / t_spectra,
    }


def run(
    quick: bool = False, device: str = "cpu", threads: int | None = None
) -> list[dict[str, Any]]:
    """Time every case; returns one dict per row (medians in seconds and the ratio)."""
    import torch
    from threadpoolctl import threadpool_limits

    cases = QUICK if quick else CASES
    repeats, budget = (3, 8.0) if quick else (7, 30.0)
    saved = torch.get_num_threads()
    try:
        if threads is not None:
            torch.set_num_threads(threads)
        with threadpool_limits(threads):
            return [
                _row(*case, device=device, repeats=repeats, budget=budget, threads=threads)
                for case in cases
            ]
    finally:
        torch.set_num_threads(saved)


def _print(rows: list[dict[str, Any]]) -> None:
    head = (
        f"{'case':34} {'dtype':8} {'device':6} {'threads':>7} {'spectra s':>10} "
        f"{'sklearn s':>10} {'ratio':>7}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['name']:34} {r['dtype']:8} {r['device']:6} {r['threads']!s:>7} "
            f"{r['spectra_s']:10.4f} "
            f"{r['sklearn_loop_s']:10.4f} {r['ratio_sklearn_over_spectra']:6.1f}x"
        )


def main(argv: list[str] | None = None) -> None:
    bench_main(__doc__, run, _print, argv, threads=True)


if __name__ == "__main__":
    main()
