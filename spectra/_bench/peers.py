"""The peers ``spectra bench`` times spectra.eigh against: what a user would write instead.

The peers' eigensolver calls themselves live in the core (:mod:`spectra.core.baselines`,
the house rule keeps every eigensolver call there); this module arranges them as timed
implementations. CPU peers, all on the same input tensor / its NumPy view: ``torch
batched``, ``torch 1-thread``, ``numpy batched``, ``scipy loop`` (sampled on the first
``loop_sample`` matrices and scaled to the batch) and ``thread fan-out`` (one Python thread
per core, torch at one intra-op thread: :class:`ThreadFanOut`, written the way a user would
in ten lines; it does not use spectra's pool). On CUDA: ``torch batched`` on the device and
``torch loop`` (a Python loop, sampled).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import torch

from ..core import baselines, reference_eigh
from ..core.baselines import ThreadFanOut
from .timing import Impl

DESCRIPTIONS = {
    **baselines.DESCRIPTIONS,
    "spectra": "spectra.eigh(a): eigenvalues and gauge-fixed eigenvectors, input checked",
}
__all__ = ["DESCRIPTIONS", "ThreadFanOut", "core_peers", "eigenvalue_error", "random_symmetric"]


def core_peers(
    a: torch.Tensor, device: str, loop_sample: int, fan_out: ThreadFanOut | None
) -> dict[str, Impl]:
    """The peers for one batch ``a``; loops run on the first ``loop_sample`` matrices."""
    batch = len(a)
    m = min(batch, loop_sample)
    sub = a[:m]
    if device.startswith("cuda"):
        return {
            "torch batched": Impl(partial(baselines.torch_batched, a)),
            "torch loop": Impl(partial(baselines.torch_loop, sub), m, batch),
        }
    an, subn = a.numpy(), sub.numpy()
    peers = {
        "torch batched": Impl(partial(baselines.torch_batched, a)),
        "torch 1-thread": Impl(partial(baselines.torch_one_thread, a)),
        "numpy batched": Impl(partial(baselines.numpy_batched, an)),
        "scipy loop": Impl(partial(baselines.scipy_loop, subn), m, batch),
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
    ref = reference_eigh(head, eigvals_only=True).eigenvalues
    norm = max(float(np.linalg.norm(head, ord=2, axis=(-2, -1)).max()), 1e-300)
    return float(np.abs(w[: len(head)].cpu().double().numpy() - ref).max()) / norm
