"""Refusals, completions and round trips: the Stiefel cases of the trust issues.

Points off the manifold, scaled and rank-deficient ``projx`` inputs, NaN gradients named by
parameter, ``torch.load(weights_only=True)`` of parameters and optimizer state, and the
metric objects. References: torch's SVD polar factor (``helpers.svd_polar``), closed forms.
"""

from __future__ import annotations

import ast
import inspect
import io
from pathlib import Path

import pytest
import torch

import spectra
from spectra.stiefel import (
    ON_MANIFOLD_TOL,
    CanonicalMetric,
    EuclideanMetric,
    Metric,
    RiemannianAdam,
    RiemannianOptimizer,
    RiemannianSGD,
    Stiefel,
    StiefelParameter,
)

from .helpers import REAL, haar, orth_err, svd_polar, tangent

METRICS = ["euclidean", "canonical"]


# -- retractions that need a point on the manifold ------------------------------------------
@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("dtype", REAL)
def test_cayley_refuses_points_off_the_manifold_with_the_distance(metric, dtype):
    g = torch.Generator().manual_seed(40)
    st = Stiefel("cayley", metric=metric)
    x = haar(4, 7, 3, dtype=torch.float64, generator=g).to(dtype)
    xi = 0.1 * tangent(x, generator=g)
    gauss = torch.randn(4, 7, 3, dtype=dtype, generator=g)
    for bad, err in ((2 * x, 3.0), (gauss, None)):
        with pytest.raises(spectra.InputError, match="not on the Stiefel manifold") as exc:
            st.retract(bad, xi)
        assert exc.value.indices == [(0,), (1,), (2,), (3,)]
        if err is not None:
            assert f"= {err:.3g} >" in str(exc.value)
        with pytest.raises(spectra.InputError, match="projx"):
            st.retract_transport(bad, xi, xi)
    # one drifted member is named by its index
    mixed = x.clone()
    mixed[2] *= 1.5
    with pytest.raises(spectra.InputError, match=r"at batch indices \[2\]"):
        st.retract(mixed, xi)
    # within the documented tolerance: accepted, and the result keeps the drift only
    tol = ON_MANIFOLD_TOL[dtype]
    near = x * (1 + tol / 4)
    y = st.retract(near, xi)
    assert orth_err(y) < tol


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("method", ["polar", "qr"])
def test_self_correcting_retractions_accept_points_off_the_manifold(metric, method):
    g = torch.Generator().manual_seed(41)
    st = Stiefel(method, metric=metric)
    gauss = torch.randn(5, 8, 3, dtype=torch.float64, generator=g)
    y = st.retract(gauss, torch.zeros_like(gauss))
    assert orth_err(y) < 1e-13
    if method == "polar":  # the nearest point: the SVD polar factor
        torch.testing.assert_close(y, svd_polar(gauss), atol=1e-12, rtol=0)


def test_optimizer_with_cayley_refuses_a_parameter_that_drifted():
    st = Stiefel(metric="canonical")
    x = StiefelParameter(st.random(6, 2, dtype=torch.float64), manifold=st)
    opt = RiemannianSGD([x], lr=0.1)
    with torch.no_grad():
        x.mul_(2)
    x.grad = torch.ones_like(x)
    with pytest.raises(spectra.InputError, match="not on the Stiefel manifold") as exc:
        opt.step()
    assert str(exc.value).startswith("RiemannianSGD: parameter 0 of param group 0 (shape (6, 2))")
    assert "stabilize" in str(exc.value)
    # grouped with a parameter on the manifold: the drifted one is named
    y = StiefelParameter(st.random(6, 2, dtype=torch.float64), manifold=st)
    y.grad = torch.ones_like(y)
    opt2 = RiemannianSGD([y, x], lr=0.1)
    with pytest.raises(spectra.InputError, match="parameter 1 of param group 0"):
        opt2.step()


# -- projx: scale invariance and rank deficiency ---------------------------------------------
@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("scale", [1e-160, 1e-200, 1e-250, 1e-300, 1e-310, 1e150, 1e200, 1e300])
def test_projx_is_scale_invariant_float64(metric, scale):
    g = torch.Generator().manual_seed(42)
    a = torch.randn(6, 9, 4, dtype=torch.float64, generator=g)
    st = Stiefel(metric=metric)
    ref = svd_polar(a)
    got = st.projx(a * scale)
    assert orth_err(got) < 1e-14
    torch.testing.assert_close(got, ref, atol=1e-12, rtol=0)
    # subnormal entries (1e-310) carry fewer digits: the input itself moved by ~1e-13
    same = 1e-14 if scale > torch.finfo(torch.float64).tiny else 1e-12
    torch.testing.assert_close(got, st.projx(a), atol=same, rtol=0)


