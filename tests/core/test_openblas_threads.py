"""The OpenBLAS thread count that the partial solve (SciPy's OpenBLAS) runs on: one
process-wide setting in SciPy's pthreads build, shared through ``ThreadGate`` so that no
call sees it change while it runs and the process gets back the count it had."""

from __future__ import annotations

import threading
import time

import pytest
import torch

import spectra
from spectra.core._solvers import _lapack_subset, _openblas_threads
from spectra.core._solvers._openblas_threads import ThreadGate

from .helpers import random_hermitian


class _Knob:
    """A stand-in for OpenBLAS's process-wide count: records every setting."""

    def __init__(self, count: int = 2) -> None:
        self.count, self.log = count, []

    def __call__(self, n: int) -> int:
        old, self.count = self.count, n
        self.log.append(n)
        return old


def test_holders_of_one_count_share_it_and_the_last_restores():
    knob = _Knob(2)
    gate = ThreadGate(knob)
    with gate.hold(1):
        assert knob.count == 1
        with gate.hold(1):
            assert knob.count == 1
        assert knob.count == 1  # the first holder still runs: not restored under it
    assert knob.count == 2 and knob.log == [1, 2]


def test_another_count_waits_until_the_holders_have_left():
    knob = _Knob(4)
    gate = ThreadGate(knob)
    seen: list[tuple[str, int]] = []
    entered, release = threading.Event(), threading.Event()

    def first() -> None:
        with gate.hold(1):
            entered.set()
            release.wait(5)
            seen.append(("first leaves", knob.count))

    def second() -> None:
        entered.wait(5)
        with gate.hold(2):
            seen.append(("second runs", knob.count))

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    entered.wait(5)
    time.sleep(0.05)
    assert seen == []  # the second is waiting, and the count under the first stays 1
    release.set()
    for t in threads:
        t.join(5)
    assert seen == [("first leaves", 1), ("second runs", 2)]
    assert knob.count == 4 and knob.log == [1, 4, 2, 4]


def test_an_error_inside_still_restores():
    knob = _Knob(3)
    gate = ThreadGate(knob)
    with pytest.raises(RuntimeError), gate.hold(1):
        raise RuntimeError("inside")
    assert knob.count == 3


def test_a_forked_child_starts_with_a_fresh_gate_and_the_count_restored():
    """The at-fork hook as a child runs it: a gate held by a parent's worker at the fork."""
    knob = _Knob(2)
    gate = ThreadGate(knob)
    with gate.hold(1):
        _openblas_threads._after_fork_in_child()  # what the child runs after the fork
        assert knob.count == 2 and gate._holders == 0
        with gate.hold(1):  # not blocked by the parent's holder, which the child lacks
            assert knob.count == 1
    assert knob.count == 2


def test_fanned_out_partial_solves_leave_openblas_as_they_found_it():
    """Concurrent partial solves on two workers: every block runs with the count at one
    and the process-wide count is what it was afterwards (the per-block set and restore
    left it at 1: every later SciPy call of the process ran on one thread)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    lap = _lapack_subset._lapack()
    if lap.gate is None:
        pytest.skip("no OpenBLAS thread knob in this SciPy")

    def scipy_counts() -> list[int]:
        return [
            p["num_threads"]
            for p in threadpoolctl.threadpool_info()
            if p.get("internal_api") == "openblas" and "scipy_openblas64_" not in p["filepath"]
        ]

    before = scipy_counts()
    a = random_hermitian((12,), 200, torch.float64, seed=21)
    plan = spectra.plan(200, 12, torch.float64, k=9, workers=2)
    assert plan.strategy == "lapack-subset" and plan.workers == 2, str(plan)
    knob_log: list[int] = []
    real = lap.gate.knob
    counts_inside: list[int] = []
    real_chain = _lapack_subset._chained

    def chained(*args):  # type: ignore[no-untyped-def]
        counts_inside.append(real(real(1)))  # read the count in force (set it back as found)
        return real_chain(*args)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lap.gate, "knob", lambda n: knob_log.append(n) or real(n))
        mp.setattr(_lapack_subset, "_chained", chained)
        for _ in range(3):
            w, v = spectra.eigh(a, k=9, workers=2)
    assert counts_inside and set(counts_inside) == {1}
    assert scipy_counts() == before
    one_by_one = spectra.eigh(a, k=9, workers=1)
    assert torch.equal(w, one_by_one[0]) and torch.equal(v, one_by_one[1])


def test_one_loader_and_one_gate_even_when_workers_race_for_them(monkeypatch):
    """The first calls of a fan-out ask for the library from both workers at once: one
    loader (and so one gate) must come out, or each gate restores the count under the
    other's calls (as it did with ``functools.cache``, which builds one per racing thread)."""
    from spectra.core._support._threads import built_once

    monkeypatch.setattr(_lapack_subset, "_lapack", built_once(lambda: _lapack_subset._Lapack()))
    built: list[object] = []
    real = _lapack_subset._Lapack

    def slow():  # widen the race: building takes a while
        time.sleep(0.02)
        got = real()
        built.append(got)
        return got

    monkeypatch.setattr(_lapack_subset, "_Lapack", slow)
    barrier = threading.Barrier(6)
    seen: list[object] = []

    def ask() -> None:
        barrier.wait(5)
        seen.append(_lapack_subset._lapack())

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert len(built) == 1 and len(seen) == 6 and all(s is built[0] for s in seen)
