"""``spectra compile``: compile the core's numba kernels now, so that no call waits for it.

A fresh install compiles each numba kernel on its first use (seconds each, ~30-60 s in
all); spectra's calls take LAPACK until the kernels are compiled (``spectra explain`` says
so). This command compiles every kernel signature, or loads it where numba's on-disk cache
already holds it, and records that on disk: later processes then use the kernels from
their first call that pays for numba's import. ``spectra check`` does the same first.
"""

from __future__ import annotations

import argparse

DTYPES = ("float32", "float64", "complex64", "complex128")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compile",
        help="compile the numba kernels now (fills numba's cache; later calls never wait)",
    )
    p.add_argument(
        "dtypes", nargs="*", metavar="DTYPE", help=f"only these ({', '.join(DTYPES)}; default: all)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spectra.core import warm_kernels

    report = warm_kernels(args.dtypes or None)
    if not report:
        print("numba is not installed: the kernels are off, every call runs LAPACK")
        return 0
    for name, entry in report.items():
        where = entry.get("marker")
        print(
            f"{name:10s} {entry['compiled']} kernels compiled, {entry['loaded']} loaded "
            f"from numba's cache, {entry['seconds']:.1f} s"
            + (
                f" (recorded in {where})"
                if where
                else " (numba's cache is not writable: this process only)"
            )
        )
    return 0
