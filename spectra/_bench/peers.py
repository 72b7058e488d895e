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
__all__ = [
    "DESCRIPTIONS",
    "ThreadFanOut",
    "core_peers",
    "eigenvalue_error",
    "generalized_peers",
    "random_overlap",
    "random_symmetric",
]


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
    """``(X + X^H) / 2`` for a Gaussian ``X`` (complex for complex ``dtype``), drawn in
    double precision and cast."""
    gen = torch.Generator().manual_seed(seed)
    wide = torch.complex128 if dtype.is_complex else torch.float64
    x = torch.randn(batch, n, n, dtype=wide, generator=gen)
    return (0.5 * (x + x.mH)).to(dtype)


def random_overlap(batch: int, n: int, dtype: torch.dtype, seed: int = 1) -> torch.Tensor:
    """A well-conditioned Hermitian positive-definite ``B = I + X X^H / (4 n)`` (the shape
    of a tight-binding overlap S(k)), drawn in double precision and cast."""
    gen = torch.Generator().manual_seed(seed)
    wide = torch.complex128 if dtype.is_complex else torch.float64
    x = torch.randn(batch, n, n, dtype=wide, generator=gen)
    eye = torch.eye(n, dtype=wide)
    return (eye + x @ x.mH / (4 * n)).to(dtype)


def generalized_peers(
    a: torch.Tensor, b: torch.Tensor, loop_sample: int, fan_out: ThreadFanOut | None
) -> dict[str, Impl]:
    """The peers of ``eigh(a, b)`` on the CPU: the reduction a user writes in torch (whole
    batch, and fanned out over threads) and a SciPy loop (on the first ``loop_sample``)."""
    batch = len(a)
    m = min(batch, loop_sample)
    pairs = list(zip(a[:m].numpy(), b[:m].numpy(), strict=True))
    peers = {
        "torch reduction": Impl(partial(baselines.generalized_reduction, a, b)),
        "scipy loop (a, b)": Impl(partial(baselines.scipy_generalized_loop, pairs), m, batch),
    }
    if fan_out is not None:
        peers["reduction fan-out"] = Impl(lambda: fan_out(a, b))
    return peers


def eigenvalue_error(
    a: torch.Tensor, w: torch.Tensor, count: int = 64, b: torch.Tensor | None = None
) -> float:
    """Max |w - w_scipy| / ||A||_2 over the first ``count`` matrices (of ``A v = w B v``
    with ``b``), SciPy in double precision."""
    wide = torch.complex128 if a.is_complex() else torch.float64
    head = a[:count].cpu().to(wide).numpy()
    bh = None if b is None else b[:count].cpu().to(wide).numpy()
    ref = reference_eigh(head, bh, eigvals_only=True).eigenvalues
    norm = max(float(np.linalg.norm(head, ord=2, axis=(-2, -1)).max()), 1e-300)
    return float(np.abs(w[: len(head)].cpu().double().numpy() - ref).max()) / norm
