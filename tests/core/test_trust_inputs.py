"""Inputs spectra refuses (Inf anywhere, like NaN) and the one triangle every path reads.

SciPy (``check_finite=True``) refuses Inf in either triangle; spectra must too, naming the
batch indices, on the standard, generalized, complex, ``k=``, ragged and Dask paths. With
``check=False`` every strategy and the generalized paths read the lower triangle only,
as SciPy's ``lower=True`` and LAPACK's ``uplo='L'``.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

import spectra
from spectra.core import STRATEGIES
from spectra.core._errors import InputError

from .helpers import random_hermitian, served_size

CPU_STRATEGIES = sorted(name for name, s in STRATEGIES.items() if s.supports(torch.device("cpu")))


def _batch_with_bad(value, where, dtype=np.float64, batch=4, bad=(1, 3)):
    """``batch`` SPD 3x3 matrices; ``value`` written at ``where`` in the members ``bad``."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((batch, 3, 3))
    a = (x @ x.transpose(0, 2, 1) + 3 * np.eye(3)).astype(dtype)
    for i in bad:
        a[(i, *where)] = value
    return a


UPPER, LOWER, DIAG = (0, 2), (2, 0), (1, 1)


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("where", [UPPER, LOWER, DIAG], ids=["upper", "lower", "diag"])
def test_inf_and_nan_are_refused_in_either_triangle_naming_indices(value, where):
    a = _batch_with_bad(value, where)
    with pytest.raises(ValueError):  # SciPy refuses it too (the reference behaviour)
        scipy.linalg.eigh(a[1])
    for fn in (spectra.eigh, spectra.eigvalsh):
        with pytest.raises(InputError) as info:
            fn(a)
        assert info.value.what == "a"
        assert info.value.indices == [(1,), (3,)]
        assert "NaN or Inf" in str(info.value)


def test_the_issue_example_is_refused():
    with pytest.raises(InputError, match="NaN or Inf"):
        spectra.eigvalsh(np.array([[2.0, np.inf], [1.0, 3.0]]))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128, np.float32])
def test_inf_upper_refused_complex_and_single(dtype):
    a = _batch_with_bad(np.inf, UPPER, dtype=dtype)
    with pytest.raises(InputError) as info:
        spectra.eigh(torch.from_numpy(a))
    assert info.value.indices == [(1,), (3,)]


def test_complex_inf_in_the_imaginary_part_only_is_refused():
    a = _batch_with_bad(0.0, UPPER, dtype=np.complex128)
    a[2, 0, 1] = complex(0.0, np.inf)
    with pytest.raises(InputError) as info:
        spectra.eigvalsh(a)
    assert info.value.indices == [(2,)]


@pytest.mark.parametrize("largest", [False, True])
def test_inf_upper_refused_with_k(largest):
    a = _batch_with_bad(np.inf, UPPER)
    with pytest.raises(InputError) as info:
        spectra.eigh(a, k=1, largest=largest)
    assert info.value.indices == [(1,), (3,)]


@pytest.mark.parametrize("lindep", [None, 1e-8])
@pytest.mark.parametrize("in_b", [False, True])
def test_inf_upper_refused_on_the_generalized_path(lindep, in_b):
    good = _batch_with_bad(0.0, UPPER, bad=())
    bad = _batch_with_bad(np.inf, UPPER)
    a, b = (good, bad) if in_b else (bad, good)
    with pytest.raises(InputError) as info:
        spectra.eigh(a, b, lindep=lindep)
    assert info.value.what == ("b" if in_b else "a")
    assert info.value.indices == [(1,), (3,)]


def test_inf_upper_refused_in_ragged_members_by_list_index():
    mats = [np.eye(2), np.array([[2.0, np.inf], [1.0, 3.0]]), np.eye(3)]
    with pytest.raises(InputError, match=r"a\[1\]"):
        spectra.eigvalsh(mats)
    with pytest.raises(InputError, match=r"b\[1\]"):
        spectra.eigvalsh([np.eye(2)] * 3, [np.eye(2), mats[1], np.eye(2)])


def test_inf_upper_refused_by_spectra_distributed():
    import dask.array as da

    import spectra.distributed as sd

    a = _batch_with_bad(np.inf, UPPER, batch=6, bad=(4,))
    x = da.from_array(a, chunks=(3, 3, 3))
    with pytest.raises(InputError) as info:
        sd.eigvalsh(x).compute(scheduler="synchronous")
    assert "NaN or Inf" in str(info.value)
    assert "batch indices [4]" in str(info.value)  # the index in the whole array
    assert info.value.indices == [(4,)]


