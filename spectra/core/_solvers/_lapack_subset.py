"""LAPACK's ``?syevr`` / ``?heevr`` with an index range: eigenpairs ``lo .. hi - 1`` of each
matrix of a ``(B, n, n)`` block, without the full decomposition.

The reduction to tridiagonal form costs what it costs in ``syevd``; what is saved is the
divide-and-conquer of the whole tridiagonal matrix and the back-transformation of all
``n`` vectors (bisection and inverse iteration find only the ``k = hi - lo`` wanted ones,
and only ``k`` vectors are transformed back): ~3x at ``n = 300, k = 9``.

With eigenvectors, from ``n = CHAIN_MIN_N``, the steps of ``?syevr`` run one by one, with
its bisection replaced: ``?sytrd``/``?hetrd`` (the reduction), the wanted eigenvalues of
the tridiagonal matrix by the compiled helper's bisection (``_native_bisect.c``: the
wanted values bisected side by side, where ``?stebz`` takes one at a time at the
division's latency; ``?stebz``'s tests and tolerance), ``?stein`` (inverse iteration)
and ``?ormtr``/``?unmtr`` (the back-transformation). The bisection was a third of the
partial solve on graph Laplacians of 44-477 nodes (9 values: ``?stebz`` 50 ms, the
helper 9.6 ms for 116 graphs, one thread). Where a step declines (no helper, a matrix
``?syevr`` would scale, entries not finite, a value whose block it cannot tell, inverse
iteration not converged) ``?syevr`` runs on that matrix as before.

The routines are the LAPACKE entry points of the LAPACK that SciPy ships, called through
``ctypes``, which releases the GIL (SciPy's own ``scipy.linalg.lapack`` wrappers hold it,
measured: a Python thread ran 5% of its speed beside one), so the executor's fan-out runs
one matrix per core; the BLAS inside it runs on one thread in a fan-out's workers, or on
the caller's kernel threads for a single-worker call of ``n >= THREADED_MIN_N``. SciPy's
OpenBLAS has one process-wide thread count (its ``openblas_set_num_threads_local`` sets
that one in a pthreads build): the calls share it through :class:`._openblas_threads.ThreadGate`,
which never changes it under a running call and restores it after the last. Where that
library is not found (a SciPy linked against another LAPACK), the same routine runs through
``scipy.linalg.lapack``.

The lower triangle is read, as ``torch.linalg.eigh`` reads it: the C-order matrix,
seen column-major, is its transpose, whose upper triangle LAPACK is told to read; complex
matrices are copied conjugated so that LAPACK sees the matrix itself.

>>> import torch
>>> a = torch.diag(torch.arange(6.0, dtype=torch.float64))[None]
>>> w, v = window_solve(a, True, 0, 2)
>>> w.tolist(), v.shape
([[0.0, 1.0]], torch.Size([1, 6, 2]))
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from .._support._threads import built_once
from ._native import _KIND, _extension
from ._openblas_threads import ThreadGate

Result = tuple[torch.Tensor, "torch.Tensor | None"]

_COL_MAJOR = 102
#: LAPACK's type letter of each dtype
_LETTER = {torch.float32: "s", torch.float64: "d", torch.complex64: "c", torch.complex128: "z"}


def lapacke_names(real: str, hermitian: str, suffix: str = "") -> dict[torch.dtype, str]:
    """LAPACKE's names of one routine by dtype (SciPy's bundled OpenBLAS prefixes them with
    ``scipy_``, which :func:`_entry` tries first).

    >>> lapacke_names("syevd", "heevd", "_work")[torch.complex64]
    'LAPACKE_cheevd_work'
    """
    return {
        dtype: f"LAPACKE_{letter}{hermitian if dtype.is_complex else real}{suffix}"
        for dtype, letter in _LETTER.items()
    }


_NAMES = lapacke_names("syevr", "heevr")
#: the steps of the chain (LAPACKE ``_work`` entry points: no allocation per call)
_CHAIN = {
    torch.float32: ("ssytrd", "sstein", "sormtr"),
    torch.float64: ("dsytrd", "dstein", "dormtr"),
    torch.complex64: ("chetrd", "cstein", "cunmtr"),
    torch.complex128: ("zhetrd", "zstein", "zunmtr"),
}
#: from this size a single-worker call runs LAPACK on the caller's kernel threads (the
#: planner's ``THREADED_LAPACK_MIN_N``, tested equal): one 2,000 x 2,000 matrix, k = 8, took
#: 457 ms on one OpenBLAS thread and 241 ms on two (1,000: 47 and 29 ms)
THREADED_MIN_N = 256
#: the chain runs from this size (below it ?syevr's bisection is cheap and the chain's
#: extra calls are not)
CHAIN_MIN_N = 32
_F2PY = {
    torch.float32: "ssyevr",
    torch.float64: "dsyevr",
    torch.complex64: "cheevr",
    torch.complex128: "zheevr",
}
_local = threading.local()


class _Lapack:
    """The LAPACKE ``?syevr``/``?heevr`` of SciPy's LAPACK and the gate of its BLAS thread
    count (``None`` where the library has no OpenBLAS knob)."""

    def __init__(self) -> None:
        import scipy.linalg.lapack  # noqa: F401  (loads the library we look for)

        self.routines: dict[torch.dtype, Any] = {}
        #: the compiled helper, which runs the chain (``None``: not built, or
        #: ``SPECTRA_NATIVE=0``), and the kinds whose LAPACK steps it was handed
        self.helper: Any = _extension()
        self.chained: set[int] = set()
        self.gate: ThreadGate | None = None
        for path in _loaded_libraries():
            lib = _open(path)
            if lib is None:
                continue
            for dtype, name in _NAMES.items():
                fn = _entry(lib, name)
                if fn is not None and dtype not in self.routines:
                    self.routines[dtype] = _typed(fn, dtype)
                    steps = [_entry(lib, f"LAPACKE_{step}_work") for step in _CHAIN[dtype]]
                    if self.helper is not None and all(f is not None for f in steps):
                        where = [ctypes.cast(f, ctypes.c_void_p).value for f in steps]
                        if self.helper.window_load(_KIND[dtype], *where):
                            self.chained.add(_KIND[dtype])
            if self.routines and self.gate is None:
                knob = getattr(lib, "openblas_set_num_threads_local", None)
                if knob is not None:
                    knob.argtypes, knob.restype = [ctypes.c_int], ctypes.c_int
                    self.gate = ThreadGate(knob)
            if len(self.routines) == len(_NAMES):
                break


def _loaded_libraries() -> list[str]:
    """Shared libraries of this process that may hold SciPy's LAPACK (its own first)."""
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.rsplit(None, 1)[-1] for line in fh if "/" in line}
    except OSError:  # pragma: no cover - non-Linux: the f2py route
        return []
    found = [p for p in paths if ("lapack" in p or "openblas" in p) and ".so" in p]
    found = [p for p in found if "openblas64" not in p]  # NumPy's 64-bit-integer build
    return sorted(found, key=lambda p: "scipy" not in p)


