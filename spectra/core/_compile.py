"""``spectra.eigh``/``eigvalsh`` inside ``torch.compile`` and ``torch.export``: custom ops.

Traced by Dynamo, the core's Python (caches, options, the planner, numba) would break the
graph or be compiled into something that is no longer the core (a fanned-out batch came
back 1.1e-9 away from eager). Under compilation the public functions call these
``torch.library.custom_op``s instead: opaque to the tracer, with a fake kernel for shapes,
the core's own backward (``eigh_backward``, the eager defaults) registered as their
autograd formula, and a vmap rule. Their implementation is the eager core, and ``k`` is
the same slice of the full result that the eager core returns, so compiled results are
bitwise the eager ones, forward and backward (``tests/core/test_compile.py``).

>>> import torch, spectra
>>> f = torch.compile(lambda x: spectra.eigvalsh(x).sum(), backend="eager", fullgraph=True)
>>> float(f(torch.eye(3, dtype=torch.float64)))
3.0
"""

from __future__ import annotations

from typing import Any

import torch

from ._arrays import real_dtype
from ._autograd import degenerate_default, eigh_backward

#: the dispatch state of plain eager code (taken at import). Compiled graphs call custom
#: ops with the Conjugate and Negative keys excluded, under which ``x.mH`` of a complex
#: tensor silently stops conjugating (measured: a Hermitian input then looked 2x
#: non-Hermitian); the ops run the eager core in this state instead.
_EAGER_KEYS = (
    torch._C._dispatch_tls_local_include_set(),
    torch._C._dispatch_tls_local_exclude_set(),
)


def _eager() -> Any:
    return torch._C._ForceDispatchKeyGuard(*_EAGER_KEYS)


@torch.library.custom_op("spectra::eigh", mutates_args=())
def eigh_op(a: torch.Tensor, check: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """All eigenpairs of ``a`` through the eager core, as one opaque op."""
    from ._eigh import eigh  # the eager entry point of this same package

    with _eager():
        w, v = eigh(a.detach(), check=check)
        return w.clone(), v.clone(memory_format=torch.contiguous_format)  # the fake layout


@torch.library.custom_op("spectra::eigvalsh", mutates_args=())
def eigvalsh_op(a: torch.Tensor, check: bool) -> torch.Tensor:
    """All eigenvalues of ``a`` through the eager core, as one opaque op."""
    from ._eigh import eigvalsh

    with _eager():
        return eigvalsh(a.detach(), check=check).clone()


@eigh_op.register_fake
def _(a: torch.Tensor, check: bool) -> tuple[torch.Tensor, torch.Tensor]:
    return a.new_empty(a.shape[:-1], dtype=real_dtype(a.dtype)), a.new_empty(a.shape)


@eigvalsh_op.register_fake
def _(a: torch.Tensor, check: bool) -> torch.Tensor:
    return a.new_empty(a.shape[:-1], dtype=real_dtype(a.dtype))


@torch.library.custom_op("spectra::eigh_backward", mutates_args=())
def eigh_backward_op(
    w: torch.Tensor, v: torch.Tensor, gw: torch.Tensor | None, gv: torch.Tensor | None
) -> torch.Tensor:
    """The eager core's eigh backward (its defaults: degenerate pairs masked, unresolved
    degeneracies warned about), opaque to the tracer: its decisions depend on the data."""
    with _eager():
        return eigh_backward(w, v, gw, gv, degenerate_default(w.dtype), 0.0, "warn")


@eigh_backward_op.register_fake
def _(
    w: torch.Tensor, v: torch.Tensor, gw: torch.Tensor | None, gv: torch.Tensor | None
) -> torch.Tensor:
    return v.new_empty(v.shape)


def _setup(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    ctx.save_for_backward(*output)


def _backward(ctx: Any, gw: torch.Tensor | None, gv: torch.Tensor | None) -> tuple[Any, None]:
    w, v = ctx.saved_tensors
    return eigh_backward_op(w, v, gw, gv), None


eigh_op.register_autograd(_backward, setup_context=_setup)


def _mapped_first(info: Any, in_dims: Any, a: torch.Tensor) -> torch.Tensor:
    """``a`` with vmap's mapped dimension moved to the front (the core's batch)."""
    dim = in_dims[0]
    return a.movedim(dim, 0) if dim is not None else a.expand(info.batch_size, *a.shape)


def _vmap(info: Any, in_dims: Any, a: torch.Tensor, check: bool) -> tuple[Any, Any]:
    return eigh_op(_mapped_first(info, in_dims, a), check), (0, 0)


def _vmap_values(info: Any, in_dims: Any, a: torch.Tensor, check: bool) -> tuple[Any, Any]:
    return eigvalsh_op(_mapped_first(info, in_dims, a), check), 0


torch.library.register_vmap("spectra::eigh", _vmap)
torch.library.register_vmap("spectra::eigvalsh", _vmap_values)


def compiled_call(
    a: Any, vectors: bool, k: Any, largest: bool, check: bool, rest: dict[str, Any]
) -> tuple[Any, Any] | None:
    """Under ``torch.compile``/``torch.export``: the custom op for a plain tensor call,
    ``k`` sliced as the eager core slices it; ``None`` for a call with arguments the ops do
    not take (``b``, options, ...), which is then traced as usual."""
    if not isinstance(a, torch.Tensor) or any(value is not None for value in rest.values()):
        return None
    if vectors or (a.requires_grad and torch.is_grad_enabled()):
        # the eager core differentiates eigenvalues through its eigenpairs: the same here
        w, v = eigh_op(a, bool(check))
    else:
        w, v = eigvalsh_op(a, bool(check)), None
    if k is not None:
        n = a.shape[-1]
        lo, hi = (n - int(k), n) if largest else (0, int(k))
        w = w[..., lo:hi]
        v = v[..., lo:hi] if v is not None else None
    return w, (v if vectors else None)
