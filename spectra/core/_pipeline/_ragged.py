"""Ragged input: matrices of different sizes solved in as few batched calls as pay off.

Sizes are grouped into buckets; each bucket is zero-padded to its largest size and the
padding is pushed above the spectrum (``push_to_top``), so the real eigenpairs are the
bottom ``n_i`` of each padded matrix, with exact zeros in the padded rows.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import torch

from .._support._versions import LEGACY_CUDA_BATCHED_MAX_N, cuda_batched_everywhere
from ._cost import call_overhead, matrix_seconds


def choose_buckets(sizes: Sequence[int], device: torch.device, pad: bool = True) -> list[int]:
    """Bucket ceilings for ``sizes``: minimise ``sum(overhead + count * t(ceiling))``.

    A dynamic program over the sorted distinct sizes. On CUDA with torch < 2.12 no bucket
    crosses n = 32 (batched below, a per-matrix loop above). ``pad=False`` gives one
    bucket per distinct size.
    """
    distinct = sorted(set(sizes))
    if not pad or len(distinct) <= 1:
        return distinct
    counts = dict.fromkeys(distinct, 0)
    for s in sizes:
        counts[s] += 1
    overhead = call_overhead(device)
    legacy = device.type == "cuda" and not cuda_batched_everywhere()
    best = [0.0] + [float("inf")] * len(distinct)
    cut = [0] * (len(distinct) + 1)
    for j in range(1, len(distinct) + 1):
        ceiling = distinct[j - 1]
        members = 0
        for i in range(j, 0, -1):
            if legacy and distinct[i - 1] <= LEGACY_CUDA_BATCHED_MAX_N < ceiling:
                break
            members += counts[distinct[i - 1]]
            cost = best[i - 1] + overhead + members * matrix_seconds(ceiling, torch.float64, device)
            if cost < best[j]:
                best[j], cut[j] = cost, i - 1
    ceilings, j = [], len(distinct)
    while j > 0:
        ceilings.append(distinct[j - 1])
        j = cut[j]
    return sorted(ceilings)


def group_by_bucket(sizes: Sequence[int], ceilings: Sequence[int]) -> dict[int, list[int]]:
    """Item indices per ceiling: each size goes to the smallest ceiling that holds it."""
    groups: dict[int, list[int]] = {c: [] for c in ceilings}
    for i, size in enumerate(sizes):
        groups[ceilings[bisect.bisect_left(ceilings, size)]].append(i)
    return groups


def pad_stack(mats: Sequence[torch.Tensor], size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack ``mats`` zero-padded to ``size``; return the stack and the padding mask."""
    first = mats[0]
    out = torch.zeros((len(mats), size, size), dtype=first.dtype, device=first.device)
    inactive = torch.ones((len(mats), size), dtype=torch.bool, device=first.device)
    for i, m in enumerate(mats):
        n = m.shape[-1]
        out[i, :n, :n] = m
        inactive[i, :n] = False
    return out, inactive
