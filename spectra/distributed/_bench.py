"""``spectra bench --dask N``: the core's batch on N local Dask workers vs one process.

:func:`run_dask_bench` starts a ``LocalCluster`` of ``N`` single-threaded worker
processes on loopback, sizes a batch of ``n = 64`` float64 matrices to take about 10 s
(about 0.75 s with ``quick``) in one process, and times ``spectra.eigh`` on the whole
array against :func:`spectra.distributed.eigh` over the cluster (data already on the
workers; results either kept there or gathered to the client). Rows report median
seconds and ``ratio = one_process_s / dask_s`` (above 1: the cluster is faster).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from ._compat import require_distributed


@contextlib.contextmanager
def local_client(workers: int, dashboard: bool = False) -> Iterator[Any]:
    """A ``Client`` on a fresh loopback ``LocalCluster`` of ``workers`` 1-thread processes.

    The dashboard (needs ``bokeh``) is served on a free port when ``dashboard`` is set and
    bokeh is installed; ``client.dashboard_link`` says where.
    """
    distributed = require_distributed()
    address = "127.0.0.1:0" if dashboard and _has_bokeh() else None
    cluster = distributed.LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=address,
        silence_logs=logging.ERROR,
    )
    client = distributed.Client(cluster)
    try:
        client.run(__import__, "spectra.distributed")  # workers import torch up front
        yield client
    finally:
        client.close()
        cluster.close()


def _batch(n: int, count: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((count, n, n))
    return 0.5 * (x + x.swapaxes(-1, -2))


def _make_block(n: int, count: int, block_id: Any = None) -> np.ndarray:
    return _batch(n, count, seed=block_id[0])


def _has_bokeh() -> bool:
    try:
        import bokeh  # noqa: F401
    except ImportError:
        return False
    return True


def _median(fn: Any, repeats: int) -> float:
    from statistics import median

    fn()  # warm up (plans, worker imports, pools)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return median(times)


def run_dask_bench(
    workers: int,
    quick: bool = False,
    *,
    n: int = 64,
    target_s: float | None = None,
    device: str = "cpu",
) -> list[dict]:
    """Time one batch on ``workers`` local Dask worker processes vs one process.

    Parameters
    ----------
    workers : number of worker processes (one thread each) of the ``LocalCluster``.
    quick : a ~0.75 s batch and fewer repeats instead of a ~10 s batch.
    n : matrix size (float64).
    target_s : override the one-process time the batch is sized for.
    device : ``"cuda"`` solves each block on the workers' GPU (``device=`` core option).

    Returns
    -------
    list of dict
        One row per timed variant: ``name``, ``n``, ``batch``, ``blocks``, ``workers``,
        ``one_process_s``, ``dask_s``, ``ratio`` (``one_process_s / dask_s``), ``exact``
        (whether the eigenvalues equal the one-process core's bit for bit) and
        ``dashboard`` (the dashboard link, or None without bokeh).
    """
    import dask
    import dask.array as da
    import distributed

    from ..core import eigh as core_eigh
    from ..core.domain import InputError, cpu_count
    from ._eigh import eigh

    if workers < 1:
        raise InputError("workers", f"must be >= 1, got {workers}")
    target = target_s if target_s is not None else (0.75 if quick else 10.0)
    repeats = 2 if quick else 3
    probe = _batch(n, 128, seed=1)
    core_eigh(probe[:4])
    t0 = time.perf_counter()
    core_eigh(probe)
    per_matrix = (time.perf_counter() - t0) / len(probe)
    blocks = 4 * workers
    per_block = max(1, int(target / per_matrix) // blocks)
    count = per_block * blocks
    x = np.concatenate([_batch(n, per_block, seed=i) for i in range(blocks)])
    options: dict[str, Any] = {}
    if device != "cpu":
        options["device"] = device
    one = _median(lambda: core_eigh(x, **options), repeats)
    ref = core_eigh(x, **options).eigenvalues
    # each worker's core fans out over its share of the cores, not all of them
    options["workers"] = max(1, cpu_count() // workers)
    rows = []
    with local_client(workers, dashboard=True) as client:
        # the same matrices, made on the workers (the client's copy never travels)
        xd = da.map_blocks(
            _make_block,
            n,
            per_block,
            chunks=((per_block,) * blocks, n, n),
            dtype=np.float64,
            meta=np.empty((0, 0, 0)),
        )
        xd = client.persist(xd)
        distributed.wait(xd)
        link = client.dashboard_link if client.cluster.dashboard_link and _has_bokeh() else None

        def keep() -> None:
            w, v = client.persist(list(eigh(xd, **options)))
            distributed.wait([w, v])
            del w, v

        def gather() -> Any:
            return dask.compute(*eigh(xd, **options))

        kept = _median(keep, repeats)
        gathered = _median(gather, repeats)
        exact = bool(np.array_equal(gather()[0], ref))
    name = f"eigh n={n} float64 x{count}"
    for variant, seconds in (("results kept on workers", kept), ("results gathered", gathered)):
        rows.append(
            {
                "name": f"{name}, {variant}",
                "n": n,
                "batch": count,
                "blocks": blocks,
                "workers": workers,
                "device": device,
                "one_process_s": one,
                "dask_s": seconds,
                "ratio": one / seconds,
                "exact": exact,
                "dashboard": link,
            }
        )
    return rows


def format_rows(rows: list[dict]) -> str:
    """A readable table of :func:`run_dask_bench` rows."""
    head = f"{'benchmark':<58} {'1 process':>10} {'dask':>10} {'ratio':>7}  exact"
    lines = [head, "-" * len(head)]
    for r in rows:
        label = "{} ({} workers)".format(r["name"], r["workers"])
        lines.append(
            f"{label:<58} "
            f"{r['one_process_s']:>9.3f}s {r['dask_s']:>9.3f}s {r['ratio']:>6.2f}x  "
            f"{r['exact']}"
        )
    lines.append(
        "Median seconds; ratio = one process / Dask (above 1x: the cluster is faster); exact: "
        "eigenvalues equal the one-process core's bit for bit."
    )
    return "\n".join(lines)
