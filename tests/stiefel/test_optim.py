"""Riemannian SGD/Adam: Brockett optimum vs SciPy, agreement with geoopt and torch.optim."""

from __future__ import annotations

import copy
import io
import pickle
import warnings

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra.stiefel._batched as batched_module
import spectra.stiefel._polar as polar_module
from spectra.stiefel import RiemannianAdam, RiemannianSGD, Stiefel, StiefelParameter

from .helpers import haar

with warnings.catch_warnings():  # geoopt 0.5 scripts functions with torch.jit at import
    warnings.simplefilter("ignore", DeprecationWarning)
    import geoopt


def brockett_problem(batch=12, n=6, p=3, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = haar(batch, n, n, dtype=dtype, generator=g)
    lam = torch.arange(n, dtype=torch.float64) + 0.3 * torch.rand(
        batch, n, dtype=torch.float64, generator=g
    )
    lam = lam[:, torch.randperm(n, generator=g)].to(dtype)
    a = q @ torch.diag_embed(lam) @ q.mH
    a = (a + a.mH) / 2
    nw = torch.arange(p, 0, -1, dtype=torch.float64).to(dtype)
    # independent optimum: sum_i N_i * (i-th largest eigenvalue), from SciPy
    w = np.stack([scipy.linalg.eigh(m, eigvals_only=True) for m in a.numpy()])
    top = w[:, ::-1][:, :p]
    return (
        a,
        nw,
        (top * np.arange(p, 0, -1)).sum(1),
        np.stack([scipy.linalg.eigh(m)[1][:, ::-1][:, :p] for m in a.numpy()]),
    )


def brockett(x, a, nw):
    return ((x.mH @ a @ x).diagonal(dim1=-2, dim2=-1).real * nw.real).sum(-1)


def optimize(make_opt, a, nw, steps, x0, manifold=None):
    x = StiefelParameter(x0.clone(), manifold=manifold)
    opt = make_opt([x])
    for _ in range(steps):
        opt.zero_grad()
        f = brockett(x, a, nw)
        (-f.sum()).backward()
        opt.step()
    return x.detach(), brockett(x.detach(), a, nw)


CASES = {
    "sgd-qr": (lambda p: RiemannianSGD(p, lr=0.05, retraction="qr"), 400),
    "sgd-polar-nesterov": (lambda p: RiemannianSGD(p, lr=0.02, momentum=0.9, nesterov=True), 400),
    "sgd-cayley": (lambda p: RiemannianSGD(p, lr=0.05, retraction="cayley"), 400),
    "adam-polar": (lambda p: RiemannianAdam(p, lr=0.05), 900),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_brockett_reaches_scipy_optimum(case):
    make, steps = CASES[case]
    a, nw, best, vecs = brockett_problem()
    x0 = Stiefel().random(
        *a.shape[:-1], 3, dtype=a.dtype, generator=torch.Generator().manual_seed(1)
    )
    x, f = optimize(make, a, nw, steps, x0)
    assert np.abs(f.numpy() - best).max() < 1e-6
    # the columns converge to the eigenvectors of the largest eigenvalues (up to sign)
    overlap = np.abs(np.einsum("bij,bik->bjk", x.numpy(), vecs))
    assert np.allclose(overlap, np.eye(3), atol=1e-3)
    assert float(Stiefel().orthogonality_error(x).max()) < 1e-12


def test_brockett_complex_unitary_frames():
    a, nw, best, _ = brockett_problem(batch=6, dtype=torch.complex128, seed=3)
    x0 = Stiefel().random(
        6, 6, 3, dtype=torch.complex128, generator=torch.Generator().manual_seed(2)
    )
    _, f = optimize(
        lambda p: RiemannianSGD(p, lr=0.02, momentum=0.9, nesterov=True), a, nw, 400, x0
    )
    assert np.abs(f.numpy() - best).max() < 1e-6


def test_float32_training_stays_on_manifold():
    a, nw, best, _ = brockett_problem(dtype=torch.float32, seed=4)
    x0 = Stiefel().random(12, 6, 3, generator=torch.Generator().manual_seed(3))
    x, f = optimize(lambda p: RiemannianSGD(p, lr=0.02, momentum=0.9), a, nw, 300, x0)
    assert float(Stiefel().orthogonality_error(x).max()) < 1e-5
    assert np.abs(f.numpy() - best).max() < 1e-3


def _geoopt_run(opt_cls, kwargs, x0, a, nw, steps):
    x = geoopt.ManifoldParameter(x0.clone(), manifold=geoopt.EuclideanStiefel())
    opt = opt_cls([x], **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        (-brockett(x, a, nw).sum()).backward()
        opt.step()
    return x.detach()


@pytest.mark.parametrize("kind", ["sgd", "sgd-wd", "adam", "adam-wd"])
def test_trajectory_matches_geoopt_euclidean_stiefel(kind):
    """geoopt's EuclideanStiefel retracts by QR with diag(R) > 0 and transports by projection:
    with our QR retraction the algorithms coincide step by step."""
    a, nw, _, _ = brockett_problem(batch=5, seed=5)
    x0 = haar(5, 6, 3, generator=torch.Generator().manual_seed(4))
    wd = 0.01 if kind.endswith("wd") else 0.0
    ours_cls, ref_cls = (
        (RiemannianSGD, geoopt.optim.RiemannianSGD)
        if kind.startswith("sgd")
        else (RiemannianAdam, geoopt.optim.RiemannianAdam)
    )
    ref = _geoopt_run(ref_cls, {"lr": 0.03, "weight_decay": wd}, x0, a, nw, 40)
    x, _ = optimize(lambda p: ours_cls(p, lr=0.03, weight_decay=wd, retraction="qr"), a, nw, 40, x0)
    assert torch.allclose(x, ref, atol=1e-10, rtol=0)
    # the polar retraction differs at second order only, so it lands close by
    xp, _ = optimize(lambda p: RiemannianSGD(p, lr=0.03, weight_decay=wd), a, nw, 1, x0)
    xq, _ = optimize(
        lambda p: RiemannianSGD(p, lr=0.03, weight_decay=wd, retraction="qr"), a, nw, 1, x0
    )
    assert 0 < float((xp - xq).abs().max()) < 1e-2


def test_momentum_converges_to_same_point_as_geoopt():
    a, nw, _, _ = brockett_problem(batch=5, seed=6)
    x0 = haar(5, 6, 3, generator=torch.Generator().manual_seed(5))
    ref = _geoopt_run(
        geoopt.optim.RiemannianSGD, {"lr": 0.02, "momentum": 0.9, "nesterov": True}, x0, a, nw, 250
    )
    x, _ = optimize(
        lambda p: RiemannianSGD(p, lr=0.02, momentum=0.9, nesterov=True), a, nw, 250, x0
    )
    assert torch.allclose(x, ref, atol=1e-6)


def _euclid_run(opt_factory, seed=0, steps=15):
    torch.manual_seed(seed)
    w = torch.nn.Parameter(torch.randn(5, 4, dtype=torch.float64))
    b = torch.nn.Parameter(torch.randn(4, dtype=torch.float64))
    data = torch.randn(16, 5, dtype=torch.float64)
    opt = opt_factory([w, b])
    for _ in range(steps):
        opt.zero_grad()
        (torch.tanh(data @ w + b) ** 2).sum().backward()
        opt.step()
    return w.detach(), b.detach()


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"momentum": 0.9},
        {"momentum": 0.9, "nesterov": True},
        {"momentum": 0.5, "dampening": 0.2, "weight_decay": 0.1},
        {"maximize": True},
    ],
)
def test_ordinary_parameters_match_torch_sgd(kwargs):
    ours = _euclid_run(lambda p: RiemannianSGD(p, lr=0.01, **kwargs))
    ref = _euclid_run(lambda p: torch.optim.SGD(p, lr=0.01, **kwargs))
    for u, v in zip(ours, ref, strict=True):
        assert torch.allclose(u, v, atol=1e-12)


