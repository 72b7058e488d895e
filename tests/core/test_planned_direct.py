"""The planned batch without the entry's layers (``_pipeline._planned_direct``, issue 26):
a plain CPU batch runs its plan straight on the executor. The route is asserted (the plan it
executes, the layers it skips); its results are bitwise the full pipeline's; its errors are
the pipeline's, naming the batch indices; calls it must not take keep the pipeline."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import spectra
from spectra.core import _eigh
from spectra.core._pipeline import _planned_direct
from spectra.core._solvers._kernels import _ready, numba_available
from spectra.core._solvers._twisted_eigh import available as twisted_available

from .helpers import random_hermitian

needs_numba = pytest.mark.skipif(not numba_available(), reason="needs numba")
needs_twisted = pytest.mark.skipif(
    not twisted_available(), reason="needs numba and SciPy's OpenBLAS"
)


@pytest.fixture(autouse=True)
def _kernels_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernels' readiness aside: a plan made outside the call must be the call's (a
    first call of a process may otherwise decline a kernel that a later one takes); the
    registry bumped, so that no plan made before survives."""
    monkeypatch.setenv(_ready.ENV, "eager")
    monkeypatch.setitem(spectra.core.STRATEGIES, "torch", spectra.core.STRATEGIES["torch"])


def _spy(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Records the plans the short route executes and every call of the full pipeline."""
    seen: dict[str, list[Any]] = {"executed": [], "pipeline": []}
    real_execute, real_dense = _planned_direct.execute, _eigh._run_dense

    def execute(p: Any, *args: Any, **kwargs: Any) -> Any:
        seen["executed"].append(p)
        return real_execute(p, *args, **kwargs)

    def run_dense(*args: Any) -> Any:
        seen["pipeline"].append(args[2])
        return real_dense(*args)

    monkeypatch.setattr(_planned_direct, "execute", execute)
    monkeypatch.setattr(_eigh, "_run_dense", run_dense)
    return seen


def _full_pipeline(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with the short route switched off: the full pipeline."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_eigh, "solve_planned", lambda *a, **k: None)
        m.setattr(_eigh, "_direct_with_options", lambda *a, **k: None)
        m.setattr(_eigh, "solve_one_alike", lambda *a, **k: None)
        return fn(*args, **kwargs)


def _same(x: Any, y: Any) -> None:
    assert type(x) is type(y)
    if x is None:
        return
    assert x.dtype == y.dtype and tuple(x.shape) == tuple(y.shape)
    assert np.array_equal(np.asarray(x), np.asarray(y))


#: (batch shape, n, dtype, options): plans of each kind the route runs
CASES = [
    pytest.param((64,), 12, torch.float32, {"strategy": "numba-ql"}, marks=needs_numba, id="ql"),
    pytest.param(
        (256,), 8, torch.float64, {"strategy": "numba-ql"}, marks=needs_numba, id="ql f64"
    ),
    pytest.param(
        (8,), 16, torch.complex64, {"strategy": "twisted"}, marks=needs_twisted, id="twisted c64"
    ),
    pytest.param(
        (4, 6), 24, torch.float32, {"strategy": "twisted"}, marks=needs_twisted, id="twisted 4-D"
    ),
    pytest.param(
        (9,), 20, torch.complex128, {"strategy": "twisted"}, marks=needs_twisted, id="twisted c128"
    ),
    pytest.param((600,), 24, torch.float64, {"strategy": "torch", "workers": 2}, id="two workers"),
    pytest.param((3,), 300, torch.float64, {}, id="threaded LAPACK"),
    pytest.param((5,), 40, torch.complex128, {"strategy": "numpy"}, id="numpy strategy"),
    pytest.param((6,), 10, torch.float64, {"verify": True}, id="verified"),
    pytest.param((50,), 6, torch.float32, {"chunk_size": 7}, id="chunks"),
]


@pytest.mark.parametrize("shape, n, dtype, opts", CASES)
@pytest.mark.parametrize("vectors", [True, False], ids=["eigh", "eigvalsh"])
def test_the_route_runs_the_plan_bitwise_as_the_pipeline(
    monkeypatch: pytest.MonkeyPatch,
    shape: tuple[int, ...],
    n: int,
    dtype: Any,
    opts: Any,
    vectors: bool,
) -> None:
    a = random_hermitian(shape, n, dtype, seed=n + len(shape))
    fn = spectra.eigh if vectors else spectra.eigvalsh
    want = _full_pipeline(fn, a, **opts)
    seen = _spy(monkeypatch)
    got = fn(a, **opts)
    batch = int(np.prod(shape))
    expected = spectra.plan(n, batch, dtype, vectors=vectors, **opts)
    assert seen["executed"] == [expected] and seen["pipeline"] == [], seen
    if vectors:
        _same(got.eigenvalues, want.eigenvalues)
        _same(got.eigenvectors, want.eigenvectors)
    else:
        _same(got, want)


@needs_numba
def test_the_default_call_of_a_kernel_batch_takes_the_route(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No option: whatever the planner picks for 600 matrices of 8 x 8 runs on the route,
    with the caller's torch thread count untouched."""
    a = random_hermitian((600,), 8, torch.float64, seed=1)
    want = _full_pipeline(spectra.eigh, a)
    threads = torch.get_num_threads()
    seen = _spy(monkeypatch)
    w, v = spectra.eigh(a)
    assert [p.strategy for p in seen["executed"]] == [spectra.plan(8, 600, torch.float64).strategy]
    assert seen["pipeline"] == [] and torch.get_num_threads() == threads
    _same(w, want.eigenvalues)
    _same(v, want.eigenvectors)


@pytest.mark.parametrize(
    "k, largest, opts",
    [(3, False, {}), (2, True, {}), (0, False, {}), (5, True, {"workers": 1})],
)
def test_k_is_the_pipelines_slice_or_window(
    monkeypatch: pytest.MonkeyPatch, k: int, largest: bool, opts: Any
) -> None:
    a = random_hermitian((30,), 40, torch.float64, seed=2)
    want = _full_pipeline(spectra.eigh, a, k=k, largest=largest, **opts)
    seen = _spy(monkeypatch)
    got = spectra.eigh(a, k=k, largest=largest, **opts)
    assert len(seen["executed"]) == 1 and seen["pipeline"] == []
    _same(got.eigenvalues, want.eigenvalues)
    _same(got.eigenvectors, want.eigenvectors)
    assert got.eigenvalues.is_contiguous()  # a k-slice owns its memory, as the pipeline's


def test_a_partial_solve_is_planned_with_k(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the planner takes a partial solve (``lapack-subset``: 2 of 300), the route runs
    that window plan, as ``solve_window`` does."""
    a = random_hermitian((4,), 300, torch.float64, seed=3)
    expected = spectra.plan(300, 4, torch.float64, k=2)
    assert expected.window == (0, 2), str(expected)
    want = _full_pipeline(spectra.eigh, a, k=2)
    seen = _spy(monkeypatch)
    got = spectra.eigh(a, k=2)
    assert seen["executed"] == [expected] and seen["pipeline"] == []
    _same(got.eigenvalues, want.eigenvalues)
    _same(got.eigenvectors, want.eigenvectors)


def test_numpy_and_strided_input(monkeypatch: pytest.MonkeyPatch) -> None:
    base = random_hermitian((2, 40), 9, torch.float64, seed=4)
    strided = base.transpose(0, 1)  # (40, 2, 9, 9), not contiguous
    for x in (base.numpy(), strided):
        want = _full_pipeline(spectra.eigh, x, workers=1)
        seen = _spy(monkeypatch)
        got = spectra.eigh(x, workers=1)
        assert len(seen["executed"]) == 1 and seen["pipeline"] == []
        _same(got.eigenvalues, want.eigenvalues)
        _same(got.eigenvectors, want.eigenvectors)
        monkeypatch.undo()


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex64], ids=str)
def test_refused_input_gets_the_pipelines_error(
    monkeypatch: pytest.MonkeyPatch, dtype: Any
) -> None:
    a = random_hermitian((40,), 10, dtype, seed=5)
    bad_value = a.clone()
    bad_value[7, 2, 3] = float("nan")
    bad_value[7, 3, 2] = float("nan")
    asymmetric = a.clone()
    asymmetric[31, 0, 4] += 1.0
    for x, where in ((bad_value, [(7,)]), (asymmetric, [(31,)])):
        with pytest.raises(spectra.InputError) as full:
            _full_pipeline(spectra.eigh, x, workers=1)
        seen = _spy(monkeypatch)
        with pytest.raises(spectra.InputError) as short:
            spectra.eigh(x, workers=1)
        assert len(seen["executed"]) == 1 and seen["pipeline"] == []
        assert short.value.indices == full.value.indices == where
        assert str(short.value) == str(full.value)
        monkeypatch.undo()
    # the check off: the route solves what it is given, as the pipeline does
    w = spectra.eigvalsh(asymmetric, check=False, workers=1)
    _same(w, _full_pipeline(spectra.eigvalsh, asymmetric, check=False, workers=1))


def test_a_solver_error_is_spectras(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch's ``LinAlgError`` from the executor becomes spectra's, as on the pipeline (a
    strategy the direct path does not run: the route's)."""

    def fails(*args: Any, **kwargs: Any) -> Any:
        raise torch.linalg.LinAlgError("linalg.eigh: the algorithm failed to converge")

    monkeypatch.setattr(_planned_direct, "execute", fails)
    with pytest.raises(spectra.LinAlgError, match="failed to converge"):
        spectra.eigh(random_hermitian((40,), 10, torch.float64, seed=6), strategy="numpy")


@pytest.mark.parametrize(
    "call, pipeline",
    [
        pytest.param(lambda a: spectra.eigh(a.requires_grad_(), workers=1), True, id="history"),
        pytest.param(
            lambda a: spectra.eigh(a, plan=spectra.plan(10, 40, a.dtype, strategy="numpy")),
            True,
            id="plan",
        ),
        pytest.param(lambda a: spectra.eigh(a[:0]), True, id="empty"),
        # their own paths: the generalized problem's, the ragged buckets'
        pytest.param(lambda a: spectra.eigh(a, a.mH @ a + torch.eye(10)), False, id="generalized"),
        pytest.param(lambda a: spectra.eigh([a[0], a[1, :5, :5]]), False, id="ragged"),
    ],
)
def test_calls_the_route_does_not_take(
    monkeypatch: pytest.MonkeyPatch, call: Any, pipeline: bool
) -> None:
    """Input with history, a plan handed back (one the direct path does not run) and an
    empty batch take the full pipeline (``_run_dense``); a generalized pair and a ragged
    list take their own paths."""
    a = random_hermitian((40,), 10, torch.float64, seed=7)
    seen = _spy(monkeypatch)
    call(a)
    assert seen["executed"] == []
    assert bool(seen["pipeline"]) == pipeline, seen
