"""The ``openblas`` strategy: the full eigendecomposition by the ``?syevd``/``?heevd`` of
the OpenBLAS SciPy ships (:mod:`.._solvers._openblas_eigh`), on the CPU.

Torch's LAPACK is MKL, whose dispatcher runs its tuned code on Intel CPUs only. On other
x86-64 CPUs the planner takes this strategy where it was measured faster than torch's
(:func:`openblas_claim`; AMD EPYC, one thread each, interleaved,
``benchmarks/results/lapack-libraries-2026-12-05.json``): complex128 from ``n = 56`` to
383 (1.11-1.25x at ``n = 64 .. 256``) and float64 from ``n = 256`` (1.15-1.19x). One
matrix of those sizes runs torch's MKL on the caller's kernel threads (a single-worker
call from ``_torch_lapack.threaded_from``: MKL's two threads beat one of OpenBLAS's,
e.g. complex128 ``n = 128`` 2.1 against 2.8 ms), so the claim starts at two matrices, as
the bitwise guarantee already leaves those calls within tolerance. On Intel CPUs, and
for float32, complex64 and eigenvalues only, torch's LAPACK stays the default;
``strategy="openblas"`` runs it anywhere it is available.

>>> import torch
>>> from spectra.core import plan
>>> from spectra.core._strategies import _openblas
>>> _openblas.claim_for(256, torch.float64, "AuthenticAMD").min_batch
2
>>> _openblas.claim_for(64, torch.complex128, "GenuineIntel") is None
True
"""

from __future__ import annotations

import functools

import torch

from .._pipeline._cost import Claim
from .._solvers._openblas_eigh import available, openblas_eigh, openblas_eigh_into
from ._base import Abilities, Runs, Strategy, register
from ._checks import numba_check_large

#: the x86-64 vendors (``vendor_id`` of ``/proc/cpuinfo``) whose CPUs MKL runs its generic
#: code on, where the claim is made (Intel's, ``GenuineIntel``, is not among them)
NON_INTEL_X86 = frozenset({"AuthenticAMD", "HygonGenuine"})
#: ``dtype -> (first n, last n + 1, the batch the claim starts from)`` ranges measured
#: faster than torch's MKL on a non-Intel CPU (one thread each)
RANGES: dict[torch.dtype, tuple[tuple[int, int, int], ...]] = {
    torch.complex128: ((56, 384, 2),),
    torch.float64: ((256, 1 << 31, 2),),
}


@functools.cache
def cpu_vendor() -> str | None:
    """The CPU's ``vendor_id`` (``/proc/cpuinfo``; ``None`` where there is none to read)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def claim_for(n: int, dtype: torch.dtype, vendor: str | None) -> Claim | None:
    """The claim on ``n x n`` matrices of ``dtype`` with eigenvectors on a CPU of ``vendor``
    (``None``: none; only x86 vendors other than Intel's are claimed for)."""
    if vendor not in NON_INTEL_X86:
        return None
    for lo, hi, min_batch in RANGES.get(dtype, ()):
        if lo <= n < hi:
            return Claim(
                f"SciPy's OpenBLAS ?syevd/?heevd: on this {vendor} CPU measured 1.1-1.25x "
                "torch's MKL at this size (MKL runs its generic code off Intel CPUs)",
                min_batch,
            )
    return None


def openblas_claim(n: int, dtype: torch.dtype, device: torch.device, vectors: bool) -> Claim | None:
    """``Runs.prefers``: :func:`claim_for` this machine's CPU, eigenvectors wanted (the
    eigenvalue-only driver keeps torch's, whose bits ``eigvalsh`` has always had)."""
    if device.type != "cpu" or not vectors:
        return None
    return claim_for(n, dtype, cpu_vendor())


OPENBLAS = register(
    Strategy(
        "openblas",
        ("cpu",),
        openblas_eigh,
        "SciPy's OpenBLAS ?syevd/?heevd through LAPACKE (GIL released, one BLAS thread per "
        "worker): the default off Intel CPUs where measured faster than torch's MKL",
        runs=Runs(available=available, tunable_on=("cpu",), fan_out=True, prefers=openblas_claim),
        abilities=Abilities(into=openblas_eigh_into, check=numba_check_large),
    )
)
