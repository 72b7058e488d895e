"""Diagonalize 4,096 matrices in one call, check against SciPy, and look at the plan.

Run: python examples/core_batched_eigh.py
"""

from __future__ import annotations

import time

import torch

import spectra


def main() -> None:
    a = torch.randn(4096, 32, 32, dtype=torch.float64)
    a = 0.5 * (a + a.mT)

    print(spectra.plan(32, 4096, torch.float64))  # how the core will run it, and why

    t0 = time.perf_counter()
    w, v = spectra.eigh(a)
    batched = time.perf_counter() - t0
    t0 = time.perf_counter()
    for m in a[:512]:
        torch.linalg.eigh(m)
    loop = (time.perf_counter() - t0) * 4096 / 512
    print(f"spectra.eigh: {batched * 1e3:.1f} ms; a Python loop would take ~{loop * 1e3:.0f} ms")

    report = spectra.validate(a[:256], w[:256], v[:256], reference=True)
    print("worst metrics against SciPy:", report.worst())

    # the 3 largest eigenpairs, the generalized problem, and a ragged list
    w3, _ = spectra.eigh(a, k=3, largest=True)
    b = torch.eye(32, dtype=torch.float64) * 2.0
    wb, _ = spectra.eigh(a, b)
    ws, _ = spectra.eigh([a[0, :5, :5], a[1, :17, :17], a[2]])
    print(w3.shape, wb.shape, [x.shape for x in ws])


if __name__ == "__main__":
    main()
