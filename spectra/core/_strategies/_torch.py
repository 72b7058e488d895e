"""The ``torch`` strategy: ``torch.linalg.eigh`` through the core's one LAPACK adapter
(``_torch_lapack``: LAPACK's ``syevd`` loop on the CPU, batched cuSOLVER on CUDA), the
default wherever no other strategy claims a problem."""

from __future__ import annotations

from .._solvers._torch_lapack import torch_eigh, torch_eigh_into
from ._base import Abilities, Runs, Strategy, register
from ._checks import numba_check_large

TORCH = register(
    Strategy(
        "torch",
        ("cpu", "cuda"),
        torch_eigh,
        "batched torch.linalg.eigh (LAPACK syevd loop on CPU, cuSOLVER batched on CUDA)",
        runs=Runs(fan_out=True),
        abilities=Abilities(into=torch_eigh_into, check=numba_check_large),
    )
)
