"""The same fits on a CUDA device (skipped without one; the CPU suite covers the code paths)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from spectra.pca import BatchPCA

from .helpers import check_dataset, make_data, reference, to_np

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(40, 6), (5, 12)])
def test_cuda_matches_sklearn(dtype, shape):
    rng = np.random.default_rng(0)
    x = make_data(rng, 8, *shape, dtype)
    xt = torch.from_numpy(x).cuda()
    model = BatchPCA(0.9, whiten=True).fit(xt)
    assert model.components_.device.type == "cuda"
    z = model.transform(xt)
    assert z.device.type == "cuda"
    for i in range(8):
        ref = reference(x[i], 0.9, whiten=True)
        check_dataset(model, i, x[i], ref, dtype, x[i])
    ragged = BatchPCA(2).fit([xt[0], xt[1, :3]])
    assert to_np(ragged.n_samples_).tolist() == [shape[0], 3]