@pytest.mark.parametrize("scale", [1e-20, 1e-36, 1e-40, 1e20, 1e36])
def test_projx_is_scale_invariant_float32_and_complex(scale):
    g = torch.Generator().manual_seed(43)
    a = torch.randn(6, 9, 4, dtype=torch.float64, generator=g)
    ref = svd_polar(a)
    got = Stiefel().projx((a * scale).float())
    assert got.dtype == torch.float32 and orth_err(got) < 1e-6
    # the float32 input itself is rounded (subnormal at 1e-40): compare with its own polar
    torch.testing.assert_close(
        got.double(), svd_polar((a * scale).float().double()), atol=1e-6, rtol=0
    )
    if scale >= 1e-36:
        torch.testing.assert_close(got.double(), ref, atol=1e-5, rtol=0)
    c = torch.randn(3, 6, 2, dtype=torch.complex128, generator=g)
    torch.testing.assert_close(Stiefel().projx(c * scale), svd_polar(c), atol=1e-12, rtol=0)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex128])
def test_projx_refuses_zero_and_rank_deficient_matrices_by_index(metric, dtype):
    g = torch.Generator().manual_seed(44)
    st = Stiefel(metric=metric)
    a = torch.randn(5, 7, 3, dtype=dtype, generator=g)
    a[1] = 0
    a[3, :, 2] = 2 * a[3, :, 0]
    with pytest.raises(spectra.InputError, match="not of full column rank") as exc:
        st.projx(a)
    assert exc.value.indices == [(1,), (3,)]
    for single in (torch.zeros(4, 2, dtype=dtype), a[3]):
        with pytest.raises(spectra.InputError, match="not of full column rank"):
            st.projx(single)
    with pytest.raises(spectra.InputError, match="not of full column rank"):
        st.projx(1e-300 * torch.zeros(4, 2, dtype=torch.float64))
    # the refusal is not a false alarm: the SVD sees rank deficiency there too
    s = torch.linalg.svdvals(a[[1, 3]].to(torch.complex128 if dtype.is_complex else torch.float64))
    assert bool((s[:, -1] <= 1e-6 * s[:, 0].clamp_min(1e-300)).all())


def test_projx_of_nan_names_the_input():
    a = torch.randn(3, 5, 2, dtype=torch.float64)
    a[2, 0, 0] = float("nan")
    for fn in (Stiefel().projx, Stiefel().distance_to_manifold):
        with pytest.raises(
            spectra.InputError, match=r"X contains NaN or Inf at batch indices \[2\]"
        ):
            fn(a)


# -- NaN gradients and NaN data are named ----------------------------------------------------
@pytest.mark.parametrize("opt_cls", [RiemannianSGD, RiemannianAdam])
@pytest.mark.parametrize("method", ["polar", "qr", "cayley"])
def test_nan_gradient_names_the_parameter_and_says_gradient(opt_cls, method):
    g = torch.Generator().manual_seed(45)
    a = StiefelParameter(Stiefel().random(5, 2, dtype=torch.float64, generator=g))
    b = StiefelParameter(Stiefel().random(3, 5, 2, dtype=torch.float64, generator=g))
    w = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    opt = opt_cls([{"params": [w, a]}, {"params": [b]}], lr=0.1, retraction=method)
    a.grad = torch.ones_like(a)
    w.grad = torch.ones_like(w)
    b.grad = torch.ones_like(b)
    b.grad[1, 0, 0] = float("nan")
    with pytest.raises(spectra.InputError) as exc:
        opt.step()
    msg = str(exc.value)
    assert msg.startswith(f"{opt_cls.__name__}: the gradient of parameter 0 of param group 1")
    assert "contains NaN or Inf at batch indices [1]" in msg and "xi" not in msg
    # the same when the bad parameter is alone (the one-parameter path)
    opt1 = opt_cls([b], lr=0.1, retraction=method)
    with pytest.raises(spectra.InputError, match="the gradient of parameter 0 of param group 0"):
        opt1.step()


