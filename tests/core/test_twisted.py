"""The ``twisted`` strategy (OpenBLAS ?sytrd/?ormtr around numba's tridiagonal lanes)
against SciPy, on random and adversarial matrices; its fallback to the divide and conquer;
lanes that never mix; and where the planner takes it."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra
from spectra.core._solvers._kernels import _ready
from spectra.core._solvers._twisted_eigh import available, twisted_eigh
from spectra.core._strategies import _twisted

from .helpers import pin_cpu_vendor, random_hermitian

pytestmark = pytest.mark.skipif(not available(), reason="needs numba and SciPy's OpenBLAS")

EPS = {
    torch.float32: float(np.finfo(np.float32).eps),
    torch.float64: float(np.finfo(np.float64).eps),
    torch.complex64: float(np.finfo(np.float32).eps),
    torch.complex128: float(np.finfo(np.float64).eps),
}
DTYPES = [torch.float64, torch.float32, torch.complex128, torch.complex64]


def _assert_eigenpairs(
    a: torch.Tensor, w: torch.Tensor, v: torch.Tensor, slack: float = 1.0
) -> None:
    """Ascending values within LAPACK's error of SciPy's, residuals and orthogonality at
    LAPACK's own scale (``n eps ||A||``, ``n eps``): not a loose tolerance."""
    n = a.shape[-1]
    eps = EPS[a.dtype]
    for i in range(a.shape[0]):
        x = a[i].to(torch.complex128 if a.is_complex() else torch.float64).numpy()
        ref = scipy.linalg.eigh(x, eigvals_only=True)
        scale = max(float(np.abs(ref).max()), np.finfo(np.float64).tiny)
        got_w = w[i].double().numpy()
        got_v = v[i].to(torch.complex128 if a.is_complex() else torch.float64).numpy()
        assert np.all(np.diff(got_w) >= 0), i
        assert np.abs(got_w - ref).max() <= slack * 4 * n * eps * scale, i
        residual = np.abs(x @ got_v - got_v * got_w).max() / scale
        orth = np.abs(got_v.conj().T @ got_v - np.eye(n)).max()
        assert residual <= slack * 2 * n * eps, (i, residual / eps)
        assert orth <= slack * 2 * n * eps, (i, orth / eps)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", [1, 2, 5, 12, 14, 24, 33, 64, 130])
def test_random_batches_against_scipy(dtype, n):
    a = random_hermitian((11,), n, dtype, seed=n)
    w, v = twisted_eigh(a, True)
    assert w.dtype == dtype.to_real() and v.dtype == dtype and v.shape == (11, n, n)
    _assert_eigenpairs(a, w, v, slack=1.0 if EPS[dtype] < 1e-10 else 4.0)
    values, none = twisted_eigh(a, False)
    assert none is None
    wide = a.to(torch.complex128 if a.is_complex() else torch.float64).numpy()
    ref = np.stack([scipy.linalg.eigh(x, eigvals_only=True) for x in wide])
    assert np.abs(values.double().numpy() - ref).max() <= 4 * n * EPS[dtype] * np.abs(ref).max()


