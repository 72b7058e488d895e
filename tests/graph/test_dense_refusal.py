"""A graph whose dense eigendecomposition would not fit is refused before anything is
densified: with ``max_memory``, or without it against the memory free here; the error names
the graph, its size and what it needed, and the features that read only the lowest
eigenpairs still run (the sparse path)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import spectra.graph._assemble as assemble
import spectra.graph._buckets as buckets
from spectra.core import InputError
from spectra.graph import heat_kernel_diagonal, laplacian_eigh, laplacian_pe
from spectra.graph._sparse_path import DENSE_BYTES_PER_ENTRY

from .graphs import batch_of, geometric_graph, random_graph

BIG = 3000


@pytest.fixture
def nothing_densified(monkeypatch):
    """Fail the test if any dense Laplacian is built (padded or as blocks)."""

    def refuse(*args, **kwargs):
        raise AssertionError("a dense Laplacian was built")

    for name in ("padded", "padded_subset", "dense_blocks"):
        monkeypatch.setattr(assemble.Entries, name, refuse)


def mixed_batch(big_n=BIG):
    rng = np.random.default_rng(7)
    graphs = [(*random_graph(rng, int(n)), int(n)) for n in rng.integers(10, 30, size=5)]
    big, _ = geometric_graph(big_n, seed=3, degree=10)
    graphs.insert(3, (big, None, big_n))
    return graphs


@pytest.mark.parametrize("call", ["laplacian_eigh", "heat_kernel_diagonal"])
def test_full_spectrum_of_a_graph_beyond_max_memory_is_refused(call, nothing_densified):
    ei, _, batch, _ = batch_of(mixed_batch())
    need = DENSE_BYTES_PER_ENTRY * BIG**2
    opts = {"max_memory": need // 4}
    with pytest.raises(InputError) as err:
        if call == "laplacian_eigh":
            laplacian_eigh(ei, batch=batch, eigh_options=opts)
        else:
            heat_kernel_diagonal(ei, times=[1.0], batch=batch, eigh_options=opts)
    text = str(err.value)
    assert text.startswith(f"graph 3 has {BIG:,} nodes: its dense eigendecomposition needs")
    assert "max_memory=" in text and "heat_kernel_diagonal(k=...)" in text
    assert "\n" not in text


def test_the_refusal_counts_the_largest_graph_only_and_fits_exactly():
    n = 300
    ei, _, batch, _ = batch_of(mixed_batch(n))
    need = DENSE_BYTES_PER_ENTRY * n**2
    # exactly the largest graph's working set fits: solved, as without max_memory
    spec = laplacian_eigh(ei, batch=batch, eigh_options={"max_memory": need})
    whole = laplacian_eigh(ei, batch=batch)
    torch.testing.assert_close(spec.eigenvalues, whole.eigenvalues, atol=1e-12, rtol=0)
    with pytest.raises(InputError, match="graph 3 has 300 nodes"):
        laplacian_eigh(ei, batch=batch, eigh_options={"max_memory": need - 1})


def test_without_max_memory_the_free_memory_decides(monkeypatch, nothing_densified):
    ei, _, batch, _ = batch_of(mixed_batch())
    free = DENSE_BYTES_PER_ENTRY * BIG**2 - 1
    monkeypatch.setattr(buckets, "available_memory", lambda device: free)
    with pytest.raises(InputError, match=r"graph 3 has 3,000 nodes.* free here"):
        laplacian_eigh(ei, batch=batch)


def test_lowest_eigenpairs_still_run_where_the_full_spectrum_is_refused():
    # the same batch, the same budget: laplacian_pe and heat_kernel_diagonal(k=...) take
    # the sparse path for the large graph and equal the per-graph results
    graphs = mixed_batch()
    ei, _, batch, sizes = batch_of(graphs)
    opts = {"max_memory": DENSE_BYTES_PER_ENTRY * BIG**2 // 4}
    pe = laplacian_pe(ei, k=4, batch=batch, dtype=torch.float64, eigh_options=opts)
    heat = heat_kernel_diagonal(ei, times=[5.0], batch=batch, k=6, dtype=torch.float64,
                                eigh_options=opts)  # fmt: skip
    ptr = np.cumsum([0, *sizes])
    big, _, n = graphs[3]
    alone = laplacian_pe(big, n, k=4, dtype=torch.float64)
    torch.testing.assert_close(pe.pe[ptr[3] : ptr[4]], alone.pe, atol=1e-7, rtol=0)
    alone_heat = heat_kernel_diagonal(big, n, times=[5.0], k=6, dtype=torch.float64)
    torch.testing.assert_close(heat[ptr[3] : ptr[4]], alone_heat, atol=1e-9, rtol=0)


def test_a_graph_kept_dense_by_sparse_from_names_that_option(monkeypatch, nothing_densified):
    ei, _, batch, _ = batch_of(mixed_batch())
    monkeypatch.setattr(buckets, "available_memory", lambda device: 1 << 20)
    with pytest.raises(InputError, match=r"graph 3 .*sparse_from"):
        laplacian_pe(ei, k=4, batch=batch, eigh_options={"sparse_from": 10**9})
