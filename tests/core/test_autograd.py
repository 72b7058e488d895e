"""Gradients: equal to torch's where the spectrum is separated, finite where degenerate."""

from __future__ import annotations

import pytest
import torch

import spectra

from .helpers import random_hermitian, with_spectrum


def _sym(x):
    return 0.5 * (x + x.mH)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_gradcheck_and_gradgradcheck_separated(dtype):
    x = random_hermitian((2,), 4, dtype, seed=1).requires_grad_()

    def loss_terms(m):
        w, v = spectra.eigh(_sym(m))
        # gauge-invariant functions of the eigenvectors (|v|^2) and eigenvalues
        return w, (v.abs() ** 2)

    assert torch.autograd.gradcheck(loss_terms, (x,))
    assert torch.autograd.gradgradcheck(loss_terms, (x,))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
def test_gradients_equal_torch_where_separated(dtype):
    a = random_hermitian((3,), 6, dtype, seed=2)
    weights = torch.randn(6, 6, dtype=torch.float64).to(a.real.dtype)
    grads = []
    for fn in (spectra.eigh, torch.linalg.eigh):
        x = a.clone().requires_grad_()
        w, v = fn(_sym(x))
        loss = (w * torch.arange(6)).sum() + ((v.abs() ** 2) * weights).sum()
        (g,) = torch.autograd.grad(loss, x)
        grads.append(g)
    tol = 1e-3 if dtype in (torch.float32, torch.complex64) else 1e-10
    torch.testing.assert_close(grads[0], grads[1], atol=tol, rtol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex128])
def test_degenerate_eigenvectors_have_finite_invariant_gradients(dtype):
    a = with_spectrum(
        torch.tensor([[1.0, 1.0, 1.0, 2.0, 3.0, 3.0]], dtype=torch.float64), dtype, seed=3
    )
    x = a.clone().requires_grad_()
    w, v = spectra.eigh(_sym(x))
    proj = v[..., :3] @ v[..., :3].mH  # projector onto the degenerate subspace
    target = torch.randn(6, 6, dtype=torch.float64).to(dtype)
    loss = (proj * target).real.sum() + w.sum()
    (g,) = torch.autograd.grad(loss, x)
    assert torch.isfinite(g.abs()).all()
    # the projector's derivative is well defined: check against finite differences (float64)
    if dtype == torch.float64:
        d = _sym(torch.randn(6, 6, dtype=torch.float64))
        eps = 1e-6

        def f(m):
            w_, v_ = spectra.eigh(_sym(m))
            p = v_[..., :3] @ v_[..., :3].mH
            return float((p * target).sum() + w_.sum())

        fd = (f(a + eps * d) - f(a - eps * d)) / (2 * eps)
        assert abs(fd - float((g * d).sum())) < 1e-5


def test_exactly_equal_eigenvalues_where_torch_gives_nan():
    a = torch.diag(torch.tensor([1.0, 1.0, 2.0, 2.0], dtype=torch.float64))
    target = torch.randn(4, 4, dtype=torch.float64)
    grads = []
    for fn in (spectra.eigh, torch.linalg.eigh):
        x = a.clone().requires_grad_()
        _w, v = fn(_sym(x))
        loss = ((v[:, :2] @ v[:, :2].mT) * target).sum()
        grads.append(torch.autograd.grad(loss, x)[0])
    assert torch.isfinite(grads[0]).all()
    assert not torch.isfinite(grads[1]).all()


def test_lorentzian_broadening_is_finite_and_close_when_separated():
    a = random_hermitian((2,), 5, torch.float64, seed=4).requires_grad_()
    _, v = spectra.eigh(_sym(a), broadening=1e-12)
    (g1,) = torch.autograd.grad((v[..., 0] ** 2 * torch.arange(5.0)).sum(), a)
    _w, v = spectra.eigh(_sym(a))
    (g2,) = torch.autograd.grad((v[..., 0] ** 2 * torch.arange(5.0)).sum(), a)
    torch.testing.assert_close(g1, g2, atol=1e-8, rtol=1e-8)


def test_eigvalsh_and_generalized_gradients():
    a = random_hermitian((2,), 4, torch.float64, seed=5).requires_grad_()
    b0 = random_hermitian((2,), 4, torch.float64, seed=6)
    b = (b0 @ b0.mT + 4 * torch.eye(4, dtype=torch.float64)).requires_grad_()
    assert torch.autograd.gradcheck(lambda m: spectra.eigvalsh(_sym(m)), (a,))
    assert torch.autograd.gradcheck(lambda m, s: spectra.eigvalsh(_sym(m), _sym(s)), (a, b))
