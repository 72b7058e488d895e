"""The full eigendecomposition by the ``?syevd``/``?heevd`` of the OpenBLAS that SciPy
ships, through its LAPACKE ``_work`` entries by ``ctypes`` (the GIL released, so the
executor's fan-out runs one matrix per core).

Why a second LAPACK: torch's CPU builds carry MKL, whose dispatcher takes its generic code
path on CPUs that are not Intel's. On the AMD EPYC development VM the same driver in
SciPy's OpenBLAS was faster, one thread each: float64 1.12-1.23x from ``n = 256``, complex128
1.12-1.27x at ``n = 64 .. 256``; elsewhere level or slower (float32 down to 0.76x;
``benchmarks/results/lapack-libraries-2026-12-05.json``). Which problems it takes by default is the
strategy's claim (:mod:`spectra.core._strategies._openblas`).

Every matrix is solved in the same per-thread buffers (64-byte aligned: torch's CPU
allocator), with workspaces of LAPACK's documented sizes allocated once per thread and
size, so that a matrix's bits never depend on where it lay in its batch or on a workspace
LAPACKE would allocate per call. The matrix is copied into a column-major buffer as it is
(LAPACK reads its lower triangle, as ``torch.linalg.eigh`` does) and the eigenvectors come
back column-major, the executor's output layout. OpenBLAS runs on one thread in a
fan-out's workers, or on the caller's kernel threads for a single-worker call from
``THREADED_MIN_N``, as the partial solve does (:mod:`._lapack_subset`): its thread count is
one process-wide setting, held through the same gate (:mod:`._openblas_threads`), never
changed under a running block and restored after the last; set and restored per block it
made the bits of a process's first concurrent calls vary (11 of 12 processes, measured).
Without OpenBLAS's knob (a SciPy built on another library) the strategy is unavailable:
the default stays torch's LAPACK.

>>> import torch
>>> if available():
...     a = torch.diag(torch.tensor([3.0, 1.0, 2.0], dtype=torch.float64))[None]
...     w, v = openblas_eigh(a, True)
...     print(w.tolist())
... else:
...     print([[1.0, 2.0, 3.0]])
[[1.0, 2.0, 3.0]]
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import torch

from .._support._threads import built_once
from . import _lapack_subset as subset
from ._openblas_threads import ThreadGate
from ._torch_lapack import empty_result

Result = tuple[torch.Tensor, "torch.Tensor | None"]

_COL_MAJOR = 102
_NAMES = subset.lapacke_names("syevd", "heevd", "_work")
_local = threading.local()


class _Routines:
    """The LAPACKE ``?syevd_work``/``?heevd_work`` entries and the gate of OpenBLAS's thread
    count (the partial solve's: one gate per process)."""

    def __init__(self) -> None:
        lapack = subset._lapack()  # loads SciPy's LAPACK and finds its thread knob
        self.gate: ThreadGate | None = lapack.gate
        self.fns: dict[torch.dtype, Any] = {}
        for path in subset._loaded_libraries():
            lib = subset._open(path)
            if lib is None:
                continue
            for dtype, name in _NAMES.items():
                fn = subset._entry(lib, name)
                if fn is not None and dtype not in self.fns:
                    self.fns[dtype] = _typed(fn, dtype)
            if len(self.fns) == len(_NAMES):
                break


def _typed(fn: Any, dtype: torch.dtype) -> Any:
    i, p, c = ctypes.c_int, ctypes.c_void_p, ctypes.c_char
    # layout, jobz, uplo, n, a, lda, w, work, lwork, (complex: rwork, lrwork,) iwork, liwork
    if dtype.is_complex:
        fn.argtypes = [i, c, c, i, p, i, p, p, i, p, i, p, i]
    else:
        fn.argtypes = [i, c, c, i, p, i, p, p, i, p, i]
    fn.restype = i
    return fn


#: the process's one :class:`_Routines`
_routines = built_once(lambda: _Routines())


def available() -> bool:
    """Whether SciPy's LAPACK offers every ``?syevd``/``?heevd`` by LAPACKE here, with
    OpenBLAS's thread-count knob behind the gate (without it a fan-out would oversubscribe)."""
    r = _routines()
    return r.gate is not None and len(r.fns) == len(_NAMES)


class _Scratch:
    """One thread's buffers for ``n x n`` matrices of one dtype: the matrix LAPACK
    overwrites with the eigenvectors, the eigenvalues and the workspaces (jobz = 'V' sizes
    from LAPACK's documentation, which suffice for 'N' too)."""

    __slots__ = ("a", "args", "dtype", "iwork", "n", "rwork", "w", "work")

    def __init__(self, n: int, dtype: torch.dtype) -> None:
        real = dtype.to_real() if dtype.is_complex else dtype
        self.n, self.dtype = n, dtype
        self.a = torch.empty_strided((n, n), (1, n), dtype=dtype)  # column-major
        self.w = torch.empty(n, dtype=real)
        lwork = 2 * n + n * n if dtype.is_complex else 1 + 6 * n + 2 * n * n
        self.work = torch.empty(max(1, lwork), dtype=dtype)
        self.rwork = torch.empty(max(1, 1 + 5 * n + 2 * n * n), dtype=real)
        self.iwork = torch.empty(max(1, 3 + 5 * n), dtype=torch.int32)
        sizes = [self.work.data_ptr(), self.work.numel()]
        if dtype.is_complex:
            sizes += [self.rwork.data_ptr(), self.rwork.numel()]
        self.args = (*sizes, self.iwork.data_ptr(), self.iwork.numel())


def _scratch(n: int, dtype: torch.dtype) -> _Scratch:
    got = getattr(_local, "scratch", None)
    if got is None or got.n != n or got.dtype != dtype:
        got = _Scratch(n, dtype)
        _local.scratch = got
    return got


def openblas_eigh_into(a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None) -> None:
    """Every matrix of the CPU block ``a`` (``(B, n, n)``, lower triangle read) solved into
    ``w`` (``(B, n)``) and ``v`` (``(B, n, n)``, any strides, or ``None``: eigenvalues
    only). A failure (``info != 0``: the divide and conquer did not converge) raises
    ``RuntimeError`` naming the batch position, as torch's LAPACK errors do."""
    r = _routines()
    fn = r.fns[a.dtype]
    n = a.shape[-1]
    if a.shape[0] == 0 or n == 0:
        return
    s = _scratch(n, a.dtype)
    jobz = b"V" if v is not None else b"N"
    threads = torch.get_num_threads() if n >= subset.THREADED_MIN_N else 1
    assert r.gate is not None  # available() said so
    with r.gate.hold(threads):
        for i in range(a.shape[0]):
            s.a.copy_(a[i])
            info = fn(_COL_MAJOR, jobz, b"L", n, s.a.data_ptr(), n, s.w.data_ptr(), *s.args)
            if info != 0:
                raise RuntimeError(
                    f"linalg.eigh: (Batch element {i}): The algorithm failed to converge "
                    f"(SciPy's LAPACK {_NAMES[a.dtype][8:14]}, info = {info})"
                )
            w[i] = s.w
            if v is not None:
                v[i] = s.a


def openblas_eigh(a: torch.Tensor, vectors: bool) -> Result:
    """:func:`openblas_eigh_into` into fresh outputs (eigenvectors column-major)."""
    w, v = empty_result(a, vectors)
    with torch.no_grad():
        openblas_eigh_into(a, w, v)
    return w, v
