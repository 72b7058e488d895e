"""The undirected check of large edge lists (over 65,536 entries, on the CPU): the compiled
helper's exact proof (``mirror_exact``), and where it gives no verdict (or is not built)
SciPy's sum-and-transpose, which judges with the tolerance and names the graphs, coalesced
or not, real or complex. Both routes run on every input (``route``). Reference: each
graph's dense matrix against its transpose. (A binary search over a coalesced list was
tried instead: 15 ms against SciPy's 7.7 ms on the D&D-like batch's 133,696 entries, and
dropped.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.utils import coalesce, to_undirected

from spectra.core._solvers import _native
from spectra.graph import _assemble
from spectra.graph._assemble import Entries, asymmetric_graphs
from spectra.graph._layout import make_layout


def _batch(graphs: int = 40, n: int = 300, degree: int = 8, seed: int = 3):
    gen = torch.Generator().manual_seed(seed)
    parts, batch = [], []
    for g in range(graphs):
        src = torch.randint(0, n, (n * degree // 2,), generator=gen)
        dst = torch.randint(0, n, (n * degree // 2,), generator=gen)
        parts.append(to_undirected(torch.stack([src, dst]), num_nodes=n) + g * n)
        batch.append(torch.full((n,), g))
    edge_index = torch.cat(parts, dim=1)  # coalesced: each graph sorted, offsets increasing
    return edge_index, torch.cat(batch), graphs * n, graphs


def _entries(edge_index, batch, num_nodes, graphs, weight) -> Entries:
    layout = make_layout(edge_index, num_nodes, batch, graphs)
    return Entries(layout, edge_index[0], edge_index[1], weight)


def _reference(edge_index, batch, num_nodes, graphs, weight, tol) -> list[int]:
    bad = []
    for g in range(graphs):
        nodes = (batch == g).nonzero().flatten()
        lo, n = int(nodes[0]), nodes.numel()
        keep = batch[edge_index[0]] == g
        a = np.zeros((n, n), dtype=weight.numpy().dtype)
        np.add.at(
            a,
            ((edge_index[0][keep] - lo).numpy(), (edge_index[1][keep] - lo).numpy()),
            weight[keep].numpy(),
        )
        np.fill_diagonal(a, 0)
        if np.abs(a - a.conj().T).max() > tol * max(np.abs(a).max(), 1.0):
            bad.append(g)
    return bad


class Route:
    """Which route judged: the helper's verdicts (``proofs``) and SciPy's calls."""

    def __init__(self, name: str) -> None:
        self.name, self.proofs, self.scipy = name, [], []

    def proved(self) -> bool:
        """The input was proven exactly Hermitian by the helper, SciPy not asked."""
        return self.proofs == [True] and self.scipy == []

    def judged_by_scipy(self) -> bool:
        expected = [False] if self.name == "native" else []
        return self.proofs == expected and self.scipy == [1]


@pytest.fixture(params=["native", "scipy"])
def route(request, monkeypatch):
    got = Route(request.param)
    real_scipy = _assemble._asymmetric_scipy
    monkeypatch.setattr(
        _assemble, "_asymmetric_scipy", lambda *a: got.scipy.append(1) or real_scipy(*a)
    )
    if request.param == "native":
        if _native.native_module() is None:
            pytest.skip("the compiled helper is not built")
        real = _assemble.mirror_exact

        def spy(*a):
            verdict = real(*a)
            got.proofs.append(verdict)
            return verdict

        monkeypatch.setattr(_assemble, "mirror_exact", spy)
    else:
        monkeypatch.setattr(_assemble, "mirror_exact", lambda *a: None)
    return got


def _symmetric_passes(route: Route) -> bool:
    return route.proved() if route.name == "native" else route.judged_by_scipy()


def test_a_symmetric_weighted_batch_passes(route):
    edge_index, batch, num_nodes, graphs = _batch()
    assert edge_index.shape[1] > 65536
    rng = np.random.default_rng(0)
    half = torch.from_numpy(rng.uniform(0.5, 2.0, edge_index.shape[1]))
    # symmetric weights: the mean of the weight of (i, j) and of (j, i), by key
    key = (edge_index[0] * num_nodes + edge_index[1]).numpy()
    mirror = (edge_index[1] * num_nodes + edge_index[0]).numpy()
    order = np.searchsorted(key, mirror)
    weight = (half + half[order]) / 2
    entries = _entries(edge_index, batch, num_nodes, graphs, weight)
    assert asymmetric_graphs(entries, 1e-10) == [] and _symmetric_passes(route)
    assert _reference(edge_index, batch, num_nodes, graphs, weight, 1e-10) == []


def test_asymmetries_go_to_the_tolerance_test_and_are_named(route):
    edge_index, batch, num_nodes, graphs = _batch(seed=4)
    weight = torch.ones(edge_index.shape[1], dtype=torch.float64)
    first = int((batch[edge_index[0]] == 7).nonzero()[0])  # an edge of graph 7
    weight[first] = 1.5  # beyond the tolerance
    within = int((batch[edge_index[0]] == 21).nonzero()[0])
    weight[within] = 1.0 + 1e-14  # within it: graph 21 stays undirected
    entries = _entries(edge_index, batch, num_nodes, graphs, weight)
    got = asymmetric_graphs(entries, 1e-10)
    assert got == [7] == _reference(edge_index, batch, num_nodes, graphs, weight, 1e-10)
    assert route.judged_by_scipy()


def test_a_list_out_of_order(route):
    edge_index, batch, num_nodes, graphs = _batch(seed=5)
    perm = torch.randperm(edge_index.shape[1], generator=torch.Generator().manual_seed(1))
    edge_index = edge_index[:, perm]
    weight = torch.ones(edge_index.shape[1], dtype=torch.float64)
    entries = _entries(edge_index, batch, num_nodes, graphs, weight)
    assert asymmetric_graphs(entries, 1e-10) == [] and _symmetric_passes(route)


def test_a_complex_hermitian_coalesced_list(route):
    edge_index, batch, num_nodes, graphs = _batch(seed=6)
    key = (edge_index[0] * num_nodes + edge_index[1]).numpy()
    mirror = (edge_index[1] * num_nodes + edge_index[0]).numpy()
    order = torch.from_numpy(np.searchsorted(key, mirror))
    theta = torch.rand(
        edge_index.shape[1], generator=torch.Generator().manual_seed(2), dtype=torch.float64
    )
    upper = edge_index[0] < edge_index[1]
    phase = torch.where(upper, theta, -theta[order])  # (j, i) carries the conjugate phase
    weight = torch.polar(torch.ones_like(phase), phase)
    entries = _entries(edge_index, batch, num_nodes, graphs, weight)
    assert asymmetric_graphs(entries, 1e-10) == [] and _symmetric_passes(route)
    assert coalesce(edge_index, num_nodes=num_nodes).shape == edge_index.shape  # no duplicates
