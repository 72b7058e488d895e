"""The ``torch`` strategy's fused pass in the executor (``Abilities.fused``,
``native_eigh_into``): per matrix the exact-Hermitian check, the LAPACK call and the gauge
in one compiled loop. Bitwise the executor's separate steps (the helper switched off), on
every dtype, aligned and unaligned sizes, chunked and fanned-out batches; refusals still
name the matrix; and the plans it must not serve (closed form sizes, n >= 256, partial
solves, verification, an ungauged solve) take the separate steps."""

from __future__ import annotations

import pytest
import torch

import spectra
from spectra.core._options import Options
from spectra.core._pipeline import _execute
from spectra.core._pipeline._solve import solve_standard
from spectra.core._solvers import _native

from .helpers import pipeline_only

MODULE = _native.native_module()
needs_native = pytest.mark.skipif(MODULE is None, reason="the compiled helper is not built")
DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]


def _batch(b: int, n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, n, n, generator=g, dtype=torch.float64)
    if dtype.is_complex:
        x = x + 1j * torch.randn(b, n, n, generator=g, dtype=torch.float64)
    x = (x + x.mH) / 2
    if n > 1:  # the identity, and a matrix whose lowest eigenvalue is double
        q = torch.linalg.qr(x[1])[0]
        d = torch.arange(n, dtype=torch.float64)
        d[1] = d[0]
        y = (q * d.to(q.dtype)) @ q.mH
        x[0] = torch.eye(n, dtype=x.dtype)
        x[1] = (y + y.mH) / 2
    return x.to(dtype)


@pytest.fixture(autouse=True)
def _the_pipeline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pass runs in the pipeline: calls with options take it here even where those plan
    them as the default call (which the direct path then runs)."""
    pipeline_only(monkeypatch)


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The batch sizes the helper's batch loop was called with in this test (negative:
    it declined), on the executor's route (every call below passes options, so the direct
    path, the loop's other caller, steps aside)."""
    assert MODULE is not None
    calls: list[int] = []
    inner = MODULE.eigh_batch

    def spy(*args):  # type: ignore[no-untyped-def]
        status, index = inner(*args)
        calls.append(args[1] if status == _native.OK else -args[1])
        return status, index

    monkeypatch.setattr(MODULE, "eigh_batch", spy)
    return calls


def _separate(monkeypatch: pytest.MonkeyPatch, fn, *args, **kw):  # type: ignore[no-untyped-def]
    """``fn`` with the helper switched off: the executor's separate check, solve, gauge."""
    with monkeypatch.context() as m:
        m.setattr(_native, "native_module", lambda: None)
        return fn(*args, **kw)


