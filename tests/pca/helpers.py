"""Shared helpers for the BatchPCA tests: data generators and the per-dataset sklearn check."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from sklearn.decomposition import PCA

TOL = {np.float32: 1e-4, np.float64: 1e-10}
# components are compared where the spectral gap resolves them at the dtype's precision:
# error ~ eps * lambda_max / gap, so demand gap / lambda_max above this
GAP = {np.float32: 1e-2, np.float64: 1e-5}


def make_data(
    rng: np.random.Generator, n_sets: int, n: int, d: int, dtype=np.float64, spread: float = 10.0
) -> np.ndarray:
    """``(n_sets, n, d)`` data with a spread-out spectrum, a random basis and offsets."""
    scales = np.geomspace(spread, 1.0, d) ** 0.5
    out = np.empty((n_sets, n, d))
    for b in range(n_sets):
        q, _ = np.linalg.qr(rng.normal(size=(d, d)))
        out[b] = (rng.normal(size=(n, d)) * scales) @ q.T + rng.normal(size=d) * 3
    return out.astype(dtype)


def as_kind(x: np.ndarray, kind: str) -> Any:
    return torch.from_numpy(x) if kind == "torch" else x


def to_np(x: Any) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def reference(x: np.ndarray, n_components: Any, whiten: bool = False) -> PCA:
    """sklearn's full-SVD PCA of one dataset, in float64 (the exact answer)."""
    return PCA(n_components, whiten=whiten, svd_solver="full").fit(x.astype(np.float64))


def resolved(ref: PCA, dtype) -> np.ndarray:
    """Rows of ``ref.components_`` that are determined by the data to ``dtype``'s precision."""
    ev = ref.explained_variance_
    if ev.size == 0:
        return np.zeros(0, dtype=bool)
    full = np.append(ev, ref.noise_variance_ if ref.noise_variance_ else 0.0)
    prev = np.concatenate([[np.inf], np.diff(-full)])[: ev.size]
    nxt = np.diff(-full)[: ev.size] if full.size > ev.size else np.full(ev.size, np.inf)
    gap = np.minimum(prev, nxt) / max(ev[0], 1e-300)
    return (gap > GAP[dtype]) & (ev > GAP[dtype] * ev[0])


def check_dataset(
    model, b: int, x: np.ndarray, ref: PCA, dtype, x_new: np.ndarray, k_rows: int | None = None
) -> int:
    """Compare dataset ``b`` of a fitted BatchPCA with sklearn; returns #components compared."""
    tol = TOL[dtype]
    k = int(ref.n_components_)
    assert int(to_np(model.n_components_)[b]) == k
    assert int(to_np(model.n_samples_)[b]) == x.shape[0]
    comps = to_np(model.components_)[b]
    assert comps.dtype == dtype
    kmax = comps.shape[0]
    if k_rows is not None:
        assert kmax == k_rows
    np.testing.assert_array_equal(to_np(model.components_mask_)[b], np.arange(kmax) < k)
    assert np.all(comps[k:] == 0)
    ev = to_np(model.explained_variance_)[b]
    ev_scale = max(float(ref.explained_variance_[0]) if k else 1.0, 1e-300)
    np.testing.assert_allclose(
        to_np(model.mean_)[b], ref.mean_, rtol=0, atol=tol * (np.abs(x).max() + 1)
    )
    np.testing.assert_allclose(ev[:k], ref.explained_variance_, rtol=0, atol=tol * ev_scale)
    assert np.all(ev[k:] == 0)
    np.testing.assert_allclose(
        to_np(model.explained_variance_ratio_)[b][:k],
        ref.explained_variance_ratio_,
        rtol=0,
        atol=tol,
    )
    sv = to_np(model.singular_values_)[b][:k].astype(np.float64)
    s_scale = float(ref.singular_values_[0]) if k else 1.0
    np.testing.assert_allclose(sv**2, ref.singular_values_**2, rtol=0, atol=tol * s_scale**2)
    big = ref.explained_variance_ > 1e-3 * ev_scale
    np.testing.assert_allclose(sv[big], ref.singular_values_[big], rtol=0, atol=tol * s_scale)
    np.testing.assert_allclose(
        float(to_np(model.noise_variance_)[b]), ref.noise_variance_, rtol=0, atol=tol * ev_scale
    )
    good = resolved(ref, dtype)
    np.testing.assert_allclose(comps[:k][good], ref.components_[good], rtol=0, atol=tol)
    return int(good.sum())


def check_transforms(
    z: np.ndarray, x_back: np.ndarray, ref: PCA, dtype, x_new: np.ndarray, z_in: np.ndarray
) -> None:
    """``z``: our transform of ``x_new`` (M, K); ``x_back``: our inverse of ``z_in`` (M, K)."""
    tol = TOL[dtype]
    k = int(ref.n_components_)
    good = resolved(ref, dtype)
    assert z.dtype == dtype and x_back.dtype == dtype
    assert np.all(z[:, k:] == 0)
    want = ref.transform(x_new.astype(np.float64))
    atol = tol * (np.abs(want[:, good]).max(initial=0.0) + 1e-300)
    np.testing.assert_allclose(z[:, :k][:, good], want[:, good], rtol=0, atol=atol)
    # inverse: z_in must be 0 on unresolved components (such a row is any vector of its
    # subspace), see zero_unresolved
    zin = z_in[:, :k]
    back = ref.inverse_transform(zin)
    mag = np.abs(zin).sum(-1).max() * (
        np.sqrt(ref.explained_variance_).max() if ref.whiten and k else 1.0
    )
    np.testing.assert_allclose(x_back, back, rtol=0, atol=tol * (mag + np.abs(ref.mean_).max() + 1))


def zero_unresolved(z_in: np.ndarray, refs: list[PCA], dtype) -> np.ndarray:
    """Copy of ``z_in`` (B, M, K) with columns past k_b and unresolved components set to 0."""
    out = z_in.copy()
    for b, ref in enumerate(refs):
        k = int(ref.n_components_)
        out[b, :, k:] = 0
        out[b, :, :k][:, ~resolved(ref, dtype)] = 0
    return out
