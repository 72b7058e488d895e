"""Where the kernels beat LAPACK: the measured cost model the planner consults.

Each kernel strategy's ``Runs.prefers`` is one of the claims below: it claims a CPU batch
of ``n x n`` matrices (from ``KERNEL_MIN_BATCH`` matrices) where it was measured faster, and
nothing where ``torch.linalg.eigh`` (fanned out by the executor) is as fast or faster. The
size ranges come from ``benchmarks/bench_kernels.py --calibrate`` and interleaved
paired-ratio runs on the 2-core x86 CI machine (AVX-512; load average 11-13 during the
runs, 2026-11-30), single-thread microseconds per matrix, ``torch.linalg.eigh`` vs kernel:

=============  ======================================  ===================================
sizes           eigenpairs (float64)                   eigenvalues only (float64)
=============  ======================================  ===================================
n = 2, 3        closed-form: 0.11 vs 2.4, 0.16 vs 8.3   0.06 vs 3.8, 0.09 vs 4.1
n = 4, 5        numba-jacobi: 2.0 vs 11.6, 3.4 vs 16    3.1 vs 11.7, 2.7 vs 10.7
n = 8           numba-ql: 11.7 vs 51 (jacobi 21)        11.0 vs 21.9
n = 16          numba-ql: 77 vs 241 (jacobi 270)        36 vs 53
n = 20          numba-ql: paired median 2.0x            paired median 1.8x
n = 24          numba-ql: paired median 1.55x           paired median 1.0x
n = 32          numba-ql: paired median 1.35x           paired median ~1.0-1.6x (noisy)
n = 48, 64      torch faster (0.99x, 0.7x)              torch faster
=============  ======================================  ===================================

Re-measured on a quiet machine (load average about 1) after the kernels went from 32 to 64
lanes per block (2026-11-30, ``spectra.eigh`` / ``eigvalsh`` with ``strategy=`` forced,
interleaved, paired median of torch time / kernel time, 2 workers): eigenpairs n = 40 1.05x
(noisy), n = 48 0.84x; eigenvalues only n = 24 1.19x, 28 1.11x, 32 1.03x, 40 0.85x. So
eigenvalues-only batches take numba-ql up to n = 28 (was 20), eigenpairs up to 32.

float32 behaves alike (the kernels compute in float64 and stop at float32 accuracy).
Complex input: the torch-lane closed form wins at n = 2 (0.3 vs 3.2 us) and loses at n = 3
(16 vs 11 us), and the compiled closed form (where built) takes every complex n <= 3; the
complex Hermitian QL kernel was even at 16 (1.08x paired, quiet machine, 2026-11-30) and
wins at 16 and 20 since (2026-12-02: 1.3-1.6x with eigenvectors; see below), so it takes
3 <= n <= 20 with eigenvectors and 3 <= n <= 12 for eigenvalues only. Only where a kernel
was clearly faster is it picked: near the crossover the fan-out of LAPACK stays (the goal
is never to be slower).
"""

from __future__ import annotations

import torch

from ..._pipeline._cost import Claim
from . import numba_available

#: (largest n with eigenvectors, largest n for eigenvalues only) where numba-ql is picked
QL_MAX_N = (32, 28)
#: (largest complex Hermitian n with eigenvectors, largest for eigenvalues only) where
#: numba-ql is picked (complex128, eigenpairs: 0.5 vs 2.7 us at n = 3, 18 vs 48 at 8, 65 vs
#: 96 at 12, 157 vs 169 at 16, 500 vs 390 at 24; re-measured 2026-12-02 against the thread
#: fan-out, interleaved, paired medians of 9 rounds, load ~2.6: eigenpairs n = 16 1.42-1.62x
#: (complex64 1.29-1.32x), 20 1.53x (1.12x), 24 1.18x (0.77x); eigenvalues only against the
#: ``torch`` strategy: 12 2.9x, 16 1.12x (complex64 0.95x), 20 1.29x (1.21x), 24 0.80x)
COMPLEX_QL_MAX_N = (20, 12)
#: numba-jacobi below this size (at n = 4, 5 its fewer passes beat the reduction)
JACOBI_BELOW = 6
#: Batches smaller than this stay on LAPACK (the lanes' closed form; the lane kernels claim
#: from the larger batches of :func:`lane_min_batch`): a kernel computes whole groups of 64
#: lanes (one 8x8 matrix cost a full group, 63 us, against LAPACK's 6 us), and the first kernel
#: call of a process imports numba and its cached kernels (~0.5 s), which a call LAPACK
#: answers in microseconds must never wait for. From 32 matrices the lanes pay (n = 8:
#: a group ~190 us against 32 x 6 us). The choice depends on the whole call's batch, never
#: on a chunk or a worker's part, so a call's results stay bitwise independent of those.
KERNEL_MIN_BATCH = 32


