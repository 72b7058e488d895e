"""``laplacian_pe`` under ``torch.compile(fullgraph=True)`` and ``torch.export`` (issue 24):
no graph break, and compiled equals eager bitwise (every output, signs and gradients)."""

from __future__ import annotations

import pytest
import torch

from spectra.graph import PEColumns, laplacian_pe

# a path of 5 nodes, a triangle plus an isolated node, and a 4-cycle, as one batch
EDGES = torch.tensor(
    [[0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 6, 7, 7, 5, 9, 10, 10, 11, 11, 12, 12, 9],
     [1, 0, 2, 1, 3, 2, 4, 3, 6, 5, 7, 6, 5, 7, 10, 9, 11, 10, 12, 11, 9, 12]]
)  # fmt: skip
BATCH = torch.tensor([0] * 5 + [1] * 4 + [2] * 4)
WEIGHT = torch.linspace(0.5, 2.0, EDGES.shape[1], dtype=torch.float64)
WEIGHT = (WEIGHT + WEIGHT[torch.argsort(EDGES[0] * 100 + EDGES[1])].flip(0)) / 2


def symmetric(weight: torch.Tensor) -> torch.Tensor:
    """Edge weights with ``w(u, v) == w(v, u)`` (each pair's two directions averaged)."""
    key = torch.minimum(EDGES[0], EDGES[1]) * 100 + torch.maximum(EDGES[0], EDGES[1])
    _, inv = torch.unique(key, return_inverse=True)
    mean = torch.zeros(int(inv.max()) + 1, dtype=weight.dtype).index_add(0, inv, weight) / 2
    return mean[inv]


def assert_same(a, b):
    for x, y in zip(a, b, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert torch.equal(x, y)


def compiled(fn, backend):
    torch._dynamo.reset()
    return torch.compile(fn, backend=backend, fullgraph=True)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_compiled_equals_eager_on_a_batch(backend, dtype):
    def fn(e, b):
        return tuple(laplacian_pe(e, k=3, batch=b, num_graphs=3, dtype=dtype))

    assert_same(compiled(fn, backend)(EDGES, BATCH), fn(EDGES, BATCH))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_sizes_from_the_data_are_dynamic(backend):
    # no num_nodes, no num_graphs: the compiled op takes them from the data, as eager
    def fn(e, b):
        out = laplacian_pe(e, k=2, batch=b)
        return out.pe * 2, out.num_components + 1

    assert_same(compiled(fn, backend)(EDGES, BATCH), fn(EDGES, BATCH))
    single = EDGES[:, :8]  # the path alone, num_nodes from edge_index.max() + 1

    def one(e):
        return laplacian_pe(e, k=2).pe

    assert_same([compiled(one, backend)(single)], [one(single)])


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_random_signs_and_pyg_convention_draw_as_eager(backend):
    def fn(e, b):
        a = laplacian_pe(e, k=3, batch=b, num_graphs=3, random_sign=True)
        p = laplacian_pe(e, k=3, batch=b, num_graphs=3, convention="pyg")
        return a.pe, p.pe, p.mask

    f = compiled(fn, backend)
    torch.manual_seed(3)
    got = f(EDGES, BATCH)
    torch.manual_seed(3)
    want = fn(EDGES, BATCH)
    assert_same(got, want)
    plain = laplacian_pe(EDGES, k=3, batch=BATCH).pe
    assert not torch.equal(want[0], plain)  # signs were drawn (seed 3 flips some column)
    assert torch.equal(want[0].abs(), plain.abs())


def test_gradient_through_edge_weights_equals_eager():
    def loss(w):
        out = laplacian_pe(EDGES, k=2, batch=BATCH, num_graphs=3, edge_weight=symmetric(w),
                           dtype=torch.float64)  # fmt: skip
        return (out.pe**2 * torch.arange(13.0, dtype=torch.float64)[:, None]).sum() + (
            out.eigenvalues.sum()
        )

    w = WEIGHT.clone().requires_grad_(True)
    (eager,) = torch.autograd.grad(loss(w), w)
    (got,) = torch.autograd.grad(compiled(loss, "aot_eager")(w), w)
    assert torch.equal(got, eager)
    assert eager.abs().max() > 0


def test_inductor_small_case():
    def fn(e, b):
        out = laplacian_pe(e, k=2, batch=b, num_graphs=3)
        return out.pe + 1.0, out.mask

    assert_same(compiled(fn, "inductor")(EDGES, BATCH), fn(EDGES, BATCH))


class Encoder(torch.nn.Module):
    """A module computing encodings and a linear map of them."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 4, dtype=torch.float64)

    def forward(self, edge_index, batch):
        out = laplacian_pe(edge_index, k=3, batch=batch, num_graphs=3, dtype=torch.float64,
                           columns=PEColumns(multiplicity_tol=1e-8))  # fmt: skip
        return self.lin(out.pe * out.mask[batch]), out.eigenvalues


def test_module_compiles_and_exports():
    torch.manual_seed(0)
    model = Encoder()
    want = model(EDGES, BATCH)
    assert_same(compiled(model, "aot_eager")(EDGES, BATCH), want)
    program = torch.export.export(model, (EDGES, BATCH))
    targets = {str(n.target) for n in program.graph.nodes if n.op == "call_function"}
    assert "spectra_graph.laplacian_pe.default" in targets  # one opaque op in the program
    assert_same(program.module()(EDGES, BATCH), want)


def test_refusals_under_compile():
    # what the compiled op cannot take stops the trace with the InputError's message
    gen = torch.Generator().manual_seed(1)

    def with_generator(e):
        return laplacian_pe(e, k=2, random_sign=gen).pe

    with pytest.raises(Exception, match="random_sign"):
        compiled(with_generator, "eager")(EDGES[:, :8])

    def with_options(e):
        return laplacian_pe(e, k=2, eigh_options={"workers": 1}).pe

    with pytest.raises(Exception, match="eigh_options"):
        compiled(with_options, "eager")(EDGES[:, :8])
    with pytest.raises(Exception, match="k must be"):  # raised while tracing
        compiled(lambda e: laplacian_pe(e, k=0).pe, "eager")(EDGES[:, :8])
