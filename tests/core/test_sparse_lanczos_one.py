"""The one-problem shift-invert Lanczos (``_krylov_one``) against the batched iteration it
stands in for (the same algorithm on padded ``(G, ...)`` tensors), and against SciPy: the
same eigenvalues, eigenspaces and gauge, the same refusals; every test asserts which
iteration ran."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

import spectra
from spectra.core._sparse import _krylov, _krylov_one, _krylov_rules
from tests.core.sparse_helpers import (
    adjacency_rgg,
    dense_reference,
    grid,
    largest_angle,
    largest_component,
    magnetic_laplacian,
    normalized_laplacian,
)


def _rgg(n: int, seed: int) -> sp.csr_matrix:
    return normalized_laplacian(largest_component(adjacency_rgg(n, seed=seed)))


def _solve(monkeypatch, route, a, **kw):
    """``spectra.eigh(a, **kw)`` with single problems on ``route``; the routes taken."""
    taken: list[str] = []
    real_serves = _krylov_one.serves

    def serves(batch, x0):
        ok = route == "one" and real_serves(batch, x0)
        taken.append("one" if ok else "batch")
        return ok

    monkeypatch.setattr(_krylov_one, "serves", serves)
    out = spectra.eigh(a, method="lanczos", **kw)
    monkeypatch.setattr(_krylov_one, "serves", real_serves)
    return out, taken


CASES = {
    "rgg": lambda: (_rgg(1500, seed=81), {"k": 8}),
    "grid pairs": lambda: (normalized_laplacian(grid(25, 25)), {"k": 8}),
    "four copies (widened)": lambda: (
        sp.block_diag([_rgg(250, seed=82)] * 4, format="csr"),
        {"k": 9},
    ),
    "largest": lambda: (_rgg(900, seed=83), {"k": 5, "largest": True, "tol": 1e-10}),
    "complex": lambda: (
        magnetic_laplacian(largest_component(adjacency_rgg(900, seed=84))),
        {"k": 5, "tol": 1e-10},
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_problem_equals_the_batched_iteration_and_scipy(monkeypatch, case):
    a, kw = CASES[case]()
    (w1, v1), one = _solve(monkeypatch, "one", a, **kw)
    (wb, vb), batch = _solve(monkeypatch, "batch", a, **kw)
    assert set(one) == {"one"} and set(batch) == {"batch"}
    if case == "four copies (widened)":  # a cluster as wide as the block: run again wider
        assert len(one) == 2 and len(batch) == 2
    k = kw["k"]
    ref_w, ref_v = dense_reference(a)
    if kw.get("largest"):
        np.testing.assert_allclose(w1, ref_w[-k:], rtol=1e-8)  # ascending, as always
        np.testing.assert_allclose(w1, wb, rtol=1e-10, atol=1e-13)
        return
    np.testing.assert_allclose(w1, ref_w[:k], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(w1, wb, rtol=1e-10, atol=1e-13)
    whole = k if case != "four copies (widened)" else 8  # 8 starts the next group of four
    assert largest_angle(v1, ref_v, ref_w, whole) < 1e-6
    assert largest_angle(v1, vb, w1, whole) < 1e-7
    assert np.abs(v1.conj().T @ v1 - np.eye(k)).max() < 1e-12
    # the gauge: each vector's entry of largest magnitude real and positive (where that
    # entry is unique: a grid's symmetric vectors tie), as the batch's
    mag = np.sort(np.abs(v1), axis=0)
    unique = mag[-2] < (1 - 1e-9) * mag[-1]
    assert unique.any()
    lead = v1[np.abs(v1).argmax(axis=0), np.arange(k)][unique]
    assert np.abs(lead.imag).max() < 1e-15 and (lead.real > 0).all()


def test_float32_and_deflation_as_laplacian_pe_asks(monkeypatch):
    lap = _rgg(1200, seed=85)
    ref_w, ref_v = dense_reference(lap)
    null = ref_v[:, :1]
    kw = {"k": 6, "spectrum_bound": (0.0, 2.0), "deflate": [null]}
    (ws, vs), taken = _solve(monkeypatch, "one", [lap], **kw)
    assert taken == ["one"]
    np.testing.assert_allclose(ws[0], ref_w[1:7], rtol=1e-8)
    assert np.abs(null.T @ vs[0]).max() < 1e-10
    assert largest_angle(np.concatenate([null, vs[0]], axis=1), ref_v, ref_w, 7) < 1e-6
    t = torch.from_numpy(lap.toarray().astype(np.float32)).to_sparse_csr()
    (w32, v32), taken = _solve(monkeypatch, "one", t, k=4)
    assert taken == ["one"] and w32.dtype == torch.float32 and v32.dtype == torch.float32
    np.testing.assert_allclose(w32.numpy(), ref_w[:4], atol=1e-5)
    assert largest_angle(v32.double().numpy(), ref_v, ref_w, 4) < 1e-3


def test_a_list_takes_the_batched_iteration_and_one_matrix_its_own(monkeypatch):
    mats = [_rgg(n, seed=86 + i) for i, n in enumerate((700, 900))]
    (ws, _), taken = _solve(monkeypatch, "one", mats, k=4)
    assert taken == ["batch"]  # solved together: one padded batch of two
    (w0, _), taken = _solve(monkeypatch, "one", mats[0], k=4)
    assert taken == ["one"]
    np.testing.assert_allclose(w0, ws[0], rtol=1e-10, atol=1e-13)


def test_not_converging_is_refused_as_on_the_batched_iteration(monkeypatch):
    lap = _rgg(1500, seed=88)
    messages = []
    for route in ("one", "batch"):
        with pytest.raises(spectra.LinAlgError, match=r"did not converge in 2 iterations") as err:
            _solve(monkeypatch, route, lap, k=6, maxiter=2)
        messages.append(str(err.value))
    assert messages[0].split(":")[0] == messages[1].split(":")[0]


@pytest.mark.parametrize(
    "shape, torch_route",
    [((3, 4, 5), False), ((40, 600, 3), False), ((600, 48, 10), True), ((1, 300, 40), True)],
)
def test_products_past_numpys_thread_threshold_go_through_torch(monkeypatch, shape, torch_route):
    # products beyond NumPy's OpenBLAS thread threshold go through torch (one kernel thread
    # where the caller set one), the others through NumPy: the same product either way
    m, inner, n = shape
    rng = np.random.default_rng(89)
    a, b = rng.standard_normal((m, inner)), rng.standard_normal((inner, n))
    seen = []
    real = torch.from_numpy
    monkeypatch.setattr(_krylov_one.torch, "from_numpy", lambda x: seen.append(1) or real(x))
    np.testing.assert_allclose(_krylov_one._mm(a, b), a @ b, rtol=1e-13, atol=1e-13)
    assert bool(seen) == torch_route


def test_the_block_constants_are_shared():
    # both iterations read one set of constants, one cluster test and one Rayleigh-Ritz
    # forecast (_krylov_rules)
    assert _krylov_one.kr is _krylov_rules
    for name in ("BLOCK", "CLUSTER", "COND", "DEPENDENT"):
        assert getattr(_krylov, name) == getattr(_krylov_rules, name)
    for name in ("BLOCK", "CLUSTER", "COND", "DEPENDENT", "SKIP_MARGIN"):
        assert name not in vars(_krylov_one)
    assert _krylov._widest_cluster is _krylov_rules.widest_cluster
    assert _krylov._Skip is _krylov_rules.Skip


def test_the_scalar_forecast_follows_the_batched_one_step_by_step():
    # _Forecast is Skip's formula on Python floats (one problem): the same due steps for
    # falling, flat, rising and converged residual estimates
    rng = np.random.default_rng(90)
    for trend in (0.3, 0.9, 1.0, 1.5):
        scalar, batched = _krylov_one._Forecast(), _krylov_rules.Skip(1)
        worst = 10.0 ** rng.uniform(3, 9)
        for step in range(4, 30):
            worst = worst * trend * rng.uniform(0.7, 1.3)
            ratio = np.array([[worst, worst * rng.uniform(0, 1)]])
            scalar.observe(step, float(ratio.max()))
            batched.observe(step, torch.from_numpy(ratio), torch.ones(1, dtype=torch.bool))
            assert scalar.next == float(batched.next[0]), (trend, step)
            assert (step + 1 >= scalar.next) == bool(batched.due(step + 1)[0])