def _open(path: str) -> Any:
    try:
        return ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
    except OSError:  # pragma: no cover
        return None


def _entry(lib: Any, name: str) -> Any:
    """``lib``'s routine ``name`` (SciPy's bundled OpenBLAS prefixes it with ``scipy_``)."""
    return getattr(lib, "scipy_" + name, None) or getattr(lib, name, None)


def _typed(fn: Any, dtype: torch.dtype) -> Any:
    real = ctypes.c_float if dtype in (torch.float32, torch.complex64) else ctypes.c_double
    i, p, c = ctypes.c_int, ctypes.c_void_p, ctypes.c_char
    fn.argtypes = [i, c, c, c, i, p, i, real, real, i, i, real, ctypes.POINTER(i), p, p, i, p]
    fn.restype = i
    return fn


#: the one :class:`_Lapack` of the process (built once even when a fan-out's workers ask
#: at the same moment: two loaders would make two thread-count gates)
_lapack = built_once(lambda: _Lapack())


def uses_ctypes(dtype: torch.dtype) -> bool:
    """Whether ``dtype`` runs through LAPACKE by ``ctypes`` (GIL released) here."""
    return dtype in _lapack().routines


class _Scratch:
    """Per-thread buffers reused across the matrices of a block."""

    __slots__ = ("a", "isuppz", "w", "z")

    def __init__(self, n: int, m: int, dtype: torch.dtype, real: torch.dtype) -> None:
        self.a = torch.empty((n, n), dtype=dtype)
        self.w = torch.empty(n, dtype=real)
        self.z = torch.empty_strided((n, m), (1, n), dtype=dtype)
        self.isuppz = np.empty(2 * max(1, n), dtype=np.int32)


