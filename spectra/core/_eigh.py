"""The public entry points: ``spectra.eigh`` and ``spectra.eigvalsh``.

A call is prepared (``_prepare``: tensors, device, dtype, checks, ``k``), planned
(``_plan``), executed (``_execute``: the strategy, the gauge) and restored to the
caller's array type (``_arrays.restore``). Ragged lists go through ``_ragged_solve``,
Dask collections to :func:`spectra.distributed.eigh`.
"""

from __future__ import annotations

import math
from contextlib import AbstractContextManager, nullcontext
from typing import Any, NamedTuple

import numpy as np
import torch

from ._errors import InputError, LinAlgError
from ._options import Options, build_cached
from ._pipeline._checks import BlockCheck, InputRejected, check_finite, check_hermitian
from ._pipeline._dense import solve_dense
from ._pipeline._direct import solve_direct, solve_one, solve_one_alike
from ._pipeline._direct_generalized import solve_direct_generalized
from ._pipeline._plan import THREADED_LAPACK_MIN_N, Plan
from ._pipeline._planned_direct import solve_planned
from ._pipeline._prepare import check_plan, is_ragged, prepare
from ._pipeline._ragged_solve import solve_ragged
from ._request import Request
from ._sparse._operators import is_sparse_input
from ._strategies._kernels import enter_call, leave_call
from ._support._arrays import is_dask_collection, restore
from ._support._collections import collection_op
from ._support._threads import single_threaded_kernels


class EighResult(NamedTuple):
    """``(eigenvalues, eigenvectors)``: ascending eigenvalues, eigenvectors in columns."""

    eigenvalues: Any
    eigenvectors: Any


def _planned_call(
    a: Any,
    b: Any,
    plain: bool,
    request: tuple[Any, ...],
    plan: Plan | None,
    options: Options | None,
    execution: dict,
) -> tuple[Any, Any]:
    """``eigh``/``eigvalsh`` past their one-matrix shortcut, as one planned call
    (:func:`._strategies._kernels.enter_call`: the kernels' first-call threshold holds in
    every plan it makes; not while torch.compile traces: the core is one custom op there,
    whose eager run is the call). One plain matrix is solved before it, on the shortest
    route: the claims it evaluates count as a plan outside a call. ``plain``: no option
    but ``check`` and ``symmetry_tol`` (a handful may take the compiled batch);
    ``request``: :meth:`Request.build`'s arguments."""
    token = None if torch.compiler.is_compiling() else enter_call()
    try:
        if plain:  # a handful: the compiled batch, where the plan is direct
            few = solve_one(a, request[0], request[5], request[6])
            if few is not None:
                return few
        return _run(a, b, Request.build(*request), plan, options, execution)
    finally:
        leave_call(token)


