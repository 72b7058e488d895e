"""The ``twisted`` strategy: real symmetric and complex Hermitian matrices reduced to
tridiagonal form and back (reduced eight at a time by the compiled helper's lanes,
``_native_lanes.c``, real ones below ``n = 256`` and complex ones at every size, real ones
up to 160 transformed back there too; the rest by SciPy's OpenBLAS, ``?sytrd``/``?hetrd``,
``?ormtr``/``?unmtr``), the real tridiagonals solved eight at a time by the lane kernel of
:mod:`.._solvers._kernels._numba_twisted` (QL eigenvalues, twisted factorizations for the
vectors; :mod:`.._solvers._twisted_eigh`), on the CPU.

Where it is the default (:func:`twisted_claim`): eigenvectors wanted, float64 of
``n = 24 .. 512``, complex128 of ``n = 14 .. 512``, complex64 of ``n = 12 .. 512`` and
float32 of ``n = 24 .. 512`` (see :data:`RANGES`; float64 below 33, float32 below 256,
complex64 below 48 and complex128 below 21 only with the compiled lanes,
:data:`LANES_BELOW`), on x86-64 CPUs that are not Intel's (MKL runs its generic code
there), from 16 matrices (two full lane blocks per worker; a lane kernel pays for its
padding), from 8 at the larger sizes (:data:`HALF_BATCH_FROM`) and at some smaller ones
(:data:`HALF_BATCH_BELOW`), and from a measured batch per size where the lane kernels
claim too (:data:`SMALL_BATCHES`), ranked above the ``openblas`` claim it overlaps and
the lane kernels' claim (below it for float64 ``n < 33``, :data:`YIELDS_BELOW`). Measured one
thread each, interleaved, on the AMD EPYC development VM against torch's MKL
``?syevd``/``?heevd`` (``benchmarks/RESULTS.md``): float64 1.15-1.22x at ``n = 33-48``,
1.12-1.24x at 56-128, 1.19-1.33x at 256-512; complex128 1.26-1.56x at 21-48, 1.39-1.5x at
64-384 (1.23-1.4x against OpenBLAS's own ``?heevd``, the ``openblas`` strategy there).
float32 and complex64 vectors skip the double-precision refinement (their figures are at
:data:`RANGES`); Intel CPUs stay on MKL, where nothing was measured. Only where numba's
compiled kernel is ready (:func:`.._kernels.gate`): no call waits for a compilation. Its
fused pass (``Abilities.fused``, :func:`.._solvers._twisted_eigh.twisted_eigh_fused`)
checks and gauges each block of eight inside the kernel's call, while it is in cache.
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
#: 1.4-1.81x against 1.11-1.2x (12: 1.26 against 1.33-1.41). float64 ``n = 24-32``
#: only below the lane kernel's batch (:data:`YIELDS_BELOW`; 28-32 at 4,096: 1.63-1.76x
#: against 1.45-1.75x, a tie). Below the sizes where one matrix alone
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
    torch.float64: (24, 513),
    torch.complex128: (14, 513),
    torch.complex64: (12, 513),
    torch.float32: (24, 513),
}
#: ``dtype -> n`` below which its claim follows :data:`SMALL_BATCHES` (the sizes where
#: the lane kernels claim too, ``numba-ql``; at and above it, :data:`MIN_BATCH`)
LANE_KERNEL_SIZES_BELOW: dict[torch.dtype, int] = {
    torch.float64: 33,
    torch.float32: 33,
    torch.complex64: 24,
    torch.complex128: 21,
}
#: ``dtype -> ((first n, batch), ...)``: below :data:`LANE_KERNEL_SIZES_BELOW`, the batch it
#: claims ``n x n`` matrices from, by the last listed size at or below ``n``. Measured with
#: its fused pass against what the planner ran without the claim (the direct path's
#: LAPACK loop below the lane kernels' batch: 48 real, 96-128 complex), interleaved, two
#: sets of three runs (``benchmarks/results/twisted-small-batches-2026-12-06f.json``,
#: medians): complex64 ``n = 12`` 1.12-1.13x at 96 matrices (0.98-1.13 at 64, 0.68-0.71
#: at 16), 16 1.14-1.15x from 48 (0.85-0.87 at 16), 20 1.21-1.23x from 16; complex128 14
#: 1.15-1.24x from 64 (1.01-1.22 at 48), 16 1.15-1.17x from 32 (0.97-1.05 at 16), 20
#: 1.42-1.44x from 16; float32 ``n = 24-32`` and float64 24-32 1.21-1.52x from 16. Before
#: the fixed-cost work of 2026-12-06 (the kernel called by address, the planned route,
#: the fused pass) the claim started at the lane kernels' batch: 16 complex64 ``n = 12``
#: then read 0.81x the fan-out through it, against the direct path's 1.78x
#: (``benchmarks/results/below-lanes-small-2026-12-06d.json``)
SMALL_BATCHES: dict[torch.dtype, tuple[tuple[int, int], ...]] = {
    torch.complex64: ((12, 96), (16, 48), (20, 16)),
    torch.complex128: ((14, 64), (16, 32), (20, 16)),
    torch.float32: ((24, 16),),
    torch.float64: ((24, 16),),
}
#: dtypes whose sizes below :data:`LANE_KERNEL_SIZES_BELOW` it claims below the lane
#: kernel only (ranked under its claim, :data:`YIELD_RANK`): float64 ``n = 24-28`` read
#: 0.90-0.96x the lane kernel at 64 matrices and 1.04-1.18x at 48 (32: 1.27-1.39x, left
#: to it as before)
YIELDS_BELOW: frozenset[torch.dtype] = frozenset({torch.float64})
#: ``dtype -> n`` below which the claim needs the compiled eight-lane reduction
#: (``_native_lanes.c``; ``_twisted_eigh.LANES_MAX_N``; for real matrices its back-
#: transformation too): with it float32 read 1.13-1.83x the fan-out at ``n = 40-192`` and
#: complex64 1.41-1.8x at 24-40 (``benchmarks/results/lanes-2026-12-06c.json``), with
#: OpenBLAS's ``?sytrd``/``?hetrd`` instead 0.93-1.03x and 0.86-1.16x; complex128 below 21
#: was measured with the lanes only
LANES_BELOW: dict[torch.dtype, int] = {
    torch.float64: 33,
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
#: ``dtype -> n`` below which it claims 8 matrices too (one worker, one full lane block):
#: float64 and float32 ``n = 40-48`` 1.35-1.44x the planner's LAPACK at 8 and 1.28-1.39x at 12
#: (64: 1.14-1.21x at 8 but 0.79-1.04x at 12: not claimed), complex128 ``n = 32-64``
#: 1.02-1.42x at 8 and 1.18-1.5x at 12 (``twisted-small-batches-2026-12-06f.json``, two
#: sets of three runs); complex64 read 0.88-1.25x there (not claimed)
HALF_BATCH_BELOW: dict[torch.dtype, int] = {
    torch.float64: 56,
    torch.float32: 56,
    torch.complex128: 96,
}
#: above the ``openblas`` claim (rank 0), which it beat where both claim
RANK = 1
#: below the lane kernels' claims (rank 0): :data:`YIELDS_BELOW`
YIELD_RANK = -1
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
    below = n < LANE_KERNEL_SIZES_BELOW.get(dtype, 0)
    return Claim(
        "tridiagonal lanes (OpenBLAS's reduction, numba QL + twisted factorizations): "
        f"on this {vendor} CPU measured faster than torch's MKL at this size",
        min_batch(n, dtype),
        YIELD_RANK if below and dtype in YIELDS_BELOW else RANK,
    )


def min_batch(n: int, dtype: torch.dtype) -> int:
    """The batch it claims ``n x n`` matrices of ``dtype`` from: :data:`SMALL_BATCHES`
    below :data:`LANE_KERNEL_SIZES_BELOW`, half of :data:`MIN_BATCH` below
    :data:`HALF_BATCH_BELOW` and from :data:`HALF_BATCH_FROM`, else :data:`MIN_BATCH`.

    >>> min_batch(12, torch.complex64), min_batch(20, torch.complex64), min_batch(40, torch.float64)
    (96, 16, 8)
    """
    if n < LANE_KERNEL_SIZES_BELOW.get(dtype, 0):
        least = MIN_BATCH
        for first, batch in SMALL_BATCHES[dtype]:
            if n >= first:
                least = batch
        return least
    if n < HALF_BATCH_BELOW.get(dtype, 0) or n >= HALF_BATCH_FROM.get(dtype, 1 << 30):
        return MIN_BATCH // 2
    return MIN_BATCH


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
