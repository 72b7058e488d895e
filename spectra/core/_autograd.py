"""Autograd for the batched eigh, finite at degenerate eigenvalues.

The backward of ``A = V diag(w) V^H`` is ``gA = V (diag(gw) + F o skew(V^H gV)) V^H`` with
``F_ij = 1 / (w_j - w_i)``. Where ``|w_j - w_i|`` is below ``degenerate_tol`` (relative to
the matrix's largest |w|) the pair lies in one degenerate subspace and ``F_ij = 0``: for a
loss invariant under rotations inside that subspace, the exact contribution is zero
(xitorch's masking). With ``broadening > 0`` the remaining terms use the Lorentzian
``(w_j - w_i) / ((w_j - w_i)^2 + broadening)`` of Liao et al., PRX 9, 031041 (2019).
Separated spectra with ``broadening=0`` give torch's own gradient.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

Solver = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def degenerate_default(dtype: torch.dtype) -> float:
    """Default relative gap under which two eigenvalues count as degenerate in the backward."""
    return 1e3 * torch.finfo(dtype).eps


def eigh_backward(
    w: torch.Tensor,
    v: torch.Tensor,
    gw: torch.Tensor | None,
    gv: torch.Tensor | None,
    degenerate_tol: float,
    broadening: float,
) -> torch.Tensor:
    """Gradient with respect to ``A`` (Hermitian) from gradients of ``w`` and ``v``."""
    vh = v.mH
    inner = torch.zeros(v.shape, dtype=v.dtype, device=v.device)
    if gv is not None:
        vhgv = vh @ gv
        skew = 0.5 * (vhgv - vhgv.mH)
        gap = w.unsqueeze(-2) - w.unsqueeze(-1)  # gap[i, j] = w_j - w_i
        scale = w.abs().amax(-1, keepdim=True).unsqueeze(-1).clamp_min(torch.finfo(w.dtype).tiny)
        degenerate = gap.abs() <= degenerate_tol * scale
        safe = torch.where(degenerate, torch.ones_like(gap), gap)
        factor = safe / (safe * safe + broadening) if broadening > 0 else 1.0 / safe
        factor = torch.where(degenerate, torch.zeros_like(factor), factor)
        inner = skew * factor
    if gw is not None:
        inner = inner + torch.diag_embed(gw.to(v.dtype))
    return v @ inner @ vh


class _EighFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, solver, degenerate_tol, broadening):  # type: ignore[override]
        w, v = solver(a.detach())
        ctx.save_for_backward(w, v)
        ctx.options = (degenerate_tol, broadening)
        return w, v

    @staticmethod
    def backward(ctx, gw, gv):  # type: ignore[override]
        w, v = ctx.saved_tensors
        ga = eigh_backward(w, v, gw, gv, *ctx.options)
        return ga, None, None, None


def eigh_with_grad(
    a: torch.Tensor,
    solver: Solver,
    degenerate_tol: float | None = None,
    broadening: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run ``solver`` on ``a`` and attach the degenerate-safe backward when ``a`` needs grad."""
    if not (torch.is_grad_enabled() and a.requires_grad):
        return solver(a.detach())
    real = a.real.dtype if a.is_complex() else a.dtype
    tol = degenerate_default(real) if degenerate_tol is None else degenerate_tol
    return _EighFunction.apply(a, solver, tol, broadening)
