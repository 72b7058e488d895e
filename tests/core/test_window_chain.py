"""The partial dense solve's chain (``?sytrd``, the compiled bisection, ``?stein``,
``?ormtr``; ``_native_bisect.c``, ``_native_window.c``), against SciPy's tridiagonal and
dense solvers and against the ``?syevr`` route it replaces: values, subspaces, the blocks
of split matrices, its refusals (which fall back to ``?syevr``), and the plan that takes it.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra
from spectra.core._solvers import _lapack_subset
from spectra.core._solvers._native import _extension
from spectra.core._support._samples import adversarial_spectra

from .helpers import DTYPES, projector_distance, random_hermitian, tol, with_spectrum

HELPER = _extension()
needs_helper = pytest.mark.skipif(HELPER is None, reason="the compiled helper is not built")
pytestmark = needs_helper


def bisect(
    d: np.ndarray, e: np.ndarray, il: int, iu: int
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The helper's bisection: ``(blocks, w, iblock, isplit)`` (1-based ``il..iu``)."""
    m = iu - il + 1
    w = np.zeros(m, dtype=d.dtype)
    iblock = np.zeros(m, dtype=np.int32)
    isplit = np.zeros(len(d), dtype=np.int32)
    e = np.ascontiguousarray(e if len(e) else np.zeros(1, dtype=d.dtype))
    single = int(d.dtype == np.float32)
    blocks = HELPER.bisect(
        single, len(d), d.ctypes.data, e.ctypes.data, il, iu, w.ctypes.data,
        iblock.ctypes.data, isplit.ctypes.data,
    )  # fmt: skip
    return blocks, w, iblock, isplit


def stebz(d: np.ndarray, e: np.ndarray, il: int, iu: int) -> np.ndarray:
    return scipy.linalg.eigvalsh_tridiagonal(
        d.astype(np.float64), e.astype(np.float64), select="i", select_range=(il - 1, iu - 1)
    )


