"""The compiled one-matrix route (``spectra/core/_solvers/_native_eigh.c``): the same bits
as the Python route it replaces, on every dtype, size and adversarial input, and the
route actually taken (a spy on the helper counts its calls)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra
from spectra.core._pipeline import _direct
from spectra.core._pipeline._gauge import fix_gauge
from spectra.core._solvers import _native

from .helpers import assert_refusals, pin_cpu_vendor, planned, without_native_entry

MODULE = _native.native_module()
needs_native = pytest.mark.skipif(MODULE is None, reason="the compiled helper is not built")

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]
SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100]


def test_built_where_ci_runs() -> None:
    """CI builds the helper (setup.py, gcc): without it the one-call figures do not hold."""
    if os.environ.get("CI", "").lower() not in ("1", "true", "yes"):
        pytest.skip("only asserted under CI")
    assert MODULE is not None, "spectra/core/_solvers/_native_eigh.c was not built"


def _hermitian(x: torch.Tensor) -> torch.Tensor:
    return (x + x.mH) / 2


def _random(n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, n, generator=g, dtype=torch.float64)
    if dtype.is_complex:
        x = x + 1j * torch.randn(n, n, generator=g, dtype=torch.float64)
    return _hermitian(x).to(dtype)


def _adversarial(n: int, dtype: torch.dtype) -> Iterator[tuple[str, torch.Tensor]]:
    """Degenerate, clustered, graded and structured matrices whose eigenvectors hold
    exact or near ties (the gauge's hard cases)."""
    real = torch.float64
    yield "identity", torch.eye(n, dtype=dtype)
    yield "zeros", torch.zeros(n, n, dtype=dtype)
    yield "ones", torch.ones(n, n, dtype=dtype)
    path = torch.diag(torch.full((n - 1,), -1.0, dtype=real), 1) if n > 1 else torch.zeros(1, 1)
    lap = path + path.mT
    lap = lap + torch.diag(-lap.sum(0))
    yield "path-laplacian", lap.to(dtype)
    cycle = lap.clone()
    if n > 2:
        cycle[0, -1] = cycle[-1, 0] = -1.0
        cycle[0, 0] = cycle[-1, -1] = 2.0
    yield "cycle-laplacian", cycle.to(dtype)
    reps = torch.diag(torch.tensor([float(i // 2) for i in range(n)], dtype=real))
    q, _ = torch.linalg.qr(_random(n, torch.float64, 3))
    yield "repeated-pairs", _hermitian((q @ reps @ q.mT).to(dtype))
    graded = torch.diag(torch.logspace(-8, 8, n, dtype=real))
    yield "graded", _hermitian((q @ graded @ q.mT).to(dtype))
    yield (
        "clustered",
        _hermitian((q @ torch.diag(1 + 1e-9 * torch.arange(n, dtype=real)) @ q.mT).to(dtype)),
    )
    yield (
        "tiny",
        (_random(n, torch.float64, 4) * 1e-150).to(dtype)
        if dtype
        in (
            torch.float64,
            torch.complex128,
        )
        else (_random(n, torch.float64, 4) * 1e-20).to(dtype),
    )
    if dtype.is_complex:
        phase = torch.exp(1j * torch.linspace(0, 3, n, dtype=real))
        yield (
            "unitary-diagonal",
            _hermitian(
                (torch.diag(phase) @ lap.to(phase.dtype) @ torch.diag(phase.conj())).to(dtype)
            ),
        )


def _cases(dtype: torch.dtype) -> Iterator[tuple[str, torch.Tensor]]:
    for n in SIZES:
        yield f"random-{n}", _random(n, dtype, n)
        for name, a in _adversarial(n, dtype):
            yield f"{name}-{n}", a


@pytest.fixture(autouse=True)
def _without_the_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the Python-level compiled route (on torch's LAPACK: no
    ``openblas`` claim, which a non-Intel CPU would make from n = 56)."""
    without_native_entry(monkeypatch)
    pin_cpu_vendor(monkeypatch, "GenuineIntel")


class _Spy:
    """Counts the helper's solves (and lets them run)."""

    def __init__(self, module: object) -> None:
        self.inner = module.eigh  # type: ignore[attr-defined]
        self.calls: list[int] = []

    def __call__(self, *args: object) -> int:
        status = self.inner(*args)
        self.calls.append(status)
        return int(status)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> _Spy:
    s = _Spy(MODULE)
    monkeypatch.setattr(MODULE, "eigh", s)
    return s


def _python_route(monkeypatch: pytest.MonkeyPatch, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    a = args[0]
    if a.is_complex() and _direct._closed_small(a.shape[-1], a.dtype):
        # the complex closed form has no Python twin (the real one has numba's lanes): the
        # planned path's own call of it (its executor, workers=1) is the reference
        return planned(fn, *args, **kwargs)
    with monkeypatch.context() as m:
        m.setattr(_native, "native_module", lambda: None)
        return fn(*args, **kwargs)


@needs_native
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eigh_bitwise_the_python_route(
    dtype: torch.dtype, spy: _Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, a in _cases(dtype):
        before = len(spy.calls)
        w, v = spectra.eigh(a)
        assert spy.calls[before:] == [_native.OK], name  # the compiled route, gauged there
        pw, pv = _python_route(monkeypatch, spectra.eigh, a)
        assert torch.equal(w, pw), name
        assert torch.equal(v, pv), name
        assert v.stride() == pv.stride() == (1, a.shape[0]), name  # column-major, as torch's
        assert w.dtype == pw.dtype and v.dtype == a.dtype


@needs_native
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eigvalsh_bitwise_the_python_route(
    dtype: torch.dtype, spy: _Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, a in _cases(dtype):
        before = len(spy.calls)
        w = spectra.eigvalsh(a)
        assert spy.calls[before:] == [_native.OK], name
        assert torch.equal(w, _python_route(monkeypatch, spectra.eigvalsh, a)), name
        n = a.shape[0]
        if n < _native.SEQUENTIAL_N and not _direct._closed_small(n, dtype):
            # LAPACK unthreaded: torch's own bits too (the closed form below n = 4: numba's)
            assert torch.equal(w, torch.linalg.eigvalsh(a)), name


@needs_native
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_against_scipy(dtype: torch.dtype) -> None:
    """Independent reference: SciPy's eigenvalues, orthonormal gauged eigenvectors."""
    tol = 1e-4 if dtype in (torch.float32, torch.complex64) else 1e-11
    for n in SIZES:
        a = _random(n, dtype, 100 + n)
        w, v = spectra.eigh(a)
        ref = scipy.linalg.eigh(a.numpy(), eigvals_only=True)
        assert np.allclose(w.numpy(), ref, rtol=tol, atol=tol * np.abs(ref).max())
        eye = torch.eye(n, dtype=dtype)
        assert torch.allclose(v.mH @ v, eye, atol=tol * 10)
        assert torch.allclose(a @ v, v * w.to(dtype), atol=tol * 10 * float(w.abs().max()))
        peak = v.abs().argmax(0)
        pivots = v[peak, torch.arange(n)]
        assert bool((pivots.real > 0).all())
        if dtype.is_complex:
            assert bool((pivots.imag.abs() <= tol * pivots.real).all())  # real to rounding


@needs_native
def test_strided_inputs(spy: _Spy, monkeypatch: pytest.MonkeyPatch) -> None:
    """Views with any strides are read as they lie (no copy first): slices, transposes,
    expanded rows."""
    big = _random(20, torch.complex128, 9)
    views = {
        "every-other": big[::2, ::2],
        "transposed": big.mT.conj(),
        "offset-block": big[3:11, 3:11],
        "expanded": torch.ones(1, 1, dtype=torch.float64).expand(6, 6),
        "column-major": _random(7, torch.float64, 1).mT.contiguous().mT,
    }
    for name, a in views.items():
        if a.is_conj():
            a = a.resolve_conj()
        before = len(spy.calls)
        w, v = spectra.eigh(a)
        assert spy.calls[before:] == [_native.OK], name
        pw, pv = _python_route(monkeypatch, spectra.eigh, a)
        assert torch.equal(w, pw) and torch.equal(v, pv), name


@needs_native
def test_refusals_go_the_python_route(spy: _Spy) -> None:
    """Not exactly Hermitian, NaN, Inf: the helper refuses, the full path names the
    problem (as without the helper)."""

    def rejected() -> None:
        assert spy.calls[-1] == _native.REJECTED

    assert_refusals(_random(5, torch.float64, 2), rejected)
    c = _random(4, torch.complex128, 2)
    c[1, 1] = c[1, 1] + 1e-3j  # a diagonal that is not real
    with pytest.raises(ValueError, match=r"(?i)hermitian"):
        spectra.eigh(c)


@needs_native
def test_within_tolerance_still_accepted(spy: _Spy, monkeypatch: pytest.MonkeyPatch) -> None:
    """Asymmetry within the tolerance: refused by the exact test, accepted by the full
    path, the same answer as without the helper."""
    a = _random(6, torch.float64, 5)
    a[0, 1] += 1e-14
    w, v = spectra.eigh(a)
    assert spy.calls[-1] == _native.REJECTED
    pw, pv = _python_route(monkeypatch, spectra.eigh, a)
    assert torch.equal(w, pw) and torch.equal(v, pv)


@needs_native
def test_unchecked_reads_the_lower_triangle(spy: _Spy, monkeypatch: pytest.MonkeyPatch) -> None:
    a = _random(6, torch.float64, 6)
    a[0, 3] += 5.0  # upper triangle: ignored unchecked, as by torch's eigh
    w, v = spectra.eigh(a, check=False)
    assert spy.calls[-1] == _native.OK
    pw, pv = _python_route(monkeypatch, spectra.eigh, a, check=False)
    assert torch.equal(w, pw) and torch.equal(v, pv)
    assert torch.equal(w, torch.linalg.eigh(a).eigenvalues)


@needs_native
def test_routes(spy: _Spy, monkeypatch: pytest.MonkeyPatch) -> None:
    """One matrix (tensor or NumPy, with or without k): the one-matrix call; a small
    batch: the batch call, bitwise the Python route; execution options that plan it as the
    default call: the same one-matrix call; n = 256 or options that change the plan
    (verification): the pipeline."""
    assert MODULE is not None
    batches: list[int] = []
    inner = MODULE.eigh_batch
    monkeypatch.setattr(MODULE, "eigh_batch", lambda *a: batches.append(a[1]) or inner(*a))
    a = _random(4, torch.float64, 1)
    spectra.eigh(a.numpy())
    spectra.eigh(a, k=2)
    assert spy.calls == [_native.OK, _native.OK] and batches == []
    stack = torch.stack([_random(6, torch.complex128, s) for s in range(5)])
    w, v = spectra.eigh(stack)
    assert batches == [5]
    pw, pv = _python_route(monkeypatch, spectra.eigh, stack)
    assert torch.equal(w, pw) and torch.equal(v, pv)
    assert torch.equal(spectra.eigvalsh(stack), _python_route(monkeypatch, spectra.eigvalsh, stack))
    spectra.eigh(a, workers=1, strategy="torch")  # options that plan it as the default call
    assert len(spy.calls) == 3 and batches == [5, 5]
    spectra.eigh(_random(256, torch.float64, 1))  # beyond the one-matrix route
    # through the pipeline, whose torch strategy runs the fused batch pass
    assert len(spy.calls) == 3 and batches == [5, 5, 1]
    spectra.eigh(a, verify=True)  # options that change the plan: the pipeline's own route
    assert len(spy.calls) == 3 and batches == [5, 5, 1]


@needs_native
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_batch_bitwise_the_python_route(
    dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches on the direct path, every matrix at an aligned and an unaligned offset (33
    float32 entries per row: 4,356 bytes a matrix), as the planned path solves them."""
    for n, b in ((3, 7), (8, 16), (33, 5), (40, 2)):
        x = torch.stack([_random(n, dtype, 10 * n + i) for i in range(b)])
        x[1] = torch.eye(n, dtype=dtype)
        assert spectra.plan(n, b, dtype).direct
        w, v = spectra.eigh(x)
        pw, pv = _python_route(monkeypatch, spectra.eigh, x)
        assert torch.equal(w, pw) and torch.equal(v, pv), (n, b)
        planned_w, planned_v = planned(spectra.eigh, x)  # the planned path itself
        assert torch.equal(w, planned_w) and torch.equal(v, planned_v), (n, b)
        one_w, one_v = spectra.eigh(x[b - 1])
        assert torch.equal(w[b - 1], one_w) and torch.equal(v[b - 1], one_v), (n, b)


@needs_native
def test_inference_mode(spy: _Spy) -> None:
    a = _random(5, torch.float32, 3)
    with torch.inference_mode():
        w, v = spectra.eigh(a)
    assert spy.calls == [_native.OK]
    assert w.is_inference() and v.is_inference()
    pw, pv = torch.linalg.eigh(a)
    assert torch.equal(w, pw) and torch.equal(v.abs(), pv.abs())


def _columns(dtype: torch.dtype) -> torch.Tensor:
    """Columns that reach every branch of the gauge: exact and near opposite-sign ties
    (within and just outside the tolerance), zero and one-entry columns, duplicates of
    the peak, negative peaks first and last."""
    tol = 1e-4 if dtype in (torch.float32, torch.complex64) else 1e-10
    real = torch.float32 if dtype in (torch.float32, torch.complex64) else torch.float64
    cols = [
        [0.5, -0.5, 0.1, 0.0],
        [-0.5, 0.5, 0.1, 0.0],
        [0.5, -0.5 * (1 + tol / 2), 0.2, 0.1],
        [-0.5 * (1 + tol / 2), 0.5, 0.2, 0.1],
        [0.5, -0.5 * (1 + 3 * tol), 0.2, 0.1],
        [0.0, -1.0, 0.0, 0.0],
        [0.3, -0.7, 0.7, -0.7],
        [-0.1, 0.2, -0.3, -0.9],
        [0.9, 0.1, -0.2, 0.3],
    ]
    if not dtype.is_complex:  # (a zero complex column takes the Python gauge's abs rule)
        cols.append([0.0, 0.0, 0.0, 0.0])
    x = torch.tensor(cols, dtype=real).mT.contiguous()  # (4 entries, m columns)
    if dtype.is_complex:
        g = torch.Generator().manual_seed(1)
        phase = torch.exp(1j * torch.rand(x.shape, generator=g, dtype=torch.float64) * 6)
        x = x.to(torch.complex128) * phase
    return x.to(dtype)


@needs_native
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gauge_alone_matches_the_torch_gauge(dtype: torch.dtype) -> None:
    assert MODULE is not None
    kind, _, tol, keep, keep2, low, high = _native._CONSTANTS[dtype]
    x = _columns(dtype)
    n, m = x.shape
    v = torch.empty_strided((n, m), (1, n), dtype=dtype)
    v.copy_(x)
    assert MODULE.gauge(kind, n, m, v.data_ptr(), tol, keep, keep2, low, high) == 1
    assert torch.equal(v, fix_gauge(x.clone()))


@needs_native
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_gauge_refuses_squares_out_of_range(dtype: torch.dtype) -> None:
    """Squared moduli that could underflow: left to the Python gauge (abs rule)."""
    assert MODULE is not None
    kind, _, tol, keep, keep2, low, high = _native._CONSTANTS[dtype]
    x = _columns(dtype) * (1e-20 if dtype == torch.complex64 else 1e-150)
    n, m = x.shape
    v = torch.empty_strided((n, m), (1, n), dtype=dtype)
    v.copy_(x)
    assert MODULE.gauge(kind, n, m, v.data_ptr(), tol, keep, keep2, low, high) == 0
    assert torch.equal(v, x)  # nothing written


@needs_native
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_gauge_refuses_nan(dtype: torch.dtype) -> None:
    assert MODULE is not None
    kind, _, tol, keep, keep2, low, high = _native._CONSTANTS[dtype]
    x = _columns(dtype)
    x[2, 3] = float("nan")
    n, m = x.shape
    v = torch.empty_strided((n, m), (1, n), dtype=dtype)
    v.copy_(x)
    assert MODULE.gauge(kind, n, m, v.data_ptr(), tol, keep, keep2, low, high) == 0


def test_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """``SPECTRA_NATIVE=0``: no helper, the Python route (same answers)."""
    monkeypatch.setenv("SPECTRA_NATIVE", "0")
    _native.forget_native()
    try:
        assert _native.native_module() is None
        a = _random(5, torch.float64, 8)
        w = spectra.eigh(a).eigenvalues
        assert torch.equal(w, torch.linalg.eigh(a).eigenvalues)
    finally:
        monkeypatch.undo()  # the caller's own SPECTRA_NATIVE (a run under =0 keeps it)
        _native.forget_native()
    assert (_native.native_module() is None) == (MODULE is None)


def _lapack_vectors(batch: int, n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """A batch of LAPACK eigenvectors (column-major) with exact and near ties planted."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(batch, n, n, dtype=dtype, generator=g)
    v = torch.linalg.eigh(a + a.mH).eigenvectors
    if n > 1:
        scale = (1 + 1j) / abs(1 + 1j) if dtype.is_complex else 1.0
        v[0] = torch.eye(n, dtype=dtype) * scale
        first = [1j] + [-1j] * (n - 1) if dtype.is_complex else [1.0] + [-1.0] * (n - 1)
        v[1, :, 0] = torch.tensor(first, dtype=dtype) / n**0.5
        x = torch.randn(n, dtype=dtype, generator=g)
        v[2, :, 0] = x / x.abs() / n**0.5
    return v


@needs_native
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", [1, 2, 3, 8, 16, 33, 100])
def test_batch_gauge_matches_the_torch_gauge(dtype: torch.dtype, n: int) -> None:
    """``fix_gauge_`` on a batch's column-major block: the compiled pass, the torch
    gauge's bits; a sliced (not column-major) block is left to the Python gauge."""
    v = _lapack_vectors(64, n, dtype, n)
    assert v.mT.is_contiguous()
    want = fix_gauge(v.clone())
    got = v.clone()
    assert _native.native_gauge_(got)
    assert torch.equal(got, want)
    window = v[5].clone()[:, : max(1, n // 2)]  # one matrix's first columns: column-major
    assert _native.native_gauge_(window) and torch.equal(window, want[5, :, : window.shape[-1]])
    rows = v.clone().contiguous()  # row-major: not the compiled pass's layout
    assert n == 1 or not _native.native_gauge_(rows)
    assert not _native.native_gauge_(v.clone().requires_grad_())


@needs_native
def test_a_failed_first_check_is_decided_later(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first check raising (a dispatch mode faking tensors, say): no helper for that
    call, and the decision is taken again at the next."""

    def fails(module: object) -> bool:
        raise RuntimeError("no storage")

    _native.forget_native()
    try:
        with monkeypatch.context() as m:
            m.setattr(_native, "_agrees", fails)
            assert _native.native_module() is None
            assert _native._loaded == []
        assert _native.native_module() is MODULE
    finally:
        _native.forget_native()


@needs_native
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_exactly_hermitian_matches_torch_equal(dtype: torch.dtype) -> None:
    """The compiled exact test against ``torch.equal(a, a.mH)`` on blocks with one
    perturbed entry, NaN, a symmetric Inf, a non-real diagonal, views and empty blocks."""
    from spectra.core._pipeline._checks import exactly_hermitian

    g = torch.Generator().manual_seed(3)
    base = torch.randn(6, 5, 5, generator=g, dtype=torch.float64).to(dtype)
    base = _hermitian(base)
    variants = {"hermitian": base.clone()}
    bumped = base.clone()
    bumped[4, 3, 1] += 1e-3
    variants["one entry"] = bumped
    nan = base.clone()
    nan[2, 1, 1] = float("nan")
    variants["nan"] = nan
    inf = base.clone()
    inf[1, 0, 2] = inf[1, 2, 0] = float("inf")
    variants["symmetric inf"] = inf
    variants["every other"] = _hermitian(torch.randn(10, 10, dtype=torch.float64)).to(dtype)[
        ::2, ::2
    ]
    variants["batch view"] = base[1:4]
    variants["empty"] = base[:0]
    variants["one"] = base[0]
    if dtype.is_complex:
        diag = base.clone()
        diag[3, 2, 2] += 1e-6j
        variants["non-real diagonal"] = diag
    for name, a in variants.items():
        assert _native.native_exactly_hermitian(a) is not None, name
        assert exactly_hermitian(a) == bool(torch.equal(a, a.mH)), name
    if dtype.is_complex:  # a lazy conjugate: torch's test
        assert _native.native_exactly_hermitian(base.conj()) is None
    assert exactly_hermitian(base.conj()) == bool(torch.equal(base.conj(), base.conj().mH))


@needs_native
def test_batch_refusal_names_the_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    """A NaN in matrix 3 of a direct batch: the batch call stops there, the full path
    names index 3."""
    assert MODULE is not None
    seen: list[tuple[int, int]] = []
    inner = MODULE.eigh_batch

    def spy(*args: object) -> tuple[int, int]:
        status, index = inner(*args)
        seen.append((status, index))
        return status, index

    monkeypatch.setattr(MODULE, "eigh_batch", spy)
    x = torch.stack([_random(5, torch.float64, i) for i in range(6)])
    x[3, 2, 1] = x[3, 1, 2] = float("nan")
    with pytest.raises(ValueError, match=r"\(3,\)|\b3\b"):
        spectra.eigh(x)
    assert seen[0] == (_native.REJECTED, 3)


@needs_native
def test_column_counts_match_the_numba_counts() -> None:
    """The symbolic Cholesky counts of the sparse factor's fill estimate: the compiled
    loops against numba's (``_sparse/_symbolic.py``) and against SuperLU's real fill."""
    import networkx as nx
    import scipy.sparse as sp
    from scipy.sparse.linalg import splu

    from spectra.core._sparse._symbolic import column_counts

    graphs = {
        "geometric": nx.random_geometric_graph(800, 0.06, seed=1),
        "barabasi-albert": nx.barabasi_albert_graph(500, 3, seed=2),
        "grid": nx.grid_2d_graph(20, 25),
        "disconnected": nx.disjoint_union(nx.path_graph(30), nx.star_graph(20)),
        "one node": nx.empty_graph(1),
    }
    for name, g in graphs.items():
        pattern = sp.csr_matrix(nx.to_scipy_sparse_array(g) + sp.eye(g.number_of_nodes()))
        n = pattern.shape[0]
        got = _native.native_column_counts(pattern.indptr, pattern.indices, n)
        assert np.array_equal(got, column_counts(pattern)), name
        laplacian = sp.csc_matrix(sp.diags(np.asarray(pattern.sum(1)).ravel() + 1.0) - pattern)
        lu = splu(
            laplacian, permc_spec="NATURAL", diag_pivot_thresh=0.0, options={"SymmetricMode": True}
        )
        assert int(got.sum()) == lu.L.nnz, name  # what SuperLU stores, in this order
    assert _native.native_column_counts(np.zeros(1), np.zeros(0), 0).shape == (0,)


@needs_native
def test_a_few_matrices_take_the_entry_shortcut(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain (B, n, n) tensor the plan runs directly: the compiled batch straight from
    ``eigh`` (no request built), the same bits as the normal route; its options' errors
    stay."""
    from spectra.core import _request

    assert MODULE is not None
    built: list[int] = []
    real_build = _request.Request.build
    monkeypatch.setattr(
        _request.Request, "build", staticmethod(lambda *a: built.append(1) or real_build(*a))
    )
    x = torch.stack([_random(8, torch.float64, s) for s in range(4)])
    w, v = spectra.eigh(x)
    assert built == []
    values = spectra.eigvalsh(x)
    assert built == []
    with monkeypatch.context() as m:
        m.setattr(_native, "native_module", lambda: None)
        pw, pv = spectra.eigh(x)
        pvalues = spectra.eigvalsh(x)
    assert built == [1, 1]  # the Python route builds its request
    assert torch.equal(w, pw) and torch.equal(v, pv) and torch.equal(values, pvalues)
    with pytest.raises(spectra.core.domain.InputError, match="symmetry_tol"):
        spectra.eigh(x, symmetry_tol=-1.0)


@needs_native
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_exact_and_finite_in_one_pass(dtype: torch.dtype) -> None:
    """``finite=True``: a symmetric Inf fails the fused test, and ``quick_check``'s
    finite mode still refuses it (the fused pass only shortens the accepted case)."""
    from spectra.core._pipeline._checks import InputRejected, quick_check

    x = torch.stack([_random(4, dtype, s) for s in range(3)])
    assert _native.native_exactly_hermitian(x, finite=True) is True
    quick_check(x, finite=True)
    x[2, 0, 1] = x[2, 1, 0] = float("inf")
    assert _native.native_exactly_hermitian(x) is True
    assert _native.native_exactly_hermitian(x, finite=True) is False
    with pytest.raises(InputRejected):
        quick_check(x, finite=True)
    quick_check(x)  # without finite: exact, accepted here (the solve's result decides)


#: column lengths around the compiled passes' vector widths (4 doubles, 8 floats, 2 or 4
#: complex entries per vector): whole vectors only, vectors and a tail, a tail only
LANE_SIZES = [1, 3, 4, 5, 7, 8, 9, 17, 64, 67]


@needs_native
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", LANE_SIZES)
def test_gauge_lanes_and_tails(dtype: torch.dtype, n: int) -> None:
    """The vectorized gauge against the torch gauge with the peak (or an opposite-sign
    near-tie of it) in every position: first, inside a vector, last, in the tail; and a
    NaN or Inf at each of those positions refused (nothing decided there, the Python gauge
    runs)."""
    assert MODULE is not None
    kind, _, tol, keep, keep2, low, high = _native._CONSTANTS[dtype]
    g = torch.Generator().manual_seed(n)
    real = torch.float32 if dtype in (torch.float32, torch.complex64) else torch.float64
    cols = []
    for pos in sorted({0, n // 2, n - 1}):
        x = 0.1 * torch.rand(n, generator=g, dtype=torch.float64) - 0.05
        x[pos] = -0.9
        cols.append(x.clone())
        if n > 1:  # an opposite-sign near-tie: the first near-peak entry decides
            y = x.clone()
            y[(pos + 1) % n] = 0.9 * (1 - float(tol) / 4)
            cols.append(y)
    x = torch.stack(cols, 1).to(real)
    if dtype.is_complex:
        phase = torch.exp(1j * torch.rand(x.shape, generator=g, dtype=torch.float64) * 6)
        x = (x.to(torch.float64) * phase).to(dtype)
    m = x.shape[1]
    v = torch.empty_strided((n, m), (1, n), dtype=dtype)
    v.copy_(x)
    assert MODULE.gauge(kind, n, m, v.data_ptr(), tol, keep, keep2, low, high) == 1
    assert torch.equal(v, fix_gauge(x.clone()))
    for bad in (float("nan"), float("inf"), -float("inf")):
        for pos in sorted({0, n // 2, n - 1}):
            y = x.clone()
            y[pos, -1] = bad
            v = torch.empty_strided((n, m), (1, n), dtype=dtype)
            v.copy_(y)
            assert MODULE.gauge(kind, n, m, v.data_ptr(), tol, keep, keep2, low, high) == 0


@needs_native
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", LANE_SIZES)
def test_exactly_hermitian_every_position(dtype: torch.dtype, n: int) -> None:
    """The branch-free exact test against ``torch.equal(a, a.mH)`` with one entry off (or
    NaN, or a symmetric Inf under ``finite``) at the first, a middle and the last position
    of a row, in C order and transposed (another stride pattern)."""
    a = _random(n, dtype, n)
    assert _native.native_exactly_hermitian(a, finite=True) is True
    assert _native.native_exactly_hermitian(a.mT, finite=True) is torch.equal(a.mT, a.conj())
    spots = sorted({(i, j) for i in {0, n // 2, n - 1} for j in {0, i // 2, i}})
    for i, j in spots:
        for value in (1e-3, float("nan")):
            b = a.clone()
            b[i, j] += value
            want = torch.equal(b, b.mH)
            assert _native.native_exactly_hermitian(b) is want, (i, j, value)
            assert _native.native_exactly_hermitian(b.mT.contiguous().mT) is want
        inf = a.clone()
        inf[i, j] = inf[j, i] = float("inf")
        assert _native.native_exactly_hermitian(inf) is torch.equal(inf, inf.mH)
        assert _native.native_exactly_hermitian(inf, finite=True) is False
