"""The ``twisted`` strategy: real symmetric and complex Hermitian matrices reduced to
tridiagonal form and back (reduced eight at a time by the compiled helper's lanes,
``_native_lanes.c``, real ones below ``n = 256`` and complex ones at every size, real ones
up to 160 transformed back there too; the rest by SciPy's OpenBLAS, ``?sytrd``/``?hetrd``,
``?ormtr``/``?unmtr``), the real tridiagonals solved eight at a time by the lane kernel of
:mod:`.._solvers._kernels._numba_twisted` (QL eigenvalues, twisted factorizations for the
vectors; :mod:`.._solvers._twisted_eigh`), on the CPU.

Where it is the default (:func:`twisted_claim`): eigenvectors wanted, float64 of
``n = 33 .. 512``, complex128 of ``n = 14 .. 512``, complex64 of ``n = 12 .. 512`` and
float32 of ``n = 24 .. 512`` (see :data:`RANGES`; float32 below 256, complex64 below 48 and
complex128 below 21 only with the compiled lanes, :data:`LANES_BELOW`), on x86-64 CPUs that
are not Intel's (MKL runs its generic code there), from 16 matrices (two full lane blocks
per worker; a lane kernel pays for its padding and a call's fixed ~0.1 ms), from 8 at the
larger sizes (:data:`HALF_BATCH_FROM`) and from the lane kernels' batch where it replaces
them (:data:`LANE_KERNEL_SIZES_BELOW`), ranked above the ``openblas`` claim it overlaps and
the lane kernels' claim. Measured one
thread each, interleaved, on the AMD EPYC development VM against torch's MKL
``?syevd``/``?heevd`` (``benchmarks/RESULTS.md``): float64 1.15-1.22x at ``n = 33-48``,
1.12-1.24x at 56-128, 1.19-1.33x at 256-512; complex128 1.26-1.56x at 21-48, 1.39-1.5x at
64-384 (1.23-1.4x against OpenBLAS's own ``?heevd``, the ``openblas`` strategy there).
float32 and complex64 vectors skip the double-precision refinement (their figures are at
:data:`RANGES`); Intel CPUs stay on MKL, where nothing was measured. Only where numba's
compiled kernel is ready (:func:`.._kernels.gate`): no call waits for a compilation.
``strategy="twisted"`` runs it anywhere it is available.

>>> import torch
>>> from spectra.core._strategies import _twisted
>>> _twisted.claim_for(128, torch.float64, "AuthenticAMD").min_batch
16
>>> _twisted.claim_for(512, torch.float64, "AuthenticAMD").min_batch
8
>>> _twisted.claim_for(128, torch.float64, "GenuineIntel") is None
True
>>> from spectra.core._solvers._twisted_eigh import lanes_for
>>> claimed = _twisted.claim_for(128, torch.float32, "AuthenticAMD") is not None
>>> claimed == lanes_for(128, torch.float32)  # with the compiled lanes only
True
"""

from __future__ import annotations

import torch

from .._pipeline._cost import Claim
from .._solvers._kernels._choice import lane_min_batch
from .._solvers._twisted_eigh import (
    available,
    lanes_for,
    twisted_eigh,
    twisted_eigh_fused,
    twisted_eigh_into,
)
from . import _openblas
from ._base import Abilities, Cost, Runs, Strategy, register
from ._checks import numba_check_large
from ._kernels import _gated
from ._openblas import NON_INTEL_X86

