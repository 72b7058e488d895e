"""The direct path of a small generalized problem (issue 26): one pair, or a handful,
runs the serial Cholesky path's steps without the pipeline, bitwise its results;
everything else (and every error) takes the full path."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra
from spectra.core import _eigh
from spectra.core.domain import InputError, LinAlgError

from .helpers import DTYPES, planned, random_hermitian


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


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", [4, 5, 8, 17, 40, 70])
@pytest.mark.parametrize("shape", [(), (3,)], ids=["one pair", "a handful"])
def test_bitwise_the_pipeline_and_close_to_scipy(
    dtype: torch.dtype, n: int, shape: tuple[int, ...], pipeline_runs: list[int]
) -> None:
    a, b = _pair(shape, n, dtype, seed=n)
    w, v = spectra.eigh(a, b)
    values = spectra.eigvalsh(a, b)
    low = spectra.eigh(a, b, k=2)
    high = spectra.eigh(a, b, k=3, largest=True)
    # direct where the reduced problem's plan is (a handful of complex 70 x 70 is the
    # openblas claim's, on two workers: the pipeline's)
    if spectra.plan(n, int(np.prod(shape)), dtype).direct:
        assert pipeline_runs == []  # none of them took the pipeline
        pw, pv = planned(spectra.eigh, a, b)
        assert torch.equal(w, pw) and torch.equal(v, pv)
        assert torch.equal(values, planned(spectra.eigvalsh, a, b))
    else:
        assert pipeline_runs == [1, 1, 1, 1]
    assert torch.equal(low.eigenvalues, w[..., :2]) and torch.equal(low.eigenvectors, v[..., :2])
    assert torch.equal(high.eigenvalues, w[..., -3:])
    assert torch.equal(high.eigenvectors, v[..., -3:])
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
    if spectra.plan(3, 1, torch.float64).strategy == "closed-form":  # (the compiled helper's)
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