def _run(
    a: Any, b: Any, request: Request, plan: Plan | None, options: Options | None, execution: dict
) -> tuple[Any, Any]:
    """The call ``request`` asks about ``a`` (and ``b``), on the path its input takes."""
    if torch.compiler.is_compiling():  # torch.compile / export: the core as one custom op
        from ._compile import compiled_call  # circle: deliberate (its ops run this eager call)

        rest = {"b": b, "plan": plan, "options": options, "lindep": request.lindep}
        rest.update(tol=request.symmetry_tol, device=request.device, fill=request.lindep_fill)
        traced = compiled_call(
            a, request.vectors, request.k, request.largest, request.check, {**rest, **execution}
        )
        if traced is not None:
            return traced
    if request.lindep is None and request.device in (None, "cpu"):
        # one CPU matrix, one pair or a handful: what the plan would run, without the
        # pipeline (with options or a plan too, where they plan it as the default call)
        plain = plan is None and options is None and not execution
        if b is not None:  # the serial Cholesky path's steps
            direct = solve_direct_generalized(a, b, request) if plain else None
        elif plain:
            direct = solve_direct(a, request) or _solver_errors(solve_planned, a, request)
        else:
            direct = _direct_with_options(a, request, plan, options, execution)
        if direct is not None:
            return direct
    if is_sparse_input(a):  # torch/SciPy sparse, linear operators: the iterative path
        from ._sparse import solve_sparse

        return solve_sparse(
            a, b, vectors=request.vectors, k=request.k, largest=request.largest,
            check=request.check, symmetry_tol=request.symmetry_tol, device=request.device,
            plan=plan, options=options, execution=execution,
        )  # fmt: skip
    opts = Options.build(options, **execution)
    if is_dask_collection(a) or is_dask_collection(b):
        return _dask(a, b, request, plan, opts)
    if isinstance(a, (list, tuple)) and not a and (b is None or isinstance(b, (list, tuple))):
        if b:  # an empty ragged list: empty lists back (as a loop over nothing gives)
            raise InputError("b", "must be a list of the same length as the ragged list a")
        return [], ([] if request.vectors else None)
    uniform = _stack_uniform(a, b) if plan is None and is_ragged(a) else None
    if uniform is not None:  # one shape throughout: one dense batch beats padded buckets
        try:
            w, v = _run(uniform[0], uniform[1], request, None, options, execution)
        except ValueError:
            pass  # the bucketed path below names the failing item: a[3], b[3]
        else:
            return list(w), (list(v) if v is not None else None)
    if is_ragged(a):
        if plan is not None:
            raise InputError("plan", "describes one dense batch; a ragged list has several sizes")
        with _caller_kernels(a, request.device):
            return _solver_errors(solve_ragged, a, b, request, opts)
    with _caller_kernels(a, request.device):
        return _run_dense(a, b, request, plan, opts)


def _direct_with_options(
    a: Any, request: Request, plan: Plan | None, options: Options | None, execution: dict
) -> tuple[Any, Any] | None:
    """:func:`solve_direct` for a dense call with options or a plan; ``None`` where the full
    path decides (sparse input and its own keywords, an option's error included)."""
    if not (type(a) is np.ndarray or (type(a) is torch.Tensor and a.layout == torch.strided)):
        return None
    try:
        opts = build_cached(options, execution)
    except (TypeError, InputError):
        return None  # the full path raises it, where the input's kind is known
    direct = solve_direct(a, request, opts, plan)
    if direct is None and plan is None:  # the plan the options make, without the layers
        direct = _solver_errors(solve_planned, a, request, opts)
    return direct


def _caller_kernels(a: Any, device: Any) -> AbstractContextManager[None]:
    """One OpenMP/MKL thread in the *calling* thread for small CPU matrices.

    The checks, Cholesky reductions, gauge and copies that run in the caller's thread are
    elementwise or tiny per matrix; with torch's default intra-op threads they fork-join an
    OpenMP team per operation, which on a loaded machine made a generalized 2000 x 8x8
    call 1.5-2.4x slower (measured). The limit is per thread (``omp_set_num_threads`` ICV):
    nothing another thread can observe changes. Matrices from ``n = 256`` keep the caller's
    threads (threaded LAPACK pays there). Domains use it (``spectra.core.domain``) around
    their own small batched products, e.g. the Stiefel polar factor ``Y (Y^H Y)^-1/2``.

    >>> import torch
    >>> with _caller_kernels(torch.zeros(10, 8, 8), None):
    ...     pass
    """
    if device is not None and torch.device(device).type != "cpu":
        return nullcontext()
    items = a if is_ragged(a) else [a]
    sizes = []
    for x in items:
        shape = getattr(x, "shape", None)
        if isinstance(x, torch.Tensor) and x.device.type != "cpu":
            return nullcontext()
        if shape is None or len(shape) < 2:
            return nullcontext()
        sizes.append(max(int(shape[-1]), int(shape[-2])))
    if not sizes or max(sizes) >= THREADED_LAPACK_MIN_N:
        return nullcontext()
    return single_threaded_kernels()


