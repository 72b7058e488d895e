"""The fused input checks the CPU strategies offer (:class:`~._base.ChecksBlock`)."""

from __future__ import annotations

import torch

from .._support._arrays import numba_pass_ok


def numba_check(a: torch.Tensor, tol: float) -> bool | None:
    """The input check in numba's one pass (:mod:`.._kernels._numba_check`) on a CPU block:
    the kernels' check (they import numba anyway); ``None`` (the caller's check runs) where
    numba is missing or the block is not on the CPU."""
    from .._solvers._kernels import numba_available

    if a.device.type != "cpu" or not numba_available():
        return None
    from .._solvers._kernels._numba_check import block_ok

    return block_ok(a, tol)


def numba_check_large(a: torch.Tensor, tol: float) -> bool | None:
    """:func:`numba_check` for CPU blocks large enough to repay importing numba (the LAPACK
    strategies' check: a small call never waits for numba); ``None`` otherwise."""
    if a.device.type != "cpu" or not numba_pass_ok(a.numel()):
        return None
    from .._solvers._kernels._ready import numba_passes_ready

    if not numba_passes_ready(a.dtype):  # never compile inside a LAPACK call
        return None
    return numba_check(a, tol)
