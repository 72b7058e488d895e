"""The plain eigensolver calls a user writes without spectra: the baselines benchmarks
compare ``spectra.eigh`` against.

The house rule keeps every eigensolver call in ``spectra/core``; these are the ones that
deliberately do *not* go through the planner (no checks, no gauge, no fan-out of ours), so
that ``spectra bench`` and the benchmark scripts time exactly what a user's own code costs.
:class:`ThreadFanOut` is written the way a user would (ten lines, each worker setting
torch's threads for itself): it is a peer to measure, not a pattern the core uses.

>>> import torch
>>> from spectra.core import baselines
>>> a = torch.eye(3).expand(4, 3, 3)
>>> [tuple(w.shape) for w, _ in (baselines.torch_batched(a), baselines.ThreadFanOut(2)(a))]
[(4, 3), (4, 3)]
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import scipy.linalg
import torch

#: What each baseline is, in the words ``spectra bench`` prints under its table.
DESCRIPTIONS = {
    "torch batched": "torch.linalg.eigh(a) on the whole batch, torch's default threads",
    "torch 1-thread": "the same under torch.set_num_threads(1)",
    "numpy batched": "numpy.linalg.eigh(a) on the whole batch (a C loop over LAPACK)",
    "scipy loop": "a Python loop of scipy.linalg.eigh(m, check_finite=False)",
    "thread fan-out": (
        "the batch split over one Python thread per core, torch at 1 intra-op thread, "
        "torch.linalg.eigh on each part (ten lines of user code, no spectra)"
    ),
    "torch loop": "a Python loop of torch.linalg.eigh(m) on the device",
    "torch reduction": (
        "the generalized problem as a user writes it in torch: cholesky(b), two "
        "solve_triangular, eigh, the back-transformation, on the whole batch"
    ),
    "reduction fan-out": (
        "that reduction split over one Python thread per core, torch at 1 intra-op thread"
    ),
    "scipy loop (a, b)": "a Python loop of scipy.linalg.eigh(a_i, b_i, check_finite=False)",
}


def generalized_reduction(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``A v = w B v`` the way a user writes it in torch: ``B = L L^H``,
    ``C = L^-1 A L^-H``, ``eigh(C)``, ``V = L^-H U`` (no checks, no gauge)."""
    factor = torch.linalg.cholesky(b)
    half = torch.linalg.solve_triangular(factor, a, upper=False)
    c = torch.linalg.solve_triangular(factor, half.mH, upper=False)
    w, u = torch.linalg.eigh(c)
    return w, torch.linalg.solve_triangular(factor.mH, u, upper=True)


def scipy_generalized_loop(pairs: Iterable[tuple[np.ndarray, np.ndarray]]) -> list[Any]:
    """A Python loop of ``scipy.linalg.eigh(a_i, b_i, check_finite=False)``."""
    return [scipy.linalg.eigh(x, y, check_finite=False) for x, y in pairs]


def torch_batched(a: torch.Tensor) -> Any:
    """``torch.linalg.eigh(a)``: one batched call, torch's default threads."""
    return torch.linalg.eigh(a)


def torch_one_thread(a: torch.Tensor) -> Any:
    """``torch.linalg.eigh(a)`` under ``torch.set_num_threads(1)`` (restored after)."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return torch.linalg.eigh(a)
    finally:
        torch.set_num_threads(old)


def torch_loop(mats: Iterable[torch.Tensor]) -> list[Any]:
    """A Python loop of ``torch.linalg.eigh`` per matrix."""
    return [torch.linalg.eigh(m) for m in mats]


def numpy_batched(a: np.ndarray) -> Any:
    """``numpy.linalg.eigh(a)``: NumPy's C loop over LAPACK."""
    return np.linalg.eigh(a)


def scipy_loop(mats: Iterable[np.ndarray], eigvals_only: bool = False) -> list[Any]:
    """A Python loop of ``scipy.linalg.eigh(m, check_finite=False)`` per matrix."""
    return [scipy.linalg.eigh(m, eigvals_only=eigvals_only, check_finite=False) for m in mats]


class ThreadFanOut:
    """The plain fan-out a user writes: one Python thread per core, torch at one thread.

    Each worker calls ``torch.set_num_threads(1)`` itself before its part. Setting it once
    in the calling thread is not enough: it sets that thread's OpenMP ICV and MKL's
    thread-local count, and a worker that reaches MKL directly (``eigh``, ``cholesky``,
    ``solve_triangular``, a product) without one of torch's own parallel loops before it
    never reads torch's setting, so MKL runs its default team of every core in each
    worker. On the 2-core AMD EPYC VM (2026-12-06,
    ``benchmarks/results/fanout-peer-2026-12-06d.json``) that made a batch of 4 float64
    64 x 64 matrices 2.1x slower, and the idle teams left GNU OpenMP throttling its spin in
    the whole process: a 64 x 64 product on the calling thread's two threads then took
    149 instead of 28 us, until the workers exited.

    >>> import torch
    >>> w, v = ThreadFanOut(2)(torch.eye(3).expand(4, 3, 3))
    >>> tuple(w.shape), tuple(v.shape)
    ((4, 3), (4, 3, 3))
    """

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.pool = ThreadPoolExecutor(threads)  # persistent: created once, like a user would

    def __call__(
        self, a: torch.Tensor, b: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        old = torch.get_num_threads()
        try:
            if b is None:
                parts = list(self.pool.map(_one_thread_eigh, torch.tensor_split(a, self.threads)))
            else:  # the generalized problem: each thread reduces and solves its part
                split = zip(
                    torch.tensor_split(a, self.threads),
                    torch.tensor_split(b, self.threads),
                    strict=True,
                )
                parts = list(self.pool.map(_one_thread_reduction, split))
        finally:
            torch.set_num_threads(old)  # the default torch gives threads started later
        return torch.cat([w for w, _ in parts]), torch.cat([v for _, v in parts])


def _one_thread_eigh(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A fan-out worker's part: torch (and MKL) at one thread in this thread, then ``eigh``."""
    torch.set_num_threads(1)
    w, v = torch.linalg.eigh(a)
    return w, v


def _one_thread_reduction(
    ab: tuple[torch.Tensor, torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor]:
    """A fan-out worker's part of the generalized problem, at one thread in this thread."""
    torch.set_num_threads(1)
    return generalized_reduction(*ab)
