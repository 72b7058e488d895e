"""Autotuning: time candidate plans on a sample, exactly as ``execute`` runs them.

The planner hands over one plan per tunable strategy, each planned like the real call
(same workers, memory budget, verification) with only the strategy forced; each is timed
through :func:`~spectra.core._pipeline._execute.execute`, so the fan-out, the per-block pipeline and
the verification are part of what is measured.
"""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING

import torch

from .._support._samples import random_hermitian
from . import _execute

if TYPE_CHECKING:  # pragma: no cover
    from ._plan import Plan

#: at most this many sample matrices are timed per candidate
MAX_SAMPLE = 256


def size_class(batch: int) -> int:
    """The power of two at or above ``batch``: autotuning is cached per class."""
    return 1 << max(0, batch - 1).bit_length()


@functools.lru_cache(maxsize=256)
def autotune(
    candidates: tuple[Plan, ...], version: int = 0
) -> tuple[str, tuple[tuple[str, float], ...]]:
    """Time each candidate plan (all of one sample shape) on a random sample; return the
    fastest strategy and the timings (``version``: the registry's, a cache key).

    >>> from spectra.core import plan
    >>> cands = tuple(plan(8, 16, torch.float64, strategy=s, workers=1) for s in ("torch", "numpy"))
    >>> best, timings = autotune(cands)
    >>> best in dict(timings) and len(timings) == 2
    True
    """
    if not candidates:
        return "torch", ()
    first = candidates[0]
    sample = random_hermitian((first.batch,), first.n, first.dtype, seed=0).to(first.device)
    device = first.device
    timings = []
    for p in candidates:
        try:
            _execute.execute(p, sample)  # warm-up (kernels, workspaces, caches, the thread pool)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            t0 = time.perf_counter()
            _execute.execute(p, sample)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            timings.append((p.strategy, time.perf_counter() - t0))
        except Exception:  # a strategy that fails here is simply not chosen
            continue
    best = min(timings, key=lambda t: t[1])[0] if timings else "torch"
    return best, tuple(timings)
