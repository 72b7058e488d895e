"""Spectral matrix functions ``V f(W) V^H`` with a backward exact at degenerate eigenvalues.

The backward of ``eigh`` divides by eigenvalue gaps; at an exact degeneracy no eigh
backward can recover the gradient of a function of the matrix without knowing ``f``.
Given ``f``, the Frechet derivative is Daleckii-Krein's divided-difference formula,

    L_f(A, E) = V (F o (V^H E V)) V^H,   F_ij = (f(w_i) - f(w_j)) / (w_i - w_j),

with ``F_ij = f'(w_i)`` on ties; the map is self-adjoint, so the gradient of a loss with
upstream gradient ``G`` is ``V (conj(F) o (V^H G V)) V^H``. Close ties use the mean of the
two derivatives (error ``O(gap^2 f''')``) instead of the cancelling quotient. The gradient
map is differentiable in turn through the second divided differences
``f[w_i, w_k, w_j]`` (Hessian-vector products, gradgradcheck), for real-valued ``f``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ._arrays import as_tensor, restore

ElementwiseFn = Callable[[torch.Tensor], torch.Tensor]


def _apply(f: ElementwiseFn, w: torch.Tensor) -> torch.Tensor:
    y = f(w)
    if not isinstance(y, torch.Tensor) or y.shape != w.shape:
        shape = tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__
        raise ValueError(f"f must be elementwise: f(w) gave {shape} for w {tuple(w.shape)}")
    return y


def _values_and_derivatives(f: ElementwiseFn, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``f(w)`` and ``f'(w)`` for an elementwise ``f`` (complex ``f`` allowed: real and
    imaginary parts are differentiated separately)."""
    with torch.enable_grad():
        x = w.detach().clone().requires_grad_(True)
        y = _apply(f, x)
        if not y.requires_grad:  # constant f
            return y.detach(), torch.zeros_like(y.detach())
        if y.is_complex():
            (dr,) = torch.autograd.grad(y.real.sum(), x, retain_graph=True)
            (di,) = torch.autograd.grad(y.imag.sum(), x)
            return y.detach(), torch.complex(dr, di)
        (d,) = torch.autograd.grad(y.sum(), x)
    return y.detach(), d


def divided_differences(
    w: torch.Tensor, fw: torch.Tensor, dfw: torch.Tensor, rel_tol: float | None = None
) -> torch.Tensor:
    """The Loewner matrix ``F_ij = (f_i - f_j)/(w_i - w_j)``, ``(f'_i + f'_j)/2`` on ties.

    Two eigenvalues are tied when ``|w_i - w_j| <= rel_tol * max|w|`` (default
    ``eps^(1/3)``, where the quotient's cancellation error and the mean-derivative error,
    both ``~eps^(2/3)``, balance).
    """
    real = w.dtype
    tol = torch.finfo(real).eps ** (1 / 3) if rel_tol is None else rel_tol
    scale = w.abs().amax(-1, keepdim=True).unsqueeze(-1).clamp_min(torch.finfo(real).tiny)
    gap = w.unsqueeze(-1) - w.unsqueeze(-2)
    tied = gap.abs() <= tol * scale
    quotient = (fw.unsqueeze(-1) - fw.unsqueeze(-2)) / torch.where(tied, 1.0, gap)
    mean = 0.5 * (dfw.unsqueeze(-1) + dfw.unsqueeze(-2))
    return torch.where(tied, mean, quotient)


