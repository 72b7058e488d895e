"""Polar factor and inverse square root: values and orthonormality against the SVD polar
factor, gradients against finite differences (gradcheck/gradgradcheck)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch
from torch.autograd import gradcheck, gradgradcheck

import spectra
from spectra.stiefel import Stiefel, inv_sqrtm, polar

from .helpers import DTYPES, REAL, haar, svd_polar, tangent, tol


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(50, 9, 4), (3, 2, 5, 1), (7, 7), (4, 1, 1), (6, 30, 30)])
def test_polar_equals_svd_polar_factor(dtype, shape):
    g = torch.Generator().manual_seed(1)
    y = torch.randn(*shape, dtype=dtype, generator=g)
    if shape[-1] == 30:
        # the Gram route squares cond(Y): keep square Gaussian matrices well conditioned
        y = y + 2 * 30**0.5 * torch.eye(30, dtype=dtype)
    q = polar(y)
    ref = svd_polar(y.to(torch.complex128 if y.is_complex() else torch.float64))
    scale = 10 if shape[-1] == 30 else 1
    assert q.dtype == dtype and q.shape == y.shape
    assert torch.allclose(q.to(ref.dtype), ref, atol=scale * 5 * tol(dtype), rtol=0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_inv_sqrtm_matches_scipy(dtype):
    g = torch.Generator().manual_seed(2)
    a = torch.randn(20, 5, 5, dtype=dtype, generator=g)
    gram = a @ a.mH + 0.5 * torch.eye(5, dtype=dtype)
    out = inv_sqrtm(gram).numpy()
    for i in (0, 7, 19):
        ref = scipy.linalg.inv(scipy.linalg.sqrtm(gram[i].numpy().astype(np.complex128)))
        assert np.allclose(out[i], ref, atol=50 * tol(dtype))


def test_inv_sqrtm_degenerate_and_identity():
    eye = torch.eye(4, dtype=torch.float64).expand(3, 4, 4)
    assert torch.equal(inv_sqrtm(eye), eye)
    d = torch.diag(torch.tensor([4.0, 4.0, 9.0], dtype=torch.float64))
    assert torch.allclose(
        inv_sqrtm(d), torch.diag(torch.tensor([0.5, 0.5, 1 / 3], dtype=torch.float64))
    )


def test_singular_gram_raises_with_index():
    for seed in range(20):
        y = torch.randn(5, 6, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
        y[3, :, 2] = y[3, :, 0]  # rank deficient
        with pytest.raises(spectra.LinAlgError, match=r"\[3\]"):
            polar(y)
    y32 = y.float()
    with pytest.raises(spectra.LinAlgError, match=r"\[3\]"):
        polar(y32)
    # far from orthonormal but of full rank is fine
    assert torch.allclose(polar(torch.diag(torch.tensor([0.1, 1.0, 10.0]))), torch.eye(3))


def test_bad_shapes():
    with pytest.raises(ValueError, match="square"):
        inv_sqrtm(torch.randn(3, 4))
    with pytest.raises(ValueError, match="frames"):
        polar(torch.randn(3))


def test_empty_inputs():
    assert polar(torch.randn(0, 5, 3)).shape == (0, 5, 3)
    assert polar(torch.randn(4, 5, 0)).shape == (4, 5, 0)


def _sym(a):
    return (a + a.mH) / 2


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("case", ["random", "identity", "degenerate"])
def test_inv_sqrtm_gradcheck_and_gradgradcheck(dtype, case):
    g = torch.Generator().manual_seed(3)
    if case == "random":
        a = torch.randn(2, 4, 4, dtype=dtype, generator=g)
        base = a @ a.mH + torch.eye(4, dtype=dtype)
    elif case == "identity":
        base = torch.eye(4, dtype=dtype).repeat(2, 1, 1)
    else:
        q = haar(2, 4, 4, dtype=dtype, generator=g)
        base = q @ torch.diag(torch.tensor([1.0, 1.0, 1.0, 3.0], dtype=dtype)) @ q.mH
    x = base.clone().requires_grad_()
    assert gradcheck(lambda t: inv_sqrtm(_sym(t)), (x,))
    assert gradgradcheck(lambda t: inv_sqrtm(_sym(t)), (x,))


@pytest.mark.parametrize("method", ["polar", "qr", "cayley"])
@pytest.mark.parametrize("scale", [1e-8, 1e-6, 1e-4, 1e-2, 1.0])
def test_gradcheck_through_retract(method, scale):
    g = torch.Generator().manual_seed(4)
    x = haar(2, 5, 3, generator=g).requires_grad_()
    xi = (scale * tangent(x.detach(), generator=g)).requires_grad_()
    st = Stiefel()
    # finite-difference step well below the step size so the test resolves small scales
    eps = 1e-6 * min(1.0, max(scale, 1e-3))
    assert gradcheck(lambda a, b: st.retract(a, b, method), (x, xi), eps=eps, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("scale", [1e-8, 1e-3, 1.0])
def test_gradgradcheck_through_polar_retract(scale):
    g = torch.Generator().manual_seed(5)
    x = haar(1, 4, 2, generator=g).requires_grad_()
    xi = (scale * tangent(x.detach(), generator=g)).requires_grad_()
    st = Stiefel()
    assert gradgradcheck(lambda a, b: st.retract(a, b), (x, xi), atol=1e-5, rtol=1e-4)


def test_complex_retract_gradcheck():
    g = torch.Generator().manual_seed(6)
    x = haar(2, 4, 2, dtype=torch.complex128, generator=g).requires_grad_()
    xi = (1e-6 * tangent(x.detach(), generator=g)).requires_grad_()
    assert gradcheck(lambda a, b: Stiefel().retract(a, b), (x, xi), eps=1e-9, atol=1e-5)


@pytest.mark.parametrize("scale", [0.0, 1e-8, 1e-4])
def test_float32_gradient_tiny_steps_finite_and_accurate(scale):
    """At G ~ I the eigh backward would divide by ~0; the divided differences do not."""
    g = torch.Generator().manual_seed(7)
    x64 = haar(64, 12, 4, generator=g)
    xi64 = scale * tangent(x64, generator=g)
    c = torch.randn(64, 12, 4, dtype=torch.float64, generator=g)
    grads = {}
    for dtype in (torch.float32, torch.float64):
        x = x64.to(dtype).requires_grad_()
        xi = xi64.to(dtype).requires_grad_()
        loss = (Stiefel().retract(x, xi) * c.to(dtype)).sum()
        grads[dtype] = torch.autograd.grad(loss, (x, xi))
    for g32, g64 in zip(grads[torch.float32], grads[torch.float64], strict=True):
        assert torch.isfinite(g32).all()
        assert torch.allclose(g32.double(), g64, atol=1e-4)


def test_gradient_at_zero_step_matches_svd_finite_difference():
    """d/dX <C, polar(X)> at a point of the manifold (G = I exactly) against SVD-based FD."""
    g = torch.Generator().manual_seed(8)
    x = haar(3, 7, 3, generator=g)
    c = torch.randn(3, 7, 3, dtype=torch.float64, generator=g)
    d = torch.randn(3, 7, 3, dtype=torch.float64, generator=g)
    h = 1e-6
    num = ((svd_polar(x + h * d) - svd_polar(x - h * d)) * c).sum() / (2 * h)
    xr = x.clone().requires_grad_()
    (gx,) = torch.autograd.grad((Stiefel().retract(xr, torch.zeros_like(x)) * c).sum(), xr)
    assert abs(float((gx * d).sum()) - float(num)) < 1e-7


def _orth(q):
    eye = torch.eye(q.shape[-1], dtype=q.dtype)
    return (q.mH @ q - eye).abs().amax((-2, -1))


#: orthonormality bars per dtype: the SVD polar factor's own level (~5e-7 / ~1e-15)
ORTH = {torch.float32: 1e-6, torch.float64: 3e-15, torch.complex64: 1.5e-6, torch.complex128: 4e-15}


@pytest.mark.parametrize("dtype", DTYPES)
def test_square_frames_are_as_orthonormal_as_the_svd_polar_factor(dtype):
    """84 random 64 x 64 draws (the Gram route alone failed 80% of these in float32)."""
    g = torch.Generator().manual_seed(21)
    st = Stiefel()
    y = torch.randn(84, 64, 64, dtype=dtype, generator=g)
    ref = svd_polar(y)
    for q in (st.projx(y), st.random(84, 64, 64, dtype=dtype, generator=g)):
        assert q.dtype == dtype
        err = _orth(q)
        assert float(err.max()) <= max(ORTH[dtype], 2 * float(_orth(ref).max()))
    # and it is the polar factor (the SVD's own forward error is ~eps cond(Y))
    exact = svd_polar(y.to(torch.complex128 if y.is_complex() else torch.float64))
    assert float((st.projx(y).to(exact.dtype) - exact).abs().max()) < (
        5e-4 if dtype in (torch.float32, torch.complex64) else 1e-10
    )


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("decades", [2, 4, 6, 10])
def test_ill_conditioned_frames(dtype, decades):
    """Frames with singular values spread over ``decades`` (cond up to 1e10, where the Gram
    matrix is singular to working precision and the dilation takes over): orthonormal to the
    SVD's level and as close to the exact polar factor as the SVD's own result."""
    if dtype == torch.float32 and decades > 5:
        decades = 5  # float32 frames past cond ~1e6 are rank deficient to working precision
    g = torch.Generator().manual_seed(22 + decades)
    u = haar(10, 64, 64, generator=g)
    v = haar(10, 64, 64, generator=g)
    s = torch.logspace(0, -decades, 64, dtype=torch.float64)
    exact = u @ v.mT
    y = ((u * s) @ v.mT).to(dtype)
    q = Stiefel().projx(y)
    ref = svd_polar(y)
    assert float(_orth(q).max()) <= max(ORTH[dtype], 2 * float(_orth(ref).max()))
    ours = float((q.double() - exact).abs().max())
    theirs = float((ref.double() - exact).abs().max())
    # the Gram route's forward error is ~eps cond^2 (the SVD's ~eps cond), capped at ~1e-8
    # by the switch to the Hermitian dilation
    eps = torch.finfo(dtype).eps
    assert ours <= 2 * theirs + min(4 * eps * 10 ** (2 * decades), 1e-8) + 10 * eps


@pytest.mark.parametrize("dtype", REAL)
def test_tall_frames_and_float32_retraction_accuracy(dtype):
    g = torch.Generator().manual_seed(23)
    st = Stiefel()
    y = torch.randn(50, 64, 16, dtype=dtype, generator=g)
    assert float(_orth(st.projx(y)).max()) <= ORTH[dtype]
    x = st.random(50, 64, 16, dtype=dtype, generator=g)
    step = st.proj(x, torch.randn(50, 64, 16, dtype=dtype, generator=g))
    # retraction steps keep Y^H Y >= I: the plain Gram route is accurate there
    assert float(_orth(st.retract(x, 0.5 * step)).max()) <= 20 * ORTH[dtype]


def test_precise_polar_keeps_gradients_and_refuses_rank_deficiency():
    g = torch.Generator().manual_seed(24)
    y = torch.randn(3, 6, 3, dtype=torch.float64, generator=g).requires_grad_()
    assert gradcheck(lambda t: polar(t, precise=True), (y,))
    bad = y.detach().clone()
    bad[1, :, 2] = bad[1, :, 0]
    with pytest.raises(spectra.LinAlgError, match=r"\[1\]"):
        polar(bad.float(), precise=True)
