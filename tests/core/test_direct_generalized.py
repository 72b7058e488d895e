"""The direct path of a small generalized problem (issue 26): one pair, or a handful,
runs the serial Cholesky path's steps without the pipeline, bitwise its results;
everything else (and every error) takes the full path."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra
from spectra.core import _eigh
from spectra.core._pipeline import _direct_generalized, _solve
from spectra.core._pipeline._direct import _closed_small
from spectra.core._solvers import _native
from spectra.core._solvers._native import MAX_N, native_module
from spectra.core._solvers._torch_lapack import threaded_from
from spectra.core._strategies import STRATEGIES
from spectra.core._support._threads import single_threaded_kernels
from spectra.core.domain import InputError, LinAlgError

from .helpers import DTYPES, near_and_lower, planned, random_hermitian, served_spy


def _pair(shape: tuple[int, ...], n: int, dtype: torch.dtype, seed: int) -> tuple[Any, Any]:
    a = random_hermitian(shape, n, dtype, seed=seed)
    m = random_hermitian(shape, n, dtype, seed=seed + 1)
    b = m @ m.mH + n * torch.eye(n, dtype=dtype)  # positive definite, Hermitian to rounding
    return a, b


@pytest.fixture
def pipeline_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    runs: list[int] = []
    real = _eigh._run_dense
    monkeypatch.setattr(_eigh, "_run_dense", lambda *a: runs.append(1) or real(*a))
    return runs


@pytest.fixture
def compiled_runs(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each call of the compiled pair: whether it served (``None``: it declined)."""
    _direct_generalized.compiled_agrees()  # (decided once per process, by its own calls)
    return served_spy(monkeypatch, "native_pair", _direct_generalized)


def _compiled_expected(shape: tuple[int, ...], n: int, dtype: torch.dtype, vectors: int) -> bool:
    """Where the compiled pair serves a direct call: the helper built; the reduced solve
    on one kernel thread, one pair or a handful of 64-byte-aligned members; or the reduced
    solve threaded (``threaded_pair``), any pairs of ``n <= 255``."""
    batch = int(np.prod(shape))
    aligned = batch == 1 or (n * n * dtype.itemsize) % 64 == 0
    threaded = n >= threaded_from(dtype, bool(vectors))
    served = n <= MAX_N if threaded else aligned
    return native_module() is not None and served


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 17, 40, 70])
@pytest.mark.parametrize("shape", [(), (3,)], ids=["one pair", "a handful"])
def test_bitwise_the_pipeline_and_close_to_scipy(
    dtype: torch.dtype,
    n: int,
    shape: tuple[int, ...],
    pipeline_runs: list[int],
    compiled_runs: list[bool],
) -> None:
    a, b = _pair(shape, n, dtype, seed=n)
    w, v = spectra.eigh(a, b)
    values = spectra.eigvalsh(a, b)
    lo, hi = min(2, n), min(3, n)
    low = spectra.eigh(a, b, k=lo)
    high = spectra.eigh(a, b, k=hi, largest=True)
    # direct where the reduced problem's plan is (a handful of complex 70 x 70 is the
    # openblas claim's, on two workers: the pipeline's)
    # (n <= 3 on the closed form: only where the compiled pair serves it)
    closed_elsewhere = _closed_small(n, dtype) and not _compiled_expected(shape, n, dtype, 1)
    if spectra.plan(n, int(np.prod(shape)), dtype).direct and not closed_elsewhere:
        assert pipeline_runs == []  # none of them took the pipeline
        # the compiled pair where it serves (every call of it did), torch's calls elsewhere
        # the compiled pair where it serves (each call of it did: eigh, eigvalsh, the two
        # k calls), torch's calls elsewhere
        served = [_compiled_expected(shape, n, dtype, vectors) for vectors in (1, 0, 1, 1)]
        assert compiled_runs == [True] * sum(served)
        pw, pv = planned(spectra.eigh, a, b)
        assert torch.equal(w, pw) and torch.equal(v, pv)
        assert torch.equal(values, planned(spectra.eigvalsh, a, b))
    else:  # the pipeline wherever the reduced problem's plan (with or without vectors) is
        batch = int(np.prod(shape))
        routes = [spectra.plan(n, batch, dtype, vectors=bool(x)).direct for x in (1, 0, 1, 1)]
        assert pipeline_runs == [1 for direct in routes if closed_elsewhere or not direct]
    assert torch.equal(low.eigenvalues, w[..., :lo]) and torch.equal(low.eigenvectors, v[..., :lo])
    assert torch.equal(high.eigenvalues, w[..., -hi:])
    assert torch.equal(high.eigenvectors, v[..., -hi:])
    # the reference: SciPy's LAPACK ?sygvd/?hegvd, and V^H B V = I
    wide = torch.complex128 if dtype.is_complex else torch.float64
    eps = torch.finfo(w.dtype).eps
    for i in range(int(np.prod(shape))):
        ai, bi = (x.reshape(-1, n, n)[i].to(wide).numpy() for x in (a, b))
        ref = torch.from_numpy(scipy.linalg.eigh(ai, bi, eigvals_only=True))
        got = w.reshape(-1, n)[i].double()
        assert (got - ref).abs().max() <= 200 * n * eps * ref.abs().max()
        vi, bw = v.reshape(-1, n, n)[i].to(wide), b.reshape(-1, n, n)[i].to(wide)
        gram = vi.mH @ bw @ vi
        assert (gram - torch.eye(n, dtype=wide)).abs().max() <= 200 * n * eps


