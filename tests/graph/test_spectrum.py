"""laplacian_eigh: one padded core call equals per-graph SciPy eigh; padding never mixes."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse.csgraph as csgraph
import torch

from spectra.graph import laplacian_eigh

from .graphs import batch_of, dense_adj, random_graph, ref_laplacian


def mixed_graphs(rng, weighted=True):
    graphs = []
    for n, connected in [(9, True), (1, True), (6, False), (14, True), (2, False), (5, True)]:
        if n == 1:
            graphs.append(
                (
                    torch.zeros(2, 0, dtype=torch.long),
                    torch.zeros(0, dtype=torch.float64) if weighted else None,
                    1,
                )
            )
            continue
        ei, ew = random_graph(rng, n, p=0.25, connected=connected, weighted=weighted)
        graphs.append((ei, ew, n))
    return graphs


@pytest.mark.parametrize("normalization", [None, "sym", "rw"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_eigenpairs_match_scipy_per_graph(normalization, dtype):
    rng = np.random.default_rng(10)
    graphs = mixed_graphs(rng)
    ei, ew, batch, _sizes = batch_of(graphs)
    spec = laplacian_eigh(ei, edge_weight=ew, batch=batch, normalization=normalization, dtype=dtype)
    tol = 2e-4 if dtype == torch.float32 else 1e-9
    assert spec.eigenvalues.dtype == dtype and spec.eigenvectors.shape == (6, 14, 14)
    for g, (gei, gew, n) in enumerate(graphs):
        a = dense_adj(gei, n, gew)
        lap = ref_laplacian(a, normalization)
        deg = a.sum(1)
        if normalization == "rw":  # generalized symmetric form: (D - A) v = w D v
            dd = np.where(deg > 0, deg, 1.0)
            w_ref = scipy.linalg.eigvalsh(ref_laplacian(a, "sym"))
        else:
            w_ref = scipy.linalg.eigvalsh(lap)
        w = spec.eigenvalues[g, :n].double().numpy()
        v = spec.eigenvectors[g, :n, :n].double().numpy()
        np.testing.assert_allclose(w, w_ref, atol=tol * 10)
        np.testing.assert_allclose(lap @ v, v * w, atol=tol * 10)
        if normalization == "rw":
            np.testing.assert_allclose(v.T @ np.diag(dd) @ v, np.eye(n), atol=tol * 10)
        else:
            np.testing.assert_allclose(v.T @ v, np.eye(n), atol=tol * 10)
        # padding: zero rows and columns, zero values
        assert torch.all(spec.eigenvectors[g, n:, :] == 0)
        assert torch.all(spec.eigenvectors[g, :, n:] == 0)
        assert torch.all(spec.eigenvalues[g, n:] == 0)
        # the gauge: the (first, on near-ties) largest-|entry| of each column is positive
        mag = np.abs(v)
        piv = (mag >= mag.max(0) * (1 - 1e-8)).argmax(0)
        assert np.all(v[piv, np.arange(n)] > 0)


def test_components_counted_combinatorially():
    rng = np.random.default_rng(11)
    graphs = mixed_graphs(rng)
    ei, ew, batch, _ = batch_of(graphs)
    spec = laplacian_eigh(ei, edge_weight=ew, batch=batch)
    for g, (gei, gew, n) in enumerate(graphs):
        ref = csgraph.connected_components(dense_adj(gei, n, gew), directed=False)[0]
        assert int(spec.num_components[g]) == ref
        # eigenvalue 0 has exactly that multiplicity (isolated nodes included)
        w = spec.eigenvalues[g, :n]
        assert int((w.abs() < 1e-9).sum()) == ref


def test_single_graph_empty_and_one_node():
    spec = laplacian_eigh(torch.zeros(2, 0, dtype=torch.long), 1)
    assert spec.eigenvalues.tolist() == [[0.0]] and spec.eigenvectors.tolist() == [[[1.0]]]
    spec = laplacian_eigh(torch.zeros(2, 0, dtype=torch.long), 0)
    assert spec.eigenvalues.shape == (1, 0) and spec.eigenvectors.shape == (1, 0, 0)
    spec = laplacian_eigh(torch.zeros(2, 0, dtype=torch.long), batch=torch.zeros(0).long())
    assert spec.eigenvalues.shape == (0, 0)


def test_directed_graph_rejected_with_index():
    ei = torch.tensor([[0, 1, 2, 3], [1, 0, 3, 4]])
    with pytest.raises(ValueError, match=r"graph is directed.*at batch indices \[1\]"):
        laplacian_eigh(ei, batch=torch.tensor([0, 0, 1, 1, 1]))


def test_same_spectrum_whatever_the_padding():
    rng = np.random.default_rng(12)
    ei, ew = random_graph(rng, 7, weighted=True)
    alone = laplacian_eigh(ei, 7, ew)
    big, _bew = random_graph(rng, 30)
    graphs = [(ei, ew, 7), (big, torch.ones(big.shape[1], dtype=torch.float64), 30)]
    bei, bw, batch, _ = batch_of(graphs)
    padded = laplacian_eigh(bei, edge_weight=bw, batch=batch)
    torch.testing.assert_close(padded.eigenvalues[0, :7], alone.eigenvalues[0], atol=1e-12, rtol=0)
    torch.testing.assert_close(
        padded.eigenvectors[0, :7, :7], alone.eigenvectors[0], atol=1e-10, rtol=0
    )


def test_deterministic_across_calls():
    rng = np.random.default_rng(13)
    ei, ew, batch, _ = batch_of(mixed_graphs(rng))
    a = laplacian_eigh(ei, edge_weight=ew, batch=batch)
    b = laplacian_eigh(ei, edge_weight=ew, batch=batch)
    assert torch.equal(a.eigenvectors, b.eigenvectors)
    assert torch.equal(a.eigenvalues, b.eigenvalues)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    rng = np.random.default_rng(14)
    graphs = [(*random_graph(rng, n, weighted=True), n) for n in (5, 9, 13, 40)]
    ei, ew, batch, _ = batch_of(graphs)
    cpu = laplacian_eigh(ei, edge_weight=ew, batch=batch)
    gpu = laplacian_eigh(ei.cuda(), edge_weight=ew.cuda(), batch=batch.cuda(), device=None)
    assert gpu.eigenvectors.device.type == "cuda"
    torch.testing.assert_close(gpu.eigenvalues.cpu(), cpu.eigenvalues, atol=1e-10, rtol=0)
    torch.testing.assert_close(gpu.eigenvectors.cpu(), cpu.eigenvectors, atol=1e-8, rtol=0)


def test_numpy_in_numpy_out():
    from spectra.graph import heat_kernel_diagonal, laplacian_pe

    rng = np.random.default_rng(15)
    ei, ew = random_graph(rng, 7, weighted=True)
    spec_np = laplacian_eigh(ei.numpy(), 7, ew.numpy())
    spec_t = laplacian_eigh(ei, 7, ew)
    assert isinstance(spec_np.eigenvectors, np.ndarray)
    np.testing.assert_array_equal(spec_np.eigenvectors, spec_t.eigenvectors.numpy())
    assert spec_np.column_mask().tolist() == spec_t.column_mask().tolist()
    pe = laplacian_pe(ei.numpy(), 7, 3, edge_weight=ew.numpy())
    assert isinstance(pe.pe, np.ndarray) and pe.pe.dtype == np.float32
    np.testing.assert_array_equal(pe.pe, laplacian_pe(ei, 7, 3, edge_weight=ew).pe.numpy())
    heat = heat_kernel_diagonal(ei.numpy(), 7, times=[1.0], edge_weight=ew.numpy())
    assert isinstance(heat, np.ndarray) and heat.shape == (7, 1)