@pytest.mark.parametrize(
    "kwargs", [{}, {"amsgrad": True}, {"weight_decay": 0.1}, {"betas": (0.5, 0.9), "eps": 1e-6}]
)
def test_ordinary_parameters_match_torch_adam(kwargs):
    ours = _euclid_run(lambda p: RiemannianAdam(p, lr=0.01, **kwargs))
    ref = _euclid_run(lambda p: torch.optim.Adam(p, lr=0.01, **kwargs))
    for u, v in zip(ours, ref, strict=True):
        assert torch.allclose(u, v, atol=1e-12)


class OrthoNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(7)
        self.w = StiefelParameter(Stiefel().random(3, 8, 4, dtype=torch.float64, generator=g))
        self.v = StiefelParameter(Stiefel().random(8, 4, dtype=torch.float64, generator=g))
        self.lin = torch.nn.Linear(4, 1, dtype=torch.float64)

    def forward(self, x):
        h = torch.einsum("bi,kij->bj", x, self.w) + x @ self.v
        return self.lin(torch.tanh(h))


def _train(model, opt, steps, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randn(32, 8, dtype=torch.float64, generator=g)
        opt.zero_grad()
        ((model(x).squeeze(-1) - x[:, 0]) ** 2).mean().backward()
        opt.step()


@pytest.mark.parametrize(
    "opt_cls,kw", [(RiemannianSGD, {"lr": 0.05, "momentum": 0.9}), (RiemannianAdam, {"lr": 0.01})]
)
def test_state_dict_resume_is_exact(opt_cls, kw):
    model = OrthoNet()
    opt = opt_cls(model.parameters(), **kw)
    _train(model, opt, 5, seed=1)
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)
    _train(model, opt, 5, seed=2)

    buf.seek(0)
    saved = torch.load(buf, weights_only=False)
    clone = OrthoNet()
    clone.load_state_dict(saved["model"])
    opt2 = opt_cls(clone.parameters(), **kw)
    opt2.load_state_dict(saved["opt"])
    _train(clone, opt2, 5, seed=2)
    for p, q in zip(model.parameters(), clone.parameters(), strict=True):
        assert torch.equal(p, q)
    assert isinstance(clone.w, StiefelParameter) and clone.w.manifold.check(clone.w)


