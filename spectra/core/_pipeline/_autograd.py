"""Autograd for the batched eigh: finite at degeneracies, never silently wrong there.

The backward of ``A = V diag(w) V^H`` is ``gA = V (diag(gw) + F o skew(V^H gV)) V^H`` with
``F_ij = 1 / (w_j - w_i)``. Where ``|w_j - w_i|`` is below ``degenerate_tol`` (relative to
the matrix's largest |w|) the pair lies in one degenerate subspace and ``F_ij = 0``
(xitorch's masking). With ``broadening > 0`` the remaining terms use the Lorentzian
``(w_j - w_i) / ((w_j - w_i)^2 + broadening)`` of Liao et al., PRX 9, 031041 (2019).
Separated spectra with ``broadening=0`` give torch's own gradient, bitwise: there the
backward takes the short route of :mod:`._backward_fast` (torch's formula in torch's order,
no detector; a large CPU batch split over the core's pool), and the general route has the
same bits on every pair it does not mask, so a matrix's gradient does not depend on the
route or the chunk. A caller whose solver is ``torch.linalg.eigh`` itself passes
``native=`` to :func:`eigh_with_grad` (the direct path does): torch's own C++ node then
differentiates a separated real spectrum, with the gauge as a multiply by column signs.

**Policy at degeneracies.** Masking is exact for losses of the eigenvalues, of the
eigenvectors of simple eigenvalues, and of a degenerate eigenspace through its projector.
It is not when the loss depends on the arbitrary basis chosen inside the eigenspace (an
anti-Hermitian part of ``V^H gV`` on a degenerate pair), nor for spectral functions
``V f(W) V^H`` (a Hermitian part on a degenerate pair together with a gradient on those
eigenvalues), whose exact gradient has the divided-difference term ``f'(w) (V^H G V)_ij``
of :func:`spectra.matrix_function` that no eigh backward can know. These are detected;
``degenerate`` decides what happens then: ``"warn"`` (default) returns the masked gradient
with a :class:`DegenerateGradientWarning` naming ``spectra.matrix_function``; ``"nan"``
returns NaN for the affected matrices (as ``torch.linalg.eigh`` does); ``"ignore"``
returns the masked gradient silently.

Forward mode (``jvp``) uses the same factor: ``dw = diag(V^H dA V)``,
``dV = V (F o (V^H dA V))`` (zero diagonal: torch's convention for the phase), and
``vmap`` moves the mapped dimension into the batch, so ``torch.func`` transforms work.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import torch

from .._errors import InputError
from .._support._memory import BACKWARD_MATRICES, matrix_bytes, rows_within
from .._support._threads import fan_out
from ._backward_fast import (
    phase_free,
    short_backward,
    split_workers,
    torch_backward,
    well_separated,
)
from ._degenerate import DegenerateGradientWarning as DegenerateGradientWarning  # re-exported
from ._degenerate import _apply_policy, _beyond_roundoff, _unresolved

Solver = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
Grad = torch.Tensor | None  # a gradient that may be absent
DEGENERATE_POLICIES = ("warn", "nan", "ignore")


def check_policy(degenerate: Any) -> str:
    """``degenerate`` if it is one of :data:`DEGENERATE_POLICIES` (the one check)."""
    if degenerate not in DEGENERATE_POLICIES:
        raise InputError("degenerate", f"must be one of {DEGENERATE_POLICIES}, got {degenerate!r}")
    return str(degenerate)


class BackwardOptions(NamedTuple):
    """How the eigh backward (and forward mode) treats degeneracies: the one object.

    ``degenerate_tol`` ``None`` is the dtype's default (:func:`degenerate_default`, made
    concrete by :meth:`resolved`); ``budget`` bounds the backward's temporaries in bytes
    (the batch is processed in chunks). Built from :class:`~spectra.core.Options` by
    ``Options.backward``.

    >>> tol = BackwardOptions().resolved(torch.float64).degenerate_tol
    >>> tol == degenerate_default(torch.float64)
    True
    """

    degenerate_tol: float | None = None
    broadening: float = 0.0
    degenerate: str = "warn"
    budget: int | None = None  # bytes the backward's temporaries may use (chunks the batch)

    def resolved(self, dtype: torch.dtype) -> BackwardOptions:
        """These options with the default tolerance of real ``dtype`` filled in."""
        if self.degenerate_tol is not None:
            return self
        return self._replace(degenerate_tol=degenerate_default(dtype))


#: the defaults (``"warn"`` at degeneracies, the dtype's tolerance, no budget)
DEFAULT_BACKWARD = BackwardOptions()


def degenerate_default(dtype: torch.dtype) -> float:
    """Default relative gap under which two eigenvalues count as degenerate in the backward."""
    return 1e3 * torch.finfo(dtype).eps


def _factor(
    w: torch.Tensor, tol: float | None, broadening: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(F, degenerate)``: ``F[i, j] = 1/(w_j - w_i)`` (0 on degenerate pairs and the
    diagonal) and the mask of degenerate off-diagonal pairs (``tol`` None: the default)."""
    if tol is None:
        tol = degenerate_default(w.dtype)
    gap = w.unsqueeze(-2) - w.unsqueeze(-1)  # gap[i, j] = w_j - w_i
    scale = w.abs().amax(-1, keepdim=True).unsqueeze(-1).clamp_min(torch.finfo(w.dtype).tiny)
    degenerate = gap.abs() <= tol * scale
    safe = torch.where(degenerate, torch.ones_like(gap), gap)
    factor = safe / (safe * safe + broadening) if broadening > 0 else 1.0 / safe
    factor = torch.where(degenerate, torch.zeros_like(factor), factor)
    eye = torch.eye(w.shape[-1], dtype=torch.bool, device=w.device)
    return factor, degenerate & ~eye


