"""Heat-kernel features against SciPy's expm, per graph."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

from spectra.graph import heat_kernel_diagonal

from .graphs import batch_of, dense_adj, random_graph, ref_laplacian

TIMES = [0.0, 0.3, 1.0, 7.5]


@pytest.mark.parametrize("normalization", [None, "sym", "rw"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matches_expm_diagonal(normalization, dtype):
    rng = np.random.default_rng(30)
    graphs = []
    for n, conn in [(6, True), (1, True), (9, False), (4, True)]:
        ei, ew = (
            random_graph(rng, n, connected=conn, weighted=True)
            if n > 1
            else (torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=torch.float64))
        )
        graphs.append((ei, ew, n))
    ei, ew, batch, sizes = batch_of(graphs)
    out = heat_kernel_diagonal(
        ei, times=TIMES, edge_weight=ew, batch=batch, normalization=normalization, dtype=dtype
    )
    assert out.shape == (sum(sizes), len(TIMES)) and out.dtype == dtype
    tol = 1e-5 if dtype == torch.float32 else 1e-11
    rows = []
    for gei, gew, n in graphs:
        lap = ref_laplacian(dense_adj(gei, n, gew), normalization)
        rows.append(np.stack([np.diag(scipy.linalg.expm(-t * lap)) for t in TIMES], 1))
    np.testing.assert_allclose(out.double().numpy(), np.concatenate(rows), atol=tol)


def test_single_graph_and_bad_times():
    ei = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    out = heat_kernel_diagonal(ei, 3, times=torch.tensor([2.0]), dtype=torch.float64)
    lap = ref_laplacian(dense_adj(ei, 3), "sym")
    np.testing.assert_allclose(out[:, 0].numpy(), np.diag(scipy.linalg.expm(-2 * lap)), atol=1e-12)
    with pytest.raises(ValueError, match="diffusion times"):
        heat_kernel_diagonal(ei, 3, times=[-1.0])


def test_gradients_flow_to_edge_weights():
    # heat-kernel diagonals are gauge invariant: their gradient w.r.t. the weights is exact
    rng = np.random.default_rng(31)
    ei, ew = random_graph(rng, 6, weighted=True)
    half = ew[: ew.numel() // 2].clone().requires_grad_(True)

    def f(w):
        return heat_kernel_diagonal(
            ei, 6, times=[0.5, 2.0], edge_weight=torch.cat([w, w]), dtype=torch.float64
        )

    assert torch.autograd.gradcheck(f, (half,), atol=1e-6)
