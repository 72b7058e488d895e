"""Riemannian SGD (momentum, Nesterov, weight decay) for Stiefel and ordinary parameters."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from ..core.domain import InputError
from ._optim import RiemannianOptimizer


class RiemannianSGD(RiemannianOptimizer):
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

    state_name = "momentum_buffer"
    state_label = "momentum buffer"

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
        if not momentum >= 0.0:
            raise InputError("", f"Invalid momentum value: {momentum}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise InputError("", "Nesterov momentum requires a momentum and zero dampening")
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

    def _update(
        self,
        p: torch.Tensor,
        g: torch.Tensor,
        manifold: Any,
        group: dict[str, Any],
        state: dict[str, Any],
    ) -> tuple[torch.Tensor, list[torch.Tensor], bool]:
        mom = group["momentum"]
        if mom == 0:
            return g, [], False
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = g.detach().clone()
            state["momentum_buffer"] = buf
        else:
            buf.mul_(mom).add_(g, alpha=1 - group["dampening"])
        d = g.add(buf, alpha=mom) if group["nesterov"] else buf
        return d, [buf], False

    def _group_due(self, group: dict[str, Any]) -> bool:
        # counted per group, every step (geoopt's RiemannianSGD)
        group["step"] = group.get("step", 0) + 1
        every = group.get("stabilize")
        return every is not None and group["step"] % every == 0
