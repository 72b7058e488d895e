"""The small-matrix kernels (closed forms, numba Jacobi and QL) against SciPy.

Accuracy is measured as in LAPACK's tests: relative residual ``||AV - VW|| / ||A||`` and
``||V^H V - I||`` within ``30 n eps``, eigenvalues within ``30 n eps ||A||`` of SciPy, on
adversarial spectra, in both precisions. The registry-wide tests
(``test_strategies.py``, ``test_trust_inputs.py``) also run every kernel strategy.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra
from spectra.core import STRATEGIES
from spectra.core._solvers import _native
from spectra.core._solvers._kernels import _closed_form
from spectra.core.domain import default_tolerance

from .helpers import batch_that_fans_out, random_hermitian, served_size, with_spectrum

REAL = {torch.complex64: torch.float32, torch.complex128: torch.float64}
KERNELS = {  # strategy -> sizes it solves itself (other sizes go to torch.linalg.eigh)
    "closed-form": (1, 2, 3),
    "numba-jacobi": (1, 2, 4, 5, 8, 13, 16),
    "numba-ql": (1, 2, 3, 4, 7, 12, 16, 25, 32),
}
CASES = [(s, n) for s, sizes in KERNELS.items() for n in sizes]


def eps(dtype: torch.dtype) -> float:
    return torch.finfo(REAL.get(dtype, dtype)).eps


def spectra_of(kind: str, n: int, batch: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """A batch of ``n x n`` Hermitian matrices with the named spectrum."""
    gen = torch.Generator().manual_seed(seed)
    big = 1e150 if REAL.get(dtype, dtype) == torch.float64 else 1e30
    if kind == "random":
        return random_hermitian((batch,), n, dtype, seed=seed)
    if kind == "huge":
        return (random_hermitian((batch,), n, REAL.get(dtype, dtype), seed=seed) * big).to(dtype)
    if kind == "tiny":
        return (random_hermitian((batch,), n, REAL.get(dtype, dtype), seed=seed) / big).to(dtype)
    if kind == "diagonal":
        return torch.diag_embed(torch.randn(batch, n, generator=gen, dtype=torch.float64)).to(dtype)
    if kind == "graded":  # entries spanning 1e-8 .. 1e8
        d = torch.logspace(-8, 8, n, dtype=torch.float64) if n > 1 else torch.ones(1).double()
        x = random_hermitian((batch,), n, torch.float64, seed=seed)
        return (d[:, None] * x * d[None, :]).to(dtype)
    if kind == "clustered":
        lam = 1.0 + 1e-9 * torch.randn(batch, n, generator=gen, dtype=torch.float64)
    elif kind == "repeated":
        lam = torch.ones(batch, n, dtype=torch.float64)
        lam[:, n // 2 :] = -2.0
    elif kind == "rank-one":
        lam = torch.zeros(batch, n, dtype=torch.float64)
        lam[:, -1] = 3.0
    else:
        raise ValueError(kind)
    return with_spectrum(lam, dtype, seed=seed)


def check(a: torch.Tensor, w: torch.Tensor, v: torch.Tensor | None) -> None:
    """The issue's accuracy contract, against SciPy in double precision."""
    n, dtype = a.shape[-1], a.dtype
    bound = 30 * n * eps(dtype)
    wide = a.to(torch.complex128 if a.is_complex() else torch.float64)
    norm = torch.linalg.matrix_norm(wide).clamp_min(torch.finfo(torch.float64).tiny)
    assert w.dtype == REAL.get(dtype, dtype) and w.shape == a.shape[:-1]
    assert bool((w[..., 1:] >= w[..., :-1]).all()), "eigenvalues not ascending"
    ref = np.stack([scipy.linalg.eigvalsh(x) for x in wide.numpy()])
    err = ((w.double() - torch.from_numpy(ref)).abs().amax(-1) / norm).max()
    assert err <= bound, f"eigenvalue error {err / eps(dtype):.1f} eps"
    if v is None:
        return
    vw = v.to(wide.dtype)
    res = torch.linalg.matrix_norm(wide @ vw - vw * w.double().to(wide.dtype)[..., None, :])
    assert (res / norm).max() <= bound, f"residual {(res / norm).max() / eps(dtype):.1f} eps"
    orth = (vw.mH @ vw - torch.eye(n, dtype=wide.dtype)).abs().max()
    assert orth <= bound, f"orthogonality {orth / eps(dtype):.1f} eps"


