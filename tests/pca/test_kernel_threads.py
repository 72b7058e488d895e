"""Small work is fitted, projected and scored on one kernel thread in the caller's thread
(``spectra/pca/_threads.py``: ``B N D min(N, D)`` below 2^20); the rest keeps the caller's
kernel threads.

MKL opens an OpenMP team for a product as small as ``(13 x 178) @ (178 x 13)``. With
another library's threads in the process and pauses between fits (a script that fits one
dataset now and then beside sklearn), each team cost milliseconds: wine took 46.6 ms
against sklearn's 1.1 ms (``benchmarks/results/pca-idle-2026-12-05.py.txt``). The tests
assert the setting inside the steps, never a time; the fits themselves are checked against
sklearn elsewhere (``tests/pca/test_against_sklearn.py``), and here against the same fit on
the caller's threads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np
import pytest
import torch
from sklearn.datasets import load_wine
from sklearn.decomposition import PCA

import spectra.pca._batch_pca as batch_pca
import spectra.pca._scoring as scoring
import spectra.pca._transform as transform
from spectra.pca import BatchPCA

pytestmark = pytest.mark.skipif(
    torch.get_num_threads() < 2, reason="one kernel thread is the caller's setting already"
)


def _seen_inside(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """The kernel-thread count each call of ``module.name`` ran with."""
    seen: list[int] = []
    real = getattr(module, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return seen


def _entered_with(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[int]:
    """The kernel-thread count inside each ``small_work_threads`` block of ``module``."""
    seen: list[int] = []
    real = module.small_work_threads

    def spy(x: torch.Tensor) -> AbstractContextManager[None]:
        @contextmanager
        def block() -> Iterator[None]:
            with real(x):
                seen.append(torch.get_num_threads())
                yield

        return block()

    monkeypatch.setattr(module, "small_work_threads", spy)
    return seen


@pytest.mark.parametrize(
    "shape",
    [(178, 13), (40, 64), (500, 20), (5000, 10), (20, 500), (4, 50, 10)],
    ids=["wine-shaped", "wide", "500-samples", "5000-samples", "500-features", "a-small-batch"],
)
def test_a_small_fit_runs_on_one_kernel_thread(
    shape: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    callers = torch.get_num_threads()
    seen = _seen_inside(monkeypatch, batch_pca, "centered")
    x = np.random.default_rng(0).normal(size=shape)
    BatchPCA(3).fit(x)
    assert seen == [1]
    assert torch.get_num_threads() == callers  # given back


@pytest.mark.parametrize(
    "shape",
    [(2000, 30), (30, 2000), (20, 400, 16), (250, 100), (200, 40, 64)],
    ids=["2000-samples", "2000-features", "twenty-datasets", "250-by-100", "a-batch"],
)
def test_a_larger_fit_keeps_the_callers_kernel_threads(
    shape: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    callers = torch.get_num_threads()
    seen = _seen_inside(monkeypatch, batch_pca, "centered")
    BatchPCA(3).fit(np.random.default_rng(1).normal(size=shape))
    assert seen == [callers]


def test_projections_and_scores_of_small_data_run_on_one_kernel_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    x = load_wine().data
    pca = BatchPCA(5).fit(x)
    projected = _entered_with(monkeypatch, transform)
    scored = _entered_with(monkeypatch, scoring)
    z = pca.transform(x)
    pca.inverse_transform(z)
    pca.score(x)
    assert projected == [1, 1] and scored == [1]
    big = np.random.default_rng(2).normal(size=(8000, 13))
    pca.transform(big)
    assert projected[-1] == torch.get_num_threads()  # 8,000 rows: the caller's threads


def test_the_fit_on_one_kernel_thread_is_sklearns() -> None:
    """Independent reference: sklearn's full-SVD PCA on the same data (wine, the SVD route,
    and a well-conditioned covariance fit), tolerances of the sklearn suite."""
    rng = np.random.default_rng(3)
    for x, k in ((load_wine().data, 5), (rng.normal(size=(120, 9)), 4)):
        ours = BatchPCA(k).fit(x)
        ref = PCA(k, svd_solver="full").fit(x)
        np.testing.assert_allclose(ours.explained_variance_, ref.explained_variance_, rtol=1e-10)
        np.testing.assert_allclose(np.abs(ours.components_), np.abs(ref.components_), atol=1e-9)
        np.testing.assert_allclose(ours.transform(x), ref.transform(x), rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(ours.score(x), ref.score(x), rtol=1e-10)