#: ``dtype -> (first n, last n + 1)``: sizes measured faster than torch's MKL (and than
#: OpenBLAS's own driver) on a non-Intel x86-64 CPU, one thread each, and than the thread
#: fan-out batched (with the compiled reduction, ``benchmarks/results/lanes-2026-12-06c.json``:
#: float64 1.19-1.55x at ``n = 40-256``, complex128 1.5-1.83x at 21-128). Below
#: :data:`LANE_KERNEL_SIZES_BELOW` it takes over from the lane kernel (``numba-ql``), in
#: random-order rounds against the fan-out at 4,096 matrices
#: (``benchmarks/results/below-lanes-2026-12-06d.json``): float32 ``n = 24-32`` 1.87-1.94x
#: against the lane kernel's 1.29-1.63x (20: 1.74 against 1.95, left to it), complex64
#: 12-23 1.3-1.79x against 0.89-1.12x (10: a tie; 8: 1.3 against 1.61), complex128 14-20
#: 1.4-1.81x against 1.11-1.2x (12: 1.26 against 1.33-1.41). float64 stays from 33
#: (28-32: 1.63-1.76x against 1.45-1.75x, a tie). Below the sizes where one matrix alone
#: runs threaded LAPACK (50 real, 48 complex), one matrix alone runs MKL on one kernel
#: thread, so a member of a batch this strategy takes agrees with it to rounding, not
#: bitwise (``docs/guarantees.md``), as with the lane kernels it replaces there: one matrix
#: through this kernel costs 1.35x torch's call (complex128 ``n = 32``, a lane block's QL
#: for one lane), the claim is worth more to every batch. Single precision (whose vectors
#: skip the refinement double precision needs, ``_numba_twisted._vectors``): complex64
#: 1.35-1.8x the fan-out at ``n = 24-128``, float32 1.13-1.83x at 40-192 (with OpenBLAS's
#: reductions 0.86-1.03x there: :data:`LANES_BELOW`), 1.0-1.12x at 256 and 1.14-1.19x at
#: 512 (OpenBLAS's reduction there, as before)
RANGES: dict[torch.dtype, tuple[int, int]] = {
    torch.float64: (33, 513),
    torch.complex128: (14, 513),
    torch.complex64: (12, 513),
    torch.float32: (24, 513),
}
#: ``dtype -> n`` below which the claim replaces the lane kernel's only: it starts at the
#: batch the lane kernels claim from there (``_choice.lane_min_batch``: 48 real, 96-128
#: complex), so that a call the direct path's LAPACK answers faster stays there (16
#: matrices of complex64 ``n = 12``: the direct path 1.78x the fan-out, this strategy
#: 0.81x; at the lane kernels' batches it read 0.87-1.47x against their 0.65-1.28x:
#: ``benchmarks/results/below-lanes-small-2026-12-06d.json``,
#: ``below-lanes-mid-2026-12-06d.json``)
LANE_KERNEL_SIZES_BELOW: dict[torch.dtype, int] = {
    torch.float32: 33,
    torch.complex64: 24,
    torch.complex128: 21,
}
#: ``dtype -> n`` below which the claim needs the compiled eight-lane reduction
#: (``_native_lanes.c``; ``_twisted_eigh.LANES_MAX_N``; for real matrices its back-
#: transformation too): with it float32 read 1.13-1.83x the fan-out at ``n = 40-192`` and
#: complex64 1.41-1.8x at 24-40 (``benchmarks/results/lanes-2026-12-06c.json``), with
#: OpenBLAS's ``?sytrd``/``?hetrd`` instead 0.93-1.03x and 0.86-1.16x; complex128 below 21
#: was measured with the lanes only
LANES_BELOW: dict[torch.dtype, int] = {
    torch.float32: 256,
    torch.complex64: 48,
    torch.complex128: 21,
}
#: the batch it claims from: two full 8-lane blocks for each of two workers' halves
MIN_BATCH = 16
#: ``dtype -> n`` from which it claims half that batch, 8 matrices (half a lane block per
#: worker): there the O(n^3) reduction outweighs the lanes left empty. Measured 8 matrices
#: against the fan-out, rotating rounds: float64 1.09-1.2x at ``n = 192-512`` (0.93x at
#: 128), complex128 1.23-1.26x at 96-128, complex64 1.1-1.37x at 96-256, float32 1.06-1.2x
#: at 256-512; 4 matrices read 0.98-1.22x and 2 matrices 0.79-1.13x (not claimed)
HALF_BATCH_FROM: dict[torch.dtype, int] = {
    torch.float64: 192,
    torch.complex128: 96,
    torch.complex64: 96,
    torch.float32: 256,
}
#: above the ``openblas`` claim (rank 0), which it beat where both claim
RANK = 1
#: per matrix: the input copy and its reflectors (a block of eight), the float64 vectors,
#: the kernel's three n x n float64 arrays (the two factorizations' ratios and the vectors
#: before their transpose) and the compiled lanes' two interleaved half-blocks, counted as
#: if each matrix of a chunk held them all
MEMORY = 7.0


