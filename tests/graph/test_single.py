"""LaplacianPE on one Data (``dataset.transform = ...``) takes the direct path: no layouts,
masks or parts meant for a Batch, the same features as the batched path."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, Data

import spectra.graph._transform as transform
from spectra.core import InputError
from spectra.graph import LaplacianPE, PEAttrs

from .graphs import random_graph

ATTRS = PEAttrs(eigenvalues="ev", groups="gr")
NAMES = ("laplacian_eigenvector_pe", "laplacian_eigenvector_pe_mask", "ev", "gr",
         "heat_kernel_diag")  # fmt: skip


def graphs(rng):
    out = []
    for n, connected, weighted in [(25, True, False), (12, False, True), (7, True, True),
                                   (3, True, False), (30, False, False)]:  # fmt: skip
        ei, ew = random_graph(rng, n, p=0.15, connected=connected, weighted=weighted)
        out.append(Data(edge_index=ei, edge_weight=ew, num_nodes=n + 2))  # 2 isolated nodes
    out.append(Data(edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=4))
    return out


def test_one_data_takes_the_direct_path(monkeypatch):
    t = LaplacianPE(4)
    ei, _ = random_graph(np.random.default_rng(0), 25)
    data = Data(edge_index=ei, num_nodes=25)
    assert t.path(data) == "single"

    def no_batch_path(*args, **kwargs):
        raise AssertionError("the batched pipeline ran for one Data")

    monkeypatch.setattr(transform, "pe_pipeline", no_batch_path)
    out = t(data)
    assert out.laplacian_eigenvector_pe.shape == (25, 4)
    batch = Batch.from_data_list([data, data])
    assert t.path(batch) == "batch"
    with pytest.raises(AssertionError, match="batched pipeline"):
        t(batch)


def test_what_leaves_the_direct_path():
    ei, ew = random_graph(np.random.default_rng(1), 10, weighted=True)
    t = LaplacianPE(3)
    assert t.path(Data(edge_index=ei, edge_weight=ew.requires_grad_(), num_nodes=10)) == "batch"
    assert LaplacianPE(3, device=None).path(Data(edge_index=ei, num_nodes=10)) == "single"
    small = LaplacianPE(3, eigh_options={"sparse_from": 5})
    assert small.path(Data(edge_index=ei, num_nodes=10)) == "batch"
    assert t.path(Data(edge_index=ei, num_nodes=0)) == "batch"


@pytest.mark.parametrize("normalization", ["sym", "rw", None])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_direct_path_equals_batched_path(normalization, dtype):
    rng = np.random.default_rng(2)
    t = LaplacianPE(5, normalization=normalization, attrs=ATTRS, heat_times=[0.5, 4.0],
                    dtype=dtype)  # fmt: skip
    atol = 1e-10 if dtype == torch.float64 else 2e-6
    for d in graphs(rng):
        assert t.path(d) == "single"
        one = t(d)
        via_batch = t(Batch.from_data_list([d]))
        for name in NAMES:
            a, b = one[name], via_batch[name]
            assert a.dtype == b.dtype and a.shape == b.shape, name
            if a.is_floating_point():
                torch.testing.assert_close(a, b, atol=atol, rtol=0)
            else:
                assert torch.equal(a, b), name


def test_direct_path_pyg_convention_and_random_signs():
    rng = np.random.default_rng(3)
    for d in graphs(rng):
        for kw in ({"convention": "pyg"}, {"random_sign": 5}):
            if "random_sign" in kw:
                kw = {"random_sign": torch.Generator().manual_seed(5)}
            t = LaplacianPE(3, dtype=torch.float64, **kw)
            torch.manual_seed(11)
            one = t(d).laplacian_eigenvector_pe
            if "random_sign" in kw:
                kw = {"random_sign": torch.Generator().manual_seed(5)}
            t = LaplacianPE(3, dtype=torch.float64, **kw)
            torch.manual_seed(11)
            batched = t(Batch.from_data_list([d])).laplacian_eigenvector_pe
            torch.testing.assert_close(one, batched, atol=1e-10, rtol=0)


def test_direct_path_concatenates_to_x_and_refuses_bad_input():
    ei, _ = random_graph(np.random.default_rng(4), 6)
    d = Data(edge_index=ei, x=torch.ones(6, 2), num_nodes=6)
    assert LaplacianPE(2, attr_name=None)(d).x.shape == (6, 4)
    with pytest.raises(InputError, match="directed"):
        LaplacianPE(2)(Data(edge_index=torch.tensor([[0, 1], [1, 2]]), num_nodes=3))
    with pytest.raises(InputError, match=r"outside \[0, num_nodes=3\)"):
        LaplacianPE(2)(Data(edge_index=torch.tensor([[0, 5], [5, 0]]), num_nodes=3))
    bad = Data(edge_index=ei, edge_weight=torch.full((ei.shape[1],), float("nan")), num_nodes=6)
    with pytest.raises(InputError, match="NaN"):
        LaplacianPE(2)(bad)
    neg = Data(edge_index=ei, edge_weight=-torch.ones(ei.shape[1]), num_nodes=6)
    with pytest.raises(InputError, match="negative weighted degree"):
        LaplacianPE(2)(neg)
    assert LaplacianPE(2, normalization=None)(neg).laplacian_eigenvector_pe.shape == (6, 2)


def test_batch_keeps_its_collation_and_separates_back(monkeypatch):
    rng = np.random.default_rng(5)
    datas = []
    for n in (9, 25, 14):  # weighted: simple spectra, so the vectors are unique
        ei, ew = random_graph(rng, n, weighted=True)
        datas.append(Data(edge_index=ei, edge_weight=ew, num_nodes=n))
    t = LaplacianPE(3, attrs=ATTRS, heat_times=[1.0], dtype=torch.float64)
    singles = [t(d) for d in datas]
    batch = Batch.from_data_list(datas)
    collated = []
    monkeypatch.setattr(Batch, "from_data_list", lambda *a, **k: collated.append(1))
    out = t(batch)
    assert collated == []  # attributes registered in the slices, no re-collation
    assert "laplacian_eigenvector_pe" not in batch._slice_dict  # the input is unchanged
    for back, single in zip(out.to_data_list(), singles, strict=True):
        for name in NAMES:
            torch.testing.assert_close(back[name], single[name], atol=1e-10, rtol=0)


def test_direct_path_counts_components_as_scipy():
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from spectra.graph._single import _components

    rng = np.random.default_rng(9)
    for n in (1, 2, 5, 25, 80, 256):
        m = int(rng.integers(0, 2 * n))
        src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
        w = rng.choice([0.0, 1.0, 0.5], size=m)  # zero weights are no edges
        keep = w != 0
        a = coo_matrix((np.ones(int(keep.sum())), (src[keep], dst[keep])), shape=(n, n))
        assert _components(src, dst, w, n) == connected_components(a, directed=False)[0]


@pytest.mark.parametrize("convention", ["spectra", "pyg"])
@pytest.mark.parametrize("normalization", ["sym", "rw", None])
def test_direct_path_takes_the_partial_solve_on_larger_graphs(
    monkeypatch, convention, normalization
):
    """Graphs of 60-200 nodes (two disconnected ones among them): only the lowest
    eigenpairs the features read are solved (the core's partial solve, as the batched path's
    dense graphs), and the features are the batched path's."""
    import spectra.graph._single as single

    if convention == "pyg" and normalization != "sym":
        pytest.skip("'pyg' is the sym-normalized Laplacian")
    asked = []
    real = single.eigh

    def spy(a, **kw):
        asked.append((a.shape[-1], kw.get("k")))
        return real(a, **kw)

    monkeypatch.setattr(single, "eigh", spy)
    rng = np.random.default_rng(5)
    t = LaplacianPE(6, normalization=normalization, attrs=ATTRS, convention=convention)
    for n, connected in [(60, True), (120, False), (200, True), (150, False)]:
        ei, ew = random_graph(rng, n, p=0.05, connected=connected, weighted=True)
        d = Data(edge_index=ei, edge_weight=ew, num_nodes=n)
        assert t.path(d) == "single"
        asked.clear()
        one = t(d)
        ((size, k),) = asked
        assert size == n and k is not None and 6 <= k < n  # the lowest pairs only
        via_batch = t(Batch.from_data_list([d]))
        for name in NAMES[:4]:
            a, b = one[name], via_batch[name]
            assert a.shape == b.shape, name
            if name == NAMES[0] and convention == "pyg":  # PyG's random signs
                a, b = a.abs(), b.abs()
            if a.is_floating_point():
                torch.testing.assert_close(a, b, atol=1e-10, rtol=0)
            else:
                assert torch.equal(a, b), name


