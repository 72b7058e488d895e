"""Benchmark: the first BatchPCA fit of a new process against a loop of sklearn's PCA (issue 26).

    .venv/bin/python -m benchmarks.bench_pca_first_fit [--quick] [--rounds R] [--cold]
                                                       [--json FILE]

Every measurement is a fresh ``python -c`` process, spectra's and sklearn's alternating
(the order rotating from round to round). Inside each child: the imports (numpy, torch and
``spectra.pca``; or ``sklearn.decomposition``), the first fit (``BatchPCA(k).fit(X)``; a
loop of ``PCA(k, svd_solver="full").fit`` over the datasets), then the same fit again
(warm). The parent also times the whole child (interpreter start included). Rows: the
issue's 200 datasets of 40 x 64 float64 (k = 10: the Gram route, eigh of 40 x 40), and
200 of 40 x 24 (the covariance route, eigh of 24 x 24: a size the core gives a numba
kernel), whose first fit shows what a kernel costs a new process; for it one more child
profiles the first fit and reports where the time goes (module, function, cumulative ms;
cProfile sees the calling thread only, and the core may run a block in its worker thread).

numba's on-disk cache: "warm" when ``spectra/core/_solvers/_kernels/__pycache__`` holds ``.nbi``
index files (the usual state after any earlier run); ``--cold`` adds one run of the kernel
row with ``NUMBA_CACHE_DIR`` pointed at an empty folder (a fresh install: compiles).
The machine is shared: ``os.getloadavg()`` before and after is in the JSON.
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
CASES = [
    # name, B, N, D, k
    ("issue: 200x40x64 k=10 (Gram route)", 200, 40, 64, 10),
    ("kernel size: 200x40x24 k=10 (covariance route, numba)", 200, 40, 24, 10),
]

SPECTRA = """
import time, sys, json
t0 = time.perf_counter()
import numpy as np, torch
ta = time.perf_counter()
import spectra
tb = time.perf_counter()
from spectra.pca import BatchPCA
t1 = time.perf_counter()
X = np.random.default_rng(0).normal(size=({b}, {n}, {d}))
t2 = time.perf_counter()
m = BatchPCA({k}).fit(X)
t3 = time.perf_counter()
BatchPCA({k}).fit(X)
t4 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "first": t3 - t2, "warm": t4 - t3,
                  "import_numpy_torch": ta - t0, "import_spectra_core": tb - ta,
                  "import_spectra_pca": t1 - tb,
                  "sklearn_imported_by_pca": "sklearn" in sys.modules,
                  "numba_loaded": "numba" in sys.modules, "route": m.plan_.route,
                  "svd_datasets": len(m.plan_.svd_datasets)}}))
"""

SKLEARN = """
import time, json
t0 = time.perf_counter()
import numpy as np
from sklearn.decomposition import PCA
t1 = time.perf_counter()
X = np.random.default_rng(0).normal(size=({b}, {n}, {d}))
t2 = time.perf_counter()
for x in X:
    PCA({k}, svd_solver="full").fit(x)
t3 = time.perf_counter()
for x in X:
    PCA({k}, svd_solver="full").fit(x)
t4 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "first": t3 - t2, "warm": t4 - t3}}))
"""

PROFILE = """
import cProfile, pstats, json, time
import numpy as np, torch
from spectra.pca import BatchPCA
X = np.random.default_rng(0).normal(size=({b}, {n}, {d}))
pr = cProfile.Profile()
t0 = time.perf_counter()
pr.enable()
BatchPCA({k}).fit(X)
pr.disable()
total = time.perf_counter() - t0


def short(f):
    for mark in ("site-packages/", "/work/main/", "lib/python3"):
        if mark in f:
            return f.split(mark, 1)[1]
    return f


rows = []
for (f, line, fn), v in pstats.Stats(pr).stats.items():
    ours = "spectra/" in f and "spectra/pca/" not in f
    imports = fn == "<module>"
    dispatch = "numba/core/dispatcher.py" in f and fn in ("_compile_for_args", "compile")
    if (ours or imports or dispatch) and v[3] >= 0.005:
        rows.append((short(f) + ":" + str(line) + "(" + fn + ")", round(v[3] * 1e3, 1)))
