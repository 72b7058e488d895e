"""The solves of one ``Batch`` as jobs: run in order in the calling thread, or overlapped
over the core's workers, each pulling the next job when free.

A heavy-tailed batch (D&D-like) has a few large graphs on the sparse path, whose solve is
one thread's work (a Python loop around small LAPACK calls and sparse triangular solves),
and many medium graphs solved densely, which the core fans out over the cores. Run one
after the other, one core idles during the sparse solve; as jobs of one fan-out (the
sparse solves first, then the dense ones cut into chunks, costliest first, each worker
taking the next when it is free: greedy list scheduling, robust to the cost models'
errors) both cores work until the end. Every job runs on one kernel thread in its
worker (``workers=1`` inside: no nested fan-out, no oversubscription).

>>> calls = []
>>> jobs = [Job(2.0, lambda: calls.append("a") or ["a"]), Job(1.0, lambda: ["b"])]
>>> run_jobs(jobs, workers=1)
['a', 'b']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..core.domain import pull

T = TypeVar("T")

#: the dense graphs are cut into chunks of at least this estimated time (each chunk is one
#: core call: ~0.5 ms of planning and bookkeeping)
MIN_CHUNK_SECONDS = 5e-3
#: a chunk holds the remaining work over this many times the workers
GUIDED = 3


@dataclass(frozen=True)
class Job(Generic[T]):
    """One core call's worth of work: its estimated ``seconds`` (the order in which the
    workers take the jobs: costliest first) and ``run``, which returns its results."""

    seconds: float
    run: Callable[[], list[T]]


def run_jobs(jobs: Sequence[Job[T]], workers: int) -> list[T]:
    """Every job's results, in the order of ``jobs`` (whatever order they ran in): in the
    calling thread one after the other (``workers < 2``), else over ``workers`` workers of
    the core's pool, the costliest first, each worker taking the next job when free. The
    first error stops the others from taking new jobs and is raised."""
    if workers < 2 or len(jobs) < 2:
        return [x for job in jobs for x in job.run()]
    order = sorted(range(len(jobs)), key=lambda i: -jobs[i].seconds)
    results: list[list[T] | None] = [None] * len(jobs)

    def run(i: int) -> None:
        results[i] = jobs[i].run()

    pull(order, run, workers)
    return [x for got in results if got is not None for x in got]


def guided_chunks(
    items: Sequence[int], seconds: Sequence[float], workers: int, before: float = 0.0
) -> list[list[int]]:
    """``items`` (costliest first) cut into consecutive chunks for :func:`run_jobs`: each
    chunk holds about the remaining work over ``GUIDED`` times the workers (guided
    self-scheduling: large chunks first, small ones at the end to even out the workers
    where the estimates are off), at least ``MIN_CHUNK_SECONDS``.

    ``before``: the estimated seconds of the other jobs, which are taken first (the
    costliest) and run beside these chunks: of them, only what is left when the chunks cut
    so far have run on the other workers counts as remaining (``before`` less the chunks'
    work over ``workers - 1``). Counted whole until the end, it kept the last chunks large:
    on the D&D-like batch (a 0.16 s sparse job beside 0.37 s of dense graphs, 2 workers)
    the last chunk was 35 ms of work, and one worker idled for most of it.

    >>> guided_chunks([0, 1, 2, 3, 4, 5], [0.04, 0.02, 0.004, 0.003, 0.002, 0.001], 2)
    [[0], [1], [2, 3], [4, 5]]
    >>> [len(c) for c in guided_chunks(list(range(20)), [0.0101] * 20, 2, before=0.1)]
    [5, 4, 2, 2, 2, 1, 1, 1, 1, 1]
    """
    left = float(sum(seconds))
    done = 0.0
    out: list[list[int]] = []
    chunk: list[int] = []
    spent = 0.0
    for item, cost in zip(items, seconds, strict=True):
        chunk.append(item)
        spent += cost
        others = max(before - done / max(workers - 1, 1), 0.0)
        if spent >= max((left + others) / (GUIDED * workers), MIN_CHUNK_SECONDS):
            out.append(chunk)
            left -= spent
            done += spent
            chunk, spent = [], 0.0
    if chunk:
        out.append(chunk)
    return out
