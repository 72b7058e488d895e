"""CUDA paths (skipped without a GPU; the same code paths run on CPU in the other files)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import spectra

from .helpers import DTYPES, random_hermitian, tol

pytestmark = pytest.mark.cuda


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,batch", [(8, 4096), (33, 512), (64, 1024), (128, 64)])
def test_cuda_matches_scipy_and_cpu_gauge(dtype, n, batch):
    a = random_hermitian((batch,), n, dtype, seed=n)
    w, v = spectra.eigh(a.cuda())
    assert w.is_cuda and v.dtype == dtype
    ref = spectra.reference(a[:64])
    scale = float(np.abs(ref.eigenvalues).max())
    assert np.abs(w[:64].cpu().numpy() - ref.eigenvalues).max() <= tol(dtype) * scale
    assert spectra.validate(a, w.cpu(), v.cpu()).ok(10 * tol(dtype))
    _wc, vc = spectra.eigh(a)
    torch.testing.assert_close(v.cpu(), vc, atol=1e3 * tol(dtype), rtol=0)


def test_complex64_large_batch_is_orthonormal():
    # pytorch issue 192483: XsyevBatched returned non-orthonormal complex64 vectors
    a = random_hermitian((4096,), 48, torch.complex64, seed=1).cuda()
    for _ in range(3):
        _w, v = spectra.eigh(a)
        assert spectra.core.domain.orthonormality_error(v).max().item() < 1e-4


def test_cuda_chunked_ragged_generalized_and_grad():
    a = random_hermitian((300,), 20, torch.float64, seed=2).cuda()
    w0, v0 = spectra.eigh(a)
    w1, v1 = spectra.eigh(a, chunk_size=64)
    torch.testing.assert_close(w0, w1, atol=1e-12, rtol=0)
    torch.testing.assert_close(v0, v1, atol=1e-9, rtol=0)
    mats = [random_hermitian((), n, torch.float64, seed=n).cuda() for n in (3, 40, 17)]
    ws, _ = spectra.eigh(mats)
    for m, wi in zip(mats, ws, strict=True):
        np.testing.assert_allclose(
            wi.cpu().numpy(), spectra.reference(m).eigenvalues, atol=1e-10 * 40
        )
    b = torch.eye(20, dtype=torch.float64, device="cuda") * 3
    wg, _ = spectra.eigh(a, b)
    torch.testing.assert_close(wg, w0 / 3)
    x = a[:8].clone().requires_grad_()
    wv, _ = spectra.eigh(0.5 * (x + x.mT))
    (g,) = torch.autograd.grad(wv.sum(), x)
    torch.testing.assert_close(
        g, torch.eye(20, dtype=torch.float64, device="cuda").expand(8, 20, 20)
    )


def test_cuda_plan_verifies_and_reports():
    p = spectra.plan(64, 1024, torch.float32, "cuda")
    assert p.verify and p.device.type == "cuda"
    assert p.strategy in spectra.core.STRATEGIES
