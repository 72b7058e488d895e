"""The compiled closed form of complex Hermitian n <= 3 (``complex_small`` in
``spectra/core/_solvers/_native_closed_form.c``: made real by a phase (n = 2) or a complex
rotation and a phase (n = 3), then the real closed form): accurate against SciPy on random
and adversarial matrices, in the core's gauge, planned from one matrix at every batch size
(one implementation: one matrix, a handful and a batch give the same bits), the same
errors and autograd as every route."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra
from spectra.core._pipeline._gauge import gauge_phase
from spectra.core._solvers import _native

from .helpers import assert_refusals, planned, tracked_grads

MODULE = _native.native_module()
needs_native = pytest.mark.skipif(MODULE is None, reason="the compiled helper is not built")
COMPLEX = [torch.complex64, torch.complex128]


def _hermitian(x: torch.Tensor) -> torch.Tensor:
    return (x + x.mH) / 2


def _batch(n: int, dtype: torch.dtype, seed: int, b: int = 1200) -> torch.Tensor:
    """Random Hermitian matrices and the reduction's hard cases: real diagonal ties
    (``rho = 0``, nothing to rotate), ``a20 = a21 = 0`` and ``a10 = a20 = 0`` (one block
    already split), a rotated coupling that vanishes (``beta = 0``: ``D R D^H`` with
    ``R`` having ``o12 = 0``), purely imaginary couplings, a diagonal phase similarity of
    a real Laplacian, rank one ``u u^H``, tiny (near subnormal) and huge scales,
    clustered and graded spectra, zero and a multiple of the identity."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, n, n, generator=g, dtype=torch.complex128)
    x = _hermitian(x)
    real = torch.float64
    tiny, huge = (1e-300, 1e300) if dtype == torch.complex128 else (1e-36, 1e36)
    part = b // 12
    x[:part] = torch.diag_embed(torch.randint(-2, 3, (part, n), generator=g).to(real)).to(x.dtype)
    if n == 3:
        x[part : 2 * part, 2, :2] = 0  # a20 = a21 = 0
        x[part : 2 * part, :2, 2] = 0
        x[2 * part : 3 * part, 1:, 0] = 0  # a10 = a20 = 0
        x[2 * part : 3 * part, 0, 1:] = 0
    x[3 * part : 4 * part] *= tiny
    x[4 * part : 5 * part] *= huge / 4
    phase = torch.exp(1j * torch.rand(part, n, generator=g, dtype=real) * 6.3)
    lap = torch.diag_embed(torch.full((n,), 2.0, dtype=real)) - torch.ones(n, n, dtype=real)
    d = torch.diag_embed(phase)
    x[5 * part : 6 * part] = d @ lap.to(d.dtype) @ d.mH
    u = torch.randn(part, n, 1, generator=g, dtype=torch.complex128)
    x[6 * part : 7 * part] = u @ u.mH  # rank one: a (double) zero eigenvalue
    q, _ = torch.linalg.qr(torch.randn(part, n, n, generator=g, dtype=torch.complex128))
    spread = (1 + 1e-9 * torch.arange(n, dtype=real)).to(q.dtype)
    x[7 * part : 8 * part] = q @ torch.diag_embed(spread.expand(part, n)) @ q.mH
    graded = torch.logspace(-12, 12, n, dtype=real).to(q.dtype)
    x[8 * part : 9 * part] = q @ torch.diag_embed(graded.expand(part, n)) @ q.mH
    imag = 1j * torch.randn(part, n, n, generator=g, dtype=real)
    x[9 * part : 10 * part] = _hermitian(imag + torch.diag_embed(torch.ones(part, n)))
    if n == 3:
        # beta = 0: the rotated coupling of rows 1, 2 vanishes (a real tridiagonal with
        # o12 = 0, conjugated by a diagonal phase, then rotated in rows/columns 1, 2)
        r = torch.zeros(part, 3, 3, dtype=real)
        r[:, 0, 0], r[:, 1, 1], r[:, 2, 2] = 1.0, 2.0, 3.0
        r[:, 0, 1] = r[:, 1, 0] = 0.5
        c, s = np.cos(0.3), np.sin(0.3)
        rot = torch.eye(3, dtype=torch.complex128).repeat(part, 1, 1)
        rot[:, 1, 1], rot[:, 1, 2], rot[:, 2, 1], rot[:, 2, 2] = c, -s * 1j, -s * 1j, c
        x[10 * part : 11 * part] = rot @ r.to(rot.dtype) @ rot.mH
    x = _hermitian(x)
    x[11 * part] = 0.0
    x[11 * part + 1] = 7.0 * torch.eye(n, dtype=x.dtype)
    return x.to(dtype)


