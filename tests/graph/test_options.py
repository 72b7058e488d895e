"""Grouped options (PEColumns, PEAttrs) with the older keywords, the refusals of the graph
domain (InputError, one count check, k >= 1), and the trust cases of issue 24."""

from __future__ import annotations

import ast
import inspect
import pathlib

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, Data

import spectra.graph
from spectra.core import InputError
from spectra.graph import (
    LaplacianPE,
    MagneticLaplacianPE,
    PEAttrs,
    PEColumns,
    RandomWalkPE,
    laplacian_pe,
    magnetic_laplacian_pe,
    random_walk_pe,
)

from .graphs import random_graph

GRAPH_DIR = pathlib.Path(spectra.graph.__file__).parent


def test_grouped_options_equal_the_older_keywords():
    rng = np.random.default_rng(80)
    ei, ew = random_graph(rng, 9, connected=False, weighted=True)
    data = Data(edge_index=ei, w=ew, num_nodes=11)
    new = LaplacianPE(4, attrs=PEAttrs(mask="m", eigenvalues="ev", groups="gr", heat="h",
                                       weight="w"),
                      columns=PEColumns(drop_trivial=False, multiplicity_tol=1e-3),
                      heat_times=[1.0])(data)  # fmt: skip
    old = LaplacianPE(4, mask_attr="m", eigenvalues_attr="ev", groups_attr="gr", heat_attr="h",
                      weight_attr="w", drop_trivial=False, multiplicity_tol=1e-3,
                      heat_times=[1.0])(data)  # fmt: skip
    for name in ("laplacian_eigenvector_pe", "m", "ev", "gr", "h"):
        assert torch.equal(new[name], old[name])
    a = laplacian_pe(ei, 11, k=3, edge_weight=ew, columns=PEColumns(drop_trivial=False))
    b = laplacian_pe(ei, 11, k=3, edge_weight=ew, drop_trivial=False)
    assert torch.equal(a.pe, b.pe)
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    c = laplacian_pe(ei, 11, k=3, random_sign=g1)
    d = laplacian_pe(ei, 11, k=3, random_sign=True, generator=g2)
    assert torch.equal(c.pe, d.pe)
    m1 = magnetic_laplacian_pe(ei, 11, k=3, columns=PEColumns(drop_trivial=True, trivial_tol=1e-6))
    m2 = magnetic_laplacian_pe(ei, 11, k=3, drop_trivial=True, trivial_tol=1e-6)
    assert torch.equal(m1.pe, m2.pe)
    t1 = MagneticLaplacianPE(3, attrs=PEAttrs(eigenvalues="ev"))(Data(edge_index=ei, num_nodes=11))
    t2 = MagneticLaplacianPE(3, eigenvalues_attr="ev")(Data(edge_index=ei, num_nodes=11))
    assert torch.equal(t1.ev, t2.ev)


def test_unknown_keywords_and_bad_groups_are_refused():
    with pytest.raises(TypeError, match="unexpected keyword"):
        laplacian_pe(torch.tensor([[0, 1], [1, 0]]), 2, k=1, masks="x")
    with pytest.raises(TypeError, match="unexpected keyword"):
        MagneticLaplacianPE(2, groups_attr="g")  # the magnetic transform stores no groups
    with pytest.raises(TypeError, match="PEColumns"):
        LaplacianPE(2, columns={"drop_trivial": False})
    with pytest.raises(InputError, match="multiplicity_tol"):
        PEColumns(multiplicity_tol=-1.0)
    with pytest.raises(TypeError, match="random_sign"):
        LaplacianPE(2, random_sign="yes")


def test_no_public_signature_over_thirteen_parameters():
    for name in spectra.graph.__all__:
        obj = getattr(spectra.graph, name)
        fn = obj.__init__ if inspect.isclass(obj) else obj
        if not callable(fn) or not hasattr(fn, "__code__"):
            continue
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.name != "self" and p.kind is not p.VAR_KEYWORD]  # fmt: skip
        assert len(params) <= 13, (name, len(params))


@pytest.mark.parametrize(
    "make",
    [
        lambda k: LaplacianPE(k),
        lambda k: MagneticLaplacianPE(k),
        lambda k: RandomWalkPE(k),
        lambda k: laplacian_pe(torch.tensor([[0, 1], [1, 0]]), 2, k=k),
        lambda k: magnetic_laplacian_pe(torch.tensor([[0], [1]]), 2, k=k),
        lambda k: random_walk_pe(torch.tensor([[0, 1], [1, 0]]), 2, walk_length=k),
    ],
)
@pytest.mark.parametrize("k", [0, -2, 1.5, True])
def test_k_zero_is_refused_like_negative_k(make, k):
    # decided (issue 27): an encoding without columns is a mistake, refused as k=-2 is
    with pytest.raises(InputError, match="must be an integer >= 1"):
        make(k)


def test_bad_input_is_an_input_error_with_indices():
    ei = torch.tensor([[0, 1, 2, 3], [1, 0, 3, 4]])  # graph 1 is directed
    batch = torch.tensor([0, 0, 1, 1, 1])
    with pytest.raises(InputError) as err:
        laplacian_pe(ei, k=1, batch=batch)
    assert err.value.indices == [(1,)] and err.value.what == "graph"
    ei = torch.tensor([[0, 1, 2, 3], [1, 0, 3, 2]])
    w = torch.tensor([1.0, 1.0, -1.0, -1.0])
    with pytest.raises(InputError, match="negative weighted degree") as err:
        laplacian_pe(ei, k=1, batch=torch.tensor([0, 0, 1, 1]), edge_weight=w)
    assert err.value.indices == [(1,)]
    with pytest.raises(InputError, match="joins graph 0 and graph 1"):
        laplacian_pe(torch.tensor([[0, 2], [2, 0]]), k=1, batch=torch.tensor([0, 0, 1]))


