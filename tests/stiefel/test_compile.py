"""Stiefel retractions inside ``torch.compile(fullgraph=True)`` and ``torch.export``
(issue 24): no graph break, results bitwise the eager ones, forward and backward, on the
eager and aot_eager backends (inductor: one small case), the refusals raised by the compiled
program, and the op itself passing torch's ``opcheck``. Every case asserts that the compiled
call ran the op (``spectra::stiefel_apply`` in the graph), so none claims a path it does
not take."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

import spectra
import spectra.stiefel._traced as traced_module
from spectra.stiefel import (
    Stiefel,
    StiefelParameter,
    inv_sqrtm,
    polar,
    retract_cayley,
    retract_polar,
    retract_qr,
)

from .helpers import haar, svd_polar, tangent


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def ops(monkeypatch):
    """The names the compiled program handed to ``spectra::stiefel_apply`` (recorded by
    its eager implementation when the program runs)."""
    seen: list[str] = []
    real = traced_module._function

    def function(name):
        seen.append(name)
        return real(name)

    monkeypatch.setattr(traced_module, "_function", function)
    return seen


def _upstream(y):
    g = torch.linspace(-1, 1, y.numel(), dtype=y.real.dtype).reshape(y.shape)
    return torch.complex(g, g.flip(-1)) if y.is_complex() else g


def _run(fn, inputs, backend, grad):
    leaves = [x.detach().clone().requires_grad_(grad) for x in inputs]
    target = fn if backend is None else torch.compile(fn, fullgraph=True, backend=backend)
    y = target(*leaves)
    if not grad:
        return y, []
    y.backward(_upstream(y))
    return y.detach(), [x.grad for x in leaves]


def _check(fn, inputs, backend, ops, names, grad=True):
    """Compiled equals eager bitwise (forward and, with ``grad``, the input gradients), and
    the compiled program ran the op with ``names`` (forward, then backward)."""
    ops.clear()
    y_c, g_c = _run(fn, inputs, backend, grad)
    ran = list(ops)
    ops.clear()
    y_e, g_e = _run(fn, inputs, None, grad)
    assert ops == []  # eager calls never go through the op
    assert ran == names * (2 if grad else 1), ran
    assert y_c.dtype == y_e.dtype and y_c.shape == y_e.shape
    assert torch.equal(y_c, y_e), float((y_c - y_e).abs().max())
    for a, b in zip(g_c, g_e, strict=True):
        assert a is not None and b is not None
        assert torch.equal(a, b), float((a - b).abs().max())


def _point(shape, dtype, seed):
    x = haar(*shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))
    return x, 0.1 * tangent(x, generator=torch.Generator().manual_seed(seed + 1))


EUCLID, CANON = Stiefel(), Stiefel(metric="canonical")

# name: (function, inputs (shape, dtype), the op's names)
CASES = {
    "retract-polar": (
        lambda x, xi: EUCLID.retract(x, xi),
        ((4, 8, 3), torch.float64),
        ["retract/polar/euclidean"],
    ),
    "retract-polar-one-matrix-float32": (
        lambda x, xi: EUCLID.retract(x, xi),
        ((50, 5), torch.float32),
        ["retract/polar/euclidean"],
    ),
    "retract-polar-complex": (
        lambda x, xi: EUCLID.retract(x, xi),
        ((3, 6, 2), torch.complex128),
        ["retract/polar/euclidean"],
    ),
    "retract-qr": (
        lambda x, xi: EUCLID.retract(x, xi, method="qr"),
        ((4, 8, 3), torch.float64),
        ["retract/qr/euclidean"],
    ),
    "retract-qr-complex": (
        lambda x, xi: EUCLID.retract(x, xi, method="qr"),
        ((3, 6, 2), torch.complex128),
        ["retract/qr/euclidean"],
    ),
    "retract-cayley": (
        lambda x, xi: EUCLID.retract(x, xi, method="cayley"),
        ((4, 8, 3), torch.float64),
        ["retract/cayley/euclidean"],
    ),
    "retract-canonical": (
        lambda x, xi: CANON.retract(x, xi),
        ((4, 8, 3), torch.float64),
        ["retract/cayley/canonical"],
    ),
    "retract_polar": (retract_polar, ((4, 8, 3), torch.float64), ["retract_polar"]),
    "retract_qr": (retract_qr, ((4, 8, 3), torch.float64), ["retract_qr"]),
    "retract_cayley": (retract_cayley, ((4, 8, 3), torch.float64), ["retract_cayley"]),
}


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("case", list(CASES))
def test_retractions_equal_eager_bitwise(backend, case, ops):
    fn, (shape, dtype), names = CASES[case]
    x, xi = _point(shape, dtype, seed=len(case))
    _check(fn, (x, xi), backend, ops, names)
    _check(fn, (x, xi), backend, ops, names, grad=False)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_projx_polar_and_inv_sqrtm_equal_eager_bitwise(backend, ops):
    g = torch.Generator().manual_seed(3)
    y = torch.randn(5, 7, 3, dtype=torch.float64, generator=g)
    _check(EUCLID.projx, (y,), backend, ops, ["projx"])
    _check(polar, (y,), backend, ops, ["polar"])
    _check(lambda a: polar(a, precise=True), (y,), backend, ops, ["polar/precise"])
    gram = y.mT @ y
    _check(inv_sqrtm, (gram,), backend, ops, ["inv_sqrtm"])
    # float32 projx works in double precision inside: the same
    _check(EUCLID.projx, (y.float(),), backend, ops, ["projx"], grad=False)


def test_tiny_steps_keep_the_exact_polar_gradient_under_compile(ops):
    """The polar backward at ``Y^H Y ~ I`` (all Gram eigenvalues ~1) is the eager
    Daleckii-Krein one: finite, bitwise, and equal to the SVD polar factor's gradient."""
    x, _ = _point((6, 3), torch.float64, seed=9)
    xi = 1e-9 * tangent(x, generator=torch.Generator().manual_seed(10))
    _check(
        lambda a, b: EUCLID.retract(a, b), (x, xi), "aot_eager", ops, ["retract/polar/euclidean"]
    )
    a = x.clone().requires_grad_()
    compiled = torch.compile(lambda a: EUCLID.retract(a, xi), fullgraph=True, backend="aot_eager")
    compiled(a).backward(_upstream(x))
    assert torch.isfinite(a.grad).all()
    # torch's SVD backward is NaN at these repeated singular values: central differences
    # of the SVD polar factor along random directions are the reference
    up, h = _upstream(x), 1e-6
    gen = torch.Generator().manual_seed(11)
    for _ in range(3):
        v = torch.randn(x.shape, dtype=x.dtype, generator=gen)
        plus = svd_polar(x + h * v + xi)
        minus = svd_polar(x - h * v + xi)
        fd = float((up * (plus - minus)).sum()) / (2 * h)
        assert abs(float((a.grad * v).sum()) - fd) < 1e-7


