"""The generic custom op of the compiled core: ``spectra::call`` and its backward.

Every call under compilation that the plain ops (``_compile.py``) do not take, and every
``spectra.matrix_function(a, f)``, is registered at trace time as a :class:`_Call` under a
string key (a constant of the graph): which function, how its tensors sit (one tensor, a
ragged list), ``f``, and every other argument as given. The key is the call as JSON where
``f`` is a torch function (``torch.exp``) and every argument a plain value (a saved
program then runs in any process), else ``local:<salt>:<index>``, valid in this process
only (refused by name elsewhere). ``spectra::call`` replays that
eager call on the op's tensors, marked ``requires_grad`` as the traced ones were (the
eager core takes the path their gradients decide); ``spectra::call_backward`` replays it
with autograd and differentiates it with the upstream gradients. The eager forward is
deterministic, so this is the eager graph and its gradients, bitwise; the price is one
more forward in the backward. Dynamo guards on the identity of ``f`` and of every option
object (``id()`` at the call site), so a graph never runs another call's key.

>>> import torch, spectra
>>> mf = torch.compile(spectra.matrix_function, backend="eager", fullgraph=True)
>>> mf(torch.eye(2, dtype=torch.float64), torch.exp)
tensor([[2.7183, 0.0000],
        [0.0000, 2.7183]], dtype=torch.float64)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import torch

from ._support._arrays import real_dtype

#: the dispatch state of plain eager code (taken at import). Compiled graphs call custom
#: ops with the Conjugate and Negative keys excluded, under which ``x.mH`` of a complex
#: tensor silently stops conjugating (measured: a Hermitian input then looked 2x
#: non-Hermitian); the ops run the eager core in this state instead.
_EAGER_KEYS = (
    torch._C._dispatch_tls_local_include_set(),
    torch._C._dispatch_tls_local_exclude_set(),
)


def eager_dispatch() -> Any:
    return torch._C._ForceDispatchKeyGuard(*_EAGER_KEYS)


@dataclass(frozen=True)
class _Call:
    """One eager call as the generic op replays it: ``fn`` ("eigh", "eigvalsh" or
    "matrix_function"), how its tensors sit (``-1``: one tensor; ``n >= 0``: a ragged list
    of ``n``; ``None``: no ``b``), the elementwise ``f`` of a matrix function, and every
    other argument as it was given."""

    fn: str
    a_items: int
    b_items: int | None
    f: Any
    kwargs: tuple[tuple[str, Any], ...]

    def split(self, tensors: list[torch.Tensor]) -> tuple[Any, Any]:
        """``(a, b)`` rebuilt from the op's flat tensor list."""
        na = 1 if self.a_items < 0 else self.a_items
        a: Any = tensors[0] if self.a_items < 0 else list(tensors[:na])
        if self.b_items is None:
            return a, None
        return a, (tensors[na] if self.b_items < 0 else list(tensors[na:]))


#: values compared by value in guards (everything else is guarded by identity)
_CONSTANTS = (type(None), bool, int, float, str, torch.dtype, torch.device)

#: the calls traced so far, by local key; a call holds its ``f`` and options alive, so a
#: key never outlives what it names
_CALLS: list[_Call] = []
_KEYS: dict[_Call, str] = {}
#: portable keys already read (a saved program loaded here)
_READ: dict[str, _Call] = {}

#: local keys are an index into ``_CALLS`` after a random salt of this process, so a
#: program exported here and loaded in another process fails clearly instead of running
#: whatever that process registered under the same index
_SALT = os.urandom(6).hex()

#: argument values a portable key can hold (JSON; floats include inf)
_PORTABLE = (type(None), bool, int, float, str)


#: the torch functions a portable key may name (elementwise, no state): a loaded program
#: never makes the core call anything else
_PORTABLE_NAMES = (
    "abs acos acosh asin asinh atan atanh cos cosh erf erfc exp exp2 expm1 log log10 log1p "
    "log2 neg reciprocal relu rsqrt sigmoid sign sin sinc sinh sqrt square tan tanh"
)
_PORTABLE_F = frozenset(_PORTABLE_NAMES.split())
_FUNCTIONS = frozenset({"eigh", "eigvalsh", "matrix_function"})


def _portable_f(f: Any) -> str | None:
    """The name of ``f`` when it is one of the torch functions of :data:`_PORTABLE_F`
    (found again in any process); ``""`` for no ``f``; else None."""
    if f is None:
        return ""
    name = getattr(f, "__name__", None)
    ok = name in _PORTABLE_F and getattr(torch, name, None) is f
    return name if ok else None


