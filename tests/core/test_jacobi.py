"""The batched Jacobi strategy against independent references (SciPy, known spectra)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra
import spectra.core._solvers._jacobi as jac
from spectra.core import STRATEGIES

REAL = {torch.complex64: torch.float32, torch.complex128: torch.float64}
ALL = (torch.float32, torch.float64, torch.complex64, torch.complex128)


def eps(dtype: torch.dtype) -> float:
    return torch.finfo(REAL.get(dtype, dtype)).eps


def tol(n: int, dtype: torch.dtype) -> float:
    return 10 * max(n, 4) * eps(dtype)


def hermitian(batch: int, n: int, dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    a = torch.randn(batch, n, n, dtype=dtype, generator=gen)
    return (a + a.mH) / 2


def with_spectrum(lam: torch.Tensor, dtype: torch.dtype, gen: torch.Generator):
    """``Q diag(lam) Q^H`` with a random unitary ``Q`` (returned too)."""
    b, n = lam.shape
    q, _ = torch.linalg.qr(
        torch.randn(
            b, n, n, dtype=torch.complex128 if dtype.is_complex else torch.float64, generator=gen
        )
    )
    a = q @ torch.diag_embed(lam.to(q.dtype)) @ q.mH
    return ((a + a.mH) / 2).to(dtype), q


def scipy_eigvals(a: torch.Tensor) -> np.ndarray:
    arr = a.detach().cpu().numpy().astype(np.complex128 if a.is_complex() else np.float64)
    return np.stack([scipy.linalg.eigh(x, eigvals_only=True) for x in arr]).reshape(a.shape[:-1])


def check_pairs(a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None) -> None:
    """Eigenvalues vs SciPy; residual ``||AV - VW||`` and ``||V^H V - I||`` (relative)."""
    n, dtype = a.shape[-1], a.dtype
    wide = a.to(torch.complex128 if a.is_complex() else torch.float64)
    norm = torch.linalg.matrix_norm(wide).clamp_min(torch.finfo(torch.float64).tiny)
    assert w.dtype == REAL.get(dtype, dtype) and w.shape == a.shape[:-1]
    assert bool((w[..., 1:] >= w[..., :-1]).all()), "eigenvalues not ascending"
    ref = torch.from_numpy(scipy_eigvals(a))
    err = ((w.double() - ref).abs().amax(-1) / norm).max()
    assert err <= tol(n, dtype), f"eigenvalue error {err:.2e}"
    if v is None:
        return
    assert v.dtype == dtype and v.shape == a.shape
    vw = v.to(wide.dtype)
    res = torch.linalg.matrix_norm(wide @ vw - vw * w.double().to(wide.dtype)[..., None, :])
    assert (res / norm).max() <= tol(n, dtype), f"residual {(res / norm).max():.2e}"
    orth = (vw.mH @ vw - torch.eye(n, dtype=wide.dtype)).abs().max()
    assert orth <= tol(n, dtype), f"orthogonality {orth:.2e}"


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(1234)


def test_registered():
    s = STRATEGIES["jacobi"]
    assert s.supports(torch.device("cpu"))
    assert s.solve is jac.solve


@pytest.mark.parametrize("m", [2, 4, 6, 8, 34, 64])
def test_round_robin_meets_every_pair_once(m):
    orders = jac.round_robin(m)
    assert orders[0] == list(range(m)) and len(orders) == m - 1
    perm = orders[1 % len(orders)]
    cur, pairs = list(range(m)), set()
    for order in orders:  # every step is the previous one permuted by the same perm
        assert cur == order
        pairs |= {tuple(sorted(order[2 * i : 2 * i + 2])) for i in range(m // 2)}
        cur = [cur[j] for j in perm]
    assert cur == list(range(m))  # back to the original basis after a sweep
    assert len(pairs) == m * (m - 1) // 2
    with pytest.raises(ValueError):
        jac.round_robin(m + 1)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 33])
def test_random(dtype, n, gen):
    a = hermitian(4, n, dtype, gen)
    w, v, converged, sweeps = jac.jacobi_eigh(a)
    assert bool(converged.all()) and sweeps <= jac.DEFAULT_MAX_SWEEPS
    check_pairs(a, w, v)
    w2, v2, _, _ = jac.jacobi_eigh(a, vectors=False)
    assert v2 is None
    torch.testing.assert_close(w2, w, rtol=0, atol=tol(n, dtype) * float(a.abs().max()))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex128])
def test_n64(dtype, gen):
    a = hermitian(2, 64, dtype, gen)
    w, v = jac.solve(a, True, 1)
    check_pairs(a, w, v)


@pytest.mark.parametrize("dtype", ALL)
def test_degenerate_invariant_subspaces(dtype, gen):
    """Multiple eigenvalues: the eigenspace (its projector) is what is defined."""
    n = 12
    groups = [(0, 4), (4, 5), (5, 9), (9, 12)]  # multiplicities 4, 1, 4, 3
    values = [-2.0, -0.5, 1.0, 3.0]
    lam = torch.empty(3, n, dtype=torch.float64)
    for (s, e), x in zip(groups, values, strict=False):
        lam[:, s:e] = x
    a, q = with_spectrum(lam, dtype, gen)
    w, v, converged, _ = jac.jacobi_eigh(a)
    assert bool(converged.all())
    check_pairs(a, w, v)
    for (s, e), x in zip(groups, values, strict=False):
        assert torch.allclose(
            w[:, s:e].double(),
            torch.full((3, e - s), x, dtype=torch.float64),
            atol=tol(n, dtype) * 10,
        )
        pv = v[..., s:e].to(q.dtype) @ v[..., s:e].to(q.dtype).mH
        pq = q[..., s:e] @ q[..., s:e].mH
        assert (pv - pq).abs().max() <= 100 * tol(n, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex128])
def test_hard_spectra(dtype, gen):
    """Clustered, exactly degenerate with a large multiplicity, graded, rank one."""
    n = 24
    lam = torch.randn(4, n, dtype=torch.float64, generator=gen)
    lam[0] = 1 + 1e-9 * torch.arange(n)  # tight cluster
    lam[1, : n // 2] = 1.0  # half the spectrum one eigenvalue
    lam[2] = 10.0 ** (-torch.arange(n) * (12 / n))  # graded over 12 decades
    lam[3] = 0.0
    lam[3, 0] = 5.0  # rank one
    a, _ = with_spectrum(lam, dtype, gen)
    w, v = jac.solve(a, True, 1)
    check_pairs(a, w, v)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
def test_special_matrices(dtype, gen):
    n = 7
    a = torch.zeros(6, n, n, dtype=dtype)
    a[1] = torch.eye(n, dtype=dtype)
    a[2] = torch.diag(torch.randn(n, generator=gen).to(dtype))  # diagonal: nothing to do
    a[3, 0, :] = 1
    a[3, :, 0] = 1  # arrowhead
    a[4] = torch.diag_embed(torch.ones(n - 1), 1).to(dtype)
    a[4] = a[4] + a[4].mH  # tridiagonal
    a[5] = hermitian(1, n, dtype, gen)[0]
    w, v, converged, _ = jac.jacobi_eigh(a)
    assert bool(converged.all())
    check_pairs(a, w, v)
    assert bool((w[0] == 0).all()) and torch.equal(v[0], torch.eye(n, dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_extreme_scales(dtype, gen):
    """Entries near overflow/underflow: scaling by a power of two keeps norms finite."""
    big = 1e36 if dtype == torch.float32 else 1e300
    small = 1e-36 if dtype == torch.float32 else 1e-200
    a = hermitian(4, 9, torch.float64, gen)
    a = a * torch.tensor([big, small, 1.0, 1e3], dtype=torch.float64)[:, None, None]
    a = a.to(dtype)
    w, v, converged, _ = jac.jacobi_eigh(a)
    assert bool(converged.all()) and bool(torch.isfinite(w).all())
    ref = scipy_eigvals(a)
    for i in range(4):  # per matrix, relative to its own scale
        scale = float(np.abs(ref[i]).max())
        assert np.abs(w[i].double().numpy() - ref[i]).max() <= tol(9, dtype) * scale
    orth = (v.mH @ v - torch.eye(9, dtype=dtype)).abs().max()
    assert orth <= tol(9, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
def test_near_overflow(dtype):
    """``a + a^H`` would overflow; the eigenvalues (+-big) do not."""
    big = torch.finfo(REAL.get(dtype, dtype)).max * 0.75
    a = torch.zeros(1, 3, 3, dtype=dtype)
    a[0, 0, 2] = a[0, 2, 0] = big
    w, v, converged, _ = jac.jacobi_eigh(a)
    assert bool(converged.all())
    torch.testing.assert_close(
        w[0].double(), torch.tensor([-big, 0.0, big], dtype=torch.float64), rtol=1e-6, atol=0
    )
    expect = torch.tensor([[1.0, 0, 1], [0, 2**0.5, 0], [-1, 0, 1]]).to(dtype) / 2**0.5
    torch.testing.assert_close(v[0].abs(), expect.abs(), atol=1e-6, rtol=0)


def test_mixed_batch_keeps_order(gen):
    """Matrices converging at different sweeps leave the active batch; order is kept."""
    n = 10
    a = hermitian(7, n, torch.float64, gen)
    a[1] = torch.diag(torch.arange(n, dtype=torch.float64))  # converged before sweep 1
    a[4] = torch.zeros(n, n, dtype=torch.float64)
    lam = torch.linspace(0, 1, n, dtype=torch.float64)[None]
    a[5] = with_spectrum(lam, torch.float64, gen)[0][0]
    w, v, converged, _ = jac.jacobi_eigh(a)
    assert bool(converged.all())
    check_pairs(a, w, v)
    torch.testing.assert_close(w[1], torch.arange(n, dtype=torch.float64))
    torch.testing.assert_close(w[5], lam[0], atol=1e-13, rtol=0)


def test_not_converged_is_flagged_and_solve_falls_back(gen):
    a = hermitian(3, 16, torch.float64, gen)
    a[1] = torch.diag(torch.arange(16.0, dtype=torch.float64))
    res = jac.jacobi_eigh(a, max_sweeps=1)
    assert res.converged.tolist() == [False, True, False] and res.sweeps == 1
    w, v = jac.solve(a, True, 1, max_sweeps=1)  # recomputed by torch.linalg.eigh
    check_pairs(a, w, v)
    w2, v2 = jac.solve(a, False, 1, max_sweeps=0)
    assert v2 is None
    check_pairs(a, w2, None)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_solve_workers(workers, gen):
    """On the CPU the batch is split across workers (one intra-op thread each)."""
    a = hermitian(5, 9, torch.complex128, gen)
    threads = torch.get_num_threads()
    w, v = jac.solve(a, True, workers)
    assert torch.get_num_threads() == threads  # restored
    check_pairs(a, w, v)
    w1, _ = jac.solve(a, False, 1)
    torch.testing.assert_close(w1, w, atol=1e-13, rtol=0)


def test_nan_does_not_hang():
    a = torch.eye(5, dtype=torch.float64).repeat(2, 1, 1)
    a[0, 1, 2] = a[0, 2, 1] = float("nan")
    res = jac.jacobi_eigh(a, max_sweeps=3)
    assert res.converged.tolist() == [False, True]


def test_reads_the_lower_triangle(gen):
    a = torch.randn(3, 6, 6, dtype=torch.complex128, generator=gen)
    w, v, _, _ = jac.jacobi_eigh(a)
    low = torch.tril(a, -1)
    h = low + low.mH + torch.diag_embed(torch.diagonal(a, dim1=-2, dim2=-1).real.to(a.dtype))
    check_pairs(h, w, v)  # as LAPACK's uplo='L' (and every other strategy)


@pytest.mark.parametrize("n", [0, 4])
def test_empty(n):
    w, v, converged, sweeps = jac.jacobi_eigh(torch.zeros(0, n, n, dtype=torch.complex64))
    assert w.shape == (0, n) and w.dtype == torch.float32 and v.shape == (0, n, n)
    assert converged.shape == (0,) and sweeps == 0
    w, v, converged, _ = jac.jacobi_eigh(torch.zeros(2, 0, 0), vectors=False)
    assert w.shape == (2, 0) and v is None and bool(converged.all())


def test_bad_input():
    with pytest.raises(ValueError, match="batch"):
        jac.jacobi_eigh(torch.zeros(3, 3))
    with pytest.raises(ValueError, match="batch"):
        jac.jacobi_eigh(torch.zeros(1, 3, 4))
    with pytest.raises(TypeError, match="floating"):
        jac.jacobi_eigh(torch.zeros(1, 3, 3, dtype=torch.int64))


def test_ignores_autograd(gen):
    a = hermitian(2, 5, torch.float64, gen).requires_grad_()
    w, v, _, _ = jac.jacobi_eigh(a)
    assert not w.requires_grad and not v.requires_grad


# --- through the public API ------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
def test_public_eigh_matches_torch_strategy(dtype, gen):
    a = hermitian(6, 9, dtype, gen).reshape(2, 3, 9, 9)
    w, v = spectra.eigh(a, strategy="jacobi")
    wt, vt = spectra.eigh(a, strategy="torch")
    assert w.shape == (2, 3, 9) and v.shape == (2, 3, 9, 9)
    check_pairs(a.reshape(6, 9, 9), w.reshape(6, 9), v.reshape(6, 9, 9))
    # random spectra are simple: with the core's gauge the vectors agree, not only up to sign
    scale = 100 * tol(9, dtype)
    torch.testing.assert_close(w, wt, atol=scale * float(a.abs().max()), rtol=0)
    torch.testing.assert_close(v, vt, atol=scale * 100, rtol=0)
    # gauge: largest-|entry| of each column real positive
    big = v.abs().argmax(-2, keepdim=True)
    lead = v.gather(-2, big)
    assert (
        bool((lead.real > 0).all()) and float(lead.imag.abs().max()) <= eps(dtype) * 10
        if dtype.is_complex
        else bool((lead > 0).all())
    )


def test_public_api_variants(gen):
    a = hermitian(5, 33, torch.float64, gen)
    ref = scipy_eigvals(a)
    w = spectra.eigvalsh(a.numpy(), strategy="jacobi")  # NumPy in, NumPy out
    assert isinstance(w, np.ndarray)
    np.testing.assert_allclose(w, ref, atol=1e-11 * np.abs(ref).max(), rtol=0)
    wk, vk = spectra.eigh(a, k=3, largest=True, strategy="jacobi", chunk_size=2)
    np.testing.assert_allclose(wk.numpy(), ref[:, -3:], atol=1e-11 * np.abs(ref).max(), rtol=0)
    assert vk.shape == (5, 33, 3)
    p = spectra.core.plan(33, 5, torch.float64, "cpu", strategy="jacobi")
    assert p.strategy == "jacobi" and "Jacobi" in str(p)


def test_public_gradient_matches_torch(gen):
    a = hermitian(3, 6, torch.float64, gen)
    x = a.clone().requires_grad_()
    y = a.clone().requires_grad_()
    w, v = spectra.eigh(x, strategy="jacobi")
    wt, vt = spectra.eigh(y, strategy="torch")
    ((w * torch.arange(6.0)).sum() + (v[..., 0] ** 2 * torch.arange(6.0)).sum()).backward()
    ((wt * torch.arange(6.0)).sum() + (vt[..., 0] ** 2 * torch.arange(6.0)).sum()).backward()
    torch.testing.assert_close(x.grad, y.grad, atol=1e-9, rtol=0)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("dtype", ALL)
def test_cuda_matches_cpu(dtype, gen):
    a = hermitian(8, 40, dtype, gen)
    w, v, converged, _ = jac.jacobi_eigh(a.cuda())
    assert w.device.type == "cuda" and bool(converged.all())
    check_pairs(a, w.cpu(), v.cpu())
    w2, v2 = spectra.eigh(a.cuda(), strategy="jacobi")
    check_pairs(a, w2.cpu(), v2.cpu())
