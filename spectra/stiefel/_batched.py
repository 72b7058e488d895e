"""Optimizer plumbing: find the Stiefel parameters and retract them in as few calls as possible.

Every parameter's whole batch ``(..., n, p)`` goes through one retraction, and parameters
that share ``(n, p)``, dtype, device and retraction are concatenated into one batch first, so
a model with many same-shape orthogonal weights costs one core eigh call per step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ._manifold import Stiefel


def manifold_of(p: torch.Tensor) -> Stiefel | None:
    """The parameter's Stiefel manifold, ``None`` for an ordinary (Euclidean) parameter."""
    m = getattr(p, "manifold", None)
    if m is None:
        return None
    if not isinstance(m, Stiefel):
        raise TypeError(
            f"parameter of shape {tuple(p.shape)} carries a manifold "
            f"{type(m).__name__}; spectra's optimizers handle Stiefel manifolds "
            f"and ordinary parameters only"
        )
    return m


def riemannian_grad(
    p: torch.Tensor, group: dict, optimizer: str
) -> tuple[torch.Tensor, Stiefel | None] | None:
    """The update direction both optimizers start from, ``None`` for a parameter without
    gradient: the (negated, if maximizing) gradient plus weight decay, projected onto the
    tangent space for a Stiefel parameter."""
    if p.grad is None:
        return None
    if p.grad.is_sparse:
        raise RuntimeError(f"{optimizer} does not support sparse gradients")
    manifold = manifold_of(p)
    g = -p.grad if group["maximize"] else p.grad
    if group["weight_decay"] != 0:
        g = g.add(p, alpha=group["weight_decay"])
    if manifold is not None:
        g = manifold.egrad2rgrad(p, g)
    return g, manifold


@dataclass
class Job:
    """One pending Stiefel update: retract ``param`` along ``step``, transport ``vectors``."""

    param: torch.Tensor
    manifold: Stiefel
    step: torch.Tensor
    method: str
    vectors: list[torch.Tensor] = field(default_factory=list)


def _stack(tensors: list[torch.Tensor], shape: tuple[int, ...]) -> torch.Tensor:
    flat = [t.reshape(-1, *shape) for t in tensors]
    return flat[0] if len(flat) == 1 else torch.cat(flat)


def run_jobs(jobs: list[Job]) -> None:
    """Retract every job's parameter in place (grouped), then transport its vectors."""
    buckets: dict[tuple, list[Job]] = {}
    for job in jobs:
        p = job.param
        if p.numel() == 0:
            continue
        key = (tuple(p.shape[-2:]), p.dtype, p.device, job.method, job.manifold.metric)
        buckets.setdefault(key, []).append(job)
    for (shape, _, _, method, _), members in buckets.items():
        manifold = members[0].manifold
        x = _stack([j.param.detach() for j in members], shape)
        xi = _stack([j.step for j in members], shape)
        y = manifold.retract(x, xi, method)
        start = 0
        for j in members:
            count = j.param.numel() // (shape[0] * shape[1])
            new = y[start : start + count].reshape(j.param.shape)
            old = x[start : start + count].reshape(j.param.shape)
            step = xi[start : start + count].reshape(j.param.shape)
            start += count
            for v in j.vectors:
                v.copy_(manifold.transport_step(old, step, new, v, method))
            j.param.copy_(new)


def stabilize_group(group: dict, state: dict, buffer: str) -> None:
    """geoopt's ``stabilize_group``: put every Stiefel parameter of ``group`` back onto its
    manifold (:meth:`Stiefel.projx`) and its ``buffer`` state (momentum, first moment) back
    onto the tangent space (:meth:`Stiefel.proju`)."""
    for p in group["params"]:
        manifold = manifold_of(p)
        if manifold is None or p.numel() == 0:
            continue
        p.copy_(manifold.projx(p.detach()))
        buf = state.get(p, {}).get(buffer)
        if buf is not None:
            buf.copy_(manifold.proju(p.detach(), buf))


def check_stabilize(stabilize: int | None) -> None:
    if stabilize is not None and (
        isinstance(stabilize, bool) or not isinstance(stabilize, int) or stabilize < 1
    ):
        raise ValueError(f"stabilize must be None or a positive integer, got {stabilize!r}")
