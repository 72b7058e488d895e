"""Riemannian SGD (momentum, Nesterov, weight decay) for Stiefel and ordinary parameters."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

from ._batched import Job, check_stabilize, riemannian_grad, run_jobs, stabilize_group
from ._retractions import RETRACTIONS


def _check_retraction(retraction: str | None) -> None:
    if retraction is not None and retraction not in RETRACTIONS:
        raise ValueError(f"unknown retraction {retraction!r}; choose one of {sorted(RETRACTIONS)}")


class RiemannianSGD(torch.optim.Optimizer):
    """SGD on the Stiefel manifold, a drop-in ``torch.optim.SGD`` for mixed models.

    For a :class:`StiefelParameter` ``X`` with Euclidean gradient ``G``: the Riemannian
    gradient ``g = proj_X(G + weight_decay X)``, the momentum buffer ``b = momentum b +
    (1 - dampening) g`` (``b = g`` on the first step, as ``torch.optim.SGD``), the direction
    ``d = b`` (or ``g + momentum b`` with Nesterov), ``X <- R_X(-lr d)`` and ``b`` is
    transported to the new point by projection. Ordinary parameters get exactly
    ``torch.optim.SGD``'s update. All Stiefel parameters of one shape, dtype and retraction
    are retracted together: one core eigh call per step with the polar retraction.

    Parameters
    ----------
    params : parameters or parameter groups (as ``torch.optim.SGD``).
    lr, momentum, dampening, weight_decay, nesterov, maximize : as ``torch.optim.SGD``.
    retraction : ``"polar"``, ``"qr"`` or ``"cayley"``; default ``None`` uses each
        parameter's ``manifold.retraction``. May be set per group.
    stabilize : as geoopt: every ``stabilize`` steps (counted per group) the Stiefel
        parameters are projected back onto the manifold and their momentum buffers onto the
        tangent spaces; ``None`` (default) never.

    The momentum buffer starts as the first Riemannian gradient (``torch.optim.SGD``'s rule);
    geoopt starts it from the raw Euclidean gradient, so with momentum the first steps differ.

    Examples
    --------
    >>> import torch, spectra
    >>> from spectra.stiefel import RiemannianSGD, StiefelParameter
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> a = torch.randn(50, 6, 6, dtype=torch.float64); a = a + a.mT
    >>> x = StiefelParameter(torch.randn(50, 6, 2, dtype=torch.float64), project=True)
    >>> opt = RiemannianSGD([x], lr=0.05, momentum=0.5)
    >>> for _ in range(300):
    ...     opt.zero_grad()
    ...     loss = -(x.mT @ a @ x).diagonal(dim1=-2, dim2=-1).sum()
    ...     loss.backward()
    ...     opt.step()
    >>> top2 = spectra.eigvalsh(a)[:, -2:].sum(-1)
    >>> bool(torch.allclose(-loss / 50, top2.mean(), atol=1e-6))
    True
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        retraction: str | None = None,
        stabilize: int | None = None,
    ) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        check_stabilize(stabilize)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        _check_retraction(retraction)
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "retraction": retraction,
            "stabilize": stabilize,
        }
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:  # type: ignore[override]
        """Perform one optimization step (``closure`` re-evaluates the loss, as in torch)."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        jobs: list[Job] = []
        for group in self.param_groups:
            _check_retraction(group["retraction"])
            lr, mom, damp = group["lr"], group["momentum"], group["dampening"]
            nesterov = group["nesterov"]
            for p in group["params"]:
                grad = riemannian_grad(p, group, "RiemannianSGD")
                if grad is None:
                    continue
                g, manifold = grad
                state = self.state[p]
                buf = None
                if mom != 0:
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = g.detach().clone()
                        state["momentum_buffer"] = buf
                    else:
                        buf.mul_(mom).add_(g, alpha=1 - damp)
                    d = g.add(buf, alpha=mom) if nesterov else buf
                else:
                    d = g
                if manifold is None:
                    p.add_(d, alpha=-lr)
                else:
                    method = group["retraction"] or manifold.retraction
                    jobs.append(
                        Job(p, manifold, d.mul(-lr), method, [buf] if buf is not None else [])
                    )
        run_jobs(jobs)
        for group in self.param_groups:
            group["step"] = group.get("step", 0) + 1
            every = group.get("stabilize")
            if every is not None and group["step"] % every == 0:
                stabilize_group(group, self.state, "momentum_buffer")
        return loss
