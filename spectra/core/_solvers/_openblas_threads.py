"""One thread count for every call of ours into SciPy's OpenBLAS, set and restored without a
call ever seeing it change.

SciPy ships OpenBLAS built on its own pthreads pool, where ``openblas_set_num_threads_local``
is not per thread: it sets the process-wide count (``openblas_set_num_threads``; only
OpenMP builds keep a per-thread one) and returns the old one. Setting it around each block
of a fan-out, as the partial solve once did, let one worker restore the count while the
other was still solving, so that a few of the other's BLAS calls ran on two threads: other
last bits on a process's first concurrent calls (measured, the full ``dsyevd``: 11 of 12
processes; the partial solve: 1 of 40), and the count left at 1 afterwards, which every
later SciPy call of the process then ran on (``benchmarks/RESULTS.md``, 2026-12-05).

:class:`ThreadGate` makes the count a shared, reference-counted setting: the first call to
enter sets the count it wants (one thread in a fan-out's workers), later calls that want the
same count join, a call that wants another waits until the holders have left, and the last
to leave restores the count it found. No call runs while the count differs from the one it
asked for, and nothing is left changed.

>>> counts = [2]
>>> def knob(n):  # OpenBLAS's: sets the count, returns the old one
...     old, counts[0] = counts[0], n
...     return old
>>> gate = ThreadGate(knob)
>>> with gate.hold(1):
...     with gate.hold(1):  # a second worker joins
...         inside = counts[0]
>>> inside, counts[0]
(1, 2)
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_GATES: weakref.WeakSet[ThreadGate] = weakref.WeakSet()


class ThreadGate:
    """The process-wide OpenBLAS thread count, shared by the calls that hold it.

    ``knob(n)`` sets the count to ``n`` and returns the previous one (OpenBLAS's
    ``openblas_set_num_threads_local``)."""

    def __init__(self, knob: Callable[[int], int]) -> None:
        self.knob = knob
        self._reset()
        _GATES.add(self)

    def _reset(self) -> None:
        self._cond = threading.Condition()
        self._holders = 0
        self._count = 0
        self._found = 0

    @contextmanager
    def hold(self, count: int) -> Iterator[None]:
        """Run the ``with`` body with the count at ``count`` (waiting while other calls
        hold another count), restored to what was found when the last holder leaves."""
        with self._cond:
            while self._holders and self._count != count:
                self._cond.wait()
            if not self._holders:
                self._found = self.knob(count)
                self._count = count
            self._holders += 1
        try:
            yield
        finally:
            with self._cond:
                self._holders -= 1
                if not self._holders:
                    self.knob(self._found)
                    self._cond.notify_all()


def _after_fork_in_child() -> None:
    """A child forked while a worker held a gate inherits the lock held by a thread it does
    not have, and the count that worker set: every gate starts afresh, the count it found
    restored."""
    for gate in list(_GATES):
        held, found = gate._holders, gate._found
        gate._reset()
        if held:
            gate.knob(found)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
