"""Benchmark: the fixed cost of one call, spectra against the torch call it replaces.

    .venv/bin/python -m benchmarks.bench_overhead [--quick] [--clock wall|cpu] [--json FILE]

Rows (issue 26), each timed in rounds that alternate the two sides (the order rotating per
round), reporting per-call medians with their quartiles and the paired ratio
``spectra / torch`` (the median of the same-round ratios; below 1: spectra is faster):

- ``eigh n``: one ``n x n`` matrix, ``spectra.eigh`` vs ``torch.linalg.eigh``, for
  n = 2 .. 64, float64, float32, complex128 and complex64 (the direct path);
- ``eigh B x n``: a handful of matrices in one call (4, 16 and 64 of 8x8), the same pair;
- ``eigh n, workers=1``: one matrix with an execution option that plans it as the default
  call (8x8 float64, 40x40 complex128), against ``torch.linalg.eigh``;
- ``eigh(a, b) n``: one generalized pair (n = 8, 32, 64 float64; ``b`` Hermitian to
  rounding), against torch's reduction (``baselines.generalized_reduction``: Cholesky, two
  triangular solves, ``eigh``, one more solve), SciPy's ``eigh(a, b)`` (``?sygvd``) timed
  beside them;
- ``fwd+bwd n``: one ``n x n`` float64 (n = 3, 5, 8, 16, 32), ``w.sum() + v.sum()`` forward
  and backward, against ``torch.linalg.eigh``'s; and float32, complex128, complex64 at
  n = 3, 8 (complex: ``w.sum() + (|v|^2 weights).sum()``, phase free);
- ``fwd+bwd B x n``: the same on a batch, 4,096 x 16x16, 1,024 x 32x32, 64 x 128x128 and
  8 x 512x512 float64, on the wall clock whatever ``--clock`` says (``--only backward``
  runs just the forward + backward rows);
- ``eigh n after a pause``: one matrix per call, each call timed alone after a 0.12 s
  pause (a program that solves one matrix now and then; n = 8 and 28, float64 and
  complex128): a call that opens an OpenMP team then may wait milliseconds for it;
- ``first call``: a new process's first ``eigh`` of 200 x 40x40 float64 against torch's
  first call on the same input (wall time, subprocesses, a few repeats).

``--clock cpu`` uses ``time.thread_time`` (this thread's CPU time), steadier on a shared
machine. Both sides run in this thread with torch's default threads, as a user calls them.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import torch

import spectra
from benchmarks._timing import rotating_rounds
from spectra.core import baselines

FIRST_CALL = """
import time, torch
t0 = time.perf_counter()
import spectra
from spectra.core import baselines

