"""The one memory model: how much a batch may use, and how many matrices fit.

Every path that cuts a batch into chunks from a memory budget (the planner's chunks, the
generalized reductions, the backward, the kernels, the tight-binding k-point chunks) asks
:func:`rows_within` with its working set per item, written in units of one ``n x n``
matrix of the input dtype (:func:`matrix_bytes`) with the named factors below. The budget
is ``max_memory`` when given, else half the free memory (:func:`memory_budget`).

>>> per = matrix_bytes(16, 8, LAPACK_MATRICES)  # one 16x16 float64 solve by LAPACK
>>> rows_within(10 * per, per, 1000), rows_within(10 * per, per, 3), rows_within(1, per, 5)
(10, 3, 1)
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import torch

#: Working sets per matrix, in ``n x n`` matrices of the input dtype (plus ``2 n`` entries
#: for the eigenvalues and LAPACK's small work arrays, :func:`matrix_bytes`):
#: ``torch.linalg.eigh`` and the other LAPACK paths: the input copy, the vectors, the
#: ``syevd`` workspace (about ``1 + 6n + 2n^2`` entries)
LAPACK_MATRICES = 4.0
#: the numba lane kernels: the input block, the transposed vectors and a lane-major copy
LANE_MATRICES = 3.0
#: the torch-op closed form (n <= 3): a dozen elementwise temporaries per matrix
CLOSED_FORM_MATRICES = 12.0
#: the torch-op Jacobi: the padded matrix, the rotated copies, the vectors and a gather
JACOBI_MATRICES = 9.0
#: the generalized reductions: ``a`` and ``b`` chunks, the factor or overlap eigenvectors,
#: two reduction temporaries, the reduced problem and the solver's own working set
GENERALIZED_MATRICES = 10
#: the eigenvector backward: ``V^H``, ``V^H G_V``, the factor matrix, ``inner`` and products
BACKWARD_MATRICES = 8


def matrix_bytes(n: int, itemsize: int, matrices: float, vectors: int = 2) -> int:
    """Bytes of ``matrices`` ``n x n`` matrices and ``vectors`` length-``n`` vectors
    (eigenvalues, small work arrays) of ``itemsize`` bytes: the working set of one item.

    >>> matrix_bytes(4, 8, 1.0), matrix_bytes(4, 8, 1.0, vectors=0)
    (192, 128)
    """
    return max(1, int(matrices * n * n * itemsize) + vectors * n * itemsize)


def rows_within(budget: int | None, bytes_per_item: int, batch: int) -> int:
    """How many items of ``bytes_per_item`` each one chunk of ``batch`` items takes so that
    it fits ``budget`` bytes: at least 1 (one item over the budget is still solved), at most
    ``batch`` (and 1 for an empty batch); the whole batch when ``budget`` is ``None``.

    >>> rows_within(1000, 100, 25), rows_within(None, 100, 25), rows_within(1000, 100, 0)
    (10, 25, 1)
    """
    if budget is None:
        return max(1, batch)
    return max(1, min(batch, budget // max(1, bytes_per_item)))


def chunks_within(budget: int | None, bytes_per_item: list[int]) -> list[range]:
    """Consecutive chunks of items of different sizes (``bytes_per_item``, e.g. the graphs of
    a ragged batch) that each fit ``budget``: greedy, in order; an item over the budget alone
    gets a chunk of its own; one chunk when ``budget`` is ``None``. With equal sizes the
    chunks are those of :func:`rows_within`.

    >>> chunks_within(100, [40, 40, 40, 150, 10]), chunks_within(None, [5, 5])
    ([range(0, 2), range(2, 3), range(3, 4), range(4, 5)], [range(0, 2)])
    >>> [len(c) for c in chunks_within(100, [30] * 7)] == [rows_within(100, 30, 7)] * 2 + [1]
    True
    """
    if budget is None or not bytes_per_item:
        return [range(len(bytes_per_item))]
    out, start, used = [], 0, 0
    for i, need in enumerate(bytes_per_item):
        if i > start and used + need > budget:
            out.append(range(start, i))
            start, used = i, 0
        used += need
    out.append(range(start, len(bytes_per_item)))
    return out


def memory_budget(max_memory: Any = None, device: torch.device | str = "cpu") -> int:
    """The core's budget in bytes: ``max_memory`` (a positive number, as
    ``spectra.eigh(..., max_memory=)``) or, when ``None``, :func:`default_budget` of
    ``device``. A non-positive or non-numeric ``max_memory`` is an ``InputError``.

    >>> memory_budget(4096), memory_budget(None) % (64 << 20)
    (4096, 0)
    """
    if max_memory is None:
        return default_budget(torch.device(device))
    from .._errors import InputError

    try:
        number = float(max_memory)
    except (TypeError, ValueError):
        raise InputError(
            "max_memory", f"must be a number of bytes > 0, got {max_memory!r}"
        ) from None
    if isinstance(max_memory, bool) or not (math.isfinite(number) and number > 0):
        raise InputError("max_memory", f"must be a finite number of bytes > 0, got {max_memory!r}")
    return int(number) if number >= 1 else 1


def format_bytes(n: int) -> str:
    """``n`` bytes in binary units, e.g. ``format_bytes(3 << 20) == '3.0 MiB'``.

    >>> format_bytes(512), format_bytes(3 << 30)
    ('512 B', '3.0 GiB')
    """
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


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
    from .._errors import InputError

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
