"""CPU fan-out: a persistent worker pool, one intra-op/BLAS thread per worker.

Small LAPACK ``syevd`` calls gain nothing from threaded BLAS, and with other load the
threads oversubscribe the cores. Splitting the batch across workers that each run one
intra-op thread (torch releases the GIL inside eigh) is what scales on CPU. The caller's
thread settings are restored afterwards; the pool persists (creating threads per call
cost ~30% at small sizes).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from typing import TypeVar

import torch

T = TypeVar("T")

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_lock = threading.Lock()
_controller = None


def cpu_count() -> int:
    """Cores this process may use (respects CPU affinity and cgroup-limited affinity)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def _get_pool(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < workers:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="spectra")
            _pool_size = workers
        return _pool


def _blas_controller():
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    return _controller


@contextmanager
def single_threaded_kernels(blas: bool = False) -> Iterator[None]:
    """Run the block with one torch intra-op thread (and one BLAS thread if ``blas``).

    torch's setting is process-wide, so it is set once around the whole fan-out by the
    calling thread (which only waits meanwhile) and restored after.
    """
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    limiter = _blas_controller().limit(limits=1, user_api="blas") if blas else None
    try:
        yield
    finally:
        if limiter is not None:
            limiter.restore_original_limits()
        torch.set_num_threads(old)


def split_ranges(total: int, parts: int) -> list[tuple[int, int]]:
    """Cut ``range(total)`` into ``parts`` contiguous near-equal ``(start, stop)`` ranges."""
    parts = max(1, min(parts, total))
    base, extra = divmod(total, parts)
    out, start = [], 0
    for i in range(parts):
        stop = start + base + (1 if i < extra else 0)
        out.append((start, stop))
        start = stop
    return out


def fan_out(
    fn: Callable[[int, int], T],
    total: int,
    workers: int,
    blas: bool = False,
    set_threads: bool = True,
) -> list[T]:
    """Call ``fn(start, stop)`` on ``workers`` contiguous parts of ``range(total)`` in parallel.

    Workers run under ``torch.no_grad()`` (grad mode is per thread) with one kernel
    thread each (``set_threads=False``: the caller already holds
    :func:`single_threaded_kernels`); exceptions raised in a worker propagate to the caller.
    """
    ranges = split_ranges(total, workers)
    if len(ranges) <= 1:
        return [fn(*r) for r in ranges]
    pool = _get_pool(len(ranges))

    def run(r: Sequence[int]) -> T:
        with torch.no_grad():
            return fn(r[0], r[1])

    with single_threaded_kernels(blas) if set_threads else nullcontext():
        futures = [pool.submit(run, r) for r in ranges]
        return [f.result() for f in futures]