def _run_dense(
    a: Any, b: Any, request: Request, plan: Plan | None, opts: Options
) -> tuple[Any, Any]:
    check, tol = request.check, request.symmetry_tol
    at, bt, origin = prepare(a, b, "a", check, tol, request.device, defer_a_check=True)
    n = at.shape[-1]
    request = request.sized(n)
    if plan is not None:
        shape = at.shape if bt is None else torch.broadcast_shapes(at.shape, bt.shape)
        batch = math.prod(shape[:-2])
        opts = Options.from_plan(check_plan(plan, n, batch, at.dtype, at.device), opts)
    # the input is checked block by block inside the workers (a, and b where given)
    pre = BlockCheck(tol) if check else None  # (the generalized path: a's and b's blocks)
    try:
        w, v = _solver_errors(solve_dense, at, bt, request, opts, pre=pre)
    except InputRejected:
        check_finite(at, "a")
        check_hermitian(at, tol, "a")
        raise  # pragma: no cover - the detailed checks always find what the quick one did
    return restore(w, origin), restore(v, origin)


def _stack_uniform(a: Any, b: Any) -> tuple[Any, Any] | None:
    """A ragged list (and its ``b``) as stacked arrays when all matrices share one shape,
    dtype, array type and device; None otherwise."""

    def stack(items: Any) -> Any:
        first = items[0]
        same = all(
            type(x) is type(first) and x.shape == first.shape and x.dtype == first.dtype
            for x in items
        )
        if not same or len(first.shape) != 2:
            return None
        if type(first) is torch.Tensor and all(x.device == first.device for x in items):
            return torch.stack(list(items))
        return np.stack(items) if type(first) is np.ndarray else None

    sa = stack(a)
    if sa is None or b is None:
        return None if sa is None else (sa, None)
    if not isinstance(b, (list, tuple)) or len(b) != len(a) or not is_ragged(b):
        return None
    sb = stack(b)
    return (sa, sb) if sb is not None and type(sb) is type(sa) and sb.shape == sa.shape else None


