"""Benchmark: optimizer steps on ``St(50, 5)`` parameters, spectra vs geoopt, interleaved.

    .venv/bin/python -m benchmarks.bench_stiefel_step [--quick] [--threads N] [--json FILE]
        [--dtype float32|float64] [--rounds R] [--steps K] [--clock wall|cpu]

The case users meet most: a model with one orthogonal weight (or a few), stepped once per
batch. Every implementation runs the same problem: the same starting point and the same
sequence of 64 random Euclidean gradients, cycled (so the steps keep their size instead of
shrinking as a fixed gradient's would). Each round times ``K`` consecutive ``opt.step()``
calls (the gradient is set, not recomputed; default 1,000) of every implementation in turn,
the order rotating per round; each row reports the median per-step time with its quartiles,
and the paired ratio ``geoopt / spectra`` (> 1: spectra is faster), the median and
quartiles of the same-round ratios. ``os.getloadavg()`` before and after is in every row.

Rows (spectra against the geoopt optimizer on the manifold users would pick there):

- ``RSGD polar``: spectra's ``RiemannianSGD`` (polar retraction; the step is small, so the
  binomial series gives the polar factor, no eigh) vs geoopt's ``RiemannianSGD`` on
  ``EuclideanStiefel`` (QR), and vs geoopt's default ``Stiefel()`` (canonical, Cayley);
- ``RSGD qr``: spectra's QR retraction vs geoopt's ``EuclideanStiefel`` step;
- ``RAdam polar``: spectra's ``RiemannianAdam`` vs geoopt's on ``EuclideanStiefel`` and on
  ``Stiefel()``;
- ``RSGD canonical (cayley)``: ``Stiefel(metric="canonical")`` vs geoopt's ``Stiefel()``;
- ``... x3``: three ``St(50, 5)`` parameters in one optimizer, against geoopt with three;
- ``RSGD/RAdam polar, eigh route``: the same steps with the series switched off, so every
  polar factor goes through the core's ``eigh`` of the 5 x 5 Gram matrix (what the step
  costs when the series cannot take it: a large step);
- ``core eigh 5x5`` vs ``torch eigh 5x5``: that one call alone.

``--clock cpu`` times with ``time.thread_time`` (this thread's CPU time) instead of the wall
clock: with ``--threads 1`` every row runs in this thread alone, and on a shared, loaded
machine the CPU time is what stays comparable between rows (preemption by other processes
is not counted; their cache pressure still is).
"""

from __future__ import annotations

import os
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch

from benchmarks._timing import bench_main, rotating_rounds
from benchmarks.bench_kernels import paired

N, P = 50, 5
GRADIENTS = 64


def _geoopt() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import geoopt
    return geoopt


def _stepper(
    make: Callable[[], tuple[list[torch.Tensor], Any]], grads: list[list[torch.Tensor]]
) -> Callable[[], None]:
    params, opt = make()
    state = {"i": 0}

    def step() -> None:
        i = state["i"]
        state["i"] = (i + 1) % len(grads)
        for p, g in zip(params, grads[i], strict=True):
            p.grad = g
        opt.step()

    return step


