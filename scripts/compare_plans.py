"""Compare the planner of the working tree with the planner at an earlier commit (issue 23).

    .venv/bin/python scripts/compare_plans.py [REF]     (default c5aacf6)

Both versions plan the same grid (4 dtypes, 20 sizes, 12 batch sizes, eigenpairs and
eigenvalues only, four option sets) in one process, the earlier one imported beside the
working tree (``benchmarks/_release.py``), both with the same explicit memory budget, so
nothing depends on free memory between the two. Prints the plans whose strategy, chunks,
workers, verification, bytes per matrix, thread rule, direct path or reasons differ.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

DTYPES = (torch.float32, torch.float64, torch.complex64, torch.complex128)
SIZES = (1, 2, 3, 4, 5, 6, 8, 12, 13, 16, 24, 28, 29, 32, 33, 48, 64, 128, 256, 300)
BATCHES = (1, 2, 7, 8, 9, 31, 32, 64, 256, 1024, 8192, 65536)
OPTIONS: tuple[dict[str, Any], ...] = (
    {},
    {"workers": 1},
    {"max_memory": 1 << 20},
    {"chunk_size": 5},
)
BUDGET = 8 << 30  # the default budget of both versions, made explicit


def grid(module: Any) -> dict[str, tuple[Any, ...]]:
    out = {}
    for dtype in DTYPES:
        for n in SIZES:
            for batch in BATCHES:
                for vectors in (True, False):
                    for kw in OPTIONS:
                        kw = {"max_memory": BUDGET, **kw}
                        p = module.plan(n, batch, dtype, "cpu", vectors=vectors, **kw)
                        key = f"{dtype} n={n} batch={batch} vectors={vectors} {kw}"
                        out[key] = (
                            p.strategy,
                            p.chunk_size,
                            p.workers,
                            p.verify,
                            p.bytes_per_matrix,
                            p.memory_budget,
                            p.reasons,
                            p.single_threaded,
                            p.direct,
                        )
    return out


def main(argv: list[str]) -> int:
    import spectra
    from benchmarks import _release

    ref = argv[0] if argv else "c5aacf6"
    before, now = grid(_release.load(ref)), grid(spectra)
    differ = [k for k in now if now[k] != before[k]]
    print(f"{len(now)} plans, {len(differ)} differ from {ref}")
    for k in differ[:20]:
        print(f"{k}\n  before {before[k]}\n  now    {now[k]}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
