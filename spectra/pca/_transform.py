"""The projections of BatchPCA: ``transform`` and ``inverse_transform``, and the helpers
that give results back in the input's layout (arrays, ragged lists, one dataset)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from ..core.domain import InputError, Origin, as_tensor, is_dask_collection, restore
from ._inputs import Batch, as_batch, check_finite, is_ragged, is_single, zero_padding
from ._solve import PCAFit
from ._threads import small_work_threads


class TransformMixin:
    """Methods of :class:`~spectra.pca.BatchPCA` that project data on the fitted components."""

    whiten: bool
    n_features_in_: int
    _origin: Origin

    if TYPE_CHECKING:  # provided by BatchPCA

        def _fitted(self) -> PCAFit: ...

    # ------------------------------------------------------------- transforms
    def _check_batch_size(self, batch: Batch, name: str) -> None:
        n_sets = self._fitted().mean.shape[0]
        if batch.data.shape[0] not in (n_sets,) and not (
            batch.data.shape[0] == 1 and not batch.ragged
        ):
            raise InputError(
                name, f"holds {batch.data.shape[0]} datasets but the model was fitted on {n_sets}"
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
        with small_work_threads(x):  # small products: one kernel thread (fit's rule)
            z = (x - fit.mean.to(x.device)[:, None, :]) @ comps.mT
        if self.whiten:
            ev = fit.explained_variance.to(x.device)
            scale = ev.sqrt().clamp(min=torch.finfo(ev.dtype).eps)
            z = z / scale[:, None, :]
        z = zero_padding(z, batch.mask)
        if not bool(torch.isfinite(z).all()):
            check_finite(batch)  # report NaN/Inf input by dataset (scans X only on failure)
        return self._out(z, batch, fit.n_components, squeeze=self._squeezes(X))

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
            raise InputError(
                "Z", f"has {batch.data.shape[-1]} components per row, the model keeps {kmax}"
            )
        self._check_batch_size(batch, "Z")
        check_finite(batch, "Z")
        comps = fit.components.to(batch.data.device)
        z = batch.data.to(comps.dtype)
        if self.whiten:
            comps = fit.explained_variance.to(z.device).sqrt()[..., None] * comps
        with small_work_threads(z):  # small products: one kernel thread (fit's rule)
            x = z @ comps + fit.mean.to(z.device)[:, None, :]
        x = zero_padding(x, batch.mask)
        return self._out(x, batch, None, squeeze=self._squeezes(Z))

    # ---------------------------------------------------------------- helpers
    def _pad_columns(self, z: Any, kmax: int, i: int) -> Any:
        t, _ = as_tensor(z, f"Z[{i}]")
        if t.ndim != 2 or t.shape[-1] > kmax:
            raise InputError(
                f"Z[{i}]", f"must be an (M, k) array with k <= {kmax}, got shape {tuple(t.shape)}"
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