def _compiled(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    b, n = x.shape[0], x.shape[-1]
    w = torch.empty(b, n, dtype=x.real.dtype)
    v = torch.empty_strided((b, n, n), (n * n, 1, n), dtype=x.dtype)
    assert _native.native_closed_form_into(x, w, v)
    return w, v


@needs_native
@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_against_scipy(dtype: torch.dtype, n: int) -> None:
    """Independent reference: SciPy's eigenvalues (relative to the matrix's largest entry,
    per dtype), orthonormal eigenvectors with small residuals, and the gauge."""
    x = _batch(n, dtype, 40 + n)
    w, v = _compiled(x)
    eps = float(torch.finfo(x.real.dtype).eps)
    eye = torch.eye(n, dtype=torch.complex128)
    for k in range(x.shape[0]):
        a = x[k].to(torch.complex128).numpy()
        ref = scipy.linalg.eigh(a, eigvals_only=True)
        scale = max(float(np.abs(a).max()), np.finfo(float).tiny)
        assert np.abs(w[k].double().numpy() - ref).max() <= 20 * eps * scale, k
        vk = v[k].to(torch.complex128)
        assert float((vk.mH @ vk - eye).abs().max()) <= 20 * eps, k
        residual = torch.from_numpy(a) @ vk - vk * w[k].double()
        assert float(residual.abs().max()) <= 40 * eps * scale, k
    # the gauge: the core's own rule (the first entry within its tolerance of each
    # column's largest modulus made real and positive) finds nothing left to turn
    factor = gauge_phase(v)  # in its own dtype: its tolerance decides near-ties
    assert float((factor - 1).abs().max()) <= 8 * eps


@needs_native
@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_one_matrix_a_handful_and_a_batch_agree(dtype: torch.dtype, n: int) -> None:
    """One matrix (the C++ entry or the compiled call), a handful (the compiled batch), a
    batch through the pipeline and the pipeline forced (``helpers.planned``): the plan is the
    compiled closed form at each size, and the bits are the same."""
    x = _batch(n, dtype, 60 + n, b=240)
    for batch in (1, 7, 240, 100_000):
        plan = spectra.plan(n, batch, dtype)
        assert plan.strategy == "closed-form", (batch, str(plan))
        assert any("compiled closed form" in r for r in plan.reasons), str(plan)
    assert spectra.plan(n, 1, dtype).direct
    big_w, big_v = spectra.eigh(x)
    few_w, few_v = spectra.eigh(x[:7])
    piped_w, piped_v = planned(spectra.eigh, x[:7])
    cw, cv = _compiled(x)
    assert torch.equal(big_w, cw) and torch.equal(big_v, cv)
    assert torch.equal(few_w, big_w[:7]) and torch.equal(few_v, big_v[:7])
    assert torch.equal(piped_w, few_w) and torch.equal(piped_v, few_v)
    for k in (0, 1, 25, 61, 95, 140, 141, 199, 239):
        w, v = spectra.eigh(x[k])
        assert torch.equal(w, big_w[k]) and torch.equal(v, big_v[k]), k
        assert torch.equal(spectra.eigvalsh(x[k]), big_w[k]), k
        assert v.stride() == (1, n)
        assert w.dtype == x.real.dtype and v.dtype == dtype


@needs_native
def test_numpy_and_views_take_the_same_answer() -> None:
    """A NumPy array, a conjugate view and a transposed copy of the same matrix."""
    a = _batch(3, torch.complex128, 7, b=24)[13]
    w, v = spectra.eigh(a)
    wn, vn = spectra.eigh(a.numpy())
    assert np.array_equal(wn, w.numpy()) and np.array_equal(vn, v.numpy())
    wc, vc = spectra.eigh(a.mT.conj())  # the same matrix, a lazy-conjugate view
    assert torch.equal(wc, w) and torch.equal(vc, v)


@needs_native
def test_refusals_name_the_problem() -> None:
    """Not Hermitian (a complex diagonal, an unmatched coupling), NaN and Inf: the
    compiled route refuses, the full path names the problem and the batch index."""
    a = torch.tensor([[2.0, 1 - 1j, 0.5j], [1 + 1j, 3.0, 0.0], [-0.5j, 0.0, 1.0]])
    a = a.to(torch.complex128)
    assert torch.equal(a, a.mH)
    bad_diag = a.clone()
    bad_diag[1, 1] = 3.0 + 1e-3j
    with pytest.raises(ValueError, match=r"(?i)hermitian"):
        spectra.eigh(bad_diag)
    assert_refusals(a)  # a NaN pair, an Inf on the diagonal, an unmatched coupling
    nan = a.clone()
    nan[0, 2] = nan[2, 0] = complex("nan")
    with pytest.raises(ValueError, match=r"\[1\]"):  # the batch index
        spectra.eigh(torch.stack([a, nan, a]))


@needs_native
@pytest.mark.parametrize("n", [2, 3])
def test_tracked_gradient_is_the_pipelines_and_torchs(n: int) -> None:
    """A tracked complex matrix: the compiled forward under the light node, the gradient
    bitwise the planned pipeline's and, for a phase-invariant loss, torch's to rounding."""
    g = torch.Generator().manual_seed(11)
    base = _hermitian(torch.randn(n, n, generator=g, dtype=torch.complex128))
    weights = torch.arange(n * n, dtype=torch.float64).reshape(n, n)

    def grad(fn):  # type: ignore[no-untyped-def]
        return tracked_grads(base, fn, lambda w, v: w.sum() + (v.abs() ** 2 * weights).sum())

    one = grad(spectra.eigh)
    piped = grad(lambda a: spectra.eigh(a, workers=1))  # (tracked: the pipeline)
    for x, y in zip(one, piped, strict=True):
        assert torch.equal(x, y)
    ref = grad(torch.linalg.eigh)
    assert torch.allclose(one[0], ref[0], rtol=1e-13, atol=1e-13)
    assert torch.allclose(one[1].abs(), ref[1].abs(), atol=1e-12)
    assert torch.allclose(one[2], ref[2], atol=1e-10)
