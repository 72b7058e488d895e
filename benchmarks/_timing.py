"""Shared timing helpers for the benchmark scripts (never run by pytest)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def sync(device: str) -> None:
    """Wait for queued CUDA work so wall-clock times are honest."""
    if str(device).startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def median_time(fn: Callable[[], Any], repeats: int = 5, warmup: int = 1,
                device: str = "cpu", budget_s: float | None = None) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs after ``warmup`` runs.

    With ``budget_s``, stops repeating early once that much time was spent (at least 1 run).
    """
    for _ in range(warmup):
        fn()
        sync(device)
    times: list[float] = []
    spent = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync(device)
        dt = time.perf_counter() - t0
        times.append(dt)
        spent += dt
        if budget_s is not None and spent > budget_s:
            break
    return statistics.median(times)