def test_shape_errors_are_input_errors():
    with pytest.raises(InputError) as info:
        spectra.eigh(np.zeros((2, 3)))
    assert info.value.what == "a"
    with pytest.raises(InputError) as info:
        spectra.eigh(np.eye(3), np.eye(2))
    assert info.value.what == "b"


# ---- check=False: the lower triangle, on every path -------------------------------------


def _garbage_upper(a: torch.Tensor, seed: int = 0) -> torch.Tensor:
    """``a`` with its strict upper triangle replaced by large unrelated values."""
    g = torch.Generator().manual_seed(seed)
    noise = 1e3 * torch.randn(a.shape, generator=g, dtype=a.real.dtype).to(a.dtype)
    return torch.tril(a) + torch.triu(noise, 1)


def _lower_symmetrized(a: torch.Tensor) -> torch.Tensor:
    low = torch.tril(a, -1)
    return low + low.mH + torch.diag_embed(torch.diagonal(a, dim1=-2, dim2=-1).real.to(a.dtype))


@pytest.mark.parametrize("strategy", CPU_STRATEGIES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128, torch.float32])
def test_check_false_reads_the_lower_triangle_on_every_strategy(strategy, dtype):
    a = random_hermitian((3,), served_size(strategy, dtype, 6), dtype, seed=3)
    garbage = _garbage_upper(a)
    w, v = spectra.eigh(garbage, check=False, strategy=strategy)
    w_ref, v_ref = spectra.eigh(_lower_symmetrized(garbage), strategy=strategy)
    tol = 1e-4 if dtype in (torch.float32, torch.complex64) else 1e-10
    torch.testing.assert_close(w, w_ref, atol=tol * float(w_ref.abs().max()), rtol=0)
    torch.testing.assert_close(v, v_ref, atol=100 * tol, rtol=0)
    ref = scipy.linalg.eigh(garbage[0].numpy(), lower=True, eigvals_only=True)
    np.testing.assert_allclose(w[0].numpy(), ref, atol=tol * float(np.abs(ref).max()), rtol=0)


@pytest.mark.parametrize("lindep", [None, 1e-10])
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_check_false_reads_the_lower_triangle_with_b(lindep, dtype):
    a = random_hermitian((3,), 5, dtype, seed=4)
    x = random_hermitian((3,), 5, dtype, seed=5)
    b = x @ x.mH + 5 * torch.eye(5, dtype=dtype)
    ga, gb = _garbage_upper(a, 1), _garbage_upper(b, 2)
    w, v = spectra.eigh(ga, gb, check=False, lindep=lindep)
    w_ref, v_ref = spectra.eigh(_lower_symmetrized(ga), _lower_symmetrized(gb), lindep=lindep)
    torch.testing.assert_close(w, w_ref, atol=1e-9, rtol=1e-9)
    torch.testing.assert_close(v, v_ref, atol=1e-8, rtol=0)
    ref = scipy.linalg.eigh(ga[0].numpy(), gb[0].numpy(), lower=True, eigvals_only=True)
    np.testing.assert_allclose(w[0].numpy(), ref, rtol=1e-9, atol=1e-9)


def test_check_false_lower_read_keeps_torchs_full_matrix_gradient():
    a = random_hermitian((2,), 4, torch.float64, seed=6)
    b = torch.eye(4, dtype=torch.float64) * 2
    a1 = a.clone().requires_grad_()
    spectra.eigvalsh(a1, b, check=False).sum().backward()
    a2 = a.clone().requires_grad_()
    torch.linalg.eigvalsh(torch.linalg.solve(b, a2)).sum().backward()  # B = 2I: A/2
    torch.testing.assert_close(a1.grad, a2.grad)


# ---- max_memory on the generalized, lindep and autograd paths ----------------------------


def _spd_pair(batch, n, dtype=torch.float64, seed=0):
    a = random_hermitian((batch,), n, dtype, seed=seed)
    x = random_hermitian((batch,), n, dtype, seed=seed + 1)
    return a, x @ x.mH + n * torch.eye(n, dtype=dtype)


