"""Large graphs on the core's sparse path: only the lowest eigenpairs a feature needs, from
the graph's sparse matrix (memory ``O(nnz + n k)``), the known null space deflated."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from ..core import eigh, plan
from ._assemble import Entries
from ._layout import glue_threads
from ._parts import Part

#: the keywords of the core's sparse path a caller may pass in ``eigh_options``
SPARSE_OPTIONS = frozenset({"tol", "maxiter", "precondition", "method", "on_fail"})
#: the per-Data rule's bound: a graph alone pays the iteration's per-step overhead that a
#: list of graphs shares (the cost model below is per graph of a list)
SPARSE_FROM = 600
#: bytes a dense solve holds per matrix entry: the matrix, its eigenvectors, LAPACK's
#: workspace and our padded copy, in float64 (the core's own dense estimate: 4 n^2 entries)
DENSE_BYTES_PER_ENTRY = 4 * 8
#: dense solves up to this size run on one kernel thread (see ``_spectrum``)
ONE_THREAD_MAX_N = 1024
#: the core's sparse path densifies matrices up to this size (a full dense eigh, costlier
#: than the partial one the graph domain runs itself): smaller graphs never go sparse by
#: the cost model (``spectra.core._sparse._plan.DENSE_MAX_N``, tested equal)
CORE_DENSE_MAX_N = 512


def dense_seconds(n: int, k: int | None = None) -> float:
    """A dense eigh with vectors of one ``n x n`` graph Laplacian, as the graph domain runs
    it (one kernel thread up to ``ONE_THREAD_MAX_N``, the caller's threads above). Measured
    on the 2-core machine, load 6, one thread: 8.6 ms at ~300 nodes, 34 ms at ~550, 182 ms
    at ~850 (cubic; two threads about 1.8x faster on a quiet machine).

    With ``k``: only the ``k`` lowest eigenpairs, by the core's partial solve (LAPACK
    ``?syevr`` with an index range, one thread; measured 2026-12-02, load ~1: 4.3 ms at
    ``n = 300, k = 9``, 19 ms at ``550, 17``, 52 ms at ``800, 9``): the tridiagonal
    reduction plus a per-eigenpair term.

    >>> sparse_seconds(700) < dense_seconds(700, 9) < dense_seconds(700)
    True
    """
    if k is None:
        return (2.5e-10 if n <= ONE_THREAD_MAX_N else 1.4e-10) * n**3
    per_pair = 1.2e-5 + 1.5e-7 * n + 6e-10 * n * n
    return 2e-5 + k * per_pair + 1.5e-8 * n * n + 6e-11 * n**3


def sparse_seconds(n: int) -> float:
    """The core's sparse path for the ``k ~ 8`` lowest eigenpairs of a normalized graph
    Laplacian, per graph of a list solved together. Refitted 2026-12-02 (evening) to the
    Lanczos path that skips the Rayleigh-Ritz steps it predicts cannot converge (7c90afd):
    CPU seconds of the core's call on the D&D-like batch's tree-like graphs, deflated,
    loaded machine: 40 graphs of 100-206 nodes 0.16-0.18 s (4.2 ms each), 41 of 206-430
    0.30-0.34 s, 17 of 430-1,009 0.20-0.25 s (13 ms each), the 5,748-node geometric graph
    0.09-0.11 s (the fit before, ``0.012 + 3.2e-5 n``, held 12 ms of fixed cost per graph).
    It crosses the partial dense solve of 9 eigenpairs near 430 nodes, below the core's
    own dense bound (:data:`CORE_DENSE_MAX_N`), which :func:`takes_sparse` keeps."""
    return 0.0015 + 1.8e-5 * n


def takes_sparse(
    n: int, sparse_from: int | None, budget: int | None, dense_k: int | None = None
) -> bool:
    """Whether a graph of ``n`` nodes whose feature needs only its lowest eigenpairs goes
    to the sparse path: from ``sparse_from`` nodes when given, else where the cost model
    says the sparse solve is cheaper and the core would not densify it (from 513 nodes,
    against the full dense solve and the partial one of ``dense_k = 9`` eigenpairs alike);
    and always when its dense working set would not fit ``max_memory`` (``budget``)."""
    if budget is not None and DENSE_BYTES_PER_ENTRY * n * n > budget:
        return True
    if sparse_from is not None:
        return n >= sparse_from
    return n > CORE_DENSE_MAX_N and sparse_seconds(n) < dense_seconds(n, dense_k)


@dataclass(frozen=True)
class Lowest:
    """What a feature reads of each graph: ``k`` eigenpairs from the bottom of the spectrum
    (``deflate``: ``k`` after the null space, one vector per component, which is known and
    deflated; ``plus_components``: ``k`` plus the graph's component count). ``partial``:
    graphs solved densely compute only those too (the core's partial solve, where its
    planner takes it); ``False`` for features that also sum over the whole spectrum of the
    graphs that fit densely (the heat kernel's diagonal)."""

    k: int
    deflate: bool = False
    plus_components: bool = False
    partial: bool = True


def split_options(
    eigh_kw: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, Any], int | None]:
    """``eigh_options`` -> (dense keywords, sparse-only keywords, ``sparse_from`` or None:
    the cost model decides)."""
    dense = dict(eigh_kw)
    given = dense.pop("sparse_from", None)
    sparse_from = None if given is None else int(given)
    sparse = {k: dense.pop(k) for k in list(dense) if k in SPARSE_OPTIONS}
    return dense, sparse, sparse_from


@functools.cache
def core_has_sparse() -> bool:
    """Whether :func:`spectra.eigh` takes sparse input (asked once, on a 3x3 identity)."""
    eye = torch.sparse_coo_tensor(
        torch.arange(3).expand(2, 3), torch.ones(3), (3, 3), check_invariants=False
    )
    try:
        eigh(eye, k=1)
    except Exception:  # any refusal means: no sparse path in this core
        return False
    return True


def wanted(lowest: Lowest, components: int) -> int:
    """Eigenpairs to ask the solver for (beyond a deflated null space)."""
    return lowest.k + (components if lowest.plus_components else 0)


def dense_wanted(lowest: Lowest | None, components: list[int]) -> int | None:
    """The lowest eigenpairs a dense call over graphs with ``components`` must return for
    every one of them (the null space included: nothing is deflated there), or ``None``:
    all of them (no ``lowest``, or not ``partial``).

    >>> dense_wanted(Lowest(8, deflate=True), [1, 3]), dense_wanted(Lowest(9), [2])
    (11, 9)
    """
    if lowest is None or not lowest.partial or not components:
        return None
    extra = lowest.deflate or lowest.plus_components
    return lowest.k + (max(components) if extra else 0)


def partial_solves(
    counts: list[int], graphs: list[int], k: int | None, dtype: torch.dtype, device: torch.device
) -> list[int]:
    """The ``graphs`` whose ``k`` lowest eigenpairs the core solves by a partial solve (its
    planner's ``Plan.window`` for that size): these go to the ragged path, which solves
    them unpadded, each at its own size (padding only adds to a partial solve's cost)."""
    if k is None:
        return []
    taken: dict[int, bool] = {}
    out = []
    for g in graphs:
        n = counts[g]
        if n not in taken:
            taken[n] = k < n and plan(n, 1, dtype, device, k=k).window is not None
        if taken[n]:
            out.append(g)
    return out


def sparse_candidates(
    counts: list[int],
    components: list[int],
    lowest: Lowest | None,
    sparse_from: int | None,
    budget: int | None = None,
) -> list[int]:
    """Graphs that take the sparse path: asking for few eigenpairs, and large by
    :func:`takes_sparse` (``budget``: ``max_memory``, when given)."""
    if lowest is None or not counts:
        return []
    top = max(range(len(counts)), key=counts.__getitem__)
    dense_k = dense_wanted(lowest, [components[top]])
    if not takes_sparse(counts[top], sparse_from, budget, dense_k):  # grows with n: none is
        return []
    out = []
    for g, (n, c) in enumerate(zip(counts, components, strict=True)):
        room = n - (c if lowest.deflate else 0)
        dense_k = dense_wanted(lowest, [c])
        if (
            1 <= wanted(lowest, c) < room - 1
            and n > 1
            and takes_sparse(n, sparse_from, budget, dense_k)
        ):
            out.append(g)
    return out


def sparse_groups(
    graphs: list[int], counts: list[int], components: list[int], lowest: Lowest | None
) -> list[list[int]]:
    """``graphs`` in the groups the core's sparse path solves together (its batched block
    iteration): the same number of eigenpairs asked (:func:`wanted`), sizes within a factor
    of two of the group's smallest; each group can be a job of its own.

    >>> sizes, comps = [800, 1500, 5000, 900], [1, 1, 1, 2]
    >>> sparse_groups([0, 1, 2, 3], sizes, comps, Lowest(8, plus_components=True))
    [[0, 1], [2], [3]]
    >>> sparse_groups([0, 1, 2, 3], sizes, comps, Lowest(8, deflate=True))
    [[0, 3, 1], [2]]
    """
    if lowest is None:
        return [graphs] if graphs else []
    out: list[list[int]] = []
    key = lambda g: (wanted(lowest, components[g]), counts[g])  # noqa: E731
    for g in sorted(graphs, key=key):
        last = out[-1] if out else None
        if last is not None and key(last[0])[0] == key(g)[0] and counts[g] <= 2 * counts[last[0]]:
            last.append(g)
        else:
            out.append([g])
    return out


def null_basis(nodes: torch.Tensor, labels: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``(n, c)`` orthonormal null vectors of one graph's Laplacian: ``weight`` on each
    component (``sqrt(deg)`` for ``sym``, 1 for ``D - A``), normalized."""
    _, local = torch.unique(labels[nodes], return_inverse=True)
    c = int(local.max()) + 1 if local.numel() else 0
    y = torch.zeros((nodes.numel(), c), dtype=weight.dtype, device=weight.device)
    y[torch.arange(nodes.numel(), device=y.device), local] = weight[nodes]
    return y / y.norm(dim=0, keepdim=True).clamp_min(1e-300)


def sparse_parts(
    entries: Entries,
    graphs: list[int],
    lowest: Lowest,
    comps: list[int],
    labels: torch.Tensor | None,
    null_weight: torch.Tensor | None,
    bound_two: bool,
    kw: dict[str, Any],
) -> list[Part] | None:
    """The sparse path's parts (one per graph), or None where the core has no sparse path.
    ``comps``: the component count of each of ``graphs``; ``labels`` ``(N,)`` component of
    every node and ``null_weight`` ``(N,)`` the null vectors' entries (for ``deflate``)."""
    if not core_has_sparse():
        return None
    lay = entries.layout
    by_k: dict[int, list[int]] = {}
    for g, c in zip(graphs, comps, strict=True):
        by_k.setdefault(wanted(lowest, c), []).append(g)
    cpu = entries.values.device.type == "cpu"
    parts = []
    for k, members in by_k.items():
        with glue_threads(1):  # the assembly: elementwise work, one kernel thread
            mats = entries.scipy_blocks(members) if cpu else entries.sparse_blocks(members)
            nulls = None
            if lowest.deflate:
                assert labels is not None and null_weight is not None
                nulls = [null_basis(_nodes(lay, g), labels, null_weight) for g in members]
        extra: dict[str, Any] = {"spectrum_bound": (0.0, 2.0)} if bound_two else {}
        if nulls is not None:
            extra["deflate"] = nulls
        ws, vs = eigh(mats, k=k, **extra, **kw)  # the solve: the core's own threads
        with glue_threads(1):
            for i, g in enumerate(members):
                w, v = torch.as_tensor(ws[i]), torch.as_tensor(vs[i])  # NumPy for SciPy in
                if nulls is not None:
                    w = torch.cat([w.new_zeros(nulls[i].shape[-1]), w])
                    v = torch.cat([nulls[i].to(v.dtype), v], dim=-1)
                n = int(lay.counts[g])
                count = torch.tensor([n])
                valid = torch.tensor([min(w.numel(), n)])
                index = torch.tensor([g])
                parts.append(Part(index, w[None], v[None], count, valid, w.numel() >= n, "sparse"))
    return parts


def _nodes(layout: Any, g: int) -> torch.Tensor:
    start, stop = int(layout.ptr[g]), int(layout.ptr[g + 1])
    return torch.arange(start, stop, device=layout.ptr.device)