def _impls(dtype: torch.dtype) -> dict[str, Callable[[], None]]:
    from spectra.core import baselines
    from spectra.stiefel import RiemannianAdam, RiemannianSGD, Stiefel, StiefelParameter

    geoopt = _geoopt()
    g = torch.Generator().manual_seed(0)
    starts = [Stiefel().random(N, P, dtype=dtype, generator=g) for _ in range(3)]
    grads = [
        [torch.randn(N, P, dtype=dtype, generator=g) for _ in range(3)] for _ in range(GRADIENTS)
    ]

    def ours(
        opt_cls: Any, manifold: Any, count: int = 1
    ) -> Callable[[], tuple[list[torch.Tensor], Any]]:
        def make() -> tuple[list[torch.Tensor], Any]:
            ps = [StiefelParameter(x.clone(), manifold=manifold) for x in starts[:count]]
            return ps, opt_cls(ps, lr=1e-3)

        return make

    def theirs(
        opt_cls: Any, manifold: Any, count: int = 1
    ) -> Callable[[], tuple[list[torch.Tensor], Any]]:
        def make() -> tuple[list[torch.Tensor], Any]:
            ps = [geoopt.ManifoldParameter(x.clone(), manifold=manifold) for x in starts[:count]]
            return ps, opt_cls(ps, lr=1e-3)

        return make

    def cut(count: int) -> list[list[torch.Tensor]]:
        return [gs[:count] for gs in grads]

    specs: dict[str, tuple[Callable[[], tuple[list[torch.Tensor], Any]], int]] = {
        "spectra RSGD polar": (ours(RiemannianSGD, Stiefel("polar")), 1),
        "spectra RSGD qr": (ours(RiemannianSGD, Stiefel("qr")), 1),
        "spectra RAdam polar": (ours(RiemannianAdam, Stiefel("polar")), 1),
        "spectra RSGD canonical": (ours(RiemannianSGD, Stiefel(metric="canonical")), 1),
        "geoopt RSGD EuclideanStiefel": (
            theirs(geoopt.optim.RiemannianSGD, geoopt.EuclideanStiefel()),
            1,
        ),
        "geoopt RAdam EuclideanStiefel": (
            theirs(geoopt.optim.RiemannianAdam, geoopt.EuclideanStiefel()),
            1,
        ),
        "geoopt RSGD Stiefel": (theirs(geoopt.optim.RiemannianSGD, geoopt.Stiefel()), 1),
        "geoopt RAdam Stiefel": (theirs(geoopt.optim.RiemannianAdam, geoopt.Stiefel()), 1),
        "spectra RSGD polar x3": (ours(RiemannianSGD, Stiefel("polar"), 3), 3),
        "spectra RSGD qr x3": (ours(RiemannianSGD, Stiefel("qr"), 3), 3),
        "spectra RAdam polar x3": (ours(RiemannianAdam, Stiefel("polar"), 3), 3),
        "geoopt RSGD EuclideanStiefel x3": (
            theirs(geoopt.optim.RiemannianSGD, geoopt.EuclideanStiefel(), 3),
            3,
        ),
        "geoopt RAdam EuclideanStiefel x3": (
            theirs(geoopt.optim.RiemannianAdam, geoopt.EuclideanStiefel(), 3),
            3,
        ),
    }
    out = {name: _stepper(make, cut(count)) for name, (make, count) in specs.items()}

    import spectra.stiefel._batched as batched_module

    def eigh_route(step: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:  # the same step with the series switched off
            real = batched_module.series_polar
            batched_module.series_polar = lambda y, out=None: None  # type: ignore[assignment]
            try:
                step()
            finally:
                batched_module.series_polar = real

        return run

    out["spectra RSGD polar, eigh route"] = eigh_route(
        _stepper(ours(RiemannianSGD, Stiefel("polar")), cut(1))
    )
    out["spectra RAdam polar, eigh route"] = eigh_route(
        _stepper(ours(RiemannianAdam, Stiefel("polar")), cut(1))
    )
    import spectra

    y = starts[0] + 1e-3 * grads[0][0]
    gram = y.mT @ y
    out["core eigh 5x5"] = lambda: spectra.eigh(gram, check=False)
    out["torch eigh 5x5"] = lambda: baselines.torch_batched(gram)
    return out


ROWS = [  # (row, spectra, geoopt)
    ("RSGD polar", "spectra RSGD polar", "geoopt RSGD EuclideanStiefel"),
    ("RSGD qr", "spectra RSGD qr", "geoopt RSGD EuclideanStiefel"),
    ("RAdam polar", "spectra RAdam polar", "geoopt RAdam EuclideanStiefel"),
    ("RSGD polar vs geoopt Stiefel()", "spectra RSGD polar", "geoopt RSGD Stiefel"),
    ("RAdam polar vs geoopt Stiefel()", "spectra RAdam polar", "geoopt RAdam Stiefel"),
    ("RSGD canonical (cayley)", "spectra RSGD canonical", "geoopt RSGD Stiefel"),
    ("RSGD polar x3", "spectra RSGD polar x3", "geoopt RSGD EuclideanStiefel x3"),
    ("RSGD qr x3", "spectra RSGD qr x3", "geoopt RSGD EuclideanStiefel x3"),
    ("RAdam polar x3", "spectra RAdam polar x3", "geoopt RAdam EuclideanStiefel x3"),
    ("RSGD polar, eigh route", "spectra RSGD polar, eigh route", "geoopt RSGD EuclideanStiefel"),
    (
        "RAdam polar, eigh route",
        "spectra RAdam polar, eigh route",
        "geoopt RAdam EuclideanStiefel",
    ),
    ("eigh of the 5x5 Gram matrix", "core eigh 5x5", "torch eigh 5x5"),
]


def run(
    quick: bool = False,
    device: str = "cpu",
    threads: int | None = None,
    dtype: str = "float32",
    rounds: int | None = None,
    steps: int | None = None,
    clock: str = "wall",
) -> list[dict[str, Any]]:
    if device != "cpu":
        raise SystemExit("bench_stiefel_step times the CPU step (one small parameter)")
    if threads is not None:
        torch.set_num_threads(threads)
    rounds = rounds or (7 if quick else 21)
    steps = steps or (50 if quick else 1000)
    impls = _impls(getattr(torch, dtype))
    for fn in impls.values():  # warm up: imports, plans, kernels
        for _ in range(20):
            fn()
    now = time.thread_time if clock == "cpu" else time.perf_counter
    load_before = os.getloadavg()
    times = rotating_rounds(impls, rounds, steps, now)
    load_after = os.getloadavg()
    rows = []
    for row, ours, peer in ROWS:
        ratio = paired(times[peer], times[ours])
        rows.append(
            {
                "row": row,
                "spectra": ours,
                "peer": peer,
                "spectra_us": _quartiles(times[ours]),
                "peer_us": _quartiles(times[peer]),
                "ratio_peer_over_spectra": ratio,
                "dtype": dtype,
                "threads": torch.get_num_threads(),
                "rounds": rounds,
                "steps_per_round": steps,
                "clock": clock,
                "torch": torch.__version__,
                "loadavg_before": load_before,
                "loadavg_after": load_after,
                "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
        )
    return rows


def _quartiles(ts: list[float]) -> dict[str, float]:
    us = sorted(t * 1e6 for t in ts)
    q = statistics.quantiles(us, n=4, method="inclusive") if len(us) > 1 else [us[0]] * 3
    return {"median": statistics.median(us), "q1": q[0], "q3": q[2]}


def print_rows(rows: list[dict[str, Any]]) -> None:
    if rows:
        r0 = rows[0]
        print(
            f"one St({N}, {P}) parameter, {r0['dtype']}, {r0['threads']} torch thread(s), "
            f"{r0['rounds']} rounds x {r0['steps_per_round']} steps, {r0['clock']} clock; "
            "us per step, median [q1, q3]"
        )
    for r in rows:
        s, p, q = r["spectra_us"], r["peer_us"], r["ratio_peer_over_spectra"]
        print(
            f"{r['row']:32s} spectra {s['median']:7.1f} [{s['q1']:.1f}, {s['q3']:.1f}]  "
            f"{r['peer']:32s} {p['median']:7.1f} [{p['q1']:.1f}, {p['q3']:.1f}]  "
            f"ratio {q['median']:.2f}x [{q['q1']:.2f}, {q['q3']:.2f}]"
        )


def main(argv: list[str] | None = None) -> None:
    import argparse
    import sys

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--clock", default="wall", choices=["wall", "cpu"])
    own, rest = parser.parse_known_args(sys.argv[1:] if argv is None else argv)

    def runner(**kw: Any) -> list[dict[str, Any]]:
        return run(dtype=own.dtype, rounds=own.rounds, steps=own.steps, clock=own.clock, **kw)

    bench_main(__doc__, runner, print_rows, rest, threads=True)


if __name__ == "__main__":
    main()
