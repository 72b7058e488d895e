"""The one adapter from the core to ``torch.linalg.eigh``/``eigvalsh``: every strategy,
fallback and recomputation that hands matrices to torch's LAPACK goes through here.

On the CPU it makes results independent of where a matrix lies in memory. MKL's LAPACK
(torch's CPU builds) peels its vector loops to aligned addresses, so on some CPUs (seen on
an AMD EPYC with AVX-512, MKL 2024.2) ``torch.linalg.eigh(x)[i]`` differs in the last bits
from ``torch.linalg.eigh(x[i])`` whenever matrix ``i`` of the batch does not start on a
64-byte boundary: float32 33x33 (4,356 bytes) members differ at every odd position. A
batched LAPACK call is therefore used only when every matrix, and every eigenvalue row, of
the call starts on a 64-byte boundary (``n * n * itemsize`` and ``n * real itemsize``
multiples of 64, and the output on such a boundary); otherwise each matrix is solved by
its own call, which stages it in a fresh 64-byte-aligned buffer exactly as a call on that
single matrix does (torch's CPU allocator aligns to 64 bytes). The result of one matrix is
then bitwise the same whatever the batch, slice, chunk, worker or Dask block it came in.
The cost is torch's per-call overhead (a few microseconds against the >= 60 us of a
LAPACK solve at the sizes that reach LAPACK).

>>> import torch
>>> x = torch.randn(5, 33, 33)
>>> x = x + x.mT
>>> lapack_aligned(x)  # 4,356 bytes per matrix: each is solved on its own
False
>>> w, v = torch_eigh(x, True)
>>> bool(torch.equal(w[3], torch.linalg.eigh(x[3]).eigenvalues))
True
"""

from __future__ import annotations

import torch

#: the boundary MKL's kernels align to (one cache line, an AVX-512 register)
ALIGNMENT = 64

#: below this size LAPACK's ``?syevd``/``?heevd`` run sequentially whatever the thread setting.
#: From ``n = 26`` (float64, complex128; 27 for float32, complex64) MKL's divide and conquer
#: multiplies its merged eigenvectors with ``?gemm`` inside an OpenMP region of the caller's
#: kernel threads (seen with gdb: ``GOMP_parallel`` under ``?laed3``). Hot, that region cost
#: 5-25% of one 26-31 call; after the process was idle for 0.12 s it cost ~10 ms per call on
#: the 2-core VM, the GNU OpenMP team's wake-up (``OMP_WAIT_POLICY=PASSIVE``, which a library
#: may not set, brought a parallel op there from 7.5 to 0.27 ms). Eigenvalues only: no region
#: up to 32 (measured 2026-12-05, ``benchmarks/results/idle-calls-2026-12-05.py.txt``).
#: From here one matrix's solve runs on one kernel thread (:func:`one_kernel_thread`); the
#: bits are those of the caller's threads (``tests/core/test_direct.py``).
SEQUENTIAL_N = 26
#: ``(dtype, eigenvectors) -> n`` from which one matrix's ``?syevd``/``?heevd`` (torch's
#: MKL) runs faster on two kernel threads than on one. Measured one matrix at a time, 1
#: and 2 threads alternating, 5 rounds of 15-400 calls (AMD EPYC, 2 cores, 2026-12-05;
#: ``benchmarks/results/threaded-lapack-2026-12-05.json``, script beside it): eigenpairs
#: float64 1.19-1.46x from n = 56 (one 0.97x at 96; 0.81-0.98x at 32-52), float32
#: 1.04-1.32x from 50, complex64 1.05-1.51x from 40, complex128 1.06-1.60x from 48;
#: eigenvalues only, real ones gain nothing below 255 (0.92-1.0x), complex64 1.08-1.33x
#: from 96, complex128 1.0x at 48-50 and 1.10-1.51x from 52. A first run without a
#: threaded warm-up read float32 eigenpairs 0.73-0.94x (``...-nowarmup.json``; three
#: shorter runs 1.01-1.28x from 56). The real ones start at 50: there torch's own two
#: threads read 1.09-1.2x one thread in a process that also runs torch's threaded calls,
#: as a user's does (``benchmarks/results/threaded-float64-2026-12-05*.json``, script
#: beside them; one run 0.97x at 50, 1.17-1.25x at 52-54), and running as torch does keeps
#: one matrix at torch's time. Below these sizes, and below
#: :data:`THREADED_LAPACK_MIN_N` for every other solve, each solve runs on one kernel
#: thread.
THREADED_FROM: dict[tuple[torch.dtype, bool], int] = {
    (torch.float32, True): 50,
    (torch.float64, True): 50,
    (torch.complex64, True): 48,
    (torch.complex128, True): 48,
    (torch.complex64, False): 128,
    (torch.complex128, False): 48,
}


