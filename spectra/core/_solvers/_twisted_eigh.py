"""The full eigendecomposition of real symmetric matrices by a tridiagonal eigensolver that
works on several matrices at once, in one compiled call without the GIL
(:func:`._kernels._numba_twisted.solve_blocks`): SciPy's OpenBLAS reduces each matrix to
tridiagonal form (``?sytrd``) and applies the reflectors to the tridiagonal's eigenvectors
(``?ormtr``), as its ``?syevd`` does (up to :data:`LANES_MAX_N`, complex up to
:data:`LANES_COMPLEX_MAX_N`, the compiled helper's eight-lane reduction instead,
``_native_lanes.c``: the same reflectors, eight matrices at once, 15 against 57 us a float32
``n = 64`` matrix, 94 against 229 at 128, 9 against 34 a complex64 ``n = 32``, one thread;
for real matrices up to :data:`LANES_MTR_MAX_N` its back-transformation too); between the
two, where ``?syevd`` runs a divide and conquer per matrix, the lane kernel solves eight
tridiagonals together: QL eigenvalues across the lanes, then per matrix a twisted
factorization per eigenvalue (vectorized over the eigenvalues, O(n^2) per matrix), one
Rayleigh quotient step and a Loewdin correction of close pairs (see
:mod:`._kernels._numba_twisted`).

Why: on the AMD EPYC development VM the divide and conquer is ~60% of ``?syevd``'s time at
``n = 64-128`` (OpenBLAS, one thread: 217 of 382 us at 64), and torch's MKL runs its generic
code there; the batched float64 ``n = 64-128`` rows of ``spectra bench`` were a tie with
the thread fan-out, the same MKL call on both sides.

Robustness: a matrix whose tridiagonal has eigenvalues closer than ``GAP * ||T||``
(degenerate or nearly so), a residual above LAPACK's scale, or a QL that did not converge,
is flagged by the kernel and its tridiagonal solved by OpenBLAS's ``dstedc`` instead.
Arithmetic on the tridiagonal is float64 for float32 input too; ``?sytrd``/``?ormtr`` run
in the input's precision. Lanes never mix (masked selects), so a matrix's bits do not
depend on its neighbours in the batch.

>>> import torch
>>> if available():
...     a = torch.diag(torch.tensor([3.0, 1.0, 2.0], dtype=torch.float64))[None]
...     w, v = twisted_eigh(a, True)
...     print(w.tolist())
... else:
...     print([[1.0, 2.0, 3.0]])
[[1.0, 2.0, 3.0]]
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np
import torch

from .._support._threads import built_once
from . import _lapack_subset as subset
from ._native import _GAUGE, _KIND, _extension
from ._openblas_threads import ThreadGate
from ._torch_lapack import empty_result

Result = tuple[torch.Tensor, "torch.Tensor | None"]

_PREFIX = {torch.float32: "s", torch.float64: "d", torch.complex64: "c", torch.complex128: "z"}
_local = threading.local()


#: the LAPACKE ``_work`` entries the kernel calls, by key (dtype prefix + the real name)
_WANTED = {
    "dsytrd": "LAPACKE_dsytrd_work",
    "ssytrd": "LAPACKE_ssytrd_work",
    "zsytrd": "LAPACKE_zhetrd_work",
    "csytrd": "LAPACKE_chetrd_work",
    "dormtr": "LAPACKE_dormtr_work",
    "sormtr": "LAPACKE_sormtr_work",
    "zormtr": "LAPACKE_zunmtr_work",
    "cormtr": "LAPACKE_cunmtr_work",
    "dstedc": "LAPACKE_dstedc_work",
}


class _Routines:
    """The addresses of OpenBLAS's reductions (``?sytrd``/``?hetrd``) and back-
    transformations (``?ormtr``/``?unmtr``) for the four dtypes and ``dstedc`` (SciPy's
    LAPACK), and the gate of OpenBLAS's thread count (the partial solve's)."""

    def __init__(self) -> None:
        lapack = subset._lapack()
        self.gate: ThreadGate | None = lapack.gate
        self.addresses: dict[str, int] = {}
        for path in subset._loaded_libraries():
            lib = subset._open(path)
            if lib is None:
                continue
            for key, name in _WANTED.items():
                fn = subset._entry(lib, name)
                if fn is not None and key not in self.addresses:
                    self.addresses[key] = ctypes.cast(fn, ctypes.c_void_p).value or 0
            if len(self.addresses) == len(_WANTED):
                break
        self.lanes = _lane_addresses()
        self.passes = _pass_addresses()

    def address(self, key: str) -> int:
        """The entry ``key``'s address, as the kernel calls it (``_numba_twisted._c_call``).
        A lanes' entry the helper lacks is never called (its scratch is empty): any valid
        address stands in for it."""
        return self.lanes.get(key) or self.addresses.get(key) or self.addresses["dsytrd"]

    def lanes_for(self, n: int, dtype: torch.dtype, back: bool = False) -> bool:
        """Whether the eight-lane reduction (``_native_lanes.c``) reduces ``n x n`` matrices
        of ``dtype`` (built, up to :data:`LANES_MAX_N` real, :data:`LANES_COMPLEX_MAX_N`
        complex), or with ``back`` whether its back-transformation transforms them (real,
        up to :data:`LANES_MTR_MAX_N`)."""
        if back:
            return _PREFIX[dtype] + "lanesmtr" in self.lanes and n <= LANES_MTR_MAX_N
        top = LANES_COMPLEX_MAX_N if dtype.is_complex else LANES_MAX_N
        return _PREFIX[dtype] + "lanes" in self.lanes and n <= top


#: the largest real ``n`` the eight-lane reduction takes (from 256 on OpenBLAS's blocked
#: ``?sytrd``; the whole solve, one thread, lanes against OpenBLAS: float32 1513 / 1733 us
#: a matrix at 192, float64 2552 / 2729; at 256 a tie, 0.89-1.06x across runs, and at
#: 384-512 0.95-1.04x, ``benchmarks/results/lanes-reduction-2026-12-06c.json``)
LANES_MAX_N = 255
#: the same for complex matrices, whose ``?hetrd`` the lanes beat up to the strategy's last
#: size (the whole solve 1.03-1.18x at ``n = 256-512``, the same JSON)
LANES_COMPLEX_MAX_N = 512
#: the largest ``n`` its back-transformation takes (above it OpenBLAS's blocked ``?ormtr``,
#: GEMM-based: the lanes' read 1.07-1.1x slower at 192-256, 1.09x faster at 128)
LANES_MTR_MAX_N = 160


def _lane_addresses() -> dict[str, int]:
    """The compiled helper's eight-lane reductions (``"slanes"``, ``"dlanes"``,
    ``"clanes"``, ``"zlanes"``) and real back-transformations (``"slanesmtr"``,
    ``"dlanesmtr"``), where it is built and not switched off (``SPECTRA_NATIVE=0``, read
    once per process)."""
    ext = _extension()
    if ext is None or not hasattr(ext, "lanes"):
        return {}
    keys = ("slanes", "dlanes", "slanesmtr", "dlanesmtr", "clanes", "zlanes")
    return dict(zip(keys, map(int, ext.lanes()), strict=True))


def _pass_addresses() -> tuple[int, int] | None:
    """The compiled helper's per-matrix exact-Hermitian test and block gauge
    (``api_hermitian``, ``api_gauge``), which the kernel's fused pass calls, where it is
    built (and not switched off); ``None`` otherwise (the pass declines)."""
    ext = _extension()
    if ext is None or not hasattr(ext, "passes"):
        return None
    hermitian, gauge = map(int, ext.passes())
    return hermitian, gauge


#: the process's one :class:`_Routines`
_routines = built_once(lambda: _Routines())


def lanes_for(n: int, dtype: torch.dtype) -> bool:
    """Whether the compiled eight-lane reduction reduces ``n x n`` matrices of ``dtype``
    here (``n <=`` :data:`LANES_MAX_N` or :data:`LANES_COMPLEX_MAX_N`, the helper built and
    not switched off)."""
    return _routines().lanes_for(n, dtype)


def available() -> bool:
    """Whether SciPy's OpenBLAS offers every routine here, with its thread-count knob
    behind the gate, and numba is importable (the lane kernel)."""
    from ._kernels import numba_available

    r = _routines()
    return r.gate is not None and len(r.addresses) == len(_WANTED) and numba_available()


_NUMPY = {
    torch.float32: np.float32,
    torch.float64: np.float64,
    torch.complex64: np.complex64,
    torch.complex128: np.complex128,
}


class _Scratch:
    """One thread's buffers for ``n x n`` matrices of one dtype: the reduced matrices of a
    block of ``W`` (their reflectors), the reduction's ``tau`` and real tridiagonals, and
    LAPACK's workspaces (``?sytrd``/``?ormtr``: 64 n, above both block sizes; ``dstedc``:
    its documented sizes, inside the kernel's scratch)."""

    def __init__(self, n: int, dtype: torch.dtype) -> None:
        from ._kernels._numba_twisted import W

        self.n, self.dtype = n, dtype
        self.key: tuple[object, ...] = ()
        kind = _NUMPY[dtype]
        real = np.float32 if dtype in (torch.float32, torch.complex64) else np.float64
        self.h = np.empty((W, n, n), dtype=kind)
        self.tau = np.empty((W, max(n, 1)), dtype=kind)
        self.tri = np.empty((2, W, max(n, 1)), dtype=real)  # diagonals, off-diagonals
        self.work = np.empty(max(1, 64 * n), dtype=kind)
        # the eight-lane reduction's (``_native_lanes.c``), empty where it does not run
        r = _routines()
        lanes, back = r.lanes_for(n, dtype), r.lanes_for(n, dtype, back=True)
        self.lanes_ws = np.empty((n * (n + 1) // 2 + 3 * n) * W if lanes else 0, dtype=kind)
        self.mtr_ws = np.empty((n * (n + 1) // 2 + 9 * n) * W if back else 0, dtype=kind)
        # the kernel's float64 scratch, dstedc's workspace included
        # (``_numba_twisted.scratch_size``: its formula here, so that building it compiles
        # nothing), and dstedc's integer workspace followed by the twist indices
        self.ws = np.empty(5 * n * n + 7 * n * W + 15 * n + 14 * W + 1)
        self.iwork = np.empty(3 + 6 * n, dtype=np.int32)


def _scratch(n: int, dtype: torch.dtype) -> _Scratch:
    """This thread's scratch for ``n x n`` matrices of ``dtype`` (made again when the sizes
    the lanes take were changed: tests and benchmarks switch them off)."""
    got = getattr(_local, "twisted", None)
    key = (n, dtype, LANES_MAX_N, LANES_MTR_MAX_N, LANES_COMPLEX_MAX_N)
    if got is None or got.key != key:
        got = _Scratch(n, dtype)
        got.key = key
        _local.twisted = got
    return got


_STEPS = {1: "sytrd", 2: "stedc", 3: "ormtr"}
#: dtype -> the compiled entry of ``solve_blocks`` for it (see :func:`_compiled`)
_ENTRIES: dict[Any, Any] = {}


def _compiled(kernel: Any, dtype: Any) -> Any:
    """``kernel``'s compiled entry for arrays of ``dtype``, once numba's dispatcher has
    compiled or loaded it: the dispatcher types every argument on every call. The arrays
    passed are always C-ordered and aligned, of one ndim each, and the routines' addresses
    integers, so their dtype alone picks the overload; until it is known (or if numba's
    internals moved) the dispatcher answers. The first call types the arguments and
    compiles (or loads) the overload, then calls its entry."""
    entry = _ENTRIES.get(dtype)
    if entry is not None:
        return entry

    def first(*args: Any) -> Any:
        try:
            from numba import typeof

            signature = tuple(typeof(x) for x in args)
            kernel.compile(signature)
            found = kernel.overloads[signature].entry_point
        except Exception:  # pragma: no cover - numba's internals changed: keep dispatching
            found = kernel
        _ENTRIES[dtype] = found
        return found(*args)

    return first


#: ``passes`` of a call without the fused pass (nothing tested, nothing gauged)
_NO_PASSES = (0, 0, 0, 0, 0)
_NO_GAUGE = (0.0, 0.0, 0.0, 0.0, 0.0)


def twisted_eigh_into(a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None) -> None:
    """Every matrix of the CPU block ``a`` (``(B, n, n)``, lower triangle read) solved into
    ``w`` (``(B, n)``) and ``v`` (``(B, n, n)``, any strides; column-major is written in
    place; ``None``: eigenvalues only). A LAPACK failure raises ``RuntimeError`` naming the
    batch position, as torch's LAPACK errors do."""
    if a.shape[0] == 0 or a.shape[-1] == 0:
        return
    step, where, info = _run(a, w, v, _NO_PASSES, _NO_GAUGE)
    if step:
        p = _PREFIX[a.dtype]
        routine = _WANTED[("d" if step == 2 else p) + _STEPS[step]][8:-5]
        raise RuntimeError(
            f"linalg.eigh: (Batch element {where}): The algorithm failed to converge "
            f"(SciPy's LAPACK {routine}, info = {info})"
        )


def twisted_eigh_fused(
    a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None, check: bool
) -> bool:
    """The strategy's fused pass (:class:`~spectra.core._strategies._base.WritesChecked`):
    :func:`twisted_eigh_into` with, on each block of eight matrices while it is in cache,
    the compiled helper's exact-Hermitian and finiteness test before the reduction (with
    ``check``) and its gauge after the back-transformation (the bits of
    :func:`~spectra.core._pipeline._gauge.fix_gauge_`, the same C function); ``False``
    where it declines: no helper, outputs not laid out as the executor's (``w``
    contiguous, ``v`` column-major), a matrix not exactly Hermitian or not finite, a LAPACK
    failure, eigenvalues not finite, a gauge the helper leaves. The executor then runs its
    own check, solve and gauge on the block, which decide and name what is wrong (the
    blocks solved before the one declined are solved again).

    >>> import torch
    >>> t = torch.tensor([[2.0, -1.0, 0.0], [-1.0, 2.0, -1.0], [0.0, -1.0, 2.0]])
    >>> a = t.double().expand(8, 3, 3)
    >>> w = torch.empty(8, 3, dtype=a.dtype)
    >>> v = torch.empty_strided((8, 3, 3), (9, 1, 3), dtype=a.dtype)
    >>> if available() and twisted_eigh_fused(a, w, v, True):  # each column's peak positive
    ...     print(v[5].mT.mul(1000).round().tolist())
    ... else:
    ...     print([[500.0, 707.0, 500.0], [707.0, 0.0, -707.0], [-500.0, 707.0, -500.0]])
    [[500.0, 707.0, 500.0], [707.0, 0.0, -707.0], [-500.0, 707.0, -500.0]]
    """
    n = a.shape[-1]
    addresses = _routines().passes
    if (
        addresses is None
        or a.dim() != 3
        or a.shape[0] == 0
        or n == 0
        or a.requires_grad
        or not w.is_contiguous()
        or (v is not None and v.stride() != (n * n, 1, n))
    ):
        return False
    passes = (*addresses, _KIND[a.dtype], int(check), 1)
    step, _, _ = _run(a, w, v, passes, _GAUGE[a.dtype])  # the helper's own gauge constants
    return step == 0


def _run(
    a: torch.Tensor,
    w: torch.Tensor,
    v: torch.Tensor | None,
    passes: tuple[int, ...],
    gauge: tuple[float, ...],
) -> tuple[int, int, int]:
    """The kernel's call on ``a`` into ``w`` and ``v`` (copied in where their layout is not
    the kernel's): its ``(step, batch position, info)``."""
    from ._kernels._numba_twisted import solve_blocks

    n, dtype = a.shape[-1], a.dtype
    r = _routines()
    p = _PREFIX[dtype]
    s = _scratch(n, dtype)
    src = a.detach().contiguous().numpy()
    wout = w if w.is_contiguous() else torch.empty(w.shape, dtype=w.dtype)
    if v is None:
        vt = np.empty((0, n, n), dtype=src.dtype)
        vout = None
    else:
        vout = (
            v
            if v.mT.is_contiguous()
            else torch.empty_strided(v.shape, (n * n, 1, n), dtype=v.dtype)
        )
        vt = vout.detach().mT.numpy()
    threads = torch.get_num_threads() if n >= subset.THREADED_MIN_N else 1
    assert r.gate is not None  # available() said so
    with r.gate.hold(threads):
        got = _compiled(solve_blocks, src.dtype)(
            src,
            wout.detach().numpy(),
            vt,
            (
                r.address(p + "sytrd"),
                r.address(p + "ormtr"),
                r.address("dstedc"),
                r.address(p + "lanes"),
                r.address(p + "lanesmtr" if p in "sd" else "dlanesmtr"),  # complex: unused
                *passes,
            ),
            gauge,
            s.h,
            s.tau,
            s.tri,
            s.work,
            s.lanes_ws,
            s.mtr_ws,
            s.ws,
            s.iwork,
        )
    if got[0]:
        return got
    if wout is not w:
        w.copy_(wout)
    if v is not None and vout is not None and vout is not v:
        v.copy_(vout)
    return got


def twisted_eigh(a: torch.Tensor, vectors: bool) -> Result:
    """:func:`twisted_eigh_into` into fresh outputs (eigenvectors column-major)."""
    w, v = empty_result(a, vectors)
    with torch.no_grad():
        twisted_eigh_into(a, w, v)
    return w, v
