"""A Batch of mixed sizes is never padded to its largest graph: similar small graphs go in
one padded core call, the others through the core's ragged path, each at its own size."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, Data

import spectra.graph._spectrum as spectrum
from spectra.graph import (
    LaplacianPE,
    MagneticLaplacianPE,
    RandomWalkPE,
    heat_kernel_diagonal,
    laplacian_eigh,
    laplacian_pe,
    magnetic_laplacian_pe,
    random_walk_pe,
)
from spectra.graph._spectrum import padded_members

from .graphs import assert_batch_equals_singles, batch_of, random_graph


def spy(monkeypatch):
    """Record every core call of the dense paths: a shape, or the list of shapes."""
    calls = []
    real = spectrum.eigh

    def counting(a, *args, **kwargs):
        calls.append([tuple(x.shape) for x in a] if isinstance(a, list) else tuple(a.shape))
        return real(a, *args, **kwargs)

    monkeypatch.setattr(spectrum, "eigh", counting)
    return calls


def mixed(rng, small=(20, 50), count=12, large=(160,), weighted=True):
    graphs = [(*random_graph(rng, int(n), weighted=weighted), int(n))
              for n in rng.integers(small[0], small[1], size=count)]  # fmt: skip
    for n in large:
        graphs.append((*random_graph(rng, n, p=0.05, weighted=weighted), n))
    perm = rng.permutation(len(graphs))
    return [graphs[i] for i in perm]


def test_padded_members_rule():
    assert padded_members([25] * 100) == 25  # one size: one padded call
    assert padded_members([5, 10, 30, 2000]) == 30  # the large graph is never padded to
    assert padded_members([]) == 0
    sizes = [20, 30, 40, 50] * 10 + [5000]
    assert padded_members(sizes) == 50


def test_mixed_batch_is_not_padded_to_the_largest(monkeypatch):
    rng = np.random.default_rng(60)
    graphs = mixed(rng, small=(20, 46))  # (from 48 nodes k = 6 takes the partial solve)
    ei, ew, batch, sizes = batch_of(graphs)
    calls = spy(monkeypatch)
    out = laplacian_pe(ei, k=6, edge_weight=ew, batch=batch, dtype=torch.float64)
    n_max = max(sizes)
    small = sorted(n for n in sizes if n < n_max)
    # the small graphs in one padded call at their own largest size, the large one alone
    assert calls[0] == (len(small), max(small), max(small))
    assert calls[1] == [(n_max, n_max)]
    for shape in calls:
        if isinstance(shape, tuple):
            assert shape[-1] < n_max
    # equals each graph solved on its own
    ptr = np.cumsum([0, *sizes])
    for g, (gei, gew, n) in enumerate(graphs):
        one = laplacian_pe(gei, n, k=6, edge_weight=gew, dtype=torch.float64)
        torch.testing.assert_close(out.pe[ptr[g] : ptr[g + 1]], one.pe, atol=1e-9, rtol=0)
        assert torch.equal(out.mask[g], one.mask[0])
        torch.testing.assert_close(out.eigenvalues[g], one.eigenvalues[0], atol=1e-12, rtol=0)
        assert torch.equal(out.groups[g], one.groups[0])


def test_memory_grows_with_the_sum_of_squares(monkeypatch):
    # 30 small graphs and one of 400 nodes: no core call ever sees 31 x 400 x 400
    rng = np.random.default_rng(61)
    graphs = mixed(rng, count=30, large=(400,), weighted=False)
    ei, _, batch, sizes = batch_of(graphs)
    calls = spy(monkeypatch)
    laplacian_pe(ei, k=4, batch=batch)
    entries = 0
    for shape in calls:
        for s in shape if isinstance(shape, list) else [shape]:
            entries += int(np.prod(s))
    assert entries <= 2 * sum(n * n for n in sizes)
    assert entries < len(sizes) * max(sizes) ** 2 / 10


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_transform_on_a_mixed_batch_equals_per_graph(dtype):
    rng = np.random.default_rng(62)
    datas = []
    for gei, gew, n in mixed(rng, count=8, large=(150, 180)):
        datas.append(Data(edge_index=gei, edge_weight=gew, num_nodes=n))
    t = LaplacianPE(5, eigenvalues_attr="ev", groups_attr="gr", heat_times=[0.5, 3.0], dtype=dtype)
    singles = [t(d) for d in datas]
    batch = t(Batch.from_data_list(datas))
    atol = 1e-9 if dtype == torch.float64 else 1e-5
    names = ("laplacian_eigenvector_pe", "laplacian_eigenvector_pe_mask", "ev", "gr",
             "heat_kernel_diag")  # fmt: skip
    assert_batch_equals_singles(batch, singles, names, atol=atol)


@pytest.mark.parametrize("normalization", ["sym", "rw", None])
def test_spectra_heat_and_walks_on_mixed_sizes(normalization):
    rng = np.random.default_rng(63)
    graphs = mixed(rng, count=6, large=(130,))
    ei, ew, batch, sizes = batch_of(graphs)
    spec = laplacian_eigh(ei, edge_weight=ew, batch=batch, normalization=normalization)
    heat = heat_kernel_diagonal(ei, edge_weight=ew, batch=batch, normalization=normalization,
                                times=[0.3, 2.0], dtype=torch.float64)  # fmt: skip
    walks = random_walk_pe(ei, edge_weight=ew, batch=batch, walk_length=5, dtype=torch.float64)
    ptr = np.cumsum([0, *sizes])
    for g, (gei, gew, n) in enumerate(graphs):
        one = laplacian_eigh(gei, n, gew, normalization)
        torch.testing.assert_close(spec.eigenvalues[g, :n], one.eigenvalues[0], atol=1e-12, rtol=0)
        assert not spec.eigenvalues[g, n:].any() and not spec.eigenvectors[g, n:].any()
        np.testing.assert_allclose(  # simple spectra: the same vectors (the gauge)
            spec.eigenvectors[g, :n, :n].numpy(), one.eigenvectors[0].numpy(), atol=1e-8
        )
        h = heat_kernel_diagonal(gei, n, [0.3, 2.0], edge_weight=gew, dtype=torch.float64,
                                 normalization=normalization)  # fmt: skip
        torch.testing.assert_close(heat[ptr[g] : ptr[g + 1]], h, atol=1e-12, rtol=0)
        rw = random_walk_pe(gei, n, 5, edge_weight=gew, dtype=torch.float64)
        torch.testing.assert_close(walks[ptr[g] : ptr[g + 1]], rw, atol=1e-12, rtol=0)


def test_magnetic_and_walk_transforms_on_mixed_sizes():
    rng = np.random.default_rng(64)
    datas = []
    for n in (5, 9, 7, 120):
        src = rng.integers(0, n, size=3 * n)
        dst = rng.integers(0, n, size=3 * n)
        datas.append(Data(edge_index=torch.from_numpy(np.stack([src, dst])), num_nodes=n))
    t = MagneticLaplacianPE(4, q=0.1, dtype=torch.float64)
    singles = [t(d) for d in datas]
    batch = t(Batch.from_data_list(datas))
    names = ("magnetic_laplacian_pe", "magnetic_laplacian_pe_mask")
    assert_batch_equals_singles(batch, singles, names, atol=1e-9)
    ei, _, bt, sizes = batch_of([(d.edge_index, None, d.num_nodes) for d in datas])
    whole = magnetic_laplacian_pe(ei, k=4, q=0.1, batch=bt, dtype=torch.float64)
    assert whole.pe.shape == (sum(sizes), 4)
    undirected = [Data(edge_index=torch.cat([d.edge_index, d.edge_index.flip(0)], 1),
                       num_nodes=d.num_nodes) for d in datas]  # fmt: skip
    w = RandomWalkPE(4, dtype=torch.float64)
    assert_batch_equals_singles(
        w(Batch.from_data_list(undirected)), [w(d) for d in undirected], ("random_walk_pe",), 1e-12
    )


def test_cost_model_sends_large_graphs_to_the_sparse_path():
    from spectra.core._sparse._plan import DENSE_MAX_N
    from spectra.graph._sparse_path import (
        CORE_DENSE_MAX_N,
        DENSE_BYTES_PER_ENTRY,
        dense_seconds,
        sparse_seconds,
        takes_sparse,
    )

    # the measured models cross below the core's dense bound: the sparse path from there
    assert CORE_DENSE_MAX_N == DENSE_MAX_N
    assert sparse_seconds(450) < dense_seconds(450, 9) and sparse_seconds(300) > dense_seconds(300)
    assert not takes_sparse(450, None, None) and not takes_sparse(512, None, None, 9)
    assert takes_sparse(513, None, None) and takes_sparse(513, None, None, 9)
    assert all(takes_sparse(n, None, None) for n in range(513, 30000, 97))  # monotone
    assert all(takes_sparse(n, None, None, 9) for n in range(513, 30000, 97))
    assert takes_sparse(300, 200, None) and not takes_sparse(5000, 10**9, None)  # sparse_from
    # a dense working set beyond max_memory goes sparse whatever sparse_from says
    n = 400
    assert takes_sparse(n, 10**9, DENSE_BYTES_PER_ENTRY * n * n - 1)
    assert not takes_sparse(n, 10**9, DENSE_BYTES_PER_ENTRY * n * n)


def dense_bytes(calls):
    """Bytes of dense matrix entries each recorded core call was handed (float64)."""
    out = []
    for shape in calls:
        shapes = shape if isinstance(shape, list) else [shape]
        out.append(sum(8 * int(np.prod(s)) for s in shapes))
    return out


def test_padding_beyond_max_memory_never_happens(monkeypatch):
    # 30 small graphs and one of ~1,500 nodes: padding all of them to the large one would
    # need 31 x 1500^2 x 8 bytes (558 MB), far beyond max_memory; the small graphs go in one
    # padded call of their own size, the large one on the sparse path
    import spectra.graph._sparse_path as sparse_path

    from .graphs import geometric_graph

    rng = np.random.default_rng(63)
    # (below 48 nodes: from there k = 4 takes the partial solve, unpadded)
    graphs = [(*random_graph(rng, int(m)), int(m)) for m in rng.integers(20, 48, size=30)]
    big, _ = geometric_graph(1500, seed=8, degree=12)
    graphs.insert(11, (big, None, 1500))
    ei, _, batch, sizes = batch_of(graphs)
    budget = 32 * 2**20
    assert len(sizes) * max(sizes) ** 2 * 8 > 10 * budget
    dense = spy(monkeypatch)
    sparse = []
    real = sparse_path.eigh

    def counting(a, *args, **kwargs):
        if isinstance(a, list):  # not the one-time probe of core_has_sparse
            sparse.append([tuple(x.shape) for x in a])
        return real(a, *args, **kwargs)

    monkeypatch.setattr(sparse_path, "eigh", counting)
    opts = {"max_memory": budget}
    out = laplacian_pe(ei, k=4, batch=batch, dtype=torch.float64, eigh_options=opts)
    assert sparse == [[(1500, 1500)]]
    assert dense == [(30, max(sizes[:11] + sizes[12:]), max(sizes[:11] + sizes[12:]))]
    assert all(4 * b <= budget for b in dense_bytes(dense))  # DENSE_BYTES_PER_ENTRY: 4 x 8
    ptr = np.cumsum([0, *sizes])
    for g, (gei, gew, n) in enumerate(graphs):
        if n == 1500:
            continue
        one = laplacian_pe(gei, n, k=4, edge_weight=gew, dtype=torch.float64)
        torch.testing.assert_close(out.pe[ptr[g] : ptr[g + 1]], one.pe, atol=1e-9, rtol=0)
        assert torch.equal(out.mask[g], one.mask[0])


def test_dense_calls_are_cut_to_fit_max_memory(monkeypatch):
    # medium graphs kept dense (sparse_from out of reach): their dense blocks are handed
    # to the core in several calls, each within max_memory, with the same results
    rng = np.random.default_rng(64)
    graphs = mixed(rng, count=20, large=(150, 170, 190, 210), weighted=True)
    ei, ew, batch, _ = batch_of(graphs)
    whole = laplacian_pe(ei, k=5, edge_weight=ew, batch=batch, dtype=torch.float64,
                         eigh_options={"sparse_from": 10**9})  # fmt: skip
    budget = 32 * 2 * 210**2  # two of the medium graphs per call
    calls = spy(monkeypatch)
    cut = laplacian_pe(ei, k=5, edge_weight=ew, batch=batch, dtype=torch.float64,
                       eigh_options={"sparse_from": 10**9, "max_memory": budget})  # fmt: skip
    assert len(calls) >= 3
    assert all(4 * b <= budget or (isinstance(c, list) and len(c) == 1)
               for b, c in zip(dense_bytes(calls), calls, strict=True))  # fmt: skip
    for name in ("pe", "eigenvalues"):
        torch.testing.assert_close(getattr(cut, name), getattr(whole, name), atol=1e-9, rtol=0)
    for name in ("mask", "groups", "num_components"):
        assert torch.equal(getattr(cut, name), getattr(whole, name))


def test_components_of_many_small_graphs_match_scipy():
    # label propagation (graphs up to 256 nodes) against SciPy's graph search, with long
    # paths (the slowest case for propagation), isolated nodes and zero-weight edges
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from spectra.graph._layout import graph_input
    from spectra.graph._spectrum import PROPAGATE_MAX_N, _propagated_components, edge_components

    rng = np.random.default_rng(65)
    graphs = []
    for n in (256, 1, 7, 40, 3, 120):
        src = np.arange(n - 1)
        keep = rng.random(n - 1) > 0.05  # a path cut in a few places
        e = np.stack([src[keep], src[keep] + 1])
        graphs.append((torch.from_numpy(np.concatenate([e, e[::-1]], 1)), None, n))
    ei, _, batch, sizes = batch_of(graphs)
    weight = torch.ones(ei.shape[1], dtype=torch.float64)
    weight[::17] = 0.0  # zero weights are no edges
    edges = graph_input(ei, weight, batch, None, None, "cpu", torch.float64).edges
    assert edges.layout.n_max <= PROPAGATE_MAX_N
    comps, labels = edge_components(edges)
    nz = edges.weight != 0
    direct, _ = _propagated_components(edges.src[nz], edges.dst[nz], edges.layout)
    assert torch.equal(comps, direct)  # the path edge_components took
    n = sum(sizes)
    a = coo_matrix((np.ones(int(nz.sum())), (edges.src[nz].numpy(), edges.dst[nz].numpy())),
                   shape=(n, n))  # fmt: skip
    _, ref = connected_components(a, directed=False)
    ptr = np.cumsum([0, *sizes])
    expect = [len(np.unique(ref[ptr[g] : ptr[g + 1]])) for g in range(len(sizes))]
    assert comps.tolist() == expect
    # the same partition of the nodes (labels may differ in name, not in grouping)
    pairs = set(zip(labels.tolist(), ref.tolist(), strict=True))
    assert len(pairs) == len(set(ref.tolist())) == len(set(labels.tolist()))


def test_directed_graph_in_a_batch_of_small_graphs_is_named():
    from spectra.core import InputError

    rng = np.random.default_rng(66)
    graphs = [(*random_graph(rng, int(m), weighted=True), int(m)) for m in (12, 30, 9, 25)]
    ei, ew, batch, _ = batch_of(graphs)
    bad = ew.clone()
    first = int(np.cumsum([0, 12, 30])[-1])  # an edge of graph 2
    edge = int(((ei[0] >= first) & (ei[0] < first + 9)).nonzero()[0])
    bad[edge] += 0.5
    with pytest.raises(InputError, match="directed") as err:
        laplacian_pe(ei, k=3, edge_weight=bad, batch=batch)
    assert err.value.indices == [(2,)]
    tiny = ew.clone()
    tiny[edge] *= 1 + 1e-13  # not bitwise symmetric, within the tolerance: accepted
    out = laplacian_pe(ei, k=3, edge_weight=tiny, batch=batch, dtype=torch.float64)
    ref = laplacian_pe(ei, k=3, edge_weight=ew, batch=batch, dtype=torch.float64)
    torch.testing.assert_close(out.eigenvalues, ref.eigenvalues, atol=1e-9, rtol=0)


@pytest.mark.parametrize("host", [True, False])
def test_group_order_both_routes(host):
    """The NumPy route (CPU) and torch's (other devices) give the same stable order."""
    from spectra.graph._assemble import group_order

    rng = np.random.default_rng(3)
    ids = torch.from_numpy(
        np.concatenate([np.sort(rng.integers(0, 9, 300)), rng.integers(0, 9, 50)])
    )
    order, bounds = group_order(ids, 11, host=host)
    expected = np.argsort(ids.numpy(), kind="stable")
    assert order.tolist() == expected.tolist()
    assert bounds == [int((ids < g).sum()) for g in range(12)]  # two empty groups at the end