@needs_native
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", [4, 5, 9, 16, 33, 64, 100, 255, 256, 300])
@pytest.mark.parametrize("workers", [1, 2])
def test_bitwise_the_separate_steps(
    dtype: torch.dtype, n: int, workers: int, passes: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    b = 40 if n < 200 else 3
    a = _batch(b, n, dtype, n)
    w, v = spectra.eigh(a, strategy="torch", workers=workers)
    assert passes and all(c > 0 for c in passes) and sum(passes) == b
    sw, sv = _separate(monkeypatch, spectra.eigh, a, strategy="torch", workers=workers)
    assert torch.equal(w, sw) and torch.equal(v, sv)
    values = spectra.eigvalsh(a, strategy="torch", workers=workers)  # LAPACK's jobz = 'N'
    assert torch.equal(
        values, _separate(monkeypatch, spectra.eigvalsh, a, strategy="torch", workers=workers)
    )
    # against SciPy's LAPACK, to the dtype's rounding
    import scipy.linalg

    ref = torch.from_numpy(scipy.linalg.eigvalsh(a[2].to(torch.complex128).numpy()))
    eps = torch.finfo(w.dtype).eps
    assert (w[2].double() - ref).abs().max() <= 64 * n * eps * ref.abs().max()


@needs_native
def test_chunks_take_the_pass_chunk_by_chunk(
    passes: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch cut into sub-blocks (and memory chunks): one pass per piece, the same bits."""
    a = _batch(300, 48, torch.float64, 3)
    monkeypatch.setattr(_execute, "SUB_BLOCK_BYTES", 48 * 48 * 8 * 16)  # 16 matrices
    w, v = spectra.eigh(a, strategy="torch", workers=2, max_memory=300 * 48 * 48 * 8)
    assert len(passes) > 2 and all(0 < c <= 16 for c in passes) and sum(passes) == 300
    sw, sv = _separate(monkeypatch, spectra.eigh, a, strategy="torch", workers=2)
    assert torch.equal(w, sw) and torch.equal(v, sv)


@needs_native
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_refusals_still_name_the_matrix(
    dtype: torch.dtype, passes: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not Hermitian, NaN, a symmetric Inf: the pass declines (nothing decided), the
    executor's own check names the matrix; within ``symmetry_tol`` the separate steps
    solve it."""
    a = _batch(12, 20, dtype, 1)
    bad = a.clone()
    bad[7, 3, 1] += 0.5
    with pytest.raises(ValueError, match=r"\[7\]"):
        spectra.eigh(bad, strategy="torch", workers=1)
    assert passes == [-12]
    nan = a.clone()
    nan[5, 2, 2] = float("nan")
    with pytest.raises(ValueError, match=r"\[5\]"):
        spectra.eigh(nan, strategy="torch", workers=2)
    near = a.clone()
    near[4, 3, 1] *= 1 + 8 * torch.finfo(near.real.dtype).eps  # not exact, within 1e-2
    passes.clear()
    w, v = spectra.eigh(near, strategy="torch", symmetry_tol=1e-2, workers=1)
    assert passes == [-12]  # declined: the separate steps solved it
    sw, sv = _separate(monkeypatch, spectra.eigh, near, strategy="torch", symmetry_tol=1e-2)
    assert torch.equal(w, sw) and torch.equal(v, sv)


@needs_native
def test_plans_it_does_not_serve(passes: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """n <= 3 (the closed form's sizes), n beyond the pass's bound, a partial solve (k),
    verification and an ungauged solve: the separate steps only."""
    spectra.eigh(_batch(8, 3, torch.float64, 1), strategy="torch", workers=1)
    with monkeypatch.context() as m:
        m.setattr(_native, "FUSED_MAX_N", 40)
        spectra.eigh(_batch(2, 41, torch.float64, 1), strategy="torch", workers=1)
    assert spectra.plan(100, 8, torch.float64, k=2).window is not None  # a partial solve
    spectra.eigh(_batch(8, 100, torch.float64, 1), k=2, workers=1)
    spectra.eigh(_batch(8, 40, torch.float64, 2), strategy="torch", verify=True, workers=1)
    solve_standard(_batch(8, 40, torch.float64, 3), True, Options(strategy="torch"), gauge=False)
    assert passes == []
    spectra.eigh(_batch(8, 40, torch.float64, 4), strategy="torch", workers=1)
    assert passes == [8]


@needs_native
def test_a_threaded_call_first_leaves_a_fan_outs_bits(passes: list[int]) -> None:
    """The helper keeps LAPACK's workspace sizes per kernel-thread count: MKL's query
    depends on it (zheevd, eigenvalues only, n = 32: 672 entries on one thread, 416 on
    two), and another workspace can change the bits. A process whose first call of a size
    ran threaded (one complex128 matrix from n = 48, on the caller's threads) then fans a
    batch of that size out: every matrix has the bits of torch's one-thread call. With one
    size cache for all counts the fan-out reused the threaded sizes and differed."""
    n = 61  # a size no other test solves first
    a = _batch(24, n, torch.complex128, n)
    spectra.eigvalsh(a[0])  # one matrix: threaded LAPACK, its sizes queried on two threads
    p = spectra.plan(n, 24, torch.complex128, vectors=False, strategy="torch", workers=2)
    assert p.workers == 2 and p.single_threaded, str(p)
    w = spectra.eigvalsh(a, strategy="torch", workers=2)
    assert passes and sum(passes) == 24  # the helper's batch loop ran them
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        ref = torch.linalg.eigvalsh(a)
    finally:
        torch.set_num_threads(old)
    assert torch.equal(w, ref)