def _solver_errors(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args)`` with torch's raw ``LinAlgError`` turned into spectra's."""
    try:
        return fn(*args, **kwargs)
    except torch.linalg.LinAlgError as exc:
        raise LinAlgError(
            "a",
            "could not be decomposed: the solver failed to converge",
            hint=f"values near the floating-point range or not finite? torch: {exc}",
        ) from exc


def _dask(a: Any, b: Any, request: Request, plan: Plan | None, opts: Options) -> tuple[Any, Any]:
    """The same call mapped over the blocks of a Dask array (``spectra.distributed``)."""
    if plan is not None:
        raise InputError("plan", "describes one dense batch, not the blocks of a Dask array")
    dask_eigh, dask_eigvalsh = collection_op("eigh"), collection_op("eigvalsh")  # distributed's
    keywords = request.keywords()
    if request.vectors:
        return tuple(dask_eigh(a, b, options=opts, **keywords))
    return dask_eigvalsh(a, b, options=opts, **keywords), None


def _one_matrix(
    a: Any,
    b: Any,
    request: tuple[Any, ...],
    plan: Plan | None,
    options: Options | None,
    execution: dict,
) -> tuple[tuple[Any, Any] | None, bool]:
    """The entry points' shortcut: one 2-D tensor, plain or with options alone (where they
    plan it as the default call), on the shortest route without building the request.
    ``(result or None, plain)``: ``plain`` tells :func:`_planned_call` whether the call has
    no option but ``check`` and ``symmetry_tol`` and was not tried here (``request``:
    :meth:`Request.build`'s arguments)."""
    vectors, k, _, lindep, _, check, symmetry_tol, device = request
    bare = b is None and k is None and lindep is None and device is None and plan is None
    plain = bare and not execution and options is None
    if not (bare and type(a) is torch.Tensor and a.dim() == 2):
        return None, plain
    if plain:
        return solve_one(a, vectors, check, symmetry_tol), False
    return solve_one_alike(a, vectors, check, symmetry_tol, options, execution), False


def eigh(
    a: Any,
    b: Any = None,
    *,
    k: int | None = None,
    largest: bool = False,
    lindep: float | None = None,
    lindep_fill: float = math.inf,
    check: bool = True,
    symmetry_tol: float | None = None,
    device: Any = None,
    plan: Plan | None = None,
    options: Options | None = None,
    **execution: Any,
) -> EighResult:
    """Eigenvalues and eigenvectors of a batch of symmetric/Hermitian matrices.

    Parameters
    ----------
    a : array ``(..., n, n)`` (torch tensor on any device, or NumPy), real symmetric or
        complex Hermitian; or a list/tuple of square matrices of different sizes (ragged),
        which gives lists back in the same order; or a Dask array (computed lazily by
        :func:`spectra.distributed.eigh`). float16/bfloat16 are solved in float32 and
        returned in their own dtype.
    b : optional positive-definite array broadcastable to ``a`` (or a list matching a
        ragged ``a``): the generalized problem ``A v = w B v``, with ``V^H B V = I``.
    k : return only ``k`` eigenpairs (any integer type), the smallest (or the largest with
        ``largest=True``), always in ascending order: exactly that slice of the full result.
    lindep : with ``b``, drop ``b``'s eigen-directions with eigenvalue below ``lindep``
        (canonical orthogonalization, as PySCF at 1e-6) instead of failing on a nearly
        singular ``b``; the dropped pairs come last with value ``lindep_fill`` and zero vectors.
    check : check for NaN/Inf and asymmetry beyond ``symmetry_tol`` (relative; default
        1e-8 in double, 1e-3 in single precision); errors name the batch indices.
    device : solve on this device (e.g. ``"cuda"`` for NumPy input); results come back
        in the input's form.
    plan : a :class:`~spectra.core.Plan` made by :func:`spectra.plan` for this input (its
        n, batch, dtype and device must match): executed as it is, without planning.
    options : an :class:`~spectra.core.Options`; keywords below override its fields.
    **execution : the fields of :class:`~spectra.core.Options`: ``strategy``,
        ``chunk_size``, ``max_memory``, ``workers``, ``verify``, ``autotune`` (see
        :func:`spectra.core.plan`), ``degenerate_tol``, ``broadening``, ``degenerate``
        (the backward at degenerate eigenvalues).

    Returns
    -------
    EighResult
        ``(eigenvalues, eigenvectors)``; eigenvectors are columns in the spectra gauge:
        the largest-magnitude entry of each is real and positive.

    Examples
    --------
    >>> import torch, spectra
    >>> a = torch.tensor([[[2.0, 1.0], [1.0, 2.0]], [[1.0, 0.0], [0.0, 3.0]]])
    >>> w, v = spectra.eigh(a)
    >>> w
    tensor([[1., 3.],
            [1., 3.]])
    >>> spectra.eigh(a, k=1, largest=True).eigenvalues
    tensor([[3.],
            [3.]])
    >>> p = spectra.plan(2, 2, torch.float32, workers=1)
    >>> spectra.eigh(a, plan=p).eigenvalues[1]
    tensor([1., 3.])
    """
    request = (True, k, largest, lindep, lindep_fill, check, symmetry_tol, device)
    one, plain = _one_matrix(a, b, request, plan, options, execution)
    if one is not None:
        return EighResult(*one)
    return EighResult(*_planned_call(a, b, plain, request, plan, options, execution))


def eigvalsh(
    a: Any,
    b: Any = None,
    *,
    k: int | None = None,
    largest: bool = False,
    lindep: float | None = None,
    lindep_fill: float = math.inf,
    check: bool = True,
    symmetry_tol: float | None = None,
    device: Any = None,
    plan: Plan | None = None,
    options: Options | None = None,
    **execution: Any,
) -> Any:
    """Eigenvalues only (ascending) of a batch of symmetric/Hermitian matrices.

    Same arguments as :func:`eigh`; skips the eigenvectors where nothing needs them.

    Examples
    --------
    >>> import numpy as np, spectra
    >>> spectra.eigvalsh(np.diag([3.0, 1.0, 2.0]))
    array([1., 2., 3.])
    """
    request = (False, k, largest, lindep, lindep_fill, check, symmetry_tol, device)
    one, plain = _one_matrix(a, b, request, plan, options, execution)
    if one is not None:
        return one[0]
    return _planned_call(a, b, plain, request, plan, options, execution)[0]