from benchmarks._timing import rotating_rounds
a = torch.randn(200, 40, 40, dtype=torch.float64)
a = a + a.mT
t1 = time.perf_counter()
{call}
t2 = time.perf_counter()
print(t2 - t1, t1 - t0)
"""


def _paired(
    fns: Mapping[str, Callable[..., Any]],
    rounds: int,
    calls: int,
    clock: Callable[[], float],
    warmup: int = 3,
    settle: float = 0.0,
) -> dict[str, Any]:
    names = list(fns)
    for f in fns.values():  # warm-up
        for _ in range(warmup):
            f()
    times = rotating_rounds({k: fns[k] for k in names}, rounds, calls, clock, settle)
    ratios = [s / t for s, t in zip(times["spectra"], times["torch"], strict=True)]
    out: dict[str, Any] = {}
    for k in names:
        q = statistics.quantiles(times[k], n=4)
        out[k] = {"median_us": 1e6 * statistics.median(times[k]), "q1_us": 1e6 * q[0],
                  "q3_us": 1e6 * q[2], "repeats_us": [1e6 * t for t in times[k]]}  # fmt: skip
    q = statistics.quantiles(ratios, n=4)
    out["ratio"] = {"median": statistics.median(ratios), "q1": q[0], "q3": q[2]}
    return out


def _first_call(call: str, repeats: int) -> list[float]:
    seconds = []
    for _ in range(repeats):
        code = FIRST_CALL.format(call=call)
        out = subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True
        ).stdout.split()
        seconds.append(float(out[0]))
    return seconds


#: one matrix per call after a pause (n, dtype), and the pause in seconds
IDLE = ((8, torch.float64), (28, torch.float64), (28, torch.complex128))
IDLE_PAUSE = 0.12


def _idle_rows(rounds: int, clock: Callable[[], float]) -> list[dict[str, Any]]:
    """The ``eigh n after a pause`` rows: every call timed alone after :data:`IDLE_PAUSE`
    seconds of sleep, the sides rotating by round (wall time)."""
    rows: list[dict[str, Any]] = []
    for n, dtype in IDLE:
        a = torch.randn(n, n, dtype=dtype)
        a = a + a.mH
        fns = {
            "spectra": lambda a=a: spectra.eigh(a),
            "torch": lambda a=a: baselines.torch_batched(a),
        }
        row = {"row": f"eigh {n} after a pause", "dtype": str(dtype)[6:], "clock": "wall"}
        rows.append({**row, **_paired(fns, rounds, 1, clock, settle=IDLE_PAUSE)})
        print(_line(rows[-1]), flush=True)
    return rows


#: a handful of small matrices in one call (batch, n): the direct path's batches
FEW = ((4, 8), (16, 8), (64, 8))
#: one matrix with an execution option (n, dtype), and one generalized pair (n, float64)
WITH_OPTIONS = ((8, torch.float64), (40, torch.complex128))
PAIRS = (8, 32, 64)


def _option_and_pair_rows(
    rounds: int, calls: int, tick: Callable[[], float]
) -> list[dict[str, Any]]:
    """The ``eigh n, workers=1`` and ``eigh(a, b) n`` rows."""
    import scipy.linalg

    rows: list[dict[str, Any]] = []
    for n, dtype in WITH_OPTIONS:
        a = torch.randn(n, n, dtype=dtype)
        a = a + a.mH
        fns = {
            "spectra": lambda a=a: spectra.eigh(a, workers=1),
            "torch": lambda a=a: baselines.torch_batched(a),
        }
        per = max(10, calls // max(1, n // 8))
        rows.append(
            {
                "row": f"eigh {n}, workers=1",
                "dtype": str(dtype)[6:],
                **_paired(fns, rounds, per, tick),
            }
        )
        print(_line(rows[-1]), flush=True)
    for n in PAIRS:
        a = torch.randn(n, n, dtype=torch.float64)
        a = a + a.mT
        m = torch.randn(n, n, dtype=torch.float64)
        b = m @ m.mT + n * torch.eye(n, dtype=torch.float64)
        sides: dict[str, Callable[[], Any]] = {
            "spectra": partial(spectra.eigh, a, b),
            "torch": partial(baselines.generalized_reduction, a, b),
            "scipy": partial(scipy.linalg.eigh, a.numpy(), b.numpy()),
        }
        per = max(10, calls // max(1, n // 8))
        rows.append(
            {"row": f"eigh(a, b) {n}", "dtype": "float64", **_paired(sides, rounds, per, tick)}
        )
        print(_line(rows[-1]) + f"  scipy {rows[-1]['scipy']['median_us']:.1f} us", flush=True)
    return rows


def run(quick: bool = False, clock: str = "wall") -> list[dict[str, Any]]:
    tick = time.thread_time if clock == "cpu" else time.perf_counter
    rounds, calls = (9, 100) if quick else (21, 200)
    rows: list[dict[str, Any]] = []
    sizes = (2, 3, 8, 16, 32, 64) if quick else (2, 3, 5, 8, 16, 32, 50, 64, 128)
    dtypes = (
        (torch.float64,)
        if quick
        else (torch.float64, torch.float32, torch.complex128, torch.complex64)
    )
    for dtype in dtypes:
        for n in sizes:
            a = torch.randn(n, n, dtype=dtype)
            a = a + a.mH
            fns = {
                "spectra": lambda a=a: spectra.eigh(a),
                "torch": lambda a=a: baselines.torch_batched(a),
            }
            per = max(10, calls // max(1, n // 8))
            rows.append(
                {"row": f"eigh {n}", "dtype": str(dtype)[6:], **_paired(fns, rounds, per, tick)}
            )
            print(_line(rows[-1]), flush=True)
    for dtype in dtypes:  # a handful of matrices: the direct path's batch
        for batch, n in FEW:
            a = torch.randn(batch, n, n, dtype=dtype)
            a = a + a.mH
            fns = {
                "spectra": lambda a=a: spectra.eigh(a),
                "torch": lambda a=a: baselines.torch_batched(a),
            }
            per = max(10, calls // batch)
            rows.append(
                {
                    "row": f"eigh {batch} x {n}",
                    "dtype": str(dtype)[6:],
                    **_paired(fns, rounds, per, tick),
                }
            )
            print(_line(rows[-1]), flush=True)
    rows += _option_and_pair_rows(rounds, calls, tick)
    rows += _idle_rows(5 if quick else 11, time.perf_counter)
    rows += backward_rows(quick, tick)
    repeats = 3 if quick else 7
    spectra_first = _first_call("spectra.eigh(a)", repeats)
    torch_first = _first_call("baselines.torch_batched(a)", repeats)
    s_med, t_med = statistics.median(spectra_first), statistics.median(torch_first)
    rows.append(
        {
            "row": "first call 200 x 40x40",
            "dtype": "float64",
            "spectra": {"median_us": 1e6 * s_med, "repeats_s": spectra_first},
            "torch": {"median_us": 1e6 * t_med, "repeats_s": torch_first},
            "extra_ms": 1e3 * (s_med - t_med),
        }
    )
    print(_line(rows[-1]), flush=True)
    return rows


def _fwd_bwd(x0: torch.Tensor, solve: Callable[[torch.Tensor], Any]) -> Callable[[], None]:
    """One forward + backward of ``w.sum() + v.sum()`` (complex: ``w.sum() +
    (|v|^2 weights).sum()``, a phase-free loss, which torch's backward accepts)."""
    n = x0.shape[-1]
    weights = torch.arange(n * n, dtype=x0.real.dtype).reshape(n, n) / (n * n)

    def step() -> None:
        x = x0.clone().requires_grad_(True)
        w, v = solve(x)
        (w.sum() + v.sum()).backward()

    def step_complex() -> None:
        x = x0.clone().requires_grad_(True)
        w, v = solve(x)
        (w.sum() + (v.abs().square() * weights).sum()).backward()

    return step_complex if x0.is_complex() else step


def _sides(x0: torch.Tensor) -> dict[str, Callable[[], None]]:
    return {"spectra": _fwd_bwd(x0, spectra.eigh), "torch": _fwd_bwd(x0, baselines.torch_batched)}


#: the batched forward + backward rows: (batch, n) float64
BATCHED_BACKWARD = ((4096, 16), (1024, 32), (64, 128), (8, 512))


def _backward_before() -> Any | None:
    """Another spectra checkout, loaded as ``spectra_before`` from the directory that
    ``$SPECTRA_BEFORE`` names (the one holding its ``spectra/``, e.g. from ``git archive
    <commit> spectra | tar -x -C DIR``): a third side of the one-matrix backward rows, so
    that a before/after pair is timed in the same rounds; ``None`` without it."""
    import importlib.util
    import os

    root = os.environ.get("SPECTRA_BEFORE")
    if not root:
        return None
    if "spectra_before" in sys.modules:
        return sys.modules["spectra_before"]
    package = os.path.join(root, "spectra")
    spec = importlib.util.spec_from_file_location(
        "spectra_before", os.path.join(package, "__init__.py"), submodule_search_locations=[package]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["spectra_before"] = module
    spec.loader.exec_module(module)
    return module


def backward_rows(quick: bool, tick: Callable[[], float]) -> list[dict[str, Any]]:
    """Forward + backward of ``w.sum() + v.sum()``, spectra against torch.linalg.eigh, on
    one small matrix and on the batches of :data:`BATCHED_BACKWARD` (interleaved rounds);
    with ``$SPECTRA_BEFORE`` (:func:`_backward_before`) the one-matrix rows time that
    checkout too, in the same rounds (``before``, ``before_ratio``: before / torch)."""
    rounds, calls = (9, 100) if quick else (21, 200)
    rows: list[dict[str, Any]] = []
    before = _backward_before()
    for n in (5, 16) if quick else (3, 5, 8, 16, 32):
        x0 = torch.randn(n, n, dtype=torch.float64)
        x0 = x0 + x0.mT
        fns = _sides(x0)
        if before is not None:
            fns["before"] = _fwd_bwd(x0, before.eigh)
        per = max(10, calls // 2 // max(1, n // 8))
        rows.append({"row": f"fwd+bwd {n}", "dtype": "float64", **_paired(fns, rounds, per, tick)})
        line = _line(rows[-1])
        if before is not None:
            pairs = zip(
                rows[-1]["before"]["repeats_us"], rows[-1]["torch"]["repeats_us"], strict=True
            )
            ratios = [b / t for b, t in pairs]
            q = statistics.quantiles(ratios, n=4)
            rows[-1]["before_ratio"] = {"median": statistics.median(ratios), "q1": q[0], "q3": q[2]}
            line += f"  (before {statistics.median(ratios):.2f}x [{q[0]:.2f}, {q[2]:.2f}])"
        print(line, flush=True)
    for dtype in () if quick else (torch.float32, torch.complex128, torch.complex64):
        for n in (3, 8):
            x0 = torch.randn(n, n, dtype=dtype)
            x0 = x0 + x0.mH
            per = max(10, calls // 2)
            name = str(dtype)[6:]
            rows.append(
                {"row": f"fwd+bwd {n}", "dtype": name, **_paired(_sides(x0), rounds, per, tick)}
            )
            print(_line(rows[-1]), flush=True)
    for batch, n in BATCHED_BACKWARD[:2] if quick else BATCHED_BACKWARD:
        x0 = torch.randn(batch, n, n, dtype=torch.float64)
        x0 = x0 + x0.mT
        fns = _sides(x0)
        # wall time always: spectra's forward fans the batch out over threads
        row = {"row": f"fwd+bwd {batch} x {n}", "dtype": "float64", "clock": "wall"}
        rows.append({**row, **_paired(fns, 5 if quick else 9, 1, time.perf_counter, warmup=1)})
        print(_line(rows[-1]), flush=True)
    return rows


def _line(row: dict[str, Any]) -> str:
    s, t = row["spectra"]["median_us"], row["torch"]["median_us"]
    tail = (
        f"ratio {row['ratio']['median']:.2f}x [{row['ratio']['q1']:.2f}, {row['ratio']['q3']:.2f}]"
        if "ratio" in row
        else f"+{row['extra_ms']:.0f} ms"
    )
    return f"{row['row']:24s} {row['dtype']:10s} spectra {s:9.1f} us  torch {t:9.1f} us  {tail}"


def main(argv: list[str] | None = None) -> None:
    import argparse
    import json
    import os
    import platform

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--json")
    parser.add_argument("--only", choices=("backward",), help="run only these rows")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    if args.only == "backward":
        tick = time.thread_time if args.clock == "cpu" else time.perf_counter
        rows = backward_rows(args.quick, tick)
    else:
        rows = run(quick=args.quick, clock=args.clock)
    if args.json:
        meta = {
            "command": "python -m benchmarks.bench_overhead " + " ".join(argv or sys.argv[1:]),
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "torch": torch.__version__,
            "python": platform.python_version(),
            "load_before": load,
            "load_after": os.getloadavg(),
        }
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "rows": rows}, fh, indent=2)


if __name__ == "__main__":
    main()
