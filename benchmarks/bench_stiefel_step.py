"""Benchmark: one optimizer step on ONE ``St(50, 5)`` parameter, spectra vs geoopt, interleaved.

    .venv/bin/python -m benchmarks.bench_stiefel_step [--quick] [--threads N] [--json FILE]
        [--dtype float32|float64] [--rounds R] [--steps K] [--clock wall|cpu]

The case users meet most: a model with one orthogonal weight, stepped once per batch. Each
round times ``K`` consecutive ``opt.step()`` calls (the gradient is set, not recomputed) of
every implementation in turn, the order rotating per round; each row reports the median
per-step time with its quartiles, and the paired ratio ``geoopt / spectra`` (> 1: spectra is
faster), the median and quartiles of the same-round ratios.

Rows (spectra against the geoopt optimizer on the manifold users would pick there):

- ``RSGD polar``: spectra's ``RiemannianSGD`` (polar retraction, one core ``eigh`` of the
  5 x 5 Gram matrix) vs geoopt's ``RiemannianSGD`` on ``EuclideanStiefel`` (QR);
- ``RSGD qr``: spectra's QR retraction vs the same geoopt step;
- ``RAdam polar``: spectra's ``RiemannianAdam`` vs geoopt's on ``EuclideanStiefel``;
- ``RSGD canonical``: ``Stiefel(metric="canonical")`` (Cayley) vs geoopt's ``Stiefel()``.

``--clock cpu`` times with ``time.thread_time`` (this thread's CPU time) instead of the wall
clock: with ``--threads 1`` every row runs in this thread alone, and on a shared, loaded
machine the CPU time is what stays comparable between rows (preemption by other processes
is not counted; their cache pressure still is).

Three more show where spectra's time goes: ``spectra RSGD/RAdam polar, torch eigh`` is the step
with the core's ``eigh`` replaced by a bare ``torch.linalg.eigh`` (through
``spectra.core.baselines``): the step's own overhead, i.e. what it costs once the core's
single-small-matrix path is as short as torch's; ``core eigh 5x5`` and ``torch eigh 5x5``
time that one call alone.
"""

from __future__ import annotations

import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch

from benchmarks._timing import bench_main, rotating_rounds
from benchmarks.bench_kernels import paired

N, P = 50, 5


def _geoopt() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import geoopt
    return geoopt


def _stepper(
    make: Callable[[], tuple[torch.Tensor, Any]], grad: torch.Tensor
) -> Callable[[], None]:
    param, opt = make()

    def step() -> None:
        param.grad = grad
        opt.step()

    return step


def _impls(dtype: torch.dtype) -> dict[str, Callable[[], None]]:
    from spectra.core import baselines
    from spectra.stiefel import RiemannianAdam, RiemannianSGD, Stiefel, StiefelParameter

    geoopt = _geoopt()
    g = torch.Generator().manual_seed(0)
    x0 = Stiefel().random(N, P, dtype=dtype, generator=g)
    grad = torch.randn(N, P, dtype=dtype, generator=g)

    def ours(opt_cls: Any, manifold: Any, **kw: Any) -> Callable[[], tuple[torch.Tensor, Any]]:
        def make() -> tuple[torch.Tensor, Any]:
            p = StiefelParameter(x0.clone(), manifold=manifold)
            return p, opt_cls([p], lr=1e-3, **kw)

        return make

    def theirs(opt_cls: Any, manifold: Any) -> Callable[[], tuple[torch.Tensor, Any]]:
        def make() -> tuple[torch.Tensor, Any]:
            p = geoopt.ManifoldParameter(x0.clone(), manifold=manifold)
            return p, opt_cls([p], lr=1e-3)

        return make

    impls = {
        "spectra RSGD polar": ours(RiemannianSGD, Stiefel("polar")),
        "spectra RSGD qr": ours(RiemannianSGD, Stiefel("qr")),
        "spectra RAdam polar": ours(RiemannianAdam, Stiefel("polar")),
        "spectra RSGD canonical": ours(RiemannianSGD, Stiefel(metric="canonical")),
        "geoopt RSGD EuclideanStiefel": theirs(
            geoopt.optim.RiemannianSGD, geoopt.EuclideanStiefel()
        ),
        "geoopt RAdam EuclideanStiefel": theirs(
            geoopt.optim.RiemannianAdam, geoopt.EuclideanStiefel()
        ),
        "geoopt RSGD Stiefel": theirs(geoopt.optim.RiemannianSGD, geoopt.Stiefel()),
    }
    out = {name: _stepper(make, grad) for name, make in impls.items()}

    import spectra.stiefel._polar as polar_module

    def with_torch_eigh(step: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:  # the same step with a zero-overhead core eigh
            real = polar_module.eigh
            polar_module.eigh = lambda a, **_: baselines.torch_batched(a)  # type: ignore[assignment]
            try:
                step()
            finally:
                polar_module.eigh = real

        return run

    out["spectra RSGD polar, torch eigh"] = with_torch_eigh(
        _stepper(ours(RiemannianSGD, Stiefel("polar")), grad)
    )
    out["spectra RAdam polar, torch eigh"] = with_torch_eigh(
        _stepper(ours(RiemannianAdam, Stiefel("polar")), grad)
    )
    import spectra

    y = x0 + 1e-3 * grad
    gram = y.mT @ y
    out["core eigh 5x5"] = lambda: spectra.eigh(gram, check=False)
    out["torch eigh 5x5"] = lambda: baselines.torch_batched(gram)
    return out


ROWS = [  # (row, spectra, geoopt)
    ("RSGD polar", "spectra RSGD polar", "geoopt RSGD EuclideanStiefel"),
    ("RSGD qr", "spectra RSGD qr", "geoopt RSGD EuclideanStiefel"),
    ("RAdam polar", "spectra RAdam polar", "geoopt RAdam EuclideanStiefel"),
    ("RSGD canonical (cayley)", "spectra RSGD canonical", "geoopt RSGD Stiefel"),
    (
        "RSGD polar, core eigh -> torch eigh",
        "spectra RSGD polar, torch eigh",
        "geoopt RSGD EuclideanStiefel",
    ),
    (
        "RAdam polar, core eigh -> torch eigh",
        "spectra RAdam polar, torch eigh",
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
    steps = steps or (50 if quick else 200)
    impls = _impls(getattr(torch, dtype))
    for fn in impls.values():  # warm up: imports, plans, kernels
        for _ in range(20):
            fn()
    now = time.thread_time if clock == "cpu" else time.perf_counter
    times = rotating_rounds(impls, rounds, steps, now)
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
            f"{r['row']:38s} spectra {s['median']:7.1f} [{s['q1']:.1f}, {s['q3']:.1f}]  "
            f"{r['peer']:30s} {p['median']:7.1f} [{p['q1']:.1f}, {p['q3']:.1f}]  "
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