KINDS = ["random", "graded", "clustered", "repeated", "diagonal", "rank-one", "huge", "tiny"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("strategy", "n"), CASES)
def test_kernel_accuracy_real(strategy, n, dtype, kind):
    a = spectra_of(kind, n, 40, dtype, seed=n)
    w, v = spectra.eigh(a, strategy=strategy, workers=1)
    check(a, w, v)
    wv = spectra.eigvalsh(a, strategy=strategy, workers=1)
    check(a, wv, None)


COMPLEX_CASES = [("closed-form", n) for n in (1, 2, 3)] + [
    ("numba-ql", n) for n in (1, 2, 3, 4, 8, 12, 16, 20)
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize(("strategy", "n"), COMPLEX_CASES)
def test_kernel_accuracy_complex(strategy, n, dtype, kind):
    a = spectra_of(kind, n, 40, dtype, seed=n)
    w, v = spectra.eigh(a, strategy=strategy, workers=1)
    check(a, w, v)
    check(a, spectra.eigvalsh(a, strategy=strategy, workers=1), None)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex128])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_torch_lane_closed_form_accuracy(n, dtype, kind):
    """The elementwise torch version (the CUDA path, and CPU without numba) on CPU."""
    a = spectra_of(kind, n, 40, dtype, seed=n + 7)
    w, v = _closed_form.eig_small(a, True)
    check(a, w, v)
    w2, none = _closed_form.eig_small(a, False)
    assert none is None and torch.equal(w2, w)


def test_closed_form_zero_scalar_and_nonfinite_lanes():
    a = torch.zeros(4, 3, 3, dtype=torch.float64)
    a[1] = 2.5 * torch.eye(3)
    a[2, 1, 0] = a[2, 0, 1] = float("nan")
    a[3, 2, 2] = float("inf")
    for w, v in (_closed_form.eig_small(a, True), STRATEGIES["closed-form"].solve(a, True)):
        assert torch.equal(w[0], torch.zeros(3)) and torch.equal(w[1], torch.full((3,), 2.5))
        eye = torch.eye(3, dtype=torch.float64)
        for i in (0, 1):
            torch.testing.assert_close(v[i].mT @ v[i], eye, atol=1e-15, rtol=0)
        assert not bool(torch.isfinite(w[2:]).all(-1).any()), "NaN/Inf must not look finite"


@pytest.mark.parametrize("strategy", sorted(KERNELS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex128])
def test_bitwise_independent_of_chunking_and_position(strategy, dtype):
    n = served_size(strategy, dtype, max(KERNELS[strategy]))  # the kernel's own path
    batch = batch_that_fans_out(strategy, n, dtype, start=70)
    a = random_hermitian((batch,), n, dtype, seed=3)
    w, v = spectra.eigh(a, strategy=strategy, workers=1)
    assert (
        spectra.plan(n, batch, dtype, strategy=strategy, workers=2, chunk_size=batch).workers == 2
    )
    w2, v2 = spectra.eigh(a, strategy=strategy, workers=2)  # split across the pool
    assert torch.equal(w, w2) and torch.equal(v, v2)
    w3, v3 = spectra.eigh(a, strategy=strategy, workers=1, chunk_size=9)
    assert torch.equal(w, w3) and torch.equal(v, v3)
    ws, vs = spectra.eigh(a[5:38], strategy=strategy, workers=1)  # other lane positions
    assert torch.equal(ws, w[5:38]) and torch.equal(vs, v[5:38])


@pytest.mark.parametrize(
    ("strategy", "n"), [("closed-form", 3), ("numba-jacobi", 6), ("numba-ql", 9)]
)
def test_gauge_largest_entry_positive(strategy, n):
    a = random_hermitian((30,), n, torch.float64, seed=5)
    _, v = spectra.eigh(a, strategy=strategy)
    peak = v.gather(-2, v.abs().argmax(-2, keepdim=True))
    assert bool((peak > 0).all())
    _, v_ref = spectra.eigh(a, strategy="torch")
    torch.testing.assert_close(v, v_ref, atol=1e-10, rtol=0)


@pytest.mark.parametrize(("strategy", "n"), [("closed-form", 3), ("numba-ql", 5)])
def test_gradients_through_kernels_match_torch(strategy, n):
    a0 = random_hermitian((6,), n, torch.float64, seed=9)
    grads = []
    for s in (strategy, "torch"):
        a = a0.clone().requires_grad_(True)
        w, v = spectra.eigh(a, strategy=s)
        (w.square().sum() + (v[..., 0, :] ** 3).sum()).backward()
        grads.append(a.grad)
    torch.testing.assert_close(grads[0], grads[1], atol=1e-9, rtol=1e-7)


