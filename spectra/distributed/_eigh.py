"""``spectra.distributed.eigh``/``eigvalsh``: the core mapped over the blocks of a Dask array.

The batch axes may be chunked any way (blocks of unequal sizes included); the last two
axes must hold whole matrices, so they are rechunked to one chunk (with a
``PerformanceWarning``: that moves data between workers). Each block goes through
``spectra.eigh`` unchanged, so every matrix gets exactly what the core gives it.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..core import EighResult
from ..core import eigh as core_eigh
from ..core import plan as core_plan
from ..core.domain import InputError, Options, as_tensor, check_k, check_square
from ._blocks import pick, solve_block
from ._compat import require_dask


def _as_dask(x: Any, name: str) -> Any:
    da = require_dask()
    if isinstance(x, da.Array):
        return x
    if type(x).__module__.split(".")[0] == "torch":
        raise TypeError(
            f"{name}: expected a dask array; build one from NumPy/CuPy chunks "
            "(e.g. dask.array.from_array(t.numpy())) rather than a torch tensor"
        )
    if not (hasattr(x, "shape") and hasattr(x, "dtype")):
        x = np.asarray(x)
    chunks = ("auto",) * max(0, x.ndim - 2) + (-1,) * min(2, x.ndim)
    return da.from_array(x, chunks=chunks)


#: the keywords of spectra.eigh a block call may take besides a, b, k, largest
CORE_KEYWORDS = ("lindep", "lindep_fill", "check", "symmetry_tol", "device", "options")


def _check_options(options: dict[str, Any]) -> None:
    allowed = set(CORE_KEYWORDS) | set(Options.names())
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise TypeError(f"unknown core option(s) {unknown}; spectra.eigh accepts {sorted(allowed)}")


def result_dtypes(xdtype: Any, bdtype: Any = None) -> tuple[np.dtype, np.dtype]:
    """Eigenvalue and eigenvector dtypes the core gives for these input dtypes.

    Found by running the core on a 1x1 matrix, so the rules (integers -> float64,
    promotion of ``a`` with ``b``) are the core's own; unsupported dtypes fail here,
    before anything is computed.
    """
    a = np.ones((1, 1), dtype=xdtype)
    b = None if bdtype is None else np.ones((1, 1), dtype=bdtype)
    w, v = core_eigh(a, b)
    return w.dtype, v.dtype


def whole_matrices(x: Any, name: str, stacklevel: int = 5) -> Any:
    """``x`` with its last two axes in one chunk each (warns when that needs a rechunk)."""
    require_dask()
    if len(x.chunks[-1]) == 1 and len(x.chunks[-2]) == 1:
        return x
    import dask
    from dask.array.core import PerformanceWarning
    from dask.utils import parse_bytes

    limit = parse_bytes(dask.config.get("array.chunk-size"))
    n = x.shape[-1]
    widest = int(np.prod([max(c) if c else 0 for c in x.chunks[:-2]], dtype=np.int64))
    block = widest * n * n * x.dtype.itemsize
    spec: dict[int, Any] = {x.ndim - 2: -1, x.ndim - 1: -1}
    how = "keeping the batch chunks"
    if block > 4 * limit:
        spec.update(dict.fromkeys(range(x.ndim - 2), "auto"))
        how = f"re-cutting the batch axes to ~{dask.config.get('array.chunk-size')} blocks"
    warnings.warn(
        f"{name} is chunked inside its matrices (last two axes chunks "
        f"{len(x.chunks[-2])}x{len(x.chunks[-1])}); rechunking to whole {n}x{n} matrices, "
        f"{how}: this moves the whole array between workers. Chunk along the batch axes "
        "only (e.g. x.rechunk({-2: -1, -1: -1})) to avoid it.",
        PerformanceWarning,
        stacklevel=stacklevel,
    )
    return x.rechunk(spec)


def _align(x: Any, b: Any) -> tuple[Any, Any]:
    """Broadcast ``x`` and a batched ``b`` to one batch shape with matching chunks."""
    da = require_dask()
    check_square(b, "b")
    n = x.shape[-1]
    if b.shape[-1] != n:
        raise InputError(
            "b",
            f"must have the same matrix size as x, got x {tuple(x.shape)} and b {tuple(b.shape)}",
        )
    b = whole_matrices(b, "b", stacklevel=6)
    if b.ndim == 2:  # one b for every matrix: each block gets all of it
        return x, b
    try:
        batch = np.broadcast_shapes(x.shape[:-2], b.shape[:-2])
    except ValueError as exc:
        raise InputError(
            "b",
            f"and x's batch shapes {tuple(b.shape[:-2])} and {tuple(x.shape[:-2])} "
            "do not broadcast",
        ) from exc
    if x.shape[:-2] != batch:
        x = da.broadcast_to(x, (*batch, n, n))
    if b.shape != x.shape:
        b = da.broadcast_to(b, x.shape)
    if b.chunks != x.chunks:
        b = b.rechunk(x.chunks)
    return x, b


def _whole_array_strategy(x: Any, n: int, vectors: bool, options: dict[str, Any]) -> dict[str, Any]:
    """``{"strategy": ...}``: the one the core plans for the whole array, for every block.

    The core picks a strategy by batch size (small batches stay on LAPACK), so blocks of
    different sizes would otherwise be solved differently: pinned, every matrix's result
    is bitwise the core's on the whole array, whatever the blocking."""
    given = options.get("options")
    if "strategy" in options or (given is not None and given.strategy is not None):
        return {}
    if any(math.isnan(s) for s in x.shape):
        return {}  # unknown block sizes: each block is planned on its own
    batch = max(1, math.prod(int(s) for s in x.shape[:-2]))
    dtype = as_tensor(np.empty(0, dtype=x.dtype))[0].dtype
    device = options.get("device") or "cpu"
    return {"strategy": core_plan(n, batch, dtype, device, vectors=vectors).strategy}


