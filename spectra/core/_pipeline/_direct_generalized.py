"""The direct path of a small generalized problem ``A v = w B v`` (one pair, or a handful).

One pair per call is how a tight-binding code asks for ``H(k), S(k)`` at one k-point and
how PySCF hands over a Fock matrix and its overlap. Through the pipeline such a call paid
~0.5 ms of layers (the request, the chunking, the plan, the executor, the torch gauge) for
a few microseconds of LAPACK: one 8 x 8 pair took 510 us against SciPy's 35 us. Where the
reduced problem's plan is direct (:func:`~._direct._direct`) and nothing needs the
pipeline (no history, no ``lindep``, input the full path's check accepts, a
positive-definite ``b``), this runs the serial Cholesky path's own steps
(:func:`~._solve._solve_cholesky`: the factor, the two triangular solves, LAPACK on the
reduced matrix, the back-transformation, the gauge) without those layers: bitwise its
results (``tests/core/test_direct_generalized.py``). Where the reduced solve runs on one
kernel thread, those steps are one compiled call
(:func:`~.._solvers._native.native_pair`: the LAPACK and BLAS calls torch's functions
make, on the same buffers, checked against them once per process, and the input checks
in the same pass): one 8 x 8 pair in ~40 us. Where it is one threaded call, the same
compiled call runs on the caller's kernel threads (:func:`threaded_pair`, the pipeline's
too). Elsewhere, and where they decline, torch's calls run them (:func:`_by_torch`).
Anything else returns ``None``, and the full path answers or names what is wrong.
"""

from __future__ import annotations

import functools
import math
from contextlib import nullcontext
from typing import Any

import torch

from .._request import Request
from .._solvers._native import native_module, native_pair
from .._solvers._torch_lapack import ALIGNMENT, SEQUENTIAL_N, empty_result, one_kernel_thread
from .._strategies._kernels import closed_form_into
from .._support._memory import GENERALIZED_MATRICES
from .._support._threads import single_threaded_kernels
from ._checks import InputRejected, hermitian_from_lower, quick_check, symmetry_tolerance
from ._direct import _as_cpu_tensor, _closed_small, _direct, _solve
from ._gauge import fix_gauge_small_
from ._prepare import check_k
from ._reduction import reduce_by_factor, reduce_by_left_solves
from ._select import select_k

#: at most this many bytes of working set (``GENERALIZED_MATRICES`` matrices per pair):
#: within the smallest default budget (64 MiB), so no chunking can be planned for it
DIRECT_GENERALIZED_BYTES = 64 << 20


def _accepted(x: torch.Tensor, tol: float) -> bool:
    """Whether every matrix of ``x`` passes the full path's check of a pair's operand:
    finite, and exactly Hermitian or Hermitian within ``tol`` (one compiled pass where the
    helper is built)."""
    try:
        quick_check(x, tol, finite=True)
    except InputRejected:
        return False
    return True