def test_direct_path_with_heat_kernel_solves_everything(monkeypatch):
    import spectra.graph._single as single

    asked = []
    real = single.eigh
    monkeypatch.setattr(single, "eigh", lambda a, **kw: asked.append(kw.get("k")) or real(a, **kw))
    ei, _ = random_graph(np.random.default_rng(6), 100, p=0.05)
    LaplacianPE(4, heat_times=[1.0])(Data(edge_index=ei, num_nodes=100))
    assert asked == [None]


@pytest.mark.parametrize("n", [40, 200])  # the symmetry test on the dense adjacency, then
@pytest.mark.parametrize("normalization", ["sym", "rw", None])  # on the edge list
def test_direct_path_matrix_equals_the_dense_builder(monkeypatch, normalization, n):
    # the per-Data path assembles one dense matrix from the coalesced edge list: duplicate
    # edges summed in edge order, self-loops dropped, a one-way zero-weight edge and a
    # weight asymmetric within 1e-10 of the largest accepted; the same bits as
    # spectra.graph.laplacian (the batched path's builder)
    import spectra.graph._single as single
    from spectra.graph import laplacian

    assert (n * n <= single.DENSE_SYMMETRY_MAX_ENTRIES) == (n == 40)
    rng = np.random.default_rng(12)
    ei, ew = random_graph(rng, n, p=0.05, weighted=True)
    extra = torch.tensor([[3, 4, 7, 7, 9], [4, 3, 7, 8, 2]])  # a duplicate pair, a loop, ...
    weights = torch.tensor([0.25, 0.25, 5.0, 0.0, 0.0], dtype=torch.float64)  # ... zero one-way
    ei, ew = torch.cat([ei, extra], 1), torch.cat([ew, weights])
    ew[0] = ew[0] * (1 + 1e-13)  # within the tolerance
    seen = []
    real = single.eigh
    monkeypatch.setattr(single, "eigh", lambda lap, **kw: seen.append(lap) or real(lap, **kw))
    t = LaplacianPE(4, normalization=normalization, dtype=torch.float64)
    t(Data(edge_index=ei, edge_weight=ew, num_nodes=n))
    expect = laplacian(ei, n, edge_weight=ew, normalization="sym" if normalization else None,
                       dtype=torch.float64)  # fmt: skip
    assert len(seen) == 1 and torch.equal(torch.from_numpy(seen[0]), expect)
    ew[0] = ew[0] * (1 + 1e-6)  # beyond it: refused, as directed
    with pytest.raises(InputError, match="directed"):
        t(Data(edge_index=ei, edge_weight=ew, num_nodes=n))
