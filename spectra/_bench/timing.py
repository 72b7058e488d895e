"""Timing for ``spectra bench``: interleaved repeats, spread per cell, re-runs, busy checks.

Every implementation in a row is timed round-robin, repeat by repeat, so that the drift of a
shared machine hits all of them alike; the order rotates from round to round, so that what
one call leaves behind (threads to wake) is not always charged to the same neighbour. Each
cell keeps all its repeat times; its spread is ``(max - min) / median``. A row whose widest
cell spreads more than ``max_spread`` is timed again (the whole row, still interleaved) and
the attempt with the narrower worst cell is kept. Past an optional deadline (``--quick``)
rows are not re-timed and get 2 repeats. :func:`busy_warning` turns the load average, the
CPU share this process got and the cells that stayed wide into one warning line.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: A cell whose repeats spread more than this ((max - min) / median) makes its row re-timed.
MAX_SPREAD = 0.25


@dataclass
class Cell:
    """The repeat times of one implementation in one row, scaled to the whole batch.

    ``timed_on`` < ``total`` means the implementation ran on the first ``timed_on`` items
    only and its times were multiplied by ``total / timed_on`` (extrapolated).

    >>> c = Cell([0.1, 0.12, 0.11])
    >>> round(c.median, 2), round(c.spread, 2)
    (0.11, 0.18)
    """

    times: list[float]
    timed_on: int | None = None
    total: int | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def spread(self) -> float:
        """``(max - min) / median`` over the repeats (0 for a single repeat)."""
        m = self.median
        return (max(self.times) - min(self.times)) / m if m > 0 else 0.0

    @property
    def extrapolated(self) -> bool:
        return self.timed_on is not None and self.total is not None and self.timed_on < self.total

    def to_json(self) -> dict[str, Any]:
        return {
            "median_s": self.median,
            "min_s": min(self.times),
            "max_s": max(self.times),
            "spread": self.spread,
            "times_s": list(self.times),
            "repeats": len(self.times),
            "extrapolated": self.extrapolated,
            "timed_on": self.timed_on,
            "total": self.total,
        }


@dataclass
class Impl:
    """One implementation to time: ``fn`` runs it on ``timed_on`` of ``total`` items."""

    fn: Callable[[], Any]
    timed_on: int | None = None
    total: int | None = None

    @property
    def scale(self) -> float:
        if self.timed_on is None or self.total is None or self.timed_on <= 0:
            return 1.0
        return self.total / self.timed_on


@dataclass
class Timer:
    """How to time a row: repeats, pause between calls, clock and device sync (injectable)."""

    repeats: int = 5
    min_repeats: int = 3
    budget_s: float = 10.0
    pause_s: float = 0.1
    max_spread: float = MAX_SPREAD
    reruns: int = 1
    sync: Callable[[], None] = lambda: None
    clock: Callable[[], float] = time.perf_counter
    sleep: Callable[[float], None] = time.sleep
    #: a ``clock()`` value after which rows are no longer re-timed and get ``late_repeats``
    #: repeats (keeps ``--quick`` short on a busy machine; the JSON records every count)
    deadline: float | None = None
    late_repeats: int = 2

    def once(self, fn: Callable[[], Any]) -> float:
        # BLAS/OpenMP pools spin for a while after a call: a pause keeps one
        # implementation's spinning threads from slowing the next one down
        if self.pause_s:
            self.sleep(self.pause_s)
        t0 = self.clock()
        fn()
        self.sync()
        return self.clock() - t0

    def late(self) -> bool:
        return self.deadline is not None and self.clock() > self.deadline

    def interleaved(self, impls: dict[str, Impl]) -> dict[str, Cell]:
        """One warm-up call each, then round-robin repeats within the budget."""
        first = {k: self.once(impl.fn) for k, impl in impls.items()}
        per_round = sum(first.values()) + self.pause_s * len(impls)
        rounds = int(self.budget_s / max(per_round, 1e-9))
        rounds = max(self.min_repeats, min(self.repeats, rounds))
        if self.late():
            rounds = min(rounds, self.late_repeats)
        times: dict[str, list[float]] = {k: [] for k in impls}
        keys = list(impls)
        for r in range(rounds):
            # the order rotates each round: a call pays for what the one before it left
            # (a thread team to wake after the fan-out set torch to one thread and back:
            # the same MKL strategy read 0.94x and 1.01x the fan-out, timed right after it
            # and one cell later), and a fixed order charged that to one column
            shift = r % len(keys)
            for k in keys[shift:] + keys[:shift]:
                times[k].append(self.once(impls[k].fn) * impls[k].scale)
        return {k: Cell(times[k], impls[k].timed_on, impls[k].total) for k, impl in impls.items()}

    def measure(self, impls: dict[str, Impl]) -> tuple[dict[str, Cell], int]:
        """Time a row; re-time it (up to ``reruns`` times) while a cell spreads too wide.

        Returns the kept cells and the number of attempts made.
        """
        best = self.interleaved(impls)
        attempts = 1
        while attempts <= self.reruns and worst_spread(best) > self.max_spread and not self.late():
            again = self.interleaved(impls)
            attempts += 1
            if worst_spread(again) < worst_spread(best):
                best = again
        return best, attempts


def worst_spread(cells: dict[str, Cell]) -> float:
    return max((c.spread for c in cells.values()), default=0.0)


def cpu_share(threads: int, seconds: float = 0.25) -> float:
    """The fraction of ``threads`` cores this process gets for a short burst of work.

    Each of ``threads`` Python threads hashes a 1 MiB buffer (``hashlib`` releases the GIL
    and runs on the calling thread only: no BLAS/OpenMP helper threads whose CPU time
    ``time.thread_time`` would miss) for ``seconds``; the thread CPU times over
    ``threads x wall`` is near 1 on a quiet machine and drops when other processes compete
    for the cores. Nothing process-wide (torch/BLAS thread counts) is touched.

    >>> 0.0 < cpu_share(1, seconds=0.02) <= 1.0
    True
    """
    import hashlib

    buf = bytes(1 << 20)
    spent = [0.0] * threads
    start = threading.Barrier(threads + 1)

    def work(i: int) -> None:
        start.wait()
        c0, t0 = time.thread_time(), time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            hashlib.sha256(buf).digest()
        spent[i] = time.thread_time() - c0

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    t0 = time.perf_counter()
    start.wait()
    for t in pool:
        t.join()
    wall = time.perf_counter() - t0
    return min(1.0, sum(spent) / (threads * wall)) if wall > 0 else 1.0


def load_snapshot(cores: int, probe: bool = True) -> dict[str, Any]:
    """The 1/5/15-minute load averages, this process's CPU seconds so far (``cpu_s``, taken
    before the probe) and wall clock (``wall_s``), and (``probe``) the CPU share it gets."""
    try:
        loadavg: list[float] | None = list(os.getloadavg())
    except (AttributeError, OSError):  # pragma: no cover - not on Linux/macOS
        loadavg = None
    own = {"cpu_s": time.process_time(), "wall_s": time.monotonic()}
    return {"loadavg": loadavg, **own, "cpu_share": cpu_share(cores) if probe else None}


#: The load average is a moving average with a one-minute time constant.
_LOAD_WINDOW_S = 60.0


def own_load(before: dict[str, Any], after: dict[str, Any] | None, cores: int) -> float:
    """How much of the 1-minute load average this benchmark process put there itself.

    Before the run: at most its CPU seconds so far over one minute (imports, set-up). After
    it: the CPU seconds the run used over ``max(run time, 1 minute)``, i.e. the cores it kept
    busy on average. Capped at ``cores``; without CPU times (older snapshots) the whole
    machine is assumed to be the bench's after the run and none of it before.

    >>> own_load({"cpu_s": 3.0, "wall_s": 0.0}, None, 2)
    0.05
    >>> own_load({"cpu_s": 3.0, "wall_s": 0.0}, {"cpu_s": 243.0, "wall_s": 120.0}, 2)
    2.0
    """
    if after is None:
        return min(float(cores), float(before.get("cpu_s") or 0.0) / _LOAD_WINDOW_S)
    if before.get("cpu_s") is None or after.get("cpu_s") is None:
        return float(cores)
    cpu = float(after["cpu_s"]) - float(before["cpu_s"])
    wall = float(after.get("wall_s") or 0.0) - float(before.get("wall_s") or 0.0)
    return min(float(cores), max(cpu, 0.0) / max(wall, _LOAD_WINDOW_S))


def busy_warning(
    before: dict[str, Any],
    after: dict[str, Any],
    cores: int,
    spreads: list[float],
    max_spread: float = MAX_SPREAD,
) -> str | None:
    """A warning line when the machine was busy, else ``None``.

    Busy means any of: a 1-minute load average, less this benchmark's own share of it
    (:func:`own_load`: its threads on every core make a load of ``cores`` on an idle
    machine), above half the cores before the run or above three quarters after it (the
    average lags); a CPU share below 80% before or after; or more than a quarter of the
    cells still spreading more than ``max_spread`` after their re-runs.

    >>> quiet = {"loadavg": [0.1, 0.1, 0.1], "cpu_share": 0.99}
    >>> busy_warning(quiet, quiet, 2, [0.05, 0.1]) is None
    True
    >>> busy_warning({"loadavg": [6.0, 5, 5], "cpu_share": 0.4}, quiet, 2, [0.05])[:8]
    'WARNING:'
    """
    reasons = []
    lb = (before.get("loadavg") or [0.0])[0]
    la = (after.get("loadavg") or [0.0])[0]
    own_b, own_a = own_load(before, None, cores), own_load(before, after, cores)
    if lb - own_b > 0.5 * cores:
        reasons.append(f"load average {lb:.1f} on {cores} cores before the run{_own(own_b)}")
    if la - own_a > 0.75 * cores:
        reasons.append(f"load average {la:.1f} after it{_own(own_a)}")
    shares = [s for s in (before.get("cpu_share"), after.get("cpu_share")) if s is not None]
    if shares and min(shares) < 0.8:
        reasons.append(f"this process got {100 * min(shares):.0f}% of the cores in a probe")
    wide = sum(s > max_spread for s in spreads)
    if spreads and wide > len(spreads) / 4:
        reasons.append(
            f"{wide} of {len(spreads)} cells still spread more than "
            f"{100 * max_spread:.0f}% between repeats after re-timing"
        )
    if not reasons:
        return None
    return (
        "WARNING: the machine is busy (" + "; ".join(reasons) + "): timings are noisy and "
        "the ratios are unreliable. Re-run on a quiet machine."
    )


def _own(share: float) -> str:
    return f", {share:.1f} of it this benchmark's own" if share >= 0.05 else ""
