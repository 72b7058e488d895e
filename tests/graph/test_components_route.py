"""Components of batches with graphs over 256 nodes (the route past label propagation):
the compiled helper's union-find and SciPy's ``connected_components`` give the same
labels, and the counts per graph are networkx's. Isolated nodes, zero-weight edges (not
edges), several components per graph."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

from spectra.core._solvers import _native
from spectra.graph import _components
from spectra.graph._components import edge_components
from spectra.graph._layout import Edges, make_layout


def _batch(seed: int):
    rng = np.random.default_rng(seed)
    sizes = [300, 40, 512, 1]
    src, dst, weight, batch, offset, expected = [], [], [], [], 0, []
    for n in sizes:
        m = n // 2
        s, d = rng.integers(0, n, m), rng.integers(0, n, m)
        w = rng.choice([0.0, 1.0, 2.5], m)  # zero weights are not edges
        g = nx.empty_graph(n)
        g.add_edges_from((int(a), int(b)) for a, b, x in zip(s, d, w, strict=True) if x != 0)
        expected.append(nx.number_connected_components(g))
        src.append(np.concatenate([s, d]) + offset)
        dst.append(np.concatenate([d, s]) + offset)
        weight.append(np.concatenate([w, w]))
        batch.append(np.full(n, len(batch)))
        offset += n
    edge_index = torch.from_numpy(np.stack([np.concatenate(src), np.concatenate(dst)]))
    b = torch.from_numpy(np.concatenate(batch))
    layout = make_layout(edge_index, offset, b, len(sizes))
    w = torch.from_numpy(np.concatenate(weight))
    return Edges(layout, edge_index[0], edge_index[1], w), expected


@pytest.mark.parametrize("seed", range(3))
def test_both_routes_give_the_same_labels_and_networkx_counts(seed, monkeypatch):
    edges, expected = _batch(seed)
    assert edges.layout.n_max > _components.PROPAGATE_MAX_N
    calls = []
    real = _components.entry_components
    monkeypatch.setattr(_components, "entry_components", lambda *a: calls.append(1) or real(*a))
    comps, labels = edge_components(edges)
    assert comps.tolist() == expected and calls == [1]
    monkeypatch.setattr(_components, "entry_components", lambda *a: None)  # SciPy's route
    comps_scipy, labels_scipy = edge_components(edges)
    assert comps_scipy.tolist() == expected
    if _native.native_module() is not None:
        assert torch.equal(labels, labels_scipy)