def test_numpy_and_unchecked_input(pipeline_runs: list[int]) -> None:
    a, b = _pair((), 9, torch.float64, seed=4)
    w, v = spectra.eigh(a.numpy(), b.numpy())
    assert isinstance(w, np.ndarray) and isinstance(v, np.ndarray)
    pw, pv = planned(spectra.eigh, a, b)
    assert np.array_equal(w, pw.numpy()) and np.array_equal(v, pv.numpy())
    garbage = a.clone()
    garbage.triu_(1).add_(a.tril())  # the upper triangle doubled: read as its lower one
    gw, gv = spectra.eigh(garbage, b, check=False)
    assert pipeline_runs == [1]  # only the planned reference
    assert torch.equal(gw, pw) and torch.equal(gv, pv)


def test_what_stays_on_the_full_path(pipeline_runs: list[int]) -> None:
    a, b = _pair((), 6, torch.float64, seed=7)
    cases: list[tuple[str, Any, Any, dict[str, Any]]] = [
        ("lindep", a, b, {"lindep": 1e-8}),
        ("options", a, b, {"workers": 1}),
        ("b broadcast", torch.stack([a, a]), b, {}),
        ("dtypes differ", a, b.to(torch.float32), {}),
    ]
    if spectra.plan(3, 1, torch.float64).strategy == "closed-form" and native_module() is None:
        # the closed form's plan without the compiled pair: only the full path runs it
        cases.append(("n <= 3: the closed form's plan", *_pair((), 3, torch.float64, seed=1), {}))
    for i, (why, x, y, kw) in enumerate(cases, start=1):
        spectra.eigh(x, y, **kw)
        assert pipeline_runs == [1] * i, why
    tracked = a.clone().requires_grad_(True)
    w, _ = spectra.eigh(tracked, b)
    assert len(pipeline_runs) == len(cases) + 1
    w.sum().backward()
    assert tracked.grad is not None