def test_kernels_read_the_lower_triangle():
    a = random_hermitian((8,), 3, torch.float64, seed=2)
    junk = torch.tril(a) + torch.triu(torch.full_like(a, 7.0), 1)  # garbage above
    for s in KERNELS:
        w, v = spectra.eigh(junk, strategy=s, check=False)
        w_ref, v_ref = spectra.eigh(a, strategy=s)
        torch.testing.assert_close(w, w_ref, atol=1e-12, rtol=0)
        torch.testing.assert_close(v, v_ref, atol=1e-12, rtol=0)


def test_importing_spectra_compiles_nothing():
    code = "import sys, spectra; assert 'numba' not in sys.modules, 'numba imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_in_kernel_gauge_is_bitwise_the_core_gauge(n, dtype):
    from spectra.core._pipeline._gauge import fix_gauge_
    from spectra.core._solvers._kernels import _numba_closed_form as ncf

    a = random_hermitian((300,), n, dtype, seed=4)
    ties = torch.zeros(4, n, n, dtype=dtype)  # eigenvectors with exactly tied entries
    ties[:, 1, 0] = ties[:, 0, 1] = torch.tensor([1.0, -1.0, 0.5, -2.0])
    if n == 3:
        ties[:, 2, 2] = 2.0
    a = torch.cat([a, ties]).numpy()
    kernel = ncf.sym3 if n == 3 else ncf.sym2
    tol = default_tolerance(dtype)
    w0, vt0 = np.empty(a.shape[:-1], a.dtype), np.empty_like(a)
    w1, vt1 = np.empty_like(w0), np.empty_like(a)
    kernel(a, w0, vt0)
    kernel(a, w1, vt1, np.array([tol, 1 - tol], dtype=a.dtype))
    expected = fix_gauge_(torch.from_numpy(vt0).mT.contiguous())
    assert torch.equal(torch.from_numpy(vt1).mT, expected)
    assert np.array_equal(w0, w1)


# ---- the fused input check (spectra.core._solvers._kernels._numba_check) ------------------------

CHECKED = [  # (strategy, n, dtype): every kernel path the executor's fused check runs on
    ("closed-form", 2, torch.float64),
    ("closed-form", 3, torch.float64),
    ("closed-form", 3, torch.float32),
    ("numba-jacobi", 4, torch.float64),
    ("numba-ql", 8, torch.float32),
    ("numba-ql", 5, torch.complex128),
]


def _spy_fused_check(monkeypatch) -> list[bool | None]:
    """Record the verdicts of the kernels' fused check (proves the path is taken)."""
    from spectra.core._solvers._kernels import _numba_check

    verdicts: list[bool | None] = []
    real = _numba_check.block_ok

    def spy(a, tol):
        verdicts.append(real(a, tol))
        return verdicts[-1]

    monkeypatch.setattr(_numba_check, "block_ok", spy)
    return verdicts


@pytest.mark.parametrize(("strategy", "n", "dtype"), CHECKED)
@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_fused_check_refuses_non_finite_upper_triangle(monkeypatch, strategy, n, dtype, value):
    verdicts = _spy_fused_check(monkeypatch)
    a = random_hermitian((2, 3), n, dtype, seed=5)
    a[1, 2, 0, n - 1] = value  # upper triangle only: the kernels read the lower one
    a[0, 1, 0, 1] = value
    with pytest.raises(spectra.InputError, match="NaN or Inf") as info:
        spectra.eigh(a, strategy=strategy)
    assert info.value.indices == [(0, 1), (1, 2)]
    assert False in verdicts


@pytest.mark.parametrize(("strategy", "n", "dtype"), CHECKED)
def test_fused_check_refuses_asymmetry_beyond_tolerance(monkeypatch, strategy, n, dtype):
    verdicts = _spy_fused_check(monkeypatch)
    a = random_hermitian((5,), n, dtype, seed=6)
    tol = 1e-3 if REAL.get(dtype, dtype) == torch.float32 else 1e-8
    scale = a.abs().flatten(-2).amax(-1)
    a[3, 0, n - 1] += 30 * tol * scale[3]  # beyond the tolerance, upper triangle
    a[1, n - 1, 0] += 0.3 * tol * scale[1]  # within it: accepted
    with pytest.raises(spectra.InputError, match=r"not (symmetric|Hermitian)") as info:
        spectra.eigh(a, strategy=strategy)
    assert info.value.indices == [(3,)]
    assert False in verdicts
    verdicts.clear()
    a[3] = random_hermitian((1,), n, dtype, seed=7)[0]
    w, _ = spectra.eigh(a, strategy=strategy)  # matrix 1 is solved from its lower triangle
    ref = scipy.linalg.eigh(a[1].numpy(), lower=True, eigvals_only=True)
    np.testing.assert_allclose(w[1].numpy(), ref, rtol=0, atol=30 * n * eps(dtype) * 10)
    assert verdicts == [True]


