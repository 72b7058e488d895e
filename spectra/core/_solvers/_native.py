"""One small CPU matrix in one compiled call: check, LAPACK, gauge (``_native_eigh.c``).

The direct path's one-matrix route (:func:`~spectra.core._pipeline._direct.solve_one`)
costs torch's ``eigh`` plus a handful of Python-level steps: the exact-Hermitian test, the
finiteness test, the gauge, each a few microseconds of tensor or NumPy calls around a
LAPACK call of about as many. The C helper does all of them in one call, on the very
LAPACK routine torch calls (``?syevd``/``?heevd`` of the library torch loaded, called as
torch calls it), so the results are the bits of the Python route
(``tests/core/test_native.py``) at a fraction of its cost.

The helper is optional: it is built at install time where a C compiler is found
(``setup.py``); without it, or where the library torch loaded does not export those
routines, or where a first check finds that its eigenvalues are not torch's bit for bit,
:func:`native_solve` returns ``None`` and the Python route runs. ``SPECTRA_NATIVE=0``
switches it off.

>>> import torch
>>> a = torch.tensor([[2.0, 1.0], [1.0, 2.0]], dtype=torch.float64)
>>> done = native_solve(a, True, True)
>>> done is None or done[0].tolist() == [1.0, 3.0]
True
"""

from __future__ import annotations

import ctypes
import logging
import os
from typing import Any

import numpy as np
import torch

from .._support._arrays import SQUARE_SAFE, default_tolerance, real_dtype
from .._support._threads import (
    restore_thread_kernel_threads,
    set_thread_kernel_threads,
    thread_knobs,
)
from ._torch_lapack import SEQUENTIAL_N, one_kernel_thread, threaded_from

_log = logging.getLogger(__name__)

#: the C helper's status codes (``_native_eigh.c``)
OK, REJECTED, FAILED, UNGAUGED = 0, 1, 2, 3

#: the largest n the helper takes (the direct path's one-matrix bound)
MAX_N = 255
#: the largest n of the executor's fused block pass (:func:`native_eigh_into`)
FUSED_MAX_N = 2048


_KIND = {torch.float32: 0, torch.float64: 1, torch.complex64: 2, torch.complex128: 3}


def _constants(dtype: torch.dtype) -> tuple[int, torch.dtype, float, float, float, float, float]:
    """``(kind, eigenvalue dtype, tol, 1 - tol, (1 - tol)^2, low, high)`` as the Python
    gauge computes them (Python floats, rounded to the working precision in C); the last
    five are the gauge's arguments."""
    tol = default_tolerance(dtype)
    low, high = SQUARE_SAFE.get(dtype, (0.0, 0.0))
    return _KIND[dtype], real_dtype(dtype), tol, 1 - tol, (1 - tol) * (1 - tol), low, high


def _lapack(n: int, dtype: torch.dtype, vectors: bool, call: Any, *args: Any) -> Any:
    """``call(*args)`` on the plan's kernel threads for ``n x n`` ``dtype`` matrices (one
    from the size LAPACK may thread to ``threaded_from``, as the Python route calls
    LAPACK)."""
    old = set_thread_kernel_threads(1) if one_kernel_thread(n, dtype, vectors) else None
    try:
        return call(*args)
    finally:
        restore_thread_kernel_threads(old)


_CONSTANTS = {dtype: _constants(dtype) for dtype in _KIND}
_GAUGE = {dtype: consts[2:] for dtype, consts in _CONSTANTS.items()}


def _torch_library() -> str:
    """The shared library of torch's CPU kernels (where its LAPACK routines resolve)."""
    return os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")


