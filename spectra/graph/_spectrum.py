"""The eigenpairs of many graph Laplacians: similar small graphs in one padded core call,
the rest through the core's ragged path (memory ``sum n_g^2``, never ``G n_max^2``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import nullcontext
from typing import Any, NamedTuple

import numpy as np
import torch

from ..core import eigh, fix_gauge
from ._assemble import Entries, laplacian_entries, require_undirected
from ._buckets import (
    DENSE_ONE_THREAD_MAX_N,
    _dense_cost,
    fit_budget,
    overlapped,
    padded_members,
    ragged_chunks,
    refuse_oversized,
)
from ._components import (  # noqa: F401  (re-exported: the tests' names)
    PROPAGATE_MAX_N,
    REACH_MAX_N,
    _propagated_components,
    count_edge_components,
    edge_components,
)
from ._layout import (
    Edges,
    Layout,
    check_normalization,
    glue_threads,
    graph_input,
    to_numpy_fields,
)
from ._overlap import Job, run_jobs
from ._parts import GraphSpectra, Part
from ._sparse_path import (
    Lowest,
    core_has_sparse,
    dense_seconds,
    dense_wanted,
    partial_solves,
    sparse_candidates,
    sparse_groups,
    sparse_parts,
    sparse_seconds,
    split_options,
)


class LaplacianSpectrum(NamedTuple):
    """Padded eigendecomposition of a batch of graph Laplacians.

    ``eigenvalues`` ``(G, n_max)`` ascending per graph; ``eigenvectors`` ``(G, n_max, n_max)``
    (columns). Column ``j`` of graph ``g`` is real for ``j < num_nodes[g]``; padded columns
    hold value 0 and a zero vector, padded rows are zero. ``num_components`` counts the
    connected components of each graph (isolated nodes included), which is the
    multiplicity of the eigenvalue 0. ``degree`` is ``(G, n_max)``. ``normalization`` is
    the Laplacian's (``"rw"`` eigenvectors are ``D``-orthonormal, the others orthonormal).
    """

    eigenvalues: torch.Tensor
    eigenvectors: torch.Tensor
    num_nodes: torch.Tensor
    num_components: torch.Tensor
    degree: torch.Tensor
    normalization: str | None = "sym"

    def column_mask(self) -> Any:
        """``(G, n_max)`` bool: True for the real (non-padding) eigenpairs."""
        w = torch.as_tensor(self.eigenvalues)
        ar = torch.arange(w.shape[-1], device=w.device)
        mask = ar < torch.as_tensor(self.num_nodes).to(w.device).unsqueeze(-1)
        return mask.numpy() if isinstance(self.eigenvalues, np.ndarray) else mask


def _pad_above(lap: torch.Tensor, counts: torch.Tensor, bound: torch.Tensor | None) -> torch.Tensor:
    """Put the padded rows' diagonal above each graph's spectrum (Gershgorin, or ``bound``)."""
    n = lap.shape[-1]
    if counts.numel() == 1 and int(counts[0]) == n:  # one graph: no padding
        return lap
    if bool((counts == n).all()):  # every graph fills the block: no padding
        return lap
    mask = torch.arange(n, device=lap.device) < counts.to(lap.device).unsqueeze(-1)
    if bound is None:  # Gershgorin: |lambda| <= max row abs sum
        bound = lap.abs().sum(-1).amax(-1)
    shift = ((bound + 1.0).unsqueeze(-1) * ~mask).to(lap.dtype)
    if lap.requires_grad:
        return lap + torch.diag_embed(shift)
    lap.diagonal(dim1=-2, dim2=-1).add_(shift)  # our own buffer: the diagonal in place
    return lap


def _rw(part: Part, degree: torch.Tensor, layout: Layout) -> Part:
    """``rw`` eigenvectors from the ``sym`` ones: scaled by ``D^{-1/2}`` and re-gauged."""
    rows, nodes = part.rows(layout)
    deg = torch.zeros(rows.shape, dtype=degree.dtype, device=degree.device)
    deg[rows] = degree[nodes]
    scale = torch.where(deg > 0, deg, torch.ones_like(deg)).rsqrt()
    v = fix_gauge(part.eigenvectors * scale.unsqueeze(-1))
    return Part(part.graphs, part.eigenvalues, v, part.counts, part.valid, part.complete, part.path)


def solve_entries(
    entries: Entries,
    degree: torch.Tensor,
    components: torch.Tensor,
    normalization: str | None,
    bound_two: bool,
    eigh_kw: Mapping[str, Any],
    lowest: Lowest | None = None,
    labels: torch.Tensor | None = None,
    null_weight: torch.Tensor | None = None,
) -> GraphSpectra:
    """The eigenpairs of every graph's matrix: the similar small graphs in one padded call,
    the others in one ragged call (the core buckets them by size), and, when a feature
    needs only the ``lowest`` eigenpairs, the large graphs on the sparse path (``labels``
    and ``null_weight``: the null space to deflate, see :mod:`._sparse_path`). Where there
    are both sparse and dense graphs, the calls overlap over the core's workers
    (:func:`._buckets.overlapped`): each group the sparse path solves together is a job
    (all of them one call, one job, where they cost at most 1.6x the dense ones,
    :func:`_sparse_together`), the ragged graphs are cut into guided chunks
    (:func:`._buckets.ragged_chunks`), and
    the workers take the jobs costliest first (:func:`._overlap.run_jobs`), every core
    call inside on one kernel thread (``workers=1``). In turn otherwise, as one call each.

    Measured on the 2-core machine, D&D-like batch (128 graphs, 89 of them by the partial
    dense solve, 6 on the sparse path), per-thread CPU time of the jobs at load ~5: the
    busier worker 0.33-0.37 s of 0.71 s, against 0.53 s on the critical path in turn; the
    wall time under that load moved 0.96-1.18x (the other session held a core). After the
    Lanczos changes of 2026-12-02 evening (12 graphs on the sparse path from 513 nodes):
    the sparse job 0.22-0.24 s and the dense jobs 0.23-0.24 s of CPU per call."""
    lay = entries.layout
    kw, sparse_kw, sparse_from = split_options(eigh_kw)
    kw.setdefault("check", False)  # finite and symmetric by construction (checked)
    counts = lay.counts.tolist()
    comps = components.tolist()
    budget = kw.get("max_memory")
    budget = None if budget is None else int(budget)
    big = sparse_candidates(counts, comps, lowest, sparse_from, budget)
    if big and not core_has_sparse():
        big = []
    rest = sorted(set(range(lay.num_graphs)) - set(big))
    values = entries.values
    refuse_oversized(rest, counts, budget, values.device, lowest)
    k_dense = dense_wanted(lowest, [comps[g] for g in rest])
    unpadded = set(partial_solves(counts, rest, k_dense, values.dtype, values.device))
    cut = padded_members([counts[g] for g in rest if g not in unpadded])
    small = [g for g in rest if 0 < counts[g] <= cut and g not in unpadded]
    large = [g for g in rest if counts[g] > cut or g in unpadded]
    workers = overlapped(entries, big, rest, budget, kw)
    if workers > 1:
        kw = {**kw, "workers": 1}  # one kernel thread per job, no nested fan-out
    jobs: list[Job[Part]] = []
    groups = sparse_groups(big, counts, comps, lowest) if workers > 1 else [big] if big else []

    def sparse_call(members: list[int]) -> Callable[[], list[Part]]:
        assert lowest is not None
        return _sparse_job(
            entries, members, lowest, comps, labels, null_weight, bound_two, {**kw, **sparse_kw}
        )

    for members in groups:  # overlapped: one job per call the core solves together
        jobs.append(Job(sum(sparse_seconds(counts[g]) for g in members), sparse_call(members)))
    if small:  # one padded call, or several where its dense buffers exceed max_memory
        chunks = fit_budget(small, [cut * cut] * len(small), budget)
        everyone = len(small) == lay.num_graphs and len(chunks) == 1
        for chunk in chunks:
            k = dense_wanted(lowest, [comps[g] for g in chunk])
            cost = 1e-6 * len(chunk) * float(_dense_cost(cut))
            jobs.append(Job(cost, _padded_job(entries, chunk, everyone, bound_two, kw, k)))
    if large:  # the ragged path, its dense blocks cut to fit max_memory as well
        for chunk in ragged_chunks(large, counts, comps, lowest, budget, workers, jobs):
            k = dense_wanted(lowest, [comps[g] for g in chunk])
            cost = sum(dense_seconds(counts[g], k) for g in chunk)
            jobs.append(Job(cost, _ragged_job(entries, chunk, kw, k)))
    jobs = _sparse_together(jobs, groups, sparse_call)
    parts = run_jobs(jobs, workers)
    if normalization == "rw":
        parts = [_rw(p, degree, lay) for p in parts]
    return GraphSpectra(lay, tuple(parts), components, degree, normalization, entries.values.dtype)


#: the sparse calls run as one call (one job) up to this many times the dense jobs' cost
#: (estimates). Measured on the 2-core machine, D&D-like batch (128 graphs) with random
#: geometric graphs added, medians of 8 interleaved calls, one call against the groups'
#: separate jobs (``benchmarks/results/sparse-together-2026-12-05.json``): estimated ratio
#: 1.0 (the batch alone) 266 against 278 ms, 1.21 (a 3,000-node graph added) 328 against
#: 349, 1.55 (one of 8,000) 343 against 362; 1.83 (four of 3,000) 450 against 417, 2.09
#: (two of 8,000) 457 against 435, 2.35 (one of 20,000) 481 against 458.
TOGETHER_RATIO = 1.6


def _sparse_together(
    jobs: list[Job[Part]],
    groups: list[list[int]],
    call: Callable[[list[int]], Callable[[], list[Part]]],
) -> list[Job[Part]]:
    """The first ``len(groups)`` jobs (one sparse call per group) as one job, one call of
    the core for all their graphs (``call(members)``), where together they are estimated to
    cost at most :data:`TOGETHER_RATIO` times the dense jobs after them: each sparse call
    is a Python loop around small LAPACK calls and sparse solves, and two at once slow each
    other down (D&D-like batch: the call of five graphs of 800-1,000 nodes took 0.085 s
    alone, 0.16-0.22 s of CPU beside the 5,748-node graph's), while the dense partial solves
    (LAPACK, the GIL released) fill the other core meanwhile. Where the sparse calls are
    the larger part by more than that, they stay separate jobs (both cores on them).

    >>> run = lambda members: lambda: members
    >>> jobs = [Job(0.1, run([0])), Job(0.2, run([1, 2])), Job(0.4, run([3]))]
    >>> [(j.seconds, j.run()) for j in _sparse_together(jobs, [[0], [1, 2]], run)]
    [(0.30000000000000004, [0, 1, 2]), (0.4, [3])]
    >>> len(_sparse_together(jobs[:2] + [Job(0.1, run([3]))], [[0], [1, 2]], run))
    3
    """
    head, rest = jobs[: len(groups)], jobs[len(groups) :]
    total = sum(j.seconds for j in head)
    if len(head) < 2 or total > TOGETHER_RATIO * sum(j.seconds for j in rest):
        return jobs
    return [Job(total, call([g for members in groups for g in members])), *rest]


def _sparse_job(
    entries: Entries,
    graphs: list[int],
    lowest: Lowest,
    comps: list[int],
    labels: torch.Tensor | None,
    null_weight: torch.Tensor | None,
    bound_two: bool,
    kw: dict[str, Any],
) -> Callable[[], list[Part]]:
    def run() -> list[Part]:
        got = sparse_parts(
            entries, graphs, lowest, [comps[g] for g in graphs], labels, null_weight,
            bound_two, kw,
        )  # fmt: skip
        assert got is not None  # core_has_sparse() was asked first
        return got

    return run


def _padded_job(
    entries: Entries,
    graphs: list[int],
    everyone: bool,
    bound_two: bool,
    kw: dict[str, Any],
    k: int | None,
) -> Callable[[], list[Part]]:
    def run() -> list[Part]:
        with glue_threads(1):
            return [_padded_part(entries, graphs, everyone, bound_two, kw, k)]

    return run


def _ragged_job(
    entries: Entries, graphs: list[int], kw: dict[str, Any], k: int | None
) -> Callable[[], list[Part]]:
    def run() -> list[Part]:
        biggest = max(int(entries.layout.counts[g]) for g in graphs)
        with glue_threads(1) if biggest <= DENSE_ONE_THREAD_MAX_N else nullcontext():
            return _ragged_parts(entries, graphs, kw, k)

    return run


def _padded_part(
    entries: Entries,
    graphs: list[int],
    everyone: bool,
    bound_two: bool,
    kw: dict[str, Any],
    k: int | None = None,
) -> Part:
    """One padded core call (``k``: only the ``k`` lowest eigenpairs of each graph)."""
    lay = entries.layout
    index = torch.as_tensor(graphs, dtype=torch.long, device=lay.counts.device)
    counts = lay.counts[index]
    lap = entries.padded() if everyone else entries.padded_subset(graphs)
    n = lap.shape[-1]
    bound = None
    if bound_two:
        bound = torch.full((len(graphs),), 2.0, dtype=lap.real.dtype, device=lap.device)
    m = k if k is not None and k < n else None  # the padding sits above every spectrum
    w, v = eigh(_pad_above(lap, counts, bound), k=m, **kw)
    valid = counts if m is None else counts.clamp_max(m)
    if not bool((counts == n).all()):  # padded rows and columns to zero
        ar = torch.arange(n, device=lap.device)
        rows = ar < counts.to(lap.device).unsqueeze(-1)
        cols = ar[: w.shape[-1]] < counts.to(lap.device).unsqueeze(-1)
        v = v * (rows.unsqueeze(-1) & cols.unsqueeze(-2))
        w = w * cols
    complete = m is None or bool((counts <= m).all())
    return Part(index, w, v, counts, valid, complete, "padded")


def _ragged_parts(
    entries: Entries, graphs: list[int], kw: dict[str, Any], k: int | None = None
) -> list[Part]:
    """One ragged core call (``k``: only the ``k`` lowest eigenpairs of each graph, where
    every graph has more): those ``(n_g, k)`` results in one part, zero-padded to the
    largest graph of the call (``k`` columns each: small); every eigenpair: the results of
    equal size stacked into one part each (never padded to ``n_max^2``)."""
    lay = entries.layout
    counts_all = [int(lay.counts[g]) for g in graphs]
    m = k if k is not None and k < min(counts_all) else None
    ws, vs = eigh(entries.dense_blocks(graphs), k=m, **kw)
    if m is not None:  # a column per wanted eigenpair: one part for the whole call
        counts = torch.tensor(counts_all, dtype=torch.long)
        v = torch.nn.utils.rnn.pad_sequence(list(vs), batch_first=True)
        index = torch.as_tensor(graphs, dtype=torch.long)
        return [Part(index, torch.stack(ws), v, counts, counts.clamp_max(m), False, "ragged")]
    by_size: dict[int, list[int]] = {}
    for i, n in enumerate(counts_all):
        by_size.setdefault(n, []).append(i)
    parts = []
    for n, members in by_size.items():
        index = torch.as_tensor([graphs[i] for i in members], dtype=torch.long)
        counts = torch.full((len(members),), n, dtype=torch.long)
        w = torch.stack([ws[i] for i in members])
        v = torch.stack([vs[i] for i in members])
        parts.append(Part(index, w, v, counts, counts, True, "ragged"))
    return parts


def edge_spectra(
    edges: Edges,
    normalization: str | None,
    *,
    isolated_one: bool = False,
    undirected_tol: float | None = 1e-10,
    lowest: Lowest | None = None,
    **eigh_kw: Any,
) -> GraphSpectra:
    """The Laplacians of ``edges`` (``rw``: solved through ``sym``, same eigenvalues, the
    eigenvectors scaled by ``D^{-1/2}``, 1 at isolated nodes, and re-gauged)."""
    check_normalization(normalization)
    sym_norm = "sym" if normalization == "rw" else normalization
    with glue_threads(1):  # elementwise work over all edges: one kernel thread
        if undirected_tol is not None:
            require_undirected(
                Entries(edges.layout, edges.src, edges.dst, edges.weight), undirected_tol
            )
        entries, deg = laplacian_entries(edges, sym_norm, isolated_one=isolated_one)
        comps, labels = edge_components(edges)
        signed = bool((edges.weight < 0).any())
        bound_two = sym_norm == "sym" and not signed
        if signed or (isolated_one and lowest is not None and lowest.deflate):
            lowest = None  # the null space is not the components': every eigenpair, densely
        null_weight = None
        if lowest is not None and lowest.deflate:
            null_weight = deg.sqrt() if sym_norm == "sym" else torch.ones_like(deg)
            null_weight = torch.where(deg > 0, null_weight, torch.ones_like(deg))
    return solve_entries(
        entries, deg, comps, normalization, bound_two, eigh_kw, lowest, labels, null_weight
    )


def padded_spectrum(spec: GraphSpectra) -> LaplacianSpectrum:
    """The public padded form (memory ``G n_max^2``)."""
    lay = spec.layout
    w, v = spec.padded()
    deg = spec.degree.new_zeros((lay.num_graphs, lay.n_max))
    if lay.num_nodes:
        deg = deg.index_put((lay.batch, lay.local), spec.degree)
    return LaplacianSpectrum(w, v, lay.counts, spec.num_components, deg, spec.normalization)


def laplacian_eigh(
    edge_index: Any,
    num_nodes: int | None = None,
    edge_weight: Any = None,
    normalization: str | None = "sym",
    *,
    batch: Any = None,
    num_graphs: int | None = None,
    dtype: torch.dtype = torch.float64,
    device: Any = "cpu",
    eigh_options: Mapping[str, Any] | None = None,
) -> LaplacianSpectrum:
    """All eigenpairs of the Laplacians of many graphs, through batched ``spectra.eigh`` calls.

    Graphs of similar size are solved in one padded call, graphs of very different sizes
    through the core's ragged path (each at its own size); the result is padded to the
    largest graph (``G n_max^2`` numbers: for large graphs of mixed sizes prefer the
    features, e.g. :func:`spectra.graph.laplacian_pe`, which never pad).

    Parameters
    ----------
    edge_index, num_nodes, edge_weight, normalization, batch, num_graphs :
        as :func:`spectra.graph.laplacian`; graphs must be undirected.
    dtype : precision of the solve (default float64).
    eigh_options : execution options passed to :func:`spectra.eigh` (``workers``,
        ``chunk_size``, ``max_memory``, ``strategy``).
    device : where to solve (default ``"cpu"``; ``None``: where ``edge_index`` lives).

    Returns
    -------
    LaplacianSpectrum
        padded per graph; eigenvectors in the spectra gauge (largest-|entry| positive). With
        ``"rw"`` the eigenvectors are those of ``I - D^{-1} A``, ``D``-orthonormal. NumPy
        arrays for a NumPy ``edge_index``.

    Examples
    --------
    >>> import torch
    >>> from spectra.graph import laplacian_eigh
    >>> edges = torch.tensor([[0, 1, 1, 2, 3, 4], [1, 0, 2, 1, 4, 3]])
    >>> spec = laplacian_eigh(edges, batch=torch.tensor([0, 0, 0, 1, 1]))
    >>> spec.eigenvalues[:, 1:].round(decimals=8)
    tensor([[1., 2.],
            [2., 0.]], dtype=torch.float64)
    >>> spec.num_components
    tensor([1, 1])
    """
    if not dtype.is_floating_point:
        raise TypeError(f"dtype must be float32 or float64, got {dtype}")
    edges, _, from_numpy, _ = graph_input(
        edge_index, edge_weight, batch, num_nodes, num_graphs, device, dtype
    )
    with glue_threads(edges.layout.n_max):
        spec = padded_spectrum(edge_spectra(edges, normalization, **dict(eigh_options or {})))
    return to_numpy_fields(spec) if from_numpy else spec