def lane_min_batch(n: int, complex_input: bool, vectors: bool) -> int:
    """The batch from which a Jacobi or QL lane kernel claims ``n x n`` matrices: where it
    beats the direct path's compiled LAPACK loop (``solve_few``: one ``?syevd`` per matrix,
    no pipeline), by at least ~1.1x in float64 and float32 alike.

    Measured on the AMD EPYC VM (2026-12-05, one thread, medians of 15 calls, the kernels
    loaded; ``benchmarks/results/lane-crossover-2026-12-05.json``, LAPACK time / kernel
    time): real eigenpairs n = 4 0.60 / 1.20 at 64 / 128 matrices, n = 6 0.98 / 1.23 at
    64 / 96, n = 8 1.02-1.29 at 48-64 (float32 0.88 at 48), n >= 12 1.17-1.49 at 48;
    eigenvalues only lose to LAPACK up to 96-192 (n = 4: 256); complex eigenpairs 0.56-1.07
    at 64, 1.04-1.73 at 128. Since the direct path took a block in one compiled call, the
    lanes' whole groups of 64 and their pipeline pay only on these larger batches.

    >>> lane_min_batch(4, False, True), lane_min_batch(16, False, True)
    (160, 48)
    >>> lane_min_batch(8, True, True), lane_min_batch(8, True, False)
    (128, 256)
    """
    if complex_input:
        if not vectors:
            return 256
        return 160 if n <= 5 else (128 if n < 16 else 96)
    if not vectors:
        return 256 if n <= 5 else (192 if n < 12 else 128)
    if n <= 5:
        return 160
    if n < 8:
        return 96
    return 64 if n < 12 else 48


def _lane_claim(why: str, n: int, complex_input: bool, vectors: bool) -> Claim:
    return Claim(
        f"{why} beats LAPACK's per-call cost",
        min_batch=lane_min_batch(n, complex_input, vectors),
    )


def closed_form_claim(
    n: int, dtype: torch.dtype, device: torch.device, vectors: bool
) -> Claim | None:
    """``"closed-form"``'s claim (a ``Runs.prefers``): real n <= 3, complex n <= 2, CPU."""
    if device.type != "cpu" or not (n <= 2 or (n == 3 and not dtype.is_complex)):
        return None  # not measured on GPUs yet: cuSOLVER's batched path stays
    return Claim(f"n = {n}: closed form, one SIMD lane per matrix", min_batch=KERNEL_MIN_BATCH)


def jacobi_claim(n: int, dtype: torch.dtype, device: torch.device, vectors: bool) -> Claim | None:
    """``"numba-jacobi"``'s claim: real 4 <= n < ``JACOBI_BELOW`` on the CPU."""
    if device.type != "cpu" or dtype.is_complex or not 3 < n < JACOBI_BELOW:
        return None
    if not numba_available():
        return None
    return _lane_claim(f"n = {n}: lane-per-matrix Jacobi", n, False, vectors)


def ql_claim(n: int, dtype: torch.dtype, device: torch.device, vectors: bool) -> Claim | None:
    """``"numba-ql"``'s claim: real ``JACOBI_BELOW <= n <= QL_MAX_N``, complex
    ``3 <= n <= COMPLEX_QL_MAX_N`` (20 with eigenvectors, 12 without), on the CPU."""
    if device.type != "cpu" or not numba_available():
        return None
    if dtype.is_complex:
        if 2 < n <= COMPLEX_QL_MAX_N[0 if vectors else 1]:
            return _lane_claim(
                f"n = {n}: lane-per-matrix Hermitian Householder + QL", n, True, vectors
            )
        return None
    if JACOBI_BELOW <= n <= QL_MAX_N[0 if vectors else 1]:
        return _lane_claim(f"n = {n}: lane-per-matrix Householder + QL", n, False, vectors)
    return None
