"""The compiled eight-lane reduction to tridiagonal form and its back-transformation
(``_native_lanes.c``), which the ``twisted`` strategy runs up to ``LANES_MAX_N`` (the
back-transformation for real matrices): the reflectors in ``?sytrd``/``?hetrd``'s layout
rebuilt into ``Q`` (``Q T Q^H = A``,
``Q`` orthogonal, ``T``'s eigenvalues SciPy's), the back-transformation against ``Q z``,
adversarial matrices (subnormal, huge, couplings below the rounding, already tridiagonal,
zero), lanes that never mix, and the whole solve on both routes (the lanes and OpenBLAS's
``?sytrd``/``?ormtr``) against each other and where the planner relies on the lanes."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra
from spectra.core._solvers import _twisted_eigh
from spectra.core._solvers._kernels import _ready
from spectra.core._strategies import _twisted

from .helpers import pin_cpu_vendor, random_hermitian

W = 8
_ROUTINES = _twisted_eigh._routines()
pytestmark = pytest.mark.skipif(
    not _ROUTINES.lanes, reason="needs the compiled helper (setup.py build_ext)"
)
_P = ctypes.c_void_p
_REDUCE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int, _P, _P, _P, _P, _P, _P)
_BACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int, _P, _P, _P, _P)
_PREFIX = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}
KINDS = [np.float32, np.float64, np.complex64, np.complex128]
IDS = ["float32", "float64", "complex64", "complex128"]


def _reduce(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(h, tau, d, e)`` of the ``m <= 8`` matrices ``a`` (C-ordered, lower triangle read)."""
    m, n = a.shape[0], a.shape[1]
    kind = a.dtype.type
    real = np.finfo(kind).dtype
    fn = _REDUCE(_ROUTINES.lanes[_PREFIX[kind] + "lanes"])
    a = np.ascontiguousarray(a)
    work = np.empty((n * (n + 1) // 2 + 3 * n) * W, dtype=kind)
    h = np.zeros((m, n, n), dtype=kind)
    tau = np.zeros((m, n), dtype=kind)
    d, e = np.zeros((m, n), dtype=real), np.zeros((m, n), dtype=real)
    pointers = (x.ctypes.data for x in (a, work, h, tau, d, e))
    assert fn(n, m, *pointers) == 0
    return h, tau, d, e


def _back(h: np.ndarray, tau: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``z`` (``z[l, k]`` the k-th vector of matrix ``l``) multiplied by each ``Q``."""
    m, n = z.shape[0], z.shape[1]
    kind = z.dtype.type
    fn = _BACK(_ROUTINES.lanes[_PREFIX[kind] + "lanesmtr"])
    out = np.ascontiguousarray(z).copy()
    work = np.empty((n * (n + 1) // 2 + 9 * n) * W, dtype=kind)
    assert fn(n, m, h.ctypes.data, tau.ctypes.data, out.ctypes.data, work.ctypes.data) == 0
    return out


def _q(h: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """``Q = H(n-1) ... H(1)`` of one matrix as ``?sytrd``/``?hetrd`` with ``UPLO = 'U'``
    document it (``H(i) = I - tau_i v v^H``, ``v[i-1] = 1``, ``v[:i-1]`` in column ``i`` of
    the column-major view, i.e. row ``i`` of ``h``), in double precision."""
    n = h.shape[0]
    q = np.eye(n, dtype=np.complex128)
    for i in range(1, n):
        v = np.zeros(n, dtype=np.complex128)
        v[i - 1] = 1.0
        v[: i - 1] = h[i, : i - 1]
        q = (np.eye(n) - complex(tau[i - 1]) * np.outer(v, v.conj())) @ q
    return q if np.iscomplexobj(h) else q.real


def _tridiagonal(d: np.ndarray, e: np.ndarray) -> np.ndarray:
    d, e = d.astype(np.float64), e.astype(np.float64)[:-1]
    return np.diag(d) + np.diag(e, 1) + np.diag(e, -1)


def _symmetric(m: int, n: int, kind: type, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, n, n))
    if np.issubdtype(kind, np.complexfloating):
        x = x + 1j * rng.standard_normal((m, n, n))
    return (x + x.conj().transpose(0, 2, 1)).astype(kind)


def _assert_reduction(a: np.ndarray, h, tau, d, e) -> None:
    """``Q T Q^T = A`` and ``Q^T Q = I`` at ``?sytrd``'s scale, ``T``'s eigenvalues SciPy's
    eigenvalues of ``A``."""
    n = a.shape[-1]
    eps = float(np.finfo(a.dtype).eps)
    for lane in range(a.shape[0]):
        x = a[lane].astype(np.complex128 if np.iscomplexobj(a) else np.float64)
        x = np.tril(x, -1) + np.tril(x, -1).conj().T + np.diag(x.diagonal().real)
        scale = max(float(np.abs(x).max()), np.finfo(np.float64).tiny)
        q, t = _q(h[lane], tau[lane]), _tridiagonal(d[lane], e[lane])
        assert np.abs(q @ t @ q.conj().T - x).max() <= 4 * n * eps * scale, lane
        assert np.abs(q.conj().T @ q - np.eye(n)).max() <= 4 * n * eps, lane
        ref = scipy.linalg.eigvalsh(x)
        got = np.sort(scipy.linalg.eigvalsh(t))
        assert np.abs(got - ref).max() <= 4 * n * eps * scale, lane


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
@pytest.mark.parametrize("n", [1, 2, 3, 17, 64, 130])
@pytest.mark.parametrize("m", [8, 3])
def test_the_reduction_is_sytrd_upper_on_random_matrices(kind, n, m):
    a = _symmetric(m, n, kind, seed=n + m)
    upper = np.triu_indices(n, 1)
    a[:, upper[0], upper[1]] = 7.0  # never read
    if np.iscomplexobj(a):
        a[:, range(n), range(n)] += 3j  # the diagonal's imaginary part: never read
    h, tau, d, e = _reduce(a)
    _assert_reduction(a, h, tau, d, e)
    slack = 4 * float(np.finfo(kind).eps)  # ?larfg: 1 <= Re tau <= 2, |tau - 1| <= 1
    on = tau != 0
    assert np.all(np.abs(tau[on] - 1) <= 1 + slack) and np.all(tau[on].real >= 1 - slack)


def _adversarial(kind: type) -> dict[str, np.ndarray]:
    n = 24
    big, small = (1e300, 1e-300) if kind is np.float64 else (1e37, 1e-37)
    below = 1e-200 if kind is np.float64 else 1e-33  # under tiny = (smallest normal) / eps
    sub = np.finfo(kind).smallest_subnormal
    rng = np.random.default_rng(5)
    x = rng.standard_normal((n, n))
    x = x + x.T
    couplings = np.diag(np.arange(1.0, n + 1)) + below * np.tril(x, -2)
    return {
        "huge": x * big,
        "tiny": x * small,
        "subnormal diagonal": np.diag(np.arange(1, n + 1) * sub),
        "couplings below rounding": couplings + np.tril(couplings, -1).T,
        "zero": np.zeros((n, n)),
        "graded": np.diag(10.0 ** -np.arange(n)) + np.diag(10.0 ** -np.arange(0.5, n - 1), -1),
    }


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
@pytest.mark.parametrize("name", list(_adversarial(np.float64)))
def test_adversarial_matrices_reduce_within_range(kind, name):
    x = _adversarial(np.finfo(kind).dtype.type)[name]
    a = np.stack([x, x[::-1, ::-1].copy()]).astype(kind)
    with np.errstate(over="ignore", under="ignore"):
        h, tau, d, e = _reduce(a)
    assert np.all(np.isfinite(d)) and np.all(np.isfinite(e)) and np.all(np.isfinite(tau))
    if name == "subnormal diagonal":  # already diagonal: exactly its entries
        assert np.array_equal(d[0], np.diag(x).astype(d.dtype)) and not e.any()
        return
    # huge and tiny matrices are compared at unit scale (their squares leave the range)
    scale = float(np.abs(x).max()) if name in ("huge", "tiny") else 1.0
    with np.errstate(over="ignore", under="ignore"):
        a, d, e = (a / scale).astype(kind), (d / scale).astype(d.dtype), (e / scale).astype(e.dtype)
        _assert_reduction(a, h, tau, d, e)


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
def test_a_tridiagonal_matrix_passes_exactly(kind):
    """No reflector where the column below the subdiagonal is zero (``tau = 0``): ``d`` and
    ``e`` are the matrix's own entries, signs included, as ``?sytrd`` leaves them."""
    n = 12
    rng = np.random.default_rng(2)
    t = np.diag(rng.standard_normal(n)) + np.diag(rng.standard_normal(n - 1), -1)
    a = t[None].astype(kind)
    _, tau, d, e = _reduce(a)
    assert not tau.any()
    assert np.array_equal(d[0], np.diag(a[0]).real)
    assert np.array_equal(e[0, :-1], np.diag(a[0], -1).real)


@pytest.mark.parametrize("kind", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("n", [1, 5, 40, 130])
def test_the_back_transformation_is_q_times_the_vectors(kind, n):
    a = _symmetric(5, n, kind, seed=n)
    h, tau, _, _ = _reduce(a)
    z = np.random.default_rng(n).standard_normal((5, n, n)).astype(kind)
    got = _back(h, tau, z)
    eps = float(np.finfo(kind).eps)
    for lane in range(5):
        ref = z[lane].astype(np.float64) @ _q(h[lane], tau[lane]).T
        scale = float(np.abs(z[lane]).max())
        assert np.abs(got[lane] - ref).max() <= 4 * n * eps * scale, lane


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
def test_lanes_never_mix(kind):
    """A matrix's reflectors, tridiagonal and transformed vectors have the same bits alone
    and in any lane of a block, beside any neighbours."""
    n = 33
    a = _symmetric(8, n, kind, seed=9)
    a[5] *= 1e20 if np.finfo(kind).bits == 64 else 1e10  # a neighbour of another scale
    real = not np.iscomplexobj(a)
    z = np.random.default_rng(1).standard_normal((8, n, n)).astype(kind)
    h, tau, d, e = _reduce(a)
    back = _back(h, tau, z) if real else None
    for lane in (0, 3, 7):
        h1, tau1, d1, e1 = _reduce(a[lane : lane + 1])
        assert np.array_equal(h1[0], h[lane]) and np.array_equal(tau1[0], tau[lane])
        assert np.array_equal(d1[0], d[lane]) and np.array_equal(e1[0], e[lane])
        if back is not None:
            assert np.array_equal(_back(h1, tau1, z[lane : lane + 1])[0], back[lane])


def _routes(monkeypatch, lanes: bool, n: int, dtype: torch.dtype) -> None:
    """The solve's route for ``n x n`` matrices of ``dtype``: the lanes or OpenBLAS's."""
    top = 256 if lanes else 0
    monkeypatch.setattr(_twisted_eigh, "LANES_MAX_N", top)
    monkeypatch.setattr(_twisted_eigh, "LANES_MTR_MAX_N", top)
    monkeypatch.setattr(_twisted_eigh, "LANES_COMPLEX_MAX_N", top)
    s = _twisted_eigh._scratch(n, dtype)  # made again for the changed sizes
    assert (s.lanes_ws.size > 0) is lanes
    assert (s.mtr_ws.size > 0) is (lanes and not dtype.is_complex)  # complex: OpenBLAS's


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64], ids=str)
@pytest.mark.parametrize("n", [2, 33, 100])
def test_the_solve_agrees_on_both_routes(monkeypatch, dtype, n):
    a = random_hermitian((11,), n, dtype, seed=n)
    _routes(monkeypatch, True, n, dtype)
    w, v = _twisted_eigh.twisted_eigh(a, True)
    _routes(monkeypatch, False, n, dtype)
    w2, v2 = _twisted_eigh.twisted_eigh(a, True)
    eps = float(torch.finfo(dtype).eps)
    scale = float(w2.abs().max())
    assert float((w - w2).abs().max()) <= 8 * n * eps * scale
    wide = torch.complex128 if dtype.is_complex else torch.float64
    x = a.to(wide)
    for got_w, got_v in ((w, v), (w2, v2)):
        vv = got_v.to(wide)
        assert float((x @ vv - vv * got_w.double()[:, None, :]).abs().max()) <= 4 * n * eps * scale
        eye = torch.eye(n, dtype=wide)
        assert float((vv.mH @ vv - eye).abs().max()) <= 4 * n * eps


def test_the_openblas_route_keeps_a_matrix_s_bits_anywhere_in_a_batch(monkeypatch):
    """Above ``LANES_MAX_N`` (and without the helper) OpenBLAS reduces each matrix alone."""
    a = random_hermitian((19,), 70, torch.float64, seed=4)
    _routes(monkeypatch, False, 70, torch.float64)
    w, v = _twisted_eigh.twisted_eigh(a, True)
    for i in (0, 7, 8, 18):
        wi, vi = _twisted_eigh.twisted_eigh(a[i : i + 1], True)
        assert torch.equal(wi[0], w[i]) and torch.equal(vi[0], v[i]), i


def test_single_precision_at_smaller_sizes_is_claimed_only_with_the_lanes(monkeypatch):
    monkeypatch.setenv(_ready.ENV, "eager")
    pin_cpu_vendor(monkeypatch, "AuthenticAMD")
    assert _twisted.claim_for(64, torch.float32, "AuthenticAMD") is not None
    assert _twisted.claim_for(24, torch.complex64, "AuthenticAMD") is not None
    assert _twisted.claim_for(14, torch.complex128, "AuthenticAMD") is not None
    assert spectra.plan(64, 64, torch.float32).strategy == "twisted"
    assert spectra.plan(32, 64, torch.complex64).strategy == "twisted"
    monkeypatch.setattr(_ROUTINES, "lanes", {})  # not built, or SPECTRA_NATIVE=0
    monkeypatch.setitem(spectra.core.STRATEGIES, "twisted", spectra.core.STRATEGIES["twisted"])
    assert _twisted.claim_for(64, torch.float32, "AuthenticAMD") is None
    assert _twisted.claim_for(255, torch.float32, "AuthenticAMD") is None
    assert _twisted.claim_for(256, torch.float32, "AuthenticAMD") is not None
    assert _twisted.claim_for(64, torch.float64, "AuthenticAMD") is not None
    assert _twisted.claim_for(32, torch.complex64, "AuthenticAMD") is None
    assert _twisted.claim_for(48, torch.complex64, "AuthenticAMD") is not None
    # complex128 below 21 was measured with the lanes only: the lane kernel keeps it
    assert _twisted.claim_for(20, torch.complex128, "AuthenticAMD") is None
    assert _twisted.claim_for(21, torch.complex128, "AuthenticAMD") is not None
    assert spectra.plan(16, 4096, torch.complex128).strategy == "numba-ql"
    assert spectra.plan(64, 64, torch.float32).strategy == "torch"
    assert spectra.plan(32, 64, torch.complex64).strategy == "torch"