def _agrees(module: Any) -> bool:
    """Whether the helper's eigenvalues are torch's bit for bit on a fixed matrix of
    each dtype (the routine found is the one torch calls)."""
    gen = torch.Generator().manual_seed(7)
    for dtype in _KIND:
        for n in (5, 40):
            x = torch.randn(n, n, generator=gen, dtype=torch.float64).to(dtype)
            x = x + x.mH
            kind, real, *consts = _CONSTANTS[dtype]
            w, u = torch.empty(n, dtype=real), torch.empty(n, dtype=real)
            v = torch.empty_strided((n, n), (1, n), dtype=dtype)
            vectors = module.eigh(
                kind, n, x.data_ptr(), n, 1, w.data_ptr(), v.data_ptr(), True, *consts
            )
            values = module.eigh(kind, n, x.data_ptr(), n, 1, u.data_ptr(), 0, True, *consts)
            if vectors not in (OK, UNGAUGED) or values != OK:
                return False
            if not (
                torch.equal(w, torch.linalg.eigh(x).eigenvalues)
                and torch.equal(u, torch.linalg.eigvalsh(x))
            ):
                return False
    return True


_loaded: list[Any] = []  # [module or None] once decided


def native_module() -> Any:
    """The loaded helper, or ``None`` (not built, switched off, routines not found, or
    not torch's bits). Decided once per process, on first use."""
    if _loaded:
        return _loaded[0]
    module = _load()
    if module is not _UNDECIDED:
        _loaded.append(module)
        return module
    return None


def forget_native() -> None:
    """Forget the decisions (tests: ``SPECTRA_NATIVE`` changed)."""
    _loaded.clear()
    _entry.clear()
    _few.clear()
    reset_entry_routes()


_UNDECIDED = object()


def _extension() -> Any:
    """The built extension module, or ``None`` (not built, or ``SPECTRA_NATIVE=0``)."""
    if os.environ.get("SPECTRA_NATIVE", "1").strip() == "0":
        return None
    try:
        from . import _native_eigh  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _native_eigh


def _load() -> Any:
    _native_eigh = _extension()
    if _native_eigh is None:
        return None
    if _native_eigh.load(_torch_library()) != len(_KIND):
        _log.debug("spectra: torch's LAPACK routines not found; the Python route runs")
        return None
    old = set_thread_kernel_threads(1)
    try:
        ok = _agrees(_native_eigh)
    except Exception:  # e.g. first used under a dispatch mode that fakes tensors
        return _UNDECIDED  # decide at a later call
    finally:
        restore_thread_kernel_threads(old)
    if not ok:
        _log.debug("spectra: the compiled route differs from torch's eigh; not used")
        return None
    return _native_eigh


#: up to this size the outputs are made by ``empty_like`` of cached prototypes (0.7
#: against 1.0-1.6 us each, measured); above it allocation is a small part of the call
PROTOTYPE_MAX_N = 32

_PROTOTYPES: dict[tuple[torch.dtype, int], tuple[torch.Tensor, torch.Tensor]] = {}


