"""The planned batch without the layers: a plain CPU batch straight to the executor.

The direct path (:mod:`._direct`) runs what the plan runs for one matrix or a handful of
LAPACK calls. Every other CPU batch went through the entry's layers before its plan ran:
options, :func:`~._prepare.prepare` (array conversions, shape checks), the dense and
standard solves (the window, padding, empty batches, autograd) and the restore. On the
batches a lane kernel takes in the caller's thread, a call cost ~130-220 us more than
:func:`~._execute.execute` of its plan, on 0.3-4 ms of work (complex64 8 x 16x16 with
``twisted``: 445 against 304 us); this route leaves ~55-60 us of that (its own steps ~30,
the entry's ~25: float32 12 x 64, float64 8 x 256), scratch timings.

:func:`solve_planned` takes the calls that need none of it (a strided CPU tensor or
aligned NumPy array of a solver dtype, no gradient, no ``b``, ``lindep``, plan or device)
and does what those layers would do for them: the same plan, the same executor with the
same per-block check and gauge, the same ``k`` selection, under the same caller's kernel
threads. The results are the planned path's bits (``tests/core/test_planned_direct.py``).
Input the checks refuse gets the full path's error, naming the batch indices; a solver's
error propagates as there (the entry turns torch's ``LinAlgError`` into spectra's).

>>> import torch
>>> from spectra.core._request import Request
>>> a = torch.diag(torch.arange(1.0, 4.0, dtype=torch.float64)).expand(300, 3, 3)
>>> w, v = solve_planned(a, Request())
>>> w[7].tolist()
[1.0, 2.0, 3.0]
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from typing import Any

import torch

from .._options import Options
from .._request import Request
from .._support._threads import single_threaded_kernels
from ._checks import BlockCheck, InputRejected, check_finite, check_hermitian
from ._direct import _as_cpu_tensor
from ._execute import execute
from ._plan import THREADED_LAPACK_MIN_N, plan
from ._prepare import check_k
from ._select import select_k
from ._solve import gauge_block_


def solve_planned(a: Any, request: Request, opts: Options | None = None) -> tuple[Any, Any] | None:
    """``(w, v or None)`` of the dense CPU batch ``a`` as the full path computes them, by
    its plan (with ``opts``' planning fields) run straight on the executor; ``None`` where
    the call needs the full path (other input kinds, gradients, empty batches)."""
    got = _as_cpu_tensor(a)
    if got is None:
        return None
    t, numpy_in = got
    shape = t.shape
    if len(shape) < 2 or shape[-1] != shape[-2] or 0 in shape:
        return None
    if t.requires_grad and torch.is_grad_enabled():
        return None  # the autograd rule and its options: the full path
    n = shape[-1]
    batch = math.prod(shape[:-2])
    k = check_k(request.k, n)  # the full path's own error, raised here as there
    planning = opts.planning() if opts is not None else {}
    p = plan(n, batch, t.dtype, vectors=request.vectors, **planning)
    if k:  # a partial solve where the planner takes one (``solve_window``), else sliced
        windowed = plan(
            n, batch, t.dtype, vectors=request.vectors, k=k, largest=request.largest, **planning
        )
        p = windowed if windowed.window is not None else p
    flat = t if len(shape) == 3 else t.reshape(batch, n, n)
    if not flat.is_contiguous():
        flat = flat.contiguous()
    pre = BlockCheck(request.symmetry_tol) if request.check else None
    # the caller's thread runs the checks and gauge on one kernel thread, as on the full
    # path (``_eigh._caller_kernels``), below the sizes threaded LAPACK pays at
    threads = single_threaded_kernels() if n < THREADED_LAPACK_MIN_N else nullcontext()
    try:
        with threads:
            w, v = execute(p, flat, pre, gauge_block_)
    except InputRejected:  # name what is wrong, as the full path does (``_run_dense``)
        check_finite(t, "a")
        check_hermitian(t, request.symmetry_tol, "a")
        raise  # pragma: no cover - the detailed checks always find what the quick one did
    if p.window is None:
        w, v = select_k(w, v, k, request.largest)
    if not request.vectors:
        v = None
    if len(shape) != 3:  # the caller's batch shape (a 3-D batch is already in it)
        m = w.shape[-1]
        w = w.reshape(*shape[:-2], m)
        v = v.reshape(*shape[:-2], n, m) if v is not None else None
    if numpy_in:
        return w.numpy(), (v.numpy() if v is not None else None)
    return w, v