def second_divided_differences(
    w: torch.Tensor, loewner: torch.Tensor, dfw: torch.Tensor, d2fw: torch.Tensor
) -> torch.Tensor:
    """``T[..., i, k, j] = f[w_i, w_k, w_j]`` with the confluent limits on ties:
    ``(f'(w_i) - f[w_i, w_k]) / (w_i - w_k)`` when ``w_i = w_j``, ``f''/2`` when all tie."""
    real = w.dtype
    tol = torch.finfo(real).eps ** (1 / 3)
    scale = w.abs().amax(-1, keepdim=True).clamp_min(torch.finfo(real).tiny)
    wi = w[..., :, None, None]
    wk = w[..., None, :, None]
    wj = w[..., None, None, :]
    sc = scale[..., None, None]
    f_ik = loewner.unsqueeze(-1)  # [i, k, 1]
    f_kj = loewner.unsqueeze(-3)  # [1, k, j]
    tie_ij = (wi - wj).abs() <= tol * sc
    tie_ik = (wi - wk).abs() <= tol * sc
    general = (f_ik - f_kj) / torch.where(tie_ij, torch.ones_like(wi - wj), wi - wj)
    confluent = (dfw[..., :, None, None] - f_ik) / torch.where(
        tie_ik, torch.ones_like(wi - wk), wi - wk
    )
    d2 = d2fw
    triple = (d2[..., :, None, None] + d2[..., None, :, None] + d2[..., None, None, :]) / 6
    return torch.where(tie_ij, torch.where(tie_ik, triple, confluent), general)


def _second_derivative(f: ElementwiseFn, w: torch.Tensor) -> torch.Tensor:
    with torch.enable_grad():
        x = w.detach().clone().requires_grad_(True)
        y = _apply(f, x)
        if not y.requires_grad:
            return torch.zeros_like(w)
        (d1,) = torch.autograd.grad(y.sum(), x, create_graph=True)
        if not d1.requires_grad:
            return torch.zeros_like(w)
        (d2,) = torch.autograd.grad(d1.sum(), x)
    return d2


def _loewner_apply(v: torch.Tensor, loewner: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """``V (loewner o (V^H g V)) V^H``."""
    dtype = torch.promote_types(v.dtype, loewner.dtype)
    vo = v.to(dtype)
    return vo @ (loewner.to(dtype) * (vo.mH @ g.to(dtype) @ vo)) @ vo.mH


class _DaleckiiKrein(torch.autograd.Function):
    """The gradient map ``G -> V (conj(F) o (V^H G V)) V^H`` as a function of ``(A, G)``,
    itself differentiable (second divided differences; real-valued ``f``)."""

    @staticmethod
    def forward(ctx, a, grad, w, v, fw, dfw, f):  # type: ignore[override]
        loewner = divided_differences(w, fw, dfw)
        ga = _loewner_apply(v, loewner.conj(), grad)
        if not a.is_complex() and ga.is_complex():
            ga = ga.real
        ctx.save_for_backward(grad, w, v, fw, dfw)
        ctx.f, ctx.input_complex = f, a.is_complex()
        return ga

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, h):  # type: ignore[override]
        grad, w, v, fw, dfw = ctx.saved_tensors
        if fw.is_complex():
            raise RuntimeError(
                "spectra.matrix_function: second derivatives are implemented for real-valued f only"
            )
        loewner = divided_differences(w, fw, dfw)
        g_grad = _loewner_apply(v, loewner, h)  # the map is self-adjoint for real f
        # d/dA: M_ij = sum_k T_ikj (G_ik E_kj + E_ik G_kj) in the eigenbasis
        t = second_divided_differences(w, loewner, dfw, _second_derivative(ctx.f, w))
        dtype = torch.promote_types(v.dtype, h.dtype)
        vo = v.to(dtype)
        hh = vo.mH @ h.to(dtype) @ vo
        gh = (vo.mH @ grad.to(dtype) @ vo).conj()
        t = t.to(dtype)
        x = torch.einsum("...ij,...ikj,...ik->...kj", hh, t, gh)
        x = x + torch.einsum("...ij,...ikj,...kj->...ik", hh, t, gh)
        a_grad = vo @ x @ vo.mH
        if not ctx.input_complex:
            a_grad = a_grad.real if a_grad.is_complex() else a_grad
            g_grad = g_grad.real if g_grad.is_complex() else g_grad
        return a_grad, g_grad, None, None, None, None, None


