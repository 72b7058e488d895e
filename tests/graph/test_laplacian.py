"""spectra.graph.laplacian against PyG's get_laplacian, SciPy's csgraph and a NumPy loop."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse.csgraph as csgraph
import torch
from torch_geometric.utils import get_laplacian, to_dense_adj

from spectra.graph import laplacian

from .graphs import TOL, batch_of, dense_adj, random_graph, ref_laplacian

NORMS = [None, "sym", "rw"]


def pyg_dense(edge_index, n, edge_weight, normalization, dtype):
    ei, ew = get_laplacian(
        edge_index,
        None if edge_weight is None else edge_weight.to(dtype),
        normalization=normalization,
        num_nodes=n,
        dtype=dtype,
    )
    return to_dense_adj(ei, edge_attr=ew, max_num_nodes=n)[0]


@pytest.mark.parametrize("normalization", NORMS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_pyg_without_isolated_nodes(normalization, dtype, weighted):
    rng = np.random.default_rng(1)
    for n in (1, 2, 7, 19):
        if n == 1:
            ei, ew = torch.zeros(2, 0, dtype=torch.long), None
            ew = torch.zeros(0, dtype=torch.float64) if weighted else None
        else:
            ei, ew = random_graph(rng, n, weighted=weighted)
        ours = laplacian(ei, n, None if ew is None else ew.to(dtype), normalization, dtype=dtype)
        assert ours.dtype == dtype and ours.shape == (n, n)
        if n == 1:  # a single isolated node: our rule, L = 0 in every normalization
            assert ours.abs().max() == 0
            continue
        ref = pyg_dense(ei, n, ew, normalization, dtype)
        torch.testing.assert_close(ours, ref, atol=TOL[dtype], rtol=TOL[dtype])


@pytest.mark.parametrize("normalization", ["sym", "rw"])
def test_isolated_nodes_differ_from_pyg_only_on_their_diagonal(normalization):
    rng = np.random.default_rng(2)
    ei, ew = random_graph(rng, 6, weighted=True)
    n = 9  # nodes 6, 7, 8 isolated
    ours = laplacian(ei, n, ew, normalization, dtype=torch.float64)
    ref = pyg_dense(ei, n, ew, normalization, torch.float64)
    diff = (ours - ref).abs()
    expected = torch.zeros(n, n, dtype=torch.float64)
    expected[[6, 7, 8], [6, 7, 8]] = 1.0  # PyG fills 1, we keep the zero row
    torch.testing.assert_close(diff, expected, atol=1e-12, rtol=0)


@pytest.mark.parametrize("normalization", NORMS)
def test_matches_numpy_reference_and_scipy_csgraph(normalization):
    rng = np.random.default_rng(3)
    ei, ew = random_graph(rng, 12, p=0.2, connected=False, weighted=True)
    n = 14
    a = dense_adj(ei, n, ew)
    ours = laplacian(ei, n, ew, normalization, dtype=torch.float64).numpy()
    np.testing.assert_allclose(ours, ref_laplacian(a, normalization), atol=1e-12)
    if normalization == "sym":  # SciPy uses the same isolated-node rule
        np.testing.assert_allclose(ours, csgraph.laplacian(a, normed=True), atol=1e-12)
    if normalization is None:
        np.testing.assert_allclose(ours, csgraph.laplacian(a), atol=1e-12)


@pytest.mark.parametrize("normalization", NORMS)
def test_batched_blocks_equal_per_graph(normalization):
    rng = np.random.default_rng(4)
    graphs = []
    for n in (5, 1, 8, 3):
        ei, ew = (
            random_graph(rng, n, weighted=True)
            if n > 1
            else (torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=torch.float64))
        )
        graphs.append((ei, ew, n))
    ei, ew, batch, _sizes = batch_of(graphs)
    out = laplacian(
        ei, edge_weight=ew, normalization=normalization, batch=batch, padding_diagonal=3.5
    )
    assert out.shape == (4, 8, 8) and out.dtype == torch.float64
    for g, (gei, gew, n) in enumerate(graphs):
        single = laplacian(gei, n, gew, normalization)
        torch.testing.assert_close(out[g, :n, :n], single)
        pad = out[g, n:, :]
        assert torch.all(out[g, :n, n:] == 0)
        torch.testing.assert_close(pad[:, n:], 3.5 * torch.eye(8 - n, dtype=torch.float64))
        assert torch.all(pad[:, :n] == 0)


def test_duplicates_add_and_self_loops_are_dropped():
    ei = torch.tensor([[0, 1, 0, 1, 2, 2], [1, 0, 1, 0, 2, 2]])
    lap = laplacian(ei, 3)
    expected = torch.tensor([[2.0, -2, 0], [-2, 2, 0], [0, 0, 0]])
    torch.testing.assert_close(lap, expected)


def test_directed_graph_uses_out_degree_like_pyg():
    ei = torch.tensor([[0, 0, 1], [1, 2, 2]])
    for norm in NORMS:
        ours = laplacian(ei, 3, normalization=norm)
        ref = pyg_dense(ei, 3, None, norm, torch.float32)
        # node 2 has no out-edges: zero degree; PyG puts 1 on its diagonal when normalized
        if norm is not None:
            ref[2, 2] = 0.0
        torch.testing.assert_close(ours, ref)


def test_numpy_in_numpy_out_and_default_dtype():
    ei = np.array([[0, 1], [1, 0]])
    out = laplacian(ei, 2, normalization="sym")
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    np.testing.assert_allclose(out, [[1, -1], [-1, 1]])
    empty = laplacian(torch.zeros(2, 0, dtype=torch.long), 0)
    assert empty.shape == (0, 0)


def test_trailing_empty_graphs_with_num_graphs():
    ei = torch.tensor([[0, 1], [1, 0]])
    out = laplacian(ei, batch=torch.tensor([0, 0]), num_graphs=3)
    assert out.shape == (3, 2, 2)
    assert torch.all(out[1:] == 0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"edge_index": torch.tensor([[0, 3], [3, 0]]), "batch": torch.tensor([0, 0, 1, 1])},
            "joins graph 0 and graph 1",
        ),
        ({"edge_index": torch.tensor([[0, 1], [1, 0]]), "batch": torch.tensor([1, 0])}, "sorted"),
        ({"edge_index": torch.tensor([[0, 5], [5, 0]]), "num_nodes": 3}, "outside"),
        ({"edge_index": torch.tensor([0, 1])}, r"shape \(2, E\)"),
        ({"edge_index": torch.tensor([[0, 1], [1, 0]]), "normalization": "lap"}, "normalization"),
        (
            {
                "edge_index": torch.tensor([[0, 1], [1, 0]]),
                "edge_weight": torch.tensor([1.0, float("nan")]),
            },
            "NaN",
        ),
        (
            {"edge_index": torch.tensor([[0, 1], [1, 0]]), "edge_weight": torch.tensor([1.0])},
            "edge_weight must have shape",
        ),
        (
            {
                "edge_index": torch.tensor([[0, 1], [1, 0]]),
                "edge_weight": torch.tensor([-1.0, -1.0]),
                "normalization": "sym",
            },
            "negative weighted degree",
        ),
        (
            {
                "edge_index": torch.tensor([[0, 1], [1, 0]]),
                "num_nodes": 3,
                "batch": torch.tensor([0, 0]),
            },
            "num_nodes is 3 but batch has 2",
        ),
    ],
)
def test_bad_input_is_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        laplacian(**kwargs)


def test_float_edge_index_rejected():
    with pytest.raises(TypeError, match="integers"):
        laplacian(torch.tensor([[0.0, 1.0], [1.0, 0.0]]))
