"""The core benchmark: spectra.eigh and its peers for every (n, batch, dtype), one row each."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from .peers import (
    ThreadFanOut,
    core_peers,
    eigenvalue_error,
    generalized_peers,
    random_overlap,
    random_symmetric,
)
from .timing import Cell, Impl, Timer

#: Full run: the kernel issue's sizes (about one LAPACK-second of work per call at each n).
FULL_SIZES: tuple[tuple[int, int], ...] = (
    (3, 1_000_000),
    (8, 65_536),
    (16, 16_384),
    (32, 4_096),
    (64, 1_024),
    (128, 256),
    (512, 8),
)
#: --quick: the same n up to 128, batches cut so one round of every peer takes ~0.5 s.
QUICK_SIZES: tuple[tuple[int, int], ...] = (
    (3, 65_536),
    (8, 8_192),
    (32, 1_024),
    (64, 256),
    (128, 64),
)
#: The complex and generalized rows (the tight-binding and PySCF shapes: H(k), S(k)) that
#: every default run adds after the real ones: (dtype, n, batch); full and --quick.
COMPLEX_SIZES: dict[str, tuple[tuple[torch.dtype, int, int], ...]] = {
    "full": (
        (torch.complex64, 64, 1024),
        (torch.complex128, 32, 2048),
        (torch.complex128, 16, 8192),
    ),
    "quick": (
        (torch.complex64, 64, 128),
        (torch.complex128, 32, 256),
        (torch.complex128, 16, 1024),
    ),
}
GENERALIZED_SIZES: dict[str, tuple[tuple[torch.dtype, int, int], ...]] = {
    "full": ((torch.complex128, 32, 2048), (torch.float64, 64, 1024)),
    "quick": ((torch.complex128, 32, 256), (torch.float64, 64, 128)),
}
#: the dtype label of a generalized row (the verdict has one line per label)
GENERALIZED_LABEL = "{} eigh(a, b)"
#: Python loops are timed on at most this many matrices and scaled linearly to the batch
#: (--quick: 32, so one threaded-LAPACK loop cannot take minutes on a busy machine).
LOOP_SAMPLE = {"cpu": 2048, "cpu-quick": 32, "cuda": 256}


def row_from_cells(
    n: int,
    batch: int,
    dtype: str,
    device: str,
    cells: dict[str, Cell],
    attempts: int = 1,
    strategy: str | None = None,
    error: float | None = None,
) -> dict[str, Any]:
    """One JSON row: every cell with its spread, the best peer and the speed-ups."""
    peers = [k for k in cells if k != "spectra"]
    best = min(peers, key=lambda k: cells[k].median)
    ours = cells["spectra"].median
    return {
        "n": n,
        "batch": batch,
        "dtype": dtype,
        "device": device,
        "strategy": strategy,
        "cells": {k: c.to_json() for k, c in cells.items()},
        "best_peer": best,
        "speedup_vs_best_peer": cells[best].median / ours,
        "speedup": {k: cells[k].median / ours for k in peers},
        "attempts": attempts,
        "max_eigenvalue_error_vs_scipy": error,
    }


def bench_core(
    device: str,
    dtypes: tuple[torch.dtype, ...],
    sizes: tuple[tuple[int, int], ...],
    timer: Timer,
    loop_sample: int,
    cores: int,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Time spectra.eigh and its peers, interleaved, for every (dtype, n, batch)."""
    from ..core import eigh
    from ..core import plan as plan_of

    fan = None if device.startswith("cuda") else ThreadFanOut(cores)
    rows = []
    for dtype in dtypes:
        for n, batch in sizes:
            name = str(dtype).removeprefix("torch.")
            if progress:
                progress(f"n={n} batch={batch} {name}")
            a = random_symmetric(batch, n, dtype, seed=n).to(device)
            impls = core_peers(a, device, loop_sample, fan)
            impls["spectra"] = Impl(partial(eigh, a))
            cells, attempts = timer.measure(impls)
            w, _ = eigh(a)
            try:
                strategy = plan_of(n, batch, dtype, device).strategy
            except Exception:  # the plan's signature belongs to the core
                strategy = None
            rows.append(
                row_from_cells(
                    n,
                    batch,
                    name,
                    device,
                    cells,
                    attempts,
                    strategy,
                    eigenvalue_error(a, w),
                )
            )
            del a, impls, w
    if fan is not None:
        fan.pool.shutdown()
    return rows


def bench_extra(
    device: str,
    quick: bool,
    timer: Timer,
    loop_sample: int,
    cores: int,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """The complex rows (``spectra.eigh`` against the same peers as the real rows) and the
    generalized rows (``spectra.eigh(a, b)`` against the reduction a user writes: in torch
    on the whole batch, fanned out over threads, and a SciPy loop). CPU only: on CUDA the
    real rows are the table."""
    if device.startswith("cuda"):
        return []
    from ..core import eigh
    from ..core import plan as plan_of

    mode = "quick" if quick else "full"
    fan = ThreadFanOut(cores)
    rows = []
    for dtype, n, batch in COMPLEX_SIZES[mode]:
        name = str(dtype).removeprefix("torch.")
        if progress:
            progress(f"n={n} batch={batch} {name}")
        a = random_symmetric(batch, n, dtype, seed=n)
        impls = core_peers(a, device, loop_sample, fan)
        impls["spectra"] = Impl(partial(eigh, a))
        cells, attempts = timer.measure(impls)
        w, _ = eigh(a)
        strategy = plan_of(n, batch, dtype, device).strategy
        rows.append(
            row_from_cells(
                n, batch, name, device, cells, attempts, strategy, eigenvalue_error(a, w)
            )
        )
    for dtype, n, batch in GENERALIZED_SIZES[mode]:
        name = GENERALIZED_LABEL.format(str(dtype).removeprefix("torch."))
        if progress:
            progress(f"n={n} batch={batch} {name}")
        a = random_symmetric(batch, n, dtype, seed=n)
        b = random_overlap(batch, n, dtype, seed=n + 1)
        impls = generalized_peers(a, b, loop_sample, fan)
        impls["spectra"] = Impl(partial(eigh, a, b))
        cells, attempts = timer.measure(impls)
        w, _ = eigh(a, b)
        strategy = plan_of(n, batch, dtype, device).strategy
        error = eigenvalue_error(a, w, b=b)
        rows.append(row_from_cells(n, batch, name, device, cells, attempts, strategy, error))
    fan.pool.shutdown()
    return rows


def extra_steps(quick: bool, device: str) -> int:
    """How many rows :func:`bench_extra` times (for the progress line)."""
    if device.startswith("cuda"):
        return 0
    mode = "quick" if quick else "full"
    return len(COMPLEX_SIZES[mode]) + len(GENERALIZED_SIZES[mode])
