"""The ``twisted`` strategy's fused pass (``_twisted_eigh.twisted_eigh_fused``): each block
of eight matrices checked (exactly Hermitian, finite) just before its reduction and put in
the core's gauge just after its back-transformation, inside the kernel's one call.

Its bits are those of the solve followed by the torch gauge (an independent implementation
of the gauge: ``fix_gauge``), its eigenvalues SciPy's to LAPACK's error; it declines
everything the executor must decide itself (inexact symmetry, NaN, Inf, a failed solve,
layouts not the executor's); the executor takes it where the plan is ``twisted`` and its
answers, errors included, are those of the separate check, solve and gauge."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra
from spectra.core._pipeline import _execute
from spectra.core._pipeline._gauge import fix_gauge
from spectra.core._solvers import _twisted_eigh
from spectra.core._solvers._kernels import _ready
from spectra.core._solvers._twisted_eigh import available, twisted_eigh_fused, twisted_eigh_into

from .helpers import pin_cpu_vendor, random_hermitian

pytestmark = pytest.mark.skipif(
    not available() or _twisted_eigh._routines().passes is None,
    reason="needs numba, SciPy's OpenBLAS and the compiled helper",
)

DTYPES = [torch.float64, torch.float32, torch.complex128, torch.complex64]
EPS = {torch.float32: 1.2e-7, torch.float64: 2.3e-16}


def _outputs(a: torch.Tensor, vectors: bool = True) -> tuple[torch.Tensor, Any]:
    """The executor's outputs: ``w`` contiguous, ``v`` column-major per matrix."""
    b, n = a.shape[0], a.shape[-1]
    w = torch.full((b, n), float("nan"), dtype=a.dtype.to_real())
    if not vectors:
        return w, None
    v = torch.empty_strided((b, n, n), (n * n, 1, n), dtype=a.dtype).fill_(float("nan"))
    return w, v


def _separate(a: torch.Tensor, vectors: bool = True) -> tuple[torch.Tensor, Any]:
    """The solve into the same outputs, then the torch gauge."""
    w, v = _outputs(a, vectors)
    twisted_eigh_into(a, w, v)
    return w, (fix_gauge(v) if v is not None else None)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", [3, 16, 40, 100, 300])
def test_its_bits_are_the_solve_and_the_core_gauge(dtype, n):
    batch = 13 if n < 300 else 9  # a partial block of eight at the end
    a = random_hermitian((batch,), n, dtype, seed=n)
    w, v = _outputs(a)
    assert twisted_eigh_fused(a, w, v, True)
    ref_w, ref_v = _separate(a)
    assert torch.equal(w, ref_w) and torch.equal(v, ref_v)
    raw = _outputs(a)
    twisted_eigh_into(a, *raw)
    assert not torch.equal(v, raw[1])  # the gauge ran (13 x n random signs or phases)
    eps = EPS[dtype.to_real()]
    wide = a.to(torch.complex128 if a.is_complex() else torch.float64).numpy()
    values = np.stack([scipy.linalg.eigh(x, eigvals_only=True) for x in wide])
    assert np.abs(w.double().numpy() - values).max() <= 4 * n * eps * np.abs(values).max()
    # eigenvalues only: checked and solved, nothing to gauge
    w_only, none = _outputs(a, False)
    assert twisted_eigh_fused(a, w_only, none, True)
    assert torch.equal(w_only, _separate(a, False)[0])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_without_the_check_it_reads_the_lower_triangle(dtype):
    a = random_hermitian((10,), 24, dtype, seed=2)
    messy = a.clone()
    messy[:, 1, 7] += 3.0  # the upper triangle, never read
    w, v = _outputs(a)
    assert not twisted_eigh_fused(messy, w, v, True)  # checked: not exactly Hermitian
    assert twisted_eigh_fused(messy, w, v, False)
    ref_w, ref_v = _separate(a)
    assert torch.equal(w, ref_w) and torch.equal(v, ref_v)


def _spoiled(a: torch.Tensor, how: str) -> torch.Tensor:
    a = a.clone()
    if how == "inexact":  # Hermitian to round-off, not exactly
        a[11, 2, 5] = a[11, 2, 5] * (1 + 8 * torch.finfo(a.dtype.to_real()).eps)
    elif how == "nan":
        a[11, 2, 5] = a[11, 5, 2] = float("nan")
    elif how == "inf":
        a[11, 3, 3] = float("inf")
    return a


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex64], ids=str)
@pytest.mark.parametrize("how", ["inexact", "nan", "inf"])
def test_it_declines_what_the_executor_must_decide(dtype, how):
    a = _spoiled(random_hermitian((16,), 20, dtype, seed=3), how)
    w, v = _outputs(a)
    assert not twisted_eigh_fused(a, w, v, True)
    if how != "inexact":  # unchecked, a non-finite matrix fails or gives non-finite values
        assert not twisted_eigh_fused(a, w, v, False)