# ---- the bisection ---------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 17, 64, 257])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bisection_is_stebz_within_its_tolerance(n, dtype):
    rng = np.random.default_rng(n)
    d, e = rng.standard_normal(n).astype(dtype), rng.standard_normal(n - 1).astype(dtype)
    for il, iu in {(1, n), (1, min(n, 9)), (max(1, n - 3), n), ((n + 1) // 2, (n + 1) // 2)}:
        blocks, w, iblock, isplit = bisect(d, e, il, iu)
        assert blocks == 1 and (iblock == 1).all() and isplit[0] == n
        scale = np.abs(d).max() + 2 * np.abs(e).max() if n > 1 else abs(d[0])
        eps = np.finfo(dtype).eps
        np.testing.assert_allclose(w, stebz(d, e, il, iu), rtol=0, atol=8 * n * eps * scale)
        assert (np.diff(w) >= 0).all()


def test_more_values_than_lanes_and_graded_entries():
    n = 120
    rng = np.random.default_rng(3)
    d = np.logspace(-6, 3, n) * rng.choice([-1.0, 1.0], n)
    e = np.logspace(-5, 2, n - 1)
    blocks, w, _, _ = bisect(d, e, 5, 60)  # 56 values: four groups of lanes
    assert blocks == 1
    np.testing.assert_allclose(w, stebz(d, e, 5, 60), rtol=0, atol=1e-12 * 1e3)


def test_splits_are_stebz_blocks_and_values_get_their_block():
    """Three blocks, two of them equal (each of their values twice): every value once
    per copy, each assigned a distinct block that holds it."""
    rng = np.random.default_rng(4)
    d1, e1 = rng.standard_normal(6), rng.standard_normal(5)
    d2, e2 = rng.standard_normal(4), rng.standard_normal(3)
    d = np.concatenate([d1, d2, d1])
    e = np.concatenate([e1, [0.0], e2, [1e-300], e1])  # a zero and a negligible coupling
    n = len(d)
    blocks, w, iblock, isplit = bisect(d, e, 1, n)
    assert blocks == 3 and isplit[:3].tolist() == [6, 10, 16]
    each = [
        np.linalg.eigvalsh(np.diag(x) + np.diag(y, 1) + np.diag(y, -1))
        for x, y in ((d1, e1), (d2, e2), (d1, e1))
    ]
    for b in (1, 2, 3):  # by block, ascending within it (?stein's order)
        got = w[iblock == b]
        assert (np.diff(got) >= 0).all()
        np.testing.assert_allclose(got, each[b - 1], atol=1e-13)
    assert (np.diff(iblock) >= 0).all()


def test_a_window_inside_split_blocks():
    d = np.array([1.0, 1.0, 2.0, 2.0, 3.0])
    e = np.array([0.0, 0.0, 0.0, 0.0])  # diagonal: five blocks, the values 1, 1, 2, 2, 3
    blocks, w, iblock, _ = bisect(d, e, 2, 4)
    assert blocks == 5
    order = np.argsort(w, kind="stable")
    np.testing.assert_allclose(w[order], [1.0, 2.0, 2.0], atol=1e-15)
    # each value's block holds it: the first 1 is block 1 or 2, the twos blocks 3 and 4
    assert sorted(iblock[w > 1.5].tolist()) == [3, 4] and iblock[w < 1.5][0] in (1, 2)


@pytest.mark.parametrize(
    ("d", "code"),
    [
        (np.array([1.0, np.nan, 2.0]), -2),
        (np.array([1.0, np.inf, 2.0]), -2),
        (np.full(3, 1e-200), -5),  # ?syevr would scale it
        (np.full(3, 1e200), -5),  # (its squares overflow)
        (np.full(3, 5e76), -5),  # (above ?syevr's rmax: finite squares)
        (np.zeros(3), -5),
    ],
)
def test_bisection_declines_what_syevr_must_handle(d, code):
    assert bisect(d, np.full(2, d[0] / 3), 1, 2)[0] == code


def test_bisection_checks_its_indices():
    d = np.ones(4)
    e = np.ones(3)
    for il, iu in ((0, 2), (3, 2), (1, 5)):
        assert (
            HELPER.bisect(
                0,
                4,
                d.ctypes.data,
                e.ctypes.data,
                il,
                iu,
                d.ctypes.data,
                d.ctypes.data,
                d.ctypes.data,
            )
            == -2
        )


# ---- the chain, through window_into ----------------------------------------------------


def solve(a: torch.Tensor, lo: int, hi: int, monkeypatch, chain: bool):
    monkeypatch.setattr(_lapack_subset, "CHAIN_MIN_N", 1 if chain else 10**9)
    return _lapack_subset.window_solve(a, True, lo, hi)


def test_the_chain_serves_the_partial_solve(monkeypatch):
    calls = []
    real = HELPER.window_batch

    class Spy:
        def __getattr__(self, name):
            return getattr(HELPER, name)

        def window_batch(self, *args):
            calls.append(args[1])
            return real(*args)

    monkeypatch.setattr(_lapack_subset._lapack(), "helper", Spy())
    a = random_hermitian((3,), 40, torch.float64, seed=1)
    solve(a, 0, 5, monkeypatch, True)
    assert calls == [3]
    solve(a, 0, 40, monkeypatch, True)  # every pair: ?syevr's MRRR, not the chain
    assert calls == [3]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("n", "lo", "hi"), [(33, 0, 9), (80, 0, 4), (80, 70, 80), (120, 30, 62)])
def test_chain_matches_scipy_and_the_syevr_route(monkeypatch, dtype, n, lo, hi):
    a = random_hermitian((3,), n, dtype, seed=n + lo)
    w, v = solve(a, lo, hi, monkeypatch, True)
    w0, _ = solve(a, lo, hi, monkeypatch, False)
    x = a.numpy().astype(np.complex128 if dtype.is_complex else np.float64)
    for i in range(3):
        wr, vr = scipy.linalg.eigh(x[i], subset_by_index=[lo, hi - 1])
        scale = np.abs(wr).max()
        np.testing.assert_allclose(w[i].numpy(), wr, atol=n * tol(dtype) * scale, rtol=0)
        np.testing.assert_allclose(w[i].numpy(), w0[i].numpy(), atol=n * tol(dtype) * scale, rtol=0)
        vi = v[i].numpy()
        single = dtype in (torch.float32, torch.complex64)
        assert projector_distance(vi, vr, wr, 1e-2 if single else 1e-6) < (5e-2 if single else 1e-6)
        eye = np.eye(hi - lo)
        np.testing.assert_allclose(vi.conj().T @ vi, eye, atol=100 * n * tol(dtype))
        resid = x[i] @ vi - vi * w[i].numpy()
        assert np.abs(resid).max() < 100 * n * tol(dtype) * scale


def assert_eigenpairs(
    a: np.ndarray, w: np.ndarray, v: np.ndarray, ref: np.ndarray, atol: float
) -> None:
    """``(w, v)`` are eigenpairs of ``a`` with the values ``ref``: the values, orthonormal
    vectors, small residuals, and where the window ends inside a cluster of equal values
    (its subspace not unique) nothing more; elsewhere the same spectral projectors as
    SciPy's."""
    np.testing.assert_allclose(w, ref, atol=atol)
    np.testing.assert_allclose(v.conj().T @ v, np.eye(len(w)), atol=1e-12 * len(a))
    assert np.abs(a @ v - v * w).max() < atol


@pytest.mark.parametrize("name", ["repeated", "clustered", "wide-range"])
def test_adversarial_spectra(monkeypatch, name):
    n = 64
    lam = adversarial_spectra(n)[name]
    a = with_spectrum(lam[None], torch.float64, seed=2)
    for lo, hi in ((0, 12), (20, 40)):
        w, v = solve(a, lo, hi, monkeypatch, True)
        full = np.sort(lam.numpy())
        scale = float(lam.abs().max())
        assert_eigenpairs(a[0].numpy(), w[0].numpy(), v[0].numpy(), full[lo:hi], 1e-12 * n * scale)
        whole = full[hi] - full[hi - 1] > 1e-6 * scale and (
            lo == 0 or full[lo] - full[lo - 1] > 1e-6 * scale
        )
        if whole:  # the window holds whole clusters: its subspaces are SciPy's
            vr = scipy.linalg.eigh(a[0].numpy(), subset_by_index=[lo, hi - 1])[1]
            assert projector_distance(v[0].numpy(), vr, full[lo:hi], 1e-8 * scale) < 1e-6


def leafy_laplacian(n: int, seed: int) -> torch.Tensor:
    """The normalized Laplacian of a random tree with many leaves on few hubs: repeated
    eigenvalue 1, and a tridiagonal form that splits."""
    rng = np.random.default_rng(seed)
    parents = [int(rng.integers(0, max(1, i // 8))) for i in range(1, n)]
    adj = np.zeros((n, n))
    for i, p in enumerate(parents, start=1):
        adj[i, p] = adj[p, i] = 1.0
    deg = adj.sum(1)
    s = 1 / np.sqrt(deg)
    return torch.from_numpy(np.eye(n) - s[:, None] * adj * s[None, :])


@pytest.mark.parametrize("hi", [9, 40])
def test_graph_laplacians_whose_tridiagonal_splits(monkeypatch, hi):
    a = torch.stack([leafy_laplacian(150, s) for s in range(3)])
    w, v = solve(a, 0, hi, monkeypatch, True)
    for i in range(3):
        full = scipy.linalg.eigh(a[i].numpy(), eigvals_only=True)
        assert_eigenpairs(a[i].numpy(), w[i].numpy(), v[i].numpy(), full[:hi], 1e-12)
        if full[hi] - full[hi - 1] > 1e-8:  # (hi = 40 ends inside the eigenvalue 1)
            vr = scipy.linalg.eigh(a[i].numpy(), subset_by_index=[0, hi - 1])[1]
            assert projector_distance(v[i].numpy(), vr, full[:hi], 1e-8) < 1e-7
    # the reduction of such a matrix splits: the case the block assignment is for
    _, dd, ee, _, _ = scipy.linalg.lapack.dsytrd(a[0].numpy().T.copy(), lower=0)
    assert bisect(dd, ee, 1, hi)[0] > 1


def test_declined_matrices_take_syevr(monkeypatch):
    """A matrix ?syevr would scale (entries ~1e-200) is declined by the bisection and
    solved by ?syevr; its neighbours in the block keep the chain's results."""
    a = random_hermitian((3,), 50, torch.float64, seed=7)
    a[1] *= 1e-200
    w, v = solve(a, 0, 6, monkeypatch, True)
    w_alone, v_alone = solve(a[1:2], 0, 6, monkeypatch, False)
    assert torch.equal(w[1], w_alone[0]) and torch.equal(v[1], v_alone[0])
    w_chain, _ = solve(a[[0, 2]], 0, 6, monkeypatch, True)
    assert torch.equal(w[[0, 2]], w_chain)
    ref = np.linalg.eigvalsh(a[1].numpy() * 1e200)[:6] * 1e-200
    np.testing.assert_allclose(w[1].numpy(), ref, rtol=1e-10)


def test_a_matrix_gives_the_same_bits_anywhere_in_the_batch(monkeypatch):
    a = random_hermitian((9,), 45, torch.complex128, seed=8)
    w, v = solve(a, 0, 7, monkeypatch, True)
    for lo in (1, 4):
        wi, vi = solve(a[lo:], 0, 7, monkeypatch, True)
        assert torch.equal(w[lo:], wi) and torch.equal(v[lo:], vi)


def test_strided_outputs_and_inputs(monkeypatch):
    monkeypatch.setattr(_lapack_subset, "CHAIN_MIN_N", 1)
    a = random_hermitian((2,), 40, torch.float32, seed=9)
    wide = torch.zeros(2, 40, 80, dtype=torch.float32)
    wide[..., ::2] = a  # every other column: strided input
    x = wide[..., ::2]
    w = torch.empty(2, 5)
    v = torch.empty(2, 40, 5)  # C order (not LAPACK's column-major)
    assert _lapack_subset.window_into(x, w, v, 0, 5) == []
    w0, v0 = _lapack_subset.window_solve(a, True, 0, 5)
    assert torch.equal(w, w0) and torch.equal(v, v0)


def test_spectra_eigh_with_k_is_scipy(monkeypatch):
    a = random_hermitian((4,), 100, torch.float64, seed=10)
    w, v = spectra.eigh(a, k=6)
    for i in range(4):
        wr = scipy.linalg.eigh(a[i].numpy(), eigvals_only=True, subset_by_index=[0, 5])
        np.testing.assert_allclose(w[i].numpy(), wr, atol=1e-11)
        resid = a[i].numpy() @ v[i].numpy() - v[i].numpy() * w[i].numpy()
        assert np.abs(resid).max() < 1e-11


def test_without_the_helper_syevr_runs(monkeypatch):
    a = random_hermitian((2,), 50, torch.float64, seed=11)
    w0, v0 = solve(a, 0, 5, monkeypatch, False)
    monkeypatch.setattr(_lapack_subset._lapack(), "helper", None)
    w, v = solve(a, 0, 5, monkeypatch, True)
    assert torch.equal(w, w0) and torch.equal(v, v0)


def test_each_block_to_its_own_tolerance():
    """As ?stebz bisects each block of a split matrix: a block whose norm is far below the
    matrix's gets its values to its own accuracy, a 1 x 1 block its entry exactly."""
    rng = np.random.default_rng(12)
    d1, e1 = 1e-9 * rng.standard_normal(5), 1e-9 * rng.standard_normal(4)
    d2, e2 = rng.standard_normal(6), rng.standard_normal(5)
    d = np.concatenate([d1, d2, [0.125]])
    e = np.concatenate([e1, [0.0], e2, [0.0]])
    blocks, w, iblock, _ = bisect(d, e, 1, 12)
    assert blocks == 3
    tiny = np.linalg.eigvalsh(np.diag(d1) + np.diag(e1, 1) + np.diag(e1, -1))
    np.testing.assert_allclose(w[iblock == 1], tiny, rtol=0, atol=1e-22)
    assert w[iblock == 3].tolist() == [0.125]


def test_a_diagonal_matrix_gives_its_entries(monkeypatch):
    a = torch.diag(torch.arange(300.0, dtype=torch.float64))[None]
    w, v = solve(a, 0, 3, monkeypatch, True)
    assert w[0].tolist() == [0.0, 1.0, 2.0]
    assert torch.equal(v[0].abs(), torch.eye(300, dtype=torch.float64)[:, :3])


def _laplacian(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    adj = np.zeros((n, n))
    if kind == "paths":  # many small components: a split, highly degenerate spectrum
        i = 0
        while i < n:
            s = min(int(rng.integers(1, 8)), n - i)
            for j in range(i + 1, i + s):
                adj[j, j - 1] = adj[j - 1, j] = 1.0
            i += s
    elif kind == "star":  # the eigenvalue 1 n - 2 times
        adj[0, 1:] = adj[1:, 0] = 1.0
    else:  # a random tree
        for i in range(1, n):
            p = int(rng.integers(0, max(1, i // 4)))
            adj[i, p] = adj[p, i] = 1.0
    deg = adj.sum(1)
    s = np.where(deg > 0, 1 / np.sqrt(np.maximum(deg, 1e-300)), 0.0)
    return np.diag((deg > 0).astype(float)) - s[:, None] * adj * s[None, :]


@pytest.mark.parametrize("kind", ["paths", "star", "tree"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_degenerate_graph_laplacians_any_window(monkeypatch, kind, dtype):
    """Windows anywhere in the spectra of Laplacians whose tridiagonal forms split into
    many blocks with shared eigenvalues: the values, orthonormal vectors and residuals."""
    rng = np.random.default_rng(13)
    single = dtype in (torch.float32, torch.complex64)
    atol = 2e-5 if single else 1e-12
    for _ in range(4):
        n = int(rng.integers(40, 160))
        a = _laplacian(rng, n, kind)
        k = int(rng.integers(1, 30))
        lo = int(rng.integers(0, n - k))
        w, v = solve(torch.from_numpy(a).to(dtype)[None], lo, lo + k, monkeypatch, True)
        full = np.linalg.eigvalsh(a)
        wv = w[0].double().numpy()
        vv = v[0].to(torch.complex128).numpy()
        np.testing.assert_allclose(wv, full[lo : lo + k], atol=atol)
        np.testing.assert_allclose(vv.conj().T @ vv, np.eye(k), atol=50 * atol)
        assert np.abs(a @ vv - vv * wv).max() < 10 * atol


def test_large_single_worker_calls_keep_the_callers_kernel_threads(monkeypatch):
    """From the planner's THREADED_LAPACK_MIN_N a single-worker call runs LAPACK on the
    kernel threads the caller has (OpenBLAS's count, through the gate), below it on one,
    and every call restores what it found."""
    from spectra.core._pipeline._plan import THREADED_LAPACK_MIN_N

    assert _lapack_subset.THREADED_MIN_N == THREADED_LAPACK_MIN_N
    lap = _lapack_subset._lapack()
    if lap.gate is None:
        pytest.skip("no OpenBLAS thread knob in this SciPy")
    asked = []
    real = lap.gate.knob
    monkeypatch.setattr(lap.gate, "knob", lambda count: asked.append(count) or real(count))
    big = random_hermitian((), THREADED_LAPACK_MIN_N, torch.float64, seed=14)
    w, _ = spectra.eigh(big, k=4, workers=1)
    assert asked[0] == torch.get_num_threads() and len(asked) == 2  # set, then restored
    wr = scipy.linalg.eigh(big.numpy(), eigvals_only=True, subset_by_index=[0, 3])
    np.testing.assert_allclose(w.numpy(), wr, atol=1e-11)
    asked.clear()
    spectra.eigh(big[:200, :200], k=4, workers=1)
    assert asked[0] == 1