def _backward_block(w, v, gw, gv, opts: BackwardOptions) -> tuple[torch.Tensor, torch.Tensor]:
    """One chunk's gradient and its unresolved matrices. Where nothing is masked and
    there is no broadening, every entry is :func:`torch_backward`'s, operation for
    operation, so a matrix's gradient has the same bits whichever route or chunk it
    takes."""
    bad = torch.zeros(w.shape[:-1], dtype=torch.bool, device=w.device)
    if gv is None:
        return torch_backward(w, v, gw.to(w.dtype), None), bad
    vh = v.mH
    vhgv = torch.matmul(vh, gv)
    factor, degenerate = _factor(w, opts.degenerate_tol, opts.broadening)
    if opts.degenerate != "ignore" and (
        vhgv.is_complex()  # a phase-dependent loss needs no degenerate pair
        or torch._C._functorch.is_functorch_wrapped_tensor(degenerate)
        or bool(degenerate.any())
    ):  # real, no degenerate pair (the common case): nothing can be unresolved
        bad = _unresolved(vhgv, degenerate, gw)
    # out of place throughout: under torch.func some operands are batched, others not
    skew = 0.5 * (vhgv - vhgv.mH)
    if opts.broadening > 0:
        inner = skew * factor  # the Lorentzian, 0 on degenerate pairs and the diagonal
    else:  # torch's division by the gap; masked pairs (and the diagonal's 0 / 0) set to 0
        masked = factor == 0  # where the quotient is dropped, a divisor of 1 keeps its
        gap = torch.where(masked, 1.0, w.unsqueeze(-2) - w.unsqueeze(-1))  # derivative finite
        inner = torch.where(masked, 0.0, skew / gap)
    if gw is not None:  # onto a diagonal of exact zeros: torch's copy of gw
        inner = inner + torch.diag_embed(gw.to(inner.dtype))
    return torch.matmul(v, torch.matmul(inner, vh)), bad


def _one_chunk(v: torch.Tensor, opts: BackwardOptions) -> bool:
    """Whether the backward's temporaries for ``v``'s batch fit ``opts.budget`` at once."""
    if opts.budget is None:
        return True
    n = v.shape[-1]
    batch = v.numel() // max(1, n * n)
    return _rows(n, batch, v.element_size(), opts.budget) >= batch


