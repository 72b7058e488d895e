"""Stiefel retractions inside ``torch.compile`` and ``torch.export``: one custom op.

Traced by Dynamo, the retractions' refusals (points off the manifold, NaN/Inf named by
batch index, singular Gram matrices) read tensor values into Python and would break the
graph, and the polar factor's gradient goes through :func:`spectra.matrix_function`, whose
Python ``f`` the tracer cannot take. Under compilation :meth:`Stiefel.retract`,
:meth:`Stiefel.projx`, :func:`~spectra.stiefel.polar`, :func:`~spectra.stiefel.inv_sqrtm`
and the retraction functions (``retract_polar``, ``retract_qr``, ``retract_cayley``) call
``spectra::stiefel_apply`` instead: opaque to the tracer, with a fake kernel for shapes,
its implementation the eager function itself (checks and refusals included, raised when
the compiled program runs), and as its backward ``spectra::stiefel_apply_backward``, which
re-runs the eager function with gradients and differentiates it. So compiled results are
bitwise the eager ones, forward and backward (``tests/stiefel/test_compile.py``); the
backward is not differentiable again under compilation (eager second derivatives stay
available).

>>> import torch
>>> from spectra.stiefel import Stiefel
>>> st = Stiefel()
>>> x = st.random(4, 6, 2, dtype=torch.float64)
>>> xi = st.proj(x, 0.1 * torch.randn_like(x))
>>> f = torch.compile(st.retract, backend="eager", fullgraph=True)
>>> torch.equal(f(x, xi), st.retract(x, xi))
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..core.domain import InputError

#: the dispatch state of plain eager code (taken at import): compiled graphs call custom
#: ops with the Conjugate and Negative keys excluded, under which ``x.mH`` of a complex
#: tensor stops conjugating; the op runs the eager functions in this state (as the core's
#: ``spectra::eigh`` does)
_EAGER_KEYS = (
    torch._C._dispatch_tls_local_include_set(),
    torch._C._dispatch_tls_local_exclude_set(),
)

Fn = Callable[..., torch.Tensor]


def _eager() -> Any:
    return torch._C._ForceDispatchKeyGuard(*_EAGER_KEYS)


def _function(name: str) -> Fn:
    """The eager function a traced call names: ``retract/<method>/<metric>``, ``projx``,
    ``polar``, ``polar/precise``, ``inv_sqrtm``, ``retract_<method>`` (the functions)."""
    from . import _polar, _retractions
    from ._manifold import Stiefel

    kind, _, rest = name.partition("/")
    if kind == "retract":
        method, _, metric = rest.partition("/")
        st = Stiefel(method, metric)
        return lambda x, xi: st.retract(x, xi)
    if kind == "projx":
        return Stiefel().projx
    if kind == "polar":
        return lambda y: _polar.polar(y, precise=rest == "precise")
    if kind == "inv_sqrtm":
        return _polar.inv_sqrtm
    if kind in ("retract_polar", "retract_qr", "retract_cayley"):
        fn: Fn = getattr(_retractions, kind)
        return fn
    raise InputError("spectra::stiefel_apply:", f"unknown function {name!r}")


def _args(a: torch.Tensor, b: torch.Tensor | None) -> list[torch.Tensor]:
    return [a] if b is None else [a, b]


@torch.library.custom_op("spectra::stiefel_apply", mutates_args=())
def stiefel_apply(name: str, a: torch.Tensor, b: torch.Tensor | None, grad: bool) -> torch.Tensor:
    """The eager Stiefel function ``name`` of ``a`` (and ``b``), as one opaque op; ``grad``:
    the call records gradients (the eager functions take their differentiable route)."""
    fn = _function(name)
    with _eager():
        if grad:
            with torch.enable_grad():
                out = fn(*(t.detach().requires_grad_() for t in _args(a, b))).detach()
        else:
            with torch.no_grad():
                out = fn(*(t.detach() for t in _args(a, b)))
        return out.clone(memory_format=torch.contiguous_format)  # the fake's layout


@stiefel_apply.register_fake
def _(name: str, a: torch.Tensor, b: torch.Tensor | None, grad: bool) -> torch.Tensor:
    if b is None:
        return a.new_empty(a.shape)
    try:
        shape = torch.broadcast_shapes(a.shape, b.shape)
    except Exception:  # the eager implementation refuses the shapes when the program runs
        return a.new_empty(a.shape)
    return a.new_empty(shape, dtype=torch.result_type(a, b))


@torch.library.custom_op("spectra::stiefel_apply_backward", mutates_args=())
def stiefel_apply_backward(
    name: str, a: torch.Tensor, b: torch.Tensor | None, grad_out: torch.Tensor
) -> list[torch.Tensor]:
    """Gradients of ``stiefel_apply(name, a, b)`` for the upstream ``grad_out``: the eager
    function re-run with gradients and differentiated (zeros where an input is unused)."""
    fn = _function(name)
    with _eager(), torch.enable_grad():
        leaves = [t.detach().requires_grad_() for t in _args(a, b)]
        out = fn(*leaves)
        grads = torch.autograd.grad(out, leaves, grad_out, allow_unused=True)
    return [
        torch.zeros_like(leaf) if g is None else g.clone(memory_format=torch.contiguous_format)
        for leaf, g in zip(leaves, grads, strict=True)
    ]


@stiefel_apply_backward.register_fake
def _(
    name: str, a: torch.Tensor, b: torch.Tensor | None, grad_out: torch.Tensor
) -> list[torch.Tensor]:
    return [t.new_empty(t.shape) for t in _args(a, b)]


def _setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    name, a, b, _ = inputs
    ctx.name = name
    ctx.two = b is not None
    ctx.save_for_backward(a, b) if b is not None else ctx.save_for_backward(a)


def _backward(ctx: Any, grad_out: torch.Tensor) -> tuple[Any, ...]:
    saved = ctx.saved_tensors
    a, b = (saved[0], saved[1]) if ctx.two else (saved[0], None)
    grads = stiefel_apply_backward(ctx.name, a, b, grad_out)
    return None, grads[0], (grads[1] if ctx.two else None), None


stiefel_apply.register_autograd(_backward, setup_context=_setup)


def traced(name: str, a: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """Under ``torch.compile``/``torch.export``: the op for the eager function ``name``."""
    grad = torch.is_grad_enabled() and (a.requires_grad or (b is not None and b.requires_grad))
    return stiefel_apply(name, a, b, grad)


def compiling() -> bool:
    """Whether Dynamo is tracing (``torch.compile`` or ``torch.export``)."""
    return torch.compiler.is_compiling()
