"""What the block shift-invert Lanczos decides by (:mod:`._krylov`, the batched iteration,
and :mod:`._krylov_one`, the one-problem iteration): its constants and the cluster test that
widens the block."""

from __future__ import annotations

import torch

#: vectors per block: fewer solved columns than wider blocks, fewer steps than narrower ones
#: (random geometric graphs, k = 8: b = 2 / 3 / 4 / 11 took 20 / 18 / 16 / 12 block solves)
BLOCK = 3
#: Ritz values within this many tolerances of each other count as one cluster
CLUSTER = 4.0
#: Cholesky QR needs the Gram factor's diagonal above this share of its largest entry
COND = 1e-4
#: a new direction whose norm Gram-Schmidt cut below this share of ``||T q||`` is dropped
DEPENDENT = 1e-10
#: Rayleigh-Ritz is skipped for this share of the steps predicted until convergence
SKIP_MARGIN = 0.8


def widest_cluster(theta: torch.Tensor, k: int, gap: torch.Tensor) -> torch.Tensor:
    """Per problem, the size of the largest cluster of the ascending values ``theta``
    (``(G, m)``; neighbours closer than ``gap``) that holds one of the first ``k``.

    >>> t = torch.tensor([[0.0, 1.0, 1.0, 1.0, 2.0], [0.0, 1.0, 2.0, 2.0, 2.0]])
    >>> widest_cluster(t, 2, torch.tensor([1e-9, 1e-9])).tolist()
    [3, 1]
    """
    t = theta.double().cpu()
    close = (t[:, 1:] - t[:, :-1]) <= gap.unsqueeze(-1)
    best = torch.ones(t.shape[0], dtype=torch.long)
    run = torch.ones(t.shape[0], dtype=torch.long)
    for i in range(close.shape[1]):  # the run ending at value i + 1 starts at i + 2 - run
        run = torch.where(close[:, i], run + 1, torch.ones_like(run))
        best = torch.where(i + 2 - run < k, torch.maximum(best, run), best)
    return best
