"""spectra.distributed on a real 2-process LocalCluster: exact equality with the core."""

from __future__ import annotations

import os
import signal
import time

import dask
import dask.array as da
import distributed
import numpy as np
import pytest

import spectra
import spectra.distributed as sd

from .helpers import DTYPES, assert_same, assert_same_pairs, hermitian, positive_definite, tol

UNEVEN = (3, 5, 1, 2, 4)  # blocks of unequal sizes, a single-matrix block included


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 7, 33])
def test_eigh_equals_the_core_on_the_whole_array(client, dtype, n):
    x = hermitian((sum(UNEVEN),), n, dtype, seed=n)
    xd = da.from_array(x, chunks=(UNEVEN, n, n))
    w, v = client.compute(list(sd.eigh(xd)), sync=True)
    assert_same_pairs(w, v, spectra.eigh(x))
    # and the core agrees with the independent SciPy reference
    sref = spectra.reference(x)
    scale = max(1.0, float(np.abs(sref.eigenvalues).max()))
    assert np.abs(w - sref.eigenvalues).max() <= 10 * tol(dtype) * scale


def test_complex_gauge_is_bitwise_position_invariant(client):
    x = hermitian((15,), 7, np.complex128, seed=7)
    xd = da.from_array(x, chunks=(UNEVEN, 7, 7))
    v = sd.eigh(xd).eigenvectors.compute()
    assert_same(v, spectra.eigh(x).eigenvectors)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_eigvalsh_k_largest_and_two_batch_axes(client, dtype):
    x = hermitian((4, 6), 9, dtype, seed=3)
    xd = da.from_array(x, chunks=((1, 3), (2, 4), 9, 9))
    w = sd.eigvalsh(xd, k=3, largest=True)
    assert w.shape == (4, 6, 3) and w.dtype == spectra.eigvalsh(x[:1, :1]).dtype
    assert_same(w.compute(), spectra.eigvalsh(x, k=3, largest=True))
    wk, vk = dask.compute(*sd.eigh(xd, k=2))
    assert_same_pairs(wk, vk, spectra.eigh(x, k=2))


@pytest.mark.parametrize("dtype", DTYPES)
def test_generalized_batched_b_with_other_chunks(client, dtype):
    x = hermitian((15,), 8, dtype, seed=4)
    b = positive_definite((15,), 8, dtype, seed=5)
    xd = da.from_array(x, chunks=(UNEVEN, 8, 8))
    bd = da.from_array(b, chunks=(6, 8, 8))  # rechunked to x's blocks
    w, v = dask.compute(*sd.eigh(xd, bd))
    assert_same_pairs(w, v, spectra.eigh(x, b))
    # V^H B V = I, independently of the core
    gram = np.conj(np.swapaxes(v, -1, -2)) @ b @ v
    assert np.abs(gram - np.eye(8)).max() < 100 * tol(dtype)


def test_generalized_one_b_for_all_and_canonical_orthogonalization(client):
    x = hermitian((10,), 6, np.float64, seed=6)
    rng = np.random.default_rng(7)
    basis = rng.standard_normal((6, 4))
    b = basis @ basis.T + 1e-9 * np.eye(6)  # rank 4: two directions below lindep
    xd = da.from_array(x, chunks=((4, 4, 2), 6, 6))
    w, v = dask.compute(*sd.eigh(xd, b, lindep=1e-6, lindep_fill=1e30))
    ref = spectra.eigh(x, b, lindep=1e-6, lindep_fill=1e30)
    assert_same(w, ref.eigenvalues)
    assert_same(v, ref.eigenvectors)
    assert np.all(w[:, 4:] == 1e30) and np.all(v[:, :, 4:] == 0)
    w1 = sd.eigvalsh(xd, positive_definite((), 6, np.float64)).compute()
    assert_same(w1, spectra.eigvalsh(x, positive_definite((), 6, np.float64)))


def test_blocks_run_on_both_workers(client):
    x = hermitian((16,), 5, np.float64, seed=8)
    w, v = sd.eigh(da.from_array(x, chunks=(2, 5, 5)))
    w, v = client.persist([w, v])
    distributed.wait([w, v])
    holders = {addr for keys in client.who_has(w).values() for addr in keys}
    assert len(holders) == 2
    assert_same(w.compute(), spectra.eigh(x).eigenvalues)


def test_matrix_axes_split_are_rechunked_with_a_warning(client):
    x = hermitian((6,), 8, np.complex64, seed=9)
    xd = da.from_array(x, chunks=(3, 4, 4))
    with pytest.warns(da.core.PerformanceWarning, match="chunked inside its matrices"):
        w, v = sd.eigh(xd)
    assert w.chunks == ((3, 3), (8,))
    assert_same_pairs(*dask.compute(w, v), spectra.eigh(x))


def test_nan_in_one_block_raises_the_core_error_with_global_indices(client):
    x = hermitian((12,), 4, np.float64, seed=10)
    x[9, 1, 2] = np.nan
    xd = da.from_array(x, chunks=((5, 5, 2), 4, 4))
    with pytest.raises(ValueError, match="NaN or Inf") as local:
        spectra.eigh(x)
    assert "[9]" in str(local.value)
    with pytest.raises(ValueError, match=r"dask block \(1,\).*NaN or Inf.*batch indices \[9\]"):
        sd.eigh(xd).eigenvalues.compute()


