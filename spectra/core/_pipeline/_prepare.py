"""Argument preparation for ``eigh``/``eigvalsh``: tensors, devices, dtypes, checks, ``k``."""

from __future__ import annotations

from typing import Any

import torch

from .._errors import InputError
from .._options import as_int
from .._support._arrays import Origin, as_tensor
from ._checks import check_pair, check_square, check_values
from ._plan import Plan


def is_ragged(a: Any) -> bool:
    """Whether ``a`` is a list/tuple of arrays (matrices of possibly different sizes).

    >>> import numpy as np
    >>> is_ragged([np.eye(2), np.eye(3)]), is_ragged(np.eye(2)), is_ragged([[1.0]])
    (True, False, False)
    """
    return (
        isinstance(a, (list, tuple))
        and len(a) > 0
        and all(hasattr(x, "shape") and hasattr(x, "dtype") for x in a)
    )


def b_name(a_name: str) -> str:
    """The name of the ``b`` that goes with ``a_name`` (``"a[3]"`` -> ``"b[3]"``)."""
    return "b" + a_name[1:] if a_name.startswith("a") else "b"


def to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``t`` on ``device`` (large host-to-CUDA copies through pinned memory)."""
    if t.device == device:
        return t
    if device.type == "cuda" and t.device.type == "cpu" and t.numel() > (1 << 16):
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)


def prepare(
    a: Any,
    b: Any,
    name: str,
    check: bool,
    symmetry_tol: float | None,
    device: Any,
    defer_a_check: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None, Origin]:
    """``a`` (and ``b``) as tensors of one dtype on the solve device, shapes checked, and
    values checked when ``check`` (or deferred to the solve, which checks them per block
    in its workers: ``defer_a_check``)."""
    at, origin = as_tensor(a, name)
    check_square(at, name)
    bt = None
    if b is not None:
        bt, _ = as_tensor(b, b_name(name))
    if device is not None:
        at = to_device(at, torch.device(device))
        bt = to_device(bt, torch.device(device)) if bt is not None else None
    if bt is not None:
        common = torch.promote_types(at.dtype, bt.dtype)
        at, bt = at.to(common), bt.to(common)
        check_pair(at, bt)
    if check and not defer_a_check:  # (deferred: the solve checks a and b per block)
        check_values(at, symmetry_tol, name)
        if bt is not None:
            check_values(bt, symmetry_tol, b_name(name))
    return at, bt, origin


def check_k(k: Any, n: int, what: str = "k") -> int | None:
    """``k`` as an int in ``[0, n]`` (Python, NumPy or torch integers), or ``None``.

    >>> import numpy as np
    >>> check_k(np.int64(2), 3)
    2
    """
    if k is None:
        return None
    try:
        out = as_int(k, what)
    except InputError:
        out = -1
    if not 0 <= out <= n:
        raise InputError(what, f"must be an integer in [0, n={n}], got {k!r}")
    return out


def check_plan(p: Any, n: int, batch: int, dtype: torch.dtype, device: torch.device) -> Plan:
    """``p`` if it is a :class:`Plan` for this batch, else a clear ``InputError``."""
    if not isinstance(p, Plan):
        raise TypeError(f"plan must be a spectra Plan (spectra.plan(...)), got {type(p).__name__}")
    want = {"n": n, "batch": batch, "dtype": dtype, "device": device}
    have = {"n": p.n, "batch": p.batch, "dtype": p.dtype, "device": p.device}
    wrong = [f"{k} {have[k]} (input: {want[k]})" for k in want if have[k] != want[k]]
    if wrong:
        raise InputError(
            "plan",
            "does not match the input: " + ", ".join(wrong),
            hint="make it with spectra.plan(n, batch, dtype, device) for this input",
        )
    return p
