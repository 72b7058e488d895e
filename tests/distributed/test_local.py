"""spectra.distributed without a cluster: graph building, errors, moments, domains."""

from __future__ import annotations

import sys
import threading

import dask
import dask.array as da
import numpy as np
import pytest
import torch

import spectra
import spectra.distributed as sd
from spectra.distributed._blocks import aligned, relocate, solve_block

from .helpers import assert_same, hermitian, positive_definite


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


# ------------------------------------------------------------------ eigh graph building


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_synchronous_scheduler_equals_the_core(dtype):
    x = hermitian((3, 7), 6, dtype, seed=1)
    xd = da.from_array(x, chunks=((2, 1), (3, 4), 6, 6))
    w, v = dask.compute(*sd.eigh(xd, k=4, largest=True))
    ref = spectra.eigh(x, k=4, largest=True)
    assert_same(w, ref.eigenvalues)
    assert_same(v, ref.eigenvectors)
    assert sd.eigh(xd).eigenvectors.chunks == ((2, 1), (3, 4), (6,), (6,))


def test_numpy_input_is_wrapped_and_integers_become_float64():
    x = np.stack([np.diag([3, 1, 2])] * 4)
    w, v = sd.eigh(x)
    assert isinstance(w, da.Array) and w.dtype == np.float64 and v.dtype == np.float64
    np.testing.assert_array_equal(w.compute(), np.tile([1.0, 2.0, 3.0], (4, 1)))


def test_empty_batch_and_k_zero():
    x = da.zeros((0, 3, 3), chunks=(1, 3, 3))
    assert sd.eigvalsh(x).compute().shape == (0, 3)
    y = da.from_array(hermitian((4,), 3, np.float64), chunks=(2, 3, 3))
    w, v = dask.compute(*sd.eigh(y, k=0))
    assert w.shape == (4, 0) and v.shape == (4, 3, 0)


def test_bad_arguments_fail_when_the_graph_is_built():
    x = da.from_array(hermitian((4,), 3, np.float64), chunks=(2, 3, 3))
    with pytest.raises(ValueError, match=r"\(\.\.\., n, n\)"):
        sd.eigh(da.zeros((4, 3, 2)))
    with pytest.raises(ValueError, match="k must be an integer"):
        sd.eigh(x, k=4)
    with pytest.raises(TypeError, match="unknown core option"):
        sd.eigh(x, tolerance=1e-3)
    with pytest.raises(TypeError, match="unknown core option"):
        sd.eigvalsh(x, plan=None)  # a plan describes one dense batch, not the blocks
    with pytest.raises(TypeError, match="dask array"):
        sd.eigh(torch.eye(3))
    with pytest.raises(TypeError, match="timedelta64"):
        sd.eigh(da.zeros((2, 3, 3), dtype="timedelta64[s]"))
    with pytest.raises(ValueError, match="same matrix size"):
        sd.eigh(x, np.eye(4))
    with pytest.raises(ValueError, match="do not broadcast"):
        sd.eigh(x, da.from_array(positive_definite((3,), 3, np.float64)))


def test_missing_dask_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.array", None)
    with pytest.raises(ImportError, match=r"torch-spectra\[distributed\]"):
        sd.eigh(np.eye(2))


# ------------------------------------------------------------------ worker-side helpers


def test_relocate_shifts_one_dimensional_indices_and_keeps_the_tail():
    exc = spectra.InputError("a", "contains NaN or Inf", [(i,) for i in range(0, 24, 2)])
    new = relocate(exc, (10,), (3,))
    assert type(new) is spectra.InputError and new.what == "dask block (3,): a"
    assert new.indices == [(i,) for i in range(10, 34, 2)]
    assert str(new) == (
        "dask block (3,): a contains NaN or Inf at batch indices "
        "[10, 12, 14, 16, 18, 20, 22, 24, 26, 28, ... (12 in all)]"
    )


def test_relocate_shifts_tuples_and_linalgerror_indices():
    exc = spectra.LinAlgError(
        "b", "is not positive definite", [(0, 1), (2, 0)], hint="pass lindep=1e-6 ..."
    )
    new = relocate(exc, (4, 6), (1, 2))
    assert isinstance(new, spectra.LinAlgError)
    assert "batch indices [(4, 7), (6, 6)] (pass lindep" in str(new)
    assert new.indices == [(4, 7), (6, 6)]
    plain = relocate(ValueError("k must be an integer"), (0,), (0,))
    assert type(plain) is ValueError and str(plain) == "dask block (0,): k must be an integer"


def test_solve_block_reindexes_the_core_error():
    x = hermitian((4,), 3, np.float64)
    x[2, 0, 0] = np.inf
    info = {0: {"array-location": [(20, 24), (0, 3), (0, 3)], "chunk-location": (5, 0, 0)}}
    with pytest.raises(ValueError, match=r"dask block \(5,\): .*batch indices \[22\]"):
        solve_block(x, vectors=True, options={}, block_info=info)


def test_misaligned_read_only_blocks_are_copied_before_the_core():
    x = hermitian((3,), 2, np.complex128, seed=2)
    buf = bytearray(8 + x.nbytes)
    view = np.frombuffer(buf, dtype=np.complex128, offset=8).reshape(x.shape)
    view[...] = x
    view.flags.writeable = False
    safe = aligned(view)
    assert safe is not view and safe.ctypes.data % 16 == 0 and safe.flags.writeable
    assert aligned(x) is x
    w, v = solve_block(view, vectors=True, options={})
    ref = spectra.eigh(x)
    assert_same(w, ref.eigenvalues)
    np.testing.assert_allclose(v, ref.eigenvectors, atol=1e-15)


