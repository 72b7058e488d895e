"""The peers ``spectra bench`` times spectra.eigh against: what a user would write instead.

This module (with :mod:`spectra._bench.domains`) is the one explicit exception to the house
rule that only ``spectra/core`` calls an eigensolver: a benchmark has to call the peers'
solvers (``torch.linalg.eigh``, ``numpy.linalg.eigh``, ``scipy.linalg.eigh``) directly.

CPU peers, all on the same input tensor / its NumPy view:

- ``torch batched``: ``torch.linalg.eigh(a)``, torch's default threads;
- ``torch 1-thread``: the same under ``torch.set_num_threads(1)``;
- ``numpy batched``: ``numpy.linalg.eigh(a)`` (a C loop over LAPACK);
- ``scipy loop``: a Python loop of ``scipy.linalg.eigh`` (sampled on the first
  ``loop_sample`` matrices and scaled to the batch);
- ``thread fan-out``: the batch split over one Python thread per core, torch at one
  intra-op thread, ``torch.linalg.eigh`` on each part (:class:`ThreadFanOut`, written the
  way a user would in ten lines; it does not use spectra's pool).

On CUDA: ``torch batched`` on the device and ``torch loop`` (a Python loop, sampled).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import scipy.linalg
import torch

from .timing import Impl

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
    "spectra": "spectra.eigh(a): eigenvalues and gauge-fixed eigenvectors, input checked",
}


class ThreadFanOut:
    """The plain fan-out a user writes: one Python thread per core, torch at one thread.

    >>> import torch
    >>> w, v = ThreadFanOut(2)(torch.eye(3).expand(4, 3, 3))
    >>> tuple(w.shape), tuple(v.shape)
    ((4, 3), (4, 3, 3))
    """

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.pool = ThreadPoolExecutor(threads)  # persistent: created once, like a user would

    def __call__(self, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        old = torch.get_num_threads()
        torch.set_num_threads(1)  # process-wide in torch: the workers see it too
        try:
            parts = list(self.pool.map(torch.linalg.eigh, torch.tensor_split(a, self.threads)))
        finally:
            torch.set_num_threads(old)
        return torch.cat([w for w, _ in parts]), torch.cat([v for _, v in parts])


def _one_thread(a: torch.Tensor) -> Any:
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return torch.linalg.eigh(a)
    finally:
        torch.set_num_threads(old)


def core_peers(
    a: torch.Tensor, device: str, loop_sample: int, fan_out: ThreadFanOut | None
) -> dict[str, Impl]:
    """The peers for one batch ``a``; loops run on the first ``loop_sample`` matrices."""
    batch = len(a)
    m = min(batch, loop_sample)
    sub = a[:m]
    if device.startswith("cuda"):
        return {
            "torch batched": Impl(lambda: torch.linalg.eigh(a)),
            "torch loop": Impl(lambda: [torch.linalg.eigh(x) for x in sub], m, batch),
        }
    an, subn = a.numpy(), sub.numpy()
    peers = {
        "torch batched": Impl(lambda: torch.linalg.eigh(a)),
        "torch 1-thread": Impl(lambda: _one_thread(a)),
        "numpy batched": Impl(lambda: np.linalg.eigh(an)),
        "scipy loop": Impl(
            lambda: [scipy.linalg.eigh(x, check_finite=False) for x in subn], m, batch
        ),
    }
    if fan_out is not None:
        peers["thread fan-out"] = Impl(lambda: fan_out(a))
    return peers


def random_symmetric(batch: int, n: int, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    """``(X + X^T) / 2`` for a Gaussian ``X``, drawn in float64 and cast."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, n, n, dtype=torch.float64, generator=gen)
    return (0.5 * (x + x.mT)).to(dtype)


def eigenvalue_error(a: torch.Tensor, w: torch.Tensor, count: int = 64) -> float:
    """Max |w - w_scipy| / ||A||_2 over the first ``count`` matrices."""
    head = a[:count].cpu().double().numpy()
    ref = np.stack([scipy.linalg.eigh(m, eigvals_only=True) for m in head])
    norm = max(float(np.linalg.norm(head, ord=2, axis=(-2, -1)).max()), 1e-300)
    return float(np.abs(w[: len(head)].cpu().double().numpy() - ref).max()) / norm
