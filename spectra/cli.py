"""The ``spectra`` command: ``bench``, ``check``, ``explain`` and the domain commands."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Modules that add sub-commands: each has ``register(subparsers)`` that sets ``func``.
COMMAND_MODULES = (
    "spectra._commands.check",
    "spectra._commands.bench",
    "spectra._commands.explain",
    "spectra._commands.scan",
    "spectra.tightbinding._cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spectra",
        description="Many symmetric/Hermitian eigendecompositions at once.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    return int(args.func(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
