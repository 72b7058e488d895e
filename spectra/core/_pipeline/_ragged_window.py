"""Ragged input whose ``k`` smallest eigenpairs a partial solve takes: every matrix at its
own size, the whole list in one fan-out.

A partial solve (``Abilities.window``) runs one LAPACK call per matrix anyway, so the
buckets of the ragged path (zero-padded to a shared size so that one batched call serves
many) only cost it: the padding's arithmetic, a plan, an executor and a fan-out per
bucket (a list of 49 graphs of 206-547 nodes made 45 buckets). Here the matrices the
planner gives a window (``Plan.window``, asked per size) are solved unpadded, split over
the workers by estimated cost, each result gauge-fixed in its worker.
"""

from __future__ import annotations

from typing import Any

import torch

from .._options import Options
from .._solvers._lapack_subset import window_result
from .._strategies import STRATEGIES
from .._support._threads import cpu_count, fan_out
from ._autograd import is_tracked
from ._gauge import fix_gauge_
from ._plan import Plan, plan

#: below this estimated serial time the list is solved in the caller's thread
_MIN_PARALLEL_SECONDS = 4e-3

Result = tuple[torch.Tensor, "torch.Tensor | None"]


def window_plans(mats: list[torch.Tensor], k: int, vectors: bool, opts: Options) -> dict[int, Plan]:
    """The positions in ``mats`` whose size the planner solves by a partial solve of the
    ``k`` smallest eigenpairs, with that plan (one matrix per plan)."""
    if opts.chunk_size is not None or any(is_tracked(m) for m in mats):
        return {}
    plans: dict[int, Plan | None] = {}
    found: dict[int, Plan] = {}
    for i, m in enumerate(mats):
        n = m.shape[-1]
        if n not in plans:
            got = None
            if k < n:
                got = plan(n, 1, m.dtype, m.device, vectors=vectors, k=k, **opts.planning())
            plans[n] = got if got is not None and got.window is not None else None
        chosen = plans[n]
        if chosen is not None:
            found[i] = chosen
    return found


def solve_windows(
    mats: list[torch.Tensor], plans: dict[int, Plan], vectors: bool, opts: Options
) -> dict[int, Result]:
    """The partial solves of ``plans`` (positions in ``mats``), gauge fixed: ``(w (k,), v
    (n, k) or None)`` per position, computed unpadded, the list split over the workers."""
    order = sorted(plans, key=lambda i: -mats[i].shape[-1])  # costliest first
    # alternate the costliest between the halves: contiguous parts of similar cost
    order = order[0::2] + order[1::2][::-1]
    out: dict[int, Result] = {}

    def part(lo: int, hi: int) -> None:
        for i in order[lo:hi]:
            p = plans[i]
            x = mats[i].reshape(1, p.n, p.n).contiguous()
            w, v = window_result(x, vectors, p.window[1] - p.window[0])  # type: ignore[index]
            window: Any = STRATEGIES[p.strategy].abilities.window
            window(x, w, v, *p.window)  # type: ignore[misc]
            if v is not None:
                fix_gauge_(v)
            out[i] = (w[0], v[0] if v is not None else None)

    serial = sum(
        STRATEGIES[plans[i].strategy].matrix_seconds(
            mats[i].shape[-1], mats[i].dtype, mats[i].device
        )
        for i in order
    )
    workers = opts.workers if opts.workers is not None else cpu_count()
    if workers < 2 or len(order) < 2 or serial < _MIN_PARALLEL_SECONDS:
        part(0, len(order))
    else:
        fan_out(part, len(order), min(workers, len(order)))
    return out
