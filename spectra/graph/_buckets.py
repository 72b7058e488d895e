"""Which graphs of a batch go in which core call: the small ones padded together
(:func:`padded_members`), calls cut to fit ``max_memory`` (:func:`fit_budget`), and where
the sparse and dense calls overlap, the dense graphs in guided chunks
(:func:`ragged_chunks`, :mod:`._overlap`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core.domain import InputError, available_memory, cpu_count, format_bytes
from ._assemble import Entries
from ._overlap import Job, guided_chunks
from ._parts import Part
from ._sparse_path import (
    DENSE_BYTES_PER_ENTRY,
    ONE_THREAD_MAX_N,
    Lowest,
    dense_seconds,
    dense_wanted,
)


# Cost of a dense eigh with vectors, in microseconds, n small to medium (fitted to the
# measured 2-core LAPACK times in DESIGN.md: 6 us at n = 8, 78 us at 32, 274 us at 64).
def _dense_cost(n: Any) -> Any:  # n: an int or a NumPy array of sizes
    return 1.0 + 0.07 * n * n + 0.0008 * n**3


PADDING_SLACK = 3.0  # padding may cost at most this much more than solving each size
CALL_OVERHEAD_US = 300.0  # what one padded call saves over the ragged path's bookkeeping


def padded_members(counts: Sequence[int]) -> int:
    """The largest size ``s`` such that padding every graph of at most ``s`` nodes to ``s``
    costs at most ``PADDING_SLACK`` times solving each at its own size (plus one call's
    overhead); those graphs go in one padded call, the larger ones on the ragged path."""
    sizes = np.sort(np.asarray([c for c in counts if c > 0], dtype=np.float64))
    if not sizes.size:
        return 0
    cost = _dense_cost(sizes)
    fits = np.arange(1, sizes.size + 1) * cost <= PADDING_SLACK * np.cumsum(cost) + CALL_OVERHEAD_US
    return int(sizes[fits].max()) if fits.any() else 0


#: dense solves of graphs up to this size run on one kernel thread in the calling thread
#: (the core's ragged path still fans a list out over its workers). Measured on the
#: 2-core machine under load (load average 8): 20 Laplacians of 180-915 nodes took
#: 0.84 s on one thread and 4.6-18 s with two (threaded LAPACK oversubscribed).
DENSE_ONE_THREAD_MAX_N = ONE_THREAD_MAX_N


def fit_budget(graphs: list[int], entries: list[int], budget: int | None) -> list[list[int]]:
    """``graphs`` cut into consecutive calls whose dense buffers (``entries`` matrix entries
    per graph, ``DENSE_BYTES_PER_ENTRY`` bytes each) fit ``budget`` (``None``: one call; a
    graph that alone exceeds it gets a call of its own)."""
    if budget is None:
        return [graphs]
    out: list[list[int]] = [[]]
    used = 0
    for g, size in zip(graphs, entries, strict=True):
        need = size * DENSE_BYTES_PER_ENTRY
        if out[-1] and used + need > budget:
            out.append([])
            used = 0
        out[-1].append(g)
        used += need
    return out


def refuse_oversized(
    dense: list[int], counts: list[int], budget: int | None, device: Any, lowest: Lowest | None
) -> None:
    """An ``InputError`` naming the largest of the ``dense`` graphs when its dense working
    set (``DENSE_BYTES_PER_ENTRY`` bytes per matrix entry) exceeds ``max_memory``
    (``budget``) or, without one, the memory free on ``device``; raised before anything
    is densified (a graph cannot be cut into smaller calls). A graph of 30,000 nodes needs
    29 GB this way: it used to be padded into a 7.2 GB buffer first, whatever ``max_memory``
    said, and then solved for an hour.

    >>> try:
    ...     refuse_oversized([0, 1], [50, 3000], 1 << 20, "cpu", None)
    ... except InputError as err:
    ...     print(str(err).split(", more than")[0])
    graph 1 has 3,000 nodes: its dense eigendecomposition needs about 274.7 MiB
    """
    if not dense:
        return
    top = max(dense, key=counts.__getitem__)
    need = DENSE_BYTES_PER_ENTRY * counts[top] ** 2
    if budget is not None:
        limit, named = budget, f"max_memory={format_bytes(budget)}"
    else:
        import torch

        limit = available_memory(torch.device(device))
        named = f"the {format_bytes(limit)} free here"
    if need <= limit:
        return
    hint = (
        "the features that read only the lowest eigenpairs take the sparse path (memory "
        "O(nnz + n k)): laplacian_pe / LaplacianPE, spectral_embedding, spectral_clustering, "
        "heat_kernel_diagonal(k=...)"
        if lowest is None
        else "it did not take the sparse path: see eigh_options['sparse_from']"
    )
    raise InputError(
        f"graph {top}",
        f"has {counts[top]:,} nodes: its dense eigendecomposition needs about "
        f"{format_bytes(need)}, more than {named} ({hint})",
    )


def overlapped(
    entries: Entries, big: list[int], rest: list[int], budget: int | None, kw: Mapping[str, Any]
) -> int:
    """The workers over which the calls of :func:`solve_entries` overlap, or 1: in turn.
    They overlap where some graphs take the sparse path and others the dense one, on the
    CPU, without gradients and without ``max_memory`` (two calls in flight hold two
    working sets), with at least two workers (``workers`` in ``eigh_options``, else the
    cores)."""
    values = entries.values
    if not big or not rest or budget is not None or values.device.type != "cpu":
        return 1
    if values.requires_grad:
        return 1
    given = kw.get("workers")
    return max(1, int(given) if given is not None else cpu_count())


def ragged_chunks(
    large: list[int],
    counts: list[int],
    comps: list[int],
    lowest: Lowest | None,
    budget: int | None,
    workers: int,
    jobs: list[Job[Part]],
) -> list[list[int]]:
    """The ragged calls: one (or the ``max_memory`` chunks) in turn; overlapped, the graphs
    costliest first in guided chunks (:func:`._overlap.guided_chunks`)."""
    if workers < 2:
        return fit_budget(large, [counts[g] ** 2 for g in large], budget)
    order = sorted(large, key=lambda g: -counts[g])
    k = dense_wanted(lowest, [comps[g] for g in order])
    seconds = [dense_seconds(counts[g], k) for g in order]
    return guided_chunks(order, seconds, workers, sum(j.seconds for j in jobs))