def _fast_route(
    w: torch.Tensor, v: torch.Tensor, gw: Grad, gv: Grad, opts: BackwardOptions
) -> bool:
    """Whether :func:`torch_backward` is the degenerate-safe backward's exact value here:
    no eigenvector gradient (no gap enters), or one with no broadening on a
    well-separated spectrum (nothing masked) whose phase test cannot fire (complex) --
    in one chunk, outside ``torch.func`` transforms."""
    wrapped = torch._C._functorch.is_functorch_wrapped_tensor
    if any(g is not None and wrapped(g) for g in (w, v, gw, gv)) or not _one_chunk(v, opts):
        return False
    if gv is None:
        return True
    if opts.broadening > 0:
        return False
    tol = opts.degenerate_tol
    if not well_separated(w, degenerate_default(w.dtype) if tol is None else tol):
        return False
    return not v.is_complex() or opts.degenerate == "ignore" or phase_free(v, gv)


def _rows(n: int, batch: int, itemsize: int, budget: int | None) -> int:
    return rows_within(budget, matrix_bytes(n, itemsize, BACKWARD_MATRICES, vectors=0), batch)


def eigh_backward(
    w: torch.Tensor,
    v: torch.Tensor,
    gw: torch.Tensor | None,
    gv: torch.Tensor | None,
    degenerate_tol: float,
    broadening: float = 0.0,
    degenerate: str = "ignore",
    budget: int | None = None,
) -> torch.Tensor:
    """Gradient with respect to ``A`` (Hermitian) from gradients of ``w`` and ``v``.

    The batch is processed in chunks whose temporaries fit ``budget`` bytes.
    """
    opts = BackwardOptions(degenerate_tol, broadening, check_policy(degenerate), budget)
    return _backward(w, v, gw, gv, opts.resolved(w.dtype))


def _backward(
    w: torch.Tensor, v: torch.Tensor, gw: Grad, gv: Grad, opts: BackwardOptions
) -> torch.Tensor:
    """:func:`eigh_backward` with its options object (tolerance resolved): in chunks that
    fit the budget, or one chunk split over the core's pool (the same bits per matrix)."""
    n = v.shape[-1]
    fw, fv = w.reshape(-1, n), v.reshape(-1, n, n)
    fgw = gw.reshape(-1, n) if gw is not None else None
    fgv = gv.reshape(-1, n, n) if gv is not None else None

    def block(lo: int, hi: int) -> tuple[torch.Tensor, torch.Tensor]:
        pgw = None if fgw is None else fgw[lo:hi]
        return _backward_block(fw[lo:hi], fv[lo:hi], pgw, None if fgv is None else fgv[lo:hi], opts)

    batch = fv.shape[0]
    rows = _rows(n, batch, v.element_size(), opts.budget)
    workers = split_workers(v) if rows >= batch else 1
    if workers > 1:
        results = fan_out(block, batch, workers)
    else:
        results = [block(s, s + rows) for s in range(0, max(1, batch), rows)]
    parts = [ga for ga, _ in results]
    ga = parts[0] if len(parts) == 1 else torch.cat(parts)
    ga = _apply_policy(torch.cat([bad for _, bad in results]), ga, opts.degenerate, "backward")
    return ga.reshape(v.shape)


def eigh_jvp(
    w: torch.Tensor, v: torch.Tensor, da: torch.Tensor, opts: BackwardOptions
) -> tuple[torch.Tensor, torch.Tensor]:
    """Forward-mode derivative ``(dw, dV)`` for the tangent ``da`` (made Hermitian)."""
    da = 0.5 * (da + da.mH)
    m = v.mH @ da.to(v.dtype) @ v
    dw = torch.diagonal(m, dim1=-2, dim2=-1).real
    factor, degenerate = _factor(w, opts.degenerate_tol, opts.broadening)
    dv = v @ (m * factor)
    if opts.degenerate != "ignore":
        bad = _beyond_roundoff(m).logical_and(degenerate).flatten(-2).any(-1)
        dv = _apply_policy(bad, dv, opts.degenerate, "forward-mode derivative")
    return dw, dv


