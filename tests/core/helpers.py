"""Test inputs with known spectra, and comparisons that respect degeneracy."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
import torch

from spectra.core import _eigh
from spectra.core._support._samples import random_hermitian, random_unitary, with_spectrum

__all__ = [
    "DTYPES",
    "bitwise_threads",
    "pipeline_only",
    "planned",
    "projector_distance",
    "random_hermitian",
    "random_unitary",
    "tol",
    "with_spectrum",
]

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]


def tol(dtype: torch.dtype) -> float:
    return 1e-4 if dtype in (torch.float32, torch.complex64) else 1e-10


def projector_distance(v1, v2, w, gap_tol):
    """Max distance between spectral projectors of clusters of eigenvalues within gap_tol.

    Compares invariant subspaces, not individual vectors, so it is meaningful at
    repeated eigenvalues. Inputs are NumPy arrays for one matrix.
    """
    n = w.shape[-1]
    groups, start = [], 0
    for i in range(1, n + 1):
        if i == n or w[i] - w[i - 1] > gap_tol:
            groups.append((start, i))
            start = i
    worst = 0.0
    for s, e in groups:
        p1 = v1[:, s:e] @ v1[:, s:e].conj().T
        p2 = v2[:, s:e] @ v2[:, s:e].conj().T
        worst = max(worst, float(np.abs(p1 - p2).max()))
    return worst


def patch_torch_strategy(monkeypatch, solve):
    """Replace the registered ``torch`` strategy's solve by ``solve(a, vectors)`` for one
    test (its in-place ``abilities.into`` dropped, so every call reaches ``solve``); returns
    the original solve for the replacement to call."""
    import dataclasses

    from spectra.core import STRATEGIES

    original = STRATEGIES["torch"]
    monkeypatch.setitem(
        STRATEGIES,
        "torch",
        dataclasses.replace(
            original, solve=solve, abilities=dataclasses.replace(original.abilities, into=None)
        ),
    )
    return original.solve


def served_size(strategy: str, dtype: torch.dtype, preferred: int) -> int:
    """``preferred`` if ``strategy`` solves that size and dtype on its own path (not a
    fallback to LAPACK), else the largest smaller size it does solve; a test named for the
    strategy then reaches it. Skips when it solves no size of ``dtype`` itself."""
    import pytest

    from spectra.core import STRATEGIES

    serves = STRATEGIES[strategy].serves
    for n in range(preferred, 0, -1):
        if serves(n, dtype):
            return n
    pytest.skip(f"{strategy} hands {dtype} to another solver")
    raise AssertionError  # pragma: no cover


def batch_that_fans_out(strategy: str, n: int, dtype: torch.dtype, start: int = 24) -> int:
    """The smallest batch (from ``start``, doubling) the planner splits across 2 workers."""
    import spectra

    batch = start
    while spectra.plan(n, batch, dtype, workers=2, strategy=strategy).workers < 2:
        batch *= 2
        assert batch <= 1 << 17, f"the planner never fans {strategy} out at n = {n}"
    return batch


def without_native_entry(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The one-matrix calls take the Python route (the tests of its steps); the C++ entry,
    which makes the same steps without Python, is tested in test_native_entry.py."""
    from spectra.core._pipeline import _direct

    monkeypatch.setattr(_direct, "_entry", lambda version: (None, _direct._closed_direct(version)))
    monkeypatch.setattr(_direct, "_few_entry", lambda version: None)


def pin_cpu_vendor(monkeypatch, vendor: str | None) -> None:  # type: ignore[no-untyped-def]
    """The CPU vendor the ``openblas`` and ``twisted`` strategies' claims read
    (``GenuineIntel``: no claim, torch's LAPACK everywhere; ``AuthenticAMD``: their measured
    ranges), whatever this machine is; the registry's version is bumped so that no cached
    plan survives."""
    from spectra.core import STRATEGIES
    from spectra.core._strategies import _openblas

    monkeypatch.setattr(_openblas, "cpu_vendor", lambda: vendor)
    monkeypatch.setitem(STRATEGIES, "openblas", STRATEGIES["openblas"])


