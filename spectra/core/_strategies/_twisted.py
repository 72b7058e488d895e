"""The ``twisted`` strategy: real symmetric matrices reduced to tridiagonal form and back by
SciPy's OpenBLAS (``?sytrd``/``?ormtr``), the tridiagonals solved eight at a time by the
lane kernel of :mod:`.._solvers._kernels._numba_twisted` (QL eigenvalues, twisted
factorizations for the vectors; :mod:`.._solvers._twisted_eigh`), on the CPU.

Where it is the default (:func:`twisted_claim`): float64 with eigenvectors, ``n = 56 ..
512``, on x86-64 CPUs that are not Intel's (MKL runs its generic code there), from two
matrices, ranked above the ``openblas`` claim it overlaps. Measured one thread each,
interleaved, on the AMD EPYC development VM against torch's MKL ``?syevd``: 1.05x at
``n = 48`` (not claimed), 1.07-1.15x at 56-128, 1.18-1.33x at 256-512, and 1.06-1.19x
against OpenBLAS's own ``?syevd`` at 256-512 (``benchmarks/RESULTS.md``). float32 stays on
MKL (0.72-0.91x there: its ``?ssyevd`` is the faster), and so do Intel CPUs, where nothing
was measured. Only where numba's compiled kernel is ready (:func:`.._kernels.gate`): no
call waits for a compilation. ``strategy="twisted"`` runs it anywhere it is available.

>>> import torch
>>> from spectra.core._strategies import _twisted
>>> _twisted.claim_for(128, torch.float64, "AuthenticAMD").min_batch
2
>>> _twisted.claim_for(128, torch.float64, "GenuineIntel") is None
True
>>> _twisted.claim_for(128, torch.float32, "AuthenticAMD") is None
True
"""

from __future__ import annotations

import torch

from .._pipeline._cost import Claim
from .._solvers._twisted_eigh import available, twisted_eigh, twisted_eigh_into
from . import _openblas
from ._base import Abilities, Cost, Runs, Strategy, register
from ._checks import numba_check_large
from ._kernels import _gated
from ._openblas import NON_INTEL_X86

#: ``dtype -> (first n, last n + 1)``: the sizes measured faster than torch's MKL (and
#: than OpenBLAS's ``?syevd``) on a non-Intel x86-64 CPU, one thread each
RANGES: dict[torch.dtype, tuple[int, int]] = {torch.float64: (56, 513)}
#: above the ``openblas`` claim (rank 0), which it beat where both claim (n >= 256)
RANK = 1
#: per matrix: the input copy and its reflectors (a block of ``BLOCK``), the float64
#: vectors, and the kernel's three n x n arrays (the two factorizations' ratios and the
#: vectors before their transpose), counted as if each matrix of a chunk held them all
MEMORY = 6.0


def claim_for(n: int, dtype: torch.dtype, vendor: str | None) -> Claim | None:
    """The claim on ``n x n`` matrices of ``dtype`` with eigenvectors on a CPU of ``vendor``
    (``None``: none; only x86 vendors other than Intel's are claimed for)."""
    if vendor not in NON_INTEL_X86 or dtype not in RANGES:
        return None
    lo, hi = RANGES[dtype]
    if not lo <= n < hi:
        return None
    return Claim(
        f"tridiagonal lanes (OpenBLAS ?sytrd/?ormtr, numba QL + twisted factorizations): "
        f"on this {vendor} CPU measured 1.07-1.33x torch's MKL ?syevd at this size",
        2,
        RANK,
    )


def twisted_claim(n: int, dtype: torch.dtype, device: torch.device, vectors: bool) -> Claim | None:
    """``Runs.prefers``: :func:`claim_for` this machine's CPU, eigenvectors wanted (the
    eigenvalue-only driver keeps torch's, whose bits ``eigvalsh`` has always had)."""
    if device.type != "cpu" or not vectors:
        return None
    return claim_for(n, dtype, _openblas.cpu_vendor())  # one vendor lookup (tests pin it)


def _serves(n: int, dtype: torch.dtype) -> bool:
    return dtype in (torch.float32, torch.float64)


TWISTED = register(
    Strategy(
        "twisted",
        ("cpu",),
        twisted_eigh,
        "real matrices: OpenBLAS ?sytrd/?ormtr around a numba lane kernel for the "
        "tridiagonals (QL values, twisted-factorization vectors, dstedc where flagged); "
        "GIL released, one BLAS thread per worker, eight matrices a block",
        runs=Runs(
            available=available,
            tunable_on=("cpu",),
            serves=_serves,
            fan_out=True,
            prefers=_gated(twisted_claim),
        ),
        cost=Cost(memory=MEMORY),
        abilities=Abilities(into=twisted_eigh_into, check=numba_check_large),
    )
)
