"""Kernel threads for the products, QR and scores a fit runs in the calling thread.

MKL opens an OpenMP team for products as small as one wine dataset's ``13 x 178``
scatter; each team costs more than it shares on work this small, and after a pause, with
another library's threads in the process (sklearn's OpenBLAS), it cost milliseconds: one
wine fit took 13.9-46.6 ms against sklearn's 1.1-1.4 ms
(``benchmarks/results/pca-idle-2026-12-05.py.txt``). Small work runs on one kernel thread
in this thread (the core's per-thread setting,
:func:`spectra.core.domain.single_threaded_kernels`: nothing another thread sees changes,
and the eigensolves of a batch still fan out over the cores); the rest keeps the caller's
threads, which gain from about 2 M multiply-adds on (one 2,000 x 30 dataset, hot: 1.01 ms
on two threads against 1.09 on one; a batch of 500 x 200 x 32: 52 against 70 ms; a
5,000 x 10 dataset 0.86-1.04 against 0.85-0.93; measured 2026-12-05).

>>> import torch
>>> with small_work_threads(torch.zeros(1, 178, 13, dtype=torch.float64)):
...     torch.get_num_threads()
1
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

import torch

from ..core.domain import single_threaded_kernels

#: the multiply-adds ``B N D min(N, D)`` below which a call's own steps run on one thread
SMALL_WORK = 1 << 20


def small_work_threads(x: torch.Tensor) -> AbstractContextManager[None]:
    """One kernel thread in this thread while ``x`` (``(B, N, D)`` or ``(N, D)`` data) is
    small CPU work, ``B N D min(N, D) <`` :data:`SMALL_WORK`; otherwise (or where the
    caller runs one thread already) nothing changes."""
    b, n, d = (x.shape[0] if x.dim() == 3 else 1), x.shape[-2], x.shape[-1]
    small = b * n * d * min(n, d) < SMALL_WORK
    if not small or x.device.type != "cpu" or torch.get_num_threads() == 1:
        return nullcontext()
    return single_threaded_kernels()
