"""Graphs solved densely ask the core for the ``k`` (+ components) lowest eigenpairs only,
which its partial solve computes where its planner takes it (``lapack-subset``); the
features equal those of the full decomposition."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from spectra.graph import heat_kernel_diagonal, laplacian_pe
from spectra.graph._layout import graph_input
from spectra.graph._sparse_path import Lowest, partial_solves
from spectra.graph._spectrum import edge_spectra

from .graphs import batch_of, dense_adj, random_graph, ref_eigh, ref_laplacian


def graphs(seed: int, sizes) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for n in sizes:
        ei, ew = random_graph(rng, n, p=4.0 / n, weighted=True)
        out.append((ei, ew, n))
    return out


def test_partial_solves_are_the_sizes_the_core_windows():
    counts = [20, 40, 150, 300]
    cpu = torch.device("cpu")
    assert partial_solves(counts, [0, 1, 2, 3], 9, torch.float64, cpu) == [2, 3]
    assert partial_solves(counts, [0, 1, 2, 3], None, torch.float64, cpu) == []
    assert partial_solves(counts, [3], 299, torch.float64, cpu) == []


@pytest.mark.parametrize("convention", ["spectra", "pyg"])
def test_pe_of_a_batch_through_the_partial_solve_matches_scipy(convention, windows):
    gs = graphs(3, [150, 210, 260, 35, 180])
    ei, ew, batch, sizes = batch_of(gs)
    k = 6
    out = laplacian_pe(ei, k=k, edge_weight=ew, batch=batch, dtype=torch.float64,
                       convention=convention)  # fmt: skip
    assert windows and {n for n, _, _ in windows} >= {150, 180, 210, 260}
    assert all(lo == 0 and hi < 20 for _, lo, hi in windows)  # k + components, not n
    ptr = np.cumsum([0, *sizes])
    for g, (gei, gew, n) in enumerate(gs):
        lap = ref_laplacian(dense_adj(gei, n, gew), "sym")
        w, v = ref_eigh(lap)
        first = 1 if convention == "pyg" else int(out.num_components[g])
        np.testing.assert_allclose(out.eigenvalues[g].numpy(), w[first : first + k], atol=1e-10)
        pe = out.pe[ptr[g] : ptr[g + 1]].numpy()
        ref = v[:, first : first + k]
        if convention == "pyg":  # random signs: compare the spaces column by column
            pe = pe * np.sign(np.sum(pe * ref, axis=0))
        else:  # the core's gauge: largest-|entry| positive
            ref = ref * np.sign(ref[np.abs(ref).argmax(0), np.arange(k)])
        np.testing.assert_allclose(pe, ref, atol=1e-7)


def test_heat_features_keep_every_eigenpair(windows):
    gs = graphs(4, [150, 200])
    ei, ew, batch, _ = batch_of(gs)
    heat = heat_kernel_diagonal(ei, edge_weight=ew, batch=batch, times=[0.5], k=4,
                                dtype=torch.float64)  # fmt: skip
    assert windows == []  # the heat kernel's diagonal sums over the whole spectrum
    full = heat_kernel_diagonal(ei, edge_weight=ew, batch=batch, times=[0.5], dtype=torch.float64)
    torch.testing.assert_close(heat, full, atol=1e-10, rtol=0)


def test_partial_parts_say_they_are_incomplete():
    gs = graphs(5, [150, 220])
    ei, ew, batch, _ = batch_of(gs)
    edges, *_ = graph_input(ei, ew, batch, None, None, "cpu", torch.float64)
    part = edge_spectra(edges, "sym", lowest=Lowest(5, deflate=True)).parts
    assert all(not p.complete and p.eigenvectors.shape[-1] < 20 for p in part)
    whole = edge_spectra(edges, "sym", lowest=Lowest(5, deflate=True, partial=False)).parts
    assert all(p.complete for p in whole)


def test_a_ragged_partial_call_is_one_zero_padded_part(windows):
    gs = graphs(6, [150, 210, 260, 180])  # four sizes, each windowed
    ei, ew, batch, sizes = batch_of(gs)
    edges, *_ = graph_input(ei, ew, batch, None, None, "cpu", torch.float64)
    spec = edge_spectra(edges, "sym", lowest=Lowest(5, deflate=True), workers=1)
    assert {n for n, _, _ in windows} == set(sizes)  # the partial solve ran for each
    assert spec.paths == ("ragged",)  # one part for the call, not one per size
    (part,) = spec.parts
    assert part.eigenvectors.shape[-2] == max(sizes) and not part.complete
    for i, n in enumerate(part.counts.tolist()):
        assert not part.eigenvectors[i, n:].any()  # padded rows are zero
    pe, mask, vals = spec.columns(spec.num_components, 5)
    ptr = np.cumsum([0, *sizes])
    for g, (gei, gew, n) in enumerate(gs):
        w, v = ref_eigh(ref_laplacian(dense_adj(gei, n, gew), "sym"))
        c = int(spec.num_components[g])
        np.testing.assert_allclose(vals[g].numpy(), w[c : c + 5], rtol=1e-9, atol=1e-12)
        got, ref = pe[ptr[g] : ptr[g + 1]].numpy(), v[:, c : c + 5]
        np.testing.assert_allclose(np.abs(got.T @ ref), np.eye(5), atol=1e-7)  # same vectors
    assert bool(mask.all())


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_columns_graph_by_graph_equal_the_masked_gather(dtype, monkeypatch):
    """Parts of few graphs are written slice by slice (``_sliced_columns``); the same
    columns as the padded gather over the whole part, for graphs with fewer eigenpairs than
    asked (5 nodes, 2 components), a padded part and a ragged one, with the components
    dropped and without."""
    from spectra.graph import _parts

    gs = graphs(9, [150, 210, 5, 30, 260, 31, 2])
    ei, ew, batch, _ = batch_of(gs)
    edges, *_ = graph_input(ei, ew, batch, None, None, "cpu", dtype)
    spec = edge_spectra(edges, "sym", lowest=Lowest(6, deflate=True), workers=1)
    assert {"ragged", "padded"} <= set(spec.paths)
    seen = []
    real = _parts._sliced_columns
    monkeypatch.setattr(_parts, "_sliced_columns", lambda *a: seen.append(1) or real(*a))
    for first in (spec.num_components, torch.zeros_like(spec.num_components)):
        sliced = spec.columns(first, 6)
        monkeypatch.setattr(_parts, "FEW_GRAPHS", 0)  # every part by the masked gather
        gathered = spec.columns(first, 6)
        monkeypatch.setattr(_parts, "FEW_GRAPHS", 16)
        for a, b in zip(sliced, gathered, strict=True):
            assert torch.equal(a, b)
        assert not bool(sliced[1].all())  # some graph lacks columns: the mask says so
    assert len(seen) == 2 * len(spec.parts)
