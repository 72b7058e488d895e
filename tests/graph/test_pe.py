"""LaplacianPE / laplacian_pe against PyG's AddLaplacianEigenvectorPE and SciPy references."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.transforms import AddLaplacianEigenvectorPE

from spectra.graph import LaplacianPE, laplacian_pe, multiplicity_groups

from .graphs import (
    align_signs,
    assert_batch_equals_singles,
    batch_of,
    dense_adj,
    random_graph,
    ref_laplacian,
    same_subspace,
    separated_graph,
)


def pyg_pe(data: Data, k: int) -> np.ndarray:
    torch.manual_seed(0)
    return AddLaplacianEigenvectorPE(k, is_undirected=True)(data).laplacian_eigenvector_pe.numpy()


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_equals_pyg_up_to_sign_on_separated_graphs(weighted, dtype):
    rng = np.random.default_rng(20)
    k = 4
    # PyG solves in float32 unless the weights are float64
    tol = 1e-10 if dtype == torch.float64 and weighted else 2e-5
    for n in (6, 11, 23):
        ei, ew = separated_graph(rng, n, k, weighted=weighted)
        data = Data(edge_index=ei, num_nodes=n)
        if ew is not None:
            data.edge_weight = ew
        ref = pyg_pe(data, k)
        out = LaplacianPE(k, dtype=dtype)(data)
        pe = out.laplacian_eigenvector_pe
        assert pe.dtype == dtype and pe.shape == (n, k)
        assert bool(out.laplacian_eigenvector_pe_mask.all())
        np.testing.assert_allclose(align_signs(pe.double().numpy(), ref), ref, atol=tol)
        assert "laplacian_eigenvector_pe" not in data  # the input is not modified


def test_subspace_equal_where_eigenvalues_repeat():
    # cycle C8: sym eigenvalues 1 - cos(2 pi j / 8), pairs repeat; complete graph K5: 4-fold
    for n, ei in [
        (
            8,
            torch.tensor(
                [
                    list(range(8)) + [(i + 1) % 8 for i in range(8)],
                    [(i + 1) % 8 for i in range(8)] + list(range(8)),
                ]
            ),
        ),
        (
            5,
            torch.tensor(
                [
                    [i for i in range(5) for j in range(5) if i != j],
                    [j for i in range(5) for j in range(5) if i != j],
                ]
            ),
        ),
    ]:
        lap = ref_laplacian(dense_adj(ei, n), "sym")
        w_ref, v_ref = scipy.linalg.eigh(lap)
        k = n - 1
        out = laplacian_pe(ei, n, k, dtype=torch.float64)
        groups = out.groups[0].tolist()
        # groups from the reference eigenvalues, independently
        ref_groups = np.concatenate([[0], np.cumsum(np.diff(w_ref[1:]) > 1e-8)]).tolist()
        assert groups == ref_groups
        pe = out.pe.numpy()
        pyg = pyg_pe(Data(edge_index=ei, num_nodes=n), k).astype(np.float64)
        for gid in set(groups):
            cols = [j for j, x in enumerate(groups) if x == gid]
            assert same_subspace(pe[:, cols], v_ref[:, [c + 1 for c in cols]]) < 1e-10
            assert same_subspace(pe[:, cols], pyg[:, cols]) < 1e-5  # PyG: float32
        np.testing.assert_allclose(out.eigenvalues[0].numpy(), w_ref[1:], atol=1e-12)


def test_batch_equals_per_data_and_separates_back():
    rng = np.random.default_rng(21)
    datas = []
    for n in (7, 3, 12, 1, 9, 2):
        ei, ew = (
            random_graph(rng, n, weighted=True)
            if n > 1
            else (torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=torch.float64))
        )
        datas.append(Data(edge_index=ei, edge_weight=ew, x=torch.randn(n, 3), num_nodes=n))
    t = LaplacianPE(
        4, eigenvalues_attr="lap_eigval", groups_attr="lap_groups", heat_times=[0.5, 2.0]
    )
    batch = t(Batch.from_data_list(datas))
    singles = [t(d) for d in datas]
    names = [
        "laplacian_eigenvector_pe",
        "laplacian_eigenvector_pe_mask",
        "lap_eigval",
        "lap_groups",
        "heat_kernel_diag",
    ]
    assert_batch_equals_singles(batch, singles, names, atol=1e-5)
    for back, single in zip(batch.to_data_list(), singles, strict=True):
        for name in names:
            assert back[name].shape == single[name].shape
        torch.testing.assert_close(back.x, single.x)
    # many = one call over the list, same result
    many = t.apply_many(datas)
    for m, s in zip(many, singles, strict=True):
        torch.testing.assert_close(
            m.laplacian_eigenvector_pe, s.laplacian_eigenvector_pe, atol=1e-5, rtol=0
        )


def test_deterministic_and_random_sign():
    rng = np.random.default_rng(22)
    ei, _ = separated_graph(rng, 15, 5)
    data = Data(edge_index=ei, num_nodes=15)
    a = LaplacianPE(5)(data).laplacian_eigenvector_pe
    b = LaplacianPE(5)(data).laplacian_eigenvector_pe
    assert torch.equal(a, b)
    gen = torch.Generator().manual_seed(3)
    flips = [
        LaplacianPE(5, random_sign=True, generator=gen)(data).laplacian_eigenvector_pe
        for _ in range(8)
    ]
    signs = torch.stack([(f * a).sum(0).sign() for f in flips])
    for f, s in zip(flips, signs, strict=True):  # only signs change
        torch.testing.assert_close(f, a * s)
    assert bool((signs < 0).any()) and bool((signs > 0).any())


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_small_graphs_padded_with_mask(n):
    k = 4
    ei = torch.tensor(
        [
            list(range(n - 1)) + [i + 1 for i in range(n - 1)],
            [i + 1 for i in range(n - 1)] + list(range(n - 1)),
        ]
    ).long()
    ei = ei.reshape(2, -1)
    out = LaplacianPE(k, eigenvalues_attr="ev", groups_attr="gr")(Data(edge_index=ei, num_nodes=n))
    pe, mask = out.laplacian_eigenvector_pe, out.laplacian_eigenvector_pe_mask
    assert pe.shape == (n, k) and mask.shape == (n, k)
    real = n - 1
    assert mask[0].tolist() == [True] * real + [False] * (k - real)
    assert torch.all(pe[:, real:] == 0) and torch.all(out.ev[:, real:] == 0)
    assert torch.all(out.gr[:, real:] == -1)
    if real:
        w_ref, v_ref = scipy.linalg.eigh(ref_laplacian(dense_adj(ei, n), "sym"))
        np.testing.assert_allclose(out.ev[0, :real].numpy(), w_ref[1:], atol=1e-6)
        got = pe[:, :real].double().numpy()
        np.testing.assert_allclose(align_signs(got, v_ref[:, 1:]), v_ref[:, 1:], atol=1e-6)


def test_disconnected_graph_drops_one_null_vector_per_component():
    rng = np.random.default_rng(23)
    e1, w1 = random_graph(rng, 5, weighted=True)
    e2, w2 = random_graph(rng, 4, weighted=True)
    ei = torch.cat([e1, e2 + 5], 1)
    ew = torch.cat([w1, w2])
    n, k = 11, 6  # nodes 9 and 10 isolated: 4 components
    out = laplacian_pe(ei, n, k, edge_weight=ew, dtype=torch.float64)
    assert out.num_components.tolist() == [4]
    lap = ref_laplacian(dense_adj(ei, n, ew), "sym")
    w_ref = scipy.linalg.eigvalsh(lap)
    np.testing.assert_allclose(out.eigenvalues[0].numpy(), w_ref[4 : 4 + k], atol=1e-10)
    assert bool((out.eigenvalues > 1e-6).all())  # no null vector kept
    pe = out.pe.numpy()
    np.testing.assert_allclose(lap @ pe, pe * out.eigenvalues[0].numpy(), atol=1e-10)
    np.testing.assert_allclose(pe.T @ pe, np.eye(k), atol=1e-10)
    assert np.all(pe[9:] == 0)  # isolated nodes carry no non-trivial eigenvector
    # keeping trivial vectors: the first 4 span the null space
    keep = laplacian_pe(ei, n, 4, edge_weight=ew, dtype=torch.float64, drop_trivial=False)
    np.testing.assert_allclose(keep.eigenvalues[0].numpy(), 0, atol=1e-12)


def test_rw_normalization_vectors():
    rng = np.random.default_rng(24)
    ei, ew = separated_graph(rng, 10, 3, weighted=True)
    out = laplacian_pe(ei, 10, 3, edge_weight=ew, normalization="rw", dtype=torch.float64)
    a = dense_adj(ei, 10, ew)
    lap_rw = ref_laplacian(a, "rw")
    pe, w = out.pe.numpy(), out.eigenvalues[0].numpy()
    np.testing.assert_allclose(lap_rw @ pe, pe * w, atol=1e-10)
    np.testing.assert_allclose(pe.T @ np.diag(a.sum(1)) @ pe, np.eye(3), atol=1e-10)


def test_heat_features_from_rw_transform_equal_sym():
    rng = np.random.default_rng(29)
    data = Data(edge_index=random_graph(rng, 9, weighted=True)[0], num_nodes=11)
    sym = LaplacianPE(3, heat_times=[0.3, 3.0], dtype=torch.float64)(data)
    rw = LaplacianPE(3, normalization="rw", heat_times=[0.3, 3.0], dtype=torch.float64)(data)
    torch.testing.assert_close(rw.heat_kernel_diag, sym.heat_kernel_diag, atol=1e-12, rtol=0)
    lap = ref_laplacian(dense_adj(data.edge_index, 11), "sym")
    ref = np.stack([np.diag(scipy.linalg.expm(-t * lap)) for t in (0.3, 3.0)], 1)
    np.testing.assert_allclose(sym.heat_kernel_diag.numpy(), ref, atol=1e-12)


def test_attr_name_none_concatenates_to_x_and_pre_transform(tmp_path):
    from torch_geometric.data import InMemoryDataset

    rng = np.random.default_rng(25)
    graphs = [random_graph(rng, n) for n in (5, 8, 6)]

    class Tiny(InMemoryDataset):
        def __init__(self, root, pre_transform):
            super().__init__(root, pre_transform=pre_transform)
            self.load(self.processed_paths[0])

        @property
        def processed_file_names(self):
            return ["data.pt"]

        def process(self):
            data_list = [
                Data(edge_index=ei, x=torch.ones(int(ei.max()) + 1, 2)) for ei, _ in graphs
            ]
            data_list = [self.pre_transform(d) for d in data_list]
            self.save(data_list, self.processed_paths[0])

    ds = Tiny(str(tmp_path), pre_transform=LaplacianPE(3, attr_name=None, mask_attr=None))
    assert len(ds) == 3
    for d, (ei, _) in zip(ds, graphs, strict=True):
        n = int(ei.max()) + 1
        assert d.x.shape == (n, 5)
        ref = laplacian_pe(ei, n, 3).pe
        torch.testing.assert_close(d.x[:, 2:], ref)
        assert "laplacian_eigenvector_pe_mask" not in d


def test_multiplicity_groups_against_loop():
    rng = np.random.default_rng(26)
    w = np.sort(rng.choice([0.1, 0.5, 0.7, 1.2], size=(5, 6)), axis=1)
    w = w + rng.normal(scale=1e-9, size=w.shape)
    w = np.sort(w, axis=1)
    mask = np.ones_like(w, dtype=bool)
    mask[2, 4:] = False
    got = multiplicity_groups(torch.from_numpy(w), torch.from_numpy(mask), 1e-6).numpy()
    for g in range(5):
        gid, ref = 0, []
        for j in range(6):
            if j and abs(w[g, j] - w[g, j - 1]) > 1e-6:
                gid += 1
            ref.append(gid if mask[g, j] else -1)
        assert got[g].tolist() == ref


def test_errors_are_clear():
    with pytest.raises(ValueError, match="k must be"):
        LaplacianPE(-1)
    with pytest.raises(ValueError, match="normalization"):
        LaplacianPE(2, normalization="x")
    with pytest.raises(ValueError, match="directed"):
        LaplacianPE(2)(Data(edge_index=torch.tensor([[0, 1], [1, 2]]), num_nodes=3))
    with pytest.raises(TypeError, match="Data"):
        LaplacianPE(2)({"edge_index": torch.tensor([[0], [1]])})
    with pytest.raises(ValueError, match="edge_index"):
        LaplacianPE(2)(Data(x=torch.ones(3, 1)))


def test_batch_with_many_graph_sizes_one_core_call(monkeypatch):
    import spectra.graph._spectrum as spectrum

    calls = []
    real = spectrum.eigh

    def counting(*args, **kwargs):
        calls.append(args[0].shape)
        return real(*args, **kwargs)

    monkeypatch.setattr(spectrum, "eigh", counting)
    rng = np.random.default_rng(27)
    graphs = [(*random_graph(rng, n), n) for n in rng.integers(2, 30, size=40)]
    ei, _, batch, sizes = batch_of(graphs)
    data = Batch(edge_index=ei, batch=batch, num_nodes=int(batch.numel()))
    out = LaplacianPE(5)(data)
    assert len(calls) == 1 and calls[0] == (40, max(sizes), max(sizes))
    assert out.laplacian_eigenvector_pe.shape == (sum(sizes), 5)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_data_gives_same_pe_as_cpu():
    rng = np.random.default_rng(28)
    datas = []
    for n in (6, 17, 33, 40):  # weighted: simple eigenvalues, so vectors are unique up to sign
        ei, ew = random_graph(rng, n, weighted=True)
        datas.append(Data(edge_index=ei, edge_weight=ew, num_nodes=n))
    batch = Batch.from_data_list(datas)
    cpu = LaplacianPE(6)(batch).laplacian_eigenvector_pe
    on_gpu = LaplacianPE(6, device=None)(batch.to("cuda")).laplacian_eigenvector_pe
    via_cpu = LaplacianPE(6)(batch.to("cuda")).laplacian_eigenvector_pe
    assert on_gpu.device.type == "cuda" and via_cpu.device.type == "cuda"
    torch.testing.assert_close(via_cpu.cpu(), cpu)
    torch.testing.assert_close(on_gpu.cpu(), cpu, atol=1e-5, rtol=0)


def test_solving_where_the_data_lives_matches_default():
    # the CUDA test's code path (device=None), on the CPU
    rng = np.random.default_rng(30)
    ei, ew = random_graph(rng, 12, weighted=True)
    data = Data(edge_index=ei, edge_weight=ew.float(), num_nodes=12)
    a = LaplacianPE(4, device=None, eigh_options={"workers": 1})(data)
    b = LaplacianPE(4)(data)
    assert torch.equal(a.laplacian_eigenvector_pe, b.laplacian_eigenvector_pe)