@pytest.mark.parametrize("lindep", [None, 1e-10])
def test_chunked_generalized_calls_plan_the_whole_batch_with_its_vectors_flag(lindep):
    """The chunks of a generalized call run the strategy planned for the whole call, with
    or without eigenvectors as the call asks: 100 eigenvalue problems of 8 x 8 stay on
    LAPACK (the lanes claim them from 192), their eigenpairs go to the lanes (from 64),
    and the chunked results are bitwise the unchunked ones either way."""
    from spectra.core._pipeline._solve import whole_batch_strategy
    from spectra.core._solvers._kernels._choice import lane_min_batch

    assert lane_min_batch(8, False, True) <= 100 < lane_min_batch(8, False, False)
    opts = spectra.Options()
    cpu = torch.device("cpu")
    for vectors in (False, True):
        whole = spectra.plan(8, 100, torch.float64, vectors=vectors).strategy
        got = whole_batch_strategy(opts, 8, 100, torch.float64, cpu, vectors).strategy
        assert got == whole, vectors
    a = random_hermitian((100,), 8, torch.float64, seed=3)
    b = torch.eye(8, dtype=torch.float64) * 2
    kw = {} if lindep is None else {"lindep": lindep}
    small = 64 * 1024  # a few matrices per chunk
    assert torch.equal(spectra.eigvalsh(a, b, **kw), spectra.eigvalsh(a, b, max_memory=small, **kw))
    w, v = spectra.eigh(a, b, **kw)
    wc, vc = spectra.eigh(a, b, max_memory=small, **kw)
    assert torch.equal(w, wc) and torch.equal(v, vc)


@pytest.mark.parametrize("lindep", [None, 1e-10])
def test_generalized_paths_chunk_to_the_memory_budget(monkeypatch, lindep):
    from spectra.core._pipeline import _solve

    batch, n = 12, 6
    a, b = _spd_pair(batch, n)
    full = spectra.eigh(a, b, lindep=lindep)
    budget = 3 * _solve.GENERALIZED_MATRICES * n * n * a.element_size()  # 3 matrices a chunk
    seen: list[int] = []
    inner = _solve._solve_cholesky if lindep is None else _solve._solve_canonical
    name = "_solve_cholesky" if lindep is None else "_solve_canonical"

    def spy(x, y, *args):
        seen.append(x.shape[0])
        return inner(x, y, *args)

    monkeypatch.setattr(_solve, name, spy)
    w, v = spectra.eigh(a, b, lindep=lindep, max_memory=budget)
    assert seen and len(seen) == 4 and max(seen) == 3, seen
    assert all(r * _solve.GENERALIZED_MATRICES * n * n * 8 <= budget for r in seen)
    torch.testing.assert_close(w, full.eigenvalues, atol=0, rtol=0)
    torch.testing.assert_close(v, full.eigenvectors, atol=0, rtol=0)


def test_chunked_generalized_errors_name_indices_of_the_whole_batch():
    from spectra.core._pipeline import _solve

    a, b = _spd_pair(10, 4)
    b[7] = -b[7]
    budget = 2 * _solve.GENERALIZED_MATRICES * 16 * 8
    with pytest.raises(spectra.LinAlgError) as info:
        spectra.eigh(a.reshape(2, 5, 4, 4), b.reshape(2, 5, 4, 4), max_memory=budget)
    assert info.value.indices == [(1, 2)]


def test_broadcast_b_is_chunked_by_index():
    a, b = _spd_pair(9, 5)
    full = spectra.eigvalsh(a, b[0])
    chunked = spectra.eigvalsh(a, b[0], max_memory=2 * 10 * 25 * 8)
    torch.testing.assert_close(chunked, full, atol=0, rtol=0)


def test_backward_chunks_to_the_memory_budget(monkeypatch):
    from spectra.core._pipeline import _autograd

    batch, n = 10, 5
    a = random_hermitian((batch,), n, torch.float64, seed=4)

    def grad(**kw):
        x = a.clone().requires_grad_()
        w, v = spectra.eigh(x, **kw)
        ((v**2) * torch.arange(n, dtype=x.dtype)).sum().add((w**2).sum()).backward()
        return x.grad

    ref = grad()
    rows: list[int] = []
    inner = _autograd._backward_block

    def spy(w, v, *args):
        rows.append(v.shape[0])
        return inner(w, v, *args)

    monkeypatch.setattr(_autograd, "_backward_block", spy)
    budget = 2 * _autograd.BACKWARD_MATRICES * n * n * 8
    got = grad(max_memory=budget)
    assert rows == [2] * 5, rows
    torch.testing.assert_close(got, ref, atol=0, rtol=0)


@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 0), (0, 0)])
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_empty_inputs_stay_attached_to_autograd(shape, dtype):
    a = torch.zeros(shape, dtype=dtype, requires_grad=True)
    w, v = spectra.eigh(a)
    assert w.grad_fn is not None and v.grad_fn is not None
    assert w.shape == shape[:-1] and v.shape == shape
    (w.sum() + v.abs().sum()).backward()
    assert a.grad is not None and a.grad.shape == shape
    x = torch.zeros(shape, dtype=dtype, requires_grad=True)
    spectra.eigvalsh(x).sum().backward()
    assert x.grad is not None and x.grad.shape == shape