def test_inductor_one_small_case(ops):
    x, xi = _point((3, 6, 2), torch.float64, seed=4)
    _check(lambda a, b: EUCLID.retract(a, b), (x, xi), "inductor", ops, ["retract/polar/euclidean"])


def test_a_model_and_an_optimizer_step_compile_without_a_break(ops):
    """A layer whose weight is a retraction of a base point, and a hand-written Riemannian
    step ``X <- R_X(-lr proj_X(G))``, under ``fullgraph=True``."""

    class Retracted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            base, xi = _point((8, 3), torch.float64, seed=11)
            self.register_buffer("base", base)
            self.xi = torch.nn.Parameter(xi)

        def forward(self, inp, project=False):
            step = EUCLID.proj(self.base, self.xi) if project else self.xi
            return torch.tanh(inp @ EUCLID.retract(self.base, step)).sum()

    def run(compiled, project):
        torch.manual_seed(0)
        model = Retracted()
        fwd = torch.compile(model, fullgraph=True, backend="aot_eager") if compiled else model
        inp = torch.randn(5, 8, dtype=torch.float64)
        out = fwd(inp, project)
        out.backward()
        return out.detach(), model.xi.grad

    ops.clear()
    (out_c, grad_c), ran = run(True, False), list(ops)
    out_e, grad_e = run(False, False)
    assert ran == ["retract/polar/euclidean"] * 2
    assert torch.equal(out_c, out_e) and torch.equal(grad_c, grad_e)
    # with the tangent projection traced around it, that projection's backward is the
    # compiled program's own (AOT's graph differs from eager autograd by an ulp)
    (out_c, grad_c), (out_e, grad_e) = run(True, True), run(False, True)
    assert torch.equal(out_c, out_e) and torch.allclose(grad_c, grad_e, atol=1e-15, rtol=0)

    def step(x, g, lr: float = 0.1):
        return EUCLID.retract(x, -lr * EUCLID.proj(x, g), method="qr")

    x, _ = _point((5, 8, 3), torch.float64, seed=12)
    g = torch.randn_like(x)
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    with torch.no_grad():
        assert torch.equal(compiled(x, g), step(x, g))
    # a StiefelParameter in a compiled function: its data goes through the op as well
    w = StiefelParameter(x.clone())
    with torch.no_grad():
        assert torch.equal(compiled(w, g), step(x, g))


