"""What runs on the workers: one block through the core, errors re-indexed globally.

Every block goes through ``spectra.eigh``/``spectra.eigvalsh`` unchanged (plan, checks,
gauge), so a block's result is exactly what the core gives for those matrices. Errors the
core raises name batch indices *inside the block*; they are shifted by the block's offset
so the error seen on the client names indices of the whole array.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import eigh, eigvalsh
from ..core.domain import InputError, LinAlgError
from ._compat import is_cupy


def relocate(exc: BaseException, offset: tuple[int, ...], block_id: tuple[int, ...]) -> Any:
    """The same error as ``exc``, its batch indices shifted by the block's ``offset``.

    The core's errors are data (:class:`~spectra.core.domain.InputError`,
    :class:`~spectra.core.domain.LinAlgError` with ``.indices``): they are rebuilt with
    :meth:`reindexed`; any other ``ValueError`` only gets the block named in front.
    """
    where = f"dask block {block_id}: "
    if isinstance(exc, (InputError, LinAlgError)):

        def shift(index: tuple[int, ...]) -> tuple[int, ...]:
            if len(index) != len(offset):  # () for an unbatched argument such as k
                return index
            return tuple(i + o for i, o in zip(index, offset, strict=True))

        return exc.reindexed(shift, what=where + exc.what)
    try:
        return type(exc)(where + (str(exc.args[0]) if exc.args else ""))
    except Exception:  # pragma: no cover - an exception type with another signature
        return exc


def _offset(block_info: dict | None, batch_ndim: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if not block_info or 0 not in block_info:
        return (0,) * batch_ndim, (0,) * batch_ndim
    info = block_info[0]
    start = tuple(int(s) for s, _ in info["array-location"][:batch_ndim])
    return start, tuple(info["chunk-location"][:batch_ndim])


def _like_input(block: Any, out: Any) -> Any:
    """Results of CuPy blocks go back as CuPy (the core hands torch tensors back for them)."""
    if out is None or not is_cupy(block):
        return out
    import cupy

    return cupy.from_dlpack(out.contiguous())


def aligned(block: Any) -> Any:
    """A NumPy block the core can hand to torch safely.

    Blocks that arrive over the network are often read-only views into a receive buffer
    at an arbitrary offset; torch crashes (SIGSEGV) on complex128 data that is not
    16-byte aligned, and warns on read-only arrays. Such blocks are copied (O(n^2) per
    matrix, small next to the O(n^3) solve).
    """
    if not isinstance(block, np.ndarray):
        return block
    if block.flags.writeable and block.ctypes.data % max(block.dtype.itemsize, 1) == 0:
        return block
    return np.array(block, copy=True, order="C")


def solve_block(
    a: Any, b: Any = None, *, vectors: bool, options: dict[str, Any], block_info: dict | None = None
) -> Any:
    """Solve one block with the core; ``(w, v)`` if ``vectors`` else ``w``."""
    batch_ndim = a.ndim - 2
    a, b = aligned(a), aligned(b)
    try:
        if vectors:
            w, v = eigh(a, b, **options)
        else:
            w, v = eigvalsh(a, b, **options), None
    except ValueError as exc:  # the core's input errors (LinAlgError is a ValueError)
        offset, block_id = _offset(block_info, batch_ndim)
        new = relocate(exc, offset, block_id)
        if new is exc:
            raise
        raise new from None
    w = _like_input(a, w)
    if not vectors:
        return w
    return w, _like_input(a, v)


def pick(pair: tuple[Any, Any], index: int) -> Any:
    """One member of a block's ``(w, v)`` pair (unwrapping Dask's lists of contracted blocks)."""
    while isinstance(pair, list):
        (pair,) = pair
    return pair[index]
