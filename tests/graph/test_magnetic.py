"""Magnetic Laplacian PE (Geisler et al. 2023) against an independent NumPy construction
and SciPy, q = 0 against laplacian_pe, relabelling and edge-reversal symmetries."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch
from torch_geometric.data import Batch, Data

from spectra.graph import (
    MagneticLaplacianPE,
    laplacian_pe,
    magnetic_laplacian,
    magnetic_laplacian_pe,
)

from .graphs import assert_batch_equals_singles, batch_of, random_graph

TOL = {torch.float32: 2e-5, torch.float64: 1e-10}


def directed_graph(rng, n, p=0.3, weighted=False):
    """A random directed graph (some edges one way, some both) as (edge_index, weights)."""
    mask = (rng.random((n, n)) < p) & ~np.eye(n, dtype=bool)
    for i in range(1, n):  # weakly connected: a random tree with random directions
        j = int(rng.integers(0, i))
        mask[(i, j) if rng.random() < 0.5 else (j, i)] = True
    src, dst = np.nonzero(mask)
    ei = torch.from_numpy(np.stack([src, dst])).long()
    ew = torch.from_numpy(rng.uniform(0.5, 2.0, size=src.size)) if weighted else None
    return ei, ew


def ref_magnetic(ei, n, q, normalization, symmetrize="max", ew=None):
    """L_q written from the definition, entry by entry (NumPy)."""
    a = np.zeros((n, n))
    w = np.ones(ei.shape[1]) if ew is None else np.asarray(ew)
    for (i, j), x in zip(ei.T.tolist(), w, strict=True):
        if i != j:
            a[i, j] += x
    a_s = np.maximum(a, a.T) if symmetrize == "max" else (a + a.T) / 2
    deg = a_s.sum(1)
    lap = np.zeros((n, n), dtype=complex)
    for u in range(n):
        for v in range(n):
            phase = np.exp(1j * 2 * np.pi * q * (a[u, v] - a[v, u]))
            if normalization is None:
                lap[u, v] = (u == v) * deg[u] - a_s[u, v] * phase
            elif deg[u] > 0 and deg[v] > 0:
                lap[u, v] = (u == v) - a_s[u, v] / np.sqrt(deg[u] * deg[v]) * phase
    return lap


@pytest.mark.parametrize("normalization", ["sym", None])
@pytest.mark.parametrize("symmetrize", ["max", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_laplacian_and_eigenvalues_against_scipy_loop(normalization, symmetrize, weighted):
    rng = np.random.default_rng(40)
    q = 0.2
    graphs = [(*directed_graph(rng, n, weighted=weighted), n) for n in (5, 1, 9, 3, 12)]
    ei, ew, batch, sizes = batch_of(graphs)
    lap = magnetic_laplacian(
        ei, edge_weight=ew, q=q, normalization=normalization, batch=batch, symmetrize=symmetrize
    )
    k = 4
    out = magnetic_laplacian_pe(
        ei,
        k=k,
        q=q,
        edge_weight=ew,
        batch=batch,
        normalization=normalization,
        symmetrize=symmetrize,
        dtype=torch.float64,
    )
    ptr = np.cumsum([0, *sizes])
    for g, (gei, gew, n) in enumerate(graphs):
        ref = ref_magnetic(gei, n, q, normalization, symmetrize, gew)
        np.testing.assert_allclose(lap[g, :n, :n].numpy(), ref, atol=1e-12)
        w_ref = scipy.linalg.eigvalsh(ref)
        m = min(k, n)
        np.testing.assert_allclose(out.eigenvalues[g, :m].numpy(), w_ref[:m], atol=1e-10)
        assert out.mask[g].tolist() == [j < n for j in range(k)]
        v = out.pe[ptr[g] : ptr[g + 1], :m].numpy()
        # eigenvectors: L v = w v, orthonormal, phase gauge (largest |entry| real > 0)
        np.testing.assert_allclose(ref @ v, v * w_ref[:m], atol=1e-10)
        np.testing.assert_allclose(v.conj().T @ v, np.eye(m), atol=1e-10)
        for j in range(m):  # among the (near-)largest entries, one is real and positive
            big = np.abs(v[:, j]) >= np.abs(v[:, j]).max() * (1 - 1e-8)
            top = v[big, j]
            assert ((np.abs(top.imag) < 1e-12) & (top.real > 0)).any()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_q_zero_equals_symmetric_laplacian_pe(dtype):
    rng = np.random.default_rng(41)
    graphs = [(*random_graph(rng, n, weighted=True), n) for n in (6, 10, 4)]
    graphs.append((torch.tensor([[0, 1, 3, 4], [1, 0, 4, 3]]), None, 5))  # 3 components
    ei, ew, batch, _ = batch_of(graphs)
    for drop in (False, True):
        # k = 10 >= every graph's size: no multiplicity group is cut by the k-th column
        mag = magnetic_laplacian_pe(
            ei, k=10, q=0.0, edge_weight=ew, batch=batch, drop_trivial=drop, dtype=dtype
        )
        ref = laplacian_pe(ei, k=10, edge_weight=ew, batch=batch, drop_trivial=drop, dtype=dtype)
        assert mag.pe.dtype == (torch.complex64 if dtype == torch.float32 else torch.complex128)
        assert torch.equal(mag.mask, ref.mask) and torch.equal(mag.groups, ref.groups)
        # per multiplicity group: the eigenspace (projector) is the same; simple eigenvalues
        # give the same gauge-fixed vector (the complex gauge of a real vector is real)
        for g in range(len(graphs)):
            rows = batch == g
            for gid in set(ref.groups[g].tolist()) - {-1}:
                cols = (ref.groups[g] == gid).nonzero().flatten()
                a, b = mag.pe[rows][:, cols], ref.pe[rows][:, cols]
                proj = (a @ a.mH).to(torch.complex128)
                want = (b @ b.mT).to(torch.complex128)
                torch.testing.assert_close(proj, want, atol=TOL[dtype] * 10, rtol=0)
                if cols.numel() == 1:
                    torch.testing.assert_close(a.real, b, atol=TOL[dtype], rtol=0)
                    assert float(a.imag.abs().max()) < TOL[dtype]
        torch.testing.assert_close(mag.eigenvalues, ref.eigenvalues, atol=TOL[dtype], rtol=0)


def test_q_zero_on_a_directed_graph_is_the_symmetrized_graph():
    rng = np.random.default_rng(42)
    ei, _ = directed_graph(rng, 9)
    both = torch.unique(torch.cat([ei, ei.flip(0)], 1), dim=1)  # A OR A^T
    mag = magnetic_laplacian_pe(ei, 9, k=5, q=0.0, dtype=torch.float64)
    ref = laplacian_pe(both, 9, k=5, drop_trivial=False, dtype=torch.float64)
    torch.testing.assert_close(mag.pe.real, ref.pe, atol=1e-10, rtol=0)


def test_relabelling_nodes_permutes_the_encodings():
    rng = np.random.default_rng(43)
    n, k = 11, 6
    ei, ew = directed_graph(rng, n, weighted=True)  # weights: no symmetry, simple spectrum
    perm = torch.from_numpy(rng.permutation(n))
    inv = torch.argsort(perm)  # node i is renamed inv[i]
    a = magnetic_laplacian_pe(ei, n, k=k, q=0.3, edge_weight=ew, dtype=torch.float64)
    b = magnetic_laplacian_pe(inv[ei], n, k=k, q=0.3, edge_weight=ew, dtype=torch.float64)
    torch.testing.assert_close(a.eigenvalues, b.eigenvalues, atol=1e-12, rtol=0)
    assert float(torch.diff(a.eigenvalues[0]).min()) > 1e-6  # simple: vectors unique up to phase
    # gauge-invariant comparison (projectors), then the gauge-fixed vectors themselves
    pa, pb = a.pe, b.pe[inv]
    torch.testing.assert_close(
        pa[:, :, None] * pa.conj()[:, None, :],
        pb[:, :, None] * pb.conj()[:, None, :],
        atol=1e-10,
        rtol=0,
    )
    torch.testing.assert_close(pa, pb, atol=1e-10, rtol=0)


def test_reversing_every_edge_conjugates_the_phase():
    rng = np.random.default_rng(44)
    ei, ew = directed_graph(rng, 10, weighted=True)
    fwd = magnetic_laplacian_pe(ei, 10, k=5, q=0.25, edge_weight=ew, dtype=torch.float64)
    rev = magnetic_laplacian_pe(ei.flip(0), 10, k=5, q=0.25, edge_weight=ew, dtype=torch.float64)
    torch.testing.assert_close(rev.eigenvalues, fwd.eigenvalues, atol=1e-12, rtol=0)
    torch.testing.assert_close(rev.pe, fwd.pe.conj(), atol=1e-10, rtol=0)
    assert float(fwd.pe.imag.abs().max()) > 0.1  # the phase carries the direction
    lap = magnetic_laplacian(ei, 10, ew, q=0.25)
    torch.testing.assert_close(magnetic_laplacian(ei.flip(0), 10, ew, q=0.25), lap.conj())


def test_transform_batch_one_call_equals_per_graph(monkeypatch):
    import spectra.graph._spectrum as spectrum

    calls = []
    real = spectrum.eigh

    def counting(*args, **kwargs):
        calls.append((args[0].shape, args[0].dtype))
        return real(*args, **kwargs)

    rng = np.random.default_rng(45)
    datas = []
    for n in (7, 3, 12, 1, 5):
        ei, ew = (
            directed_graph(rng, n, weighted=True) if n > 1 else (torch.zeros(2, 0).long(), None)
        )
        d = Data(edge_index=ei, x=torch.randn(n, 2), num_nodes=n)
        if ew is not None:
            d.edge_weight = ew
        datas.append(d)
    for d in datas:
        if "edge_weight" not in d:
            d.edge_weight = torch.ones(d.edge_index.shape[1], dtype=torch.float64)
    t = MagneticLaplacianPE(4, q=0.25, eigenvalues_attr="mag_eigval", dtype=torch.float64)
    singles = [t(d) for d in datas]
    monkeypatch.setattr(spectrum, "eigh", counting)
    batch = t(Batch.from_data_list(datas))
    assert calls == [((5, 12, 12), torch.complex128)]  # one complex call for the Batch
    assert batch.magnetic_laplacian_pe.shape == (28, 8)
    names = ("magnetic_laplacian_pe", "magnetic_laplacian_pe_mask", "mag_eigval")
    assert_batch_equals_singles(batch, singles, names, atol=1e-10)
    for back, single in zip(batch.to_data_list(), singles, strict=True):
        torch.testing.assert_close(back.magnetic_laplacian_pe, single.magnetic_laplacian_pe)
    ref = magnetic_laplacian_pe(datas[2].edge_index, 12, k=4, edge_weight=datas[2].edge_weight)
    torch.testing.assert_close(
        singles[2].magnetic_laplacian_pe.float(), ref.features(), atol=1e-5, rtol=0
    )
    many = t.apply_many(datas)
    assert len(calls) == 3  # the Batch, the reference graph, the list: one call each
    for m, s in zip(many, singles, strict=True):
        torch.testing.assert_close(m.magnetic_laplacian_pe, s.magnetic_laplacian_pe)
    assert "magnetic_laplacian_pe" not in datas[0]


def test_symmetric_pe_refuses_directed_graphs_and_points_to_the_magnetic_pe():
    from spectra.graph import LaplacianPE

    data = Data(edge_index=torch.tensor([[0, 1], [1, 2]]), num_nodes=3)
    with pytest.raises(ValueError, match=r"directed.*MagneticLaplacianPE"):
        LaplacianPE(2, is_undirected=False)(data)
    assert MagneticLaplacianPE(2)(data).magnetic_laplacian_pe.shape == (3, 4)


def test_numpy_in_numpy_out_and_errors():
    ei = np.array([[0, 1, 2], [1, 2, 0]])
    out = magnetic_laplacian_pe(ei, 3, k=3)
    assert isinstance(out.pe, np.ndarray) and out.pe.dtype == np.complex64
    assert out.features().shape == (3, 6)
    assert isinstance(magnetic_laplacian(ei, 3), np.ndarray)
    with pytest.raises(ValueError, match="q must be"):
        magnetic_laplacian_pe(ei, 3, k=2, q=float("nan"))
    with pytest.raises(ValueError, match="normalization"):
        magnetic_laplacian_pe(ei, 3, k=2, normalization="rw")
    with pytest.raises(ValueError, match="symmetrize"):
        MagneticLaplacianPE(2, symmetrize="or")
    with pytest.raises(ValueError, match="k must be"):
        MagneticLaplacianPE(-1)
