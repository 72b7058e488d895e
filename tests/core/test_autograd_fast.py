"""The backward's short route: torch's own gradient, bitwise, where nothing is masked."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import spectra
from spectra.core._pipeline import _autograd, _backward_fast
from spectra.core._pipeline._autograd import (
    DEFAULT_BACKWARD,
    BackwardOptions,
    degenerate_default,
    eigh_with_grad,
)
from spectra.core._pipeline._backward_fast import gauge_by_signs, torch_backward, well_separated
from spectra.core._pipeline._gauge import fix_gauge_small_

from .helpers import random_hermitian, with_spectrum

REAL = [torch.float32, torch.float64]


def _loss(w, v, weights, on):
    terms = []
    if "w" in on:
        terms.append((w.square() * torch.arange(w.shape[-1], dtype=w.dtype)).sum())
    if "v" in on:
        terms.append((v * weights).sum())  # gauge-dependent on purpose: the same gauge
    return sum(terms[1:], terms[0])


def _grad(solve, a, weights, on):
    x = a.clone().requires_grad_(True)
    w, v = solve(x)
    _loss(w, v, weights, on).backward()
    return x.grad


def _spy(monkeypatch, module, name):
    calls: list[str] = []
    inner = getattr(module, name)

    def spy(*args, **kw):
        calls.append(name)
        return inner(*args, **kw)

    monkeypatch.setattr(module, name, spy)
    return calls


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("shape", [(), (4,)])
@pytest.mark.parametrize("n", [1, 2, 5, 16, 33])
@pytest.mark.parametrize("on", ["wv", "w", "v"])
def test_torch_backward_is_bitwise_torchs_gradient(dtype, shape, n, on):
    a = random_hermitian(shape, n, dtype, seed=n)
    weights = torch.randn(n, n, generator=torch.Generator().manual_seed(1)).to(dtype)
    got = _grad(lambda x: eigh_with_grad(x, torch.linalg.eigh), a, weights, on)
    want = _grad(torch.linalg.eigh, a, weights, on)
    assert torch.equal(got, want)


@pytest.mark.parametrize("dtype", REAL)
def test_a_separated_spectrum_takes_the_short_route(monkeypatch, dtype):
    a = random_hermitian((3,), 6, dtype, seed=2)
    weights = torch.randn(6, 6, dtype=dtype)
    short = _spy(monkeypatch, _autograd, "short_backward")
    general = _spy(monkeypatch, _autograd, "_backward_block")
    for kw in ({}, {"workers": 1}):  # the direct path, then the planned one
        short.clear()
        got = _grad(lambda x, kw=kw: spectra.eigh(x, **kw), a, weights, "wv")
        assert short == ["short_backward"] and general == [], kw
        # torch's gradient in torch's gauge: the same loss, once the signs agree
        _w, v = torch.linalg.eigh(a)
        signs = torch.sign((spectra.eigh(a).eigenvectors * v).sum(-2, keepdim=True))
        want = _grad(torch.linalg.eigh, a, weights * signs, "wv")
        torch.testing.assert_close(got, want, atol=0, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_degenerate_or_complex_or_broadened_takes_the_general_route(monkeypatch, dtype):
    degenerate = with_spectrum(torch.tensor([[1.0, 1.0, 2.0, 3.0]], dtype=torch.float64), dtype, 3)
    separated = random_hermitian((1,), 4, dtype, seed=3)
    weights = torch.randn(4, 4, dtype=torch.float64).to(dtype)
    general = _spy(monkeypatch, _autograd, "_backward_block")
    cases = [(degenerate, {}), (separated, {"broadening": 1e-12})]
    for a, kw in cases:
        general.clear()
        x = a.clone().requires_grad_(True)
        w, v = spectra.eigh(x, degenerate="ignore", **kw)
        ((v.abs() ** 2 * weights.real).sum() + w.sum()).backward()
        assert general == ["_backward_block"], kw
        assert torch.isfinite(x.grad.abs()).all()


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("on", ["wv", "w", "v"])
def test_general_route_has_the_short_routes_bits_where_nothing_is_masked(dtype, on):
    a = random_hermitian((5,), 7, dtype, seed=4)
    w, v = torch.linalg.eigh(a)
    g = torch.Generator().manual_seed(2)
    gw = torch.randn(w.shape, generator=g).to(dtype) if "w" in on else None
    gv = torch.randn(v.shape, generator=g).to(dtype) if "v" in on else None
    opts = DEFAULT_BACKWARD.resolved(dtype)
    short = torch_backward(w, v, gw, gv)
    general, bad = _autograd._backward_block(w, v, gw, gv, opts)
    assert torch.equal(short, general) and not bad.any()
    # chunked by a budget of two matrices: the same bits (the general route, per chunk)
    chunked = opts._replace(budget=2 * _autograd.BACKWARD_MATRICES * 7 * 7 * a.element_size())
    assert not _autograd._fast_route(w, v, gw, gv, chunked)
    assert torch.equal(_autograd._backward(w, v, gw, gv, chunked), short)


def _mask_says_separated(w: torch.Tensor, tol: float) -> bool:
    _factor, degenerate = _autograd._factor(w, tol, 0.0)
    return not bool(degenerate.any())


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("rows", [1, 3, 200])  # Python floats, then NumPy (> 256 values)
def test_well_separated_agrees_with_the_backwards_mask(dtype, rows):
    tol = degenerate_default(dtype)
    g = torch.Generator().manual_seed(rows)
    base = torch.sort(torch.randn(rows, 6, generator=g, dtype=torch.float64), -1).values
    for gap in (0.0, 0.5 * tol, tol, 2 * tol, 10 * tol, 1e-2):
        w = base.clone()
        w[..., 3] = w[..., 2] + gap * w.abs().amax(-1)  # a pair at about the threshold
        w = torch.sort(w.to(dtype), -1).values
        for x in (w, w[0]):
            assert well_separated(x, tol) == _mask_says_separated(x, tol), (gap, x.shape)
    assert not well_separated(torch.tensor([2.0, 1.0], dtype=dtype), tol)  # not ascending
    assert not well_separated(torch.tensor([1.0, float("nan")], dtype=dtype), tol)
    assert well_separated(torch.tensor([0.0], dtype=dtype), tol)


def _vector_blocks(shape, n, dtype=torch.float64):
    """Eigenvector blocks, then blocks with an exact opposite-sign tie and a NaN column
    (where the gauge's sign screen cannot decide)."""
    a = random_hermitian(shape, n, dtype, seed=n)
    yield torch.linalg.eigh(a).eigenvectors
    yield torch.linalg.eigh(-a).eigenvectors
    tied = torch.linalg.eigh(a).eigenvectors.clone()
    tied[..., :, 0] = 0.0
    tied[..., 0, 0], tied[..., 1, 0] = 0.5, -0.5
    yield tied
    nan = tied.clone()
    nan[..., 2, 1] = float("nan")
    yield nan


@pytest.mark.parametrize("shape", [(), (3,)])
@pytest.mark.parametrize("n", [5, 16, 33])  # the gauge's sign screen, its NumPy twin
@pytest.mark.parametrize("dtype", REAL)
def test_gauge_by_signs_has_the_gauges_bits_and_differentiates_through_the_signs(shape, n, dtype):
    for block in _vector_blocks(shape, n, dtype):
        v = block.clone().requires_grad_(True)
        fixed = fix_gauge_small_(block.clone())
        got = gauge_by_signs(v)
        assert torch.equal(got.detach(), fixed) or bool(fixed.isnan().any())
        torch.testing.assert_close(got.detach(), fixed, equal_nan=True, atol=0, rtol=0)
        flips = bool(((fixed != block) & ~block.isnan()).any())
        assert (got is v) == (not flips)
        weights = torch.randn(block.shape, dtype=dtype)
        (g,) = torch.autograd.grad((got * weights).sum(), v)
        same = (fixed == block) | block.isnan()
        signs = torch.where(same.all(-2, keepdim=True), 1.0, -1.0).to(dtype)
        assert torch.equal(g, weights * signs)


def _gauged(x):
    w, v = torch.linalg.eigh(x.detach())
    return w, fix_gauge_small_(v)


def _native(x):
    w, v = torch.linalg.eigh(x)
    return w, gauge_by_signs(v)


@pytest.mark.parametrize("dtype", REAL)
def test_native_route_is_torchs_node_and_the_custom_routes_bits(dtype):
    a = random_hermitian((2,), 6, dtype, seed=6)
    weights = torch.randn(6, 6, dtype=dtype)
    x = a.clone().requires_grad_(True)
    w, v = eigh_with_grad(x, _gauged, native=_native)
    assert type(w.grad_fn).__name__ == "LinalgEighBackward0"  # no Python node
    custom = _grad(lambda m: eigh_with_grad(m, _gauged), a, weights, "wv")
    native = _grad(lambda m: eigh_with_grad(m, _gauged, native=_native), a, weights, "wv")
    assert torch.equal(native, custom)
    ref = _gauged(a)
    assert torch.equal(w.detach(), ref[0]) and torch.equal(v.detach(), ref[1])


def test_native_route_falls_back_without_a_second_solve_where_degenerate():
    a = with_spectrum(torch.tensor([[1.0, 1.0, 2.0, 3.0]], dtype=torch.float64), torch.float64, 7)
    solves: list[int] = []

    def solver(m):
        solves.append(1)
        return _gauged(m)

    x = a.clone().requires_grad_(True)
    w, v = eigh_with_grad(x, solver, native=_native)
    assert solves == [] and type(w.grad_fn).__name__ == "_EighFunctionBackward"
    proj = v[..., :2] @ v[..., :2].mT
    (g,) = torch.autograd.grad((proj * torch.randn(4, 4, dtype=torch.float64)).sum(), x)
    assert torch.isfinite(g).all()
    # broadening asks for this module's rule: the native route is not taken
    opts = BackwardOptions(broadening=1e-9).resolved(torch.float64)
    y = random_hermitian((1,), 4, torch.float64, seed=8).requires_grad_(True)
    w, _ = eigh_with_grad(y, solver, opts, native=_native)
    assert type(w.grad_fn).__name__ == "_EighFunctionBackward" and solves == [1]


@pytest.mark.parametrize("native", [None, _native])
def test_double_backward_on_the_short_routes(native):
    a = random_hermitian((2,), 4, torch.float64, seed=9).requires_grad_(True)

    def f(m):
        w, v = eigh_with_grad(0.5 * (m + m.mT), _gauged, native=native)
        return w, v.square()  # gauge-invariant

    assert torch.autograd.gradgradcheck(f, (a,))
    assert torch.autograd.gradcheck(f, (a,))


def test_grad_and_inference_modes_are_honoured(monkeypatch):
    a = random_hermitian((), 5, torch.float64, seed=10).requires_grad_(True)
    short = _spy(monkeypatch, _autograd, "well_separated")
    with torch.no_grad():
        w, v = spectra.eigh(a)
    assert w.grad_fn is None and not v.requires_grad
    with torch.inference_mode():
        w, v = spectra.eigh(a)
    assert w.grad_fn is None and w.is_inference()
    assert short == []  # nothing was prepared for a backward that cannot run


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_double_backward_on_the_general_route(dtype):
    a = random_hermitian((2,), 4, dtype, seed=11).requires_grad_(True)
    opts = BackwardOptions(broadening=1e-14).resolved(torch.float64)  # the general route

    def f(m):
        w, v = eigh_with_grad(0.5 * (m + m.mH), _gauged, opts)
        return w, v.abs().square()

    assert torch.autograd.gradgradcheck(f, (a,))


def test_a_large_batch_backward_fans_out_with_the_same_bits(monkeypatch):
    batch, n = 64, 16  # 64 x 16^3 = FAN_OUT_WORK: split over the pool
    assert batch * n**3 >= _backward_fast.FAN_OUT_WORK
    monkeypatch.setattr(_backward_fast, "cpu_count", lambda: 2)  # whatever this machine has
    parts: list[tuple[int, int]] = []
    inner = _backward_fast.fan_out

    def spy(fn, total, workers, **kw):
        parts.append((total, workers))
        return inner(fn, total, workers, **kw)

    monkeypatch.setattr(_backward_fast, "fan_out", spy)
    a = random_hermitian((batch,), n, torch.float64, seed=12)
    w, v = torch.linalg.eigh(a)
    g = torch.Generator().manual_seed(3)
    gw, gv = torch.randn(w.shape, generator=g).double(), torch.randn(v.shape, generator=g).double()
    whole = torch_backward(w, v, gw, gv)
    for grads in ((gw, gv), (gw, None), (None, gv)):
        parts.clear()
        with torch.no_grad():  # as in a backward without create_graph
            split = _backward_fast.short_backward(w, v, *grads)
        assert torch.equal(split, torch_backward(w, v, *grads))
        assert parts == [(batch, 2)]
    # through autograd: the same split, torch's gradient
    weights = torch.randn(n, n, dtype=torch.float64)
    parts.clear()
    got = _grad(lambda x: eigh_with_grad(x, torch.linalg.eigh), a, weights, "wv")
    assert parts == [(batch, 2)]
    assert torch.equal(got, _grad(torch.linalg.eigh, a, weights, "wv"))
    # small work, or a graph to build (double backward): one call in this thread
    parts.clear()
    with torch.no_grad():
        small = _backward_fast.short_backward(w[:2], v[:2], gw[:2], gv[:2])
    assert torch.equal(small, whole[:2])
    with torch.enable_grad():
        _backward_fast.short_backward(w, v, gw, gv)
    assert parts == []


def test_the_cached_sign_factor_can_be_saved_by_autograd_whatever_the_mode():
    _backward_fast._sign_factor.cache_clear()
    with torch.inference_mode():
        factor = _backward_fast._sign_factor(torch.float64, (4, 4), (1, 3))
    assert not factor.is_inference()
    assert factor.tolist() == [1.0, -1.0, 1.0, -1.0]
    v = torch.eye(4, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad((v * factor).sum(), v)
    assert torch.equal(g, factor.expand(4, 4))
    assert _backward_fast._sign_factor(torch.float64, (2, 3, 3), (4,)).shape == (2, 1, 3)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("shape", [(), (3,)])
def test_complex_phase_free_losses_take_the_short_route_with_torchs_bits(monkeypatch, dtype, shape):
    a = random_hermitian(shape, 6, dtype, seed=13)
    weights = torch.randn(6, 6, dtype=torch.float64).to(a.real.dtype)
    short = _spy(monkeypatch, _autograd, "short_backward")
    general = _spy(monkeypatch, _autograd, "_backward_block")

    def grad(solve, loss):
        x = a.clone().requires_grad_(True)
        w, v = solve(x)
        (g,) = torch.autograd.grad(loss(w, v), x)
        return g

    def invariant(w, v):  # |v|^2: no phase dependence
        return (w.square()).sum() + (v.abs().square() * weights).sum()

    got = grad(lambda x: eigh_with_grad(x, torch.linalg.eigh), invariant)
    assert short == ["short_backward"] and general == []
    assert torch.equal(got, grad(torch.linalg.eigh, invariant))
    # a loss of the phase: the detector's route, and its warning (torch raises here)
    short.clear()
    with pytest.warns(_autograd.DegenerateGradientWarning):
        grad(lambda x: eigh_with_grad(x, torch.linalg.eigh), lambda w, v: v.real.sum())
    assert short == [] and general == ["_backward_block"]


def test_the_general_route_of_a_large_batch_fans_out_with_the_same_bits(monkeypatch):
    batch, n = 64, 16
    monkeypatch.setattr(_backward_fast, "cpu_count", lambda: 2)
    parts: list[int] = []
    inner = _autograd.fan_out

    def spy(fn, total, workers, **kw):
        parts.append(workers)
        return inner(fn, total, workers, **kw)

    monkeypatch.setattr(_autograd, "fan_out", spy)
    spectrum = torch.linspace(0.0, 3.0, n, dtype=torch.float64).repeat(batch, 1)
    spectrum[::3, 1] = spectrum[::3, 0]  # every third matrix degenerate
    a = with_spectrum(spectrum, torch.float64, 14)
    w, v = torch.linalg.eigh(a)
    g = torch.Generator().manual_seed(4)
    gw, gv = torch.randn(w.shape, generator=g).double(), torch.randn(v.shape, generator=g).double()
    for policy in ("ignore", "nan"):
        opts = BackwardOptions(degenerate=policy).resolved(torch.float64)
        with torch.no_grad():
            split = _autograd._backward(w, v, gw, gv, opts)
        assert parts == [2]
        parts.clear()
        serial = torch.cat(
            [
                _autograd._backward(w[i : i + 1], v[i : i + 1], gw[i : i + 1], gv[i : i + 1], opts)
                for i in range(batch)
            ]
        )
        torch.testing.assert_close(split, serial, atol=0, rtol=0, equal_nan=True)
        nan_rows = split.isnan().flatten(1).any(1)
        if policy == "nan":  # the basis-dependent loss on the degenerate pair: NaN there only
            assert nan_rows.tolist() == [i % 3 == 0 for i in range(batch)]
        else:
            assert not nan_rows.any()
        parts.clear()


def _numpy_separated(w: torch.Tensor, tol: float) -> bool:
    """:func:`well_separated`'s NumPy test (its answer for rows it does not screen)."""
    y = w.numpy()
    scale = np.maximum(np.abs(y).max(-1, keepdims=True), np.finfo(y.dtype).tiny)
    return bool((np.diff(y, axis=-1) > tol * scale).all())


def test_the_float32_screen_of_one_row_decides_as_the_numpy_test():
    """One float32 row is screened in float64 (``_row_separated_f32``): where it answers,
    the float32 NumPy test answers the same, at and around the bound, for tiny, huge,
    NaN and Inf rows; near the bound it abstains."""
    tol = degenerate_default(torch.float32)
    g = torch.Generator().manual_seed(4)
    abstained = 0
    for scale in (1e-30, 1e-3, 1.0, 1e20):
        for _ in range(200):
            w = torch.sort(torch.randn(5, generator=g, dtype=torch.float64) * scale).values
            top = float(w.abs().max())
            for factor in (0.0, 0.999, 1.0, 1.000001, 1.0001, 1.5, 1e3):
                x = w.clone()
                x[3] = x[2] + factor * tol * top
                x = torch.sort(x.to(torch.float32)).values
                sure = _backward_fast._row_separated_f32(x.tolist(), tol)
                if sure is None:
                    abstained += 1
                else:
                    assert sure == _numpy_separated(x, tol), (scale, factor, x.tolist())
                assert well_separated(x, tol) == _numpy_separated(x, tol)
    assert abstained > 0  # the near-bound rows were met and left to NumPy
    for bad in ([1.0, float("nan"), 3.0], [1.0, float("inf")], [float("-inf"), 0.0]):
        x = torch.tensor(bad, dtype=torch.float32)
        assert _backward_fast._row_separated_f32(x.tolist(), tol) is False
        assert not _numpy_separated(x, tol)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_the_phase_screen_of_one_matrix_decides_as_torchs_test(dtype):
    """``_phase_free_one`` (NumPy) against :func:`phase_free`'s torch test, on gradients
    of a phase-free loss, of a phase-dependent one, and tuned to the bound."""
    a = random_hermitian((), 4, dtype, seed=21)
    _, v = torch.linalg.eigh(a)
    g = torch.Generator().manual_seed(6)
    eps = torch.finfo(a.real.dtype).eps
    decided = 0
    for k in range(300):
        gv = v * torch.randn(4, generator=g, dtype=torch.float64).to(a.real.dtype)  # phase free
        d = (v.conj() * gv).sum(-2)
        bound = 1e3 * eps * float(d.abs().max())
        tilt = (k % 30) / 10.0  # 0 .. 2.9 times the bound, in the imaginary part
        gv = gv + 1j * tilt * bound * v / 4
        want = not bool(
            (
                (v.conj() * gv).sum(-2).imag.abs()
                > 1e3 * eps * (v.conj() * gv).sum(-2).abs().amax()
            ).any()
        )
        sure = _backward_fast._phase_free_one(v, gv)
        if sure is not None:
            decided += 1
            assert sure == want, (k, tilt)
        assert _backward_fast.phase_free(v, gv) == want
    assert decided > 100
    assert _backward_fast._phase_free_one(v, v.clone().requires_grad_()) is None


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 16])
def test_one_complex_matrix_backward_is_torchs_gradient_bitwise(monkeypatch, dtype, n):
    """One complex matrix, a phase-free loss: the short route's one-matrix formula
    (``mm`` and ``mH``) gives torch's gradient bit for bit, through the short route."""
    a = random_hermitian((), n, dtype, seed=30 + n)
    weights = torch.randn(n, n, generator=torch.Generator().manual_seed(2)).to(a.real.dtype)

    def grad(solve):
        x = a.clone().requires_grad_(True)
        w, v = solve(x)
        ((w * torch.arange(n, dtype=w.dtype)).sum() + (v.abs().square() * weights).sum()).backward()
        return x.grad

    one = _spy(monkeypatch, _backward_fast, "_torch_backward_one")
    got = grad(lambda x: eigh_with_grad(x, torch.linalg.eigh))
    assert one == ["_torch_backward_one"]  # the one-matrix formula ran
    assert torch.equal(got, grad(torch.linalg.eigh))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("n", [1, 2, 3, 8, 16, 20])
def test_the_light_nodes_complex_backward_is_the_one_matrix_formula(dtype, n):
    """``complex_backward_one`` (the light node's complex route, its phase test read off
    ``V^H gV``): the one-matrix formula's bits for a phase-free gradient (beyond the
    screen's size too), ``None`` (the general route) for a phase-dependent one."""
    a = random_hermitian((), n, dtype, seed=50 + n)
    w, v = torch.linalg.eigh(a)
    g = torch.Generator().manual_seed(n)
    gw = torch.randn(n, generator=g, dtype=torch.float64).to(w.dtype)
    gv = v * torch.randn(n, generator=g, dtype=torch.float64).to(w.dtype)  # phase free
    got = _backward_fast.complex_backward_one(w, v, gw, gv)
    assert got is not None
    assert torch.equal(got, _backward_fast._torch_backward_one(w, v, gw, gv))
    phased = gv + 1j * v  # diag(V^H gV) gains an imaginary part: phase dependent
    assert _backward_fast.complex_backward_one(w, v, gw, phased) is None