def test_dense_and_scipy_blocks_of_a_subset_equal_the_matrix():
    """Each graph's dense, CSR and sparse COO block of any subset, in any order, equals the
    block of the whole block-diagonal matrix built independently (torch's sparse COO)."""
    from spectra.graph._assemble import laplacian_entries
    from spectra.graph._layout import edges_of, make_layout

    rng = np.random.default_rng(4)
    sizes = (7, 30, 12, 1, 25)
    edge_index, _, node_batch, _ = batch_of([(*random_graph(rng, n), n) for n in sizes])
    total = sum(sizes)
    lay = make_layout(edge_index, total, node_batch)
    entries, _ = laplacian_entries(edges_of(edge_index, None, lay, torch.float64), "sym")
    full = torch.sparse_coo_tensor(
        torch.stack([entries.rows, entries.cols]), entries.values, (total, total)
    ).to_dense()
    ptr = lay.ptr.tolist()
    for graphs in ([4, 0, 2], [3], [1, 2, 3, 4, 0]):
        blocks = entries.dense_blocks(graphs)
        csr = entries.scipy_blocks(graphs)
        coo = entries.sparse_blocks(graphs)  # the form for other devices
        for g, block, sparse, tensor in zip(graphs, blocks, csr, coo, strict=True):
            want = full[ptr[g] : ptr[g + 1], ptr[g] : ptr[g + 1]]
            assert torch.equal(block, want)
            assert np.array_equal(sparse.toarray(), want.numpy())
            assert tensor.is_coalesced() and torch.equal(tensor.to_dense(), want)
