"""The lane-per-matrix kernel strategies (:mod:`.._kernels`): ``closed-form`` (n <= 3),
``numba-jacobi`` (real, small n) and ``numba-ql`` (Householder + implicit QL, real and
complex). Each writes into the executor's outputs, offers numba's fused input check, and
claims the sizes where it was measured faster than LAPACK (:mod:`.._kernels._choice`), and
only where its compiled code is ready (:func:`gate`): no call waits for a compilation or
for numba's import that it does not need."""

from __future__ import annotations

import contextvars
import itertools
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from .._pipeline._cost import DECLINED, Claim
from .._pipeline._gauge import fix_gauge_
from .._solvers._kernels import _ready, numba_available, numba_into
from .._solvers._kernels._choice import (
    KERNEL_MIN_BATCH,
    closed_form_claim,
    jacobi_claim,
    ql_claim,
)
from .._solvers._kernels._closed_form import eig_small
from .._solvers._native import CLOSED_FORM_MAX_N, native_closed_form_into, native_module
from .._solvers._torch_lapack import torch_eigh, torch_eigh_into
from .._support._arrays import real_dtype
from .._support._memory import CLOSED_FORM_MATRICES, LANE_MATRICES
from ._base import (
    PLANNING_SCOPES,
    STRATEGIES,
    Abilities,
    Cost,
    Runs,
    Strategy,
    register,
    solve_through,
)
from ._checks import numba_check


def _lapack_seconds(n: int, dtype: torch.dtype) -> float:
    from .._pipeline._cost import matrix_seconds

    return matrix_seconds(n, dtype, torch.device("cpu"))


def closed_form_seconds(n: int, dtype: torch.dtype) -> float:
    """One thread's time per matrix (the fan-out decision): 0.1-0.2 us for real n <= 3 in
    numba (``_choice``'s table), where LAPACK's 5 us made batches of 200 fan out."""
    if n > 3 or dtype.is_complex:
        return _lapack_seconds(n, dtype) if n > 3 else 1e-6  # torch lanes: ~0.3-16 us
    return 2e-7


def lane_seconds(n: int, dtype: torch.dtype) -> float:
    """numba-jacobi / numba-ql per matrix, one thread, checks and gauge included: 3.2e-8
    n^2.18 s, the fit of numba-ql with 64 lanes at n = 8, 16, 32 (3.0, 13.5, 62 us,
    float64, 2026-11-30; Jacobi at n = 4, 5 is within 1.5x of it; complex about 4x)."""
    return (4.0 if dtype.is_complex else 1.0) * 3.2e-8 * n**2.18


# ---- readiness: claim only what runs without compiling ---------------------------------

#: numba's import and its code generator's first start, which the first kernel call of a
#: process pays even with a warm cache: 0.12 + 0.24 s measured (2-core CI machine, quiet,
#: 2026-12-02); a first call takes a kernel only if LAPACK would take longer for its batch
NUMBA_LOAD_SECONDS = 0.4
#: groups whose first claim in this process gave the load-cost threshold, with the call
#: it holds for (:func:`enter_call`'s number; ``None``: a plan outside a call, 0: over):
#: from the next planned call on the kernels claim from their measured batch again
_DEFERRED: dict[str, int | None] = {}
KERNEL_NAMES = ("closed-form", "numba-jacobi", "numba-ql")
#: the core call in progress in this context (``eigh``/``eigvalsh``), numbered
_CALL: contextvars.ContextVar[int | None] = contextvars.ContextVar("spectra_call", default=None)
_CALLS = itertools.count(1)


def enter_call() -> Any:
    """Start one planned call (``spectra.eigh``/``eigvalsh``) unless one is in progress in
    this context: a call plans more than once (its one-matrix test, the direct path's test,
    the pipeline's plan), and the first claim's load-cost threshold (:func:`gate`) must hold
    for all of them, not only the first. Returns what :func:`leave_call` takes.

    >>> token = enter_call()
    >>> inside = _CALL.get() is not None
    >>> leave_call(token)
    >>> inside, _CALL.get() is None
    (True, True)
    """
    if _CALL.get() is not None:
        return None
    return _CALL.set(next(_CALLS))


def leave_call(token: Any) -> None:
    """End the call :func:`enter_call` started (``None``: it started none); where the
    threshold held in it, the plans are re-made, so that the next call claims as measured."""
    if token is None:
        return
    number = _CALL.get()
    _CALL.reset(token)
    if number in _DEFERRED.values():
        for group, call in list(_DEFERRED.items()):
            if call == number:
                _DEFERRED[group] = 0
        _replan()  # the plans made under the threshold may not outlive this call


@contextmanager
def one_planning() -> Iterator[None]:
    """One planning (``_base.claims``) as one call where no call is in progress: a plan
    made outside a call gives every gated claim in it the threshold the first one took
    (``_base.PLANNING_SCOPES``)."""
    token = enter_call()
    try:
        yield
    finally:
        leave_call(token)


PLANNING_SCOPES.append(one_planning)


