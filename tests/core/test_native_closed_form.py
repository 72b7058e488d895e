"""The compiled closed form of real n <= 3 (``spectra/core/_solvers/_native_closed_form.c``):
bitwise numba's lane kernels (``_numba_closed_form``: one matrix and a batch give the same
bits), accurate against SciPy, planned from one matrix (``spectra.plan`` says so), and the
same contract on every route (the direct path, the C++ entry, the tracked route, the
planned pipeline)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra
from spectra.core._pipeline import _direct
from spectra.core._solvers import _native
from spectra.core._solvers._kernels import numba_available
from spectra.core._strategies import _kernels

from .helpers import assert_refusals, planned, tracked_grads

MODULE = _native.native_module()
needs_native = pytest.mark.skipif(MODULE is None, reason="the compiled helper is not built")
needs_numba = pytest.mark.skipif(not numba_available(), reason="numba is not installed")
REAL = [torch.float32, torch.float64]


def _batch(n: int, dtype: torch.dtype, seed: int, b: int = 3000) -> torch.Tensor:
    """Random symmetric matrices and the closed form's hard cases: exact ties (integer
    diagonals, all-ones, zero), rank one, tiny (near subnormal) and huge scales, clustered
    and graded spectra, one exactly flat matrix."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, n, n, generator=g, dtype=torch.float64)
    x = x + x.mT
    tiny, huge = (1e-300, 1e300) if dtype == torch.float64 else (1e-38, 1e36)
    part = b // 10
    x[:part] = torch.diag_embed(torch.randint(-2, 3, (part, n), generator=g).double())
    x[part : 2 * part] *= tiny
    x[2 * part : 3 * part] *= huge / 4
    x[3 * part : 4 * part] = torch.ones(n, n, dtype=torch.float64)
    u = torch.randn(part, n, 1, generator=g, dtype=torch.float64)
    x[4 * part : 5 * part] = u @ u.mT  # rank one: a double zero eigenvalue
    q, _ = torch.linalg.qr(torch.randn(part, n, n, generator=g, dtype=torch.float64))
    spread = 1 + 1e-9 * torch.arange(n, dtype=torch.float64)
    x[5 * part : 6 * part] = q @ torch.diag_embed(spread.expand(part, n)) @ q.mT
    graded = torch.logspace(-12, 12, n, dtype=torch.float64)
    x[6 * part : 7 * part] = q @ torch.diag_embed(graded.expand(part, n)) @ q.mT
    x = (x + x.mT) / 2
    x[7 * part] = 0.0
    x[7 * part + 1] = 7.0 * torch.eye(n, dtype=torch.float64)
    return x.to(dtype)


