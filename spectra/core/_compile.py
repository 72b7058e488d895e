"""The core inside ``torch.compile`` and ``torch.export``: custom ops.

Traced by Dynamo, the core's Python (caches, options, the planner, numba) would break the
graph or be compiled into something that is no longer the core (a fanned-out batch came
back 1.1e-9 away from eager). Under compilation the public functions call custom ops
instead, opaque to the tracer, with fake kernels for shapes:

- ``spectra::eigh`` / ``spectra::eigvalsh``: a plain tensor call (``k``, ``largest``,
  ``check``) that needs no gradient (``k`` is the same slice of the full result that the
  eager core returns); they also carry the core's backward (``spectra::eigh_backward``)
  and vmap rules for direct use;
- ``spectra::call``: every other call of tensors (``b``, a ragged list, options, a plan,
  tolerances, ``device``, any call whose input requires grad) and
  ``spectra.matrix_function(a, f)``. The call is registered at trace time under a string
  key, a constant of the graph (``_compile_call.py``): the call as JSON where ``f`` is a
  torch function and every argument a plain value, so a saved program runs in any process
  that imports this module; else a key of this process (``f`` and the option objects held
  by its registry, Dynamo guarding on their identity). The op replays the eager call with
  the inputs marked as the traced ones were, and its backward (``spectra::call_backward``)
  replays it with autograd and differentiates that, so ``f'`` and the divided differences
  are the eager code's own.

The eager forward is deterministic, so compiled results are bitwise the eager ones,
forward and backward, on every path (``tests/core/test_compile.py``). The price: the
backward of a compiled ``spectra::call`` runs its forward once more.

>>> import torch, spectra
>>> eigvalsh = torch.compile(spectra.eigvalsh, backend="eager", fullgraph=True)
>>> eigvalsh(torch.eye(3, dtype=torch.float64))
tensor([1., 1., 1.], dtype=torch.float64)
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from ._compile_call import eager_dispatch, generic_call, result_dtypes
from ._pipeline._autograd import degenerate_default, eigh_backward


@torch.library.custom_op("spectra::eigh", mutates_args=())
def eigh_op(a: torch.Tensor, check: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """All eigenpairs of ``a`` through the eager core, as one opaque op."""
    from ._eigh import eigh  # the eager entry point of this same package

    with eager_dispatch():
        w, v = eigh(a.detach(), check=check)
        return w.clone(), v.clone(memory_format=torch.contiguous_format)  # the fake layout


@torch.library.custom_op("spectra::eigvalsh", mutates_args=())
def eigvalsh_op(a: torch.Tensor, check: bool) -> torch.Tensor:
    """All eigenvalues of ``a`` through the eager core, as one opaque op."""
    from ._eigh import eigvalsh

    with eager_dispatch():
        return eigvalsh(a.detach(), check=check).clone()


@eigh_op.register_fake
def _(a: torch.Tensor, check: bool) -> tuple[torch.Tensor, torch.Tensor]:
    values, vectors = result_dtypes(a, None)  # integers in: float64 out, as eager
    return a.new_empty(a.shape[:-1], dtype=values), a.new_empty(a.shape, dtype=vectors)


@eigvalsh_op.register_fake
def _(a: torch.Tensor, check: bool) -> torch.Tensor:
    return a.new_empty(a.shape[:-1], dtype=result_dtypes(a, None)[0])


@torch.library.custom_op("spectra::eigh_backward", mutates_args=())
def eigh_backward_op(
    w: torch.Tensor, v: torch.Tensor, gw: torch.Tensor | None, gv: torch.Tensor | None
) -> torch.Tensor:
    """The eager core's eigh backward (its defaults: degenerate pairs masked, unresolved
    degeneracies warned about), opaque to the tracer: its decisions depend on the data."""
    with eager_dispatch():
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


def _register_result() -> None:
    """``EighResult`` as a serializable pytree node: an exported program returning it can
    be saved (``torch.export.save``) and loaded where this module is imported."""
    from ._eigh import EighResult

    with contextlib.suppress(ValueError, AttributeError):  # registered already / old torch
        torch.utils._pytree._register_namedtuple(
            EighResult, serialized_type_name="spectra.EighResult"
        )


_register_result()


#: the arguments of ``compiled_call``'s ``rest`` that take a call off the plain ops
_PLAIN_NONE = ("b", "plan", "options", "lindep", "tol", "device")


def compiled_call(
    a: Any, vectors: bool, k: Any, largest: bool, check: bool, rest: dict[str, Any]
) -> tuple[Any, Any] | None:
    """Under ``torch.compile``/``torch.export``: a call of ``spectra.eigh``/``eigvalsh``
    as custom ops. A plain tensor call (``k``, ``largest``, ``check``) is ``spectra::eigh``
    or ``spectra::eigvalsh``, ``k`` sliced as the eager core slices it; any other call of
    tensors (``b``, a ragged list, options, a plan, tolerances, ``device``) is the generic
    ``spectra::call``, which replays the eager call. ``rest`` holds ``b``, ``plan``,
    ``options``, ``lindep``, ``tol`` (``symmetry_tol``), ``device``, ``fill``
    (``lindep_fill``) and the execution keywords. ``None`` where the arrays are not
    tensors (NumPy, Dask): then the call is traced as ordinary Python."""
    extra = {name: value for name, value in rest.items() if name not in (*_PLAIN_NONE, "fill")}
    tracked = isinstance(a, torch.Tensor) and a.requires_grad and torch.is_grad_enabled()
    if (
        not isinstance(a, torch.Tensor)
        or extra
        or any(rest.get(n) is not None for n in _PLAIN_NONE)
        or tracked  # the generic op's backward replays the eager graph, bitwise
    ):
        kwargs = {"k": k, "largest": largest, "check": check}
        kwargs.update(lindep=rest.get("lindep"), symmetry_tol=rest.get("tol"))
        kwargs.update(device=rest.get("device"), plan=rest.get("plan"))
        kwargs.update(options=rest.get("options"), **extra)
        if "fill" in rest:
            kwargs["lindep_fill"] = rest["fill"]
        outputs = generic_call("eigh" if vectors else "eigvalsh", a, rest.get("b"), None, kwargs)
        if outputs is None:
            return None
        if isinstance(a, torch.Tensor):
            return outputs[0], (outputs[1] if vectors else None)
        m = len(a)
        return list(outputs[:m]), (list(outputs[m:]) if vectors else None)
    if vectors:
        w, v = eigh_op(a, bool(check))
    else:
        w, v = eigvalsh_op(a, bool(check)), None
    if k is not None:
        n = a.shape[-1]
        lo, hi = (n - int(k), n) if largest else (0, int(k))
        w = w[..., lo:hi]
        v = v[..., lo:hi] if v is not None else None
    return w, (v if vectors else None)


def compiled_matrix_function(a: Any, f: Any, options: dict[str, Any]) -> Any:
    """``spectra.matrix_function(a, f, **options)`` under compilation: the generic op,
    ``f`` reaching it by key (``f`` and ``f'`` are evaluated by the eager code, inside the
    op); ``None`` where ``a`` is not a tensor."""
    outputs = generic_call("matrix_function", a, None, f, dict(options))
    return None if outputs is None else outputs[0]
