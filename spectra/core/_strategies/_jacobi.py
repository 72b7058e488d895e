"""The ``jacobi`` strategy: spectra's batched parallel cyclic Jacobi in torch ops
(:mod:`.._jacobi`), which stays batched on CUDA where torch < 2.12 loops ``syevd``."""

from __future__ import annotations

from .._solvers._jacobi import solve
from .._support._memory import JACOBI_MATRICES
from ._base import Cost, Runs, Strategy, register
from ._cupy import legacy_cuda_claim

register(
    Strategy(
        "jacobi",
        ("cpu", "cuda"),
        solve,
        "spectra's batched parallel cyclic Jacobi in torch ops (stays batched on "
        "CUDA for torch < 2.12; non-converged matrices recomputed by eigh)",
        runs=Runs(
            tunable_on=("cuda",),
            fan_out=True,
            prefers=legacy_cuda_claim("spectra's batched Jacobi", 0),
        ),
        cost=Cost(memory=JACOBI_MATRICES),
    )
)