def test_stiefel_parameter_of_nan_says_not_finite():
    x = Stiefel().random(3, 5, 2, dtype=torch.float64)
    x[1, 0, 0] = float("inf")
    for project in (False, True):
        with pytest.raises(spectra.InputError, match="not finite") as exc:
            StiefelParameter(x, project=project)
        assert "project=True" not in str(exc.value) and exc.value.indices == [(1,)]
    with pytest.raises(spectra.InputError, match="project=True"):  # finite: projecting helps
        StiefelParameter(2 * Stiefel().random(5, 2))


# -- torch.load with weights_only=True -------------------------------------------------------
class _Net(torch.nn.Module):
    def __init__(self, seed: int = 3) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        st = Stiefel()
        self.w = StiefelParameter(st.random(2, 6, 3, dtype=torch.float64, generator=g))
        self.c = StiefelParameter(
            Stiefel(metric="canonical").random(6, 3, dtype=torch.float64, generator=g),
            manifold=Stiefel(metric="canonical"),
        )
        self.b = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))

    def loss(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.einsum("bi,kij->bj", x, self.w) + x @ self.c + self.b
        return (torch.tanh(h) - 0.5).pow(2).sum()


def _train(net: _Net, opt: torch.optim.Optimizer, steps: int, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        opt.zero_grad()
        net.loss(torch.randn(8, 6, dtype=torch.float64, generator=g)).backward()
        opt.step()


def _roundtrip(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf)  # torch's default: weights_only=True


def test_parameter_and_manifold_load_with_weights_only():
    p = StiefelParameter(Stiefel("qr", metric="canonical").random(3, 5, 2), manifold=Stiefel("qr"))
    q = _roundtrip(p)
    assert isinstance(q, StiefelParameter) and q.manifold == Stiefel("qr") and torch.equal(q, p)
    assert q.requires_grad
    for st in (Stiefel(), Stiefel("cayley", metric="canonical"), Stiefel("qr")):
        assert _roundtrip(st) == st
    frozen = StiefelParameter(Stiefel().random(4, 2), requires_grad=False)
    assert not _roundtrip(frozen).requires_grad


@pytest.mark.parametrize(
    "opt_cls,kw",
    [
        (RiemannianSGD, {"lr": 0.05, "momentum": 0.9}),
        (RiemannianSGD, {"lr": 0.05, "momentum": 0.5, "nesterov": True, "stabilize": 2}),
        (RiemannianAdam, {"lr": 0.01}),
        (RiemannianAdam, {"lr": 0.01, "amsgrad": True, "stabilize": 3}),
    ],
)
def test_model_and_optimizer_state_round_trip_with_weights_only(opt_cls, kw):
    net = _Net()
    opt = opt_cls(net.parameters(), **kw)
    _train(net, opt, 4, seed=1)
    saved = _roundtrip(
        {"model": net.state_dict(), "vars": net.state_dict(keep_vars=True), "opt": opt.state_dict()}
    )
    assert isinstance(saved["vars"]["w"], StiefelParameter)
    assert saved["vars"]["c"].manifold == Stiefel(metric="canonical")
    _train(net, opt, 4, seed=2)  # the uninterrupted run

    clone = _Net(seed=99)
    clone.load_state_dict(saved["model"])
    opt2 = opt_cls(clone.parameters(), **kw)
    opt2.load_state_dict(saved["opt"])
    _train(clone, opt2, 4, seed=2)
    for p, q in zip(net.parameters(), clone.parameters(), strict=True):
        assert torch.equal(p, q)
    assert isinstance(clone.w, StiefelParameter) and clone.w.manifold.check(clone.w)


# -- metrics as objects, one optimizer base, errors as data ----------------------------------
def test_metrics_are_objects_and_compare_to_their_names():
    assert isinstance(Stiefel().metric, EuclideanMetric)
    assert isinstance(Stiefel(metric="canonical").metric, CanonicalMetric)
    assert Stiefel(metric=CanonicalMetric()) == Stiefel(metric="canonical")
    assert Stiefel().metric == "euclidean" and Stiefel().metric != "canonical"
    assert hash(Stiefel(metric=CanonicalMetric())) == hash(Stiefel(metric="canonical"))
    with pytest.raises(spectra.InputError, match="unknown metric"):
        Stiefel(metric="riemannian")


class _ScaledMetric(EuclideanMetric):
    """A user metric: the Euclidean one scaled by 4 (gradient divided by 4)."""

    name = "scaled"

    def egrad2rgrad(self, x, g):
        return super().egrad2rgrad(x, g) / 4

    def inner(self, x, u, v, keepdim=False):
        return 4 * super().inner(x, u, v, keepdim)


def test_a_metric_subclass_drives_the_manifold_and_the_optimizers():
    g = torch.Generator().manual_seed(46)
    x0 = Stiefel().random(6, 2, dtype=torch.float64, generator=g)
    grad = torch.randn(6, 2, dtype=torch.float64, generator=g)
    st = Stiefel(metric=_ScaledMetric())
    assert repr(st) == "Stiefel(retraction='polar', metric='scaled')"
    p = StiefelParameter(x0.clone(), manifold=st)
    opt = RiemannianSGD([p], lr=0.4)
    p.grad = grad
    opt.step()
    # lr 0.4 with the gradient divided by 4 is the Euclidean step with lr 0.1
    ref = svd_polar(x0 - 0.1 * Stiefel().proj(x0, grad))
    torch.testing.assert_close(p.detach(), ref, atol=1e-13, rtol=0)
    torch.testing.assert_close(st.inner(x0, grad), 4 * (grad * grad).sum())


def test_sgd_and_adam_share_one_step():
    assert issubclass(RiemannianSGD, RiemannianOptimizer)
    assert issubclass(RiemannianAdam, RiemannianOptimizer)
    # torch.optim wraps each class's step with its profiling hook: compare what it wraps
    steps = {inspect.unwrap(c.step) for c in (RiemannianSGD, RiemannianAdam, RiemannianOptimizer)}
    assert steps == {inspect.unwrap(RiemannianOptimizer.step)}
    assert "_update" in vars(RiemannianSGD) and "_update" in vars(RiemannianAdam)
    assert issubclass(Metric, object) and "retraction" in vars(Metric)


def test_bad_input_raises_input_error():
    st = Stiefel()
    x = st.random(4, 2)
    cases = [
        lambda: Stiefel("exp"),
        lambda: st.retract(x, x, "svd"),
        lambda: st.retract(torch.randn(2, 4), torch.randn(2, 4)),
        lambda: st.retract(x, torch.zeros(4, 3)),
        lambda: st.random(2, 3),
        lambda: st.check(2 * x, raise_error=True),
        lambda: RiemannianSGD([StiefelParameter(x)], lr=-1),
        lambda: RiemannianSGD([StiefelParameter(x)], stabilize=0),
        lambda: RiemannianAdam([StiefelParameter(x)], betas=(1.0, 0.5)),
        lambda: StiefelParameter(2 * x),
    ]
    for case in cases:
        with pytest.raises(spectra.InputError):
            case()


def test_no_bare_value_error_in_the_stiefel_package():
    root = Path(spectra.stiefel.__file__).parent
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                name = getattr(node.exc.func, "id", getattr(node.exc.func, "attr", ""))
                assert name != "ValueError", f"{path.name}:{node.lineno}"


# -- the one-parameter path equals the grouped path ------------------------------------------
@pytest.mark.parametrize("method", ["polar", "qr", "cayley"])
@pytest.mark.parametrize("opt_cls", [RiemannianSGD, RiemannianAdam])
def test_one_parameter_path_equals_the_grouped_path(method, opt_cls):
    g = torch.Generator().manual_seed(47)
    x0 = Stiefel().random(7, 3, dtype=torch.float64, generator=g)
    grads = [torch.randn(7, 3, dtype=torch.float64, generator=g) for _ in range(5)]
    alone = StiefelParameter(x0.clone())
    pair = [StiefelParameter(x0.clone()), StiefelParameter(x0.clone())]
    kw = {"lr": 0.05, "retraction": method}
    if opt_cls is RiemannianSGD:
        kw["momentum"] = 0.5
    o1, o2 = opt_cls([alone], **kw), opt_cls(pair, **kw)
    for grad in grads:
        alone.grad = grad
        for p in pair:
            p.grad = grad
        o1.step()
        o2.step()
    for p in pair:
        torch.testing.assert_close(p.detach(), alone.detach(), atol=1e-14, rtol=0)