def _scratch(n: int, m: int, dtype: torch.dtype, real: torch.dtype) -> _Scratch:
    got = getattr(_local, "scratch", None)
    if got is None or got.a.shape[0] != n or got.z.shape[1] != m or got.a.dtype != dtype:
        got = _Scratch(n, m, dtype, real)
        _local.scratch = got
    return got


def window_into(
    a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None, lo: int, hi: int
) -> list[int]:
    """Eigenpairs ``lo .. hi - 1`` (0-based, ascending) of each matrix of the CPU block ``a``
    (``(B, n, n)``, lower triangle read) written into ``w`` (``(B, hi - lo)``) and ``v``
    (``(B, n, hi - lo)``, any strides; column-major is written in place, or ``None``).
    Returns the batch positions LAPACK reported a failure for (``info > 0``: inverse
    iteration did not converge), which the caller recomputes another way."""
    lap = _lapack()
    fn = lap.routines.get(a.dtype)
    if fn is None:
        return _window_f2py(a, w, v, lo, hi)
    # the kernel threads the executor left this thread: one in its fan-outs and below
    # THREADED_MIN_N; a single-worker call of a large matrix keeps the caller's
    threads = torch.get_num_threads() if a.shape[-1] >= THREADED_MIN_N else 1
    with lap.gate.hold(threads) if lap.gate is not None else contextlib.nullcontext():
        declined = _chained(lap, a, w, v, lo, hi)
        rest = range(a.shape[0]) if declined is None else declined  # the chain ran
        return _syevr_into(lap, fn, a, w, v, lo, hi, rest) if rest else []


def _syevr_into(
    lap: _Lapack,
    fn: Any,
    a: torch.Tensor,
    w: torch.Tensor,
    v: torch.Tensor | None,
    lo: int,
    hi: int,
    rest: Sequence[int],
) -> list[int]:
    """:func:`window_into` by ``?syevr`` for the matrices ``rest`` of the block."""
    n, m = a.shape[-1], hi - lo
    s = _scratch(n, m, a.dtype, w.dtype)
    jobz = b"V" if v is not None else b"N"
    # every matrix in the same (aligned) buffers, whatever its position in the batch, so
    # that its result is bitwise the same in any batch, chunk or worker
    zp = s.z.data_ptr() if v is not None else None
    count = ctypes.c_int(0)
    mref = ctypes.byref(count)
    failed: list[int] = []
    for i in rest:
        if a.is_complex():
            torch.conj_physical(a[i], out=s.a)
        else:
            s.a.copy_(a[i])
        info = fn(
            _COL_MAJOR, jobz, b"I", b"U", n, s.a.data_ptr(), n, 0.0, 0.0, lo + 1, hi,
            0.0, mref, s.w.data_ptr(), zp, n, s.isuppz.ctypes.data,
        )  # fmt: skip
        if info != 0 or count.value != m:
            if info < 0:  # pragma: no cover - an argument we passed is wrong: a bug
                raise RuntimeError(f"LAPACK {_NAMES[a.dtype]}: argument {-info} invalid")
            failed.append(i)
            continue
        w[i] = s.w[:m]
        if v is not None:
            v[i] = s.z
    return failed


