"""Benchmark: spectra's batched Jacobi strategy vs one batched ``torch.linalg.eigh`` call.

    .venv/bin/python -m benchmarks.bench_jacobi [--quick] [--device cpu|cuda] [--json FILE]

The Jacobi strategy exists for CUDA with torch < 2.12, where batched ``eigh`` loops
``syevd`` per matrix for n > 32; on the CPU it only tells what the pure-torch solver costs.
Each row reports the median seconds of the ``jacobi`` strategy (eigenpairs, through
``STRATEGIES["jacobi"].solve``, i.e. with its fallback; on CPU split across all cores), of
torch batched, and of a Python loop of ``torch.linalg.eigh`` (sampled on CPU), the ratios
``peer_time / jacobi_time``
(> 1: Jacobi is faster), the sweeps it took and its largest eigenvalue error vs torch.
"""

from __future__ import annotations

import contextlib
from typing import Any

from benchmarks._timing import bench_main, median_time

CASES = [(32, 512, "float64"), (64, 256, "float64"), (32, 512, "float32"), (64, 256, "float32")]
QUICK = [(32, 128, "float64"), (64, 64, "float64")]
CUDA = [
    (33, 1024, "float32"),
    (64, 1024, "float32"),
    (64, 1024, "float64"),
    (128, 256, "float32"),
    (128, 256, "float64"),
    (33, 16384, "float32"),
]


def _row(
    n: int, batch: int, dtype_name: str, device: str, repeats: int, warmup: int, budget: float
) -> dict[str, Any]:
    import torch

    from spectra.core._solvers._jacobi import jacobi_eigh, solve
    from spectra.core._support._threads import single_threaded_kernels
    from spectra.core.domain import cpu_count

    dtype = getattr(torch, dtype_name)
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(batch, n, n, dtype=dtype, generator=gen)
    a = ((a + a.mT) / 2).to(device)

    loop_count = batch if device != "cpu" else min(batch, 64)  # sampled, scaled up below

    def loop() -> None:
        for i in range(loop_count):
            torch.linalg.eigh(a[i])

    workers = cpu_count() if device == "cpu" else 1
    t_jacobi = median_time(
        lambda: solve(a, True, workers),
        repeats=repeats,
        warmup=warmup,
        device=device,
        budget_s=budget,
    )
    t_torch = median_time(
        lambda: torch.linalg.eigh(a), repeats=repeats, warmup=warmup, device=device, budget_s=budget
    )
    t_loop = (
        median_time(loop, repeats=repeats, warmup=warmup, device=device, budget_s=budget)
        * batch
        / loop_count
    )
    with single_threaded_kernels() if device == "cpu" else contextlib.nullcontext():
        res = jacobi_eigh(a)
    err = float(
        (
            (res.eigenvalues - torch.linalg.eigvalsh(a)).abs().amax(-1)
            / torch.linalg.matrix_norm(a)
        ).max()
    )
    return {
        "name": f"jacobi n={n} batch={batch}",
        "n": n,
        "batch": batch,
        "dtype": dtype_name,
        "device": device,
        "torch": torch.__version__,
        "jacobi_s": t_jacobi,
        "torch_batched_s": t_torch,
        "torch_loop_s": t_loop,
        "ratio_torch_batched_over_jacobi": t_torch / t_jacobi,
        "ratio_torch_loop_over_jacobi": t_loop / t_jacobi,
        "sweeps": res.sweeps,
        "converged": int(res.converged.sum()),
        "max_rel_eigenvalue_error": err,
    }


def run(quick: bool = False, device: str = "cpu") -> list[dict[str, Any]]:
    """Time every case; returns one dict per row (medians in seconds and the ratios)."""
    cases = CUDA if str(device).startswith("cuda") else (QUICK if quick else CASES)
    repeats, warmup, budget = (1, 0, 5.0) if quick else (5, 1, 30.0)
    if str(device).startswith("cuda"):  # first calls compile kernels, build caches
        repeats, warmup = (3, 2) if quick else (7, 2)
    return [
        _row(*case, device=device, repeats=repeats, warmup=warmup, budget=budget) for case in cases
    ]


def _print(rows: list[dict[str, Any]]) -> None:
    head = (
        f"{'case':26} {'dtype':8} {'device':6} {'jacobi s':>9} {'batched s':>10} "
        f"{'loop s':>9} {'b/j':>6} {'loop/j':>7} {'sweeps':>6} {'rel err':>8}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['name']:26} {r['dtype']:8} {r['device']:6} {r['jacobi_s']:9.4f} "
            f"{r['torch_batched_s']:10.4f} {r['torch_loop_s']:9.4f} "
            f"{r['ratio_torch_batched_over_jacobi']:5.2f}x "
            f"{r['ratio_torch_loop_over_jacobi']:6.2f}x {r['sweeps']:6d} "
            f"{r['max_rel_eigenvalue_error']:8.1e}"
        )


def main(argv: list[str] | None = None) -> None:
    bench_main(__doc__, run, _print, argv, threads=False)


if __name__ == "__main__":
    main()
