"""Stiefel manifold operations against independent references (SVD, QR, finite differences)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from spectra.stiefel import RETRACTIONS, Stiefel

from .helpers import DTYPES, REAL, haar, orth_err, svd_polar, tangent, tol

METHODS = sorted(RETRACTIONS)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(40, 10, 3), (5, 6, 6), (3, 1, 1), (2, 3, 8, 2)])
def test_retraction_lands_on_manifold(method, dtype, shape):
    g = torch.Generator().manual_seed(10)
    x = haar(*shape, dtype=dtype, generator=g)
    xi = tangent(x, generator=g)
    y = Stiefel().retract(x, xi, method)
    assert y.shape == x.shape and y.dtype == dtype
    assert orth_err(y) < 5 * tol(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_polar_retraction_is_svd_polar_factor_of_x_plus_xi(dtype):
    g = torch.Generator().manual_seed(11)
    x = haar(100, 8, 3, dtype=dtype, generator=g)
    xi = 0.7 * tangent(x, generator=g)
    y = Stiefel().retract(x, xi)
    ref = svd_polar((x + xi).to(torch.complex128 if dtype.is_complex else torch.float64))
    assert torch.allclose(y.to(ref.dtype), ref, atol=5 * tol(dtype), rtol=0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_qr_retraction_matches_torch_qr_positive_diagonal(dtype):
    g = torch.Generator().manual_seed(12)
    x = haar(30, 7, 4, dtype=dtype, generator=g)
    xi = tangent(x, generator=g)
    y = Stiefel().retract(x, xi, "qr")
    # R = Y^H (X + xi) must be upper triangular with a real positive diagonal
    r = y.mH @ (x + xi)
    assert torch.allclose(torch.tril(r, -1), torch.zeros_like(r), atol=20 * tol(dtype))
    d = torch.diagonal(r, dim1=-2, dim2=-1)
    assert (
        (d.real > 0).all() and (d.imag.abs() < 20 * tol(dtype)).all()
        if d.is_complex()
        else (d > 0).all()
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_cayley_matches_dense_cayley_transform(dtype):
    g = torch.Generator().manual_seed(13)
    x = haar(10, 6, 2, dtype=dtype, generator=g)
    xi = tangent(x, generator=g)
    eye = torch.eye(6, dtype=dtype)
    p = eye - x @ x.mH / 2
    a = p @ xi @ x.mH - x @ xi.mH @ p
    ref = torch.linalg.solve(eye - a / 2, (eye + a / 2) @ x)
    assert torch.allclose(Stiefel().retract(x, xi, "cayley"), ref, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_retractions_agree_to_first_order(method):
    g = torch.Generator().manual_seed(14)
    x = haar(8, 9, 3, generator=g)
    xi = tangent(x, generator=g)
    st = Stiefel()
    errs = [float((st.retract(x, t * xi, method) - x - t * xi).abs().max()) for t in (1e-2, 1e-3)]
    assert errs[1] < errs[0] / 50  # O(t^2)


@pytest.mark.parametrize("method", ["polar", "qr"])
@pytest.mark.parametrize("dtype,bound", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_orthogonality_after_1000_retractions(method, dtype, bound):
    g = torch.Generator().manual_seed(15)
    st = Stiefel()
    x = haar(8, 16, 4, dtype=torch.float64, generator=g).to(dtype)
    for _ in range(1000):
        xi = st.proj(x, 0.1 * torch.randn(x.shape, dtype=dtype, generator=g))
        x = st.retract(x, xi, method)
    assert float(st.orthogonality_error(x).max()) < bound


@pytest.mark.parametrize("dtype,bound", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_polar_retraction_pulls_a_drifted_point_back(dtype, bound):
    g = torch.Generator().manual_seed(16)
    x = haar(20, 10, 3, generator=g).to(dtype)
    x = x + 1e-3 * torch.randn(x.shape, dtype=dtype, generator=g)
    y = Stiefel().retract(x, torch.zeros_like(x))
    assert float(Stiefel().orthogonality_error(y).max()) < bound


@pytest.mark.parametrize("dtype", DTYPES)
def test_projection_is_tangent_idempotent_and_orthogonal(dtype):
    g = torch.Generator().manual_seed(17)
    st = Stiefel()
    x = haar(25, 8, 3, dtype=dtype, generator=g)
    u = torch.randn(x.shape, dtype=dtype, generator=g)
    pu = st.proj(x, u)
    assert st.check_tangent(x, pu, atol=10 * tol(dtype))
    assert not st.check_tangent(x, u)
    assert torch.allclose(st.proj(x, pu), pu, atol=10 * tol(dtype))
    # the residual u - P u is normal: orthogonal to every tangent vector
    w = tangent(x, generator=g)
    assert float(st.inner(x, u - pu, w).abs().max()) < 50 * tol(dtype)


def test_riemannian_gradient_gives_directional_derivatives():
    """<rgrad f, v> = d/dt f(R_X(t v)) for tangent v (checked by central differences)."""
    g = torch.Generator().manual_seed(18)
    st = Stiefel()
    a = torch.randn(6, 7, 7, dtype=torch.float64, generator=g)
    a = a + a.mT

    def f(x):
        return (x.mT @ a @ x).diagonal(dim1=-2, dim2=-1).pow(2).sum((-1,))

    x = haar(6, 7, 2, generator=g).requires_grad_()
    (egrad,) = torch.autograd.grad(f(x).sum(), x)
    x = x.detach()
    rgrad = st.egrad2rgrad(x, egrad)
    assert st.check_tangent(x, rgrad)
    v = tangent(x, generator=g)
    h = 1e-5
    num = (f(st.retract(x, h * v)) - f(st.retract(x, -h * v))) / (2 * h)
    assert torch.allclose(st.inner(x, rgrad, v), num, atol=1e-7)


def test_transport_and_retract_transport():
    g = torch.Generator().manual_seed(19)
    st = Stiefel()
    x = haar(5, 8, 3, generator=g)
    xi, v = tangent(x, generator=g), tangent(x, generator=g)
    y, tv = st.retract_transport(x, 0.3 * xi, v)
    assert st.check_tangent(y, tv)
    assert torch.allclose(tv, st.transport(x, y, v))
    assert torch.allclose(y, st.retract(x, 0.3 * xi))


def test_inner_and_norm_complex():
    g = torch.Generator().manual_seed(20)
    st = Stiefel()
    x = haar(4, 5, 2, dtype=torch.complex128, generator=g)
    u, v = tangent(x, generator=g), tangent(x, generator=g)
    ref = torch.einsum("bij,bij->b", u.conj(), v).real
    assert torch.allclose(st.inner(x, u, v), ref)
    assert torch.allclose(st.norm(x, u), torch.linalg.matrix_norm(u))
    assert st.inner(x, u, v, keepdim=True).shape == (4, 1, 1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_random_points(dtype):
    st = Stiefel()
    x = st.random(200, 6, 2, dtype=dtype, generator=torch.Generator().manual_seed(21))
    assert x.shape == (200, 6, 2) and x.dtype == dtype
    assert st.check(x)
    # Haar: E[X] = 0 and E[|X_ij|^2] = 1/n
    assert float(x.abs().pow(2).mean()) == pytest.approx(1 / 6, rel=0.1)
    assert float(x.mean().abs()) < 0.05
    assert st.random((3, 4, 4), dtype=torch.float64).shape == (3, 4, 4)


@pytest.mark.parametrize("dtype", DTYPES)
def test_projx_is_nearest_point_and_dist(dtype):
    g = torch.Generator().manual_seed(22)
    st = Stiefel()
    a = torch.randn(30, 7, 3, dtype=dtype, generator=g)
    big = a.to(torch.complex128 if dtype.is_complex else torch.float64)
    ref = svd_polar(big)
    assert torch.allclose(st.projx(a).to(ref.dtype), ref, atol=10 * tol(dtype))
    s = torch.linalg.svdvals(big)
    ref_dist = ((s - 1) ** 2).sum(-1).sqrt()
    assert torch.allclose(
        st.distance_to_manifold(a).double(), ref_dist, atol=10 * tol(dtype), rtol=1e-4
    )
    assert torch.allclose(
        st.distance_to_manifold(a).double(),
        torch.linalg.matrix_norm(big - ref),
        atol=10 * tol(dtype),
        rtol=1e-4,
    )
    assert float(st.distance_to_manifold(st.projx(a)).max()) < 10 * tol(dtype) ** 0.5


def test_check_names_offending_batch_indices():
    st = Stiefel()
    x = st.random(2, 3, 5, 2, dtype=torch.float64)
    assert st.check(x, raise_error=True)
    x[1, 2] *= 1.01
    assert not st.check(x)
    with pytest.raises(ValueError, match=r"\(1, 2\)"):
        st.check(x, raise_error=True)
    u = torch.randn(2, 3, 5, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match="not tangent"):
        st.check_tangent(st.random(2, 3, 5, 2, dtype=torch.float64), u, raise_error=True)


def test_retract_errors():
    st = Stiefel()
    x = st.random(4, 5, 2, dtype=torch.float64)
    xi = torch.zeros_like(x)
    xi[2, 0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"xi contains NaN or Inf at batch indices \[2\]"):
        st.retract(x, xi)
    with pytest.raises(ValueError, match="unknown retraction"):
        st.retract(x, x, "svd")
    with pytest.raises(ValueError, match="unknown retraction"):
        Stiefel("exp")
    with pytest.raises(ValueError, match="p <= n"):
        st.retract(torch.randn(3, 2, 4), torch.randn(3, 2, 4))
    with pytest.raises(ValueError, match="xi has shape"):
        st.retract(x, torch.zeros(4, 5, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="p <= n"):
        st.random(2, 3)


@pytest.mark.parametrize("dtype", REAL)
def test_numpy_in_numpy_out(dtype):
    st = Stiefel()
    x = st.random(10, 6, 2, dtype=dtype).numpy()
    u = np.random.default_rng(0).standard_normal(x.shape).astype(x.dtype)
    xi = st.proj(x, u)
    assert isinstance(xi, np.ndarray) and xi.dtype == x.dtype
    y = st.retract(x, xi, "polar")
    assert isinstance(y, np.ndarray) and y.dtype == x.dtype
    ref = svd_polar(torch.from_numpy(x + xi).double()).numpy()
    assert np.allclose(y, ref, atol=5 * tol(dtype))
    assert isinstance(st.distance_to_manifold(x), np.ndarray)


def test_empty_and_trivial_shapes():
    st = Stiefel()
    for method in METHODS:
        x = torch.empty(0, 5, 2)
        assert st.retract(x, x, method).shape == (0, 5, 2)
    x = torch.ones(3, 1, 1, dtype=torch.float64)
    y = st.retract(x, torch.zeros_like(x))
    assert torch.equal(y, x)
    assert st.retract(-x, torch.zeros_like(x)).eq(-1).all()
    assert st.orthogonality_error(torch.empty(2, 4, 0)).shape == (2,)


def test_manifold_equality_and_repr():
    assert Stiefel() == Stiefel("polar") and Stiefel("qr") != Stiefel()
    assert hash(Stiefel("qr")) == hash(Stiefel("qr"))
    assert repr(Stiefel("cayley")) == "Stiefel(retraction='cayley')"


def test_metric_argument_repr_equality_and_defaults():
    euclid, canon = Stiefel(), Stiefel(metric="canonical")
    assert euclid.retraction == "polar" and canon.retraction == "cayley"
    assert euclid != canon and hash(euclid) != hash(canon)
    assert canon == Stiefel("cayley", metric="canonical")
    assert repr(canon) == "Stiefel(retraction='cayley', metric='canonical')"
    assert repr(euclid) == "Stiefel(retraction='polar')"
    with pytest.raises(ValueError, match="unknown metric"):
        Stiefel(metric="riemannian")


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_canonical_gradient_inner_and_cayley_against_closed_forms(dtype):
    """The canonical metric's gradient is the metric's Riesz representer of <G, xi>:
    <rgrad, xi>_c = Re tr(G^H xi) for every tangent xi; the Cayley retraction equals the
    dense n x n form and stays on the manifold."""
    g = torch.Generator().manual_seed(31)
    st = Stiefel(metric="canonical")
    x = haar(4, 9, 3, dtype=dtype, generator=g)
    egrad = torch.randn(4, 9, 3, dtype=dtype, generator=g)
    xi = tangent(x, generator=g)
    rg = st.egrad2rgrad(x, egrad)
    assert st.check_tangent(x, rg, atol=1e-12)
    lhs = st.inner(x, rg, xi)
    rhs = (egrad.conj() * xi).real.sum((-2, -1)) if x.is_complex() else (egrad * xi).sum((-2, -1))
    torch.testing.assert_close(lhs, rhs, atol=1e-12, rtol=1e-12)
    y = st.retract(x, 0.4 * xi)
    a = 0.4 * (xi @ x.mH - x @ xi.mH)
    eye = torch.eye(9, dtype=dtype)
    torch.testing.assert_close(y, torch.linalg.solve(eye - a / 2, (eye + a / 2) @ x))
    assert st.check(y, atol=1e-12)
    # other retractions stay available under the canonical metric
    assert st.check(st.retract(x, 0.4 * xi, "polar"), atol=1e-12)


def test_dist_between_points_and_distance_to_manifold():
    g = torch.Generator().manual_seed(32)
    st = Stiefel()
    x = haar(5, 6, 2, generator=g)
    y = haar(5, 6, 2, generator=g)
    torch.testing.assert_close(st.dist(x, y), torch.linalg.matrix_norm(x - y))
    assert float(st.dist(x, x).max()) == 0.0
    assert isinstance(st.dist(x.numpy(), y.numpy()), np.ndarray)
    assert float(st.distance_to_manifold(x).max()) < 1e-14
    assert abs(float(st.distance_to_manifold(2 * x[0])) - 2**0.5) < 1e-12
    with pytest.raises(TypeError):
        st.dist(x)  # the one-argument form was renamed distance_to_manifold


def test_optimizers_group_metrics_separately():
    from spectra.stiefel import RiemannianSGD, StiefelParameter

    g = torch.Generator().manual_seed(33)
    e = StiefelParameter(haar(6, 3, generator=g))
    c = StiefelParameter(haar(6, 3, generator=g), manifold=Stiefel("polar", metric="canonical"))
    ref_e, ref_c = e.detach().clone(), c.detach().clone()
    opt = RiemannianSGD([e, c], lr=0.1)
    target = torch.randn(6, 3, dtype=torch.float64, generator=g)
    ((e - target) ** 2).sum().backward()
    ((c - target) ** 2).sum().backward()
    opt.step()
    ge, gc = 2 * (ref_e - target), 2 * (ref_c - target)
    st_e, st_c = Stiefel(), Stiefel(metric="canonical")
    torch.testing.assert_close(e.detach(), st_e.retract(ref_e, -0.1 * st_e.egrad2rgrad(ref_e, ge)))
    torch.testing.assert_close(
        c.detach(), st_c.retract(ref_c, -0.1 * st_c.egrad2rgrad(ref_c, gc), "polar")
    )
