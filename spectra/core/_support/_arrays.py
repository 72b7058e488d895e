"""Array in, same array out: NumPy/torch conversion at the core's boundary."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

SUPPORTED = (torch.float32, torch.float64, torch.complex64, torch.complex128)

#: CPU blocks of at least this many entries take numba's one-pass input check and gauge
#: whatever the strategy once numba is loaded; smaller ones never use it
NUMBA_PASS_MIN_ENTRIES = 1 << 16
#: blocks of at least this many entries import numba for those passes (0.4-0.5 s the first
#: time in a process, ~100 ms of the torch passes at this size); below it a call never
#: waits for numba, e.g. a process's first 200 x 40x40 call (both passes make the same
#: decisions, so which ran never shows in the result)
NUMBA_IMPORT_MIN_ENTRIES = 1 << 23


def numba_pass_ok(entries: int) -> bool:
    """Whether a CPU block of ``entries`` takes numba's one-pass check/gauge: large
    enough to pay, and numba already loaded (or the block large enough to pay its import).

    >>> numba_pass_ok(16), numba_pass_ok(1 << 24)
    (False, True)
    """
    if entries < NUMBA_PASS_MIN_ENTRIES:
        return False
    return entries >= NUMBA_IMPORT_MIN_ENTRIES or "numba" in sys.modules


@dataclass(frozen=True)
class Origin:
    """Where an input came from, so results go back in the same form."""

    kind: str  # "torch" or "numpy"
    device: torch.device
    dtype: torch.dtype
    #: float16/bfloat16 of an input solved in float32: floating results go back in it
    low_precision: torch.dtype | None = None


def as_tensor(x: Any, name: str = "a") -> tuple[torch.Tensor, Origin]:
    """Convert ``x`` to a torch tensor of a supported dtype (no copy where possible).

    Integers and bools become float64 (as ``numpy.linalg.eigh`` does), float16/bfloat16
    become float32 (and :func:`restore` gives floating results back in them); anything else
    that is not float32/64 or complex64/128 is rejected. Big-endian NumPy data is converted.

    >>> t, origin = as_tensor(np.eye(2, dtype=np.float16))
    >>> t.dtype, restore(t, origin).dtype
    (torch.float32, dtype('float16'))
    """
    if isinstance(x, torch.Tensor):
        t, kind = x, "torch"
        if t.is_conj() or t.is_neg():  # lazy conj()/neg() views: materialize what they mean
            t = t.resolve_conj().resolve_neg()
    elif isinstance(x, np.ndarray) or np.isscalar(x) or isinstance(x, (list, tuple)):
        arr = np.asarray(x)
        if arr.dtype.kind not in "biufc":
            raise TypeError(
                f"{name}: expected a torch.Tensor or numpy.ndarray of numbers, "
                f"got {type(x).__name__} of dtype {arr.dtype}"
            )
        if not arr.dtype.isnative:  # big-endian data: torch reads native byte order only
            arr = arr.astype(arr.dtype.newbyteorder("="))
        arr = np.ascontiguousarray(arr)
        if arr.ctypes.data % arr.dtype.itemsize:
            arr = arr.copy()  # torch assumes natural alignment (complex128: 16 bytes)
        t, kind = torch.from_numpy(arr), "numpy"
    elif hasattr(x, "__dlpack__") and hasattr(x, "__cuda_array_interface__"):
        t, kind = torch.from_dlpack(x), "torch"  # e.g. CuPy arrays
    else:
        raise TypeError(f"{name}: expected a torch.Tensor or numpy.ndarray, got {type(x).__name__}")
    origin_dtype = t.dtype
    low = None
    if not (t.is_floating_point() or t.is_complex()):
        t = t.to(torch.float64)
    elif t.dtype in (torch.float16, torch.bfloat16):
        low = t.dtype
        t = t.to(torch.float32)
    elif t.dtype == torch.complex32:
        t = t.to(torch.complex64)
    if t.dtype not in SUPPORTED:
        raise TypeError(f"{name}: unsupported dtype {origin_dtype}")
    return t, Origin(kind, t.device, t.dtype, low)


def restore(t: torch.Tensor | None, origin: Origin) -> Any:
    """Return ``t`` in the caller's form (NumPy array, or tensor on the original device)."""
    if t is None:
        return None
    if origin.low_precision is not None and t.is_floating_point():
        t = t.to(origin.low_precision)
    if origin.kind == "numpy":
        return t.detach().cpu().numpy()
    if t.device != origin.device:
        t = t.to(origin.device)
    return t


def real_dtype(dtype: torch.dtype) -> torch.dtype:
    """The real dtype matching ``dtype`` (eigenvalues of Hermitian matrices are real)."""
    return {torch.complex64: torch.float32, torch.complex128: torch.float64}.get(dtype, dtype)


#: squared magnitudes are compared (the complex gauge's pivots) where every column's peak
#: ``|v|^2`` lies in this range: a zero column, or one whose squares underflow, takes the
#: ``abs`` rule (the two look alike squared)
SQUARE_SAFE = {
    torch.complex64: (1e-30, 1e30),
    torch.complex128: (1e-290, 1e290),
}


def default_tolerance(dtype: torch.dtype) -> float:
    """Relative tolerance for checks and comparisons at the precision of ``dtype``."""
    return 1e-4 if real_dtype(dtype) == torch.float32 else 1e-10


def is_dask_collection(x: Any) -> bool:
    """Whether ``x`` is a Dask collection (checked without importing dask)."""
    return type(x).__module__.split(".", 1)[0] == "dask" and hasattr(x, "__dask_graph__")