def test_it_declines_outputs_and_inputs_not_the_executor_s():
    a = random_hermitian((8,), 20, torch.float64, seed=4)
    w, v = _outputs(a)
    row_major = torch.empty(8, 20, 20, dtype=a.dtype)
    assert not twisted_eigh_fused(a, w, row_major, True)
    assert not twisted_eigh_fused(a, torch.empty(20, 8, dtype=a.dtype).T, v, True)
    assert not twisted_eigh_fused(a.clone().requires_grad_(), w, v, True)
    assert not twisted_eigh_fused(a[:0], w[:0], v[:0], True)
    assert twisted_eigh_fused(a, w, v, True)  # the same call, the executor's layouts


def test_without_the_compiled_helper_it_declines(monkeypatch):
    monkeypatch.setattr(_twisted_eigh._routines(), "passes", None)
    a = random_hermitian((8,), 20, torch.float64, seed=5)
    assert not twisted_eigh_fused(a, *_outputs(a), True)


@pytest.fixture
def _amd_kernels_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plans as on the development VM (``twisted`` claims its measured ranges), the
    kernels' readiness aside, no plan made before surviving."""
    monkeypatch.setenv(_ready.ENV, "eager")
    pin_cpu_vendor(monkeypatch, "AuthenticAMD")
    monkeypatch.setitem(spectra.core.STRATEGIES, "twisted", spectra.core.STRATEGIES["twisted"])


def _calls(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Records each fused pass the executor runs (whether it served its block)."""
    seen: list[bool] = []
    real = _execute._fused_pass

    def fused_pass(*args: Any) -> Any:
        fused = real(*args)
        if fused is None:
            return None

        def recorded(*call: Any) -> bool:
            seen.append(fused(*call))
            return seen[-1]

        return recorded

    monkeypatch.setattr(_execute, "_fused_pass", fused_pass)
    return seen


def _with_separate_passes(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with the executor's fused pass switched off."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_execute, "_fused_pass", lambda *a: None)
        return fn(*args, **kwargs)


@pytest.mark.usefixtures("_amd_kernels_ready")
@pytest.mark.parametrize(
    ("dtype", "n", "batch", "workers"),
    [
        (torch.float64, 40, 48, None),
        (torch.float32, 32, 48, None),
        (torch.complex128, 20, 96, None),
        (torch.complex64, 16, 96, None),
        (torch.float64, 64, 21, 2),
        (torch.complex64, 96, 16, 2),
    ],
    ids=str,
)
def test_the_executor_takes_it_with_the_separate_passes_bits(monkeypatch, dtype, n, batch, workers):
    assert spectra.plan(n, batch, dtype).strategy == "twisted"
    seen = _calls(monkeypatch)
    a = random_hermitian((batch,), n, dtype, seed=n)
    kw = {} if workers is None else {"workers": workers}
    got = spectra.eigh(a, **kw)
    assert seen and all(seen)
    ref = _with_separate_passes(spectra.eigh, a, **kw)
    assert torch.equal(got.eigenvalues, ref.eigenvalues)
    assert torch.equal(got.eigenvectors, ref.eigenvectors)
    values = spectra.eigvalsh(a, strategy="twisted", **kw)
    assert torch.equal(values, _with_separate_passes(spectra.eigvalsh, a, strategy="twisted", **kw))
    assert torch.equal(values, got.eigenvalues)


@pytest.mark.usefixtures("_amd_kernels_ready")
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex64], ids=str)
def test_a_declined_block_gets_the_executor_s_own_answer_and_errors(monkeypatch, dtype):
    seen = _calls(monkeypatch)
    a = _spoiled(random_hermitian((48,), 40, dtype, seed=6), "inexact")
    got = spectra.eigh(a, strategy="twisted")
    assert seen and not all(seen)  # declined: the executor's check, solve and gauge
    ref = _with_separate_passes(spectra.eigh, a, strategy="twisted")
    assert torch.equal(got.eigenvalues, ref.eigenvalues)
    assert torch.equal(got.eigenvectors, ref.eigenvectors)
    for how in ("nan", "inf"):
        bad = _spoiled(a, how)
        match = r"NaN or Inf in the matrices at batch indices \[11\]"
        with pytest.raises(spectra.InputError, match=match):
            spectra.eigh(bad, strategy="twisted")


@pytest.mark.usefixtures("_amd_kernels_ready")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_adversarial_matrices_keep_the_separate_passes_bits(monkeypatch, dtype):
    """Degenerate, clustered, zero, identity, huge and tiny matrices in one batch, as built
    (symmetric to rounding: declined) and made exactly Hermitian (served): the call's bits
    are the separate passes'."""
    from .test_twisted import _as_dtype, _small_adversarial

    mats = _small_adversarial(24)
    built = torch.stack([_as_dtype(m, name, dtype) for name, m in mats.items()] * 2)
    for a, served in ((built, False), ((built + built.mH) / 2, True)):
        seen = _calls(monkeypatch)
        got = spectra.eigh(a, strategy="twisted")
        assert seen and all(seen) == served, seen
        ref = _with_separate_passes(spectra.eigh, a, strategy="twisted")
        assert torch.equal(got.eigenvalues, ref.eigenvalues)
        assert torch.equal(got.eigenvectors, ref.eigenvectors)