def _with_spectrum(values, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    n = len(values)
    q, _ = torch.linalg.qr(torch.randn(n, n, dtype=torch.float64, generator=g))
    return (q * torch.tensor(values, dtype=torch.float64)) @ q.T


def _adversarial() -> dict[str, torch.Tensor]:
    n = 40
    wilkinson = np.diag(np.abs(np.arange(-10, 11)).astype(float))
    wilkinson += np.diag(np.ones(20), 1) + np.diag(np.ones(20), -1)
    graded = np.diag(10.0 ** -np.arange(24.0)) + np.diag(10.0 ** -np.arange(0.5, 23.5), 1)
    rng = np.random.default_rng(3)
    big = rng.standard_normal((60, 60))
    return {
        "degenerate": _with_spectrum(np.repeat([1.0, 2.0, 3.0, 4.0], n // 4), 1),
        "clustered": _with_spectrum(1.0 + 1e-9 * np.arange(n), 2),
        "one distinct": _with_spectrum(np.r_[np.ones(n - 1), 2.0], 3),
        "wilkinson W21+": torch.from_numpy(wilkinson),
        "graded": torch.from_numpy(graded + np.triu(graded, 1).T - np.diag(np.diag(graded))),
        "zero": torch.zeros(n, n, dtype=torch.float64),
        "identity": torch.eye(n, dtype=torch.float64),
        "tridiagonal already": torch.from_numpy(
            np.diag(np.arange(n, dtype=float))
            + np.diag(np.full(n - 1, 0.5), 1)
            + np.diag(np.full(n - 1, 0.5), -1)
        ),
        "huge": torch.from_numpy((big + big.T) * 1e150),
        "tiny": torch.from_numpy((big + big.T) * 1e-150),
    }


def _small_adversarial(n: int) -> dict[str, torch.Tensor]:
    """The adversarial spectra at the smallest sizes the planner gives this strategy
    (float32 from 24, complex64 from 12, complex128 from 14)."""
    rng = np.random.default_rng(n)
    big = rng.standard_normal((n, n))
    return {
        "degenerate": _with_spectrum(np.repeat([1.0, 2.0], n // 2), 1),
        "clustered": _with_spectrum(1.0 + 1e-9 * np.arange(n), 2),
        "one distinct": _with_spectrum(np.r_[np.ones(n - 1), 2.0], 3),
        "zero": torch.zeros(n, n, dtype=torch.float64),
        "identity": torch.eye(n, dtype=torch.float64),
        "huge": torch.from_numpy((big + big.T) * 1e150),
        "tiny": torch.from_numpy((big + big.T) * 1e-150),
    }


def _as_dtype(a: torch.Tensor, name: str, dtype: torch.dtype) -> torch.Tensor:
    """``a`` (float64) in ``dtype``: huge and tiny moved into single precision's range,
    complex ones made Hermitian with the same eigenvalues by a diagonal phase."""
    if name in ("huge", "tiny") and dtype in (torch.float32, torch.complex64):
        a = a * (1e-120 if name == "huge" else 1e120)  # 1e30 / 1e-30: within float32's range
    if dtype.is_complex:
        phase = torch.exp(1j * torch.linspace(0, 3, a.shape[-1], dtype=torch.float64))
        a = phase[:, None] * a.to(torch.complex128) * phase.conj()[None, :]
    return a.to(dtype)


@pytest.mark.parametrize(
    ("n", "dtype"),
    [(24, torch.float64), (24, torch.float32), (12, torch.complex64), (14, torch.complex128)],
)
@pytest.mark.parametrize("name", list(_small_adversarial(12)))
def test_adversarial_matrices_at_the_smallest_claimed_sizes(name, n, dtype):
    a = _as_dtype(_small_adversarial(n)[name], name, dtype)[None]
    w, v = twisted_eigh(a, True)
    _assert_eigenpairs(a, w, v, slack=1.0 if EPS[dtype] < 1e-10 else 4.0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(_adversarial()))
def test_adversarial_matrices_against_scipy(name, dtype):
    a = _as_dtype(_adversarial()[name], name, dtype)[None]
    w, v = twisted_eigh(a, True)
    _assert_eigenpairs(a, w, v, slack=1.0 if EPS[dtype] < 1e-10 else 4.0)


def test_single_precision_vectors_of_close_eigenvalues_above_the_gap():
    """float32/complex64 skip the Rayleigh step and the Loewdin correction: a pair just
    farther apart than ``GAP * ||T||`` (not flagged) still gives vectors orthogonal and
    accurate far beyond single precision (float64's ``eps / gap``)."""
    from spectra.core._solvers._kernels._numba_twisted import GAP, tridiagonal_eigh

    n = 20
    values = np.r_[np.linspace(-1.0, 0.5, n - 2), 0.5 + 3 * GAP, 0.9]
    q, _ = np.linalg.qr(np.random.default_rng(5).standard_normal((n, n)))
    t = (q * values) @ q.T
    h = scipy.linalg.hessenberg(t)
    d, e = np.diag(h)[None].copy(), np.r_[np.diag(h, -1), 0.0][None].copy()
    for single in (True, False):
        w, z = np.empty((1, n)), np.empty((1, n, n))
        failed = tridiagonal_eigh(d, e, w, z, single)
        assert failed.tolist() == [False]
        tt = np.diag(d[0]) + np.diag(e[0, :-1], 1) + np.diag(e[0, :-1], -1)
        orth = np.abs(z[0] @ z[0].T - np.eye(n)).max()
        residual = np.abs(tt @ z[0].T - z[0].T * w[0]).max()
        assert residual <= 4 * n * EPS[torch.float64], single
        assert orth <= (1e-8 if single else 2 * n * EPS[torch.float64]), (single, orth)


def test_degenerate_and_nearly_degenerate_lanes_go_to_the_divide_and_conquer():
    """The kernel flags a lane whose eigenvalues are within ``GAP * ||T||`` (its vectors
    would not be orthogonal): exactly those lanes, and its neighbours keep their own."""
    from spectra.core._solvers._kernels._numba_twisted import tridiagonal_eigh

    n = 12
    d = np.tile(np.arange(1.0, n + 1), (4, 1))
    e = np.full((4, n), 0.5)
    d[1] = 2.0  # constant diagonal, e = 0: T = 2 I, every eigenvalue repeated
    e[1] = 0.0
    e[2, 5] = 0.0  # two blocks: eigenvalues 1..6 and 7..12 (distinct: not flagged)
    d[3, 6:] = d[3, :6]  # the two blocks of lane 3 are the same matrix: repeated values
    e[3, 5] = 0.0
    w, z = np.empty((4, n)), np.empty((4, n, n))
    failed = tridiagonal_eigh(d, e, w, z)
    assert failed.tolist() == [False, True, False, True]
    for lane in (0, 2):  # the unflagged lanes' vectors are eigenvectors of their T
        t = np.diag(d[lane]) + np.diag(e[lane, : n - 1], 1) + np.diag(e[lane, : n - 1], -1)
        assert np.abs(t @ z[lane].T - z[lane].T * w[lane]).max() <= 2 * n * EPS[torch.float64] * 4
        assert np.abs(z[lane] @ z[lane].T - np.eye(n)).max() <= 2 * n * EPS[torch.float64]
    # the whole solve answers the flagged lanes through dstedc
    a = torch.stack([_adversarial()["degenerate"], _adversarial()["clustered"]])
    w2, v2 = twisted_eigh(a, True)
    _assert_eigenpairs(a, w2, v2)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_matrix_has_the_same_bits_alone_and_anywhere_in_a_batch(dtype):
    """Lanes never mix (masked selects): a matrix's bits do not depend on its neighbours,
    its lane or its block."""
    a = random_hermitian((19,), 70, dtype, seed=4)
    w, v = twisted_eigh(a, True)
    for i in (0, 7, 8, 18):
        wi, vi = twisted_eigh(a[i : i + 1], True)
        assert torch.equal(wi[0], w[i]) and torch.equal(vi[0], v[i]), i
    shuffled = torch.flip(a, [0])
    ws, vs = twisted_eigh(shuffled, True)
    assert torch.equal(torch.flip(ws, [0]), w) and torch.equal(torch.flip(vs, [0]), v)
    for kw in ({"workers": 1}, {"workers": 2}, {"chunk_size": 3}):
        got = spectra.eigh(a, strategy="twisted", **kw)
        # the executor's gauge on top of the same bits: equal across splits
        ref = spectra.eigh(a, strategy="twisted")
        assert torch.equal(got.eigenvalues, ref.eigenvalues) and torch.equal(
            got.eigenvectors, ref.eigenvectors
        ), kw


def test_outputs_of_any_layout_and_a_failure_named_by_its_batch_element():
    from spectra.core._solvers._twisted_eigh import twisted_eigh_into

    a = random_hermitian((3,), 20, torch.float64, seed=5)
    w = torch.empty(20, 3, dtype=torch.float64).T  # not contiguous
    v = torch.empty(3, 20, 20, dtype=torch.float64)  # row-major, not LAPACK's layout
    twisted_eigh_into(a, w, v)
    ref_w, ref_v = twisted_eigh(a, True)
    assert torch.equal(w, ref_w) and torch.equal(v, ref_v)
    a[1, 4, 2] = a[1, 2, 4] = float("nan")  # (spectra.eigh refuses it before any solve)
    with pytest.raises(RuntimeError, match=r"Batch element 1\).*dstedc"):
        twisted_eigh(a, True)


def test_empty_batches_and_the_lower_triangle_of_complex_input():
    w, v = twisted_eigh(torch.empty(0, 5, 5, dtype=torch.float64), True)
    assert w.shape == (0, 5) and v.shape == (0, 5, 5)
    w, v = twisted_eigh(torch.empty(2, 0, 0, dtype=torch.complex128), True)
    assert w.shape == (2, 0) and v.shape == (2, 0, 0)
    a = random_hermitian((3,), 9, torch.complex128, seed=6)
    messy = a.clone()
    messy[:, 0, 4] += 1.0 + 2.0j  # the upper triangle is never read, as torch's LAPACK
    w, v = twisted_eigh(messy, True)
    _assert_eigenpairs(a, w, v)
    assert torch.equal(w, twisted_eigh(a, True)[0])


def test_the_planner_takes_it_off_intel_where_measured(monkeypatch):
    monkeypatch.setenv(_ready.ENV, "eager")  # the kernels' readiness aside
    pin_cpu_vendor(monkeypatch, "AuthenticAMD")
    monkeypatch.setitem(spectra.core.STRATEGIES, "twisted", spectra.core.STRATEGIES["twisted"])
    batch = _twisted.MIN_BATCH
    p = spectra.plan(128, 64, torch.float64)
    assert p.strategy == "twisted" and p.workers == 2, str(p)
    assert "twisted factorizations" in "\n".join(p.reasons)
    for dtype, (lo, hi) in _twisted.RANGES.items():
        least = _twisted.min_batch(lo, dtype)
        assert spectra.plan(lo, least, dtype).strategy == "twisted", dtype
        assert spectra.plan(hi - 1, batch, dtype).strategy == "twisted", dtype
        assert spectra.plan(lo, least - 1, dtype).strategy != "twisted", dtype
        assert spectra.plan(lo - 1, 4096, dtype).strategy != "twisted", dtype
        assert spectra.plan(lo, 4096, dtype, vectors=False).strategy != "twisted", dtype
    half = batch // 2
    for dtype, n in _twisted.HALF_BATCH_FROM.items():  # larger sizes: from half the batch
        assert spectra.plan(n, half, dtype).strategy == "twisted", dtype
        assert spectra.plan(n, half - 1, dtype).strategy != "twisted", dtype
        below = _twisted.HALF_BATCH_BELOW.get(dtype, 0)
        taken = spectra.plan(n - 1, half, dtype).strategy == "twisted"
        assert taken == (n - 1 < below), dtype  # the sizes just below: unless claimed there
    for dtype, n in _twisted.HALF_BATCH_BELOW.items():  # and smaller sizes: measured
        lo = _twisted.LANE_KERNEL_SIZES_BELOW[dtype]
        assert _twisted.min_batch(lo, dtype) == _twisted.min_batch(n - 1, dtype) == half
        assert spectra.plan(lo, half, dtype).strategy == "twisted", dtype
        assert spectra.plan(n - 1, half, dtype).strategy == "twisted", dtype
        assert spectra.plan(n - 1, half - 1, dtype).strategy != "twisted", dtype
        if n < _twisted.HALF_BATCH_FROM[dtype]:
            assert spectra.plan(n, half, dtype).strategy != "twisted", dtype
            assert spectra.plan(n, batch, dtype).strategy == "twisted", dtype
    assert spectra.plan(600, 16, torch.float64).strategy == "openblas"  # its claim beyond
    assert spectra.plan(128, 64, torch.float32).strategy == "twisted"  # the compiled lanes
    a = random_hermitian((batch,), 50, torch.complex128, seed=7)
    assert spectra.plan(50, batch, torch.complex128).strategy == "twisted"
    w, v = spectra.eigh(a)
    assert torch.equal(w, spectra.eigh(a, strategy="twisted").eigenvalues)
    _assert_eigenpairs(a, w, v)
    pin_cpu_vendor(monkeypatch, "GenuineIntel")
    assert spectra.plan(128, 64, torch.float64).strategy == "torch"
    assert spectra.plan(50, 64, torch.complex128).strategy == "torch"


def test_the_fan_out_decision_uses_its_own_cost(monkeypatch):
    """The planner's one-thread estimate of a ``twisted`` batch is the strategy's measured
    model (``twisted_seconds``), not LAPACK's: complex64 16 x 96 (2.8 ms by it, 4.3 ms by
    LAPACK's model) stays in the caller's thread; twice the batch fans out."""
    monkeypatch.setenv(_ready.ENV, "eager")
    pin_cpu_vendor(monkeypatch, "AuthenticAMD")
    monkeypatch.setitem(spectra.core.STRATEGIES, "twisted", spectra.core.STRATEGIES["twisted"])
    from spectra.core._pipeline._cost import matrix_seconds
    from spectra.core._pipeline._plan import _MIN_PARALLEL_SECONDS

    cpu = torch.device("cpu")
    strategy = spectra.core.STRATEGIES["twisted"]
    for dtype in DTYPES:
        for n in (16, 64, 256):
            assert strategy.matrix_seconds(n, dtype, cpu) == _twisted.twisted_seconds(n, dtype)
    each = _twisted.twisted_seconds(16, torch.complex64)
    assert 96 * each < _MIN_PARALLEL_SECONDS <= 96 * matrix_seconds(16, torch.complex64, cpu)
    one = spectra.plan(16, 96, torch.complex64)
    assert (one.strategy, one.workers) == ("twisted", 1), str(one)
    two = spectra.plan(16, 192, torch.complex64)
    assert (two.strategy, two.workers) == ("twisted", 2), str(two)


def test_its_claims_start_where_the_lane_kernels_stop(monkeypatch):
    """No size between the lane kernels' claims and this one is left to MKL's ``?syevd``,
    which the thread fan-out runs too (0.94-1.0x it there, measured)."""
    monkeypatch.setenv(_ready.ENV, "eager")
    pin_cpu_vendor(monkeypatch, "AuthenticAMD")
    for dtype in (torch.float64, torch.complex128, torch.float32, torch.complex64):
        lo, hi = _twisted.RANGES[dtype]
        below = spectra.plan(lo - 1, 4096, dtype).strategy
        assert below.startswith("numba-"), (dtype, below)
        # where it yields to the lane kernel, the lane kernel's sizes are its up to its end
        first = _twisted.LANE_KERNEL_SIZES_BELOW[dtype] if dtype in _twisted.YIELDS_BELOW else lo
        assert spectra.plan(first - 1, 4096, dtype).strategy != "torch", dtype
        assert spectra.plan(first, 4096, dtype).strategy == "twisted", dtype
        assert lo < hi


def test_below_the_old_ends_it_claims_from_its_measured_batch(monkeypatch):
    """Below ``LANE_KERNEL_SIZES_BELOW`` the claim starts at the batch measured for each
    size (``SMALL_BATCHES``): a smaller batch keeps the direct path's LAPACK; a batch the
    lane kernel claims moves from ``numba-ql`` to this strategy (ranked above it), except
    for float64, which yields to the lane kernel from its batch (``YIELDS_BELOW``)."""
    monkeypatch.setenv(_ready.ENV, "eager")
    pin_cpu_vendor(monkeypatch, "AuthenticAMD")
    monkeypatch.setitem(spectra.core.STRATEGIES, "twisted", spectra.core.STRATEGIES["twisted"])
    from spectra.core._solvers._kernels._choice import lane_min_batch

    for dtype, below in _twisted.LANE_KERNEL_SIZES_BELOW.items():
        steps = _twisted.SMALL_BATCHES[dtype]
        assert steps[0][0] == _twisted.RANGES[dtype][0] < below, dtype
        for i, (first, least) in enumerate(steps):
            last = steps[i + 1][0] - 1 if i + 1 < len(steps) else below - 1
            for n in (first, last):
                assert _twisted.min_batch(n, dtype) == least, (dtype, n)
                assert spectra.plan(n, least, dtype).strategy == "twisted", (dtype, n)
                assert spectra.plan(n, least - 1, dtype).strategy == "torch", (dtype, n)
                lanes = lane_min_batch(n, dtype.is_complex, True)
                at_lanes = spectra.plan(n, max(lanes, least), dtype).strategy
                expected = "numba-ql" if dtype in _twisted.YIELDS_BELOW else "twisted"
                assert at_lanes == expected, (dtype, n, at_lanes)
                if dtype in _twisted.YIELDS_BELOW:  # up to the lane kernel's batch
                    assert spectra.plan(n, lanes - 1, dtype).strategy == "twisted", (dtype, n)
                with_ql = spectra.plan(n, lanes, dtype, strategy="numba-ql")
                assert with_ql.strategy == "numba-ql"  # the kernel it replaces still runs forced
        assert _twisted.min_batch(below, dtype) in (_twisted.MIN_BATCH, _twisted.MIN_BATCH // 2)
    assert spectra.plan(32, 4096, torch.float64).strategy == "numba-ql"  # float64: a tie


@pytest.mark.parametrize(
    ("n", "dtype"),
    [
        (33, torch.float64),
        (24, torch.float64),
        (21, torch.complex128),
        (33, torch.float32),
        (24, torch.complex64),
        (14, torch.complex128),
        (24, torch.float32),
        (12, torch.complex64),
    ],
)
def test_below_threaded_sizes_one_matrix_alone_agrees_with_a_member_to_rounding(
    monkeypatch, n, dtype
):
    """There one matrix alone runs MKL on one kernel thread and a batch this strategy
    claims (from 8 to 96 matrices there, ``min_batch``) this kernel: the same eigenpairs to
    rounding (docs/guarantees.md), bitwise within the batch at any position."""
    monkeypatch.setenv(_ready.ENV, "eager")
    pin_cpu_vendor(monkeypatch, "AuthenticAMD")
    a = random_hermitian((_twisted.min_batch(n, dtype),), n, dtype, seed=n)
    assert spectra.plan(n, len(a), dtype).strategy == "twisted"
    assert spectra.plan(n, 1, dtype).strategy != "twisted"
    w, v = spectra.eigh(a)
    w3, v3 = spectra.eigh(a[3])
    assert torch.equal(spectra.eigh(a[2:5]).eigenvalues[1], w3)  # 3 matrices: MKL too
    scale, eps = float(w3.abs().max()), EPS[dtype]
    assert float((w[3] - w3).abs().max()) <= 50 * n * eps * scale
    # the same gauge: columns agree to rounding, not up to a sign or phase
    assert float((v[3] - v3).abs().max()) <= 1e5 * eps
    wb, vb = spectra.eigh(torch.cat([a[5:], a[:5]]))
    assert torch.equal(wb[-2], w[3]) and torch.equal(vb[-2], v[3])
    _assert_eigenpairs(a, w, v)


@pytest.mark.parametrize(
    ("n", "dtype", "batch"), [(200, torch.complex128, 20), (96, torch.float64, 60)]
)
def test_the_executor_hands_it_whole_lane_blocks(monkeypatch, n, dtype, batch):
    """Its CPU sub-blocks are whole blocks of eight (``Runs.unit``): 2 MiB of 200 x 200
    complex128 are 3 matrices, of 96 x 96 float64 28; a part of a lane block pays for all
    its lanes."""
    import dataclasses

    from spectra.core import STRATEGIES
    from spectra.core._solvers._twisted_eigh import twisted_eigh_fused, twisted_eigh_into

    s = STRATEGIES["twisted"]
    assert s.runs.unit == 8
    sizes: list[int] = []

    def spy(a, w, v):
        sizes.append(a.shape[0])
        twisted_eigh_into(a, w, v)

    def fused_spy(a, w, v, check):
        done = twisted_eigh_fused(a, w, v, check)
        sizes.append(a.shape[0] if done else 0)  # declined: its into runs the block
        return done

    abilities = dataclasses.replace(s.abilities, into=spy, fused=fused_spy)
    monkeypatch.setitem(STRATEGIES, "twisted", dataclasses.replace(s, abilities=abilities))
    a = random_hermitian((batch,), n, dtype, seed=1)
    w, v = spectra.eigh(a, strategy="twisted", workers=1)
    sizes = [k for k in sizes if k]
    assert sum(sizes) == batch and all(k % 8 == 0 for k in sizes[:-1]), sizes
    _assert_eigenpairs(a[:3], w[:3], v[:3])


def test_every_dtype_it_claims_is_warmed_with_its_driver():
    """``spectra compile`` and the background compile fill numba's cache for each dtype
    group; a claimed dtype whose group missed the driver would compile inside a call."""
    from spectra.core._solvers._kernels import _numba_twisted, _warm

    for dtype in _twisted.RANGES:
        runs = _warm._complex(dtype) if dtype.is_complex else _warm._real(dtype)
        kernels = [kernel for kernel, _ in runs]
        assert _numba_twisted.solve_blocks in kernels, dtype
        assert _numba_twisted.tridiagonal_eigh in kernels, dtype


def test_the_scratch_is_the_size_the_kernel_asks_for():
    from spectra.core._solvers._kernels._numba_twisted import scratch_size
    from spectra.core._solvers._twisted_eigh import _Scratch

    for n in (1, 7, 64):
        assert _Scratch(n, torch.float64).ws.size == scratch_size(n)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex64])
def test_the_first_call_of_a_process_warns_nothing(dtype, monkeypatch):
    """The kernel takes the LAPACK routines as integer addresses (numba's first-class
    function arguments warned that they are experimental, at the caller's first batched
    call): the first call of a process (``_ENTRIES`` emptied: typed again) prints nothing,
    and its entry is kept."""
    import warnings

    from spectra.core._solvers import _twisted_eigh

    monkeypatch.setattr(_twisted_eigh, "_ENTRIES", {})
    a = random_hermitian((9,), 40, dtype, seed=5)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        w, v = twisted_eigh(a, True)
    assert [str(x.message) for x in seen] == []
    assert len(_twisted_eigh._ENTRIES) == 1  # the entry was found again, and kept
    _assert_eigenpairs(a, w, v)
