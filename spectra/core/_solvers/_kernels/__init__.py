"""Small-matrix kernels: strategies whose SIMD lanes are matrices.

For the small matrices every domain lives on, LAPACK's per-call cost is most of the time
(1.2 us per 3x3, 6 us per 8x8 on one core). The strategies built on these kernels solve a whole
block of matrices in one pass, one matrix per lane:

- ``"closed-form"`` (n <= 3): exact 1x1/2x2 and Kopp/Eberly's robust 3x3 closed form, as
  elementwise torch ops on any device (:mod:`._closed_form`) and, for real CPU input, the
  same algorithm compiled by numba (:mod:`._numba_closed_form`);
- ``"numba-jacobi"`` (CPU, real): cyclic Jacobi across lanes (:mod:`._numba_jacobi`),
  the fastest for n <= ~10;
- ``"numba-ql"`` (CPU): Householder tridiagonalization + implicit QL with per-lane
  convergence masks (:mod:`._numba_tridiag_ql`; complex Hermitian input through the
  ``zhetd2`` reduction of :mod:`._numba_hermitian_ql`), the fastest above.

Every kernel reads the lower triangle (LAPACK's ``uplo='L'``), returns ascending values
and orthonormal vectors, releases the GIL (the executor fans CPU batches out, one kernel
thread per core) and is bitwise independent of where a matrix sits in the batch. Sizes or
dtypes a kernel does not cover go to ``torch.linalg.eigh``, so each strategy solves any
block. Nothing is compiled at import: numba modules are imported, and their kernels
compiled or loaded from numba's cache, on first use.

This package holds the algorithms and the measured table of where each wins
(:mod:`._choice`); the strategies that run them are registered by
:mod:`spectra.core._strategies._kernels`.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from typing import Any

import numpy as np
import torch


@functools.cache
def numba_available() -> bool:
    """Whether numba can be imported (the compiled kernels need it)."""
    return importlib.util.find_spec("numba") is not None


def numba_into(
    kernel: Callable[..., Any], a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None, *args: Any
) -> Any:
    """Run ``kernel(a, w, vt, *args)`` on NumPy views: ``vt = v^T`` is row-major when ``v``
    is column-major (the executor's layout), so the kernel writes the output in place.
    Returns what the kernel returns."""
    an = a.detach().contiguous().numpy()
    wn = w.numpy()
    if v is None:
        vt = np.empty((0, a.shape[-1], a.shape[-1]), dtype=an.dtype)
        return kernel(an, wn, vt, *args)
    vt_t = v.mT
    if vt_t.is_contiguous():
        return kernel(an, wn, vt_t.numpy(), *args)
    buf = np.empty(an.shape, dtype=an.dtype)
    out = kernel(an, wn, buf, *args)
    v.copy_(torch.from_numpy(buf).mT)
    return out
