"""The eigh backward's degenerate-gradient detector and its policy (``degenerate=``).

Masking a degenerate pair drops whatever part of the upstream gradient lies on it; where
that part is not round-off the gradient is not the one the loss asks for (see
:mod:`._autograd`): :func:`_unresolved` finds those matrices, :func:`_apply_policy`
warns, sets NaN, or lets the masked gradient through.

>>> m = torch.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=torch.float64)  # anti-Hermitian
>>> pairs = torch.tensor([[False, True], [True, False]])  # one degenerate pair
>>> bool(_unresolved(m, pairs))
True
"""

from __future__ import annotations

import warnings

import torch


class DegenerateGradientWarning(UserWarning):
    """The upstream gradient has a component inside a degenerate eigenspace that the
    eigh backward cannot resolve (see :func:`spectra.matrix_function`)."""


def _beyond_roundoff(x: torch.Tensor) -> torch.Tensor:
    """Entries of ``x`` above round-off relative to each matrix's largest entry."""
    size = x.abs()
    peak = size.flatten(-2).amax(-1).unsqueeze(-1).unsqueeze(-1)
    return (size > 1e3 * torch.finfo(size.dtype).eps * peak) & (peak > 0)


def _unresolved(
    m: torch.Tensor, degenerate_pairs: torch.Tensor, gw: torch.Tensor | None = None
) -> torch.Tensor:
    """Per matrix: does ``m = V^H gV`` carry a component on a degenerate pair that masking
    drops?

    Its anti-Hermitian part there is what a loss depending on the basis inside the
    eigenspace produces: always flagged. Its Hermitian part there, together with a
    gradient on those eigenvalues, is what a spectral function ``sum f(w_i) v_i v_i^H``
    produces (its exact gradient has the ``f'(w)`` term masking drops); a loss of the
    eigenspace alone (its projector), which masking gets right, has no eigenvalue
    gradient and is not flagged.
    """
    skew = _beyond_roundoff(0.5 * (m - m.mH)) & degenerate_pairs
    hit = skew
    if m.is_complex():
        # a loss that depends on the phase of a complex eigenvector (Im diag(V^H gV) != 0):
        # the gauge is treated as constant, so this part is dropped (torch raises here)
        size = m.abs()
        peak = size.flatten(-2).amax(-1, keepdim=True)
        imag = torch.diagonal(m, dim1=-2, dim2=-1).imag.abs()
        phase = (imag > 1e3 * torch.finfo(size.dtype).eps * peak) & (peak > 0)
        hit = hit | torch.diag_embed(phase)
    if gw is not None:
        herm = _beyond_roundoff(0.5 * (m + m.mH)) & degenerate_pairs
        g = gw.abs()
        on_w = g > 1e3 * torch.finfo(g.dtype).eps * g.amax(-1, keepdim=True)
        hit = hit | (herm & (on_w.unsqueeze(-1) | on_w.unsqueeze(-2)))
    return hit.flatten(-2).any(-1)


def _apply_policy(bad: torch.Tensor, out: torch.Tensor, policy: str, where: str) -> torch.Tensor:
    if policy == "ignore":
        return out
    if torch._C._functorch.is_functorch_wrapped_tensor(bad):
        # under torch.func.vmap no data-dependent branch is possible: NaN is applied
        # elementwise, a warning cannot be decided per batch member and is skipped
        if policy != "nan":
            return out
    elif not bool(bad.any()):
        return out
    if policy == "nan":
        nan = torch.full((), float("nan"), dtype=out.dtype, device=out.device)
        return torch.where(bad.reshape(*bad.shape, *([1] * (out.ndim - bad.ndim))), nan, out)
    warnings.warn(
        f"spectra.eigh {where}: the gradient depends on what eigh cannot differentiate "
        f"({int(bad.sum())} matrices): the basis chosen inside an exactly degenerate "
        "eigenspace, the split of a degeneracy, or the phase of complex eigenvectors. "
        "Degenerate pairs are masked and the phase held fixed, which is exact for losses "
        "invariant under both but wrong for spectral functions V f(W) V^H: use "
        "spectra.matrix_function(a, f) for those (exact at degeneracies), or "
        "degenerate='nan' / 'ignore' to choose another policy",
        DegenerateGradientWarning,
        stacklevel=3,
    )
    return out
