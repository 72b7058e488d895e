"""BatchPCA: one sklearn-exact PCA per dataset, for many datasets in one batched call."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal, cast

import torch

from ..core.domain import (
    InputError,
    Origin,
    as_tensor,
    collection_op,
    is_dask_collection,
    restore,
)
from ._inputs import Batch, as_3d, as_batch, check_finite, is_ragged, is_single
from ._moments import centered
from ._plan import PCAPlan, check_solver_params, make_plan
from ._randomized import from_randomized, seed_of
from ._scoring import ProbabilisticMixin
from ._sklearn import EstimatorBase, NotFittedError, check_eigh_options
from ._solve import PCAFit, check_n_components, from_data, from_scatter
from ._state import StateMixin
from ._threads import small_work_threads
from ._transform import TransformMixin

Solver = Literal["auto", "covariance", "gram", "svd"]
SvdSolver = Literal["auto", "full", "randomized"]
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


class BatchPCA(ProbabilisticMixin, TransformMixin, StateMixin, EstimatorBase):
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
    solver : {"auto", "covariance", "gram", "svd"}
        The exact route. "covariance": eigh of the ``D x D`` scatter matrices; "gram":
        eigh of the ``N x N`` Gram matrices ``X_c X_c^T`` (smaller when there are fewer
        samples than features); "svd": QR of the centred data, then eigh of the dilation
        ``[[0, R], [R^T, 0]]`` of the triangular factor (SVD-accurate: the other two square
        the condition number); "auto" takes the Gram route when the (padded) sample count
        is below the feature count, else the covariance route, and solves the datasets
        whose eigenvalues span more than ``eps^(-1/3)``, or that have fewer non-zero
        eigenvalues than their rank ``min(n_samples - 1, n_features)``, again by the SVD
        route (float32 data in float64 there).
    svd_solver : {"auto", "full", "randomized"}
        As sklearn's. "full": the exact PCA (by ``solver``); "randomized": Halko et al.'s
        randomized PCA (needs an int ``n_components``; nothing ``D x D`` is formed);
        "auto": randomized when ``n_components`` is an int, there are at least 1000
        features and ``(2 n_iter + 2)(k + n_oversamples) <= min(N, D) / 2``, else exact.
        ``plan(X)`` shows the choice before a fit and ``plan_`` after it.
    iterated_power : int or "auto"
        Power iterations of the randomized solver ("auto": 7, or 4 when
        ``k >= 0.1 min(N, D)``, as sklearn).
    n_oversamples : int
        Extra random directions of the randomized solver (10, as sklearn).
    random_state : int or None
        Seed of the randomized solver's test matrices (None: a fresh seed per fit).
    precision : {"data", "float64"}
        "float64" accumulates the moments and solves in float64 for float32 data; results
        come back in the data's dtype either way.
    **eigh_options
        Passed to :func:`spectra.eigh` (e.g. ``device``, ``chunk_size``, ``workers``).
        Any other keyword (sklearn's ``tol``, ``copy``) is a ``TypeError``.

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
    plan_ : :class:`~spectra.pca.PCAPlan`, the solver and route the fit took, and why.

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
        svd_solver: SvdSolver = "auto",
        precision: Precision = "data",
        iterated_power: int | str = "auto",
        n_oversamples: int = 10,
        random_state: int | None = None,
        **eigh_options: Any,
    ) -> None:
        check_eigh_options(eigh_options)
        self.n_components = n_components
        self.whiten = whiten
        self.center = center
        self.solver = solver
        self.svd_solver = svd_solver
        self.precision = precision
        self.iterated_power = iterated_power
        self.n_oversamples = n_oversamples
        self.random_state = random_state
        self.eigh_options = eigh_options
        self._check_params()
        self._fit: PCAFit | None = None

    def _check_params(self) -> None:
        # at construction and again at fit (set_params may have changed them)
        check_n_components(self.n_components)
        check_solver_params(
            self.solver, self.svd_solver, self.iterated_power, self.n_oversamples, self.random_state
        )
        if self.precision not in ("data", "float64"):
            raise InputError("precision", f"must be 'data' or 'float64', got {self.precision!r}")

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
            raise InputError(
                "lengths/mask", "apply to a batch (B, N, D), not to one (N, D) dataset"
            )
        if is_dask_collection(X) or (
            isinstance(X, (list, tuple)) and X and all(is_dask_collection(x) for x in X)
        ):
            if lengths is not None or mask is not None:
                raise InputError(
                    "lengths/mask",
                    "are not supported with Dask input: pass a list "
                    "of Dask arrays with different sample counts instead",
                )
            collection_op("pca.fit")(self, X[None] if single else X)  # spectra.distributed
        else:
            batch = as_batch(as_3d(X) if single else X, lengths=lengths, mask=mask)
            self._fit_batch(batch)
        self._single = single
        if single:
            self._squeeze()
        return self

    def plan(self, X: Any = None, *, shape: tuple[int, ...] | None = None) -> PCAPlan:
        """How ``fit(X)`` would run (solver, route and why), from ``X``'s shape alone.

        Parameters
        ----------
        X : what ``fit`` takes (only its shape is read), or None with ``shape``.
        shape : ``(B, N, D)`` or ``(N, D)`` instead of data.

        Returns
        -------
        PCAPlan
            Printable; ``svd_datasets`` is filled only by a fit (see ``plan_``).

        Examples
        --------
        >>> from spectra.pca import BatchPCA
        >>> print(BatchPCA(3).plan(shape=(100, 50, 8)).route)
        auto
        """
        self._check_params()
        if shape is None and X is None:
            raise InputError("plan", "needs X or shape=(B, N, D)")
        if shape is None:
            if is_ragged(X):
                n, d = max(len(x) for x in X), int(X[0].shape[-1])
            else:
                n, d = int(X.shape[-2]), int(X.shape[-1])
        else:
            n, d = int(shape[-2]), int(shape[-1])
        return self._plan_for(n, d)

    def _plan_for(self, n: int, d: int) -> PCAPlan:
        return make_plan(
            self.n_components,
            n,
            d,
            solver=self.solver,
            svd_solver=self.svd_solver,
            iterated_power=self.iterated_power,
            n_oversamples=self.n_oversamples,
        )

    def _fit_batch(self, batch: Batch) -> None:
        # small work (pca._threads): its products, QR and solves on one kernel thread in
        # this thread (an OpenMP team per tiny product costs more than it shares, ~10 ms
        # after a pause beside other libraries' threads); the rest on the caller's threads
        with small_work_threads(batch.data):
            self._fit_on_kernel_threads(batch)

    def _fit_on_kernel_threads(self, batch: Batch) -> None:
        data = batch.data.to(self._work_dtype(batch.data.dtype))
        mean, xc = centered(data, batch.mask, batch.counts, self.center, batch.ragged)
        n_pad, d = data.shape[-2], data.shape[-1]
        plan = self._plan_for(n_pad, d)  # (the parameters were checked by fit)

        def on_bad(_: list[int]) -> None:
            check_finite(batch)  # names datasets and samples with NaN/Inf, if that is the cause

        spec, opts = self.n_components, self.eigh_options
        if plan.route == "randomized":
            assert plan.n_iter is not None and plan.n_oversamples is not None
            options = (plan.n_oversamples, plan.n_iter, seed_of(self.random_state))
            fit = from_randomized(
                batch.counts, mean, xc, int(cast(int, spec)), options, opts, on_bad
            )
        else:
            fit, redo = from_data(batch.counts, mean, xc, spec, plan.route, opts, on_bad)
            plan = replace(plan, svd_datasets=tuple(redo))
        self.plan_ = plan
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
            raise InputError("scatter", f"must have shape (B, D, D), got {tuple(s.shape)}")
        b, d = s.shape[0], s.shape[-1]
        if mu.shape != (b, d) or n.shape != (b,):
            raise InputError(
                "count",
                f"must have shape ({b},) and mean ({b}, {d}); got "
                f"{tuple(n.shape)} and {tuple(mu.shape)}",
            )
        if n.is_floating_point() and bool((n != n.round()).any()):
            bad = torch.nonzero(n != n.round()).flatten().tolist()
            raise InputError("count", "must hold integer sample counts", [(i,) for i in bad])
        work = self._work_dtype(s.dtype)
        s = s.to(work)
        fit = from_scatter(
            n.to(device=s.device, dtype=torch.int64),
            mu.to(s),
            s,
            self.n_components,
            self.eigh_options,
        )
        self.plan_ = PCAPlan("full", "covariance", "fit_from_moments: from scatter matrices")
        self._store(fit, origin, d)
        return self

    def _store(self, fit: PCAFit, origin: Origin, n_features: int) -> None:
        if fit.components.dtype != origin.dtype:
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
    def fit_transform(self, X: Any, y: Any = None, *, lengths: Any = None, mask: Any = None) -> Any:
        """``fit(X)`` then ``transform(X)`` (same arguments and results)."""
        return self.fit(X, lengths=lengths, mask=mask).transform(X, lengths=lengths, mask=mask)