class _EighFunction(torch.autograd.Function):
    @staticmethod
    def forward(a, solver, opts):  # type: ignore[override]
        w, v = solver(a.detach())
        return w, v

    @staticmethod
    def setup_context(ctx, inputs, output):  # type: ignore[override]
        _, _, opts = inputs
        w, v = output
        ctx.save_for_backward(w, v)
        ctx.save_for_forward(w, v)
        ctx.opts = opts
        ctx.set_materialize_grads(False)  # an unused output's gradient stays None

    @staticmethod
    def backward(ctx, gw, gv):  # type: ignore[override]
        w, v = ctx.saved_tensors
        if gw is None and gv is None:
            return None, None, None
        if _fast_route(w, v, gw, gv, ctx.opts):
            return short_backward(w, v, gw, gv), None, None
        return _backward(w, v, gw, gv, ctx.opts), None, None

    @staticmethod
    def jvp(ctx, da, _solver, _opts):  # type: ignore[override]
        w, v = ctx.saved_tensors
        dw, dv = eigh_jvp(w, v, da, ctx.opts)
        if torch._C._functorch.is_functorch_wrapped_tensor(dv):
            return dw, dv
        # plain forward AD wants tangents in the primals' layout (LAPACK's column-major)
        return torch.empty_like(w).copy_(dw), torch.empty_like(v).copy_(dv)

    @staticmethod
    def vmap(info, in_dims, a, solver, opts):  # type: ignore[override]
        dim = in_dims[0]
        a = a.expand(info.batch_size, *a.shape) if dim is None else a.movedim(dim, 0)
        w, v = _EighFunction.apply(a, solver, opts)
        return (w, v), (0, 0)


def is_tracked(a: torch.Tensor) -> bool:
    """Whether ``a`` carries derivatives: requires grad (with grad mode on), is a
    forward-mode dual, or is wrapped by a ``torch.func`` transform (grad, vmap, jvp)."""
    if torch.is_grad_enabled() and a.requires_grad:
        return True
    if torch._C._functorch.is_functorch_wrapped_tensor(a):
        return True
    return torch.autograd.forward_ad.unpack_dual(a).tangent is not None


def _APPLY(cls: type, *args: Any) -> Any:
    """``cls.apply(*args)`` without torch's per-call argument binding (see the caller)."""
    return super(torch.autograd.Function, cls).apply(*args)  # type: ignore[misc]


def eigh_with_grad(
    a: torch.Tensor,
    solver: Solver,
    opts: BackwardOptions = DEFAULT_BACKWARD,
    native: Solver | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run ``solver`` (any ``(..., n, n)`` -> ``(w, v)``) on ``a`` and attach the
    degenerate-safe backward, forward-mode and vmap rules when ``a`` carries derivatives.

    ``native``, if given, computes bitwise what ``solver`` computes but on the tracked
    ``a`` through ``torch.linalg.eigh``'s own autograd (the gauge as
    :func:`~._backward_fast.gauge_fresh`). Under plain autograd, for a real ``a`` and
    no broadening, its result is returned as is when the spectrum is well separated
    (torch's C++ backward is then the degenerate-safe one's value, without a Python
    node); otherwise its values get this module's rule, with no second solve.
    """
    if not is_tracked(a):
        return solver(a.detach())
    opts = _resolved(opts, a.real.dtype if a.is_complex() else a.dtype)
    if torch._C._are_functorch_transforms_active():
        return _EighFunction.apply(a, solver, opts)
    if native is not None and not a.is_complex() and opts.broadening == 0:
        w, v = native(a)
        tol = opts.degenerate_tol
        assert tol is not None
        if w.requires_grad and _one_chunk(v, opts) and well_separated(w, tol):
            return w, v
        solver = _values(w, v)  # the values computed: no second solve
    # plain autograd: torch's Function.apply binds the arguments through inspect.signature
    # on every call (tens of microseconds, a visible share of one small matrix's
    # forward + backward); with positional arguments and no defaults there is nothing to
    # bind, so the C entry point is called directly (what apply does after binding)
    return _APPLY(_EighFunction, a, solver, opts)


def _values(w: torch.Tensor, v: torch.Tensor) -> Solver:
    """A solver that returns ``(w, v)``'s values (detached), whatever it is handed."""
    wd, vd = w.detach(), v.detach()
    return lambda _a: (wd, vd)


@functools.lru_cache(maxsize=256)
def _resolved(opts: BackwardOptions, dtype: torch.dtype) -> BackwardOptions:
    """``opts.resolved(dtype)``, once per options and dtype."""
    return opts.resolved(dtype)