def assert_refusals(a, after=None) -> None:  # type: ignore[no-untyped-def]
    """``spectra.eigh`` refuses ``a`` (real symmetric, n >= 2) with one NaN pair, one Inf
    on the diagonal, and one asymmetric entry, each with an error naming the problem;
    ``after()`` runs after the NaN case (e.g. to assert the route a spy saw)."""
    import pytest

    import spectra

    nan = a.clone()
    nan[0, 1] = nan[1, 0] = float("nan")
    with pytest.raises(ValueError, match=r"(?i)nan|finite"):
        spectra.eigh(nan)
    if after is not None:
        after()
    inf = a.clone()
    inf[1, 1] = float("inf")
    with pytest.raises(ValueError, match=r"(?i)inf|finite"):
        spectra.eigh(inf)
    skew = a.clone()
    skew[0, 1] += 1.0
    with pytest.raises(ValueError, match=r"(?i)symmetric|hermitian"):
        spectra.eigh(skew)


def tracked_grads(base, fn, loss):  # type: ignore[no-untyped-def]
    """``(w, v, grad)``: ``fn`` (an eigh) on a tracked copy of ``base``, ``loss(w, v)``
    differentiated back to it; ``w`` and ``v`` detached."""
    a = base.clone().requires_grad_()
    w, v = fn(a)
    loss(w, v).backward()
    assert a.grad is not None
    return w.detach(), v.detach(), a.grad


@contextmanager
def bitwise_threads(n: int, dtype: torch.dtype, vectors: bool = True) -> Iterator[None]:
    """The caller's kernel threads under which spectra's bitwise guarantee across batches,
    positions, chunks and worker splits holds for ``n x n`` ``dtype`` matrices: any below
    ``threaded_from`` (every solve on one kernel thread), one from it (a single-worker call
    there runs LAPACK on the caller's threads, as ``torch.linalg.eigh`` does; one caller
    thread gives it the bits of a fan-out's workers)."""
    from spectra.core._solvers._torch_lapack import threaded_from

    if n < threaded_from(dtype, vectors):
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def pipeline_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls with options or a plan take the planned pipeline, even where those plan them
    as the default call (which then takes the direct path:
    ``spectra.core._eigh._direct_with_options``, or for one matrix the entry's shortcut
    ``solve_one_alike``): for tests of the pipeline itself and comparisons against it."""
    monkeypatch.setattr(_eigh, "_direct_with_options", lambda *args, **kwargs: None)
    monkeypatch.setattr(_eigh, "solve_one_alike", lambda *args, **kwargs: None)


def planned(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, workers=1, **kwargs)`` through the planned pipeline itself (one worker;
    :func:`pipeline_only`)."""
    with pytest.MonkeyPatch.context() as m:
        pipeline_only(m)
        return fn(*args, workers=1, **kwargs)


def served_spy(monkeypatch: pytest.MonkeyPatch, name: str, *modules: Any) -> list[bool]:
    """Replace the function ``name`` in each of ``modules`` (the first holds the real one)
    by a spy that records, per call, whether it served (returned something other than
    ``None``); the list it appends to."""
    served: list[bool] = []
    real = getattr(modules[0], name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        got = real(*args, **kwargs)
        served.append(got is not None)
        return got

    for module in modules:
        monkeypatch.setattr(module, name, spy)
    return served


def near_and_lower(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``a`` made Hermitian only within the default tolerance (one entry moved by 1e-14),
    and ``a`` with its strict upper triangle doubled (what ``check=False`` must read as
    its lower triangle)."""
    near = a.clone()
    near[..., 0, 1] += 1e-14
    garbage = a.clone()
    garbage.triu_(1).add_(a.tril())
    return near, garbage
