"""``spectra.eigh``/``eigvalsh`` inside ``torch.compile(fullgraph=True)`` and
``torch.export`` (issue 24): no graph break, and results bitwise the eager ones on the
direct path, the pipeline, the kernels and a fanned-out batch, forward and backward."""

from __future__ import annotations

import pytest
import torch

import spectra
from spectra.core import _compile

from .helpers import random_hermitian

BACKENDS = ["eager", "aot_eager", "inductor"]


def _pairs(x):
    return spectra.eigh(x)


def _top2(x):
    return spectra.eigvalsh(x, k=2, largest=True)


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("batch", "n", "dtype"),
    [
        ((), 5, torch.float64),  # the direct path
        ((40,), 3, torch.float32),  # the closed-form kernel
        ((64,), 40, torch.complex128),  # LAPACK through the pipeline, fanned out
    ],
)
def test_compiled_equals_eager_bitwise(backend, batch, n, dtype):
    a = random_hermitian(batch or (1,), n, dtype, seed=n).reshape(*batch, n, n)
    compiled = torch.compile(_pairs, fullgraph=True, backend=backend)
    w, v = compiled(a)
    we, ve = _pairs(a)
    assert torch.equal(w, we) and torch.equal(v, ve)
    top = torch.compile(_top2, fullgraph=True, backend=backend)(a)
    assert torch.equal(top, _top2(a))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compiled_backward_equals_eager_bitwise(backend):
    a0 = random_hermitian((6,), 5, torch.float64, seed=3)

    def loss(x):
        w, v = spectra.eigh(x)
        return w, v

    grads = []
    for fn in (torch.compile(loss, fullgraph=True, backend=backend), loss):
        a = a0.clone().requires_grad_(True)
        w, v = fn(a)
        gw = torch.linspace(-1, 1, 5, dtype=torch.float64).expand_as(w)
        gv = torch.ones_like(v)
        torch.autograd.backward([w, v], [gw, gv])  # the upstream gradients given exactly
        grads.append(a.grad)
    assert torch.equal(grads[0], grads[1])
    x = a0.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(
        torch.compile(lambda m: spectra.eigvalsh(m), fullgraph=True, backend=backend)(x).sum(),
        [x],
    )
    torch.testing.assert_close(g, torch.eye(5, dtype=torch.float64).expand(6, 5, 5))


def test_export_of_a_module_calling_eigh():
    class Spectrum(torch.nn.Module):
        def forward(self, x):
            w, v = spectra.eigh(x)
            return w, v[..., -1]

    a = random_hermitian((8,), 6, torch.float64, seed=1)
    program = torch.export.export(Spectrum(), (a,))
    w, top = program.module()(a)
    we, ve = spectra.eigh(a)
    assert torch.equal(w, we) and torch.equal(top, ve[..., -1])


def test_calls_the_ops_do_not_take_are_traced_as_before():
    a = random_hermitian((2,), 4, torch.float64, seed=2)
    assert _compile.compiled_call(a, True, None, False, True, {"b": None, "x": a}) is None
    assert _compile.compiled_call(a, True, None, False, True, {"options": None}) is not None
    assert _compile.compiled_call(a.numpy(), True, None, False, True, {}) is None


def test_the_custom_ops_pass_torchs_opcheck():
    a = random_hermitian((3,), 4, torch.float64, seed=5).requires_grad_(True)
    torch.library.opcheck(torch.ops.spectra.eigh.default, (a, True))
    torch.library.opcheck(torch.ops.spectra.eigvalsh.default, (a.detach(), True))
