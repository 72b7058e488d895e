"""The probabilistic-PCA side of BatchPCA (sklearn's ``get_covariance``, ``get_precision``,
``score_samples``, ``score``), per dataset."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from ..core.domain import Origin, restore
from ._inputs import Batch, as_batch, check_finite, zero_padding
from ._likelihood import covariance, log_likelihood, precision
from ._solve import PCAFit
from ._threads import small_work_threads


class ProbabilisticMixin:
    """Methods of :class:`~spectra.pca.BatchPCA` that read the fitted generative model."""

    whiten: bool
    n_features_in_: int

    if TYPE_CHECKING:  # provided by BatchPCA

        def _fitted(self) -> PCAFit: ...
        def _one(self, t: torch.Tensor) -> Any: ...
        def _squeezes(self, X: Any) -> bool: ...
        def _check_batch_size(self, batch: Batch, name: str) -> None: ...
        def _out(
            self,
            y: torch.Tensor,
            batch: Batch,
            widths: torch.Tensor | None,
            *,
            squeeze: bool = False,
            drop_last: bool = False,
        ) -> Any: ...

    def get_covariance(self) -> Any:
        """Each dataset's model covariance ``C^T diag(ev - sigma2)_+ C + sigma2 I`` (B, D, D).

        As sklearn's ``PCA.get_covariance`` (``C`` the components, ``ev`` the explained
        variances, ``sigma2`` the noise variance), including its behaviour with
        ``whiten=True``, where ``C`` is first scaled by ``sqrt(ev)``. ``(D, D)`` for a model
        fitted on one ``(N, D)`` dataset.

        Examples
        --------
        >>> import numpy as np
        >>> from spectra.pca import BatchPCA
        >>> X = np.random.default_rng(0).normal(size=(2, 50, 3))
        >>> cov = BatchPCA().fit(X).get_covariance()
        >>> bool(np.allclose(cov[0], np.cov(X[0].T)))
        True
        """
        return self._one(covariance(self._fitted(), self.whiten))

    def get_precision(self) -> Any:
        """The inverse of :meth:`get_covariance`, by the matrix inversion lemma (as sklearn).

        Examples
        --------
        >>> import numpy as np
        >>> from spectra.pca import BatchPCA
        >>> X = np.random.default_rng(0).normal(size=(40, 4))
        >>> pca = BatchPCA(2).fit(X)
        >>> bool(np.allclose(pca.get_precision() @ pca.get_covariance(), np.eye(4)))
        True
        """
        return self._one(precision(self._fitted(), self.whiten))

    def score_samples(self, X: Any, *, lengths: Any = None, mask: Any = None) -> Any:
        """Log-likelihood of each sample under its dataset's probabilistic PCA model.

        sklearn's ``PCA.score_samples`` per dataset (Tipping & Bishop; Bishop, PRML 12.2.1):
        ``(B, M)`` for ``(B, M, D)`` input (0 on padded rows), a list for a list, ``(M,)``
        for a model fitted on one dataset.

        Examples
        --------
        >>> import numpy as np
        >>> from spectra.pca import BatchPCA
        >>> X = np.random.default_rng(0).normal(size=(3, 30, 4))
        >>> BatchPCA(2).fit(X).score_samples(X).shape
        (3, 30)
        """
        ll, batch = self._log_likelihood(X, lengths, mask)
        return self._out(ll, batch, None, squeeze=self._squeezes(X), drop_last=True)

    def score(self, X: Any, y: Any = None, *, lengths: Any = None, mask: Any = None) -> Any:
        """Average log-likelihood of the samples of each dataset ``(B,)`` (a float for a
        model fitted on one dataset, as sklearn's ``PCA.score``, so GridSearchCV can rank
        models).

        Examples
        --------
        >>> import numpy as np
        >>> from spectra.pca import BatchPCA
        >>> X = np.random.default_rng(0).normal(size=(60, 5))
        >>> isinstance(BatchPCA(2).fit(X).score(X), float)
        True
        """
        ll, batch = self._log_likelihood(X, lengths, mask)
        mean = ll[..., 0].sum(-1) / batch.counts.clamp(min=1).to(ll.dtype)
        if self._squeezes(X):
            return float(mean[0])
        return restore(mean, Origin(batch.origin.kind, batch.origin.device, mean.dtype))

    def _log_likelihood(self, X: Any, lengths: Any, mask: Any) -> tuple[torch.Tensor, Batch]:
        fit = self._fitted()
        batch = as_batch(
            X, lengths=lengths, mask=mask, n_features=self.n_features_in_, allow_2d=True
        )
        self._check_batch_size(batch, "X")
        check_finite(batch)
        x = batch.data.to(device=fit.mean.device, dtype=fit.mean.dtype)
        with small_work_threads(x):  # small products: one kernel thread (fit's rule)
            ll = log_likelihood(fit, self.whiten, x)[..., None]
        return zero_padding(ll, batch.mask), batch