rows.sort(key=lambda r: -r[1])
print(json.dumps({{"first_fit_profiled_ms": round(total * 1e3, 1), "cumulative_ms": rows[:25]}}))
"""


def _child(code: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out["process"] = time.perf_counter() - t0
    return out


def _summary(values: list[float]) -> dict[str, float]:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return {"median": statistics.median(values), "q1": q[0], "q3": q[2]}


def numba_cache_state() -> str:
    cache = ROOT / "spectra" / "core" / "_kernels" / "__pycache__"
    n = len(list(cache.glob("*.nbi"))) if cache.exists() else 0
    where = os.environ.get("NUMBA_CACHE_DIR", "the default (next to the sources)")
    return f"{'warm' if n else 'cold'}: {n} .nbi index files in {cache}; NUMBA_CACHE_DIR {where}"


def run(rounds: int, quick: bool, cold: bool) -> dict[str, Any]:
    git = ["git", "-C", str(ROOT)]
    out: dict[str, Any] = {
        "commit": subprocess.run(
            [*git, "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "uncommitted_in_spectra": subprocess.run(
            [*git, "status", "--porcelain", "spectra"], capture_output=True, text=True
        ).stdout.split("\n")[:-1],
        "loadavg_before": os.getloadavg(),
        "numba_cache": numba_cache_state(),
        "python": sys.version.split()[0],
        "rounds": rounds,
        "rows": [],
    }
    cases = CASES[:1] if quick else CASES
    for name, b, n, d, k in cases:
        sides = {
            "spectra": SPECTRA.format(b=b, n=n, d=d, k=k),
            "sklearn": SKLEARN.format(b=b, n=n, d=d, k=k),
        }
        runs: dict[str, list[dict[str, Any]]] = {s: [] for s in sides}
        names = list(sides)
        for r in range(rounds):
            for side in names[r % 2 :] + names[: r % 2]:
                runs[side].append(_child(sides[side]))
        row: dict[str, Any] = {"case": name, "B": b, "N": n, "D": d, "k": k, "runs": runs}
        for side, rs in runs.items():
            keys = [key for key, v in rs[0].items() if isinstance(v, float)]
            row[side] = {key: _summary([float(x[key]) for x in rs]) for key in keys}
        row["spectra_info"] = {
            key: runs["spectra"][0][key]
            for key in ("numba_loaded", "route", "svd_datasets", "sklearn_imported_by_pca")
        }
        row["first_fit_ratio_sklearn_over_spectra"] = (
            row["sklearn"]["first"]["median"] / row["spectra"]["first"]["median"]
        )
        row["process_ratio_sklearn_over_spectra"] = (
            row["sklearn"]["process"]["median"] / row["spectra"]["process"]["median"]
        )
        if row["spectra_info"]["numba_loaded"]:
            row["profile_first_fit"] = _child(PROFILE.format(b=b, n=n, d=d, k=k))
            if cold:
                with tempfile.TemporaryDirectory() as tmp:
                    env = {**os.environ, "NUMBA_CACHE_DIR": tmp}
                    row["cold_numba_cache"] = _child(sides["spectra"], env)
        out["rows"].append(row)
        print(_line(row), flush=True)
    out["loadavg_after"] = os.getloadavg()
    return out


def _line(row: dict[str, Any]) -> str:
    s, k = row["spectra"], row["sklearn"]
    text = (
        f"{row['case']}: first fit spectra {s['first']['median']:.3f} s "
        f"[{s['first']['q1']:.3f}, {s['first']['q3']:.3f}] vs sklearn loop "
        f"{k['first']['median']:.3f} s [{k['first']['q1']:.3f}, {k['first']['q3']:.3f}] "
        f"({row['first_fit_ratio_sklearn_over_spectra']:.2f}x); warm {s['warm']['median']:.3f} "
        f"vs {k['warm']['median']:.3f}; imports {s['import']['median']:.2f} vs "
        f"{k['import']['median']:.2f} (spectra: numpy+torch "
        f"{s['import_numpy_torch']['median']:.2f}, spectra core "
        f"{s['import_spectra_core']['median']:.2f}, spectra.pca "
        f"{s['import_spectra_pca']['median']:.2f} with sklearn); "
        f"whole process {s['process']['median']:.2f} vs "
        f"{k['process']['median']:.2f} s; numba loaded: {row['spectra_info']['numba_loaded']}"
    )
    if "profile_first_fit" in row:
        prof = row["profile_first_fit"]
        text += f"\n  first fit under cProfile: {prof['first_fit_profiled_ms']} ms; cumulative ms:"
        text += "".join(f"\n    {ms:8.1f}  {where}" for where, ms in prof["cumulative_ms"][:14])
    if "cold_numba_cache" in row:
        text += f"\n  cold numba cache: first fit {row['cold_numba_cache']['first']:.1f} s"
    return text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the issue's row only")
    parser.add_argument("--rounds", type=int, default=5, help="fresh processes per side")
    parser.add_argument("--cold", action="store_true", help="one run with an empty numba cache")
    parser.add_argument("--json", help="write the results to this JSON file")
    args = parser.parse_args(argv)
    out = run(args.rounds, args.quick, args.cold)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
