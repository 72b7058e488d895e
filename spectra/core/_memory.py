"""How much memory a batch may use: free memory probing and the default budget."""

from __future__ import annotations

import os
import time

import torch


def available_memory(device: torch.device) -> int:
    """Free bytes on ``device`` (CUDA: free device memory; CPU: MemAvailable)."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - non-Linux
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return 8 << 30


_BUDGET_CACHE: dict[torch.device, tuple[float, int]] = {}
_BUDGET_TTL_S = 1.0


def default_budget(device: torch.device) -> int:
    """Half of the free memory, rounded down to 64 MiB so plans can be cached.

    Re-read at most once a second per device: for small batches the query itself
    (``/proc/meminfo``, ``cudaMemGetInfo``) was a visible share of the call.

    >>> default_budget(torch.device("cpu")) % (64 << 20)
    0
    """
    now = time.monotonic()
    hit = _BUDGET_CACHE.get(device)
    if hit is not None and now - hit[0] < _BUDGET_TTL_S:
        return hit[1]
    step = 64 << 20
    budget = max(step, (available_memory(device) // 2) // step * step)
    _BUDGET_CACHE[device] = (now, budget)
    return budget
