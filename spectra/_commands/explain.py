"""``spectra explain``: show the plan the core would follow for a batch."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explain", help="show how the core would solve a batch (the plan)")
    p.add_argument("n", type=int, help="matrix size")
    p.add_argument("batch", type=int, help="number of matrices")
    p.add_argument(
        "--dtype", default="float64", choices=["float32", "float64", "complex64", "complex128"]
    )
    p.add_argument("--device", default="cpu")
    p.add_argument("--eigenvalues-only", action="store_true")
    p.add_argument("--max-memory", type=int, default=None, help="bytes")
    p.add_argument("--chunk-size", type=int, default=None)
    p.add_argument("--strategy", default=None)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from spectra.core import plan

    p = plan(
        args.n,
        args.batch,
        getattr(torch, args.dtype),
        args.device,
        vectors=not args.eigenvalues_only,
        max_memory=args.max_memory,
        chunk_size=args.chunk_size,
        strategy=args.strategy,
    )
    print(p)
    return 0