def test_refusals_are_raised_by_the_compiled_program():
    x, xi = _point((3, 6, 2), torch.float64, seed=5)
    cayley = torch.compile(lambda a, b: CANON.retract(a, b), fullgraph=True, backend="eager")
    with pytest.raises(spectra.InputError, match="not on the Stiefel manifold"):
        cayley(2 * x, xi)  # off the manifold: Cayley refuses it, with the distance
    bad = xi.clone()
    bad[1, 0, 0] = float("nan")
    polar_c = torch.compile(lambda a, b: EUCLID.retract(a, b), fullgraph=True, backend="eager")
    with pytest.raises(ValueError, match=r"NaN or Inf.*\[1\]"):
        polar_c(x, bad)
    projx = torch.compile(EUCLID.projx, fullgraph=True, backend="eager")
    flat = torch.ones(2, 6, 2, dtype=torch.float64)  # rank one: no unique nearest point
    with pytest.raises(spectra.InputError, match="not of full column rank"):
        projx(flat)
    # shape and argument errors too: the op's eager implementation raises them
    with pytest.raises(spectra.InputError, match="xi has shape"):
        polar_c(x, xi[..., :1])
    with pytest.raises(spectra.InputError, match="p <= n"):
        polar_c(x.mT, xi.mT)
    odd = torch.compile(lambda a, b: EUCLID.retract(a, b, method="odd"), fullgraph=True)
    with pytest.raises(spectra.InputError, match="unknown retraction 'odd'"):
        odd(x, xi)


def test_export_of_a_module_using_a_retraction():
    class Frame(torch.nn.Module):
        def __init__(self):
            super().__init__()
            base, _ = _point((8, 3), torch.float64, seed=13)
            self.register_buffer("base", base)

        def forward(self, g):
            y = EUCLID.retract(self.base, -0.1 * EUCLID.proj(self.base, g))
            return y, EUCLID.projx(y + 0.01 * g)

    g = torch.randn(8, 3, dtype=torch.float64)
    program = torch.export.export(Frame(), (g,))
    targets = [str(n.target) for n in program.graph.nodes if n.op == "call_function"]
    assert targets.count("spectra.stiefel_apply.default") == 2, targets
    got = program.module()(g)
    want = Frame()(g)
    for a, b in zip(got, want, strict=True):
        assert torch.equal(a, b)


def test_a_custom_metric_is_traced_as_python():
    class Scaled(spectra.stiefel.EuclideanMetric):
        pass

    st = Stiefel(metric=Scaled())
    x, xi = _point((4, 6, 2), torch.float64, seed=6)
    assert st._traced_retraction(None) is None  # not a registered metric: no op
    assert EUCLID._traced_retraction(None) == "retract/polar/euclidean"
    # traced as Python: without fullgraph it still runs (with graph breaks)
    compiled = torch.compile(lambda a, b: st.retract(a, b), backend="eager")
    assert torch.equal(compiled(x, xi), st.retract(x, xi))


def test_the_ops_pass_torchs_opcheck():
    x, xi = _point((3, 6, 2), torch.float64, seed=7)
    a, b = x.clone().requires_grad_(), xi.clone().requires_grad_()
    apply = torch.ops.spectra.stiefel_apply.default
    torch.library.opcheck(apply, ("retract/polar/euclidean", a, b, True))
    torch.library.opcheck(apply, ("retract/qr/euclidean", a, b, True))
    torch.library.opcheck(apply, ("projx", a, None, True))
    torch.library.opcheck(apply, ("retract/cayley/canonical", x, xi, False))


def test_no_dynamo_error_at_interpreter_exit_after_the_doctests():
    """The module's doctest compiles a method defined in a module (not a lambda of the
    doctest namespace, which doctest clears before Dynamo's cleanup runs)."""
    script = textwrap.dedent(
        """
        import doctest, spectra.stiefel._traced as m
        assert doctest.testmod(m).failed == 0
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
    assert "Exception ignored" not in run.stderr and "KeyError" not in run.stderr, run.stderr


@pytest.mark.parametrize("opt_cls", [spectra.stiefel.RiemannianSGD, spectra.stiefel.RiemannianAdam])
def test_the_optimizers_step_under_compile_equals_eager(opt_cls):
    """``torch.compile(opt.step)`` (graph breaks allowed: the step reads its checks into
    Python) runs and lands where the eager step does: bitwise on the series route, within
    an ulp per step on the core's eigh route (measured 1e-16 - 6e-16 after three steps)."""
    x, _ = _point((8, 3), torch.float64, seed=14)
    for lr in (1e-3, 0.5):  # the series, then steps too large for it (the core's eigh)
        w, w2 = StiefelParameter(x.clone()), StiefelParameter(x.clone())
        opt, opt2 = opt_cls([w], lr=lr), opt_cls([w2], lr=lr)
        step = torch.compile(opt.step, backend="eager")
        for i in range(3):
            g = torch.randn(8, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(i))
            w.grad, w2.grad = g.clone(), g.clone()
            step()
            opt2.step()
        if lr < 0.01:
            assert torch.equal(w.detach(), w2.detach())
        else:
            assert float((w.detach() - w2.detach()).abs().max()) < 1e-14
