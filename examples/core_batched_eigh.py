"""Many eigendecompositions in one call: time per matrix against a Python loop, and a check.

    .venv/bin/python examples/core_batched_eigh.py

For matrix sizes 4..64 it solves 1,024 random symmetric matrices with ONE ``spectra.eigh``
call and with a Python loop of ``torch.linalg.eigh`` (timed on a sample), prints a table of
microseconds per matrix, checks the batched results against SciPy (``spectra.validate``),
shows the plan the core followed, and draws the table in examples/out/core_batched_eigh.png.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

import spectra

OUT = Path(__file__).resolve().parent / "out"
SIZES = (4, 8, 16, 32, 64)
BATCH = 1024
LOOP_SAMPLE = 64


def per_matrix_us(fn, count: int, repeats: int = 2) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return 1e6 * best / count


def main() -> None:
    rng = torch.Generator().manual_seed(0)
    rows = []
    for n in SIZES:
        a = torch.randn(BATCH, n, n, dtype=torch.float64, generator=rng)
        a = 0.5 * (a + a.mT)
        batched = per_matrix_us(lambda a=a: spectra.eigh(a), BATCH)
        sample = a[:LOOP_SAMPLE]
        loop = per_matrix_us(lambda s=sample: [torch.linalg.eigh(m) for m in s], LOOP_SAMPLE)
        w, v = spectra.eigh(a)
        worst = spectra.validate(a[:64], w[:64], v[:64], reference=True).worst()
        rows.append((n, batched, loop, max(worst.values())))

    print(f"{'n':>4} {'spectra.eigh (us/matrix)':>25} {'Python loop (us/matrix)':>24} "
          f"{'speed-up':>9} {'worst error vs SciPy':>21}")  # fmt: skip
    for n, batched, loop, err in rows:
        print(f"{n:>4} {batched:>25.2f} {loop:>24.2f} {loop / batched:>8.1f}x {err:>21.1e}")
    print()
    print(spectra.plan(64, BATCH, torch.float64))  # how the core ran the largest batch, and why

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no figure; pip install -e '.[plot]')")
        return
    sizes = np.array([r[0] for r in rows])
    fig, ax = plt.subplots(figsize=(5, 3.4), layout="constrained")
    ax.loglog(sizes, [r[2] for r in rows], "s--", label="Python loop of torch.linalg.eigh")
    ax.loglog(sizes, [r[1] for r in rows], "o-", label=f"one spectra.eigh call ({BATCH} matrices)")
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.minorticks_off()
    ax.set_xlabel("matrix size n")
    ax.set_ylabel("time per matrix (µs)")
    ax.set_title("float64, eigenvalues and eigenvectors")
    ax.legend(frameon=False, fontsize=8)
    OUT.mkdir(exist_ok=True)
    path = OUT / "core_batched_eigh.png"
    fig.savefig(path, dpi=130)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