class _MatrixFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, f, solve):  # type: ignore[override]
        w, v = solve(a.detach())
        fw, dfw = _values_and_derivatives(f, w)
        out_dtype = torch.promote_types(v.dtype, fw.dtype)
        vo = v.to(out_dtype)
        out = (vo * fw.to(out_dtype).unsqueeze(-2)) @ vo.mH
        ctx.save_for_backward(a, w, v, fw, dfw)
        ctx.f = f
        return out

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        a, w, v, fw, dfw = ctx.saved_tensors
        return _DaleckiiKrein.apply(a, grad, w, v, fw, dfw, ctx.f), None, None


def _solver(options: dict[str, Any]) -> Callable[[torch.Tensor], tuple[torch.Tensor, Any]]:
    from ._eigh import eigh

    def solve(x: torch.Tensor) -> tuple[torch.Tensor, Any]:
        with torch.no_grad():
            w, v = eigh(x, **options)
        return w, v

    return solve


def matrix_function(a: Any, f: ElementwiseFn, **options: Any) -> Any:
    """``V f(W) V^H`` for a batch of Hermitian matrices, differentiable at degeneracies.

    Parameters
    ----------
    a : array ``(..., n, n)``, real symmetric or complex Hermitian (torch or NumPy).
    f : elementwise torch function of the real eigenvalues (``torch.exp``, ``torch.sqrt``,
        ``lambda w: w.clamp_min(0)``, ``lambda w: torch.exp(1j * w)``, ...). Its derivative
        is taken by autograd, elementwise.
    **options : passed to :func:`spectra.eigh` (``check``, ``strategy``, ``workers``, ...).

    Returns
    -------
    array ``(..., n, n)``
        ``f(A)``, in ``a``'s form (NumPy in, NumPy out); complex if ``f`` is. Its gradient
        is the Daleckii-Krein formula, exact at (near-)degenerate eigenvalues (``A = I``
        included), where the gradient through :func:`spectra.eigh` is not. For real-valued
        ``f`` it is twice differentiable (second divided differences, also exact at
        degeneracies); a second derivative of a complex-valued ``f`` raises.

    Examples
    --------
    >>> import torch, spectra
    >>> a = torch.eye(2, dtype=torch.float64, requires_grad=True)
    >>> y = spectra.matrix_function(a, torch.exp)
    >>> y.sum().backward()
    >>> a.grad  # e * ones: exact although both eigenvalues are 1
    tensor([[2.7183, 2.7183],
            [2.7183, 2.7183]], dtype=torch.float64)
    """
    at, origin = as_tensor(a, "a")
    if at.ndim < 2 or at.shape[-1] != at.shape[-2]:
        from ._errors import InputError

        raise InputError("a", f"must have shape (..., n, n), got {tuple(at.shape)}")
    solve = _solver(options)
    if at.numel() == 0:
        fw, _ = _values_and_derivatives(f, torch.zeros(at.shape[:-1], dtype=at.real.dtype))
        out = torch.zeros(at.shape, dtype=torch.promote_types(at.dtype, fw.dtype))
        out = out.to(at.device)
        if at.requires_grad and torch.is_grad_enabled():
            out = out + 0 * at.sum()  # stays attached: its gradient is zeros of a's shape
        return restore(out, origin)
    from ._eigh import _caller_kernels

    with _caller_kernels(at, options.get("device")):  # small CPU products: one OpenMP thread
        if torch.is_grad_enabled() and at.requires_grad:
            out = _MatrixFunction.apply(at, f, solve)
        else:
            out = _no_grad(at, f, solve)
    return restore(out, origin)


def _no_grad(a: torch.Tensor, f: ElementwiseFn, solve: Callable) -> torch.Tensor:
    w, v = solve(a)
    fw = _apply(f, w)
    dtype = torch.promote_types(v.dtype, fw.dtype)
    vo = v.to(dtype)
    return (vo * fw.to(dtype).unsqueeze(-2)) @ vo.mH
