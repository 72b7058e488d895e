"""One base for the Riemannian optimizers: the step loop, the retraction jobs, stabilization.

A subclass (:class:`~spectra.stiefel.RiemannianSGD`, :class:`~spectra.stiefel.RiemannianAdam`)
says only how a gradient becomes a direction (its state update, :meth:`_update`); the base
turns it into ``p <- p - lr d`` for ordinary parameters and into a retraction
``X <- R_X(-lr d)`` (with the state's tangent vectors transported) for Stiefel ones, grouped
into as few core calls as possible (``_batched.run_jobs``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import nullcontext
from typing import Any, ClassVar

import torch

from ..core.domain import InputError
from ._batched import Job, euclidean_grad, manifold_of, run_jobs, stabilize_group
from ._polar import small_kernels
from ._retractions import RETRACTIONS

#: what :meth:`RiemannianOptimizer._update` returns: ``(d, vectors, flag)``, or with a
#: scalar ``c`` as 4th entry when the direction is ``c d``
Update = (
    tuple[torch.Tensor, list[torch.Tensor], bool]
    | tuple[torch.Tensor, list[torch.Tensor], bool, float]
)


def check_retraction(retraction: str | None) -> None:
    if retraction is not None and retraction not in RETRACTIONS:
        raise InputError(
            "", f"unknown retraction {retraction!r}; choose one of {sorted(RETRACTIONS)}"
        )


def check_stabilize(stabilize: int | None) -> None:
    if stabilize is not None and (
        isinstance(stabilize, bool) or not isinstance(stabilize, int) or stabilize < 1
    ):
        raise InputError("", f"stabilize must be None or a positive integer, got {stabilize!r}")


class RiemannianOptimizer(torch.optim.Optimizer):
    """Base of spectra's Riemannian optimizers (a ``torch.optim.Optimizer``).

    Subclasses set ``state_name`` (the state entry that :meth:`Stiefel.proju` re-projects
    when stabilizing, e.g. ``"momentum_buffer"``) and implement :meth:`_update`; they may
    override :meth:`_group_due` (whether a group is due for stabilization this step).

    Examples
    --------
    >>> import torch
    >>> from spectra.stiefel import RiemannianOptimizer, StiefelParameter
    >>> class PlainRSGD(RiemannianOptimizer):
    ...     state_name = "none"
    ...     def _update(self, p, g, manifold, group, state):
    ...         return g, [], False
    >>> w = StiefelParameter(torch.randn(6, 2, dtype=torch.float64), project=True)
    >>> opt = PlainRSGD([w], {"lr": 0.1})
    >>> (w[:, 0] ** 3).sum().backward(); opt.step()
    >>> bool(w.manifold.check(w))
    True
    """

    #: the state entry (a tangent vector) that stabilization re-projects
    state_name: ClassVar[str] = ""
    #: how error messages call that state
    state_label: ClassVar[str] = "state"

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        defaults = {
            "lr": 1e-3,
            "weight_decay": 0.0,
            "maximize": False,
            "retraction": None,
            "stabilize": None,
            **defaults,
        }
        if not defaults["lr"] >= 0.0:
            raise InputError("", f"Invalid learning rate: {defaults['lr']}")
        if not defaults["weight_decay"] >= 0.0:
            raise InputError("", f"Invalid weight_decay value: {defaults['weight_decay']}")
        check_stabilize(defaults["stabilize"])
        check_retraction(defaults["retraction"])
        super().__init__(params, defaults)

    def _update(
        self,
        p: torch.Tensor,
        g: torch.Tensor,
        manifold: Any,
        group: dict[str, Any],
        state: dict[str, Any],
    ) -> Update:
        """``(direction d, tangent vectors to transport, stabilization asked)`` for the
        (Riemannian, for a Stiefel parameter) gradient ``g``; updates ``state``."""
        raise NotImplementedError

    def _group_due(self, group: dict[str, Any]) -> bool:
        """Whether ``group`` is due for stabilization after this step (called once per group
        and step); by default only when a parameter's :meth:`_update` asks."""
        return False

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:  # type: ignore[override]
        """Perform one optimization step (``closure`` re-evaluates the loss, as in torch)."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        name = type(self).__name__
        due: list[dict[str, Any]] = []
        pending: list[tuple[int, int, dict[str, Any], torch.Tensor, Any]] = []
        for gi, group in enumerate(self.param_groups):
            if group["retraction"] is not None:
                check_retraction(group["retraction"])
            asked = False
            for pi, p in enumerate(group["params"]):
                if p.grad is None:
                    continue
                manifold = manifold_of(p)
                if manifold is not None:  # after the ordinary ones, in one kernel scope
                    pending.append((gi, pi, group, p, manifold))
                    continue
                out = self._update(p, euclidean_grad(p, group, name), None, group, self.state[p])
                lr = -group["lr"] * out[3] if len(out) == 4 else -group["lr"]
                p.add_(out[0], alpha=lr)
                asked |= out[2]
            if self._group_due(group) or asked:
                due.append(group)
        if pending:
            widest = (
                pending[0][3]
                if len(pending) == 1
                else max(pending, key=lambda e: e[3].shape[-2])[3]
            )
            with small_kernels(widest) if widest.numel() else nullcontext():
                self._stiefel_steps(pending, due, name)
        for group in due:
            stabilize_group(group, self.state, self.state_name)
        return loss

    def _stiefel_steps(
        self,
        pending: list[tuple[int, int, dict[str, Any], torch.Tensor, Any]],
        due: list[dict[str, Any]],
        name: str,
    ) -> None:
        jobs: list[Job] = []
        grads = _riemannian_grads(pending, name)
        for (gi, pi, group, p, manifold), g in zip(pending, grads, strict=True):
            out = self._update(p, g, manifold, group, self.state[p])
            # (d, vectors, flag), or with a 4th entry c: the direction is c d (the builtin
            # optimizers hand the scalar to the retraction instead of scaling d)
            d, vectors, flag = out[0], out[1], out[2]
            scale = -group["lr"] * out[3] if len(out) == 4 else -group["lr"]
            if flag and not any(group is g2 for g2 in due):
                due.append(group)
            method = group["retraction"] or manifold.retraction
            jobs.append(Job(p, manifold, d, scale, method, vectors, (gi, pi)))
        run_jobs(jobs, name, self.state_label)


def _riemannian_grads(
    pending: list[tuple[int, int, dict[str, Any], torch.Tensor, Any]], name: str
) -> list[torch.Tensor]:
    """Each pending Stiefel parameter's Riemannian gradient; parameters of one shape, dtype,
    device and metric object are converted together, stacked (a few tensor operations for
    all of them instead of a few each)."""
    if len(pending) == 1:
        _, _, group, p, manifold = pending[0]
        x = p.detach()  # plain tensor operations from here (no subclass dispatch)
        return [manifold.metric.egrad2rgrad(x, euclidean_grad(p, group, name, x))]
    sets: dict[tuple[Any, ...], list[int]] = {}
    for i, (_, _, _, p, manifold) in enumerate(pending):
        sets.setdefault((p.shape, p.dtype, p.device, id(manifold.metric)), []).append(i)
    out: list[torch.Tensor] = [None] * len(pending)  # type: ignore[list-item]
    for members in sets.values():
        metric = pending[members[0]][4].metric
        xs = [pending[i][3].detach() for i in members]
        gs = [
            euclidean_grad(pending[i][3], pending[i][2], name, x)
            for i, x in zip(members, xs, strict=True)
        ]
        if len(members) == 1:
            out[members[0]] = metric.egrad2rgrad(xs[0], gs[0])
            continue
        rgrads = metric.egrad2rgrad(torch.stack(xs), torch.stack(gs)).unbind(0)
        for i, g in zip(members, rgrads, strict=True):
            out[i] = g
    return out