def test_fused_check_complex_diagonal_must_be_real(monkeypatch):
    verdicts = _spy_fused_check(monkeypatch)
    a = random_hermitian((3,), 4, torch.complex128, seed=8)
    a[2, 1, 1] += 1e-3j
    with pytest.raises(spectra.InputError) as info:
        spectra.eigh(a, strategy="numba-ql")
    assert info.value.indices == [(2,)] and verdicts == [False]


def test_fused_check_doubt_defers_to_the_torch_check(monkeypatch):
    """A ``False`` from the fused check is not a refusal: torch's check decides."""
    from spectra.core._solvers._kernels import _numba_check

    monkeypatch.setattr(_numba_check, "block_ok", lambda a, tol: False)
    a = random_hermitian((4,), 3, torch.float64, seed=9)
    w, _ = spectra.eigh(a, strategy="closed-form")
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(a.numpy()), atol=1e-12)


def test_fused_check_not_used_without_the_check(monkeypatch):
    verdicts = _spy_fused_check(monkeypatch)
    a = random_hermitian((4,), 3, torch.float64, seed=10)
    a[2, 0, 2] = float("nan")  # check=False reads the lower triangle only
    w, _ = spectra.eigh(a, strategy="closed-form", check=False)
    assert bool(torch.isfinite(w).all()) and verdicts == []


@pytest.mark.parametrize("strategy", ["torch", "numpy", "scipy"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.complex128])
def test_fused_check_on_large_lapack_blocks(monkeypatch, strategy, dtype):
    """LAPACK strategies take the one-pass numba check on CPU blocks of at least
    ``NUMBA_PASS_MIN_ENTRIES``: exact Hermitian input passes there, a ``-0``/``+0`` pair
    (bitwise unequal) and a within-tolerance asymmetry pass its tolerance test, a
    non-finite or asymmetric entry is refused with its index."""
    from spectra.core._support._arrays import NUMBA_PASS_MIN_ENTRIES

    n = 64
    batch = NUMBA_PASS_MIN_ENTRIES // (n * n) + 1
    verdicts = _spy_fused_check(monkeypatch)
    a = random_hermitian((batch,), n, dtype, seed=11)
    spectra.eigh(a, strategy=strategy, workers=1)
    # exactly Hermitian: torch's blocks take the compiled fused pass (its own exact check),
    # the other LAPACK strategies numba's check; below, torch's blocks are declined by
    # that pass (not exact, or not finite) and reach numba's check too
    fused = strategy == "torch" and _native.native_module() is not None
    assert verdicts == ([] if fused else [True])
    verdicts.clear()
    a[2, 5, 3], a[2, 3, 5] = 0.0, -0.0  # equal as numbers: the fused pass accepts them
    a[4, 7, 1] += 1e-3 * torch.finfo(REAL.get(dtype, dtype)).eps * a[4].abs().amax()
    w, _ = spectra.eigh(a, strategy=strategy, workers=1)
    assert verdicts == ([] if fused else [True]) and bool(torch.isfinite(w).all())
    verdicts.clear()
    a[6, 1, 9] = float("inf")
    a[9, 0, 2] += 1.0
    with pytest.raises(spectra.InputError) as info:
        spectra.eigh(a, strategy=strategy, workers=1)
    assert info.value.indices == [(6,)]  # the first failing check (finiteness) names it
    assert verdicts == [False]


def test_small_lapack_blocks_do_not_import_numba_for_the_check(monkeypatch):
    verdicts = _spy_fused_check(monkeypatch)
    spectra.eigh(random_hermitian((3,), 64, torch.float64, seed=12), strategy="torch")
    assert verdicts == []


@pytest.mark.parametrize(("n", "small", "large"), [(3, 2_000, 100_000), (8, 64, 4_096)])
def test_kernel_batches_fan_out_by_the_kernels_cost(n, small, large):
    """LAPACK's ~5 us per matrix made 200 3x3s fan out (2x slower, measured); the kernels'
    own cost keeps small batches in the caller's thread and still splits large ones."""
    p = spectra.plan(n, small, torch.float64, "cpu", workers=2)
    assert p.strategy in STRATEGIES and STRATEGIES[p.strategy].cost.seconds is not None
    assert p.workers == 1, str(p)
    assert spectra.plan(n, large, torch.float64, "cpu", workers=2).workers == 2
    if n == 3:  # where the two cost models differ most (0.2 vs 5 us per matrix)
        torch_plan = spectra.plan(n, small, torch.float64, "cpu", workers=2, strategy="torch")
        assert torch_plan.workers == 2
