"""The NumPy and SciPy strategies: ``numpy.linalg.eigh`` (LAPACK looped in C) and
``scipy.linalg.eigh`` per matrix (the reference; slow), CPU only."""

from __future__ import annotations

import numpy as np
import torch

from ._base import Abilities, Result, Runs, Strategy, register
from ._checks import numba_check_large


def numpy_solve(a: torch.Tensor, vectors: bool) -> Result:
    arr = a.detach().cpu().numpy()
    if vectors:
        w, v = np.linalg.eigh(arr)
        return torch.from_numpy(w).to(a.device), torch.from_numpy(v).to(a.device)
    return torch.from_numpy(np.linalg.eigvalsh(arr)).to(a.device), None


def scipy_loop(a: torch.Tensor, vectors: bool) -> Result:
    import scipy.linalg

    arr = a.detach().cpu().numpy()
    n = arr.shape[-1]
    w = np.empty(
        arr.shape[:-1], dtype=np.float32 if arr.dtype in (np.float32, np.complex64) else np.float64
    )
    v = np.empty_like(arr) if vectors else None
    for i in range(arr.shape[0]):
        if vectors:
            w[i], v[i] = scipy.linalg.eigh(arr[i], check_finite=False)  # type: ignore[index]
        else:
            w[i] = scipy.linalg.eigh(arr[i], eigvals_only=True, check_finite=False)
    wt = torch.from_numpy(w).to(a.device)
    return wt, (torch.from_numpy(v).reshape(-1, n, n).to(a.device) if v is not None else None)


register(
    Strategy(
        "numpy",
        ("cpu",),
        numpy_solve,
        "numpy.linalg.eigh (LAPACK looped in C)",
        # NumPy's OpenBLAS pool can only be limited process-wide (threadpoolctl), which
        # concurrent callers would observe: run it in the caller's thread, unsplit
        runs=Runs(fan_out=False, blas_pool=True),
        abilities=Abilities(check=numba_check_large),
    )
)
register(
    Strategy(
        "scipy",
        ("cpu",),
        scipy_loop,
        "scipy.linalg.eigh per matrix (the reference; slow)",
        runs=Runs(tunable_on=()),
        abilities=Abilities(check=numba_check_large),
    )
)
