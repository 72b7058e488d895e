"""The shift-invert factor's fill estimate against SuperLU's real fill (issue 28).

For each graph (normalized Laplacians; the random geometric graphs are ``bench_sparse``'s,
the other families ``tests/core/test_sparse_fill.py``'s): the previous estimate (the RCM
profile), the current one (:func:`spectra.core._sparse._factor.estimate`: exact minimum
degree fill, or the profile where it refuses without ordering), its seconds, and SciPy's
``splu(L + 1e-3 I, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0, SymmetricMode)`` fill
(``L.nnz``, ``U.nnz``) and seconds, called as a SciPy user would (its own ordering)::

    python benchmarks/bench_fill.py --out benchmarks/results/fill-2026-12-02b.json \\
        rgg-20k rgg-200k grid-300x300 ba-2000-m4 ba-20000-m5 expander-3000 expander-20000 \\
        disconnected-2140 rgg-1m
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import scipy.sparse as sp
import scipy.sparse.linalg as sla

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent))
from bench_sparse import rgg_laplacian  # noqa: E402

from spectra.core._sparse import _factor, _plan  # noqa: E402
from tests.core.sparse_helpers import grid, normalized_laplacian  # noqa: E402
from tests.core.test_sparse_fill import _barabasi_albert, _disconnected, _expander  # noqa: E402

GRAPHS: dict[str, Callable[[], Any]] = {
    "rgg-20k": lambda: rgg_laplacian(20_000),
    "rgg-200k": lambda: rgg_laplacian(200_000),
    "rgg-1m": lambda: rgg_laplacian(1_000_000),
    "grid-300x300": lambda: normalized_laplacian(grid(300, 300)),
    "ba-2000-m4": lambda: normalized_laplacian(_barabasi_albert(2000, 4, 53)),
    "ba-20000-m5": lambda: normalized_laplacian(_barabasi_albert(20000, 5, 61)),
    "expander-3000": lambda: normalized_laplacian(_expander(3000, 40)),
    "expander-20000": lambda: normalized_laplacian(_expander(20000, 60)),
    "disconnected-2140": lambda: normalized_laplacian(_disconnected()),
}


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def row(name: str) -> dict[str, Any]:
    lap = GRAPHS[name]().tocsr()
    n = lap.shape[0]
    _factor._ORDERED.items.clear()  # the estimate's own cost, not a cached ordering
    prof, t_prof = _timed(lambda: _factor.profile(lap))
    est, t_est = _timed(lambda: _factor.estimate(lap, refuse_above=_plan.FILL_CAP))
    out: dict[str, Any] = {
        "graph": name,
        "n": n,
        "nnz": int(lap.nnz),
        "profile_previous_estimate": prof,
        "profile_seconds": t_prof,
        "estimate": est.fill,
        "estimate_exact": est.exact,
        "work": est.flops,
        "estimate_seconds": t_est,
        "load_average_before_splu": os.getloadavg(),
    }
    if est.exact:  # the refused ones fill densely: minutes of SuperLU
        a = (lap + 1e-3 * sp.identity(n)).tocsc()
        lu, t_lu = _timed(
            lambda: sla.splu(
                a,
                permc_spec="MMD_AT_PLUS_A",
                diag_pivot_thresh=0.0,
                options={"SymmetricMode": True},
            )
        )
        out.update(splu_L_nnz=int(lu.L.nnz), splu_U_nnz=int(lu.U.nnz), splu_seconds=t_lu)
    print(json.dumps(out), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graphs", nargs="+", choices=sorted(GRAPHS))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    _factor.estimate(sp.identity(3, format="csr"))  # numba's compilation or cache load
    result = {
        "benchmark": "bench_fill",
        "command": "python benchmarks/bench_fill.py " + " ".join(sys.argv[1:]),
        "cpus": os.cpu_count(),
        "note": "2-core machine shared with other sessions: see the load averages",
        "load_average_before": os.getloadavg(),
        "rows": [row(name) for name in args.graphs],
        "load_average_after": os.getloadavg(),
    }
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
