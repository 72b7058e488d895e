"""spectra.eigh inside torch.func (grad, vmap, jacrev, jacfwd, jvp, hessian) vs torch's eigh.

Well-separated spectra; losses of eigenvalues and of gauge-invariant functions of the
eigenvectors (``|v|^2``), since spectra and torch choose different signs/phases.
"""

from __future__ import annotations

import pytest
import torch
from torch.func import grad, hessian, jacfwd, jacrev, jvp, vmap

import spectra

from .helpers import with_spectrum

DTYPES = [torch.float32, torch.float64, torch.complex128]


def _tol(dtype):
    return 1e-4 if dtype in (torch.float32, torch.complex64) else 1e-10


def _separated(batch, n, dtype, seed=0):
    w = torch.linspace(-2.0, 3.0, n, dtype=torch.float64).expand(batch, n)
    return with_spectrum(w + 0.1 * torch.arange(batch).unsqueeze(-1), dtype, seed=seed)


def _loss(eigh):
    def loss(m):
        w, v = eigh(m)
        weights = torch.arange(m.shape[-1], dtype=w.dtype)
        return (w**2).sum() + (v.abs() ** 2 * weights).sum()

    return loss


def _sym(x):
    return 0.5 * (x + x.mH)


@pytest.mark.parametrize("dtype", DTYPES)
def test_grad_matches_torch(dtype):
    a = _separated(1, 5, dtype)[0]
    g1 = grad(_loss(spectra.eigh))(a)
    g2 = grad(_loss(torch.linalg.eigh))(a)
    torch.testing.assert_close(g1, g2, atol=10 * _tol(dtype), rtol=10 * _tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_vmap_of_eigh_and_of_grad(dtype):
    a = _separated(4, 5, dtype)
    w1 = vmap(lambda m: spectra.eigh(m).eigenvalues)(a)
    torch.testing.assert_close(w1, torch.linalg.eigvalsh(a), atol=_tol(dtype), rtol=_tol(dtype))
    g1 = vmap(grad(_loss(spectra.eigh)))(a)
    g2 = vmap(grad(_loss(torch.linalg.eigh)))(a)
    torch.testing.assert_close(g1, g2, atol=10 * _tol(dtype), rtol=10 * _tol(dtype))


def test_vmap_over_a_batched_input_and_an_inner_batch():
    a = _separated(6, 4, torch.float64).reshape(2, 3, 4, 4)
    w = vmap(spectra.eigvalsh, in_dims=1)(a)  # maps dim 1; spectra batches dim 0 inside
    torch.testing.assert_close(w, torch.linalg.eigvalsh(a).transpose(0, 1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_jacrev_and_jacfwd_of_eigenvalues(dtype):
    a = _separated(1, 4, dtype)[0]
    ref = jacrev(lambda m: torch.linalg.eigvalsh(_sym(m)))(a)
    for jac in (jacrev, jacfwd):
        got = jac(lambda m: spectra.eigvalsh(_sym(m)))(a)
        torch.testing.assert_close(got, ref, atol=10 * _tol(dtype), rtol=10 * _tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_jvp_matches_torch(dtype):
    a = _separated(2, 5, dtype, seed=1)
    t = _sym(torch.randn(a.shape, generator=torch.Generator().manual_seed(2), dtype=dtype))
    _, d1 = jvp(_loss(spectra.eigh), (a,), (t,))
    _, d2 = jvp(_loss(torch.linalg.eigh), (a,), (t,))
    torch.testing.assert_close(d1, d2, atol=100 * _tol(dtype), rtol=10 * _tol(dtype))
    # eigenvalue tangents directly, and the projector of each eigenvector (gauge-free)
    (_w, v), (dw, dv) = jvp(spectra.eigh, (a,), (t,))
    (_w2, v2), (dw2, dv2) = jvp(torch.linalg.eigh, (a,), (t,))
    torch.testing.assert_close(dw, dw2, atol=10 * _tol(dtype), rtol=10 * _tol(dtype))
    dp1 = dv * v.conj() + v * dv.conj()
    dp2 = dv2 * v2.conj() + v2 * dv2.conj()
    torch.testing.assert_close(dp1, dp2, atol=100 * _tol(dtype), rtol=10 * _tol(dtype))


def test_forward_ad_dual_tensor_outside_torch_func():
    import torch.autograd.forward_ad as fwad

    a = _separated(1, 4, torch.float64)[0]
    t = _sym(torch.randn(4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3)))
    with fwad.dual_level():
        w = spectra.eigvalsh(fwad.make_dual(a, t))
        dw = fwad.unpack_dual(w).tangent
    with fwad.dual_level():
        dw2 = fwad.unpack_dual(torch.linalg.eigvalsh(fwad.make_dual(a, t))).tangent
    assert dw is not None
    torch.testing.assert_close(dw, dw2)


def test_hessian_of_an_eigenvalue_loss():
    a = _separated(1, 3, torch.float64)[0]

    def f(fn):
        return lambda m: (fn(_sym(m)) ** 3).sum()

    h1 = hessian(f(spectra.eigvalsh))(a)
    h2 = hessian(f(torch.linalg.eigvalsh))(a)
    torch.testing.assert_close(h1, h2, atol=1e-9, rtol=1e-9)
