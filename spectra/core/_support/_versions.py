"""What the running torch can do: the version facts the planner and bucketing depend on."""

from __future__ import annotations

import torch

#: torch releases before 2.12 batch CUDA eigh only for n <= 32 (syevjBatched) and loop
#: syevd per matrix above it: a size class that padding must not push a bucket into.
LEGACY_CUDA_BATCHED_MAX_N = 32


def torch_version() -> tuple[int, int]:
    """``(major, minor)`` of the running torch.

    >>> torch_version() >= (2, 0)
    True
    """
    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


def cuda_batched_everywhere() -> bool:
    """Whether torch routes every batched CUDA eigh to the batched cuSOLVER path (>= 2.12)."""
    return torch_version() >= (2, 12)
