"""Autotuning: time every tunable strategy on a sample, exactly as ``execute`` runs it.

Each candidate is planned like the real call (same workers, memory budget, verification)
with only the strategy forced, and timed through :func:`~spectra.core._execute.execute`:
the fan-out, the per-block pipeline and the verification are part of what is measured.
"""

from __future__ import annotations

import functools
import time

import torch

from ._strategies import STRATEGIES

#: at most this many sample matrices are timed per candidate
MAX_SAMPLE = 256


def size_class(batch: int) -> int:
    """The power of two at or above ``batch``: autotuning is cached per class."""
    return 1 << max(0, batch - 1).bit_length()


@functools.lru_cache(maxsize=256)
def autotune(
    n: int,
    batch_class: int,
    dtype: torch.dtype,
    device: torch.device,
    vectors: bool,
    workers: int,
    budget: int = 1 << 30,
    verify: bool | None = None,
    version: int = 0,  # the registry's (a cache key)
) -> tuple[str, tuple[tuple[str, float], ...]]:
    """Time each tunable strategy on a random sample; return the fastest and the timings.

    >>> best, timings = autotune(8, 16, torch.float64, torch.device("cpu"), True, 1)
    >>> best in dict(timings)
    True
    """
    from ._execute import execute
    from ._plan import plan
    from ._samples import random_hermitian

    sample = random_hermitian((min(batch_class, MAX_SAMPLE),), n, dtype, seed=0).to(device)
    timings = []
    for name, s in STRATEGIES.items():
        if not (device.type in s.tunable_on and s.supports(device)):
            continue
        try:
            p = plan(
                n,
                sample.shape[0],
                dtype,
                device,
                vectors=vectors,
                strategy=name,
                max_memory=budget,
                workers=workers,
                verify=verify,
                autotune=False,
            )
            execute(p, sample)  # warm-up (kernels, workspaces, caches, the thread pool)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            t0 = time.perf_counter()
            execute(p, sample)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            timings.append((name, time.perf_counter() - t0))
        except Exception:  # a strategy that fails here is simply not chosen
            continue
    best = min(timings, key=lambda t: t[1])[0] if timings else "torch"
    return best, tuple(timings)
