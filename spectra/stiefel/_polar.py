"""The polar factor through one batched eigh of the small Gram matrices.

``polar(Y) = Y (Y^H Y)^(-1/2)``: the ``p x p`` Gram matrices of the whole batch go to the core
in ONE :func:`spectra.eigh` call. The inverse square root carries its own autograd: the
Daleckii-Krein formula with the divided differences of ``f(l) = l^(-1/2)``,

    f[a, b] = (f(a) - f(b)) / (a - b) = -1 / (sa sb (sa + sb)),     sa = sqrt(a),

which stays finite when eigenvalues coincide (``Y^H Y ~ I`` for tiny retraction steps, where
the eigenvector backward of eigh would divide by ``a - b ~ 0``). Second derivatives use the
second divided differences

    f[a, b, c] = (sa + sb + sc) / (sa sb sc (sa + sb) (sb + sc) (sa + sc)),

so ``gradgradcheck`` passes as well (third derivatives are not supported).
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from ..core import LinAlgError, eigh


def herm(a: torch.Tensor) -> torch.Tensor:
    """Hermitian part ``(A + A^H) / 2`` of the last two dimensions."""
    return 0.5 * (a + a.mH)


def _batch_indices(mask: torch.Tensor) -> list[tuple[int, ...]] | list[int]:
    idx = mask.nonzero().tolist()
    return [i[0] for i in idx] if mask.ndim == 1 else [tuple(i) for i in idx]


def _eig_sqrt(g: torch.Tensor, where: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(sqrt(eigenvalues), eigenvectors)`` of positive definite ``g`` (one core call)."""
    with torch.no_grad():
        w, u = eigh(g.detach(), check=False)
        eps = torch.finfo(w.dtype).eps
        # ascending eigenvalues: the first is the smallest, the last the largest
        top = w[..., -1].clamp_min(torch.finfo(w.dtype).tiny)
        # below ~10 p eps the smallest eigenvalue is rounding noise: Y is numerically rank
        # deficient and its polar factor is not determined
        bad = ~(w[..., 0] > 10 * w.shape[-1] * eps * top) | ~torch.isfinite(top)
        if bool(bad.any()):
            raise LinAlgError(
                f"{where}: the Gram matrix Y^H Y is singular or not finite (Y is not of full "
                f"column rank) at batch indices {_batch_indices(bad)[:20]}"
            )
    return w.sqrt(), u


def _first_dd(s: torch.Tensor) -> torch.Tensor:
    si, sj = s.unsqueeze(-1), s.unsqueeze(-2)
    return -1.0 / (si * sj * (si + sj))


def _second_dd(s: torch.Tensor) -> torch.Tensor:
    a, b, c = s[..., :, None, None], s[..., None, :, None], s[..., None, None, :]
    return (a + b + c) / (a * b * c * (a + b) * (b + c) * (a + c))


def _frechet(s: torch.Tensor, u: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """First Frechet derivative of ``G^(-1/2)`` in the Hermitian direction ``e``."""
    eh = u.mH @ e @ u
    return u @ (_first_dd(s).to(eh.dtype) * eh) @ u.mH


def _second_frechet(
    s: torch.Tensor, u: torch.Tensor, e: torch.Tensor, c: torch.Tensor
) -> torch.Tensor:
    """Gradient of ``<c, D f(G)[e]>`` with respect to ``G`` (both ``e``, ``c`` Hermitian)."""
    eh, ch = u.mH @ e @ u, u.mH @ c @ u
    t = _second_dd(s).to(eh.dtype)  # t[a, c, b]
    m = torch.einsum("...acb,...ac,...cb->...ab", t, eh, ch)
    m = m + torch.einsum("...acb,...ac,...cb->...ab", t, ch, eh)
    return herm(u @ m @ u.mH)


class _InvSqrtBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, g, grad, s, u):  # type: ignore[override]
        e = herm(grad)
        ctx.save_for_backward(s, u, e)
        return _frechet(s, u, e)

    @staticmethod
    @once_differentiable
    def backward(ctx, c):  # type: ignore[override]
        s, u, e = ctx.saved_tensors
        c = herm(c)
        return _second_frechet(s, u, e, c), _frechet(s, u, c), None, None


class _InvSqrt(torch.autograd.Function):
    @staticmethod
    def forward(ctx, g, where):  # type: ignore[override]
        s, u = _eig_sqrt(g, where)
        ctx.save_for_backward(g, s, u)
        return (u * s.reciprocal().to(u.dtype).unsqueeze(-2)) @ u.mH

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        g, s, u = ctx.saved_tensors
        return _InvSqrtBackward.apply(g, grad, s, u), None


def inv_sqrtm(g: torch.Tensor, *, where: str = "inv_sqrtm") -> torch.Tensor:
    """Inverse square root ``G^(-1/2)`` of a batch of Hermitian positive definite matrices.

    One :func:`spectra.eigh` call for the whole batch ``(..., p, p)``; the backward uses the
    divided differences of ``l^(-1/2)`` (finite at repeated eigenvalues, e.g. ``G = I``).

    Parameters
    ----------
    g : torch.Tensor ``(..., p, p)``, Hermitian positive definite (only its Hermitian part
        is used).
    where : name used in error messages.

    Returns
    -------
    torch.Tensor ``(..., p, p)``, Hermitian.

    Raises
    ------
    spectra.LinAlgError
        naming the batch indices where ``g`` is (numerically) singular.

    Examples
    --------
    >>> import torch
    >>> from spectra.stiefel import inv_sqrtm
    >>> inv_sqrtm(torch.diag(torch.tensor([4.0, 9.0], dtype=torch.float64)))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.3333]], dtype=torch.float64)
    """
    if g.ndim < 2 or g.shape[-1] != g.shape[-2]:
        raise ValueError(f"{where}: expected square matrices (..., p, p), got {tuple(g.shape)}")
    if g.shape[-1] == 0 or g.numel() == 0:
        return g.clone()
    g = herm(g)
    if torch.is_grad_enabled() and g.requires_grad:
        return _InvSqrt.apply(g, where)
    s, u = _eig_sqrt(g, where)
    return (u * s.reciprocal().to(u.dtype).unsqueeze(-2)) @ u.mH


def polar(y: torch.Tensor, *, where: str = "polar") -> torch.Tensor:
    """Polar factor ``Y (Y^H Y)^(-1/2)`` of a batch of full-column-rank ``(..., n, p)`` frames.

    Equals ``U V^H`` from the thin SVD ``Y = U S V^H``: the nearest matrix with orthonormal
    columns in the Frobenius norm. One core eigh call on the ``p x p`` Gram matrices. The Gram
    route squares the condition number: the error is about ``eps * cond(Y)^2``, harmless for
    retraction steps (``Y^H Y >= I`` for tangent steps) but worth knowing for ``projx`` of
    ill-conditioned float32 data; numerically rank-deficient ``Y`` (smallest Gram eigenvalue
    below ``10 p eps`` times the largest) raises :class:`spectra.LinAlgError`.

    Examples
    --------
    >>> import torch
    >>> from spectra.stiefel import polar
    >>> q = polar(torch.randn(100, 6, 3, dtype=torch.float64))
    >>> bool(torch.allclose(q.mT @ q, torch.eye(3, dtype=torch.float64).expand(100, 3, 3)))
    True
    """
    if y.ndim < 2:
        raise ValueError(f"{where}: expected frames (..., n, p), got shape {tuple(y.shape)}")
    return y @ inv_sqrtm(y.mH @ y, where=where)