def test_not_positive_definite_b_raises_linalgerror_on_the_client(client):
    x = hermitian((2, 5), 3, np.float64, seed=11)
    b = positive_definite((2, 5), 3, np.float64)
    b[1, 3] = -b[1, 3]
    xd = da.from_array(x, chunks=(1, (2, 3), 3, 3))
    with pytest.raises(spectra.LinAlgError, match=r"batch indices \[\(1, 3\)\]") as err:
        sd.eigvalsh(xd, b).compute()
    assert err.value.indices == [(1, 3)]


# ------------------------------------------------------------------ domains on the cluster


class Chain:
    """Stand-in tight-binding model: a two-site (SSH) chain, E(k) = +-|t1 + t2 e^{2 pi i k}|."""

    def __init__(self, t1: float, t2: float):
        self.t1, self.t2 = t1, t2

    def bands(self, k):
        k = np.asarray(k, dtype=np.float64)[..., 0]
        off = self.t1 + self.t2 * np.exp(2j * np.pi * k)
        h = np.zeros((*k.shape, 2, 2), dtype=np.complex128)
        h[..., 0, 1], h[..., 1, 0] = off, np.conj(off)
        return spectra.eigvalsh(h)


def test_bands_of_a_stand_in_model_over_k_blocks(client):
    k = np.linspace(-0.5, 0.5, 101)[:, None]
    e = sd.bands(Chain(1.0, 0.4), da.from_array(k, chunks=((30, 30, 41), 1)))
    assert e.shape == (101, 2) and e.chunks[0] == (30, 30, 41)
    got = e.compute()
    exact = np.abs(1.0 + 0.4 * np.exp(2j * np.pi * k[:, 0]))
    np.testing.assert_allclose(got, np.stack([-exact, exact], -1), atol=1e-12)


def test_bands_of_a_tightbinding_model(client):
    import spectra.tightbinding as tb

    g = tb.Model([[1.0, 0.0], [0.5, 3**0.5 / 2]], [[1 / 3, 1 / 3], [2 / 3, 2 / 3]])
    for r in ([0, 0], [-1, 0], [0, -1]):
        g.add_hopping(-1.0, 0, 1, r)
    k = np.random.default_rng(12).uniform(-0.5, 0.5, size=(40, 2))
    e = sd.bands(g, da.from_array(k, chunks=(15, 2))).compute()
    assert isinstance(e, np.ndarray)
    np.testing.assert_array_equal(e[15:30], g.bands(k[15:30]))  # each block is model.bands
    # graphene: E = +-|1 + e^{-2 pi i k1} + e^{-2 pi i k2}| (independent of the model code)
    f = np.abs(1 + np.exp(-2j * np.pi * k[:, 0]) + np.exp(-2j * np.pi * k[:, 1]))
    np.testing.assert_allclose(e, np.stack([-f, f], -1), atol=1e-10)


def test_moments_and_batch_pca_fit_on_the_cluster(client):
    from sklearn import decomposition

    import spectra.pca as pca_mod

    rng = np.random.default_rng(13)
    x = rng.standard_normal((5, 60, 4)) @ rng.standard_normal((4, 4)) + 3.0
    xd = da.from_array(x, chunks=((2, 3), (25, 25, 10), 4))
    count, mean, scatter = dask.compute(*sd.moments(xd))
    np.testing.assert_array_equal(count, [60] * 5)
    np.testing.assert_allclose(mean, x.mean(1), atol=1e-12)
    cov = np.stack([np.cov(xi, rowvar=False) for xi in x])
    np.testing.assert_allclose(scatter / 59, cov, atol=1e-12)
    fitted = sd.fit_pca(pca_mod.BatchPCA(2), xd)
    for i in range(5):
        ref = decomposition.PCA(2, svd_solver="full").fit(x[i])
        np.testing.assert_allclose(fitted.components_[i], ref.components_, atol=1e-8)
        np.testing.assert_allclose(
            fitted.explained_variance_[i], ref.explained_variance_, rtol=1e-10
        )


# ------------------------------------------------------------------ fault tolerance (last)


def _slow_block(seed_base, n, block_id=None):
    """Deterministic matrices for one block, slowly, so the computation is in flight."""
    time.sleep(0.4)
    return hermitian((3,), n, np.complex128, seed=seed_base + block_id[0])


def test_a_worker_killed_mid_computation_loses_and_duplicates_nothing(client):
    blocks, n = 12, 6
    x = da.map_blocks(
        _slow_block,
        100,
        n,
        chunks=((3,) * blocks, (n,), (n,)),
        dtype=np.complex128,
        meta=np.empty((0, 0, 0), np.complex128),
    )
    w, v = sd.eigh(x)
    futures = client.compute([w, v])
    before = set(client.scheduler_info()["workers"])
    deadline = time.monotonic() + 30
    victim = None
    while victim is None and time.monotonic() < deadline:  # a worker holding results, busy
        held, busy = client.has_what(), client.processing()
        victim = next((a for a in before if held.get(a) and busy.get(a)), None)
        time.sleep(0.02)
    assert victim is not None, "no worker was mid-computation"
    assert not all(f.done() for f in futures)
    pid = client.run(os.getpid, workers=[victim])[victim]
    os.kill(pid, signal.SIGKILL)
    got_w, got_v = client.gather(futures)
    client.wait_for_workers(2, timeout=60)
    after = set(client.scheduler_info()["workers"])
    assert victim not in after  # the worker really died (the nanny started a new one)
    data = np.concatenate([hermitian((3,), n, np.complex128, seed=100 + i) for i in range(blocks)])
    assert_same_pairs(got_w, got_v, spectra.eigh(data))
