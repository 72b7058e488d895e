"""Bitwise independence of where a matrix lies: batch, slice, single matrix, chunk, worker.

On some CPUs MKL's LAPACK returns results that depend on the 64-byte alignment of the
matrix it is handed (issue 27: an AMD EPYC where ``torch.linalg.eigh(x)[i]`` and
``torch.linalg.eigh(x[i])`` differed at every odd ``i`` for 33x33 float32). The core stages
every LAPACK call so that each matrix starts on a 64-byte boundary
(``spectra.core._solvers._torch_lapack``); the lane kernels never depended on position. These tests
solve the same matrices at many offsets and compare bitwise, with sizes whose byte size is
*not* a multiple of 64 (asserted), so odd positions of a batch sit misaligned in memory; and
a spy asserts that LAPACK is never handed a batch with a misaligned member. On a CPU whose
LAPACK does not depend on alignment (the Intel CI machine) the comparisons hold either way;
the spy is what fails there if the staging is removed.

From ``_torch_lapack.threaded_from`` (n = 50 real, 48 complex, with eigenvectors) a
single-worker call runs LAPACK on the caller's kernel threads, as ``torch.linalg.eigh``
does, and a fan-out on one per worker; there the comparisons run with one caller kernel
thread (``bitwise_threads``), the condition under which the guarantee holds at those sizes.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import spectra
from spectra.core import STRATEGIES
from spectra.core._solvers import _native
from spectra.core._solvers._kernels import _ready

from .helpers import batch_that_fans_out, bitwise_threads, pin_cpu_vendor, random_hermitian

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]
#: strategy -> sizes it solves itself (its own path, not a fallback), dtypes it takes
BITWISE = {
    "torch": ((1, 2, 3, 5, 8, 17, 33, 50, 64, 65, 100, 130), DTYPES),
    "numba-ql": ((1, 2, 3, 7, 16, 25, 32), DTYPES),
    "numba-jacobi": ((1, 2, 5, 8, 13), [torch.float32, torch.float64]),
    "closed-form": ((1, 2, 3), DTYPES),
    # SciPy's OpenBLAS (the default off Intel CPUs where measured faster): forced here
    "openblas": ((1, 2, 3, 5, 8, 17, 33, 50, 64, 65, 100, 130), DTYPES),
    # OpenBLAS's reduction around numba's tridiagonal lanes (off Intel CPUs): forced
    "twisted": ((1, 2, 3, 5, 8, 17, 33, 50, 64, 65, 100, 130), DTYPES),
}
CASES = [
    pytest.param(s, n, d, id=f"{s}-{n}-{str(d)[6:]}")
    for s, (sizes, dtypes) in BITWISE.items()
    for n in sizes
    for d in dtypes
    if STRATEGIES[s].serves(n, d)
]


def _misaligned(n: int, dtype: torch.dtype) -> bool:
    return (n * n * torch.empty((), dtype=dtype).element_size()) % 64 != 0


def _pairs(x: torch.Tensor, strategy: str, **kw) -> tuple[torch.Tensor, torch.Tensor]:
    w, v = spectra.eigh(x, strategy=strategy, **kw)
    return w, v


def _assert_equal(got, want) -> None:
    for g, e in zip(got, want, strict=True):
        assert g.shape == e.shape
        assert torch.equal(g, e), f"max difference {float((g - e).abs().max()):.3g}"


def test_the_cases_reach_misaligned_offsets():
    # most sizes put odd batch positions off a 64-byte boundary (the failure's condition)
    misaligned = [(n, d) for _, (sizes, ds) in BITWISE.items() for n in sizes for d in ds]
    assert sum(_misaligned(n, d) for n, d in misaligned) > len(misaligned) // 2
    assert _misaligned(33, torch.float32) and _misaligned(65, torch.float64)


@pytest.mark.parametrize(("strategy", "n", "dtype"), CASES)
def test_results_are_bitwise_independent_of_position(strategy, n, dtype):
    if not STRATEGIES[strategy].supports(torch.device("cpu")):
        pytest.skip(f"{strategy} is not available here")
    batch = 13
    a = random_hermitian((batch,), n, dtype, seed=n)
    with bitwise_threads(n, dtype):
        whole = _pairs(a, strategy, workers=1)
        for i in (0, 1, 3, 12):  # a single matrix (2-D) and a batch of one at odd offsets
            w1, v1 = _pairs(a[i], strategy)
            _assert_equal((w1, v1), (whole[0][i], whole[1][i]))
        _assert_equal(_pairs(a[5:10], strategy), (whole[0][5:10], whole[1][5:10]))
        _assert_equal(_pairs(a[1::2], strategy), (whole[0][1::2], whole[1][1::2]))
        _assert_equal(_pairs(a, strategy, chunk_size=3), whole)  # chunks at odd offsets
    p = spectra.plan(n, batch, dtype, strategy=strategy, chunk_size=3)
    assert p.n_chunks == 5 and p.strategy == strategy


@pytest.mark.parametrize(
    ("strategy", "n", "dtype"),
    [c for c in CASES if c.values[1] in (2, 3, 8, 13, 33, 65) and c.values[2] != torch.float32],
)
def test_results_are_bitwise_independent_of_the_worker_split(strategy, n, dtype):
    if not STRATEGIES[strategy].supports(torch.device("cpu")):
        pytest.skip(f"{strategy} is not available here")
    batch = batch_that_fans_out(strategy, n, dtype)
    a = random_hermitian((batch,), n, dtype, seed=7)
    assert spectra.plan(n, batch, dtype, strategy=strategy, workers=1).workers == 1
    with bitwise_threads(n, dtype):
        serial = _pairs(a, strategy, workers=1)
        _assert_equal(_pairs(a, strategy, workers=2), serial)
        tail = _pairs(a[batch // 2 + 1 :], strategy, workers=1)  # the second worker's half
        _assert_equal(tail, (serial[0][batch // 2 + 1 :], serial[1][batch // 2 + 1 :]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [33, 50, 65])
def test_eigenvalues_only_are_bitwise_independent_of_position(n, dtype):
    a = random_hermitian((9,), n, dtype, seed=1)
    assert spectra.plan(n, 9, dtype, vectors=False).strategy == "torch"
    with bitwise_threads(n, dtype, vectors=False):
        whole = spectra.eigvalsh(a)
        for i in (1, 4, 7):
            assert torch.equal(spectra.eigvalsh(a[i]), whole[i])
        assert torch.equal(spectra.eigvalsh(a, chunk_size=2), whole)


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex128])
@pytest.mark.parametrize("n", [33, 64])
def test_lapack_is_never_handed_a_misaligned_batch(monkeypatch, n, dtype):
    calls: list[tuple[tuple[int, ...], int | None]] = []
    eigh, eigvalsh = torch.linalg.eigh, torch.linalg.eigvalsh

    def record(x, out):
        ptr = None if out is None else (out[1] if isinstance(out, tuple) else out).data_ptr()
        calls.append((tuple(x.shape), ptr))

    def spy_eigh(x, *args, out=None, **kw):
        record(x, out)
        return eigh(x, *args, **kw) if out is None else eigh(x, *args, out=out, **kw)

    def spy_eigvalsh(x, *args, out=None, **kw):
        record(x, out)
        return eigvalsh(x, *args, **kw) if out is None else eigvalsh(x, *args, out=out, **kw)

    monkeypatch.setattr(torch.linalg, "eigh", spy_eigh)
    monkeypatch.setattr(torch.linalg, "eigvalsh", spy_eigvalsh)
    # the torch strategy's separate steps (its compiled fused pass aligns per matrix in C:
    # tests/core/test_fused_pass.py, unaligned sizes included)
    monkeypatch.setattr(_native, "native_module", lambda: None)
    a = random_hermitian((11,), n, dtype, seed=2)
    spectra.eigh(a, chunk_size=3)
    spectra.eigh(a[1:], strategy="torch")
    spectra.eigvalsh(a[3:], strategy="torch")
    assert calls, "LAPACK was never called: the test does not reach the torch strategy"
    itemsize = a.element_size()
    for shape, ptr in calls:
        if len(shape) == 3 and shape[0] > 1:  # a batched call: every member aligned
            assert (n * n * itemsize) % 64 == 0, f"misaligned batch handed to LAPACK: {shape}"
        if ptr is not None:  # written in place: the output starts on a boundary
            assert ptr % 64 == 0
    batched = [s for s, _ in calls if len(s) == 3 and s[0] > 1]
    assert bool(batched) == (not _misaligned(n, dtype))  # aligned sizes stay batched


def test_dask_blocks_of_one_equal_the_core():
    da = pytest.importorskip("dask.array")
    sd = pytest.importorskip("spectra.distributed")
    x = random_hermitian((7,), 33, torch.float32, seed=4).numpy()
    xd = da.from_array(x, chunks=((1, 2, 1, 3), 33, 33))
    w, v = sd.eigh(xd)
    wd, vd = np.asarray(w.compute(scheduler="sync")), np.asarray(v.compute(scheduler="sync"))
    we, ve = spectra.eigh(x)
    assert np.array_equal(wd, we) and np.array_equal(vd, ve)


@pytest.mark.parametrize("strategy", ["numpy", "scipy", "jacobi"])
def test_other_strategies_agree_across_positions_within_tolerance(strategy):
    # NumPy's/SciPy's LAPACK buffers are allocated by them (16-byte aligned) and the
    # torch-ops Jacobi's batched products pick kernels by batch size: not bitwise promised
    # (docs/guarantees.md), but every position agrees to rounding
    a = random_hermitian((9,), 33, torch.float64, seed=5)
    w, v = spectra.eigh(a, strategy=strategy)
    for i in (1, 4):
        wi, vi = spectra.eigh(a[i], strategy=strategy)
        torch.testing.assert_close(wi, w[i], atol=1e-12, rtol=1e-12)
        torch.testing.assert_close(vi, v[i], atol=1e-10, rtol=0)


@pytest.mark.parametrize(
    ("n", "dtype", "batch"),
    [(16, torch.float64, 64), (16, torch.complex64, 4096), (8, torch.complex128, 160)],
)
def test_a_batch_the_lane_kernels_take_agrees_with_the_matrix_alone_to_rounding(
    monkeypatch, n, dtype, batch
):
    """The planner gives the batch a lane kernel and the matrix alone the direct path's
    LAPACK: two algorithms, so the same eigenpairs to rounding (docs/guarantees.md), the
    gauge included (columns agree without a sign or phase)."""
    if not STRATEGIES["numba-ql"].supports(torch.device("cpu")):
        pytest.skip("numba is not installed")
    monkeypatch.setenv(_ready.ENV, "eager")
    pin_cpu_vendor(monkeypatch, "GenuineIntel")  # no twisted: the lane kernel's own sizes
    a = random_hermitian((batch,), n, dtype, seed=n)
    assert spectra.plan(n, batch, dtype).strategy == "numba-ql"
    assert spectra.plan(n, 1, dtype).strategy == "torch"
    w, v = spectra.eigh(a)
    eps = float(torch.finfo(w.dtype).eps)
    for i in (0, batch // 2, batch - 1):
        wi, vi = spectra.eigh(a[i])
        scale = float(wi.abs().max())
        assert float((w[i] - wi).abs().max()) <= 20 * n * eps * scale, i
        assert float((v[i] - vi).abs().max()) <= 1e4 * n * eps, i