# ------------------------------------------------------------------ moments / PCA / bands


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_moments_match_numpy_for_uneven_sample_chunks(dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 23, 4)) + 5.0
    if np.issubdtype(np.dtype(dtype), np.complexfloating):
        x = x + 1j * rng.standard_normal((3, 23, 4))
    x = x.astype(dtype)
    xd = da.from_array(x, chunks=((1, 2), (0, 10, 1, 12), (2, 2)))  # empty + split features
    count, mean, scatter = dask.compute(*sd.moments(xd))
    xs = x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
    np.testing.assert_array_equal(count, [23, 23, 23])
    np.testing.assert_allclose(mean, xs.mean(1), rtol=1e-12)
    xc = xs - xs.mean(1, keepdims=True)
    np.testing.assert_allclose(scatter, np.conj(xc.swapaxes(1, 2)) @ xc, rtol=1e-10, atol=1e-10)


def test_moments_of_a_list_of_datasets_of_different_lengths():
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((m, 3)) for m in (5, 40, 1)]
    parts = [da.from_array(xs[0]), da.from_array(xs[1], chunks=(7, 3)), xs[2]]
    count, mean, scatter = dask.compute(*sd.moments(parts))
    np.testing.assert_array_equal(count, [5, 40, 1])
    for i, xi in enumerate(xs):
        np.testing.assert_allclose(mean[i], xi.mean(0), rtol=1e-12)
        np.testing.assert_allclose(scatter[i], (xi - xi.mean(0)).T @ (xi - xi.mean(0)), atol=1e-12)
    with pytest.raises(ValueError, match="same number of features"):
        sd.moments([np.zeros((3, 2)), np.zeros((3, 4))])


class Keeper:
    def fit_from_moments(self, count, mean, scatter):
        self.got = (count, mean, scatter)
        return self


def test_fit_pca_hands_moments_in_the_data_dtype_and_needs_the_hook():
    x = da.from_array(
        np.random.default_rng(5).standard_normal((2, 9, 3)).astype(np.float32), chunks=(1, 4, 3)
    )
    count, mean, scatter = sd.fit_pca(Keeper(), x).got
    assert mean.dtype == np.float32 and scatter.dtype == np.float32
    assert count.tolist() == [9, 9]
    with pytest.raises(TypeError, match="fit_from_moments"):
        sd.fit_pca(object(), x)


def test_fit_pca_matches_batch_pca_fit():
    import spectra.pca as pca

    x = np.random.default_rng(6).standard_normal((4, 50, 5))
    fitted = sd.fit_pca(pca.BatchPCA(3), da.from_array(x, chunks=(2, 20, 5)))
    ref = pca.BatchPCA(3).fit(x)
    np.testing.assert_allclose(fitted.components_, ref.components_, atol=1e-10)
    np.testing.assert_allclose(fitted.explained_variance_, ref.explained_variance_, rtol=1e-10)
    np.testing.assert_allclose(fitted.mean_, x.mean(1), rtol=1e-12)


class TwoOutputs:
    def bands(self, k, shift=0.0):
        h = np.zeros((*k.shape[:-1], 2, 2))
        h[..., 0, 0], h[..., 1, 1] = k[..., 0] + shift, -k[..., 0]
        return spectra.eigh(h)


def test_bands_with_tuple_output_kwargs_and_multi_axis_k():
    k = np.random.default_rng(7).uniform(-1, 1, size=(4, 5, 1))
    e, s = sd.bands(TwoOutputs(), da.from_array(k, chunks=(2, 3, 1)), shift=0.5)
    assert e.shape == (4, 5, 2) and s.shape == (4, 5, 2, 2)
    got = np.sort(np.stack([k[..., 0] + 0.5, -k[..., 0]], -1), -1)
    np.testing.assert_allclose(e.compute(), got, atol=1e-15)


def test_bands_needs_a_picklable_model_with_bands():
    class Locked(TwoOutputs):
        lock = threading.Lock()

        def __reduce__(self):
            return (Locked, (), {"lock": self.lock})

    with pytest.raises(TypeError, match="picklable"):
        sd.bands(Locked(), np.zeros((3, 1)))
    with pytest.raises(TypeError, match="bands"):
        sd.bands(object(), np.zeros((3, 1)))


def test_domain_methods_accept_dask_arrays_directly():
    import dask.array as da
    import numpy as np
    from sklearn.decomposition import PCA

    from spectra.pca import BatchPCA
    from spectra.tightbinding import graphene

    model = graphene()
    k = np.random.default_rng(0).random((50, 2))
    lazy = model.bands(da.from_array(k, chunks=(17, 2)))
    assert hasattr(lazy, "dask")
    with dask.config.set(scheduler="synchronous"):
        np.testing.assert_allclose(lazy.compute(), model.bands(k), atol=1e-12)
        x = np.random.default_rng(1).normal(size=(3, 40, 5))
        pca = BatchPCA(2).fit(da.from_array(x, chunks=(1, 20, 5)))
    for i in range(3):
        ref = PCA(2, svd_solver="full").fit(x[i])
        np.testing.assert_allclose(pca.components_[i], ref.components_, atol=1e-10)
        np.testing.assert_allclose(pca.explained_variance_[i], ref.explained_variance_, rtol=1e-10)