def test_errors_are_the_full_paths() -> None:
    """The direct path hands every input it would refuse to the full path, which names it."""
    a, b = _pair((3,), 5, torch.float64, seed=2)
    singular = b.clone()
    singular[1] = torch.zeros(5, 5, dtype=torch.float64)
    with pytest.raises(LinAlgError, match=r"not positive definite.*\[1\]"):
        spectra.eigh(a, singular)
    nan = a.clone()
    nan[2, 0, 0] = float("nan")
    with pytest.raises(InputError, match=r"\[2\]"):
        spectra.eigh(nan, b)
    skew = a.clone()
    skew[0, 0, 1] += 1.0
    with pytest.raises(InputError, match=r"not (symmetric|Hermitian).*\[0\]"):
        spectra.eigh(skew, b)
    # within the tolerance: accepted, its lower triangle read (as the full path does)
    near = a.clone()
    near[0, 0, 1] += 1e-14
    assert torch.equal(spectra.eigh(near, b)[0], planned(spectra.eigh, near, b)[0])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_compiled_pair_is_torchs_calls_bit_for_bit(dtype: torch.dtype) -> None:
    """The compiled pair against the serial Cholesky path's torch calls themselves, pair
    by pair: sizes on both sides of LAPACK's and MKL's blocking, n <= 3 on the closed
    form where the plan runs it, one pair and an aligned handful, eigenpairs and
    eigenvalues, graded and clustered spectra."""
    if native_module() is None:
        pytest.skip("the compiled helper is not built (SPECTRA_NATIVE=0 or no compiler)")
    assert _direct_generalized.compiled_agrees()
    for n in (2, 3, 4, 7, 16, 31, 32, 33, 47):  # (n = 1: against the pipeline, above)
        if n >= threaded_from(dtype, True):
            continue
        closed = _closed_small(n, dtype)  # n <= 3: the closed form where the plan runs it
        for shape in ((), (4,)):
            if shape and (n * n * dtype.itemsize) % 64:
                continue
            a, b = _pair(shape, n, dtype, seed=3 * n)
            if n == 16:  # graded b (entries over 8 decades) and a clustered a
                scale = torch.logspace(0, 4, n, dtype=torch.float64).to(dtype)
                b = b * scale.unsqueeze(-1) * scale.unsqueeze(-2)
                a = a + 1e3 * torch.eye(n, dtype=dtype)
            for vectors in (True, False):
                with single_threaded_kernels():  # as the direct path calls it
                    got = _direct_generalized.native_pair(a, b, vectors, closed=closed)
                ref = _direct_generalized._by_torch(a, b, vectors, False, closed)
                assert got is not None and ref is not None, (n, shape)
                assert torch.equal(got[0], ref[0]), (n, shape, vectors)
                if vectors:
                    assert got[1] is not None and ref[1] is not None
                    assert torch.equal(got[1], ref[1]), (n, shape)


def test_the_compiled_pair_declines_what_it_cannot_read() -> None:
    """Views it cannot read as row-major pairs, a b that is not positive definite, an
    overflow: ``None``, and the call's answer is then the torch route's (or the full
    path's error)."""
    if native_module() is None:
        pytest.skip("the compiled helper is not built (SPECTRA_NATIVE=0 or no compiler)")
    a, b = _pair((), 6, torch.float64, seed=5)
    pair = _direct_generalized.native_pair
    assert pair(a.mT, b, True) is None  # (column-major: a view)
    assert pair(a, b.conj(), True) is not None  # (real: no lazy conjugate)
    c, d = _pair((), 6, torch.complex128, seed=5)
    assert pair(c, d.conj(), True) is None  # a lazy conjugate
    assert pair(a, -b, True) is None  # not positive definite
    assert pair(a * 1e300, b * 1e-300, True) is None  # eigenvalues overflow
    assert pair(a, b[:5, :5], True) is None  # shapes differ
    w, v = spectra.eigh(a.mT, b)  # the torch route's bits (a.mT is a itself)
    pw, pv = planned(spectra.eigh, a, b)
    assert torch.equal(w, pw) and torch.equal(v, pv)


def test_a_machine_where_the_compiled_pair_differs_keeps_torchs_calls(
    monkeypatch: pytest.MonkeyPatch, compiled_runs: list[bool]
) -> None:
    monkeypatch.setattr(_direct_generalized, "compiled_agrees", lambda: False)
    a, b = _pair((), 8, torch.float64, seed=6)
    w, v = spectra.eigh(a, b)
    assert compiled_runs == []
    pw, pv = planned(spectra.eigh, a, b)
    assert torch.equal(w, pw) and torch.equal(v, pv)


