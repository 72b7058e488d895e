"""Benchmark: the first ``spectra.eigh`` of a new process against torch's first call (issue 26).

    .venv/bin/python -m benchmarks.bench_first_call [--rounds R] [--cold-rounds C]
                                                    [--root TREE] [--json FILE]

Every figure is a fresh ``python -c`` process: it imports numpy, torch and spectra, builds
the same seeded float64 batch, and times its first call (``spectra.eigh(a)``, or
``torch.linalg.eigh(a)`` in the peer's process) and a second one. Cases: 1 x 8x8,
200 x 8x8, 200 x 24x24, 200 x 40x40 (the middle two are sizes the core gives a numba kernel).

numba's on-disk cache, two states:

- ``warm``: the usual one (numba's default cache next to the sources, or the
  ``NUMBA_CACHE_DIR`` of the environment), filled before the rounds (``spectra compile``
  where the tree has it, else one forced call per kernel);
- ``empty``: ``NUMBA_CACHE_DIR`` pointed at a new empty folder in each process (a fresh
  install). A background compile the call may start (``SPECTRA_KERNELS``, the default
  ``auto``) is waited for before the next process starts (its lock file), and one more
  process then runs in that folder (``after background``: what the next process of a
  fresh install gets).

Processes alternate torch / spectra, the order rotating by round; medians with quartiles;
``os.getloadavg()`` before and after. ``--root`` imports spectra from another tree (e.g.
``git archive HEAD`` unpacked elsewhere) to measure a commit against the working tree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CASES = [(1, 8), (200, 8), (200, 24), (200, 40)]  # (batch, n), float64

_SETUP = """
import time, sys, json, os
t0 = time.perf_counter()
import numpy as np, torch
{imp}
t1 = time.perf_counter()
a = np.random.default_rng(0).normal(size=({b}, {n}, {n}))
a = torch.from_numpy(a + a.transpose(0, 2, 1))
"""

SPECTRA = (
    _SETUP.replace("{imp}", "import spectra")
    + """
t2 = time.perf_counter()
w, v = spectra.eigh(a)
t3 = time.perf_counter()
numba_first = "numba" in sys.modules
spectra.eigh(a)
t4 = time.perf_counter()
out = {{"import": t1 - t0, "first": t3 - t2, "second": t4 - t3,
        "numba_loaded_by_first": numba_first, "numba_loaded_by_second": "numba" in sys.modules}}
p = spectra.plan({n}, {b}, torch.float64)
out["plan_now"] = p.strategy
out["plan_why"] = list(p.reasons)
try:
    from spectra.core._solvers._kernels import _ready
    out["lock"] = str(_ready.lock_path())
except Exception:
    pass
print(json.dumps(out))
"""
)

TORCH = (
    _SETUP.replace("{imp}", "")
    + """
t2 = time.perf_counter()
torch.linalg.eigh(a)
t3 = time.perf_counter()
torch.linalg.eigh(a)
t4 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "first": t3 - t2, "second": t4 - t3}}))
"""
)

#: fills the cache of a tree without ``spectra compile``: one forced call per kernel
WARM_OLD = """
import torch, spectra
for dt in (torch.float32, torch.float64):
    for n, s in ((2, "closed-form"), (3, "closed-form"), (4, "numba-jacobi"), (8, "numba-ql")):
        a = torch.randn(1100, n, n, dtype=dt)
        for vec in (True, False):
            (spectra.eigh if vec else spectra.eigvalsh)(a + a.mT, strategy=s)
