"""The ``torch`` strategy: ``torch.linalg.eigh`` through the core's one LAPACK adapter
(``_torch_lapack``: LAPACK's ``syevd`` loop on the CPU, batched cuSOLVER on CUDA), the
default wherever no other strategy claims a problem. On the CPU its blocks first try the
compiled helper's fused pass (``native_eigh_into``: per matrix the exact-Hermitian check,
the same LAPACK call and the gauge while the matrix is in cache, the GIL released): the
same bits; against a thread fan-out of ``torch.linalg.eigh`` at n = 32-128 it read
0.97-1.07x across runs where the separate passes read 0.90-0.98x (benchmarks/RESULTS.md).
A single-worker call runs on the caller's kernel threads from the sizes where one matrix
was measured faster on two threads than on one (``_torch_lapack.threaded_from``: from
n = 50 real, 48 complex), as ``torch.linalg.eigh`` itself does."""

from __future__ import annotations

from .._solvers._native import native_eigh_into
from .._solvers._torch_lapack import threaded_from, torch_eigh, torch_eigh_into
from ._base import Abilities, Runs, Strategy, register
from ._checks import numba_check_large

TORCH = register(
    Strategy(
        "torch",
        ("cpu", "cuda"),
        torch_eigh,
        "batched torch.linalg.eigh (LAPACK syevd loop on CPU, cuSOLVER batched on CUDA)",
        runs=Runs(fan_out=True, threaded_from=threaded_from),
        abilities=Abilities(into=torch_eigh_into, check=numba_check_large, fused=native_eigh_into),
    )
)