def _prototypes(dtype: torch.dtype, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Fresh outputs for one ``n x n`` matrix: eigenvalues, and eigenvectors laid out
    column-major as LAPACK writes them (and as ``torch.linalg.eigh`` returns them)."""
    return torch.empty(n, dtype=real_dtype(dtype)), torch.empty_strided((n, n), (1, n), dtype=dtype)


#: matrices up to this size (real or complex) are solved by the compiled closed form
#: (where the plan says so: the ``closed`` argument), the others by LAPACK
CLOSED_FORM_MAX_N = 3


def _lapack_planned(n: int, dtype: torch.dtype, closed: bool) -> bool:
    """Whether an ``n <= 3`` is planned on LAPACK (not ``closed``), which the compiled
    routes, serving those by the closed form, leave to the Python route."""
    return not closed and n <= CLOSED_FORM_MAX_N


def native_solve(
    a: torch.Tensor, vectors: bool, check: bool, closed: bool = True
) -> tuple[torch.Tensor, torch.Tensor | None, bool] | None:
    """``(w, v or None, gauged)`` of one plain square 2-D CPU tensor ``a`` of a solver
    dtype (the caller has checked that), or ``None``: the Python route decides (helper
    absent, ``n`` too large, input not exactly Hermitian or not finite, LAPACK failed, a
    non-finite eigenvalue). Matrices of ``n <= 3`` are solved by the closed form
    (the plan's solver where ``closed``; otherwise ``None`` for them). ``gauged`` is
    ``False`` where the eigenvectors still need the Python gauge (squared moduli outside
    the range the compiled one compares)."""
    module = native_module()
    n = a.shape[0]
    if module is None or n > MAX_N or _lapack_planned(n, a.dtype, closed):
        return None
    dtype = a.dtype
    kind, real = _CONSTANTS[dtype][:2]
    if n <= PROTOTYPE_MAX_N:  # empty_like of a cached prototype: half torch.empty's cost
        protos = _PROTOTYPES.get((dtype, n))
        if protos is None:
            protos = _PROTOTYPES[dtype, n] = _prototypes(dtype, n)
        w = torch.empty_like(protos[0])
        v = torch.empty_like(protos[1]) if vectors else None
    else:
        w, v = _prototypes(dtype, n) if vectors else (torch.empty(n, dtype=real), None)
    s0, s1 = a.stride()
    vp = 0 if v is None else v.data_ptr()
    old = set_thread_kernel_threads(1) if one_kernel_thread(n, dtype, vectors) else None
    try:  # (inline, not _lapack: one Python call fewer on the commonest call)
        status = module.eigh(kind, n, a.data_ptr(), s0, s1, w.data_ptr(), vp, check, *_GAUGE[dtype])
    finally:
        restore_thread_kernel_threads(old)
    if status == OK:
        return w, v, True
    if status == UNGAUGED:
        return w, v, False
    return None


def native_gauge_(vectors: torch.Tensor) -> bool:
    """The gauge of a CPU block of eigenvectors ``(..., n, m)`` without history, in place,
    in one compiled pass over its ``m`` columns per matrix, where the block is laid out
    column-major (``vectors.mT`` contiguous: LAPACK's output, a batch's or one matrix's);
    ``False`` (nothing decided, the Python gauge runs) otherwise or where the compiled
    gauge leaves it (a non-finite entry, complex squares out of range). The decisions and
    bits of :func:`~spectra.core._pipeline._gauge.fix_gauge_`
    (``tests/core/test_native.py``)."""
    module = native_module()
    if (
        module is None
        or not vectors.is_cpu
        or vectors.requires_grad
        or vectors.dtype not in _CONSTANTS
        or vectors.numel() == 0
        or not vectors.mT.is_contiguous()
    ):
        return False
    n = vectors.shape[-2]
    columns = vectors.numel() // n
    kind = _KIND[vectors.dtype]
    return bool(module.gauge(kind, n, columns, vectors.data_ptr(), *_GAUGE[vectors.dtype]))


def native_exactly_hermitian(a: torch.Tensor, finite: bool = False) -> bool | None:
    """Whether every matrix of the CPU block ``a`` (``(n, n)`` or ``(B, n, n)``) equals its
    conjugate transpose entry for entry (NaN never does), in one compiled pass that
    releases the GIL; ``None`` where the helper cannot read ``a`` as it lies (no helper,
    another device, dtype or layout, a lazy conjugate or negation, a ``torch.func``
    wrapper): the caller's torch test decides. With ``finite``, every entry must also be
    finite (one pass for both tests)."""
    module = native_module()
    block = _block(a) if module is not None else None
    return None if block is None else bool(module.hermitian(*block, finite))


def _block(a: torch.Tensor) -> tuple[int, int, int, int, int, int, int] | None:
    """``(kind, b, n, address, sb, s0, s1)`` of a CPU block ``(n, n)`` or ``(B, n, n)`` as
    the helper's per-matrix tests read it, or ``None`` where they cannot (another device,
    dtype or layout, a lazy conjugate or negation, a ``torch.func`` wrapper)."""
    if (
        not a.is_cpu
        or a.dtype not in _CONSTANTS
        or a.layout != torch.strided
        or a.is_conj()
        or a.is_neg()
        or not 2 <= a.dim() <= 3
    ):
        return None
    try:
        ptr = a.data_ptr()
    except RuntimeError:  # a wrapper without storage
        return None
    if a.dim() == 2:
        b, sb, (s0, s1) = 1, 0, a.stride()
    else:
        b, (sb, s0, s1) = a.shape[0], a.stride()
    return _KIND[a.dtype], b, a.shape[-1], ptr, sb, s0, s1


def native_within_tolerance(a: torch.Tensor, tol: float) -> bool | None:
    """Whether every matrix of the CPU block ``a`` (``(n, n)`` or ``(B, n, n)``) is finite
    and Hermitian within ``tol`` relative to its largest entry, the test of
    :func:`~spectra.core._pipeline._checks.quick_check`, in one compiled pass that releases
    the GIL. It only accepts: ``True`` where every matrix is within the bound by a margin
    (computed in double), ``False`` where any is not certainly so (the torch test then
    decides, and names what it refuses), ``None`` where the helper cannot read ``a`` (as
    :func:`native_exactly_hermitian`).

    >>> x = torch.tensor([[1.0, 2.0], [2.0 + 1e-12, 3.0]], dtype=torch.float64)
    >>> native_within_tolerance(x, 1e-8) in (True, None)  # None: no helper built
    True
    >>> native_within_tolerance(x, 1e-14) in (False, None)
    True
    """
    module = native_module()
    within: Any = None if module is None else getattr(module, "within", None)
    if within is None:  # no helper, or a build older than this source
        return None
    block = _block(a)
    return None if block is None else bool(within(*block, float(tol)))


def native_solve_batch(
    flat: torch.Tensor, vectors: bool, check: bool, closed: bool = True
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """``(w, v or None)`` of a plain ``(B, n, n)`` CPU block without history (the caller
    has checked that), every matrix through :func:`native_solve`'s one-call solve in one
    compiled loop (the GIL released), each exactly as the direct path's batched LAPACK call
    solves it (a matrix whose outputs are not 64-byte aligned in scratch buffers, as torch
    solves one matrix); ``None`` (nothing returned) where any matrix is not the helper's:
    the Python route decides, as for one matrix. ``closed`` as for :func:`native_solve`."""
    module = native_module()
    b, n = flat.shape[0], flat.shape[-1]
    if module is None or not 0 < n <= MAX_N or _lapack_planned(n, flat.dtype, closed):
        return None
    w = torch.empty((b, n), dtype=_CONSTANTS[flat.dtype][1])
    v = torch.empty_strided((b, n, n), (n * n, 1, n), dtype=flat.dtype) if vectors else None
    return (
        (w, v) if _lapack(n, flat.dtype, vectors, _batch_call, module, flat, w, v, check) else None
    )


def _batch_call(module: Any, a: torch.Tensor, w: torch.Tensor, v: Any, check: bool) -> bool:
    """The helper's batch loop (``eigh_batch``) on the ``(B, n, n)`` block ``a`` (its
    strides as they are) into ``w`` and ``v`` (or ``None``): whether every matrix was done
    (checked with ``check``, solved, gauged)."""
    sb, s0, s1 = a.stride()
    b, n = a.shape[0], a.shape[-1]
    vp = 0 if v is None else v.data_ptr()
    args = (_KIND[a.dtype], b, n, a.data_ptr(), sb, s0, s1, w.data_ptr(), vp, check)
    status, _ = module.eigh_batch(*args, *_GAUGE[a.dtype])
    return bool(status == OK)


def native_pair(
    a: torch.Tensor,
    b: torch.Tensor,
    vectors: bool,
    check: float | None = None,
    out: tuple[torch.Tensor, torch.Tensor | None] | None = None,
    closed: bool = False,
    threaded: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """``(w, v or None)`` of ``A v = w B v`` for the CPU pairs ``a``, ``b`` (``(n, n)`` or
    ``(B, n, n)``, row-major contiguous, the same dtype, no history; ``a`` Hermitian), each
    pair by the LAPACK and BLAS calls torch's ``cholesky_ex``, ``solve_triangular`` and
    ``eigh`` make in the serial Cholesky path, on one kernel thread, in one compiled call
    (``eigh_pair``): the factor, the two triangular solves, ``?syevd``/``?heevd``, the
    back-transformation, the gauge; with ``closed``, pairs of ``n <= 3`` by the compiled
    closed form instead of LAPACK (where the plan solves them so). With ``threaded``, the
    calls on the caller's kernel threads, as they are, and the reduction by two left
    solves (the pairs whose reduced problem is one threaded call, as torch's calls run
    them there: :func:`~.._pipeline._direct_generalized.threaded_pair`). With ``check`` (a
    symmetry tolerance), only pairs whose ``a`` is exactly Hermitian and finite and whose
    ``b`` is certainly Hermitian within ``check`` and finite (what the full path's checks
    pass, ``a`` as it is) are served. ``out``: the eigenvalues' and eigenvectors' blocks
    to write (contiguous, and column-major per matrix: ``out[1].mT`` contiguous), else
    fresh ones. ``None`` where the helper is not there or any pair is not served (refused
    by ``check``, ``b`` not positive definite, LAPACK failed, an eigenvalue not finite, the
    gauge left to Python): the caller's torch route decides.

    >>> import torch
    >>> a = torch.diag(torch.tensor([2.0, 8.0, 3.0, 12.0], dtype=torch.float64))
    >>> b = torch.diag(torch.tensor([1.0, 4.0, 1.0, 4.0], dtype=torch.float64))
    >>> got = native_pair(a, b, True)
    >>> got is None or got[0].tolist() == [2.0, 2.0, 3.0, 3.0]
    True
    """
    module = native_module()
    n = a.shape[-1]
    if (
        module is None
        or not 0 < n <= MAX_N
        or a.shape != b.shape
        or a.dtype != b.dtype
        or a.dtype not in _CONSTANTS
        or not (a.is_cpu and b.is_cpu and a.is_contiguous() and b.is_contiguous())
        or a.is_conj()
        or b.is_conj()
        or a.is_neg()
        or b.is_neg()
    ):
        return None
    try:
        a_ptr, b_ptr = a.data_ptr(), b.data_ptr()
    except RuntimeError:  # a wrapper without storage
        return None
    kind, real, *gauge = _CONSTANTS[a.dtype]
    if out is not None:
        w, v = out
    else:
        w = torch.empty(a.shape[:-1], dtype=real)
        v = None
        if vectors:
            v = torch.empty_strided(a.shape, (n * n, 1, n)[-a.dim() :], dtype=a.dtype)
    vp = 0 if v is None else v.data_ptr()
    count = a.shape[0] if a.dim() == 3 else 1
    btol = -1.0 if check is None else check
    args = (kind, count, n, a_ptr, b_ptr, w.data_ptr(), vp, closed, threaded, btol, *gauge)
    if threaded:  # the caller's kernel threads, whatever they are
        status, _ = module.eigh_pair(*args)
        return (w, v) if status == OK else None
    old = set_thread_kernel_threads(1)  # every step on one kernel thread, as torch's route
    try:
        status, _ = module.eigh_pair(*args)
    finally:
        restore_thread_kernel_threads(old)
    return (w, v) if status == OK else None


def native_eigh_into(a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None, check: bool) -> bool:
    """The ``torch`` strategy's fused block pass (:class:`~spectra.core._strategies._base.
    WritesChecked`): every matrix of the CPU block ``a`` (``(B, n, n)``, ``3 < n <=``
    :data:`FUSED_MAX_N`, without history) checked (with ``check``: exactly Hermitian, finite),
    solved by the LAPACK call :func:`~._torch_lapack.torch_eigh_into` makes (its bits) and
    gauged, written into ``w`` (``(B, n)`` contiguous) and ``v`` (column-major per matrix,
    or ``None``) in one compiled loop; ``False`` where the helper is absent, the layouts
    are not those, or any matrix is not the helper's (what was written is then
    overwritten by the executor's own route).

    >>> a = torch.diag(torch.arange(4.0, dtype=torch.float64)).expand(2, 4, 4)
    >>> w = torch.empty(2, 4, dtype=a.dtype)
    >>> v = torch.empty_strided((2, 4, 4), (16, 1, 4), dtype=a.dtype)
    >>> native_eigh_into(a, w, v, True) in (True, False)  # False: no helper built
    True
    """
    module = native_module()
    b, n = a.shape[0], a.shape[-1]
    if (
        module is None
        or not CLOSED_FORM_MAX_N < n <= FUSED_MAX_N
        or a.dtype not in _CONSTANTS
        or a.dim() != 3
        or b == 0
        or not (a.is_cpu and w.is_cpu and w.is_contiguous() and w.dtype == real_dtype(a.dtype))
        or a.requires_grad
        or a.is_conj()
        or a.is_neg()
        or a.layout != torch.strided
    ):
        return False
    if v is not None and not (v.is_cpu and v.dtype == a.dtype and v.stride() == (n * n, 1, n)):
        return False
    # LAPACK on the kernel threads the executor set for this plan (one per worker, or
    # torch's own for a large matrix alone), as torch_eigh_into's call runs: the same bits
    return _batch_call(module, a, w, v, check)


def native_column_counts_available() -> bool:
    """Whether :func:`native_column_counts` runs here (the compiled helper is built)."""
    return _extension() is not None


def native_column_counts(indptr: Any, indices: Any, n: int) -> Any:
    """The column counts of the Cholesky factor of a symmetric CSR pattern (both
    triangles; int64 ``indptr``/``indices`` NumPy arrays) in its own order, by the compiled
    helper (no numba import, no compilation), or ``None`` without it: the same numbers as
    :func:`spectra.core._sparse._symbolic.column_counts` (``tests/core/test_native.py``).
    It needs no LAPACK: the extension alone, whether torch's routines were found or not."""
    module = _extension()
    if module is None:
        return None
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    indices = np.ascontiguousarray(indices, dtype=np.int64)
    out = np.empty(n, dtype=np.int64)
    if n and not module.column_counts(n, indptr.ctypes.data, indices.ctypes.data, out.ctypes.data):
        raise MemoryError(f"column counts of a {n}-node pattern")
    return out


def native_closed_form_into(a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None) -> bool:
    """The closed form of a CPU block ``a`` ``(B, n, n)``, ``n <= 3``, without history,
    written into ``w`` ``(B, n)`` and ``v`` (column-major per matrix), in the gauge, by the
    compiled helper without any check (the executor's into-contract); ``False`` (nothing
    decided) where the helper is absent, the layouts are not those, or a result is not
    finite (the numba kernel, which gives the same bits, then runs)."""
    module = native_module()
    b, n = a.shape[0], a.shape[-1]
    if (
        module is None
        or a.dtype not in _CONSTANTS
        or not 0 < n <= CLOSED_FORM_MAX_N
        or not (a.is_cpu and w.is_cpu and w.is_contiguous())
        or (v is not None and not (v.is_cpu and v.mT.is_contiguous()))
        or b == 0
    ):
        return False
    return _batch_call(module, a.detach(), w, v, False)


_entry: list[Any] = []  # [solve or None] once decided
_few: list[Any] = []  # [solve_few] where the entry was configured


def native_entry(degenerate_tol: float, degenerate_tol32: float = 0.0) -> Any:
    """The C++ one-matrix entry's ``solve(a, vectors, check, closed)`` (configured on the
    helper's table; ``degenerate_tol``, ``degenerate_tol32``: the backward's float64 and
    float32 tolerances, for the tracked route; 0: none for that dtype), or ``None``: not
    built, built for another torch, or no helper. It returns ``(w, v or None)`` exactly
    as :func:`native_solve` and the gauge would; for a real ``a`` (n >= 4) that requires
    grad under grad mode ``(w, v, separated)`` as the direct path's
    ``eigh_native`` would (torch's own node, ``v`` gauged in place where ``vectors``); or
    ``None`` where anything about ``a`` is not plain (the Python route then decides).
    Configured once per process (the first ``degenerate_tol`` stands)."""
    if _entry:
        return _entry[0]
    module = native_module()
    solve = None
    if module is not None:
        try:
            from . import _native_entry  # type: ignore[attr-defined]
        except ImportError:  # not built, or built against another torch's symbols
            _native_entry = None
        if _native_entry is not None and _native_entry.torch_version == torch.__version__:
            consts = [_GAUGE[dtype] for dtype in sorted(_KIND, key=_KIND.__getitem__)]
            _native_entry.configure(
                module.api, consts, SEQUENTIAL_N - 1, degenerate_tol, degenerate_tol32
            )
            solve = _native_entry.solve
            few = getattr(_native_entry, "solve_few", None)  # (a build older than this
            if few is not None:  # source has neither: its one-matrix entry still serves)
                _few.append(few)
            if getattr(_native_entry, "configure_threads", None) is not None:
                _configure_routes(_native_entry)
    _entry.append(solve)
    return solve


#: the C++ entry's table of sizes it may take above ``SEQUENTIAL_N - 1`` (one plain matrix
#: without history): ``[(kind * 2 + vectors) * 256 + n]`` is 1 (on one kernel thread) or
#: 2 (on the caller's, from ``threaded_from``) where the Python route found no strategy
#: claiming one such matrix (:func:`mark_entry_route`), 0 otherwise; zeroed when the
#: registry changes (:func:`reset_entry_routes`). A build older than the value 2 takes only
#: the 1s.
_ROUTES = (ctypes.c_ubyte * (4 * 2 * 256))()


def _configure_routes(entry: Any) -> None:
    """Hand the entry the calling thread's kernel-thread knobs and the routes table (it
    takes no matrix above ``SEQUENTIAL_N - 1`` without both)."""
    knobs = thread_knobs()
    if knobs.omp_set is None or knobs.omp_get is None:
        return

    def address(fn: Any) -> int:
        return ctypes.cast(fn, ctypes.c_void_p).value or 0

    local = address(knobs.mkl_local) if knobs.mkl_local is not None else 0
    entry.configure_threads(
        address(knobs.omp_set), address(knobs.omp_get), local, ctypes.addressof(_ROUTES)
    )


def mark_entry_route(dtype: torch.dtype, vectors: bool, n: int) -> None:
    """Let the C++ entry take one plain ``n x n`` matrix of ``dtype`` from now on (the
    caller found no strategy claiming it, for this registry version)."""
    if SEQUENTIAL_N <= n <= MAX_N:
        threaded = n >= threaded_from(dtype, vectors)
        _ROUTES[(_KIND[dtype] * 2 + vectors) * 256 + n] = 2 if threaded else 1


def reset_entry_routes() -> None:
    """Forget every size marked by :func:`mark_entry_route` (the registry changed)."""
    ctypes.memset(ctypes.addressof(_ROUTES), 0, len(_ROUTES))


def native_few_entry(degenerate_tol: float, degenerate_tol32: float = 0.0) -> Any:
    """The C++ entry's ``solve_few(a, vectors, check, closed)`` for a handful of matrices
    (a contiguous ``(B, n, n)`` block of ``n <`` :data:`SEQUENTIAL_N`, which the caller's
    plan runs directly), configured as :func:`native_entry` configures it, or ``None``.
    It returns ``(w, v or None)`` exactly as :func:`native_solve_batch` would, or ``None``
    where anything about ``a`` is not plain, it requires grad under grad mode, or a matrix
    is not the helper's (the Python route then decides)."""
    native_entry(degenerate_tol, degenerate_tol32)
    return _few[0] if _few else None
