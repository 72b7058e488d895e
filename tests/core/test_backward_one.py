"""One small tracked matrix: the routes of its forward + backward, and their gradients.

``spectra.eigh(a)`` for one plain 2-D CPU ``a`` that requires grad takes the direct
path's tracked route (``_direct._tracked_one``): a real ``a`` goes to torch's own node
with the gauge written into its output (``_backward_fast.gauge_fresh``: the compiled
gauge where built, else a NumPy view), kept where the spectrum is separated; a complex
``a`` to the compiled one-call route (``native_solve``: check, LAPACK, gauge) under the
lightest Python node (``_autograd_one._EighSolved``, whose backward picks torch's formula
or the degenerate-safe rule). Each route is asserted by its node, and its gradients are
compared bit for bit with the routes they replace: the custom rule (``eigh_with_grad``),
torch's node times the column signs (the route before), and torch's gradient in the same
gauge.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import spectra
from spectra.core._pipeline import _autograd, _autograd_one, _direct
from spectra.core._pipeline._autograd import eigh_with_grad
from spectra.core._pipeline._autograd_one import with_backward
from spectra.core._pipeline._backward_fast import gauge_by_signs, gauge_fresh
from spectra.core._pipeline._gauge import fix_gauge_small_
from spectra.core._solvers import _native

from .helpers import random_hermitian, with_spectrum, without_native_entry

REAL = [torch.float32, torch.float64]
SIZES = [1, 2, 3, 5, 8, 11, 12, 16, 31, 40]  # the Python screen, NumPy's, LAPACK threads


def _gauged(x):
    """Eigenpairs in the gauge, no history: the solver the custom rule wraps."""
    w, v = torch.linalg.eigh(x.detach())
    return w, fix_gauge_small_(v)


def _fake_native(a, vectors, check):
    """``native_solve`` in Python (the same contract: check, LAPACK, gauge), for machines
    without the compiled helper; ``None`` where the Python route would refuse, and for
    untracked calls (the untracked route is the compiled route's own business)."""
    if not (a.requires_grad and torch.is_grad_enabled()):
        return None
    if check and not torch.equal(a, a.mH):
        return None
    w, v = _gauged(a)
    if check and not bool(torch.isfinite(w).all()):
        return None
    return w, (v if vectors else None), True


def _compiled() -> bool:
    eye = torch.eye(3, dtype=torch.float64)
    return _direct.native_solve(eye, True, True) is not None


@pytest.fixture(params=["compiled", "fake"])
def solved_route(request, monkeypatch):
    """The route through ``_EighSolved``: the real compiled helper, or its Python twin."""
    if request.param == "compiled":
        if not _compiled():
            pytest.skip("the compiled one-call route is not built here")
    else:
        monkeypatch.setattr(_direct, "native_solve", _fake_native)
    return request.param


def _compiled_gauge() -> bool:
    gauge = getattr(_native, "native_gauge_", None)
    return gauge is not None and bool(gauge(torch.linalg.eigh(torch.eye(3)).eigenvectors))


@pytest.fixture(params=["compiled gauge", "python gauge"])
def node_route(request, monkeypatch):
    """Torch's node with the gauge written into it, by the compiled gauge or in Python."""
    if request.param == "compiled gauge":
        if not _compiled_gauge():
            pytest.skip("the compiled gauge is not built here")
    else:
        monkeypatch.setattr(_native, "native_gauge_", lambda x: False, raising=False)
    return request.param


def _solved(x):  # the lightest node around the same solve
    return with_backward(x, *_gauged(x))


def _losses(n, dtype):
    g = torch.Generator().manual_seed(n)
    weights = torch.randn(n, n, generator=g, dtype=torch.float64).to(dtype)
    return {
        "sum": lambda w, v: w.sum() + v.sum(),  # expanded upstream gradients
        "weighted": lambda w, v: (w * w * torch.arange(n, dtype=dtype)).sum() + (v * weights).sum(),
        "vectors": lambda w, v: (v[:, : max(1, n // 2)] ** 3).sum(),
        "values": lambda w, v: (w**2).sum(),
        "transposed": lambda w, v: (v.mT * weights).sum() + w[0],
    }


def _grad(solve, a, loss):
    x = a.clone().requires_grad_(True)
    w, v = solve(x)
    loss(w, v).backward()
    return x.grad, w.detach(), v.detach()


def _node_and_signs(x):  # the route before: torch's node, then a multiply by the signs
    w, v = torch.linalg.eigh(x)
    return w, gauge_by_signs(v)


def _custom(x):  # the degenerate-safe rule around the same solve
    return eigh_with_grad(x, _gauged)


def _node_name(a):
    w, _ = spectra.eigh(a.clone().requires_grad_(True))
    return type(w.grad_fn).__name__


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("n", SIZES)
def test_the_solved_node_is_the_routes_before_bit_for_bit(dtype, n):
    a = random_hermitian((), n, dtype, seed=n)
    x = a.clone().requires_grad_(True)
    assert type(_solved(x)[0].grad_fn).__name__ == "_EighSolvedBackward"
    for name, loss in _losses(n, dtype).items():
        got = _grad(_solved, a, loss)
        for before in (_node_and_signs, _custom):
            want = _grad(before, a, loss)
            for x, y in zip(got, want, strict=True):
                assert torch.equal(x, y), (name, before.__name__)


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("n", SIZES)
def test_node_route_is_the_routes_before_bit_for_bit(node_route, dtype, n):
    a = random_hermitian((), n, dtype, seed=n)
    if _direct._closed_small(n, dtype):  # planned on the compiled closed form: its forward
        assert _node_name(a) == "_EighSolvedBackward"  # under the light node
        pytest.skip("the closed form's gradient: tests/core/test_native_closed_form.py")
    if n > 1:
        assert _node_name(a) == "LinalgEighBackward0"  # torch's own node, no multiply
    x = a.clone().requires_grad_(True)
    _w, v = spectra.eigh(x)
    assert type(v.grad_fn).__name__ == "LinalgEighBackward0"
    for name, loss in _losses(n, dtype).items():
        got = _grad(spectra.eigh, a, loss)
        for before in (_node_and_signs, _custom):
            want = _grad(before, a, loss)
            for x, y in zip(got, want, strict=True):
                assert torch.equal(x, y), (name, before.__name__)


def test_the_gradient_is_torchs_in_the_same_gauge(node_route):
    a = random_hermitian((), 6, torch.float64, seed=3)
    weights = torch.randn(6, 6, dtype=torch.float64)
    got, _w, v = _grad(spectra.eigh, a, lambda w, v: w.sum() + (v * weights).sum())
    vt = torch.linalg.eigh(a).eigenvectors
    signs = torch.sign((v * vt).sum(0))  # torch's gauge to ours, column by column
    want, *_ = _grad(torch.linalg.eigh, a, lambda w, v: w.sum() + (v * (weights * signs)).sum())
    assert torch.equal(got, want)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_takes_the_solved_route_with_the_custom_rules_bits(solved_route, dtype):
    a = random_hermitian((), 6, dtype, seed=4)
    assert _node_name(a) == "_EighSolvedBackward"
    weights = torch.randn(6, 6, dtype=torch.float64).to(a.real.dtype)

    def invariant(w, v):  # |v|^2: no phase dependence (the short route)
        return w.square().sum() + (v.abs().square() * weights).sum()

    got = _grad(spectra.eigh, a, invariant)
    want = _grad(_custom, a, invariant)
    for x, y in zip(got, want, strict=True):
        assert torch.equal(x, y)
    with pytest.warns(_autograd.DegenerateGradientWarning):  # a loss of the phase
        _grad(spectra.eigh, a, lambda w, v: v.real.sum())


def _spy(monkeypatch, module, name):
    calls: list[str] = []
    inner = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *args: calls.append(name) or inner(*args))
    return calls


def test_the_solved_node_decides_the_route_in_the_backward(monkeypatch):
    spectrum = torch.tensor([[1.0, 1.0, 2.0, 3.0]], dtype=torch.float64)
    a = with_spectrum(spectrum, torch.float64, 7)[0]
    general = _spy(monkeypatch, _autograd_one, "_backward")
    torch_formula = _spy(monkeypatch, _autograd_one, "torch_backward")
    x = a.clone().requires_grad_(True)
    _w, v = _solved(x)
    proj = v[:, :2] @ v[:, :2].mT  # a loss of the degenerate eigenspace: exact when masked
    weights = torch.randn(4, 4, dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # exact when masked: no warning
        (g,) = torch.autograd.grad((proj * weights).sum(), x)
    assert general == ["_backward"] and torch_formula == []
    assert torch.isfinite(g).all()
    want = _grad(_custom, a, lambda w, v: ((v[:, :2] @ v[:, :2].mT) * weights).sum())
    assert torch.equal(g, want[0])
    with pytest.warns(_autograd.DegenerateGradientWarning):  # the basis inside it: warned
        _grad(_solved, a, lambda w, v: v[:, 0].sum())
    general.clear()
    (g,) = torch.autograd.grad(_solved(x)[0].sum(), x)  # no gap enters
    assert general == [] and torch_formula == ["torch_backward"]
    y = a.clone().requires_grad_(True)
    assert torch.equal(g, torch.autograd.grad(torch.linalg.eigvalsh(y).sum(), y)[0])


@pytest.mark.parametrize("route", ["solved", "node"])
def test_double_backward_and_gradcheck(route):
    a = random_hermitian((), 4, torch.float64, seed=9).requires_grad_(True)
    names = []
    solve = _solved if route == "solved" else spectra.eigh

    def f(m):
        w, v = solve(0.5 * (m + m.mT))
        names.append(type(w.grad_fn).__name__)
        return w, v.square()  # gauge-invariant

    assert torch.autograd.gradcheck(f, (a,))
    assert torch.autograd.gradgradcheck(f, (a,))
    want = "_EighSolvedBackward" if route == "solved" else "LinalgEighBackward0"
    assert set(names) == {want}


def test_eigenvalues_only_keep_their_bits(node_route):
    a = random_hermitian((), 7, torch.float64, seed=11)
    x = a.clone().requires_grad_(True)
    w = spectra.eigvalsh(x)
    assert type(w.grad_fn).__name__ == "LinalgEighBackward0"
    (w**3).sum().backward()
    y = a.clone().requires_grad_(True)
    (torch.linalg.eigvalsh(y) ** 3).sum().backward()
    assert torch.equal(x.grad, y.grad)


def test_torch_func_takes_the_full_path():
    a = random_hermitian((), 5, torch.float64, seed=12)

    def loss(solve):
        return lambda m: solve(0.5 * (m + m.mT)).eigenvalues.square().sum()

    got = torch.func.grad(loss(spectra.eigh))(a)
    want = torch.func.grad(loss(torch.linalg.eigh))(a)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    # and forward mode on a plain call: the full path's jvp rule
    tangent = random_hermitian((), 5, torch.float64, seed=13)
    _, dw = torch.func.jvp(lambda m: spectra.eigh(m).eigenvalues, (a,), (tangent,))
    _, want_dw = torch.func.jvp(lambda m: torch.linalg.eigh(m).eigenvalues, (a,), (tangent,))
    torch.testing.assert_close(dw, want_dw, rtol=1e-12, atol=1e-12)


def test_a_vectorized_jacobian_runs_the_backward_under_vmap():
    a = random_hermitian((), 4, torch.float64, seed=14)

    def f(solve):
        return lambda m: (lambda wv: torch.cat([wv[0], wv[1].square().flatten()]))(solve(m))

    got = torch.autograd.functional.jacobian(f(spectra.eigh), a, vectorize=True)
    want = torch.autograd.functional.jacobian(f(torch.linalg.eigh), a, vectorize=True)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])  # the two routes
def test_the_checks_still_refuse(dtype):
    a = random_hermitian((), 5, dtype, seed=15)
    with pytest.raises(ValueError, match=r"symmetric|Hermitian"):
        spectra.eigh(torch.triu(a).requires_grad_())
    bad = a.clone()
    bad[1, 1] = float("nan")
    with pytest.raises(ValueError, match=r"NaN|finite"):
        spectra.eigh(bad.requires_grad_())
    # within symmetry_tol: the full path accepts it, with gradients
    near = a.clone()
    near[0, 1] += 1e-13
    x = near.requires_grad_()
    spectra.eigh(x).eigenvalues.sum().backward()
    assert x.grad is not None


def test_saved_tensor_hooks_make_the_node_route_multiply(node_route):
    a = random_hermitian((), 6, torch.float64, seed=16)
    loss = _losses(6, torch.float64)["weighted"]
    want = _grad(_custom, a, loss)
    packed = []

    def pack(t):  # a copy at save time: the node's saved v is not the gauged output
        packed.append(1)
        return t.clone()

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        x = a.clone().requires_grad_(True)
        w, v = spectra.eigh(x)
        loss(w, v).backward()
    assert packed and type(v.grad_fn).__name__ == "MulBackward0"  # the gauge's multiply
    assert torch.equal(x.grad, want[0])
    with torch.autograd.graph.save_on_cpu():
        got = _grad(spectra.eigh, a, loss)
    assert torch.equal(got[0], want[0])


def test_gauge_fresh_writes_the_gauge_into_torchs_node():
    a = random_hermitian((), 5, torch.float64, seed=17).requires_grad_(True)
    _w, v = torch.linalg.eigh(a)
    saved = v.grad_fn._saved_eigenvectors
    assert gauge_fresh(v) is v
    assert torch.equal(v.detach(), _gauged(a)[1]) and torch.equal(saved, v.detach())
    # a tie the screens cannot decide: the gauge on a copy decides, still in place
    b = torch.diag(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    b[0, 1] = b[1, 0] = 0.5  # a 2x2 block whose vectors are (+-1, 1)/sqrt(2)
    b[0, 0] = b[1, 1] = 1.0
    x = b.clone().requires_grad_(True)
    _, v = torch.linalg.eigh(x)
    assert gauge_fresh(v) is v and torch.equal(v.detach(), _gauged(b)[1])
    # inside a forward-mode level (a tangent could ride on v): the multiply, out of place
    y = a.detach().clone().requires_grad_(True)
    _, v = torch.linalg.eigh(y)
    raw = v.detach().clone()
    with torch.autograd.forward_ad.dual_level():
        out = gauge_fresh(v)
    assert torch.equal(v.detach(), raw) and torch.equal(out.detach(), _gauged(a)[1])
    assert type(out.grad_fn).__name__ == "MulBackward0"


def test_the_routes_by_dtype(solved_route, monkeypatch):
    without_native_entry(monkeypatch)  # the Python route's steps
    calls = _spy(monkeypatch, _direct, "native_solve")
    node = _spy(monkeypatch, _direct, "_solve_native")
    a = random_hermitian((), 5, torch.complex128, seed=18).requires_grad_(True)
    spectra.eigh(a)
    assert calls == ["native_solve"] and node == []  # complex: the compiled solve, once
    calls.clear()
    b = random_hermitian((), 5, torch.float64, seed=18).requires_grad_(True)
    spectra.eigh(b)
    assert calls == [] and node == ["_solve_native"]  # real: torch's node


@pytest.mark.parametrize("dtype", REAL)
def test_a_small_aligned_batch_takes_torchs_node_with_the_routes_bits(dtype):
    n = 8 if dtype == torch.float64 else 16  # each matrix and eigenvalue row 64-byte aligned
    a = random_hermitian((4,), n, dtype, seed=19)
    x = a.clone().requires_grad_(True)
    w, v = spectra.eigh(x)
    assert type(w.grad_fn).__name__ == "LinalgEighBackward0"  # the direct path's batch
    assert type(v.grad_fn).__name__ == "LinalgEighBackward0"  # the gauge written into it
    for name, loss in _losses(n, dtype).items():
        batched = lambda w, v, loss=loss: sum(loss(w[i], v[i]) for i in range(4))  # noqa: E731
        got = _grad(spectra.eigh, a, batched)
        for before in (_node_and_signs, _custom):
            want = _grad(before, a, batched)
            for x, y in zip(got, want, strict=True):
                assert torch.equal(x, y), (name, before.__name__)
