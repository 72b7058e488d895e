"""``spectra explain``: show the plan the core would follow for a batch, or for a sparse
matrix read from a file (``--sparse FILE --k K``: dense or iterative, the preconditioner)."""

from __future__ import annotations

import argparse
import sys

from spectra._commands.validate import check_device

DTYPES = ("float32", "float64", "complex64", "complex128")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explain",
        help="show how the core would solve a batch (the plan)",
        description="Show the plan the core would follow for BATCH matrices of size N x N: "
        "strategy, workers, chunks and the memory budget, and why.",
    )
    p.add_argument("n", type=int, nargs="?", help="matrix size (>= 1)")
    p.add_argument("batch", type=int, nargs="?", help="number of matrices (>= 0)")
    p.add_argument(
        "--sparse",
        metavar="FILE",
        default=None,
        help="instead of N BATCH: a sparse matrix (.npz of scipy.sparse.save_npz, or Matrix "
        "Market .mtx); shows how spectra.eigh(a, k=K) would solve it",
    )
    p.add_argument(
        "--k", type=int, default=None,
        help="eigenpairs wanted (with --sparse; dense: the partial solve where it pays)",
    )  # fmt: skip
    p.add_argument("--largest", action="store_true", help="the k largest (dense)")
    p.add_argument("--dtype", default="float64", choices=DTYPES)
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)")
    p.add_argument("--eigenvalues-only", action="store_true")
    p.add_argument(
        "--max-memory", type=int, default=None, help="memory budget in bytes (default: free)"
    )
    p.add_argument("--chunk-size", type=int, default=None, help="matrices per chunk")
    p.add_argument("--strategy", default=None, help="force a registered strategy")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from spectra.core import plan
    from spectra.core.domain import format_bytes

    if args.sparse is not None:
        return _sparse(args)
    if args.n is None or args.batch is None:
        raise ValueError("give N BATCH (a dense batch) or --sparse FILE --k K")
    if args.n < 1:
        raise ValueError(f"matrix size n must be >= 1, got {args.n}")
    if args.batch < 0:
        raise ValueError(f"batch must be >= 0, got {args.batch}")
    for name in ("max_memory", "chunk_size"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    device = check_device(args.device)
    p = plan(
        args.n,
        args.batch,
        getattr(torch, args.dtype),
        device,
        vectors=not args.eigenvalues_only,
        max_memory=args.max_memory,
        chunk_size=args.chunk_size,
        strategy=args.strategy,
        k=args.k,
        largest=args.largest,
    )
    print(p)
    if p.bytes_per_matrix > p.memory_budget:
        print(
            f"spectra explain: warning: one {args.n}x{args.n} {args.dtype} matrix needs "
            f"{format_bytes(p.bytes_per_matrix)} of working memory, more than the budget "
            f"{format_bytes(p.memory_budget)}: the solve will likely run out of memory",
            file=sys.stderr,
        )
    return 0


def _sparse(args: argparse.Namespace) -> int:
    import scipy.io
    import scipy.sparse as sp

    from spectra.core import plan

    if args.k is None or args.k < 1:
        raise ValueError(f"--sparse needs --k >= 1 (eigenpairs wanted), got {args.k}")
    if args.max_memory is not None and args.max_memory < 1:
        raise ValueError(f"--max-memory must be >= 1, got {args.max_memory}")
    path = str(args.sparse)
    a = scipy.io.mmread(path) if path.endswith((".mtx", ".mtx.gz")) else sp.load_npz(path)
    print(plan(sp.csr_matrix(a), k=args.k, max_memory=args.max_memory))
    return 0