"""


def _env(root: Path, cache: str | None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("NUMBA_CACHE_DIR", None) if cache is None else env.update(NUMBA_CACHE_DIR=cache)
    return env


def _child(code: str, env: dict[str, str]) -> dict[str, Any]:
    t0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=env["PYTHONPATH"],  # "-c" puts the working folder first on sys.path
        capture_output=True,
        text=True,
        check=True,
    )
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out["process"] = time.perf_counter() - t0
    return out


def _wait_for_lock(path: str | None) -> float:
    """Block until a background compile holding ``path`` (an flock) has finished."""
    if not path or not os.path.exists(path):
        return 0.0
    import fcntl

    t0 = time.perf_counter()
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fcntl.flock(fh, fcntl.LOCK_UN)
    return time.perf_counter() - t0


def _summary(values: list[float]) -> dict[str, float]:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return {"median": statistics.median(values), "q1": q[0], "q3": q[2]}


def _warm_cache(root: Path) -> str:
    env = _env(root, os.environ.get("NUMBA_CACHE_DIR"))
    t0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-m", "spectra", "compile"],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
    )
    how = "spectra compile"
    if res.returncode != 0:
        subprocess.run([sys.executable, "-c", WARM_OLD], env=env, cwd=root, check=True)
        how = "one forced call per kernel"
    return f"{how}: {time.perf_counter() - t0:.1f} s"


def run(root: Path, rounds: int, cold_rounds: int) -> dict[str, Any]:
    git = ["git", "-C", str(ROOT)]
    out: dict[str, Any] = {
        "root": str(root),
        "commit": subprocess.run(
            [*git, "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "uncommitted_in_spectra": subprocess.run(
            [*git, "status", "--porcelain", "spectra"], capture_output=True, text=True
        ).stdout.split("\n")[:-1],
        "loadavg_before": os.getloadavg(),
        "python": sys.version.split()[0],
        "spectra_kernels_env": os.environ.get("SPECTRA_KERNELS"),
        "rows": [],
    }
    out["warm_cache_filled_by"] = _warm_cache(root)
    for b, n in CASES:
        torch_code, spectra_code = TORCH.format(b=b, n=n), SPECTRA.format(b=b, n=n)
        runs: dict[str, list[dict[str, Any]]] = {"torch": [], "warm": [], "empty": [], "after": []}
        waits: list[float] = []
        for r in range(max(rounds, cold_rounds)):
            order = ["torch", "warm", "empty"]
            order = order[r % 3 :] + order[: r % 3]
            for side in order:
                if side == "torch" and r < rounds:
                    runs["torch"].append(_child(torch_code, _env(root, None)))
                elif side == "warm" and r < rounds:
                    runs["warm"].append(
                        _child(spectra_code, _env(root, os.environ.get("NUMBA_CACHE_DIR")))
                    )
                elif side == "empty" and r < cold_rounds:
                    with tempfile.TemporaryDirectory() as tmp:
                        runs["empty"].append(_child(spectra_code, _env(root, tmp)))
                        waits.append(_wait_for_lock(runs["empty"][-1].get("lock")))
                        runs["after"].append(_child(spectra_code, _env(root, tmp)))
        row: dict[str, Any] = {"batch": b, "n": n, "runs": runs, "background_waits_s": waits}
        for side, rs in runs.items():
            if rs:
                keys = [k for k, v in rs[0].items() if isinstance(v, float)]
                row[side] = {k: _summary([float(x[k]) for x in rs]) for k in keys}
        out["rows"].append(row)
        print(_line(row), flush=True)
    out["loadavg_after"] = os.getloadavg()
    return out


def _ms(row: dict[str, Any], side: str) -> str:
    if side not in row:
        return "-"
    s = row[side]["first"]
    return f"{1e3 * s['median']:.1f} [{1e3 * s['q1']:.1f}, {1e3 * s['q3']:.1f}]"


def _line(row: dict[str, Any]) -> str:
    plans = {side: row["runs"][side][0].get("plan_now") for side in ("warm", "empty", "after")}
    plans = {k: v for k, v in plans.items() if v}
    return (
        f"{row['batch']} x {row['n']}x{row['n']}: first call ms, torch {_ms(row, 'torch')}; "
        f"spectra warm cache {_ms(row, 'warm')}, empty cache {_ms(row, 'empty')}, "
        f"next process after the background compile {_ms(row, 'after')}; "
        f"plans afterwards {plans}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="processes per side, warm")
    parser.add_argument("--cold-rounds", type=int, default=3, help="processes, empty cache")
    parser.add_argument("--root", type=Path, default=ROOT, help="the spectra tree to import")
    parser.add_argument("--json", help="write the results to this JSON file")
    args = parser.parse_args(argv)
    out = run(args.root.resolve(), args.rounds, args.cold_rounds)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
