"""The ``openblas`` strategy (SciPy's OpenBLAS ``?syevd``/``?heevd``): its answers against
SciPy's, its claim (non-Intel CPUs only, the measured ranges), the planner's and the direct
path's use of it, and the bitwise guarantee wherever it is claimed. The CPU vendor is pinned
in each test (``pin_cpu_vendor``), so every branch runs on any machine."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra
from spectra.core import STRATEGIES, InputError
from spectra.core._pipeline import _direct
from spectra.core._strategies import _openblas
from spectra.core._strategies._openblas import claim_for, openblas_claim

from .helpers import pin_cpu_vendor, random_hermitian, tol, with_spectrum

pytestmark = pytest.mark.skipif(
    not STRATEGIES["openblas"].supports(torch.device("cpu")),
    reason="SciPy's LAPACK here has no LAPACKE ?syevd or no OpenBLAS thread knob",
)
CPU = torch.device("cpu")


def test_claims_off_intel_in_the_measured_ranges_only():
    amd = "AuthenticAMD"
    assert claim_for(55, torch.complex128, amd) is None
    # one matrix runs torch's MKL on the caller's threads (two beat one of OpenBLAS's, from
    # threaded_from): the claim starts at two matrices
    assert claim_for(56, torch.complex128, amd).min_batch == 2  # type: ignore[union-attr]
    assert claim_for(255, torch.complex128, amd).min_batch == 2  # type: ignore[union-attr]
    assert claim_for(256, torch.complex128, amd).min_batch == 2  # type: ignore[union-attr]
    assert claim_for(384, torch.complex128, amd) is None
    assert claim_for(255, torch.float64, amd) is None
    assert claim_for(256, torch.float64, amd).min_batch == 2  # type: ignore[union-attr]
    assert claim_for(5000, torch.float64, amd).min_batch == 2  # type: ignore[union-attr]
    for dtype in (torch.float32, torch.complex64):
        assert all(claim_for(n, dtype, amd) is None for n in (64, 256, 512))
    for vendor in ("GenuineIntel", None, "ARM"):
        assert claim_for(128, torch.complex128, vendor) is None
    assert "AuthenticAMD" in claim_for(64, torch.complex128, amd).reason  # type: ignore[union-attr]


def test_the_claim_needs_eigenvectors_and_the_cpu(monkeypatch):
    pin_cpu_vendor(monkeypatch, "AuthenticAMD")
    assert openblas_claim(64, torch.complex128, CPU, True) is not None
    assert openblas_claim(64, torch.complex128, CPU, False) is None  # eigvalsh: torch's driver
    assert openblas_claim(64, torch.complex128, torch.device("cuda"), True) is None


def test_the_vendor_is_read_from_cpuinfo():
    """The first ``vendor_id`` line of ``/proc/cpuinfo`` (read here by a regular expression),
    or ``None`` where the file or the line is missing (ARM, macOS)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            found = re.search(r"^vendor_id\s*:\s*(\S+)", fh.read(), re.MULTILINE)
    except OSError:
        found = None
    assert _openblas.cpu_vendor() == (found.group(1) if found else None)


def test_the_planner_takes_it_off_intel_only(monkeypatch):
    pin_cpu_vendor(monkeypatch, "AuthenticAMD")
    two = spectra.plan(64, 2, torch.complex128)
    assert two.strategy == "openblas" and not two.direct, str(two)
    assert "AuthenticAMD" in "\n".join(two.reasons)
    one = spectra.plan(64, 1, torch.complex128)  # MKL on the caller's threads
    assert one.strategy == "torch" and one.direct and not one.single_threaded, str(one)
    assert spectra.plan(64, 2, torch.complex128, vectors=False).strategy == "torch"
    assert spectra.plan(256, 1, torch.float64).strategy == "torch"  # MKL's threads, one matrix
    many = spectra.plan(600, 8, torch.float64)  # above the ``twisted`` claim's sizes
    assert many.strategy == "openblas" and many.workers == 2, str(many)
    assert spectra.plan(64, 8, torch.float32).strategy == "torch"
    pin_cpu_vendor(monkeypatch, "GenuineIntel")
    intel = spectra.plan(64, 1, torch.complex128)
    assert intel.strategy == "torch" and intel.direct
    assert spectra.plan(256, 8, torch.float64).strategy == "torch"
    assert spectra.plan(600, 8, torch.float64).strategy == "torch"


