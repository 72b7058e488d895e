"""The fit's bookkeeping runs on NumPy views on the CPU and in torch elsewhere
(``spectra.pca._host``): one code for both, so the torch route (the GPU's) is run here on
CPU tensors and must give the NumPy route's results."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import spectra.pca._solve as solve
from spectra.core.domain import InputError
from spectra.pca import BatchPCA
from spectra.pca._host import as_torch, host


def _torch_route(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep every tensor a tensor: the bookkeeping as it runs on a GPU."""
    monkeypatch.setattr(solve, "host", lambda t: t)


def _fits(x: Any, **kw: Any) -> dict[str, Any]:
    pca = BatchPCA(**kw).fit(x)
    names: tuple[str, ...] = ("components_", "explained_variance_", "explained_variance_ratio_")
    names += ("singular_values_", "noise_variance_", "n_components_", "mean_")
    return {n: np.asarray(getattr(pca, n)) for n in names} | {"plan": pca.plan_}


def _problems() -> list[tuple[str, Any, dict[str, Any]]]:
    rng = np.random.default_rng(3)
    graded = rng.normal(size=(3, 60, 8)) * np.geomspace(1e4, 1e-3, 8)  # the SVD redo
    constant = rng.normal(size=(2, 30, 6))
    constant[:, :, 2] = 5.0  # a feature without variance: a null direction to complete
    return [
        ("covariance, int k", rng.normal(size=(4, 50, 6)), {"n_components": 3}),
        ("gram (N < D), all", rng.normal(size=(3, 7, 12)), {"n_components": None}),
        ("float32, ratio", rng.normal(size=(3, 40, 5)).astype(np.float32), {"n_components": 0.8}),
        ("mle", rng.normal(size=(2, 80, 5)), {"n_components": "mle"}),
        ("graded: SVD redo", graded, {"n_components": 4}),
        ("svd solver", rng.normal(size=(2, 20, 5)), {"n_components": 2, "solver": "svd"}),
        ("constant feature", constant, {"n_components": 6}),
        ("ragged", [rng.normal(size=(n, 4)) for n in (5, 9, 30)], {"n_components": 2}),
        ("one dataset", rng.normal(size=(25, 6)), {"n_components": 3}),
    ]


@pytest.mark.parametrize("name, x, kw", _problems(), ids=[p[0] for p in _problems()])
def test_the_torch_route_gives_the_numpy_routes_fit(
    monkeypatch: pytest.MonkeyPatch, name: str, x: Any, kw: dict[str, Any]
) -> None:
    seen: list[type] = []
    finish = solve.finish

    def spy(count: Any, mean: Any, lam: Any, *rest: Any) -> Any:
        seen.append(type(lam))
        return finish(count, mean, lam, *rest)

    monkeypatch.setattr(solve, "finish", spy)
    on_numpy = _fits(x, **kw)
    _torch_route(monkeypatch)
    on_torch = _fits(x, **kw)
    assert seen == [np.ndarray, torch.Tensor]  # each route ran where it says
    assert on_numpy.pop("plan") == on_torch.pop("plan")
    for field, got in on_torch.items():
        want = on_numpy[field]
        if np.issubdtype(want.dtype, np.floating):
            # the same elementwise steps; only a sum's order may differ in the last bits
            tol = 8 * np.finfo(want.dtype).eps
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
        else:
            np.testing.assert_array_equal(got, want, err_msg=field)


