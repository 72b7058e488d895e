"""The one cost model of a batched solve, shared by the planner and the ragged bucketing."""

from __future__ import annotations

import sys
from typing import NamedTuple

import torch

#: a ``Claim.min_batch`` no batch reaches: the strategy declines the problem for now (its
#: compiled code is not ready, say) and the plan gives the claim's ``reason`` instead
DECLINED = sys.maxsize


class Claim(NamedTuple):
    """A strategy's claim to be the default for a problem (``Runs.prefers``): why, from
    which batch size (a kernel pays only for whole lane groups), and its rank among claims
    on the same problem (the highest wins)."""

    reason: str
    min_batch: int = 1
    rank: int = 0


def call_overhead(device: torch.device) -> float:
    """Fixed cost in seconds of one batched core call (planning, checks, launches)."""
    return 5e-4 if device.type == "cuda" else 2e-4


def matrix_seconds(n: int, dtype: torch.dtype, device: torch.device) -> float:
    """Rough time of one eigh of size ``n`` inside a batched call.

    CPU: one thread, LAPACK ``syevd`` (measured on x86; complex about 4x real). CUDA:
    batched cuSOLVER, throughput-bound.

    >>> matrix_seconds(64, torch.float64, torch.device("cpu")) < 1e-3
    True
    """
    if device.type == "cuda":
        return 1e-7 + 1e-11 * n**3
    complex_factor = 4.0 if dtype.is_complex else 1.0
    return complex_factor * (5e-6 + 1.5e-9 * n**3)
