"""PCA of several datasets of different widths, one covariance at a time."""

import numpy as np

rng = np.random.default_rng(7)
widths = [3, 5, 5, 4, 6]
datasets = [rng.standard_normal((40, d)) @ rng.standard_normal((d, d)) for d in widths]
names = [f"set{i}" for i in range(len(datasets))]

# the comprehension --fix batches (ragged: the covariances have different sizes)
decomps = [np.linalg.eigh(np.cov(x.T)) for x in datasets]  # expect: SPX002 fix
spectra_only = [np.linalg.eigh(np.cov(x, rowvar=False))[0] for x in datasets]  # expect: SPX002 fix

explained = [w[::-1] / w.sum() for w, _ in decomps]
projections_norm = [np.linalg.norm(x @ v, axis=0) for x, (_, v) in zip(datasets, decomps)]

# more than the decomposition per element: reported only
covs = [np.cov(x.T) for x in datasets]
ratios = [np.linalg.eigvalsh(c)[::-1] / np.trace(c) for c in covs]  # expect: SPX002
by_name = {n: np.linalg.eigvalsh(c) for n, c in zip(names, covs)}  # expect: SPX002

# a single decomposition of the pooled data: not reported
pooled = np.cov(np.concatenate([x[:, :3] for x in datasets]).T)
w_pooled, v_pooled = np.linalg.eigh(pooled)
