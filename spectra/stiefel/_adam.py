"""Riemannian Adam (Becigneul & Ganea, ICLR 2019) for Stiefel and ordinary parameters."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch

from ..core.domain import InputError
from ._optim import RiemannianOptimizer, Update


class RiemannianAdam(RiemannianOptimizer):
    """Adam on the Stiefel manifold, a drop-in ``torch.optim.Adam`` for mixed models.

    For a :class:`StiefelParameter` ``X``: ``g = proj_X(G + weight_decay X)``, first moment
    ``m = beta1 m + (1 - beta1) g`` (a tangent vector, transported by projection after each
    step), second moment ``v = beta2 v + (1 - beta2) <g, g>`` - one scalar per matrix, so
    the direction ``m_hat / (sqrt(v_hat) + eps)`` stays tangent - and ``X <- R_X(-lr dir)``.
    This is geoopt's ``RiemannianAdam`` on ``EuclideanStiefel``. Ordinary parameters get
    ``torch.optim.Adam``'s elementwise update (L2 ``weight_decay``, optional ``amsgrad``).
    Stiefel parameters of one shape/dtype/retraction are retracted in one call.

    Parameters
    ----------
    params : parameters or parameter groups.
    lr, betas, eps, weight_decay, amsgrad, maximize : as ``torch.optim.Adam``.
    retraction : ``"polar"``, ``"qr"`` or ``"cayley"``; default ``None`` uses each
        parameter's ``manifold.retraction``.
    stabilize : as geoopt: when a parameter's step count reaches a multiple of
        ``stabilize``, the group's Stiefel parameters are projected back onto the manifold
        and their first moments onto the tangent spaces; ``None`` (default) never.

    With ``Stiefel(metric="canonical")`` parameters this is geoopt's ``RiemannianAdam`` on
    its default ``Stiefel()`` (canonical inner product for the second moment, Cayley
    retraction, first moment transported by the same Cayley operator).

    Examples
    --------
    >>> import torch
    >>> from spectra.stiefel import RiemannianAdam, StiefelParameter
    >>> w = StiefelParameter(torch.randn(8, 3), project=True)
    >>> b = torch.nn.Parameter(torch.zeros(3))
    >>> opt = RiemannianAdam([w, b], lr=1e-2)
    >>> loss = ((torch.randn(5, 8) @ w + b) ** 2).sum()
    >>> loss.backward(); opt.step()
    >>> bool(w.manifold.check(w))
    True
    """

    state_name = "exp_avg"
    state_label = "first moment (exp_avg)"

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        retraction: str | None = None,
        stabilize: int | None = None,
    ) -> None:
        if not eps >= 0.0:
            raise InputError("", f"Invalid epsilon value: {eps}")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise InputError("", f"Invalid betas: {betas}")
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
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
    ) -> Update:
        beta1, beta2 = group["betas"]
        if manifold is not None and p.ndim == 2 and len(state) and p.device.type == "cpu":
            return self._update_one(p, g, manifold, group, state)
        if manifold is not None:  # one scalar per matrix: the direction stays tangent
            sq = manifold.metric.inner(p, g, g, keepdim=True)
        else:
            sq = (g * g.conj()).real if g.is_complex() else g * g
        if len(state) == 0:
            state["step"] = 0
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(sq)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = torch.zeros_like(sq)
        state["step"] += 1
        every = group.get("stabilize")
        due = every is not None and state["step"] % every == 0
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m.lerp_(g, 1 - beta1)  # beta1 m + (1 - beta1) g, as torch.optim.Adam
        bc1 = 1 - beta1 ** state["step"]
        bc2 = 1 - beta2 ** state["step"]
        v.mul_(beta2).add_(sq, alpha=1 - beta2)
        if group["amsgrad"]:
            torch.maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])
            v = state["max_exp_avg_sq"]
        return (m / bc1) / ((v / bc2).sqrt() + group["eps"]), [m], due

    def _update_one(
        self,
        p: torch.Tensor,
        g: torch.Tensor,
        manifold: Any,
        group: dict[str, Any],
        state: dict[str, Any],
    ) -> tuple[torch.Tensor, list[torch.Tensor], bool, float]:
        """One CPU matrix after its first step: the second moment is one number, updated
        in Python (one read, one write), and the step's scalar factor goes to the
        retraction (``X + (-lr c) m`` in one operation) instead of a scaled copy of ``m``."""
        beta1, beta2 = group["betas"]
        sq = manifold.metric.squared_norm(p, g)
        state["step"] += 1
        step = state["step"]
        every = group.get("stabilize")
        due = every is not None and step % every == 0
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m.lerp_(g, 1 - beta1)
        vv = beta2 * v.item() + (1 - beta2) * sq
        v.fill_(vv)
        if group["amsgrad"]:
            top = state["max_exp_avg_sq"]
            vv = max(top.item(), vv)
            top.fill_(vv)
        bc1, bc2 = 1 - beta1**step, 1 - beta2**step
        return m, [m], due, 1 / (bc1 * (math.sqrt(vv / bc2) + group["eps"]))
