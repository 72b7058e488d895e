"""Checks every command shares: finite numbers, sizes that fit in memory, known devices.

Each failure is a ``ValueError`` (a :class:`spectra.cli.UsageError` for sizes), which the
``spectra`` command prints as one line ``spectra COMMAND: error: ...`` with exit status 2;
argparse ``type=`` functions raise ``argparse.ArgumentTypeError`` (the same one line).

>>> finite_float("2.5"), whole_number("7")
(2.5, 7)
>>> check_fits(1 << 20, "--nk 10", available=1 << 30)
>>> check_fits(1 << 40, "--nk 10", available=1 << 30)
Traceback (most recent call last):
...
spectra.core._errors.InputError: --nk 10 needs about 1.0 TiB of memory, more than the 1.0 GiB ...
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable

from ..core.domain import check_fits  # noqa: F401  (the core's memory check, used by bench)


def finite_float(text: str) -> float:
    """An argparse ``type``: a finite float (``nan``, ``inf``, ``1e999`` refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def whole_number(text: str) -> int:
    """An argparse ``type``: an integer (``2.5``, ``1e3``, ``inf`` refused with one line)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def in_range(
    value: float, option: str, low: float | None = None, high: float | None = None
) -> None:
    """Raise ``ValueError`` naming ``option`` unless ``low <= value <= high``."""
    if not math.isfinite(value):
        raise ValueError(f"{option} must be a finite number, got {value!r}")
    if low is not None and value < low:
        raise ValueError(f"{option} must be at least {low:g}, got {value:g}")
    if high is not None and value > high:
        raise ValueError(f"{option} must be at most {high:g}, got {value:g}")


def harden_numeric_options(parsers: Iterable[argparse.ArgumentParser]) -> None:
    """Give every plain ``type=float`` / ``type=int`` option of ``parsers`` the checked
    types above, so no command can take ``nan``/``inf`` (or print argparse's
    ``invalid float value``) whatever its module declares."""
    for parser in parsers:
        for action in parser._actions:
            if action.type is float:
                action.type = finite_float
            elif action.type is int:
                action.type = whole_number


def check_device(device: str) -> str:
    """``device`` if it names a CPU or an available CUDA device, else a one-line ValueError."""
    import torch

    kind, _, index = device.partition(":")
    if kind not in ("cpu", "cuda") or (index and not index.isdigit()) or (kind == "cpu" and index):
        raise ValueError(f"--device {device!r}: use cpu, cuda or cuda:N")
    if kind == "cuda":
        if not torch.cuda.is_available():
            build = "a CPU-only build" if torch.version.cuda is None else "no visible GPU"
            raise ValueError(
                f"--device {device}: no CUDA device is available (torch {torch.__version__}: "
                f"{build})"
            )
        if index and int(index) >= torch.cuda.device_count():
            raise ValueError(
                f"--device {device}: only {torch.cuda.device_count()} CUDA device(s) visible"
            )
    return device
