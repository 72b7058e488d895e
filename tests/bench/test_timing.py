"""The interleaved timer (injected clock, no real timing) and the busy-machine warning."""

from __future__ import annotations

import pytest

from spectra._bench.timing import Cell, Impl, Timer, busy_warning, own_load, worst_spread


class FakeClock:
    """A clock that only moves when a fake implementation 'runs'."""

    def __init__(self) -> None:
        self.now = 0.0
        self.calls: list[str] = []

    def __call__(self) -> float:
        return self.now

    def impl(self, name: str, durations: list[float]) -> Impl:
        it = iter(durations)

        def run() -> None:
            self.calls.append(name)
            self.now += next(it)

        return Impl(run)


def timer(clock: FakeClock, **kw) -> Timer:
    return Timer(clock=clock, sleep=lambda s: None, pause_s=0.0, budget_s=100.0, **kw)


def test_repeats_are_round_robin_after_one_warm_up_each_in_a_rotating_order():
    clock = FakeClock()
    impls = {
        "a": clock.impl("a", [1.0] * 4),
        "b": clock.impl("b", [2.0] * 4),
        "c": clock.impl("c", [3.0] * 4),
    }
    cells, attempts = timer(clock, repeats=3, min_repeats=3).measure(impls)
    # warm-ups, then each round starts one implementation later: none always follows
    # the same neighbour
    warm_ups = ["a", "b", "c"]
    assert clock.calls == [*warm_ups, "a", "b", "c", "b", "c", "a", "c", "a", "b"]
    assert attempts == 1
    assert cells["a"].times == [1.0, 1.0, 1.0] and cells["b"].median == 2.0
    assert cells["c"].times == [3.0, 3.0, 3.0]


def test_extrapolated_cells_are_scaled_to_the_whole_batch():
    clock = FakeClock()
    impl = clock.impl("loop", [0.5] * 4)
    impl.timed_on, impl.total = 100, 400
    cells, _ = timer(clock, repeats=3, min_repeats=3).measure({"loop": impl})
    assert cells["loop"].median == pytest.approx(2.0)
    assert cells["loop"].extrapolated
    assert cells["loop"].to_json()["timed_on"] == 100


def test_spread_is_range_over_median():
    c = Cell([0.9, 1.0, 1.3])
    assert c.spread == pytest.approx(0.4)
    assert c.to_json()["min_s"] == 0.9 and c.to_json()["max_s"] == 1.3
    assert Cell([2.0]).spread == 0.0


def test_wide_row_is_retimed_and_the_narrower_attempt_kept():
    clock = FakeClock()
    # warm-up, 3 wild repeats, warm-up, 3 steady repeats
    impls = {"a": clock.impl("a", [1, 1, 5, 1, 1, 1, 1.1, 1.0])}
    cells, attempts = timer(clock, repeats=3, min_repeats=3, reruns=1).measure(impls)
    assert attempts == 2
    assert cells["a"].times == pytest.approx([1, 1.1, 1.0])
    assert worst_spread(cells) == pytest.approx(0.1)


def test_narrow_row_is_not_retimed():
    clock = FakeClock()
    impls = {"a": clock.impl("a", [1, 1, 1.05, 1])}
    _, attempts = timer(clock, repeats=3, min_repeats=3, reruns=2).measure(impls)
    assert attempts == 1 and len(clock.calls) == 4


def test_budget_cuts_repeats_but_never_below_the_minimum():
    clock = FakeClock()
    impls = {"a": clock.impl("a", [10.0] * 10)}
    t = Timer(clock=clock, sleep=lambda s: None, pause_s=0, budget_s=1.0, repeats=7, min_repeats=2)
    cells, _ = t.measure(impls)
    assert len(cells["a"].times) == 2


QUIET = {"loadavg": [0.2, 0.2, 0.2], "cpu_share": 0.97}


def test_quiet_machine_gives_no_warning():
    assert busy_warning(QUIET, {"loadavg": [2.5, 1, 1], "cpu_share": 0.95}, 2, [0.1] * 8) is None


@pytest.mark.parametrize(
    ("before", "after", "spreads", "reason"),
    [
        ({"loadavg": [3.0, 2, 2], "cpu_share": 0.97}, QUIET, [0.1], "load average 3.0 on 2"),
        (QUIET, {"loadavg": [3.6, 2, 2], "cpu_share": 0.97}, [0.1], "load average 3.6 after"),
        (  # the bench kept 2 cores busy; 1.8 more came from elsewhere
            {**QUIET, "cpu_s": 2.0, "wall_s": 0.0},
            {"loadavg": [3.8, 2, 2], "cpu_share": 0.97, "cpu_s": 242.0, "wall_s": 120.0},
            [0.1],
            "load average 3.8 after it, 2.0 of it this benchmark's own",
        ),
        (QUIET, {"loadavg": [0.1, 0, 0], "cpu_share": 0.45}, [0.1], "got 45% of the cores"),
        (QUIET, QUIET, [0.1, 0.6, 0.7, 0.1], "2 of 4 cells still spread more than 25%"),
    ],
)
def test_busy_machine_warns_that_ratios_are_unreliable(before, after, spreads, reason):
    text = busy_warning(before, after, 2, spreads)
    assert text is not None
    assert text.startswith("WARNING: the machine is busy")
    assert "ratios are unreliable" in text
    assert reason in text


def test_the_benchmarks_own_threads_do_not_make_an_idle_machine_busy():
    """Issue 27: load ~2 on 2 cores, all of it the bench's own threads: no warning."""
    before = {"loadavg": [0.3, 0.2, 0.1], "cpu_share": 0.99, "cpu_s": 4.0, "wall_s": 100.0}
    after = {"loadavg": [2.1, 1.5, 0.8], "cpu_share": 0.98, "cpu_s": 1264.0, "wall_s": 760.0}
    assert own_load(before, after, 2) == pytest.approx(1260 / 660)
    assert busy_warning(before, after, 2, [0.1] * 8) is None
    # the same load with the bench idle (a run of one thread in sleeps) is someone else's
    idle = {**after, "cpu_s": 10.0}
    assert "load average 2.1 after it" in busy_warning(before, idle, 2, [0.1] * 8)
    # before the run, only its own set-up counts (seconds of CPU over a minute)
    early = {"loadavg": [1.5, 1, 1], "cpu_share": 0.99, "cpu_s": 6.0, "wall_s": 0.0}
    assert "load average 1.5 on 2 cores before the run, 0.1 of it" in busy_warning(
        early, after, 2, [0.1]
    )


def test_missing_load_average_is_not_a_crash():
    assert busy_warning({"loadavg": None, "cpu_share": None}, {}, 2, []) is None


def test_past_the_deadline_rows_are_not_retimed_and_get_fewer_repeats():
    clock = FakeClock()
    impls = {"a": clock.impl("a", [1, 1, 5, 1, 1, 1, 1, 1])}
    t = timer(clock, repeats=3, min_repeats=3, reruns=1)
    t.deadline = 0.5  # passed during the warm-up call
    cells, attempts = t.measure(impls)
    assert attempts == 1
    assert cells["a"].times == [1, 5]
