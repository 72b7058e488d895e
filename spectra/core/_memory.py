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


def check_fits(nbytes: float, what: str, device: str = "cpu", available: int | None = None) -> None:
    """Refuse (one-line ``InputError``) work whose memory estimate exceeds free memory.

    ``what`` names what asked for it (e.g. ``"--nk 2000000000"``) and starts the message;
    ``available`` defaults to the free memory of ``device`` (``cpu``, ``cuda``, ``cuda:N``).

    >>> check_fits(1 << 40, "--nk 1e12", available=1 << 34)
    Traceback (most recent call last):
    ...
    spectra.core._errors.InputError: --nk 1e12 needs about 1.0 TiB of memory, more than ...
    """
    from ._errors import InputError
    from ._plan import format_bytes

    free = available_memory(torch.device(device)) if available is None else available
    if nbytes > free:
        where = "here" if device == "cpu" else f"on {device}"
        raise InputError(
            what,
            f"needs about {format_bytes(int(nbytes))} of memory, more than the "
            f"{format_bytes(free)} available {where}",
        )


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