def _map(
    x: Any, b: Any, *, vectors: bool, k: int | None, largest: bool, options: dict[str, Any]
) -> tuple[Any, Any]:
    da = require_dask()
    from dask.array.utils import meta_from_array

    _check_options(options)
    x = _as_dask(x, "x")
    check_square(x, "x")
    n = x.shape[-1]
    k = check_k(k, n)
    wdtype, vdtype = result_dtypes(x.dtype, None if b is None else b.dtype)
    x = whole_matrices(x, "x")
    args = [x]
    if b is not None:
        x, b = _align(x, _as_dask(b, "b"))
        args = [x, b]
    m = n if k is None else int(k)
    opts = dict(options, k=None if k is None else int(k), largest=bool(largest))
    opts.update(_whole_array_strategy(x, n, vectors, options))
    batch_chunks = x.chunks[:-2]
    real_meta = x._meta.real if np.iscomplexobj(x._meta) else x._meta
    w_meta = meta_from_array(real_meta, ndim=x.ndim - 1, dtype=wdtype)
    if not vectors:
        w = da.map_blocks(
            solve_block,
            *args,
            vectors=False,
            options=opts,
            chunks=(*batch_chunks, (m,)),
            drop_axis=x.ndim - 1,
            meta=w_meta,
            token="spectra-eigvalsh",
        )
        return w, None
    pairs = da.map_blocks(
        solve_block,
        *args,
        vectors=True,
        options=opts,
        chunks=x.chunks,
        meta=np.empty((0,) * x.ndim, dtype=object),
        token="spectra-eigh",
    )
    index = "".join(chr(ord("a") + i) for i in range(x.ndim - 2))
    w = da.blockwise(
        pick,
        index + "y",
        pairs,
        index + "yz",
        0,
        None,
        concatenate=False,
        adjust_chunks={"y": m},
        meta=w_meta,
        token="spectra-eigenvalues",
    )
    v_meta = meta_from_array(x._meta, ndim=x.ndim, dtype=vdtype)
    v = da.blockwise(
        pick,
        index + "yz",
        pairs,
        index + "yz",
        1,
        None,
        adjust_chunks={"z": m},
        meta=v_meta,
        token="spectra-eigenvectors",
    )
    return w, v


def eigh(
    x: Any, b: Any = None, *, k: int | None = None, largest: bool = False, **core_options: Any
) -> Any:
    """Eigenpairs of every matrix of a Dask array, block by block through ``spectra.eigh``.

    Parameters
    ----------
    x : dask array ``(..., n, n)`` of real symmetric or complex Hermitian matrices with
        NumPy (or CuPy) blocks, chunked along the batch axes only (blocks of unequal sizes
        are fine). Matrix axes split into several chunks are rechunked to whole matrices,
        with a ``PerformanceWarning``. A NumPy array is wrapped with ``dask.array.from_array``.
    b : optional positive-definite ``(..., n, n)`` (dask or NumPy) broadcastable to ``x``:
        the generalized problem ``A v = w B v``. A single ``(n, n)`` ``b`` goes to every block.
    k, largest : as in :func:`spectra.eigh` (the matching slice of the ascending result).
    **core_options : any other :func:`spectra.eigh` option (``lindep``, ``check``,
        ``device="cuda"`` to solve NumPy blocks on each worker's GPU, ``workers``, ...).

    Returns
    -------
    spectra.EighResult
        ``(eigenvalues, eigenvectors)`` as lazy dask arrays ``(..., m)`` and ``(..., n, m)``
        (``m = k or n``), chunked like ``x`` along the batch. Element for element equal to
        ``spectra.eigh`` on the whole array, gauge included. Compute both together
        (``dask.compute(w, v)`` or ``client.persist``) so each block is solved once. Bad
        input raises the core's error when computed, naming indices of the whole array.

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> import spectra.distributed as sd
    >>> x = da.from_array(np.stack([np.diag([2.0, 1.0])] * 4), chunks=(3, 2, 2))
    >>> w, v = sd.eigh(x)
    >>> w.compute()[0], w.chunks
    (array([1., 2.]), ((3, 1), (2,)))
    """
    w, v = _map(x, b, vectors=True, k=k, largest=largest, options=core_options)
    return EighResult(w, v)


def eigvalsh(
    x: Any, b: Any = None, *, k: int | None = None, largest: bool = False, **core_options: Any
) -> Any:
    """Eigenvalues (ascending) of every matrix of a Dask array, through ``spectra.eigvalsh``.

    Same arguments as :func:`eigh`; returns one lazy dask array ``(..., m)``.

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> import spectra.distributed as sd
    >>> x = da.from_array(np.stack([np.diag([3.0, 1.0])] * 5), chunks=(2, 2, 2))
    >>> sd.eigvalsh(x, k=1, largest=True).compute().ravel()
    array([3., 3., 3., 3., 3.])
    """
    w, _ = _map(x, b, vectors=False, k=k, largest=largest, options=core_options)
    return w