def _chained(
    lap: _Lapack, a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None, lo: int, hi: int
) -> list[int] | None:
    """The block by the chain (the compiled helper's ``window_batch``, GIL released):
    the positions it declined, or ``None`` where it does not serve the block (no vectors,
    ``n < CHAIN_MIN_N``, all ``n`` pairs, the helper or the LAPACKE steps not found,
    values not contiguous)."""
    n, m = a.shape[-1], hi - lo
    kind = _KIND[a.dtype]
    if (
        v is None or n < CHAIN_MIN_N or m >= n or lap.helper is None
        or kind not in lap.chained or w.stride(-1) != 1
    ):  # fmt: skip
        return None
    declined = np.zeros(a.shape[0], dtype=np.int64)
    count = lap.helper.window_batch(
        kind, a.shape[0], n, lo, hi, a.data_ptr(), *a.stride(), w.data_ptr(), w.stride(0),
        v.data_ptr(), *v.stride(), declined.ctypes.data,
    )  # fmt: skip
    if count < 0:
        return None
    return declined[:count].tolist()


def _window_f2py(
    a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None, lo: int, hi: int
) -> list[int]:
    """:func:`window_into` through ``scipy.linalg.lapack`` (holds the GIL)."""
    import scipy.linalg.lapack as lapack

    fn = getattr(lapack, _F2PY[a.dtype])
    failed = []
    for i in range(a.shape[0]):
        x = a[i].numpy()
        x = np.conj(x) if a.is_complex() else x
        wi, zi, m, _, info = fn(
            x.T, compute_v=int(v is not None), range="I", lower=0, il=lo + 1, iu=hi
        )
        if info != 0 or m != hi - lo:
            failed.append(i)
            continue
        w[i] = torch.from_numpy(np.ascontiguousarray(wi[: hi - lo]))
        if v is not None:
            v[i] = torch.from_numpy(zi[:, : hi - lo])
    return failed


def window_result(a: torch.Tensor, vectors: bool, m: int) -> Result:
    """Uninitialized outputs for ``m`` eigenpairs of each matrix of the block ``a``: ``(B, m)``
    eigenvalues in the real dtype and, with ``vectors``, ``(B, n, m)`` column-major.

    >>> w, v = window_result(torch.zeros(2, 5, 5, dtype=torch.complex128), True, 3)
    >>> w.shape, w.dtype, v.stride()
    (torch.Size([2, 3]), torch.float64, (15, 1, 5))
    """
    b, n = a.shape[0], a.shape[-1]
    real = a.dtype.to_real()
    w = torch.empty((b, m), dtype=real, device=a.device)
    v = None
    if vectors:
        v = torch.empty_strided((b, n, m), (n * m, 1, n), dtype=a.dtype, device=a.device)
    return w, v


def window_solve(a: torch.Tensor, vectors: bool, lo: int, hi: int) -> Result:
    """Eigenpairs ``lo .. hi - 1`` of each matrix of the CPU block ``a`` (``(B, n, n)``):
    ``(w (B, m), v (B, n, m) or None)``, ``m = hi - lo``; matrices LAPACK failed on are
    solved in full by ``torch.linalg.eigh`` and sliced."""
    with torch.no_grad():
        x = a if a.is_contiguous() else a.contiguous()
        w, v = window_result(x, vectors, hi - lo)
        window_into_safe(x, w, v, lo, hi)
        return w, v


def window_into_safe(
    a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None, lo: int, hi: int
) -> None:
    """:func:`window_into`, with the matrices it failed on solved in full and sliced."""
    from ._torch_lapack import torch_eigh

    with torch.no_grad():
        x = a if a.is_contiguous() else a.contiguous()
        failed = window_into(x, w, v, lo, hi)
        if failed:
            idx = torch.tensor(failed)
            wf, vf = torch_eigh(x[idx], v is not None)
            w[idx] = wf[:, lo:hi]
            if v is not None and vf is not None:
                v[idx] = vf[:, :, lo:hi]
