"""spectra.matrix_function: values and Daleckii-Krein gradients, exact at degeneracies.

References: ``torch.linalg.matrix_exp`` (value and its own autograd, a Pade/Taylor code that
knows nothing of eigenvalues), SciPy's ``sqrtm``, central finite differences and gradcheck
on symmetric perturbations, at ``A = I`` and at repeated eigenvalues.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra

from .helpers import random_hermitian, with_spectrum

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]


def _tol(dtype):
    return 2e-4 if dtype in (torch.float32, torch.complex64) else 1e-10


def _cases(dtype):
    """Separated, repeated-eigenvalue and identity 4x4 batches."""
    w_rep = torch.tensor([[0.3, 0.3, 0.3, -0.5], [1.0, 1.0, -1.0, -1.0]], dtype=torch.float64)
    return {
        "random": 0.5 * random_hermitian((3,), 4, dtype, seed=1),
        "repeated": with_spectrum(w_rep, dtype, seed=2),
        "identity": torch.eye(4, dtype=dtype).expand(2, 4, 4).clone(),
    }


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ["random", "repeated", "identity"])
def test_exp_value_and_gradient_match_matrix_exp(dtype, case):
    a = _cases(dtype)[case]
    g = torch.Generator().manual_seed(7)
    weight = torch.randn(a.shape, generator=g, dtype=torch.float64).to(dtype)
    a1 = a.clone().requires_grad_()
    y1 = spectra.matrix_function(a1, torch.exp)
    (y1 * weight).sum().real.backward()
    a2 = a.clone().requires_grad_()
    y2 = torch.linalg.matrix_exp(a2)
    (y2 * weight).sum().real.backward()
    tol = _tol(dtype)
    torch.testing.assert_close(y1, y2.detach(), atol=tol * 10, rtol=tol * 10)
    torch.testing.assert_close(a1.grad, a2.grad, atol=tol * 20, rtol=tol * 20)


def test_issue_example_identity_gives_e_times_ones():
    a = torch.eye(3, dtype=torch.float64, requires_grad=True)
    spectra.matrix_function(a, torch.exp).sum().backward()
    torch.testing.assert_close(a.grad, torch.full((3, 3), np.e, dtype=torch.float64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_sqrt_matches_scipy_sqrtm_numpy_in_numpy_out(dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5, 5))
    if np.iscomplexobj(np.empty(0, dtype)):
        x = x + 1j * rng.standard_normal((3, 5, 5))
    a = (x @ np.conj(x.transpose(0, 2, 1)) + np.eye(5)).astype(dtype)
    out = spectra.matrix_function(a, torch.sqrt)
    assert isinstance(out, np.ndarray) and out.dtype == a.dtype and out.shape == a.shape
    tol = 1e-4 if np.dtype(dtype) == np.float32 else 1e-10
    for i in range(3):
        ref = scipy.linalg.sqrtm(a[i].astype(np.complex128 if np.iscomplexobj(a) else np.float64))
        np.testing.assert_allclose(out[i], ref, atol=tol * 10, rtol=tol * 10)


@pytest.mark.parametrize("case", ["random", "repeated", "identity"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_gradcheck_on_symmetric_perturbations(case, dtype):
    a = _cases(dtype)[case][:1].clone().requires_grad_()

    def fn(x):
        h = 0.5 * (x + x.mH)  # perturb within Hermitian matrices, as torch's eigh tests do
        return spectra.matrix_function(h, lambda w: torch.sin(w) + w**3)

    assert torch.autograd.gradcheck(fn, (a,), eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_finite_differences_at_a_double_eigenvalue(dtype):
    a = with_spectrum(torch.tensor([[2.0, 2.0, 0.5]], dtype=torch.float64), torch.float64, 4)[0]
    direction = random_hermitian((), 3, torch.float64, seed=8)
    weight = random_hermitian((), 3, torch.float64, seed=9)

    def loss(x):
        return float((spectra.matrix_function(x, torch.log) * weight).sum())

    h = 1e-5
    fd = (loss(a + h * direction) - loss(a - h * direction)) / (2 * h)
    x = a.to(dtype).requires_grad_()
    (spectra.matrix_function(x, torch.log) * weight.to(dtype)).sum().backward()
    analytic = float((x.grad.double() * direction).sum())
    assert abs(analytic - fd) <= (1e-4 if dtype == torch.float32 else 1e-8) * max(1, abs(fd))


def test_complex_valued_f_matches_matrix_exp_of_i_a():
    a = with_spectrum(torch.tensor([[1.0, 1.0, -0.3]], dtype=torch.float64), torch.float64, 5)
    weight = torch.randn(a.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    a1 = a.clone().requires_grad_()
    y1 = spectra.matrix_function(a1, lambda w: torch.exp(1j * w))
    (y1.real * weight).sum().backward()
    a2 = a.clone().requires_grad_()
    y2 = torch.linalg.matrix_exp(1j * a2.to(torch.complex128))
    (y2.real * weight).sum().backward()
    torch.testing.assert_close(y1, y2.detach(), atol=1e-12, rtol=1e-12)
    assert a1.grad.dtype == torch.float64
    torch.testing.assert_close(a1.grad, a2.grad, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 0)])
def test_empty_input_stays_attached(shape):
    a = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
    y = spectra.matrix_function(a, torch.exp)
    assert y.shape == shape and y.grad_fn is not None
    y.sum().backward()
    assert a.grad is not None and a.grad.shape == shape


def test_non_elementwise_f_is_refused():
    with pytest.raises(ValueError, match="elementwise"):
        spectra.matrix_function(torch.eye(3, dtype=torch.float64), lambda w: w.sum(-1))


@pytest.mark.parametrize("case", ["random", "repeated", "identity"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_gradgradcheck_including_exact_degeneracies(case, dtype):
    a = _cases(dtype)[case][:1].clone().requires_grad_()

    def fn(x):
        return spectra.matrix_function(0.5 * (x + x.mH), lambda w: torch.sin(w) + w**3)

    assert torch.autograd.gradgradcheck(fn, (a,), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("case", ["random", "identity"])
def test_hessian_vector_product_matches_matrix_exp(case):
    a = _cases(torch.float64)[case][0]
    weight = random_hermitian((), 4, torch.float64, seed=21)
    direction = random_hermitian((), 4, torch.float64, seed=22)
    hvps = []
    for fn in (lambda x: spectra.matrix_function(x, torch.exp), torch.linalg.matrix_exp):
        x = a.clone().requires_grad_()
        (g,) = torch.autograd.grad((fn(x) * weight).sum(), x, create_graph=True)
        (hvp,) = torch.autograd.grad((g * direction).sum(), x)
        hvps.append(hvp)
    torch.testing.assert_close(hvps[0], hvps[1], atol=1e-9, rtol=1e-9)


def test_second_derivative_of_a_complex_valued_f_raises():
    a = torch.eye(3, dtype=torch.float64, requires_grad=True)
    y = spectra.matrix_function(a, lambda w: torch.exp(1j * w))
    (g,) = torch.autograd.grad(y.real.sum(), a, create_graph=True)
    with pytest.raises(RuntimeError, match="real-valued f only"):
        g.sum().backward()


def test_no_grad_path_equals_grad_path_value():
    a = random_hermitian((4,), 6, torch.float64, seed=12)
    y0 = spectra.matrix_function(a, torch.tanh)
    y1 = spectra.matrix_function(a.clone().requires_grad_(), torch.tanh)
    torch.testing.assert_close(y0, y1.detach(), atol=0, rtol=0)


# ---- eigh's policy at exact degeneracies (spectra.core._pipeline._autograd) ----------------


def _spectral_loss_grad(a, **opts):
    from spectra.core._options import Options
    from spectra.core._pipeline._solve import solve_standard

    x = a.clone().requires_grad_()
    w, v = solve_standard(x, True, Options(**opts), gauge=True)
    (v @ torch.diag_embed(torch.exp(w)) @ v.mT).sum().backward()
    return x.grad


def test_eigh_warns_where_matrix_function_is_exact():
    from spectra.core._pipeline._autograd import DegenerateGradientWarning

    a = torch.eye(3, dtype=torch.float64)
    with pytest.warns(DegenerateGradientWarning, match="spectra.matrix_function"):
        g = _spectral_loss_grad(a)
    torch.testing.assert_close(g, np.e * torch.eye(3, dtype=torch.float64))  # masked: e*I
    x = a.clone().requires_grad_()
    spectra.matrix_function(x, torch.exp).sum().backward()
    torch.testing.assert_close(x.grad, torch.full((3, 3), np.e, dtype=torch.float64))


def test_eigh_degenerate_nan_policy_marks_only_the_affected_matrices():
    a = torch.stack([torch.eye(3), torch.diag(torch.tensor([1.0, 2.0, 3.0]))]).double()
    g = _spectral_loss_grad(a, degenerate="nan")
    assert bool(torch.isnan(g[0]).all()) and bool(torch.isfinite(g[1]).all())
    ref = torch.linalg.matrix_exp  # separated member: exact, equal to matrix_exp's gradient
    x = a[1].clone().requires_grad_()
    ref(x).sum().backward()
    torch.testing.assert_close(g[1], x.grad)


def test_eigh_ignore_policy_is_silent(recwarn):
    _spectral_loss_grad(torch.eye(3, dtype=torch.float64), degenerate="ignore")
    assert not [w for w in recwarn if "degenerate" in str(w.message)]


def test_gauge_dependent_loss_warns():
    from spectra.core._pipeline._autograd import DegenerateGradientWarning

    x = torch.eye(3, dtype=torch.float64, requires_grad=True)
    _, v = spectra.eigh(x)
    with pytest.warns(DegenerateGradientWarning):
        (v * torch.arange(9.0).reshape(3, 3)).sum().backward()  # depends on the basis chosen


@pytest.mark.parametrize("loss", ["eigenvalues", "projector", "simple-vectors"])
def test_losses_masking_gets_right_do_not_warn(loss, recwarn):
    a = with_spectrum(torch.tensor([[1.0, 1.0, 2.0, 3.0]], dtype=torch.float64), torch.float64, 3)
    x = a.clone().requires_grad_()
    w, v = spectra.eigh(x)
    if loss == "eigenvalues":
        value = (w**2).sum()
    elif loss == "projector":
        value = ((v[..., :2] @ v[..., :2].mT) * torch.arange(16.0).reshape(4, 4)).sum()
    else:
        value = (v[..., 2:] ** 2 * torch.arange(4.0).unsqueeze(-1)).sum()
    value.backward()
    assert torch.isfinite(x.grad).all()
    assert not [w for w in recwarn if "degenerate" in str(w.message)]


def test_phase_dependent_complex_loss_warns_and_phase_invariant_does_not(recwarn):
    from spectra.core._pipeline._autograd import DegenerateGradientWarning

    a = random_hermitian((2,), 4, torch.complex128, seed=13)
    x = a.clone().requires_grad_()
    _, v = spectra.eigh(x)
    (v.abs() ** 2 * torch.arange(4.0)).sum().backward()  # invariant under v -> v e^{i phi}
    assert not [w for w in recwarn if "differentiate" in str(w.message)]
    x = a.clone().requires_grad_()
    _, v = spectra.eigh(x)
    with pytest.warns(DegenerateGradientWarning, match="phase"):
        v[..., 1:, :].real.sum().backward()  # depends on the phase (torch raises here)
