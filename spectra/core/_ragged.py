"""Ragged input: matrices of different sizes solved in as few batched calls as pay off.

Sizes are grouped into buckets; each bucket is zero-padded to its largest size and the
padding is pushed above the spectrum (``push_to_top``), so the real eigenpairs are the
bottom ``n_i`` of each padded matrix, with exact zeros in the padded rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ._plan import LEGACY_CUDA_BATCHED_MAX_N, cuda_batched_everywhere


def call_overhead(device: torch.device) -> float:
    """Fixed cost of one batched call, in units of one n=1 flop-equivalent (the cost model)."""
    return 2e5 if device.type == "cuda" else 3e4


def choose_buckets(
    sizes: Sequence[int], device: torch.device, pad: bool = True
) -> list[int]:
    """Bucket ceilings for ``sizes``: minimise ``sum(calls * overhead + count * N^3)``.

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
            cost = best[i - 1] + overhead + members * float(max(ceiling, 4)) ** 3
            if cost < best[j]:
                best[j], cut[j] = cost, i - 1
    ceilings, j = [], len(distinct)
    while j > 0:
        ceilings.append(distinct[j - 1])
        j = cut[j]
    return sorted(ceilings)


def bucket_of(size: int, ceilings: Sequence[int]) -> int:
    """The smallest ceiling that holds ``size``."""
    for c in ceilings:
        if size <= c:
            return c
    raise ValueError(f"size {size} above every bucket")  # pragma: no cover


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