def test_no_bare_value_error_in_the_graph_domain():
    raised = []
    for path in GRAPH_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and node.exc is not None:
                call = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(call, ast.Name) and call.id == "ValueError":
                    raised.append(f"{path.name}:{node.lineno}")
    assert raised == []
    # one count check for the core and every domain: the core's (spectra.core.domain)
    package = GRAPH_DIR.parent
    counts = [
        str(p.relative_to(package))
        for p in package.rglob("*.py")
        if "def check_count(" in p.read_text()
    ]
    assert counts == ["core/_options.py"]


def test_random_walk_pe_has_its_own_module():
    assert RandomWalkPE.__module__ == "spectra.graph._random_walk_transform"


def dense_walks(ei: torch.Tensor, w: torch.Tensor, n: int, steps: int) -> np.ndarray:
    a = np.zeros((n, n))
    for (i, j), x in zip(ei.T.tolist(), w.tolist(), strict=True):
        if i != j:
            a[i, j] += x
    p = a / a.sum(1, keepdims=True)
    return np.stack([np.diag(np.linalg.matrix_power(p, t)) for t in range(1, steps + 1)], 1)


def test_random_walk_with_signed_weights_is_diag_of_p_power():
    # issue 24: a negative edge weight with positive degrees; (P^t)_ii exceeds 1 here
    ei = torch.tensor([[0, 1, 1, 2, 2, 3, 0, 2], [1, 0, 2, 1, 3, 2, 2, 0]])
    w = torch.tensor([1.0, 1.0, 2.0, 2.0, 1.0, 1.0, -0.5, -0.5], dtype=torch.float64)
    ref = dense_walks(ei, w, 4, 6)
    assert ref.max() > 1.0 and ref.min() < 0.0
    out = random_walk_pe(ei, 4, walk_length=6, edge_weight=w, dtype=torch.float64)
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-12)
    data = Data(edge_index=ei, edge_weight=w, num_nodes=4)
    t = RandomWalkPE(6, dtype=torch.float64)
    np.testing.assert_allclose(t(data).random_walk_pe.numpy(), ref, atol=1e-12)
    batch = t(Batch.from_data_list([data, data])).random_walk_pe.numpy()
    np.testing.assert_allclose(batch, np.concatenate([ref, ref]), atol=1e-12)
    # neighbours: random signed weights with positive degrees, and non-negative ones
    rng = np.random.default_rng(81)
    for signed in (True, False):
        ei, ew = random_graph(rng, 8, p=0.6, weighted=True)
        if signed:
            ew = ew * torch.where(torch.rand(ew.shape, generator=torch.Generator().manual_seed(1))
                                  < 0.2, -0.3, 1.0).double()  # fmt: skip
            half = ei[0] < ei[1]  # keep the weights symmetric
            ew = ew.clone()
            lookup = {(int(i), int(j)): float(x) for i, j, x in zip(*ei, ew, strict=True)}
            for e, (i, j) in enumerate(ei.T.tolist()):
                if not half[e]:
                    ew[e] = lookup[(j, i)]
            deg = torch.zeros(8, dtype=torch.float64).index_add(0, ei[0], ew)
            if bool((deg <= 0).any()):
                continue
        out = random_walk_pe(ei, 8, walk_length=5, edge_weight=ew, dtype=torch.float64)
        np.testing.assert_allclose(out.numpy(), dense_walks(ei, ew, 8, 5), atol=1e-11)


def test_random_walk_refuses_cancelling_degrees():
    ei = torch.tensor([[0, 1, 0, 2], [1, 0, 2, 0]])
    w = torch.tensor([1.0, 1.0, -1.0, -1.0])  # node 0 has edges but degree 0
    with pytest.raises(InputError, match="zero weighted degree"):
        random_walk_pe(ei, 3, walk_length=2, edge_weight=w)


def test_magnetic_pe_on_empty_graphs():
    # issue 24: 0 nodes gave NotImplementedError "gt_cpu" for ComplexDouble
    empty = Data(edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=0)
    out = MagneticLaplacianPE(3, eigenvalues_attr="ev")(empty)
    assert out.magnetic_laplacian_pe.shape == (0, 6)
    assert out.magnetic_laplacian_pe_mask.shape == (0, 3) and out.ev.shape == (0, 3)
    res = magnetic_laplacian_pe(torch.zeros(2, 0, dtype=torch.long), 0, k=2)
    assert res.pe.shape == (0, 2) and res.pe.is_complex() and not res.mask.any()
    two = Data(edge_index=torch.tensor([[0], [1]]), num_nodes=2)
    batch = MagneticLaplacianPE(3)(Batch.from_data_list([empty, two, empty]))
    assert batch.magnetic_laplacian_pe.shape == (2, 6)
    for d in (empty, Data(edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=0)):
        assert LaplacianPE(2)(d).laplacian_eigenvector_pe.shape == (0, 2)
        assert RandomWalkPE(2)(d).random_walk_pe.shape == (0, 2)
