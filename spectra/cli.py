"""The ``spectra`` command: ``bench``, ``check``, ``explain`` and the domain commands.

Bad input (an unknown option, a negative size, a missing file, an output folder that does
not exist, an unavailable device) gets ONE line on stderr, ``spectra COMMAND: error: ...``,
and exit status 2, never a traceback; output paths are checked before any work. Set
``SPECTRA_DEBUG=1`` to see the traceback of an error instead.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

#: Modules that add sub-commands: each has ``register(subparsers)`` that sets ``func``.
COMMAND_MODULES = (
    "spectra._commands.check",
    "spectra._commands.compile",
    "spectra._commands.bench",
    "spectra._commands.explain",
    "spectra._commands.scan",
    "spectra.tightbinding._cli",
)

#: Options that name a file the command writes: checked before the command runs.
OUTPUT_OPTIONS = ("out", "json", "plot")


class UsageError(ValueError):
    """Bad command-line input found by a command (reported as one line, exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        hint = f" (see {self.prog} --help)"
        print(f"{self.prog}: error: {message}{hint}", file=sys.stderr)
        raise SystemExit(2)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("torch-spectra")
    except Exception:  # pragma: no cover - not installed as a distribution
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="spectra",
        description="Many symmetric/Hermitian eigendecompositions at once.",
        epilog="Errors print one line; SPECTRA_DEBUG=1 shows their traceback.",
    )
    parser.add_argument("--version", action="version", version=f"spectra {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(sub)
    from spectra._commands.validate import harden_numeric_options

    harden_numeric_options(sub.choices.values())  # finite numbers, one-line errors
    return parser


def check_output_path(path: str | os.PathLike, option: str) -> None:
    """Refuse an output path whose folder is missing or not writable, or that is a folder."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise UsageError(f"--{option} {path}: is a folder, give a file name")
    if not folder.is_dir():
        raise UsageError(f"--{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"--{option} {path}: the folder {folder} is not writable")


def _out_of_memory(exc: BaseException) -> bool:
    """A failed allocation: ``MemoryError``, torch's CPU allocator or CUDA out of memory."""
    if isinstance(exc, MemoryError):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and (
        "can't allocate memory" in text or "out of memory" in text.lower()
    )


def _subcommand_prog(parser: argparse.ArgumentParser, command: str | None) -> str:
    return f"{parser.prog} {command}" if command else parser.prog


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``spectra`` command line; returns the exit status."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    prog = _subcommand_prog(parser, getattr(args, "command", None))
    if extra:
        print(
            f"{prog}: error: unrecognized arguments: {' '.join(extra)} (see {prog} --help)",
            file=sys.stderr,
        )
        return 2
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        for option in OUTPUT_OPTIONS:
            value = getattr(args, option, None)
            if isinstance(value, (str, os.PathLike)):
                check_output_path(value, option)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except (ValueError, LookupError, FileNotFoundError, ImportError, OSError) as exc:
        # InputError and LinAlgError are ValueErrors; LookupError: unknown names
        if os.environ.get("SPECTRA_DEBUG"):
            raise
        message = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"{prog}: error: {' '.join(message.split())}", file=sys.stderr)
        return 2
    except Exception as exc:
        if os.environ.get("SPECTRA_DEBUG"):
            raise
        if _out_of_memory(exc):  # an estimate let it through: still the size asked for
            print(
                f"{prog}: error: out of memory ({type(exc).__name__}: "
                f"{' '.join(str(exc).split())[:200]}): ask for smaller sizes",
                file=sys.stderr,
            )
            return 2
        print(
            f"{prog}: internal error: {type(exc).__name__}: {' '.join(str(exc).split())} "
            "(run again with SPECTRA_DEBUG=1 for the traceback, and please report it)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
