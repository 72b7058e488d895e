"""Batch PCA: one sklearn-exact PCA per dataset for many datasets, through one batched eigh.

>>> import numpy as np
>>> from spectra.pca import BatchPCA
>>> X = np.random.default_rng(0).normal(size=(500, 200, 32))   # 500 datasets
>>> pca = BatchPCA(5).fit(X)
>>> pca.components_.shape
(500, 5, 32)
"""

from ._batch_pca import BatchPCA, NotFittedError
from ._moments import Moments, combine_moments, moments
from ._plan import PCAPlan
from ._solve import PCAFit, svd_flip_rows

__all__ = [
    "BatchPCA",
    "Moments",
    "NotFittedError",
    "PCAFit",
    "PCAPlan",
    "combine_moments",
    "moments",
    "svd_flip_rows",
]