def test_the_compiled_pair_checks_what_the_full_path_checks(compiled_runs: list[bool]) -> None:
    """An exactly Hermitian ``a`` and a ``b`` Hermitian to rounding (``M M^H``): served in
    one compiled call, its own check. An ``a`` Hermitian only within the tolerance: that
    call refuses, the full path's check accepts, and the lower triangle is solved (the
    pipeline's bits). ``check=False``: no check, the lower triangles read. A NaN, a
    non-positive-definite ``b``: refused, and the full path names them."""
    if native_module() is None:
        pytest.skip("the compiled helper is not built (SPECTRA_NATIVE=0 or no compiler)")
    a, b = _pair((), 6, torch.float64, seed=8)
    assert not torch.equal(b, b.mH)  # Hermitian to rounding only
    w, v = spectra.eigh(a, b)
    assert compiled_runs == [True]
    pw, pv = planned(spectra.eigh, a, b)
    assert torch.equal(w, pw) and torch.equal(v, pv)
    compiled_runs.clear()
    near, garbage = near_and_lower(a)
    nw, nv = spectra.eigh(near, b)
    assert compiled_runs == [False, True]
    pw, pv = planned(spectra.eigh, near, b)
    assert torch.equal(nw, pw) and torch.equal(nv, pv)
    compiled_runs.clear()
    gw, gv = spectra.eigh(garbage, b, check=False)
    assert compiled_runs == [True] and torch.equal(gw, w) and torch.equal(gv, v)
    compiled_runs.clear()
    nan = a.clone()
    nan[3, 2] = float("nan")
    with pytest.raises(InputError, match=r"finite|NaN"):
        spectra.eigh(nan, b)
    assert compiled_runs == [False]
    compiled_runs.clear()
    with pytest.raises(LinAlgError, match="not positive definite"):
        spectra.eigh(a, -b)
    assert compiled_runs == [False, False]  # refused, then unchecked: b's factor fails


