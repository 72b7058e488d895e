"""What the block shift-invert Lanczos decides by (:mod:`._krylov`, the batched iteration,
and :mod:`._krylov_one`, the one-problem iteration): its constants, the cluster test that
widens the block, and the forecast that skips Rayleigh-Ritz steps."""

from __future__ import annotations

import math

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


class Skip:
    """When each problem's next Rayleigh-Ritz step is due. Each costs a small dense eigh
    (``O(size^3)``, the basis up to ``room`` vectors) and a product with the matrix (the
    residual estimate), as much as the rest of a step on graphs of a few hundred nodes, and
    it can only end a problem's iteration once its estimated residuals are within the
    tolerance. The estimates fall about geometrically with the steps: from a problem's last
    two (its worst wanted pair over the tolerance) the steps until it could converge are
    predicted, and its Rayleigh-Ritz steps in between are skipped (a restart and the last
    step take one for every problem). A prediction that comes late only costs that problem
    a step more; one that would come early is cut to the step before it (``SKIP_MARGIN``).
    Each problem keeps its own forecast: a batch of graphs converges over several steps,
    and with one forecast for the batch every problem took a Rayleigh-Ritz step at each of
    them (11 graphs of 500-1,000 nodes: 16 of 28 steps).

    >>> s = Skip(2)
    >>> s.observe(4, torch.tensor([[1e4], [1e4]]), torch.tensor([True, True]))
    >>> s.due(5).tolist()
    [True, True]
    >>> s.observe(5, torch.tensor([[1e3], [1e2]]), torch.tensor([True, True]))
    >>> s.due(6).tolist(), s.due(7).tolist()
    ([False, True], [True, True])
    """

    def __init__(self, problems: int) -> None:
        self.last = torch.full((problems,), math.inf, dtype=torch.float64)
        self.at = torch.zeros(problems, dtype=torch.float64)
        self.next = torch.zeros(problems, dtype=torch.float64)
        self.soonest = 0.0

    def due(self, step: int) -> torch.Tensor:
        """``(G,)``: whose Rayleigh-Ritz step is due at ``step``."""
        return self.next <= step

    def any_due(self, step: int) -> bool:
        """Whether any problem's step is due (a float compare: no tensor operation on the
        steps in between, which a single small problem's call would feel)."""
        return step >= self.soonest

    def hold(self, which: torch.Tensor) -> None:
        """``which`` (``(G,)``) take a Rayleigh-Ritz step at every step from now on."""
        self.next = torch.where(which, torch.zeros_like(self.next), self.next)
        self.soonest = float(self.next.min())

    def retire(self, done: torch.Tensor) -> None:
        """Problems ``done`` (``(G,)``) take no more Rayleigh-Ritz steps."""
        self.next = torch.where(done, math.inf, self.next)
        self.soonest = float(self.next.min())

    def observe(self, step: int, ratio: torch.Tensor, seen: torch.Tensor) -> None:
        """``ratio``: ``(G, k)`` estimated residuals over the tolerance at ``step``, read
        for the problems ``seen`` (``(G,)``; the others keep their forecast)."""
        worst = ratio.amax(-1).clamp_min(1e-300)
        rate = (worst / self.last) ** (1.0 / (step - self.at).clamp_min(1.0))
        known = torch.isfinite(self.last) & (rate < 1.0) & seen & (worst > 1.0)
        ahead = torch.where(known, worst.log() / (-rate.log()).clamp_min(1e-300), 0.0)
        gap = torch.clamp((ahead * SKIP_MARGIN).floor(), min=1.0)  # no falling estimate: 1
        self.next = torch.where(seen, step + gap, self.next)
        self.last = torch.where(seen, worst, self.last)
        self.at = torch.where(seen, torch.full_like(self.at, float(step)), self.at)
        self.soonest = float(self.next.min())