def _cases(n: int, dtype: torch.dtype):
    real = dtype.to_real() if dtype.is_complex else dtype
    yield "random", random_hermitian((3,), n, dtype, seed=n)
    spectrum = torch.logspace(-6, 6, n, dtype=torch.float64).to(real)
    yield "graded", with_spectrum(spectrum.expand(2, n), dtype, seed=1)
    repeated = torch.tensor([float(i // 3) for i in range(n)], dtype=torch.float64).to(real)
    yield "repeated", with_spectrum(repeated.expand(2, n), dtype, seed=2)
    yield "identity", torch.eye(n, dtype=dtype).expand(2, n, n).clone()
    tiny = 1e-150 if real == torch.float64 else 1e-18
    yield "tiny", random_hermitian((2,), n, dtype, seed=3) * tiny


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
@pytest.mark.parametrize("n", [1, 2, 5, 57, 130])
def test_against_scipy(n, dtype):
    """Eigenvalues against SciPy's (an independent driver call on NumPy arrays), residuals
    and orthonormality, and the eigenspaces against torch's LAPACK (projectors)."""
    for name, a in _cases(n, dtype):
        w, v = spectra.eigh(a, strategy="openblas")
        assert w.dtype == (dtype.to_real() if dtype.is_complex else dtype) and v.dtype == dtype
        scale = max(float(a.abs().amax()), 1e-300)
        for i in range(a.shape[0]):
            ref = scipy.linalg.eigh(a[i].numpy(), eigvals_only=True)
            err = float(np.abs(w[i].numpy() - ref).max()) / max(float(np.abs(ref).max()), scale)
            assert err <= 10 * n * tol(dtype), (name, i, err)
        assert spectra.validate(a, w, v).ok(10 * tol(dtype)), name
        vt = spectra.eigh(a, strategy="torch").eigenvectors
        # projectors onto each eigenvalue's group (repeated ones compared as spaces)
        for i in range(a.shape[0]):
            gaps = (w[i].diff() > 1e3 * tol(dtype) * scale).nonzero().flatten() + 1
            groups = torch.cat([torch.tensor([0]), gaps, torch.tensor([n])])
            for lo, hi in zip(groups[:-1].tolist(), groups[1:].tolist(), strict=True):
                p = v[i, :, lo:hi] @ v[i, :, lo:hi].mH
                pt = vt[i, :, lo:hi] @ vt[i, :, lo:hi].mH
                assert float((p - pt).abs().amax()) <= 1e3 * n * tol(dtype), (name, i, lo, hi)
        wv = spectra.eigvalsh(a, strategy="openblas")
        assert float((wv - w).abs().amax()) <= 10 * n * tol(dtype) * scale, name


def test_an_empty_batch_and_one_by_one():
    w, v = spectra.eigh(torch.zeros(0, 5, 5, dtype=torch.complex128), strategy="openblas")
    assert w.shape == (0, 5) and v.shape == (0, 5, 5)
    w, v = spectra.eigh(torch.tensor([[[-2.5]]], dtype=torch.float64), strategy="openblas")
    assert w.tolist() == [[-2.5]] and v.tolist() == [[[1.0]]]


def _claim_one_matrix(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The claim made to hold from one matrix (complex128, n = 56-383) on a pinned AMD CPU:
    the direct path's claimed one-matrix route, which a strategy claiming one matrix takes
    (the built-in claim starts at two: one matrix runs torch's MKL on the caller's threads)."""
    monkeypatch.setitem(_openblas.RANGES, torch.complex128, ((56, 384, 1),))
    pin_cpu_vendor(monkeypatch, "AuthenticAMD")


@pytest.mark.parametrize("n", [57, 100])
def test_bitwise_alone_in_any_batch_chunk_and_worker_split(monkeypatch, n):
    """Where the claim holds from one matrix, a matrix's bits do not depend on its batch:
    alone (the direct path's claimed route), as a batch of one, at an odd position of a
    batch whose members are not 64-byte aligned (57^2 x 16 bytes), in chunks, on one
    worker or two."""
    _claim_one_matrix(monkeypatch)
    a = random_hermitian((7,), n, torch.complex128, seed=7)  # below ``twisted``'s 8
    assert spectra.plan(n, 7, torch.complex128).strategy == "openblas"
    w, v = spectra.eigh(a, workers=2)
    seen = []
    real = _direct._solve_claimed
    monkeypatch.setattr(_direct, "_solve_claimed", lambda *args: seen.append(1) or real(*args))
    for i in (0, 3, 6):
        one_w, one_v = spectra.eigh(a[i])
        assert torch.equal(one_w, w[i]) and torch.equal(one_v, v[i]), i
        bw, bv = spectra.eigh(a[i : i + 1])
        assert torch.equal(bw[0], w[i]) and torch.equal(bv[0], v[i]), i
    assert len(seen) == 3  # the one-matrix calls took the claimed route, not the pipeline
    for kw in ({"workers": 1}, {"max_memory": 3 * n * n * 16}, {"chunk_size": 2}):
        p = spectra.plan(n, 7, torch.complex128, **kw)
        assert p.strategy == "openblas" and (p.workers == 1 or p.n_chunks > 1), (kw, str(p))
        cw, cv = spectra.eigh(a, **kw)
        assert torch.equal(cw, w) and torch.equal(cv, v), kw


def test_float64_batches_are_bitwise_across_worker_splits_and_chunks(monkeypatch):
    pin_cpu_vendor(monkeypatch, "AuthenticAMD")
    a = random_hermitian((6,), 520, torch.float64, seed=8)  # above the ``twisted`` claim
    p = spectra.plan(520, 6, torch.float64, workers=2)
    assert p.strategy == "openblas" and p.workers == 2, str(p)
    w, v = spectra.eigh(a, workers=2)
    assert spectra.plan(520, 6, torch.float64, workers=2, chunk_size=2).n_chunks == 3
    cw, cv = spectra.eigh(a, workers=2, chunk_size=2)
    assert torch.equal(cw, w) and torch.equal(cv, v)
    tw = spectra.eigh(a, strategy="torch").eigenvalues
    assert float((tw - w).abs().amax()) <= 1e-12 * float(w.abs().amax())


def test_the_one_matrix_route_hands_the_unusual_to_the_full_path(monkeypatch):
    """Not exactly Hermitian (within the tolerance), NaN: the claimed route declines and
    the full path answers (the same bits as in a batch) or refuses, naming the problem."""
    _claim_one_matrix(monkeypatch)
    a = random_hermitian((2,), 64, torch.complex128, seed=9)
    a[0, 5, 2] += 1e-13  # the lower triangle is what is read
    assert _direct._solve_one(a[0], True, True, None) is None
    w, v = spectra.eigh(a[0])
    bw, bv = spectra.eigh(a)
    assert torch.equal(w, bw[0]) and torch.equal(v, bv[0])
    bad = a[1].clone()
    bad[3, 7] = bad[7, 3] = float("nan")
    with pytest.raises(InputError, match="NaN or Inf"):
        spectra.eigh(bad)
    with pytest.raises(InputError, match=r"batch indices \[1\]"):
        spectra.eigh(torch.stack([a[0], bad]))


def test_gradients_through_the_claimed_strategy(monkeypatch):
    _claim_one_matrix(monkeypatch)
    base = random_hermitian((1,), 60, torch.complex128, seed=10)[0]

    def grad(strategy: str | None) -> torch.Tensor:
        x = base.clone().requires_grad_(True)
        kw = {} if strategy is None else {"strategy": strategy}
        w, v = spectra.eigh(x, **kw)
        (w[:5].sum() + (v[:, :3].abs() ** 2 * torch.arange(60.0)[:, None]).sum()).backward()
        assert x.grad is not None
        return x.grad

    ours = grad(None)
    assert spectra.plan(60, 1, torch.complex128).strategy == "openblas"
    torch.testing.assert_close(ours, grad("torch"), rtol=0, atol=1e-9)


def test_the_thread_settings_are_left_as_found(monkeypatch):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    pin_cpu_vendor(monkeypatch, "AuthenticAMD")

    def settings():
        return (
            torch.get_num_threads(),
            sorted((p["filepath"], p["num_threads"]) for p in threadpoolctl.threadpool_info()),
        )

    before = settings()
    spectra.eigh(random_hermitian((1,), 64, torch.complex128, seed=11)[0])
    spectra.eigh(random_hermitian((16,), 64, torch.complex128, seed=12), workers=2)
    spectra.eigh(random_hermitian((2,), 300, torch.float64, seed=13), workers=1)
    assert settings() == before