def test_mixed_model_trains_and_all_same_shape_params_share_one_core_call(monkeypatch):
    calls = []
    real_mf, real_eigh = polar_module.matrix_function, polar_module.eigh

    def counting(real):
        def fn(a, *args, **kwargs):
            calls.append(tuple(a.shape))
            return real(a, *args, **kwargs)

        return fn

    small, model = OrthoNet(), OrthoNet()
    # the step runs without gradients: the polar factor takes the core's eigh directly
    monkeypatch.setattr(polar_module, "matrix_function", counting(real_mf))
    monkeypatch.setattr(polar_module, "eigh", counting(real_eigh))
    # small steps: the binomial series resolves every polar factor, no core call
    _train(small, RiemannianSGD(small.parameters(), lr=0.05), 3)
    assert calls == []
    # steps the series cannot take go to the core, grouped
    monkeypatch.setattr(batched_module, "series_polar", lambda y, out=None: None)
    before = model.lin.weight.detach().clone()
    opt = RiemannianSGD(model.parameters(), lr=0.05)
    _train(model, opt, 3)
    # w (3 x 8 x 4) and v (8 x 4) are retracted together: one call of 4 Gram matrices a step
    assert calls == [(4, 4, 4)] * 3
    assert not torch.equal(before, model.lin.weight)
    assert Stiefel().check(model.w) and Stiefel().check(model.v)


def test_parameters_of_different_retractions_or_shapes_are_grouped_separately():
    g = torch.Generator().manual_seed(8)
    ps = [
        StiefelParameter(Stiefel().random(2, 6, 2, dtype=torch.float64, generator=g)),
        StiefelParameter(Stiefel().random(6, 3, dtype=torch.float64, generator=g)),
        StiefelParameter(
            Stiefel().random(6, 2, dtype=torch.float64, generator=g), manifold=Stiefel("cayley")
        ),
    ]
    opt = RiemannianSGD(ps, lr=0.1)
    for p in ps:
        p.grad = torch.randn(p.shape, dtype=p.dtype, generator=g)
    expect = [
        Stiefel().retract(
            p.detach(), Stiefel().proj(p.detach(), -0.1 * p.grad), p.manifold.retraction
        )
        for p in ps
    ]
    opt.step()
    for p, e in zip(ps, expect, strict=True):
        assert torch.allclose(p.detach(), e, atol=1e-12)


def test_closure_and_none_grads():
    x = StiefelParameter(Stiefel().random(4, 2, dtype=torch.float64))
    y = StiefelParameter(Stiefel().random(4, 2, dtype=torch.float64))
    y0 = y.detach().clone()
    opt = RiemannianAdam([x, y], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (x[:, 0] ** 3).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert torch.is_tensor(loss) and torch.equal(y.detach(), y0)


def test_parameter_pickle_deepcopy_and_checks():
    p = StiefelParameter(torch.randn(3, 5, 2), manifold=Stiefel("qr"), project=True)
    assert p.manifold.check(p)
    for q in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert isinstance(q, StiefelParameter) and q.manifold == Stiefel("qr")
        assert torch.equal(q, p)
    with pytest.raises(ValueError, match="not on the Stiefel manifold"):
        StiefelParameter(torch.randn(3, 5, 2))
    with pytest.raises(ValueError, match="p <= n"):
        StiefelParameter(torch.randn(2, 5), project=True)
    with pytest.raises(TypeError, match="Stiefel"):
        StiefelParameter(torch.eye(3), manifold="polar")


def test_optimizer_argument_errors():
    p = StiefelParameter(Stiefel().random(4, 2))
    with pytest.raises(ValueError, match="learning rate"):
        RiemannianSGD([p], lr=-1)
    with pytest.raises(ValueError, match="Nesterov"):
        RiemannianSGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="unknown retraction"):
        RiemannianAdam([p], retraction="exp")
    with pytest.raises(ValueError, match="betas"):
        RiemannianAdam([p], betas=(1.0, 0.9))
    q = geoopt.ManifoldParameter(geoopt.Sphere().random(4))
    opt = RiemannianSGD([q], lr=0.1)
    q.grad = torch.ones(4)
    with pytest.raises(TypeError, match="carries a manifold Sphere"):
        opt.step()


