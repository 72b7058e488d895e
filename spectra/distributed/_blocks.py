"""What runs on the workers: one block through the core, errors re-indexed globally.

Every block goes through ``spectra.eigh``/``spectra.eigvalsh`` unchanged (plan, checks,
gauge), so a block's result is exactly what the core gives for those matrices. Errors the
core raises name batch indices *inside the block*; they are shifted by the block's offset
so the error seen on the client names indices of the whole array.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ._compat import is_cupy

_INDICES = re.compile(r"(batch indices )\[([^\]]*)\]")


def _shift_list(text: str, offset: tuple[int, ...]) -> str:
    """Shift a rendered index list (``"3, 5"``, ``"(0, 2), (1, 0), ... (12 in all)"``)."""
    head, sep, tail = text.partition(", ...")
    if len(offset) == 1:
        items = [str(int(i) + offset[0]) for i in re.findall(r"-?\d+", head)]
    else:
        items = []
        for group in re.findall(r"\(([^)]*)\)", head):
            parts = [int(p) for p in re.findall(r"-?\d+", group)]
            if len(parts) != len(offset):
                return text
            items.append(str(tuple(p + o for p, o in zip(parts, offset, strict=True))))
    return ", ".join(items) + sep + tail


def relocate(exc: BaseException, offset: tuple[int, ...], block_id: tuple[int, ...]) -> Any:
    """The same error as ``exc`` with its batch indices shifted by ``offset``.

    Returns ``exc`` itself when it names no batch indices or cannot be rebuilt.
    """
    message = str(exc.args[0]) if exc.args else ""
    if not _INDICES.search(message) or not any(offset):
        shifted = message
    else:
        shifted = _INDICES.sub(
            lambda m: m.group(1) + "[" + _shift_list(m.group(2), offset) + "]", message
        )
    text = f"dask block {block_id}: {shifted}"
    indices = getattr(exc, "indices", None)
    try:
        if indices is not None:
            moved = [tuple(i + o for i, o in zip(ix, offset, strict=True)) for ix in indices]
            new = type(exc)(text, moved)
        else:
            new = type(exc)(text)
    except Exception:
        return exc
    return new


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
    import spectra

    batch_ndim = a.ndim - 2
    a, b = aligned(a), aligned(b)
    try:
        if vectors:
            w, v = spectra.eigh(a, b, **options)
        else:
            w, v = spectra.eigvalsh(a, b, **options), None
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
