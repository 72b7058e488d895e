"""The core's pulling scheduler (``pull``): every index runs once, on the threads given;
the error raised is the first one, or with ``finish`` the smallest failing index's."""

from __future__ import annotations

import threading
import time

import pytest

from spectra.core.domain import pull


def test_every_index_runs_once_over_the_threads():
    seen: list[int] = []
    threads: set[int] = set()
    lock = threading.Lock()
    gate = threading.Barrier(2, timeout=5)

    def run(i: int) -> None:
        if i in (0, 1):
            gate.wait()  # the first two indices run at once: two threads
        with lock:
            seen.append(i)
            threads.add(threading.get_ident())

    pull(list(range(20)), run, 2)
    assert sorted(seen) == list(range(20))
    assert len(threads) == 2


def test_finish_runs_everything_and_raises_the_smallest_failing_index():
    ran: list[int] = []

    def run(i: int) -> None:
        ran.append(i)
        if i in (3, 7):
            raise ValueError(f"index {i}")

    with pytest.raises(ValueError, match="index 3"):
        pull([7, 9, 8, 3, 0, 1, 2, 4, 5, 6], run, 2, finish=True)
    assert sorted(ran) == list(range(10))


def test_without_finish_the_first_error_stops_the_others():
    ran: list[int] = []

    def run(i: int) -> None:
        ran.append(i)
        if i == 0:
            raise ValueError("first")
        time.sleep(0.002)  # lets the failing thread mark the failure

    with pytest.raises(ValueError, match="first"):
        pull(list(range(200)), run, 2)
    assert len(ran) < 50
