"""The core benchmark behind ``spectra bench``: spectra.eigh against what a user would write.

Peers, timed in the same run: a Python loop of ``torch.linalg.eigh``, torch batched (default
threads), torch batched with one thread, NumPy batched, a SciPy loop (CPU); on CUDA the
loop and the batched call on the device. Medians of repeats; ratios are peer / spectra.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.linalg
import torch

from ._eigh import eigh
from ._plan import plan
from ._samples import random_hermitian

SIZES: tuple[tuple[int, int], ...] = ((8, 16384), (32, 4096), (64, 1024), (128, 256), (512, 8))
_PAUSE_S = 0.2
CPU_PEERS = ("torch batched", "torch 1-thread", "numpy batched", "scipy loop")


def _interleaved_medians(
    fns: dict[str, Callable[[], Any]],
    repeats: int,
    device: str,
    budget_s: float,
    pause_s: float = _PAUSE_S,
) -> dict[str, float]:
    """Median wall time of each function, timed round-robin.

    On a shared machine the speed drifts over seconds; timing the implementations in
    turn, repeat by repeat, exposes all of them to the same drift, so ratios stay honest.
    """

    def once(fn: Callable[[], Any]) -> float:
        # BLAS/OpenMP pools spin after a call (OpenBLAS ~0.1 s); a pause keeps one
        # implementation's spinning threads from slowing the next one down
        time.sleep(pause_s)
        t0 = time.perf_counter()
        fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return time.perf_counter() - t0

    first = {k: once(fn) for k, fn in fns.items()}  # warm-up, and the cost of one round
    rounds = max(1, min(repeats, int(budget_s * len(fns) / max(sum(first.values()), 1e-6))))
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            times[k].append(once(fn))
    return {k: statistics.median(v) for k, v in times.items()}


def _one_thread(fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        old = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return fn()
        finally:
            torch.set_num_threads(old)

    return run


#: Python loops are timed on at most this many matrices and scaled to the batch (they are
#: linear in the batch size; timing 16384 CUDA calls would dominate the run).
LOOP_SAMPLE = {"cpu": 2048, "cuda": 256}


def _peers(
    a: torch.Tensor, device: str, loop_sample: int
) -> dict[str, tuple[Callable[[], Any], float]]:
    """Each peer with the factor that scales its measured time to the whole batch."""
    m = min(len(a), loop_sample)
    scale = len(a) / max(m, 1)
    sub = a[:m]
    peers: dict[str, tuple[Callable[[], Any], float]] = {
        "torch loop": (lambda: [torch.linalg.eigh(x) for x in sub], scale),
        "torch batched": (lambda: torch.linalg.eigh(a), 1.0),
    }
    if device == "cpu":
        an, subn = a.numpy(), sub.numpy()
        peers["torch 1-thread"] = (_one_thread(lambda: torch.linalg.eigh(a)), 1.0)
        peers["numpy batched"] = (lambda: np.linalg.eigh(an), 1.0)
        peers["scipy loop"] = (
            lambda: [scipy.linalg.eigh(x, check_finite=False) for x in subn],
            scale,
        )
    return peers


def bench_core(
    device: str = "cpu",
    dtypes: tuple[torch.dtype, ...] = (torch.float32, torch.float64),
    sizes: tuple[tuple[int, int], ...] = SIZES,
    repeats: int = 7,
    budget_s: float = 3.0,
    progress: Callable[[str], None] | None = None,
    loop_sample: int | None = None,
    pause_s: float = _PAUSE_S,
) -> list[dict[str, Any]]:
    """Time spectra.eigh and its peers for every (n, batch, dtype); one row each.

    The chunked run gets a budget of ``batch // 8`` matrices, but at least one per worker
    (a budget of one matrix would forbid using more than one core).
    """
    sample = loop_sample or LOOP_SAMPLE["cuda" if device.startswith("cuda") else "cpu"]
    rows = []
    for dtype in dtypes:
        for n, batch in sizes:
            if progress:
                progress(f"n={n} batch={batch} {str(dtype)[6:]}")
            a = random_hermitian((batch,), n, dtype, seed=n).to(device)
            peers = _peers(a, device, sample)
            p = plan(n, batch, dtype, device)
            small = max(batch // 8, p.workers, 1) * p.bytes_per_matrix
            fns = {name: fn for name, (fn, _) in peers.items()}
            fns["spectra"] = lambda a=a: eigh(a)
            fns["spectra chunked"] = lambda a=a, m=small: eigh(a, max_memory=m)
            times = _interleaved_medians(fns, repeats, device, budget_s, pause_s)
            for name, (_, scale) in peers.items():
                times[name] *= scale
            w, _ = eigh(a)
            head = a[: min(batch, 64)].cpu()
            ref = np.stack([scipy.linalg.eigh(m, eigvals_only=True) for m in head.numpy()])
            norm = float(torch.linalg.matrix_norm(head.double(), ord=2).max())
            agree = float(np.abs(w[: len(head)].cpu().numpy() - ref).max()) / norm
            contenders = [
                k for k in (CPU_PEERS if device == "cpu" else ("torch batched",)) if k in times
            ]
            best = min(contenders, key=lambda k: times[k])
            rows.append(
                {
                    "n": n,
                    "batch": batch,
                    "dtype": str(dtype)[6:],
                    "device": device,
                    "strategy": p.strategy,
                    "seconds": times,
                    "best_peer": best,
                    "speedup_vs_best_peer": times[best] / times["spectra"],
                    "speedup": {k: times[k] / times["spectra"] for k in times if k != "spectra"},
                    "loop_over_batched": times["torch loop"] / times["torch batched"],
                    "loops_timed_on": min(batch, sample),
                    "chunked_over_unchunked": times["spectra chunked"] / times["spectra"],
                    "max_eigenvalue_error_vs_scipy": agree,
                }
            )
    return rows


def format_rows(rows: list[dict[str, Any]]) -> str:
    """The benchmark table: medians in ms and spectra's speed-up over each peer."""
    if not rows:
        return ""
    names = list(rows[0]["seconds"])
    head = (
        f"{'dtype':8} {'n':>4} {'batch':>6} "
        + " ".join(f"{k[:14]:>14}" for k in names)
        + f" {'vs best':>8} {'err':>8}"
    )
    lines = ["median ms per call (speed-up of spectra = peer / spectra)", head, "-" * len(head)]
    for r in rows:
        cells = " ".join(f"{1e3 * r['seconds'][k]:14.2f}" for k in names)
        lines.append(
            f"{r['dtype']:8} {r['n']:4d} {r['batch']:6d} {cells} "
            f"{r['speedup_vs_best_peer']:7.2f}x {r['max_eigenvalue_error_vs_scipy']:8.1e}"
        )
    return "\n".join(lines)