def _by_torch(
    ta: torch.Tensor, tb: torch.Tensor, vectors: bool, threaded: bool, closed: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """The serial Cholesky path's steps by torch's calls, with its thread settings: the
    steps and the reduced problem's LAPACK call on the plan's kernel threads (one, or the
    caller's from ``threaded_from``: ``threaded``), so the factor and the solves round as
    there; with ``closed`` (``n = 2, 3`` planned on the closed form: the
    compiled pair's reference) the reduced problem by the closed form's own ``into``, as
    the plan runs it. ``None`` where ``b`` is not positive definite or LAPACK fails or
    overflows (the full path decides)."""
    with nullcontext() if threaded else single_threaded_kernels():
        factor, info = torch.linalg.cholesky_ex(tb)  # reads b's lower triangle
        if bool(info.any() if info.dim() else info):
            return None  # not positive definite: the full path names the matrices
        c = (reduce_by_left_solves if threaded else reduce_by_factor)(ta, factor)
        try:
            if closed:
                flat = c.reshape(-1, *c.shape[-2:])
                w, u = empty_result(flat, vectors)
                closed_form_into(flat, w, u)
                w = w.reshape(c.shape[:-1])
                u = u.reshape(c.shape) if u is not None else None
            else:
                w, u = _solve(c.contiguous(), vectors)
        except RuntimeError:
            return None
        if not math.isfinite(sum(w.flatten().tolist())):
            return None  # an overflow: the full path decides
        if u is None:
            return w, None
        return w, fix_gauge_small_(torch.linalg.solve_triangular(factor.mH, u, upper=True))


def threaded_pair(
    a: torch.Tensor, b: torch.Tensor, vectors: bool, check: float | None = None
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """``(w, v or None)`` of the CPU pairs ``(a, b)`` (no history) whose reduced problem is
    planned as one threaded call (one worker, ``n >=``
    :func:`~.._solvers._torch_lapack.threaded_from`): the serial Cholesky path's steps
    (the factor, two triangular solves, ``?syevd``/``?heevd``, the back-transformation,
    the gauge) in one compiled call on the caller's kernel threads
    (:func:`~.._solvers._native.native_pair` with ``threaded``), without the cost each of
    torch's five calls adds around its LAPACK call. With ``check``, only pairs whose ``a``
    is exactly Hermitian and finite and whose ``b`` is Hermitian within ``check`` and
    finite are served.

    The direct path and the pipeline (``_solve._solve_cholesky``) both try it first on
    the same operands (``a`` exactly Hermitian: the full path's ``hermitian_from_lower``;
    both broadcast and made row-major here), so both give its bits. ``None`` where the
    helper is not built, ``n > 255``, ``b`` is not positive definite, LAPACK fails, an
    eigenvalue is not finite, the gauge is left to Python, or ``check`` refuses a pair:
    both then take torch's calls (:func:`_by_torch`, the pipeline's own steps).

    >>> a = torch.diag(torch.tensor([2.0, 8.0, 3.0, 12.0], dtype=torch.float64))
    >>> b = torch.diag(torch.tensor([1.0, 4.0, 1.0, 4.0], dtype=torch.float64))
    >>> got = threaded_pair(a, b, True)
    >>> got is None or got[0].tolist() == [2.0, 2.0, 3.0, 3.0]
    True
    """
    if a.device.type != "cpu" or b.device.type != "cpu" or a.dtype != b.dtype:
        return None
    if a.shape != b.shape:  # (a broadcast pair: each member made whole)
        try:
            shape = torch.broadcast_shapes(a.shape, b.shape)
        except RuntimeError:
            return None
        a, b = a.expand(shape), b.expand(shape)
    a, b = (x.resolve_conj().resolve_neg().contiguous() for x in (a, b))
    return native_pair(a, b, vectors, check=check, threaded=True)


def _compiled_serves(batch: int, n: int, dtype: torch.dtype) -> bool:
    """Whether the compiled pair (:func:`~.._solvers._native.native_pair`) gives these
    pairs :func:`_by_torch`'s bits: one pair, or a handful whose members all start on
    LAPACK's 64-byte boundaries (torch's batched calls on a misaligned member round
    otherwise), on a machine where it agreed with torch's calls (:func:`compiled_agrees`)."""
    aligned = batch == 1 or (n * n * dtype.itemsize) % ALIGNMENT == 0
    return aligned and compiled_agrees()


def compiled_agrees() -> bool:
    """Once per process (per loaded helper): whether the compiled pair equals
    :func:`_by_torch` bit for bit on fixed pairs of every dtype (one pair and two,
    eigenpairs and eigenvalues, ``n <= 3`` on the closed form where the plan runs it): the
    library torch calls is the one the helper found, and its calls are the ones torch
    makes. ``False`` without the helper."""
    module = native_module()
    return module is not None and _agrees_for(module)


@functools.cache
def _agrees_for(module: Any) -> bool:
    """:func:`compiled_agrees` for the loaded helper ``module`` (a cache key only)."""
    gen = torch.Generator().manual_seed(11)
    with single_threaded_kernels():
        for dtype in (torch.float32, torch.float64, torch.complex64, torch.complex128):
            for shape in ((2, 2), (3, 3), (5, 5), (2, 16, 16)):
                n = shape[-1]
                x = torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype)
                m = torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype)
                a, b = x + x.mH, m @ m.mH + n * torch.eye(n, dtype=dtype)
                for vectors in (True, False):
                    closed = _closed_small(n, dtype)
                    got = native_pair(a, b, vectors, closed=closed)
                    ref = _by_torch(a, b, vectors, False, closed)
                    if got is None or ref is None or not torch.equal(got[0], ref[0]):
                        return False
                    if vectors and not torch.equal(got[1], ref[1]):  # type: ignore[arg-type]
                        return False
    return True