def _replan() -> None:
    """Drop every cached plan (a change of the registry bumps its version): the kernels'
    state changed, so no plan made before may outlive it."""
    for name in KERNEL_NAMES:
        if name in STRATEGIES:
            STRATEGIES[name] = STRATEGIES[name]
            return


_ready.LISTENERS.append(_replan)


def gate(claim: Claim, n: int, dtype: torch.dtype) -> Claim | None:
    """A kernel's measured ``claim`` on CPU ``n x n`` matrices of ``dtype``, as the kernels'
    state allows it (``SPECTRA_KERNELS``, :mod:`.._kernels._ready`):

    - ``lapack``: no claim; ``eager``: the claim as measured (compiling in the call);
    - the dtype's kernels cold (never compiled for this install): declined with the reason
      (:data:`DECLINED`), and in ``auto`` mode one background compile started;
    - cached on disk but numba not imported yet: the first call of the process that meets
      such a claim (:func:`enter_call`: every plan it makes) asks for a batch on which LAPACK
      would take longer than :data:`NUMBA_LOAD_SECONDS`; from the next planned call on
      (the plans are re-made) the measured claim holds again;
    - loaded, or numba already imported: the claim as measured.
    """
    how = _ready.mode()
    if how == "lapack":
        return None
    if how == "eager":
        return claim
    state = _ready.state(dtype)
    name = _ready.group(dtype)
    if state == "cold":
        return Claim(_cold_reason(n, name), min_batch=DECLINED, rank=claim.rank)
    if state == "cached" and "numba" not in sys.modules:
        call = _CALL.get()
        if name not in _DEFERRED:  # the first claim of the process
            _DEFERRED[name] = call
            if call is None:  # a plan outside a call: the next plan is the next call's
                _replan()
        elif call is None or _DEFERRED[name] != call:
            return claim
        lapack = _lapack_seconds(n, dtype)
        least = max(claim.min_batch, math.ceil(NUMBA_LOAD_SECONDS / lapack))
        return claim._replace(min_batch=least)
    return claim


def _cold_reason(n: int, name: str) -> str:
    why = f"n = {n}: the numba kernels for {name} are not compiled yet: LAPACK"
    pid = _ready.start_background(name)
    if pid is not None:
        return (
            f"{why} (compiling them in a background process, pid {pid}, for later calls; "
            f"`spectra compile` compiles them now; {_ready.ENV}=ready starts none)"
        )
    held = _ready.lock_path(name).exists() and _ready.background_allowed() is None
    if held:
        return f"{why} (a background compile is filling numba's cache)"
    why_not = _ready.background_allowed() or "no background compile could start"
    return (
        f"{why} ({why_not}: `spectra compile` compiles them; "
        f"{_ready.ENV}=eager compiles inside the call)"
    )


def _gated(
    measured: Callable[[int, torch.dtype, torch.device, bool], Claim | None],
) -> Callable[[int, torch.dtype, torch.device, bool], Claim | None]:
    """``measured`` (a ``Runs.prefers`` of ``_choice``) behind :func:`gate`."""

    def prefers(n: int, dtype: torch.dtype, device: torch.device, vectors: bool) -> Claim | None:
        claim = measured(n, dtype, device, vectors)
        if claim is None or device.type != "cpu" or not numba_available():
            return claim
        return gate(claim, n, dtype)

    prefers.__doc__ = measured.__doc__
    return prefers


# ---- "closed-form" ---------------------------------------------------------------------


def _closed_form_prefers(
    n: int, dtype: torch.dtype, device: torch.device, vectors: bool
) -> Claim | None:
    """``"closed-form"``'s claim: with the compiled helper (``_native_closed_form.c``, no
    numba needed) CPU n <= 3, real or complex, from one matrix (real: 0.4 us against
    LAPACK's 1.3-2.4 us per call; complex 3x3: 0.3 against 2.3 us and numba's lanes'
    0.5 us, measured; the kernels' ``lapack`` mode still declines it), otherwise the
    measured claim behind :func:`gate`."""
    if n <= CLOSED_FORM_MAX_N and device.type == "cpu" and native_module():
        if _ready.mode() == "lapack":
            return None
        return Claim(f"n = {n}: compiled closed form (one call per matrix)")
    return _gated(closed_form_claim)(n, dtype, device, vectors)


#: per 3x3, one thread: the compiled helper's scalar closed form against numba's lanes
#: (0.23 vs 0.035 us, float64, 4,096 matrices, measured 2026-12-02)
_SCALAR_SECONDS, _LANE_SECONDS = 2.3e-7, 3.5e-8


def _numba_lanes_pay(batch: int, dtype: torch.dtype) -> bool:
    """Whether numba's lanes run a real closed-form batch rather than the compiled helper
    (the two give the same bits, ``tests/core/test_native_closed_form.py``): from
    ``KERNEL_MIN_BATCH`` matrices once numba's kernels are loaded, and where they are only
    on disk, for a batch on which the lanes win back numba's load."""
    if batch < KERNEL_MIN_BATCH or not numba_available():
        return False
    state = _ready.state(dtype)
    if state == "loaded":
        return True
    saved = batch * (_SCALAR_SECONDS - _LANE_SECONDS)
    return state == "cached" and saved > NUMBA_LOAD_SECONDS


