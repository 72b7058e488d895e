"""The eigh backward for one tracked matrix on the direct path, in the fewest steps.

``spectra.eigh(a)`` of one small real or complex matrix that requires grad costs torch's
forward + backward plus whatever spectra adds (issue 26: at most 1.3x). Two routes keep
that small, both with :mod:`._autograd`'s contract (torch's gradient, bitwise, where the
spectrum is separated; the degenerate-safe rule where it is not):

- :func:`with_backward`: eigenpairs solved without history (the compiled one-call
  route: check, LAPACK, gauge in one C call) become outputs of the lightest Python node,
  :class:`_EighSolved`, whose backward tests the gaps once, where the gradients are
  known, and runs torch's formula (:func:`~._backward_fast.torch_backward`) or the rule;
- :func:`eigh_native`: ``torch.linalg.eigh``'s own node, its output put in the gauge in
  place (:func:`~._backward_fast.gauge_fresh`), kept where the spectrum is separated.

Under ``torch.func`` transforms, forward mode, options or batches the general entry
:func:`~._autograd.eigh_with_grad` runs instead (the caller checks).
"""

from __future__ import annotations

import torch

from ._autograd import (
    _APPLY,
    DEFAULT_BACKWARD,
    Solver,
    _backward,
    _EighFunction,
    _fast_route,
    _resolved,
    _values,
    degenerate_default,
)
from ._backward_fast import (
    _row_separated,
    complex_backward_one,
    phase_free,
    short_backward,
    torch_backward,
    well_separated,
)

_DEFAULT_TOL = {d: degenerate_default(d) for d in (torch.float32, torch.float64)}
_TOL64 = _DEFAULT_TOL[torch.float64]
_TOL32 = _DEFAULT_TOL[torch.float32]
_wrapped = torch._C._functorch.is_functorch_wrapped_tensor


class _EighSolved(torch.autograd.Function):
    """Eigenpairs solved already (no history) for ``a`` under plain autograd with the
    default options: the least a Python node can do. The route of the backward, torch's
    formula or the degenerate-safe rule, is chosen there (:func:`_fast_route`), where the
    gradients are known, instead of a separation test in every forward."""

    @staticmethod
    def forward(a, pair):  # type: ignore[override]
        return pair

    @staticmethod
    def setup_context(ctx, inputs, output):  # type: ignore[override]
        ctx.save_for_backward(*output)
        ctx.set_materialize_grads(False)  # an unused output's gradient stays None

    @staticmethod
    def backward(ctx, gw, gv):  # type: ignore[override]
        w, v = ctx.saved_tensors
        if gv is None:  # no gap enters: torch's formula is the rule's value
            return (None if gw is None else torch_backward(w, v, gw, None)), None
        if v.dim() == 2 and not _wrapped(gv) and (gw is None or not _wrapped(gw)):  # one matrix
            if v.dtype == torch.float64:
                separated = _row_separated(w.tolist(), _TOL64)
            else:
                separated = well_separated(w, _DEFAULT_TOL[w.dtype])
            if separated and not v.is_complex():
                return torch_backward(w, v, gw, gv), None
            if separated and v.is_cpu:
                done = complex_backward_one(w, v, gw, gv)
                if done is not None:
                    return done, None
            elif separated and phase_free(v, gv):
                return torch_backward(w, v, gw, gv), None
            return _backward(w, v, gw, gv, _resolved(DEFAULT_BACKWARD, w.dtype)), None
        opts = _resolved(DEFAULT_BACKWARD, w.dtype)
        if _fast_route(w, v, gw, gv, opts):
            return short_backward(w, v, gw, gv), None
        return _backward(w, v, gw, gv, opts), None


def with_backward(
    a: torch.Tensor, w: torch.Tensor, v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(w, v)``, the eigenpairs of ``a`` solved without history, as outputs of ``a``
    under this module's backward at the default options: what
    ``eigh_with_grad(a, solver)`` returns for a solver that computed them, for an ``a``
    that requires grad under grad mode with no ``torch.func`` transform active (the
    caller checks), without a forward-mode rule (none can be asked for there).

    >>> a = torch.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=torch.float64, requires_grad=True)
    >>> w, v = with_backward(a, *torch.linalg.eigh(a.detach()))
    >>> w.sum().backward()  # d trace(A) / dA
    >>> bool(torch.allclose(a.grad, torch.eye(2, dtype=a.dtype)))
    True
    """
    w, v = _SOLVED_APPLY(a, (w, v))
    return w, v


#: ``_EighSolved.apply`` without torch's argument binding (see :func:`_APPLY`)
_SOLVED_APPLY = super(torch.autograd.Function, _EighSolved).apply  # type: ignore[misc]


def eigh_native(a: torch.Tensor, native: Solver) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """``eigh_with_grad(a, solver, native=native)`` with the default options, for a real
    ``a`` that requires grad under grad mode, no ``torch.func`` transform active (the
    direct path's tracked call, which has checked all that), and whether torch's node
    stood: the spectrum was found well separated (so finite, for ``n > 1``). The steps
    of the general entry that cannot change the answer there are left out (one small
    matrix's whole forward + backward is about 100 us)."""
    w, v = native(a)
    if a.dim() == 2 and a.dtype == torch.float64:  # one matrix: its row of Python floats
        separated = _row_separated(w.tolist(), _TOL64)
    else:
        separated = well_separated(w, _DEFAULT_TOL[a.dtype])
    w, v = node_or_rule(a, w, v, separated)
    return w, v, separated


def node_or_rule(
    a: torch.Tensor, w: torch.Tensor, v: torch.Tensor, separated: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(w, v)``, outputs of torch's own eigh node on ``a``: kept where the spectrum is
    ``separated``, else the same pairs under the core's degenerate-safe rule (the last step
    of :func:`eigh_native`, which the C++ entry's tracked route leaves to Python)."""
    if separated:
        return w, v
    w, v = _APPLY(_EighFunction, a, _values(w, v), _resolved(DEFAULT_BACKWARD, a.dtype))
    return w, v