def _key_of(call: _Call) -> str:
    """A portable key (the call as JSON: a saved program runs in any process) when ``f``
    is a torch function and every argument a plain value; else a local one."""
    name = _portable_f(call.f)
    if name is not None and all(type(v) in _PORTABLE for _, v in call.kwargs):
        spec = {"fn": call.fn, "a": call.a_items, "b": call.b_items, "f": name}
        return json.dumps({**spec, "kwargs": dict(call.kwargs)}, sort_keys=True)
    _CALLS.append(call)
    return f"local:{_SALT}:{len(_CALLS) - 1}"


def _lookup(key: str) -> _Call:
    """The call a key names (a local key: only in the process that registered it)."""
    if key.startswith("local:"):
        _, salt, index = key.split(":")
        if salt != _SALT or not 0 <= int(index) < len(_CALLS):
            raise RuntimeError(
                f"spectra::call: key {key} was not registered in this process: a program "
                "whose matrix_function f is not a torch function, or whose options are "
                "objects, runs in the process that traced it"
            )
        return _CALLS[int(index)]
    call = _READ.get(key)
    if call is None:
        spec = json.loads(key)
        if spec["fn"] not in _FUNCTIONS or spec["f"] not in (_PORTABLE_F | {""}):
            raise RuntimeError(f"spectra::call: not a key of spectra: {key}")
        f = getattr(torch, spec["f"]) if spec["f"] else None
        kwargs = tuple(sorted(spec["kwargs"].items()))
        call = _READ[key] = _Call(spec["fn"], int(spec["a"]), spec["b"], f, kwargs)
    return call


@torch._dynamo.assume_constant_result
def _call_key(
    fn: str, a_items: int, b_items: Any, f: Any, ids: Any, names: Any, *values: Any
) -> str:
    """The key of a call, registered at trace time (a constant of the graph). Dynamo
    guards on the identity of ``f`` and the options (``id()`` at the call site), so a
    graph never runs with another call's key."""
    call = _Call(fn, a_items, b_items, f, tuple(sorted(zip(names, values, strict=True))))
    try:
        key = _KEYS.get(call)
    except TypeError:  # an unhashable option: a key of its own
        return _key_of(call)
    if key is None:
        key = _KEYS[call] = _key_of(call)
    return key


