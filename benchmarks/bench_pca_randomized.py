"""Benchmark: BatchPCA's randomized solver vs a loop of sklearn PCA(svd_solver="randomized").

    .venv/bin/python -m benchmarks.bench_pca_randomized [--quick] [--device cpu|cuda]
                                                        [--json FILE] [--threads 1]

The issue-28 case: 20 datasets of 2,000 samples x 5,000 features, k = 10 (``--quick``: 4
datasets of 1,000 x 2,500). Data: rank-50 signal with a decaying spectrum plus noise and a
per-dataset offset. Both sides use sklearn's defaults (10 oversamples, 7 power iterations)
and the same thread settings; spectra gets the data as one NumPy array (or on the device
with ``--device cuda``) and chooses the randomized solver itself (``svd_solver="auto"``).
Each side is timed once per round (``ROUNDS`` rounds, alternating, medians reported): a
full round of the sklearn loop takes minutes on a loaded 2-core machine.

Accuracy, against sklearn's exact ``PCA(svd_solver="full")`` on the first datasets (4 with
``--quick``, 3 otherwise): the largest relative error of the k explained variances and the
sine of the largest principal angle between the component spaces, for spectra and for
sklearn's randomized PCA (the anchor: spectra must be within its accuracy).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from benchmarks._timing import bench_main, sync

# name, B, N, D, k
CASES = [("issue 28: 20 x 2000 x 5000 k=10", 20, 2000, 5000, 10)]
QUICK = [("quick: 4 x 1000 x 2500 k=10", 4, 1000, 2500, 10)]
ROUNDS = {True: 3, False: 2}
CHECKED = {True: 4, False: 3}


def _data(b: int, n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rank = 50
    decay = np.geomspace(100.0, 1.0, rank)
    out = np.empty((b, n, d))
    for i in range(b):
        signal = (rng.standard_normal((n, rank)) * decay) @ rng.standard_normal((rank, d))
        out[i] = signal / np.sqrt(d) + 0.1 * rng.standard_normal((n, d)) + rng.normal(size=d)
    return out


def _angle(a: np.ndarray, b: np.ndarray) -> float:
    qa, _ = np.linalg.qr(a.T)
    qb, _ = np.linalg.qr(b.T)
    s = np.linalg.svd(qa.T @ qb, compute_uv=False)
    return float(np.sqrt(max(0.0, 1.0 - s.min() ** 2)))


def _errors(ev: np.ndarray, comps: np.ndarray, full: Any) -> tuple[float, float]:
    k = len(ev)
    err = float(np.abs(ev / full.explained_variance_[:k] - 1).max())
    return err, _angle(comps, full.components_[:k])


def _row(
    name: str,
    b: int,
    n: int,
    d: int,
    k: int,
    device: str,
    quick: bool,
    threads: int | None,
) -> dict[str, Any]:
    import torch
    from sklearn.decomposition import PCA

    from spectra.pca import BatchPCA

    x = _data(b, n, d)
    spectra_in: Any = x if device == "cpu" else torch.from_numpy(x).to(device)
    options = {} if threads is None else {"workers": threads}
    fitted: dict[str, Any] = {}

    def spectra_fit() -> None:
        fitted["spectra"] = BatchPCA(k, random_state=0, **options).fit(spectra_in)

    def sklearn_loop() -> None:
        fitted["sklearn"] = [PCA(k, svd_solver="randomized", random_state=0).fit(xi) for xi in x]

    t_spectra: list[float] = []
    t_sklearn: list[float] = []
    rounds = ROUNDS[quick]
    for _ in range(rounds):
        for fn, times in ((spectra_fit, t_spectra), (sklearn_loop, t_sklearn)):
            t0 = time.perf_counter()
            fn()
            sync(device)
            times.append(time.perf_counter() - t0)
    model = fitted["spectra"]
    ev = model.explained_variance_
    comps = model.components_
    if device != "cpu":
        ev, comps = ev.cpu().numpy(), comps.cpu().numpy()
    ours, theirs = [], []
    for i in range(min(CHECKED[quick], b)):
        full = PCA(k, svd_solver="full").fit(x[i])
        ours.append(_errors(ev[i], comps[i], full))
        sk = fitted["sklearn"][i]
        theirs.append(_errors(sk.explained_variance_, sk.components_, full))
    ts, tk = float(np.median(t_spectra)), float(np.median(t_sklearn))
    return {
        "name": name,
        "datasets": b,
        "samples": n,
        "features": d,
        "n_components": k,
        "dtype": "float64",
        "device": device,
        "threads": threads or "default",
        "plan": str(model.plan_),
        "rounds": rounds,
        "spectra_s": ts,
        "sklearn_loop_s": tk,
        "spectra_times_s": t_spectra,
        "sklearn_times_s": t_sklearn,
        "ratio_sklearn_over_spectra": tk / ts,
        "checked_datasets": len(ours),
        "spectra_max_ev_rel_err": max(e for e, _ in ours),
        "sklearn_max_ev_rel_err": max(e for e, _ in theirs),
        "spectra_max_angle": max(a for _, a in ours),
        "sklearn_max_angle": max(a for _, a in theirs),
    }


def run(
    quick: bool = False, device: str = "cpu", threads: int | None = None
) -> list[dict[str, Any]]:
    """Time every case; returns one dict per row (medians in seconds, ratio, errors)."""
    import torch
    from threadpoolctl import threadpool_limits

    saved = torch.get_num_threads()
    try:
        if threads is not None:
            torch.set_num_threads(threads)
        with threadpool_limits(threads):
            return [
                _row(*case, device=device, quick=quick, threads=threads)
                for case in (QUICK if quick else CASES)
            ]
    finally:
        torch.set_num_threads(saved)


def _print(rows: list[dict[str, Any]]) -> None:
    head = (
        f"{'case':34} {'device':6} {'spectra s':>10} {'sklearn s':>10} {'ratio':>7} "
        f"{'ev err ours/sk':>20} {'angle ours/sk':>20}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['name']:34} {r['device']:6} {r['spectra_s']:10.3f} {r['sklearn_loop_s']:10.3f} "
            f"{r['ratio_sklearn_over_spectra']:6.2f}x "
            f"{r['spectra_max_ev_rel_err']:9.2e}/{r['sklearn_max_ev_rel_err']:9.2e} "
            f"{r['spectra_max_angle']:9.2e}/{r['sklearn_max_angle']:9.2e}"
        )
        print(f"  {r['plan'].splitlines()[0]}")


def main(argv: list[str] | None = None) -> None:
    bench_main(__doc__, run, _print, argv, threads=True)


if __name__ == "__main__":
    main()
