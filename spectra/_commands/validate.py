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
ValueError: --nk 10 needs about 1.0 TiB of memory, more than the 1.0 GiB available here
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Iterable


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


def available_memory(device: str = "cpu") -> int:
    """Free bytes on ``device`` (CUDA: free device memory; CPU: ``MemAvailable``)."""
    if device.startswith("cuda"):
        import torch

        free, _ = torch.cuda.mem_get_info(torch.device(device))
        return int(free)
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return 8 << 30


def format_size(nbytes: float) -> str:
    """``1536`` -> ``'1.5 KiB'``."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.0f} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def check_fits(nbytes: float, what: str, device: str = "cpu", available: int | None = None) -> None:
    """Refuse (one-line ``ValueError``) work whose memory estimate exceeds free memory.

    Parameters
    ----------
    nbytes : estimated bytes the work needs at once.
    what : what asked for it, e.g. ``"--nk 2000000000"`` (starts the message).
    device : where the memory is (``cpu``, ``cuda``, ``cuda:N``).
    available : free bytes (default: measured on ``device``).
    """
    free = available_memory(device) if available is None else available
    if nbytes > free:
        where = "here" if device == "cpu" else f"on {device}"
        raise ValueError(
            f"{what} needs about {format_size(nbytes)} of memory, more than the "
            f"{format_size(free)} available {where}"
        )


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


def check_kpoints(
    count: float, nstates: int, option: str, per_state: int = 4, available: int | None = None
) -> None:
    """Refuse a k-point count whose arrays cannot fit (``spectra bands --nk/--grid``).

    The estimate is ``8 * (8 + per_state * nstates)`` bytes per k-point: the points
    themselves and their energies (``per_state=4`` along a path: energies, sorted copy and
    the figure's lines; about 64 for a tetrahedron DOS grid, whose simplices hold each
    energy up to 24 times, sorted).

    >>> check_kpoints(2_000_000_000, 2, "--nk 2e9", available=1 << 34)
    Traceback (most recent call last):
    ...
    ValueError: --nk 2e9 needs about 238.4 GiB of memory, more than the 16.0 GiB available here
    """
    check_fits(8.0 * (8 + per_state * nstates) * count, option, available=available)