def closed_form_into(a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None) -> None:
    """Vectors come out in the core's gauge on every path (the strategy is ``gauged``)."""
    n = a.shape[-1]
    if a.shape[0] == 0:
        return
    cpu = a.device.type == "cpu"
    real_cpu = cpu and not a.is_complex()
    if n > 3:
        wt, vt = torch_eigh(a, v is not None)
    elif (
        cpu
        and not (real_cpu and _numba_lanes_pay(a.shape[0], a.dtype))
        and native_closed_form_into(a, w, v)
    ):
        return  # the compiled closed form wrote the outputs, in the gauge (no numba lanes
        # for complex: the compiled one serves every complex batch, one matrix's bits)
    elif real_cpu and n >= 2 and numba_available():
        from .._solvers._kernels import _numba_closed_form as ncf
        from .._solvers._kernels._numba_gauge import gauge_constants

        # the kernel applies the gauge itself
        numba_into(ncf.sym3 if n == 3 else ncf.sym2, a, w, v, gauge_constants(a.dtype))
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
        solve_through(closed_form_into),
        "closed-form eigenpairs for n <= 3 (exact 2x2; robust 3x3 after Kopp 2008/"
        "Eberly 2014): compiled C per matrix or numba lanes on CPU, torch ops elsewhere; "
        "n > 3 goes to torch.linalg.eigh",
        runs=Runs(fan_out=True, serves=lambda n, dtype: n <= 3, prefers=_closed_form_prefers),
        cost=Cost(memory=CLOSED_FORM_MATRICES, seconds=closed_form_seconds),
        abilities=Abilities(into=closed_form_into, check=numba_check, gauged=True),
    )
)


# ---- "numba-jacobi" --------------------------------------------------------------------


def jacobi_into(a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None) -> None:
    if a.shape[0] == 0:
        return
    if a.is_complex() or a.device.type != "cpu":
        torch_eigh_into(a, w, v)
        return
    from .._solvers._kernels import _numba_jacobi as nj

    numba_into(nj.jacobi_real, a, w, v, float(torch.finfo(a.dtype).eps))


register(
    Strategy(
        "numba-jacobi",
        ("cpu",),
        solve_through(jacobi_into),
        "cyclic Jacobi with one SIMD lane per matrix (numba, real; complex goes to "
        "torch.linalg.eigh)",
        runs=Runs(
            available=numba_available,
            fan_out=True,
            serves=lambda n, dtype: not dtype.is_complex,
            prefers=_gated(jacobi_claim),
        ),
        cost=Cost(memory=LANE_MATRICES, seconds=lane_seconds),
        abilities=Abilities(into=jacobi_into, check=numba_check),
    )
)


# ---- "numba-ql" ------------------------------------------------------------------------


def ql_into(a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None) -> None:
    if a.shape[0] == 0:
        return
    if a.device.type != "cpu":
        torch_eigh_into(a, w, v)
        return
    eps = float(torch.finfo(real_dtype(a.dtype)).eps)
    if a.is_complex():
        from .._solvers._kernels._numba_hermitian_ql import hermitian_ql

        failed = numba_into(hermitian_ql, a, w, v, eps)
    else:
        from .._solvers._kernels._numba_tridiag_ql import tridiag_ql_real

        failed = numba_into(tridiag_ql_real, a, w, v, eps)
    if failed.any():  # QL did not converge on some lane (never seen in tests): LAPACK
        idx = torch.from_numpy(np.flatnonzero(failed))
        wi, vi = torch_eigh(a[idx], v is not None)
        w[idx] = wi
        if v is not None and vi is not None:
            v[idx] = vi


_ql_measured = _gated(ql_claim)


def _ql_prefers(n: int, dtype: torch.dtype, device: torch.device, vectors: bool) -> Claim | None:
    """``"numba-ql"``'s measured claim, less the complex ``n <= 3`` that the compiled
    closed form owns at every batch size where it is built (one implementation, so one
    matrix and any batch give the same bits; 8,192 complex128 3x3: 5.0 ms against the
    lanes' 4.3 ms once numba is loaded, measured 2026-12-02, and no numba load)."""
    if n <= CLOSED_FORM_MAX_N and _closed_form_prefers(n, dtype, device, vectors) is not None:
        return None
    return _ql_measured(n, dtype, device, vectors)


register(
    Strategy(
        "numba-ql",
        ("cpu",),
        solve_through(ql_into),
        "Householder tridiagonalization + implicit QL with per-lane convergence masks, one "
        "SIMD lane per matrix (numba; real symmetric and complex Hermitian)",
        runs=Runs(available=numba_available, fan_out=True, prefers=_ql_prefers),
        cost=Cost(memory=LANE_MATRICES, seconds=lane_seconds),
        abilities=Abilities(into=ql_into, check=numba_check),
    )
)