@pytest.fixture
def threaded_runs(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each call of ``threaded_pair``, from the direct path or the pipeline: whether it
    served (``False``: it declined)."""
    return served_spy(monkeypatch, "threaded_pair", _direct_generalized, _solve)


def _threaded_sizes(dtype: torch.dtype) -> list[int]:
    start = threaded_from(dtype, True)
    return [start, start + 14, 100, MAX_N]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_threaded_pairs_take_one_compiled_call_on_both_paths(
    dtype: torch.dtype, pipeline_runs: list[int], threaded_runs: list[bool]
) -> None:
    """Where a pair's reduced problem is one threaded call (one worker, from
    ``threaded_from``), the direct path and the pipeline both serve it by
    ``threaded_pair``'s compiled steps on the caller's kernel threads, bitwise each
    other; eigenvalues against SciPy's ``?sygvd``/``?hegvd``, ``V^H B V = I``, and torch's
    own calls (``_by_torch``, what either path runs where it declines) to rounding."""
    if native_module() is None:
        pytest.skip("the compiled helper is not built (SPECTRA_NATIVE=0 or no compiler)")
    threads = torch.get_num_threads()
    wide = torch.complex128 if dtype.is_complex else torch.float64
    eps = torch.finfo(dtype).eps
    for n in _threaded_sizes(dtype):
        for shape in ((), (2,)):
            batch = int(np.prod(shape))
            p = spectra.plan(n, batch, dtype)
            if not (p.direct and p.workers == 1):
                continue  # (two 255 x 255 pairs fan out: the fanned pipeline's)
            a, b = _pair(shape, n, dtype, seed=n)
            threaded_runs.clear()
            pipeline_runs.clear()
            w, v = spectra.eigh(a, b)
            assert threaded_runs == [True] and pipeline_runs == [], (n, shape)
            pw, pv = planned(spectra.eigh, a, b)
            assert threaded_runs == [True, True] and pipeline_runs == [1], (n, shape)
            assert torch.equal(w, pw) and torch.equal(v, pv), (n, shape)
            ref_w, ref_v = _direct_generalized._by_torch(a, b, True, True)  # type: ignore[misc]
            scale = w.abs().max()
            assert (w - ref_w).abs().max() <= 50 * n * eps * scale
            for i in range(batch):
                ai, bi = (x.reshape(-1, n, n)[i].to(wide).numpy() for x in (a, b))
                ref = torch.from_numpy(scipy.linalg.eigh(ai, bi, eigvals_only=True))
                got = w.reshape(-1, n)[i].to(wide).real
                assert (got - ref).abs().max() <= 200 * n * eps * ref.abs().max()
                vi, bw = v.reshape(-1, n, n)[i].to(wide), b.reshape(-1, n, n)[i].to(wide)
                gram = vi.mH @ bw @ vi
                assert (gram - torch.eye(n, dtype=wide)).abs().max() <= 200 * n * eps
            # the same eigenvectors up to the gauge's sign/phase: columns agree in modulus
            spread = (w[..., 1:] - w[..., :-1]).abs().min()
            if spread > 1e3 * n * eps * scale:
                assert (v.abs() - ref_v.abs()).abs().max() <= 1e4 * n * eps  # type: ignore[union-attr]
    assert torch.get_num_threads() == threads  # nothing set that the caller sees


def test_threaded_pairs_read_what_the_full_path_reads(
    pipeline_runs: list[int], threaded_runs: list[bool]
) -> None:
    """An ``a`` Hermitian only within the tolerance: the checked call refuses, the full
    path's check accepts, the lower triangle is served unchecked (the pipeline's bits).
    A ``b`` broadcast over a handful: the pipeline serves each member whole, the bits of
    the expanded ``b`` on the direct path. ``check=False``: the lower triangles."""
    if native_module() is None:
        pytest.skip("the compiled helper is not built (SPECTRA_NATIVE=0 or no compiler)")
    n = 64
    a, b = _pair((), n, torch.float64, seed=21)
    near, garbage = near_and_lower(a)
    nw, nv = spectra.eigh(near, b)
    assert threaded_runs == [False, True] and pipeline_runs == []
    pw, pv = planned(spectra.eigh, near, b)
    assert torch.equal(nw, pw) and torch.equal(nv, pv)
    threaded_runs.clear()
    gw, gv = spectra.eigh(garbage, b, check=False)
    w, v = spectra.eigh(a, b)
    assert threaded_runs == [True, True]
    assert torch.equal(gw, w) and torch.equal(gv, v)
    threaded_runs.clear()
    pipeline_runs.clear()
    stacked = torch.stack([a, near])
    bw, bv = spectra.eigh(stacked, b)  # b broadcast: the pipeline
    assert pipeline_runs == [1] and threaded_runs == [True]
    ew, ev = spectra.eigh(stacked, b.expand(2, n, n).contiguous())
    assert torch.equal(bw, ew) and torch.equal(bv, ev)
    assert torch.equal(bw[0], w) and torch.equal(bv[0], v)


def test_threaded_pairs_decline_to_torchs_calls(
    monkeypatch: pytest.MonkeyPatch, pipeline_runs: list[int], threaded_runs: list[bool]
) -> None:
    """Without the helper, and where ``torch`` is a registered replacement (whose solver
    the compiled steps would bypass), both paths run torch's calls, the same bits; past
    the helper's sizes (``n > 255``) the reduced problem is not planned as one direct
    call, and the pipeline runs it; a ``b`` that is not positive definite is named by the
    full path."""
    n = MAX_N + 1
    assert not spectra.plan(n, 1, torch.float64).direct
    a, b = _pair((), n, torch.float64, seed=22)
    spectra.eigh(a, b)
    assert threaded_runs == [] and pipeline_runs == [1]
    a, b = _pair((), 64, torch.float64, seed=23)
    with pytest.raises(LinAlgError, match="not positive definite"):
        spectra.eigh(a, -b)
    assert True not in threaded_runs
    threaded_runs.clear()
    with monkeypatch.context() as patch:
        patch.setattr(_native, "native_module", lambda: None)
        w, v = spectra.eigh(a, b)
        pw, pv = planned(spectra.eigh, a, b)
    assert threaded_runs == [False, False, False]  # direct: checked, unchecked; the pipeline
    assert torch.equal(w, pw) and torch.equal(v, pv)
    solved: list[int] = []
    builtin = STRATEGIES["torch"]

    def replacement(x: torch.Tensor, vectors: bool) -> Any:
        solved.append(x.shape[-1])
        return builtin.solve(x, vectors)

    monkeypatch.setitem(STRATEGIES, "torch", dataclasses.replace(builtin, solve=replacement))
    pipeline_runs.clear()
    threaded_runs.clear()
    spectra.eigh(a, b)
    assert pipeline_runs == [1] and threaded_runs == [] and solved == [64]