#: from this size a single-worker call runs its solver on the caller's kernel threads
#: whatever the strategy (the planner's default; measured for OpenBLAS's partial solve,
#: ``_lapack_subset.THREADED_MIN_N``)
THREADED_LAPACK_MIN_N = 256


def threaded_from(dtype: torch.dtype, vectors: bool) -> int:
    """The size from which a single-worker call of ``dtype`` (eigenvectors or not) runs
    torch's LAPACK on the caller's kernel threads, as ``torch.linalg.eigh`` does.

    >>> threaded_from(torch.float64, True), threaded_from(torch.float64, False)
    (50, 256)
    """
    return THREADED_FROM.get((dtype, vectors), THREADED_LAPACK_MIN_N)


def one_kernel_thread(n: int, dtype: torch.dtype, vectors: bool) -> bool:
    """Whether one ``n x n`` solve of ``dtype`` in the caller's thread is run with one
    kernel thread set: from the size LAPACK may thread (:data:`SEQUENTIAL_N`; below it the
    setting would change nothing) to :func:`threaded_from`.

    >>> [one_kernel_thread(n, torch.float64, True) for n in (8, 40, 64)]
    [False, True, False]
    """
    return SEQUENTIAL_N <= n < threaded_from(dtype, vectors)


Result = tuple[torch.Tensor, "torch.Tensor | None"]


def _itemsizes(dtype: torch.dtype) -> tuple[int, int]:
    item = torch.empty((), dtype=dtype).element_size()
    return item, (item // 2 if dtype.is_complex else item)


def lapack_aligned(a: torch.Tensor, *outputs: torch.Tensor | None) -> bool:
    """Whether one batched LAPACK call on ``a`` (``(B, n, n)``, writing into ``outputs``)
    starts every matrix and eigenvalue row on a 64-byte boundary (always true on CUDA and
    for a single matrix in fresh memory)."""
    if a.device.type != "cpu":
        return True
    if a.dim() < 3 or a.shape[0] <= 1:
        return all(o is None or o.data_ptr() % ALIGNMENT == 0 for o in outputs)
    n = a.shape[-1]
    item, real = _itemsizes(a.dtype)
    if (n * n * item) % ALIGNMENT or (n * real) % ALIGNMENT:
        return False
    return all(o is None or o.data_ptr() % ALIGNMENT == 0 for o in outputs)


def torch_eigh(a: torch.Tensor, vectors: bool) -> Result:
    """``torch.linalg.eigh`` (or ``eigvalsh``) of the ``(B, n, n)`` block ``a``, each
    matrix's result independent of its position (see the module docstring)."""
    with torch.no_grad():
        if lapack_aligned(a):
            if vectors:
                w, v = torch.linalg.eigh(a)
                return w, v
            return torch.linalg.eigvalsh(a), None
        w, v = empty_result(a, vectors)
        _per_matrix(a, w, v)
        return w, v


def empty_result(a: torch.Tensor, vectors: bool) -> Result:
    """Uninitialized outputs for the ``(B, n, n)`` block ``a`` on its device: eigenvalues
    ``(B, n)`` in the real dtype, and eigenvectors (when ``vectors``) column-major, as
    LAPACK returns them, so that an ``into`` solver writes them in place.

    >>> w, v = empty_result(torch.zeros(2, 3, 3, dtype=torch.complex64), True)
    >>> w.dtype, v.stride()
    (torch.float32, (9, 1, 3))
    """
    n = a.shape[-1]
    real = a.dtype.to_real()
    w = torch.empty(a.shape[:-1], dtype=real, device=a.device)
    v = None
    if vectors:
        v = torch.empty_strided(a.shape, (n * n, 1, n), dtype=a.dtype, device=a.device)
    return w, v


def torch_eigh_into(a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None) -> None:
    """:func:`torch_eigh` written into ``w`` (``(B, n)``) and ``v`` (``(B, n, n)``, any
    strides; column-major is written in place by LAPACK)."""
    with torch.no_grad():
        if lapack_aligned(a, w, v):
            if v is not None:
                torch.linalg.eigh(a, out=(w, v))
            else:
                torch.linalg.eigvalsh(a, out=w)
            return
        _per_matrix(a, w, v)


def _per_matrix(a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None) -> None:
    """One LAPACK call per matrix, each in torch's fresh (64-byte aligned) buffers."""
    for i in range(a.shape[0]):
        if v is not None:
            wi, vi = torch.linalg.eigh(a[i])
            v[i] = vi
        else:
            wi = torch.linalg.eigvalsh(a[i])
        w[i] = wi
