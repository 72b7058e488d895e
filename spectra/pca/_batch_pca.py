"""BatchPCA: one sklearn-exact PCA per dataset, for many datasets in one batched call."""

from __future__ import annotations

from typing import Any, Literal

import torch

from ..core.domain import Origin, as_tensor, is_dask_collection, restore
from ._inputs import Batch, as_3d, as_batch, check_finite, is_ragged, is_single, zero_padding
from ._moments import centered, scatter_of
from ._scoring import ProbabilisticMixin
from ._sklearn import EstimatorBase, NotFittedError, check_eigh_options
from ._solve import PCAFit, check_n_components, from_gram, from_scatter

Solver = Literal["auto", "covariance", "gram"]
Precision = Literal["data", "float64"]

_ATTRS = {
    "mean_": "mean",
    "components_": "components",
    "explained_variance_": "explained_variance",
    "explained_variance_ratio_": "explained_variance_ratio",
    "singular_values_": "singular_values",
    "noise_variance_": "noise_variance",
    "n_components_": "n_components",
    "n_samples_": "n_samples",
    "components_mask_": "mask",
}


class BatchPCA(ProbabilisticMixin, EstimatorBase):
    """Principal component analysis of many datasets at once, matching sklearn exactly.

    Each dataset ``b`` gets the PCA that ``sklearn.decomposition.PCA(n_components,
    whiten=whiten, svd_solver="full")`` would fit on it alone: same components (signs
    included: the largest-|entry| of each component is positive), explained variances
    (``n_samples - 1`` normalization), ratios (over the total variance), singular values,
    noise variance, whitening and inverse transform. All datasets go through one batched
    eigh call.

    Parameters
    ----------
    n_components : int, float in (0, 1), "mle" or None
        An int keeps that many components in every dataset (at most
        ``min(n_samples, n_features)`` of each); a float keeps, per dataset, the fewest
        components whose explained variance exceeds that fraction; ``"mle"`` picks each
        dataset's count by Minka's MLE (as sklearn; needs ``n_samples >= n_features``);
        None keeps ``min(n_samples, n_features)``. Per-dataset counts are padded to the largest with
        zeros; ``components_mask_`` marks the real ones and ``n_components_`` counts them.
    whiten : bool
        Scale the projections to unit variance (``transform`` divides by
        ``sqrt(explained_variance_)``, ``inverse_transform`` multiplies back).
    center : bool
        Subtract each dataset's mean (sklearn always does; False gives an uncentered PCA
        with ``mean_ = 0`` and variances from ``X^T X / (n_samples - 1)``).
    solver : {"auto", "covariance", "gram"}
        "covariance": eigh of the ``D x D`` scatter matrices; "gram": eigh of the
        ``N x N`` Gram matrices ``X_c X_c^T`` (smaller when there are fewer samples than
        features); "auto" takes the Gram route when the (padded) sample count is below
        the feature count.
    precision : {"data", "float64"}
        "float64" accumulates the moments and solves in float64 for float32 data; results
        come back in the data's dtype either way.
    **eigh_options
        Passed to :func:`spectra.eigh` (e.g. ``device``, ``chunk_size``, ``workers``).
        Any other keyword (sklearn's ``svd_solver``, ``random_state``) is a ``TypeError``.

    **scikit-learn**: with sklearn installed this is a ``BaseEstimator`` and
    ``TransformerMixin`` (``clone``, ``Pipeline``, ``GridSearchCV`` work; parameters are
    stored unchanged and validated again at ``fit``). A single ``(n_samples, n_features)``
    array is one dataset and gets sklearn's 2-D shapes back (``components_`` ``(K, D)``,
    ``transform`` ``(M, K)``, ``score`` a float), so ``make_pipeline(StandardScaler(),
    BatchPCA(3))`` behaves as sklearn's ``PCA(3, svd_solver="full")``.

    Attributes
    ----------
    components_ : (B, K, D) principal axes in feature space, rows sorted by variance.
    explained_variance_, explained_variance_ratio_, singular_values_ : (B, K).
    mean_ : (B, D). noise_variance_ : (B,). n_samples_, n_components_ : (B,) integers.
    components_mask_ : (B, K) bool, False on the padding of per-dataset component counts.
    n_features_in_ : int.

    Examples
    --------
    >>> import numpy as np
    >>> from spectra.pca import BatchPCA
    >>> X = np.random.default_rng(0).normal(size=(100, 50, 8))   # 100 datasets
    >>> pca = BatchPCA(3).fit(X)
    >>> pca.components_.shape, pca.explained_variance_.shape
    ((100, 3, 8), (100, 3))
    >>> pca.transform(X).shape
    (100, 50, 3)
    """

    def __init__(
        self,
        n_components: int | float | str | None = None,
        *,
        whiten: bool = False,
        center: bool = True,
        solver: Solver = "auto",
        precision: Precision = "data",
        **eigh_options: Any,
    ) -> None:
        check_eigh_options(eigh_options)
        self.n_components = n_components
        self.whiten = whiten
        self.center = center
        self.solver = solver
        self.precision = precision
        self.eigh_options = eigh_options
        self._check_params()
        self._fit: PCAFit | None = None

    def _check_params(self) -> None:
        # at construction and again at fit (set_params may have changed them)
        check_n_components(self.n_components)
        if self.solver not in ("auto", "covariance", "gram"):
            raise ValueError(f"solver must be 'auto', 'covariance' or 'gram', got {self.solver!r}")
        if self.precision not in ("data", "float64"):
            raise ValueError(f"precision must be 'data' or 'float64', got {self.precision!r}")

    def __sklearn_is_fitted__(self) -> bool:
        return getattr(self, "_fit", None) is not None

    # ---------------------------------------------------------------- fitting
    def _work_dtype(self, dtype: torch.dtype) -> torch.dtype:
        return torch.float64 if self.precision == "float64" else dtype

    def fit(self, X: Any, y: Any = None, *, lengths: Any = None, mask: Any = None) -> BatchPCA:
        """Fit one PCA per dataset.

        Parameters
        ----------
        X : ``(B, N, D)`` array (torch on any device, or NumPy), or a list of
            ``(N_i, D)`` arrays with different sample counts.
        y : ignored (sklearn compatibility).
        lengths : optional ``(B,)`` sample counts of a padded ``(B, N, D)`` array: dataset
            ``b`` is ``X[b, :lengths[b]]``.
        mask : optional ``(B, N)`` bool, True on the real samples (alternative to lengths).
            Padded entries are ignored, even NaN.

        Returns
        -------
        BatchPCA
            ``self``.

        Examples
        --------
        >>> import numpy as np
        >>> from spectra.pca import BatchPCA
        >>> rng = np.random.default_rng(0)
        >>> pca = BatchPCA(2).fit([rng.normal(size=(n, 5)) for n in (10, 40, 7)])
        >>> pca.n_samples_
        array([10, 40,  7])

        A Dask array ``(B, N, D)`` (or a list of Dask arrays, e.g. one per file) is fitted
        without gathering it: per-dataset moments are reduced on the workers and the fit is
        finished from them (:func:`spectra.distributed.fit_pca`, covariance route).
        """
        self._check_params()
        single = is_single(X)
        if single and (lengths is not None or mask is not None):
            raise ValueError("lengths/mask apply to a batch (B, N, D), not to one (N, D) dataset")
        if is_dask_collection(X) or (
            isinstance(X, (list, tuple)) and X and all(is_dask_collection(x) for x in X)
        ):
            if lengths is not None or mask is not None:
                raise ValueError(
                    "lengths/mask are not supported with Dask input: pass a list "
                    "of Dask arrays with different sample counts instead"
                )
            from spectra.distributed import fit_pca

            fit_pca(self, X[None] if single else X)
        else:
            batch = as_batch(as_3d(X) if single else X, lengths=lengths, mask=mask)
            self._fit_batch(batch)
        self._single = single
        if single:
            self._squeeze()
        return self

    def _fit_batch(self, batch: Batch) -> None:
        data = batch.data.to(self._work_dtype(batch.data.dtype))
        mean, xc = centered(data, batch.mask, batch.counts, self.center, batch.ragged)
        n_pad, d = data.shape[-2], data.shape[-1]
        route = self.solver
        if route == "auto":
            route = "gram" if n_pad < d else "covariance"

        def on_bad(_: list[int]) -> None:
            check_finite(batch)  # names datasets and samples with NaN/Inf, if that is the cause

        if route == "gram":
            fit = from_gram(batch.counts, mean, xc, self.n_components, self.eigh_options, on_bad)
        else:
            fit = from_scatter(
                batch.counts, mean, scatter_of(xc), self.n_components, self.eigh_options, on_bad
            )
        self._store(fit, batch.origin, d)

    def fit_from_moments(self, count: Any, mean: Any, scatter: Any) -> BatchPCA:
        """Finish a fit from per-dataset sufficient statistics (the distributed-fit hook).

        Parameters
        ----------
        count : ``(B,)`` sample counts.
        mean : ``(B, D)`` means.
        scatter : ``(B, D, D)`` centered scatter matrices ``sum (x - mean)(x - mean)^T``.

        Partial statistics of disjoint sample chunks merge with
        :func:`spectra.pca.combine_moments`; :func:`spectra.pca.moments` computes them.
        The result equals ``fit`` on the full data with ``solver="covariance"``.

        Returns
        -------
        BatchPCA
            ``self``.

        Examples
        --------
        >>> import numpy as np
        >>> from spectra.pca import BatchPCA, combine_moments, moments
        >>> X = np.random.default_rng(1).normal(size=(4, 30, 6))
        >>> m = combine_moments(moments(X[:, :10]), moments(X[:, 10:]))
        >>> a = BatchPCA(2).fit_from_moments(*m)
        >>> b = BatchPCA(2).fit(X)
        >>> bool(np.allclose(a.components_, b.components_))
        True
        """
        s, origin = as_tensor(scatter, "scatter")
        mu, _ = as_tensor(mean, "mean")
        n = torch.as_tensor(count)
        if s.ndim != 3 or s.shape[-1] != s.shape[-2]:
            raise ValueError(f"scatter must have shape (B, D, D), got {tuple(s.shape)}")
        b, d = s.shape[0], s.shape[-1]
        if mu.shape != (b, d) or n.shape != (b,):
            raise ValueError(
                f"count must have shape ({b},) and mean ({b}, {d}); got "
                f"{tuple(n.shape)} and {tuple(mu.shape)}"
            )
        if n.is_floating_point() and bool((n != n.round()).any()):
            raise ValueError("count must hold integer sample counts")
        work = self._work_dtype(s.dtype)
        s = s.to(work)
        fit = from_scatter(
            n.to(device=s.device, dtype=torch.int64),
            mu.to(s),
            s,
            self.n_components,
            self.eigh_options,
        )
        self._store(fit, origin, d)
        return self

    def _store(self, fit: PCAFit, origin: Origin, n_features: int) -> None:
        fit = fit.to(origin.dtype)
        self._fit = fit
        self._origin = origin
        self._single = False
        self.n_features_in_ = n_features
        for public, field in _ATTRS.items():
            setattr(self, public, restore(getattr(fit, field), origin))

    def _squeeze(self) -> None:
        """One ``(N, D)`` dataset: sklearn's shapes (``components_`` (K, D), int counts)."""
        for public in _ATTRS:
            setattr(self, public, getattr(self, public)[0])
        for name in ("n_components_", "n_samples_"):
            setattr(self, name, int(getattr(self, name)))

    def _fitted(self) -> PCAFit:
        if self._fit is None:
            raise NotFittedError("this BatchPCA is not fitted yet: call fit first")
        return self._fit

    # ------------------------------------------------------------- transforms
    def _check_batch_size(self, batch: Batch, name: str) -> None:
        n_sets = self._fitted().mean.shape[0]
        if batch.data.shape[0] not in (n_sets,) and not (
            batch.data.shape[0] == 1 and not batch.ragged
        ):
            raise ValueError(
                f"{name} holds {batch.data.shape[0]} datasets but the model was fitted on {n_sets}"
            )

    def transform(self, X: Any, *, lengths: Any = None, mask: Any = None) -> Any:
        """Project each dataset on its own principal components.

        Parameters
        ----------
        X : ``(B, M, D)`` array, a list of ``B`` arrays ``(M_i, D)``, or one ``(M, D)``
            array projected on every dataset's components (giving ``(B, M, K)``).
        lengths, mask : the real rows of a padded ``X``; padded output rows are 0.

        Returns
        -------
        array ``(B, M, K)`` (padded components give 0 columns), or a list of
        ``(M_i, n_components_[i])`` arrays for a list input.

        Examples
        --------
        >>> import torch
        >>> from spectra.pca import BatchPCA
        >>> X = torch.randn(10, 40, 6, dtype=torch.float64)
        >>> BatchPCA(2, whiten=True).fit(X).transform(X).std(1, correction=1)[0]
        tensor([1.0000, 1.0000], dtype=torch.float64)
        """
        fit = self._fitted()
        if is_dask_collection(X):
            from ._dask import transform_dask

            return transform_dask(self, X)
        batch = as_batch(
            X, lengths=lengths, mask=mask, n_features=self.n_features_in_, allow_2d=True
        )
        self._check_batch_size(batch, "X")
        comps = fit.components.to(batch.data.device)
        x = batch.data.to(comps.dtype)
        z = (x - fit.mean.to(x.device)[:, None, :]) @ comps.mT
        if self.whiten:
            ev = fit.explained_variance.to(x.device)
            scale = ev.sqrt().clamp(min=torch.finfo(ev.dtype).eps)
            z = z / scale[:, None, :]
        z = zero_padding(z, batch.mask)
        if not bool(torch.isfinite(z).all()):
            check_finite(batch)  # report NaN/Inf input by dataset (scans X only on failure)
        return self._out(z, batch, fit.n_components, squeeze=self._squeezes(X))

    def fit_transform(self, X: Any, y: Any = None, *, lengths: Any = None, mask: Any = None) -> Any:
        """``fit(X)`` then ``transform(X)`` (same arguments and results)."""
        return self.fit(X, lengths=lengths, mask=mask).transform(X, lengths=lengths, mask=mask)

    def inverse_transform(self, Z: Any, *, lengths: Any = None, mask: Any = None) -> Any:
        """Map projections back to feature space: ``Z @ components_ + mean_`` per dataset.

        With ``whiten=True`` the whitening is undone first (``Z * sqrt(explained_variance_)``),
        as sklearn does. ``Z`` is ``(B, M, K)``, one ``(M, K)`` array (broadcast over the
        datasets), or a list of ``(M_i, k_i)`` arrays with ``k_i`` the dataset's
        ``n_components_`` (or the padded ``K``).

        Examples
        --------
        >>> import numpy as np
        >>> from spectra.pca import BatchPCA
        >>> X = np.random.default_rng(0).normal(size=(3, 20, 4))
        >>> pca = BatchPCA(4).fit(X)
        >>> bool(np.allclose(pca.inverse_transform(pca.transform(X)), X))
        True
        """
        fit = self._fitted()
        kmax = fit.components.shape[1]
        if is_ragged(Z):
            Z = [self._pad_columns(z, kmax, i) for i, z in enumerate(Z)]
        batch = as_batch(Z, lengths=lengths, mask=mask, n_features=None, allow_2d=True)
        if batch.data.shape[-1] != kmax:
            raise ValueError(
                f"Z has {batch.data.shape[-1]} components per row, the model keeps {kmax}"
            )
        self._check_batch_size(batch, "Z")
        check_finite(batch, "Z")
        comps = fit.components.to(batch.data.device)
        z = batch.data.to(comps.dtype)
        if self.whiten:
            comps = fit.explained_variance.to(z.device).sqrt()[..., None] * comps
        x = z @ comps + fit.mean.to(z.device)[:, None, :]
        x = zero_padding(x, batch.mask)
        return self._out(x, batch, None, squeeze=self._squeezes(Z))

    # ---------------------------------------------------------------- helpers
    def _pad_columns(self, z: Any, kmax: int, i: int) -> Any:
        t, _ = as_tensor(z, f"Z[{i}]")
        if t.ndim != 2 or t.shape[-1] > kmax:
            raise ValueError(
                f"Z[{i}] must be an (M, k) array with k <= {kmax}, got shape {tuple(t.shape)}"
            )
        out = torch.nn.functional.pad(t, (0, kmax - t.shape[-1]))
        return out.numpy() if not isinstance(z, torch.Tensor) else out

    def _squeezes(self, X: Any) -> bool:
        """True when a model fitted on one ``(N, D)`` dataset gets one ``(M, D)`` array."""
        return bool(getattr(self, "_single", False)) and is_single(X)

    def _one(self, t: torch.Tensor) -> Any:
        return restore(t[0] if getattr(self, "_single", False) else t, self._origin)

    def _out(
        self,
        y: torch.Tensor,
        batch: Batch,
        widths: torch.Tensor | None,
        *,
        squeeze: bool = False,
        drop_last: bool = False,
    ) -> Any:
        origin = Origin(batch.origin.kind, batch.origin.device, y.dtype)
        if drop_last:  # per-sample values (B, M, 1) -> (B, M)
            y = y[..., 0]
        if not batch.ragged:
            return restore(y[0] if squeeze else y, origin)
        counts = batch.counts.tolist()
        cols = widths.tolist() if widths is not None else [y.shape[-1]] * len(counts)
        pairs = enumerate(zip(counts, cols, strict=True))
        return [restore(y[i, :n] if drop_last else y[i, :n, :c], origin) for i, (n, c) in pairs]