def test_module_conversion_and_deepcopy_keep_the_manifold():
    m = torch.nn.Module()
    m.w = StiefelParameter(Stiefel().random(5, 2), manifold=Stiefel("cayley"))
    m.double()
    assert isinstance(m.w, StiefelParameter) and m.w.dtype == torch.float64
    assert m.w.manifold == Stiefel("cayley")
    m2 = copy.deepcopy(m)
    assert isinstance(m2.w, StiefelParameter) and m2.w.manifold == Stiefel("cayley")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("method", ["polar", "qr", "cayley"])
def test_cuda_matches_cpu(method):
    a, nw, _, _ = brockett_problem(batch=8, seed=9)
    x0 = haar(8, 6, 3, generator=torch.Generator().manual_seed(9))

    def make(p):
        return RiemannianSGD(p, lr=0.02, momentum=0.9, retraction=method)

    cpu, _ = optimize(make, a, nw, 30, x0)
    gpu, _ = optimize(make, a.cuda(), nw.cuda(), 30, x0.cuda())
    assert gpu.device.type == "cuda"
    assert torch.allclose(gpu.cpu(), cpu, atol=1e-10)
    xi = Stiefel().proj(x0.cuda(), torch.randn(x0.shape, dtype=x0.dtype).cuda())
    y = Stiefel().retract(x0.cuda(), xi, method)
    assert float(Stiefel().orthogonality_error(y).max()) < 1e-12


@pytest.mark.parametrize("method", ["polar", "qr"])
@pytest.mark.parametrize("opt_cls", [RiemannianSGD, RiemannianAdam])
def test_same_shape_parameters_stacked_equal_one_optimizer_each(opt_cls, method):
    """Same-shape parameters are converted and retracted stacked (across groups with other
    weight decay / maximize, metrics kept apart): each lands where an optimizer of its own
    takes it."""
    g = torch.Generator().manual_seed(21)
    starts = [Stiefel().random(12, 3, dtype=torch.float64, generator=g) for _ in range(4)]
    manifolds = [Stiefel(method), Stiefel(method), Stiefel(method, "canonical"), Stiefel(method)]
    groups = [{"weight_decay": 0.1}, {"maximize": True}, {}, {"weight_decay": 0.1}]
    grads = [
        [torch.randn(12, 3, dtype=torch.float64, generator=g) for _ in range(4)] for _ in range(5)
    ]
    kw = {"lr": 0.01} if opt_cls is RiemannianAdam else {"lr": 0.01, "momentum": 0.9}

    def make(i):
        return StiefelParameter(starts[i].clone(), manifold=manifolds[i])

    together = [make(i) for i in range(4)]
    opt = opt_cls(
        [{"params": [together[0], together[3]], **groups[0]}]
        + [{"params": [together[i]], **groups[i]} for i in (1, 2)],
        **kw,
    )
    alone = [make(i) for i in range(4)]
    opts = [opt_cls([{"params": [alone[i]], **groups[i]}], **kw) for i in range(4)]
    for step in range(5):
        for i in range(4):
            together[i].grad = grads[step][i].clone()
            alone[i].grad = grads[step][i].clone()
            opts[i].step()
        opt.step()
    for a, b in zip(together, alone, strict=True):
        assert torch.allclose(a.detach(), b.detach(), atol=1e-13, rtol=0)


@pytest.mark.parametrize("method", ["polar", "qr"])
def test_a_nan_gradient_among_stacked_parameters_is_named(method):
    g = torch.Generator().manual_seed(22)
    ps = [
        StiefelParameter(Stiefel().random(12, 3, dtype=torch.float64, generator=g), Stiefel(method))
        for _ in range(3)
    ]
    before = [p.detach().clone() for p in ps]
    opt = RiemannianSGD(ps, lr=1e-3)
    for p in ps:
        p.grad = torch.randn(12, 3, dtype=torch.float64, generator=g)
    ps[1].grad[4, 2] = float("nan")
    with pytest.raises(ValueError, match=r"gradient of parameter 1 of param group 0"):
        opt.step()
    for p, b in zip(ps, before, strict=True):  # nothing written
        assert torch.equal(p.detach(), b)
