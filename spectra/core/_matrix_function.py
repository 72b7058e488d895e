"""Spectral matrix functions ``V f(W) V^H`` with a backward exact at degenerate eigenvalues.

The backward of ``eigh`` divides by eigenvalue gaps; at an exact degeneracy no eigh
backward can recover the gradient of a function of the matrix without knowing ``f``.
Given ``f``, the Frechet derivative is Daleckii-Krein's divided-difference formula,

    L_f(A, E) = V (F o (V^H E V)) V^H,   F_ij = (f(w_i) - f(w_j)) / (w_i - w_j),

with ``F_ij = f'(w_i)`` on ties; the map is self-adjoint, so the gradient of a loss with
upstream gradient ``G`` is ``V (conj(F) o (V^H G V)) V^H``. The divided differences
(``_divided_differences.py``) are shift invariant and accurate at every gap: near ties a
corrected trapezoid of ``f'`` and ``f''`` at the eigenvalues replaces the cancelling
quotient, chosen by comparing error estimates, never a gap against ``max |w|``. The gradient
map is differentiable in turn through the second divided differences
``f[w_i, w_k, w_j]`` (Hessian-vector products, gradgradcheck), for real-valued ``f``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ._pipeline._divided_differences import divided_differences, second_divided_differences
from ._support._arrays import as_tensor, restore

ElementwiseFn = Callable[[torch.Tensor], torch.Tensor]


def _apply(f: ElementwiseFn, w: torch.Tensor) -> torch.Tensor:
    y = f(w)
    if not isinstance(y, torch.Tensor) or y.shape != w.shape:
        shape = tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__
        raise ValueError(f"f must be elementwise: f(w) gave {shape} for w {tuple(w.shape)}")
    return y


def _second(d: torch.Tensor, x: torch.Tensor) -> torch.Tensor | None:
    """``d/dx`` of the first derivative ``d`` (built with ``create_graph``); ``None`` where
    autograd cannot differentiate it (a custom function marked once_differentiable)."""
    if not d.requires_grad:
        # no graph: f affine (f' constant), or an f autograd differentiates only once
        # (a custom function marked once_differentiable), told apart where f' varies
        constant = d.numel() == 0 or bool((d == d.reshape(-1)[0]).all())
        return torch.zeros_like(d) if constant else None
    try:
        (dd,) = torch.autograd.grad(d.sum(), x, retain_graph=True, allow_unused=True)
    except RuntimeError:
        return None
    return torch.zeros_like(d) if dd is None else dd  # unused: f' does not depend on w


def _derivatives(
    f: ElementwiseFn, w: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """``f(w)``, ``f'(w)`` and ``f''(w)`` for an elementwise ``f`` from one call of ``f``
    (complex ``f`` allowed: real and imaginary parts are differentiated separately);
    ``f''`` is ``None`` where autograd cannot differentiate ``f'`` (the first derivative is
    still exact; only the near-tie formula loses an order)."""
    with torch.enable_grad():
        x = w.detach().clone().requires_grad_(True)
        y = _apply(f, x)
        if not y.requires_grad:  # constant f
            zero = torch.zeros_like(y.detach())
            return y.detach(), zero, zero
        if not y.is_complex():
            (d1,) = torch.autograd.grad(y.sum(), x, create_graph=True)
            return y.detach(), d1.detach(), _second(d1, x)
        (dr,) = torch.autograd.grad(y.real.sum(), x, retain_graph=True, create_graph=True)
        (di,) = torch.autograd.grad(y.imag.sum(), x, retain_graph=True, create_graph=True)
        d2r, d2i = _second(dr, x), _second(di, x)
    d1c = torch.complex(dr.detach(), di.detach())
    d2c = None if d2r is None or d2i is None else torch.complex(d2r, d2i)
    return y.detach(), d1c, d2c


def _values_and_derivatives(f: ElementwiseFn, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``f(w)`` and ``f'(w)``."""
    fw, dfw, _ = _derivatives(f, w)
    return fw, dfw


def _loewner_apply(v: torch.Tensor, loewner: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """``V (loewner o (V^H g V)) V^H``."""
    dtype = torch.promote_types(v.dtype, loewner.dtype)
    vo = v.to(dtype)
    return vo @ (loewner.to(dtype) * (vo.mH @ g.to(dtype) @ vo)) @ vo.mH


class _DaleckiiKrein(torch.autograd.Function):
    """The gradient map ``G -> V (conj(F) o (V^H G V)) V^H`` as a function of ``(A, G)``,
    itself differentiable (second divided differences; real-valued ``f``)."""

    @staticmethod
    def forward(ctx, a, grad, w, v, fw, dfw, d2fw):  # type: ignore[override]
        loewner = divided_differences(w, fw, dfw, d2fw)
        ga = _loewner_apply(v, loewner.conj(), grad)
        if not a.is_complex() and ga.is_complex():
            ga = ga.real
        ctx.save_for_backward(grad, w, v, fw, dfw, d2fw)
        ctx.input_complex = a.is_complex()
        return ga

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, h):  # type: ignore[override]
        grad, w, v, fw, dfw, d2fw = ctx.saved_tensors
        if fw.is_complex():
            raise RuntimeError(
                "spectra.matrix_function: second derivatives are implemented for real-valued f only"
            )
        if d2fw is None:
            raise RuntimeError(
                "spectra.matrix_function: second derivatives need an f that autograd can "
                "differentiate twice"
            )
        loewner = divided_differences(w, fw, dfw, d2fw)
        g_grad = _loewner_apply(v, loewner, h)  # the map is self-adjoint for real f
        # d/dA: M_ij = sum_k T_ikj (G_ik E_kj + E_ik G_kj) in the eigenbasis
        t = second_divided_differences(w, fw, dfw, d2fw)
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
        fw, dfw, d2fw = _derivatives(f, w)
        out_dtype = torch.promote_types(v.dtype, fw.dtype)
        vo = v.to(out_dtype)
        out = (vo * fw.to(out_dtype).unsqueeze(-2)) @ vo.mH
        ctx.save_for_backward(a, w, v, fw, dfw, d2fw)
        return out

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        a, w, v, fw, dfw, d2fw = ctx.saved_tensors
        return _DaleckiiKrein.apply(a, grad, w, v, fw, dfw, d2fw), None, None


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
    if torch.compiler.is_compiling():  # torch.compile / export: one custom op, f by key
        from ._compile import compiled_matrix_function  # circle: deliberate (the op runs us)

        traced = compiled_matrix_function(a, f, options)
        if traced is not None:
            return traced
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