def claim_for(n: int, dtype: torch.dtype, vendor: str | None) -> Claim | None:
    """The claim on ``n x n`` matrices of ``dtype`` with eigenvectors on a CPU of ``vendor``
    (``None``: none; only x86 vendors other than Intel's are claimed for)."""
    if vendor not in NON_INTEL_X86 or dtype not in RANGES:
        return None
    lo, hi = RANGES[dtype]
    if not lo <= n < hi:
        return None
    if n < LANES_BELOW.get(dtype, 0) and not lanes_for(n, dtype):
        return None
    return Claim(
        "tridiagonal lanes (OpenBLAS's reduction, numba QL + twisted factorizations): "
        f"on this {vendor} CPU measured faster than torch's MKL at this size",
        min_batch(n, dtype),
        RANK,
    )


def min_batch(n: int, dtype: torch.dtype) -> int:
    """The batch it claims ``n x n`` matrices of ``dtype`` from: :data:`MIN_BATCH`, half of
    it from :data:`HALF_BATCH_FROM`, and the lane kernels' own batch below
    :data:`LANE_KERNEL_SIZES_BELOW`."""
    if n < LANE_KERNEL_SIZES_BELOW.get(dtype, 0):
        return lane_min_batch(n, dtype.is_complex, True)
    return MIN_BATCH // 2 if n >= HALF_BATCH_FROM.get(dtype, 1 << 30) else MIN_BATCH


#: ``dtype -> (c, p)``: one thread's time per matrix, ``c n^p`` seconds, as the executor
#: runs it (the input check, the solve, the gauge), the least-squares fit in log-log of
#: ``benchmarks/results/twisted-cost-2026-12-06e.json`` over the claimed sizes up to
#: ``n = 256`` (within 0.78-1.33x of every point). LAPACK's model, which the planner took
#: before, read 1.5-15x the measured time for complex matrices from ``n = 16`` and 1.4-6.8x
#: for real ones from 64, so batches of 2.3-4.4 ms of real work fanned out, where on the
#: development VM two workers took 0.91-1.08x one's time
#: (``benchmarks/results/twisted-workers-2026-12-06e.json``)
SECONDS: dict[torch.dtype, tuple[float, float]] = {
    torch.float32: (4.57e-8, 2.04),
    torch.float64: (4.05e-8, 2.16),
    torch.complex64: (1.41e-7, 1.92),
    torch.complex128: (9.01e-8, 2.11),
}


def twisted_seconds(n: int, dtype: torch.dtype) -> float:
    """``Cost.seconds``: one thread's time per ``n x n`` matrix (:data:`SECONDS`), for the
    fan-out decision.

    >>> round(twisted_seconds(16, torch.complex64) * 1e6)
    29
    """
    c, p = SECONDS[dtype]
    return c * n**p


def twisted_claim(n: int, dtype: torch.dtype, device: torch.device, vectors: bool) -> Claim | None:
    """``Runs.prefers``: :func:`claim_for` this machine's CPU, eigenvectors wanted (the
    eigenvalue-only driver keeps torch's, whose bits ``eigvalsh`` has always had)."""
    if device.type != "cpu" or not vectors:
        return None
    return claim_for(n, dtype, _openblas.cpu_vendor())  # one vendor lookup (tests pin it)


TWISTED = register(
    Strategy(
        "twisted",
        ("cpu",),
        twisted_eigh,
        "OpenBLAS's tridiagonal reduction (?sytrd/?hetrd, ?ormtr/?unmtr) around a numba "
        "lane kernel for the real tridiagonals (QL values, twisted-factorization vectors, "
        "dstedc where flagged); "
        "GIL released, one BLAS thread per worker, eight matrices a block",
        runs=Runs(
            available=available,
            tunable_on=("cpu",),
            fan_out=True,
            prefers=_gated(twisted_claim),
            unit=8,  # the kernel's lanes (``_numba_twisted.W``; numba is not imported here)
        ),
        cost=Cost(memory=MEMORY, seconds=twisted_seconds),
        abilities=Abilities(
            into=twisted_eigh_into, check=numba_check_large, fused=twisted_eigh_fused
        ),
    )
)
