"""The binomial-series polar factor of the optimizers' small steps, against SVD/SciPy."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra.stiefel._batched as batched_module
import spectra.stiefel._polar as polar_module
from spectra.stiefel import RiemannianAdam, RiemannianSGD, Stiefel, StiefelParameter
from spectra.stiefel._series import COEFFICIENTS, MAX_DEGREE, degree, limits, series_polar

from .helpers import DTYPES, haar, svd_polar, tangent

DOUBLE = {torch.float32: torch.float64, torch.complex64: torch.complex128}


def _eps(dtype):
    return torch.finfo(dtype).eps


def test_coefficients_are_the_binomial_series_of_inverse_sqrt():
    # binom(-1/2, k) = (-1)^k (2k)! / (4^k k!^2), independently
    for k, c in enumerate(COEFFICIENTS):
        exact = Fraction((-1) ** k * math.factorial(2 * k), 4**k * math.factorial(k) ** 2)
        assert c == float(exact)
    # and they sum to (1 + x)^(-1/2)
    x = 0.01
    assert abs(sum(c * x**k for k, c in enumerate(COEFFICIENTS)) - (1 + x) ** -0.5) < 4e-16


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_limits_bound_the_tail_below_the_unit_roundoff(dtype):
    lim = limits(dtype)
    assert lim is not None and len(lim) == MAX_DEGREE
    assert all(a < b for a, b in itertools.pairwise(lim))
    unit = _eps(dtype) / 2
    for k, t in enumerate(lim, 1):  # the tail bound |c_(k+1)| t^(k+1) / (1 - t) is met
        assert abs(COEFFICIENTS[k + 1]) * t ** (k + 1) / (1 - t) <= unit * (1 + 1e-9)
        # and is the largest such t (to the bisection's resolution)
        t2 = t * 1.001
        assert abs(COEFFICIENTS[k + 1]) * t2 ** (k + 1) / (1 - t2) > unit
    assert limits(torch.float16) is None and limits(torch.bfloat16) is None
    assert limits(torch.complex128) == limits(torch.float64)


def _near_frame(q: torch.Tensor, t: float, seed: int) -> torch.Tensor:
    """``Q (I + E)^(1/2)`` with a symmetric (Hermitian) ``E`` of Frobenius norm ``t``: its
    polar factor is ``Q`` and ``Y^H Y - I = E`` (built in double precision with SciPy)."""
    p = q.shape[-1]
    rng = np.random.default_rng(seed)
    e = rng.standard_normal((p, p))
    if q.is_complex():
        e = e + 1j * rng.standard_normal((p, p))
    e = e + e.conj().T
    e *= t / np.linalg.norm(e)
    root = scipy.linalg.sqrtm(np.eye(p) + e)
    qd = q.to(DOUBLE.get(q.dtype, q.dtype))
    return (qd @ torch.from_numpy(root).to(qd.dtype)).to(q.dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [1, 2, 4, 8, MAX_DEGREE])
def test_each_degree_gives_the_svd_polar_factor_at_its_limit(dtype, k):
    lim = limits(dtype)
    assert lim is not None
    t = 0.95 * lim[k - 1]
    assert degree(t, dtype) == k  # the path this case is named for
    q = haar(50, 5, dtype=DOUBLE.get(dtype, dtype), generator=torch.Generator().manual_seed(k))
    y = _near_frame(q.to(dtype), t, k)
    out = series_polar(y)
    assert out is not None and out.dtype == dtype
    ref = svd_polar(y.to(DOUBLE.get(dtype, dtype)))  # the exact polar factor of the rounded y
    scale = 30 if dtype in (torch.float32, torch.complex64) else 60
    assert float((out.to(ref.dtype) - ref).abs().max()) < scale * _eps(dtype)
    eye = torch.eye(5, dtype=ref.dtype)
    assert float((out.to(ref.dtype).mH @ out.to(ref.dtype) - eye).abs().max()) < 30 * _eps(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_batches_take_the_degree_of_their_largest_member(dtype):
    g = torch.Generator().manual_seed(3)
    x = haar(6, 2, 9, 4, dtype=dtype, generator=g)
    y = x + 1e-3 * tangent(x, generator=g)
    y[1, 0] = x[1, 0] + 3e-2 * tangent(x[1, 0], generator=g)  # one larger step
    out = series_polar(y)
    assert out is not None and out.shape == y.shape
    ref = svd_polar(y.to(DOUBLE.get(dtype, dtype)))
    tol = 50 * _eps(dtype)
    assert float((out.to(ref.dtype) - ref).abs().max()) < tol


def test_series_steps_aside_for_large_steps_nan_half_precision_and_gradients():
    x = Stiefel().random(8, 3, dtype=torch.float64)
    assert series_polar(x + 0.5 * tangent(x)) is None  # ||E|| past degree 12
    bad = x.clone()
    bad[0, 0] = float("nan")
    assert series_polar(bad) is None
    bad[0, 0] = float("inf")
    assert series_polar(bad) is None
    assert series_polar(x.half()) is None
    assert series_polar(x.clone().requires_grad_()) is None
    assert series_polar(torch.zeros(0, 8, 3, dtype=torch.float64)) is None
    # out= receives the result
    out = torch.empty_like(x)
    assert series_polar(x, out) is out and torch.allclose(out, x, atol=1e-15)


def _brockett(seed, dtype, n=50, p=5, batch=()):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(*batch, n, n, dtype=dtype, generator=g)
    a = (a + a.mH) / 2
    x0 = haar(*batch, n, p, dtype=dtype, generator=g)
    return a, x0


def _run(opt_factory, params0, a, steps):
    ps = [StiefelParameter(x.clone()) for x in params0]
    opt = opt_factory(ps)
    for _ in range(steps):
        opt.zero_grad()
        loss = sum(-(p.mH @ a @ p).diagonal(dim1=-2, dim2=-1).real.sum() for p in ps)
        loss.backward()
        opt.step()
    return [p.detach() for p in ps]


OPTIMIZERS = {
    "sgd": lambda ps: RiemannianSGD(ps, lr=1e-3),
    "sgd-momentum": lambda ps: RiemannianSGD(ps, lr=1e-3, momentum=0.9, nesterov=True),
    "sgd-wd": lambda ps: RiemannianSGD(ps, lr=1e-3, momentum=0.5, weight_decay=0.1),
    "adam": lambda ps: RiemannianAdam(ps, lr=1e-3),
    "adam-amsgrad": lambda ps: RiemannianAdam(ps, lr=1e-3, amsgrad=True),
}


def _count_core(monkeypatch):
    calls = []
    real = polar_module.polar_no_grad

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(batched_module, "polar_no_grad", counting)
    return calls


@pytest.mark.parametrize("name", list(OPTIMIZERS))
@pytest.mark.parametrize("count", [1, 3])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.complex128])
def test_optimizer_series_steps_equal_the_core_eigh_steps(monkeypatch, name, count, dtype):
    """1,000 (float64) small steps on one to three St(50, 5) parameters: the series route
    (no core call) lands where the core's eigh route lands, and stays on the manifold."""
    a, _ = _brockett(0, dtype)
    x0 = [
        haar(50, 5, dtype=dtype, generator=torch.Generator().manual_seed(i)) for i in range(count)
    ]
    steps = 1000 if dtype == torch.float64 and count == 1 else 200
    calls = _count_core(monkeypatch)
    fast = _run(OPTIMIZERS[name], x0, a, steps)
    assert calls == []  # every step took the series
    monkeypatch.setattr(batched_module, "series_polar", lambda y, out=None: None)
    slow = _run(OPTIMIZERS[name], x0, a, steps)
    assert len(calls) == steps  # grouped: one core call a step
    tol = 2e-4 if dtype == torch.float32 else 1e-11
    for f, s in zip(fast, slow, strict=True):
        assert float((f - s).abs().max()) < tol
        assert bool(Stiefel().check(f))


def test_large_steps_fall_back_to_the_core(monkeypatch):
    a, x0 = _brockett(1, torch.float64, n=8, p=3)
    calls = _count_core(monkeypatch)
    (x,) = _run(lambda ps: RiemannianSGD(ps, lr=0.3), [x0], a, 5)
    assert len(calls) == 5  # ||E|| past the series' reach: the core's eigh each step
    assert bool(Stiefel().check(x))


def test_series_step_pulls_a_drifted_point_back():
    """E is formed from the general Gram matrix: a parameter 1e-7 off the manifold lands
    back on it after one series step, like the eigh route (self-correcting polar)."""
    g = torch.Generator().manual_seed(5)
    x = haar(20, 4, generator=g)
    drifted = x + 1e-7 * torch.randn(x.shape, dtype=x.dtype, generator=g)
    p = StiefelParameter(drifted, check=False)
    opt = RiemannianSGD([p], lr=1e-4)
    p.grad = torch.randn(x.shape, dtype=x.dtype, generator=g)
    opt.step()
    eye = torch.eye(4, dtype=torch.float64)
    assert float((p.detach().mT @ p.detach() - eye).abs().max()) < 1e-14