def test_host_wraps_without_copies() -> None:
    t = torch.arange(6.0).reshape(2, 3)
    view = host(t)
    assert isinstance(view, np.ndarray) and np.shares_memory(view, t.numpy())
    back = as_torch(view)
    assert back.data_ptr() == t.data_ptr()
    # a reversed view (which torch cannot wrap) is copied, length-1 axes included
    flipped = np.arange(4.0).reshape(1, 4, 1)[..., ::-1]
    assert torch.equal(as_torch(flipped), torch.arange(4.0).reshape(1, 4, 1))
    assert torch.equal(as_torch(view[:, ::-1]), t.flip(-1))
    tracked = torch.ones(2, requires_grad=True)
    assert host(tracked) is tracked  # history stays in torch
    meta = torch.empty(3, device="meta")
    assert host(meta) is meta  # another device stays in torch


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_errors_name_the_datasets_on_both_routes(kind: str) -> None:
    wrap = (lambda t: t.numpy()) if kind == "numpy" else (lambda t: t)
    count = wrap(torch.tensor([5, 1, 7, 0]))
    with pytest.raises(InputError, match=r"these have \[0, 1\]\) at batch indices \[1, 3\]"):
        solve.check_counts(count)
    rank = wrap(torch.tensor([3, 2, 3]))
    lam = wrap(torch.ones(3, 3, dtype=torch.float64))
    with pytest.raises(InputError, match=r"allow only \[2\] at batch indices \[1\]"):
        solve.choose_k(lam, rank, 3, lam, rank)
    mean = wrap(torch.tensor([[0.0, 1.0], [np.nan, 0.0], [1.0, 1.0]]))
    total = wrap(torch.tensor([1.0, 1.0, np.inf]))
    named: list[list[int]] = []
    with pytest.raises(InputError, match="not finite"):
        solve.check_stats(mean, total, named.append)
    assert named == [[1, 2]]


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_the_small_steps_agree_with_their_definitions(kind: str) -> None:
    wrap = (lambda t: t.numpy()) if kind == "numpy" else (lambda t: t)
    lam = torch.tensor(
        [[4.0, 1e-17, -1e-17], [0.0, 0.0, 0.0], [9.0, 1e-3, 1e-6]], dtype=torch.float64
    )
    dropped = solve.drop_roundoff(wrap(lam), 3)
    assert type(dropped) is type(wrap(lam))
    # 10 max(R, D) eps lam_max: 4 -> 2.7e-14; what lies below is exactly 0
    want = [[4.0, 0.0, 0.0], [0.0, 0.0, 0.0], [9.0, 1e-3, 1e-6]]
    assert as_torch(dropped).tolist() == want
    bad = solve.ill_conditioned(wrap(torch.tensor(want, dtype=torch.float64)))
    # kappa 9e6 above eps^(-1/3) = 1.65e5 only in the third; none at all is not "bad"
    assert as_torch(bad).tolist() == [False, False, True]
    rank_short = solve.ill_conditioned(
        wrap(torch.tensor(want, dtype=torch.float64)), wrap(torch.tensor([3, 3, 3]))
    )
    assert as_torch(rank_short).tolist() == [True, False, True]
    rows = wrap(torch.tensor([[1.0, -3.0, 3.0], [0.0, 0.0, 0.0], [-2.0, 2.0, 1.0]]))
    flipped = as_torch(solve.svd_flip_rows(rows))
    # the first entry of largest magnitude becomes positive; a zero row stays zero
    assert flipped.tolist() == [[-1.0, 3.0, -3.0], [0.0, 0.0, 0.0], [2.0, -2.0, -1.0]]
    ratio = wrap(torch.tensor([[0.5, 0.3, 0.2], [0.9, 0.1, 0.0]], dtype=torch.float64))
    k = solve.choose_k(ratio, wrap(torch.tensor([3, 2])), 0.75, ratio, ratio)
    # the fewest leading components whose cumulative ratio exceeds 0.75 (as sklearn)
    assert as_torch(k).tolist() == [2, 1]


def _count_eighs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the covariance/Gram eighs the fits below make."""
    calls: list[int] = []
    eigh_of = solve._eigh

    def spy(a: torch.Tensor, kw: dict[str, Any]) -> Any:
        calls.append(a.shape[-1])
        return eigh_of(a, kw)

    monkeypatch.setattr(solve, "_eigh", spy)
    return calls


def _ill_inputs() -> list[np.ndarray]:
    from sklearn.datasets import load_wine

    zero_column = np.random.default_rng(5).normal(size=(40, 6))
    zero_column[:, 3] = 2.0
    wine = load_wine().data
    return [wine, zero_column, np.stack([wine[:60], wine[60:120]])]


@pytest.mark.parametrize("x", _ill_inputs(), ids=["wine", "zero column", "two wine parts"])
def test_a_surely_ill_conditioned_fit_skips_the_covariance_eigh(
    monkeypatch: pytest.MonkeyPatch, x: np.ndarray
) -> None:
    """wine's columns (variances 1e-2 .. 1e5) and a zero column: the covariance spectrum
    would fail the conditioning test, so "auto" goes to the SVD route at once, with the
    fit of the covariance-first route (which solves them all again)."""
    calls = _count_eighs(monkeypatch)
    direct = _fits(x, n_components=3)
    assert calls == [] and len(direct["plan"].svd_datasets) == (2 if x.ndim == 3 else 1)
    monkeypatch.setattr(solve, "surely_ill_conditioned", lambda d, c: d[:, 0] != d[:, 0])
    first = _fits(x, n_components=3)
    assert calls == [x.shape[-1]]  # the covariance eigh, then the SVD route for all
    assert direct.pop("plan") == first.pop("plan")
    for field, got in first.items():
        np.testing.assert_array_equal(got, direct[field], err_msg=field)


def test_a_well_conditioned_fit_keeps_the_covariance_route(monkeypatch: pytest.MonkeyPatch) -> None:
    from sklearn.datasets import load_iris

    calls = _count_eighs(monkeypatch)
    fit = _fits(load_iris().data, n_components=2)
    assert calls == [4] and fit["plan"].svd_datasets == ()
    # one surely ill dataset beside a good one: the batch's covariance eigh runs, and only
    # the ill one is solved again
    rng = np.random.default_rng(2)
    good, ill = rng.normal(size=(50, 4)), rng.normal(size=(50, 4)) * [1e4, 1, 1, 1e-3]
    assert _fits(np.stack([good, ill]), n_components=2)["plan"].svd_datasets == (1,)
    assert calls == [4, 4]