def _invoke(call: _Call, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """The eager call on ``tensors``, its results flattened (eigenvalues, then vectors)."""
    from ._eigh import eigh, eigvalsh
    from ._matrix_function import matrix_function

    a, b = call.split(tensors)
    kwargs = dict(call.kwargs)
    if call.fn == "matrix_function":
        return [matrix_function(a, call.f, **kwargs)]
    if call.fn == "eigvalsh":
        w = eigvalsh(a, b, **kwargs)
        return list(w) if call.a_items >= 0 else [w]
    w, v = eigh(a, b, **kwargs)
    return [*w, *v] if call.a_items >= 0 else [w, v]


def _replay(call: _Call, tensors: list[torch.Tensor], grad: list[bool]) -> tuple[Any, Any]:
    """``(inputs, outputs)`` of the eager call, the inputs marked as the traced ones
    were (the eager core takes the path their ``requires_grad`` decides)."""
    inputs = [x.detach().requires_grad_(g) for x, g in zip(tensors, grad, strict=True)]
    with torch.set_grad_enabled(any(grad)):
        return inputs, _invoke(call, inputs)


@torch.library.custom_op("spectra::call", mutates_args=())
def call_op(tensors: list[torch.Tensor], grad: list[bool], key: str) -> list[torch.Tensor]:
    """The eager call registered under ``key`` (``spectra.eigh(a, b, ...)``, a ragged
    list, options, ``matrix_function(a, f)``), as one opaque op."""
    with eager_dispatch():
        _, outputs = _replay(_lookup(key), tensors, grad)
        return [y.detach().clone(memory_format=torch.contiguous_format) for y in outputs]


@torch.library.custom_op("spectra::call_backward", mutates_args=())
def call_backward_op(
    tensors: list[torch.Tensor], grads: list[torch.Tensor | None], grad: list[bool], key: str
) -> list[torch.Tensor]:
    """The eager backward of the call under ``key``: the call replayed with autograd and
    differentiated with the upstream ``grads`` (the eager forward is deterministic, so
    this is the eager graph and its gradients, bitwise)."""
    with eager_dispatch(), torch.enable_grad():
        inputs, outputs = _replay(_lookup(key), tensors, grad)
        pairs = [(y, g) for y, g in zip(outputs, grads, strict=True) if g is not None]
        pairs = [(y, g) for y, g in pairs if y.requires_grad]
        wrt = [x for x in inputs if x.requires_grad]
        got: Any = [None] * len(wrt)
        if pairs and wrt:
            ys, gs = zip(*pairs, strict=True)
            got = torch.autograd.grad(ys, wrt, gs, allow_unused=True)
    found = iter(got)
    out = []
    for x in inputs:
        g = next(found) if x.requires_grad else None
        out.append(
            torch.zeros_like(x, memory_format=torch.contiguous_format)
            if g is None
            else g.clone(memory_format=torch.contiguous_format)
        )
    return out


def _solve_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype the core solves an input of ``dtype`` in (``as_tensor``'s rule)."""
    if dtype in (torch.float16, torch.bfloat16):
        return torch.float32
    if dtype == torch.complex32:
        return torch.complex64
    return dtype if dtype.is_floating_point or dtype.is_complex else torch.float64


def result_dtypes(a: torch.Tensor, b: torch.Tensor | None) -> tuple[torch.dtype, torch.dtype]:
    """``(eigenvalue dtype, eigenvector dtype)`` of the eager call (``restore``'s rule:
    float16/bfloat16 in, floating results back in it)."""
    common = _solve_dtype(a.dtype)
    if b is not None:
        common = torch.promote_types(common, _solve_dtype(b.dtype))
    low = a.dtype if a.dtype in (torch.float16, torch.bfloat16) else None
    values, vectors = real_dtype(common), common
    if low is not None:
        values = low
        vectors = vectors if vectors.is_complex else low
    return values, vectors


def _fake_pairs(call: _Call, a: torch.Tensor, b: torch.Tensor | None) -> list[torch.Tensor]:
    k = dict(call.kwargs).get("k")
    n = a.shape[-1]
    m = n if k is None else int(k)
    batch = a.shape[:-2] if b is None else torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    wd, vd = result_dtypes(a, b)
    w = a.new_empty((*batch, m), dtype=wd)
    return [w, a.new_empty((*batch, n, m), dtype=vd)] if call.fn == "eigh" else [w]


def _fake_matrix_function(call: _Call, a: torch.Tensor) -> torch.Tensor:
    _, vd = result_dtypes(a, None)
    try:  # f on (fake) eigenvalues gives its result dtype
        fd = call.f(a.new_empty(a.shape[:-1], dtype=real_dtype(_solve_dtype(a.dtype)))).dtype
    except Exception:  # an f that looks at values (fake ones have none): real, as most are
        fd = real_dtype(vd)
    return a.new_empty(a.shape, dtype=torch.promote_types(vd, fd))


@call_op.register_fake
def _(tensors: list[torch.Tensor], grad: list[bool], key: str) -> list[torch.Tensor]:
    call = _lookup(key)
    a, b = call.split(tensors)
    if call.fn == "matrix_function":
        return [_fake_matrix_function(call, a)]
    if call.a_items < 0:
        return _fake_pairs(call, a, b)
    parts = [_fake_pairs(call, x, None if b is None else b[i]) for i, x in enumerate(a)]
    return [p[0] for p in parts] + ([p[1] for p in parts] if call.fn == "eigh" else [])


@call_backward_op.register_fake
def _(
    tensors: list[torch.Tensor], grads: list[torch.Tensor | None], grad: list[bool], key: str
) -> list[torch.Tensor]:
    return [x.new_empty(x.shape) for x in tensors]


def _setup_call(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    tensors, grad, key = inputs
    ctx.save_for_backward(*tensors)
    ctx.grad, ctx.key = grad, key


def _backward_call(ctx: Any, grads: list[torch.Tensor | None]) -> tuple[Any, None, None]:
    tensors = list(ctx.saved_tensors)
    got = call_backward_op(tensors, list(grads), ctx.grad, ctx.key)
    return [g if need else None for g, need in zip(got, ctx.grad, strict=True)], None, None


call_op.register_autograd(_backward_call, setup_context=_setup_call)


def _tensors(x: Any) -> list[torch.Tensor] | None:
    """``x`` as the op's tensors: one tensor, or a ragged list of tensors; else None."""
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)) and x and all(isinstance(t, torch.Tensor) for t in x):
        return list(x)
    return None


def generic_call(
    fn: str, a: Any, b: Any, f: Any, kwargs: dict[str, Any]
) -> list[torch.Tensor] | None:
    """The outputs of the generic op for this call, or None when its arrays are not
    tensors (then it is traced as ordinary Python)."""
    ta = _tensors(a)
    tb = [] if b is None else _tensors(b)
    if ta is None or tb is None:
        return None
    names = tuple(kwargs)
    values = tuple(kwargs.values())
    # id() makes Dynamo guard on the identity of f and of each option object: a graph
    # traced with one f never runs another (two closures of one code look alike)
    ids = tuple(id(v) for v in (f, *values) if not isinstance(v, _CONSTANTS))
    key = _call_key(
        fn,
        -1 if isinstance(a, torch.Tensor) else len(ta),
        None if b is None else (-1 if isinstance(b, torch.Tensor) else len(tb)),
        f,
        ids,
        names,
        *values,
    )
    tensors = ta + tb
    grad = [bool(t.requires_grad and torch.is_grad_enabled()) for t in tensors]
    return call_op(tensors, grad, key)