def _compiled(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    b, n = x.shape[0], x.shape[-1]
    w = torch.empty(b, n, dtype=x.dtype)
    v = torch.empty_strided((b, n, n), (n * n, 1, n), dtype=x.dtype)
    assert _native.native_closed_form_into(x, w, v)
    return w, v


def _numba(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    from spectra.core._solvers._kernels import _numba_closed_form as ncf
    from spectra.core._solvers._kernels._numba_gauge import gauge_constants

    b, n = x.shape[0], x.shape[-1]
    wn = np.empty((b, n), dtype=x.numpy().dtype)
    vt = np.empty((b, n, n), dtype=wn.dtype)
    kernel = ncf.sym3 if n == 3 else ncf.sym2
    kernel(x.numpy(), wn, vt, gauge_constants(x.dtype))
    return torch.from_numpy(wn), torch.from_numpy(vt).mT


@needs_native
@needs_numba
@pytest.mark.parametrize("dtype", REAL, ids=str)
@pytest.mark.parametrize("n", [2, 3])
def test_bitwise_numba_lanes(dtype: torch.dtype, n: int) -> None:
    x = _batch(n, dtype, 10 + n)
    w, v = _compiled(x)
    nw, nv = _numba(x)
    same_w = w == nw
    same_v = (v == nv).flatten(1).all(1)
    assert bool(same_w.all()), torch.nonzero(~same_w.all(1))[:5].tolist()
    assert bool(same_v.all()), torch.nonzero(~same_v)[:5].tolist()
    # the signs of zeros too (a flipped column is negated entry by entry)
    assert torch.equal(torch.signbit(v), torch.signbit(nv))


@needs_native
@pytest.mark.parametrize("dtype", REAL, ids=str)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_against_scipy(dtype: torch.dtype, n: int) -> None:
    """Independent reference: SciPy's eigenvalues (relative to the matrix norm, per
    dtype), orthonormal eigenvectors with small residuals, the gauge's sign."""
    x = _batch(n, dtype, 20 + n, b=600)
    w, v = _compiled(x)
    eps = float(torch.finfo(dtype).eps)
    for k in range(x.shape[0]):
        a = x[k].double().numpy()
        ref = scipy.linalg.eigh(a, eigvals_only=True)
        scale = max(float(np.abs(a).max()), np.finfo(float).tiny)
        assert np.abs(w[k].double().numpy() - ref).max() <= 20 * eps * scale, k
        vk = v[k].double()
        assert torch.allclose(vk.mT @ vk, torch.eye(n, dtype=torch.float64), atol=20 * eps), k
        residual = torch.from_numpy(a) @ vk - vk * w[k].double()
        assert float(residual.abs().max()) <= 40 * eps * scale, k
        peak = vk.abs().argmax(0)
        assert bool((vk[peak, torch.arange(n)] > 0).all()), k


@needs_native
def test_planned_from_one_matrix() -> None:
    """n <= 3, real or complex, are planned on the compiled closed form from one matrix,
    and that plan is the direct path; n = 4 stays on LAPACK below a lane group."""
    for n in (1, 2, 3):
        for dtype in (*REAL, torch.complex64, torch.complex128):
            p = spectra.plan(n, 1, dtype)
            assert p.strategy == "closed-form" and p.direct, (n, dtype)
            assert any("compiled closed form" in r for r in p.reasons)
    assert spectra.plan(3, 10, torch.float64).direct
    assert spectra.plan(3, 100_000, torch.complex128).strategy == "closed-form"
    assert spectra.plan(4, 1, torch.complex128).strategy == "torch"
    assert spectra.plan(4, 1, torch.float64).strategy == "torch"
    assert spectra.plan(3, 100_000, torch.float64).strategy == "closed-form"


@needs_native
@pytest.mark.parametrize("dtype", REAL, ids=str)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_one_matrix_a_handful_and_a_batch_agree(dtype: torch.dtype, n: int) -> None:
    """One matrix (the C++ entry or the compiled call), a handful (the compiled batch), a
    batch through the pipeline (numba's lanes or the compiled helper) and the pipeline
    forced (``helpers.planned``): the same bits for the same matrix."""
    x = _batch(n, dtype, 30 + n, b=200)
    big_w, big_v = spectra.eigh(x)
    few_w, few_v = spectra.eigh(x[:7])
    piped_w, piped_v = planned(spectra.eigh, x[:7])
    assert torch.equal(few_w, big_w[:7]) and torch.equal(few_v, big_v[:7])
    assert torch.equal(piped_w, few_w) and torch.equal(piped_v, few_v)
    for k in (0, 1, 25, 61, 95, 140, 141, 199):
        w, v = spectra.eigh(x[k])
        assert torch.equal(w, big_w[k]) and torch.equal(v, big_v[k]), k
        assert torch.equal(spectra.eigvalsh(x[k]), big_w[k]), k
        assert v.stride() == (1, n)


@needs_native
def test_refusals_name_the_problem() -> None:
    """NaN, Inf and asymmetric input: the compiled route refuses, the full path names it."""
    a = torch.tensor([[1.0, 2.0], [2.0, 5.0]], dtype=torch.float64)
    assert_refusals(a)
    nan = a.clone()
    nan[0, 1] = nan[1, 0] = float("nan")
    with pytest.raises(ValueError, match=r"\[1\]"):  # the batch index
        spectra.eigh(torch.stack([a, nan, a]))
    overflow = torch.full((2, 2), 1e308, dtype=torch.float64)  # eigenvalue 2e308: Inf,
    w, _ = spectra.eigh(overflow)  # as LAPACK's (torch's) answer, not an error
    assert w.tolist() == [0.0, float("inf")]


@needs_native
def test_tracked_gradient_is_the_pipelines() -> None:
    """A tracked 3x3: the compiled forward under the light node, the gradient of the
    planned pipeline's (same forward, same rule) and, to rounding, torch's."""
    g = torch.Generator().manual_seed(5)
    base = torch.randn(3, 3, generator=g, dtype=torch.float64)
    base = base + base.mT

    weights = torch.arange(9.0, dtype=base.dtype).reshape(3, 3)

    def grad(fn):  # type: ignore[no-untyped-def]
        return tracked_grads(base, fn, lambda w, v: w.sum() + (v * weights).sum())

    one = grad(spectra.eigh)
    piped = grad(lambda a: spectra.eigh(a, workers=1))  # (tracked: the pipeline)
    for x, y in zip(one, piped, strict=True):
        assert torch.equal(x, y)
    _, tv = torch.linalg.eigh(base)
    sign = torch.sign(tv[tv.abs().argmax(0), torch.arange(3)])
    ref = grad(lambda a: (lambda w, v: (w, v * sign))(*torch.linalg.eigh(a)))
    assert torch.allclose(one[0], ref[0], rtol=1e-13, atol=1e-13)
    assert torch.allclose(one[1], ref[1], atol=1e-12)
    assert torch.allclose(one[2], ref[2], atol=1e-10)


@needs_native
def test_lapack_mode_plans_lapack(monkeypatch: pytest.MonkeyPatch) -> None:
    """``SPECTRA_KERNELS=lapack``: no kernel, the closed form included: one real 2x2 is
    LAPACK's (torch's bits, gauged), on every route."""
    a = torch.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=torch.float64)
    monkeypatch.setenv("SPECTRA_KERNELS", "lapack")
    _kernels._replan()
    try:
        assert spectra.plan(2, 1, torch.float64).strategy == "torch"
        assert not _direct._closed_direct(spectra.core._strategies.registry_version())
        w, v = spectra.eigh(a)
        tw, tv = torch.linalg.eigh(a)
        assert torch.equal(w, tw)
        assert torch.equal(v.abs(), tv.abs())
        assert torch.equal(spectra.eigh(torch.stack([a, a]))[0][1], tw)
    finally:
        monkeypatch.delenv("SPECTRA_KERNELS")
        _kernels._replan()
    assert spectra.plan(2, 1, torch.float64).strategy == "closed-form"


def _cases() -> Iterator[torch.Tensor]:
    yield torch.zeros(3, 3, dtype=torch.float64)
    yield torch.eye(2, dtype=torch.float32)
    yield torch.tensor([[5e-324, 0.0], [0.0, -5e-324]], dtype=torch.float64)  # subnormal
    yield torch.tensor([[1.0, 1e-170], [1e-170, 1.0]], dtype=torch.float64)


@needs_native
def test_edge_matrices_against_scipy() -> None:
    for a in _cases():
        w, v = spectra.eigh(a)
        ref = scipy.linalg.eigh(a.double().numpy(), eigvals_only=True)
        assert np.array_equal(w.double().numpy(), ref) or np.allclose(
            w.double().numpy(), ref, rtol=1e-15, atol=0
        )
        n = a.shape[0]
        assert torch.allclose(v.mT @ v, torch.eye(n, dtype=a.dtype))