def solve_direct_generalized(a: Any, b: Any, request: Request) -> tuple[Any, Any] | None:
    """``(w, v or None)`` of ``A v = w B v`` for a small CPU pair (or a handful of the same
    shape), as the serial Cholesky path computes them; ``None``: the full path.

    >>> import torch
    >>> from spectra.core._request import Request
    >>> a = torch.diag(torch.tensor([2.0, 8.0, 3.0, 12.0], dtype=torch.float64))
    >>> b = torch.diag(torch.tensor([1.0, 4.0, 1.0, 4.0], dtype=torch.float64))
    >>> request = Request.build(True, None, False, None, float("inf"), True, None, None)
    >>> solve_direct_generalized(a, b, request)[0]
    tensor([2., 2., 3., 3.], dtype=torch.float64)
    """
    got_a, got_b = _as_cpu_tensor(a), _as_cpu_tensor(b)
    if got_a is None or got_b is None or got_a[1] != got_b[1]:
        return None
    (ta, numpy_in), (tb, _) = got_a, got_b
    shape = ta.shape
    if tb.shape != shape or tb.dtype != ta.dtype or ta.dim() not in (2, 3):
        return None
    n = shape[-1]
    batch = shape[0] if ta.dim() == 3 else 1
    if n == 0 or batch == 0 or shape[-2] != n:
        return None
    if torch.is_grad_enabled() and (ta.requires_grad or tb.requires_grad):
        return None  # the backward: the full path's rule
    if batch * n * n * ta.element_size() * GENERALIZED_MATRICES > DIRECT_GENERALIZED_BYTES:
        return None
    vectors = request.vectors
    if not _direct(n, batch, ta.dtype, vectors):
        return None  # the reduced problem is not planned as one direct call here
    k = None if request.k is None else check_k(request.k, n)
    threaded = not one_kernel_thread(n, ta.dtype, vectors) and n >= SEQUENTIAL_N
    compiled = not threaded and _compiled_serves(batch, n, ta.dtype)
    closed = _closed_small(n, ta.dtype)  # n <= 3 planned on the compiled closed form
    if closed and not compiled:
        return None  # (only the compiled pair runs the closed form as the plan does)
    tol = request.symmetry_tol
    tol = symmetry_tolerance(ta.dtype) if tol is None else tol
    # an exactly Hermitian a and a b Hermitian within tol, all finite (what a checked call
    # almost always gets: b = M M^H is Hermitian only to rounding) pass the full path's
    # checks, a as it is: the compiled pair tests that itself, in its pass
    got = None
    if compiled and request.check:
        got = native_pair(ta, tb, vectors, check=tol, closed=closed)
    elif threaded and request.check:
        got = threaded_pair(ta, tb, vectors, check=tol)
    if got is None:
        if request.check and not (_accepted(ta, tol) and _accepted(tb, tol)):
            return None  # refused: the full path names what is wrong and where
        ta = hermitian_from_lower(ta)  # (the matrix itself where exactly Hermitian)
        if compiled:
            got = native_pair(ta, tb, vectors, closed=closed)
        elif threaded:
            got = threaded_pair(ta, tb, vectors)
        if got is None and not closed:  # (a pair of n = 1 is not torch's calls' bits)
            got = _by_torch(ta, tb, vectors, threaded)
        if got is None:
            return None
    w, v = got
    if k is not None:
        w, v = select_k(w, v, k, request.largest)
    if numpy_in:
        return w.numpy(), (v.numpy() if v is not None else None)
    return w, v
