"""Small-matrix kernels: strategies whose SIMD lanes are matrices.

For the small matrices every domain lives on, LAPACK's per-call cost is most of the time
(1.2 us per 3x3, 6 us per 8x8 on one core). The strategies registered here solve a whole
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
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np
import torch

from .._gauge import fix_gauge_
from .._strategies import Strategy, register
from .._torch_lapack import torch_eigh, torch_eigh_into
from ._closed_form import eig_small

Result = tuple[torch.Tensor, "torch.Tensor | None"]


@functools.cache
def numba_available() -> bool:
    """Whether numba can be imported (the compiled kernels need it)."""
    return importlib.util.find_spec("numba") is not None


def _real(dtype: torch.dtype) -> torch.dtype:
    return {torch.complex64: torch.float32, torch.complex128: torch.float64}.get(dtype, dtype)


def _numba_into(kernel, a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None, *args):
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


def _check_block(a: torch.Tensor, tol: float) -> bool | None:
    """The executor's input check in one numba pass (:mod:`._numba_check`)."""
    if a.device.type != "cpu" or not numba_available():
        return None
    from ._numba_check import block_ok

    return block_ok(a, tol)


def _lapack_seconds(n: int, dtype: torch.dtype) -> float:
    from .._cost import matrix_seconds

    return matrix_seconds(n, dtype, torch.device("cpu"))


def _closed_form_seconds(n: int, dtype: torch.dtype) -> float:
    """One thread's time per matrix (the fan-out decision): 0.1-0.2 us for real n <= 3 in
    numba (``_choice``'s table), where LAPACK's 5 us made batches of 200 fan out."""
    if n > 3 or dtype.is_complex:
        return _lapack_seconds(n, dtype) if n > 3 else 1e-6  # torch lanes: ~0.3-16 us
    return 2e-7


def _lane_seconds(n: int, dtype: torch.dtype) -> float:
    """numba-jacobi / numba-ql per matrix, one thread, checks and gauge included: 3.2e-8
    n^2.18 s, the fit of numba-ql with 64 lanes at n = 8, 16, 32 (3.0, 13.5, 62 us,
    float64, 2026-11-30; Jacobi at n = 4, 5 is within 1.5x of it; complex about 4x)."""
    return (4.0 if dtype.is_complex else 1.0) * 3.2e-8 * n**2.18


def _solve_with(into) -> object:
    """A ``solve(a, vectors)`` built on a ``solve_into(a, w, v)``."""

    def solve(a: torch.Tensor, vectors: bool, workers: int = 1) -> Result:
        n = a.shape[-1]
        w = torch.empty(a.shape[:-1], dtype=_real(a.dtype), device=a.device)
        v = None
        if vectors:
            v = torch.empty_strided(
                a.shape, (n * n, 1, n), dtype=a.dtype, device=a.device
            )  # column-major, as LAPACK returns
        into(a, w, v)
        return w, v

    return solve


# ---- "closed-form" ---------------------------------------------------------------------


def _closed_form_into(a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None) -> None:
    """Vectors come out in the core's gauge on every path (the strategy is ``gauged``)."""
    n = a.shape[-1]
    if a.shape[0] == 0:
        return
    if n > 3:
        wt, vt = torch_eigh(a, v is not None)
    elif a.device.type == "cpu" and not a.is_complex() and n >= 2 and numba_available():
        from . import _numba_closed_form as ncf
        from ._numba_gauge import gauge_constants

        # the kernel applies the gauge itself
        _numba_into(ncf.sym3 if n == 3 else ncf.sym2, a, w, v, gauge_constants(a.dtype))
        return
    else:
        with torch.no_grad():
            wt, vt = eig_small(a, v is not None)
    w.copy_(wt)
    if v is not None and vt is not None:
        v.copy_(vt)
        fix_gauge_(v)


register(
    Strategy(
        "closed-form",
        ("cpu", "cuda"),
        _solve_with(_closed_form_into),  # type: ignore[arg-type]
        "closed-form eigenpairs for n <= 3 (exact 2x2; robust 3x3 after Kopp 2008/"
        "Eberly 2014), one lane per matrix (numba on CPU, torch ops elsewhere); "
        "n > 3 goes to torch.linalg.eigh",
        threadable=True,
        memory_factor=12.0,
        solve_into=_closed_form_into,
        matrix_seconds=_closed_form_seconds,
        check_block=_check_block,
        gauged=True,
        serves=lambda n, dtype: n <= 3,
    )
)


# ---- "numba-jacobi" --------------------------------------------------------------------


def _jacobi_into(a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None) -> None:
    if a.shape[0] == 0:
        return
    if a.is_complex() or a.device.type != "cpu":
        torch_eigh_into(a, w, v)
        return
    from . import _numba_jacobi as nj

    _numba_into(nj.jacobi_real, a, w, v, float(torch.finfo(a.dtype).eps))


register(
    Strategy(
        "numba-jacobi",
        ("cpu",),
        _solve_with(_jacobi_into),  # type: ignore[arg-type]
        "cyclic Jacobi with one SIMD lane per matrix (numba, real; complex goes to "
        "torch.linalg.eigh)",
        available=numba_available,
        threadable=True,
        memory_factor=3.0,
        solve_into=_jacobi_into,
        matrix_seconds=_lane_seconds,
        check_block=_check_block,
        serves=lambda n, dtype: not dtype.is_complex,
    )
)


# ---- "numba-ql" ------------------------------------------------------------------------


def _ql_into(a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None) -> None:
    if a.shape[0] == 0:
        return
    if a.device.type != "cpu":
        torch_eigh_into(a, w, v)
        return
    eps = float(torch.finfo(_real(a.dtype)).eps)
    if a.is_complex():
        from ._numba_hermitian_ql import hermitian_ql

        failed = _numba_into(hermitian_ql, a, w, v, eps)
    else:
        from ._numba_tridiag_ql import tridiag_ql_real

        failed = _numba_into(tridiag_ql_real, a, w, v, eps)
    if failed.any():  # QL did not converge on some lane (never seen in tests): LAPACK
        idx = torch.from_numpy(np.flatnonzero(failed))
        wi, vi = torch_eigh(a[idx], v is not None)
        w[idx] = wi
        if v is not None and vi is not None:
            v[idx] = vi


register(
    Strategy(
        "numba-ql",
        ("cpu",),
        _solve_with(_ql_into),  # type: ignore[arg-type]
        "Householder tridiagonalization + implicit QL with per-lane convergence masks, one "
        "SIMD lane per matrix (numba; real symmetric and complex Hermitian)",
        available=numba_available,
        threadable=True,
        memory_factor=3.0,
        solve_into=_ql_into,
        matrix_seconds=_lane_seconds,
        check_block=_check_block,
    )
)
