"""A batch as one block-diagonal sparse matrix and its pointer (``spectra.BlockDiagonal``).

References: the list of the blocks through the same call (identical results), and dense
``scipy.linalg.eigh`` per block; the pointer and coupling refusals name what and where.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

import spectra
from tests.core.sparse_helpers import (
    adjacency_rgg,
    dense_reference,
    largest_angle,
    magnetic_laplacian,
    normalized_laplacian,
)

SIZES = (900, 1300, 300, 700)


@pytest.fixture(scope="module")
def blocks():
    mats = [normalized_laplacian(adjacency_rgg(n, seed=50 + i)) for i, n in enumerate(SIZES)]
    ptr = np.concatenate([[0], np.cumsum(SIZES)])
    return mats, sp.block_diag(mats, format="csr"), ptr


def _torch_coo(a: sp.spmatrix) -> torch.Tensor:
    c = a.tocoo()
    return torch.sparse_coo_tensor(np.vstack([c.row, c.col]), c.data, c.shape)


def test_scipy_block_diagonal_equals_the_list_and_dense(blocks):
    mats, big, ptr = blocks
    w, v = spectra.eigh(spectra.BlockDiagonal(big, ptr), k=5, tol=1e-10)
    wl, vl = spectra.eigh(mats, k=5, tol=1e-10)
    assert isinstance(w, list) and len(w) == len(SIZES)
    for i, a in enumerate(mats):
        assert v[i].shape == (SIZES[i], 5)
        np.testing.assert_array_equal(w[i], wl[i])
        np.testing.assert_array_equal(v[i], vl[i])
        ref_w, ref_v = dense_reference(a)
        np.testing.assert_allclose(w[i], ref_w[:5], rtol=1e-8, atol=1e-12)
        assert largest_angle(v[i], ref_v, ref_w, 5) < 1e-6


def test_torch_block_diagonal_with_a_tensor_pointer(blocks):
    mats, big, ptr = blocks
    bd = spectra.BlockDiagonal(_torch_coo(big), torch.from_numpy(ptr))
    w, v = spectra.eigh(bd, k=4, tol=1e-10)
    assert all(isinstance(x, torch.Tensor) for x in w + v)
    for i, a in enumerate(mats):
        ref_w, ref_v = dense_reference(a)
        np.testing.assert_allclose(w[i].numpy(), ref_w[:4], rtol=1e-8, atol=1e-12)
        assert largest_angle(v[i].numpy(), ref_v, ref_w, 4) < 1e-6
    csr = _torch_coo(big).to_sparse_csr()
    w2 = spectra.eigvalsh(spectra.BlockDiagonal(csr, ptr.tolist()), k=4, tol=1e-10)
    for a, b in zip(w, w2, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-13)


def test_complex_blocks_and_the_plan(blocks):
    mags = [magnetic_laplacian(adjacency_rgg(n, seed=60 + n)) for n in (800, 600)]
    bd = spectra.BlockDiagonal(sp.block_diag(mags, format="csr"), [0, 800, 1400])
    w, v = spectra.eigh(bd, k=3, tol=1e-10)
    for a, wi, vi in zip(mags, w, v, strict=True):
        ref_w, ref_v = dense_reference(a)
        assert vi.dtype == np.complex128
        np.testing.assert_allclose(wi, ref_w[:3], rtol=1e-8, atol=1e-12)
        assert largest_angle(vi, ref_v, ref_w, 3) < 1e-6
    _, big, ptr = blocks
    plan = spectra.plan(spectra.BlockDiagonal(big, ptr), k=4)
    assert plan.sizes == SIZES and plan.methods == ("lanczos", "lanczos", "dense", "lanczos")
    assert len(spectra.BlockDiagonal(big, ptr)) == 4 and "4 blocks" in repr(
        spectra.BlockDiagonal(big, ptr)
    )


@pytest.mark.parametrize(
    "ptr, match",
    [
        ([0, 900, 2200, 2500, 3100], "from 0 to n = 3200"),
        ([1, 900, 2200, 2500, 3200], "from 0 to n"),
        ([0, 900, 900, 2500, 3200], "strictly increasing"),
        ([0, 1300, 900, 2500, 3200], "strictly increasing"),
        ([0.0, 900.0, 2200.0, 2500.0, 3200.0], "integers"),
        ([[0, 3200]], "1-D"),
        ([0], "1-D"),
    ],
)
def test_refuses_a_pointer_that_does_not_match(blocks, ptr, match):
    _, big, _ = blocks
    with pytest.raises(spectra.InputError, match=match) as info:
        spectra.eigh(spectra.BlockDiagonal(big, ptr), k=2)
    assert "ptr" in str(info.value)


def test_refuses_entries_that_couple_blocks(blocks):
    _, big, ptr = blocks
    bad = big.tolil()
    bad[5, 1000] = bad[1000, 5] = -0.01  # block 0 <-> block 1
    with pytest.raises(spectra.InputError, match=r"couples blocks 0 and 1.*\(5, 1000\)") as info:
        spectra.eigh(spectra.BlockDiagonal(bad.tocsr(), ptr), k=2)
    assert info.value.indices == [(0,), (1,)]
    with pytest.raises(spectra.InputError, match="couples blocks 0 and 1"):
        spectra.eigh(spectra.BlockDiagonal(_torch_coo(bad.tocsr()), ptr), k=2)
    # a pointer that cuts a graph in two couples the halves
    cut = np.array([0, 450, 900, 2200, 2500, 3200])
    with pytest.raises(spectra.InputError, match="couples blocks 0 and 1"):
        spectra.eigh(spectra.BlockDiagonal(big, cut), k=2)


def test_block_errors_name_the_block(blocks):
    mats, big, ptr = blocks
    with pytest.raises(
        spectra.InputError, match=r"k must be in \[1, n\) = \[1, 300\) for block 2 of a"
    ):
        spectra.eigh(spectra.BlockDiagonal(big, ptr), k=300)
    bad = big.tolil()
    bad[2300, 2301] += 0.5  # inside block 2, asymmetric
    with pytest.raises(spectra.InputError, match="block 2 of a is not symmetric"):
        spectra.eigh(spectra.BlockDiagonal(bad.tocsr(), ptr), k=2)
    nan = big.tolil()
    nan[2400, 2400] = np.nan
    with pytest.raises(spectra.InputError, match="block 2 of a contains NaN"):
        spectra.eigh(spectra.BlockDiagonal(nan.tocsr(), ptr), k=2)
    three = [mats[i] for i in (0, 1, 3)]  # one group (sizes within 2x): solved together
    offsets = np.concatenate([[0], np.cumsum([a.shape[0] for a in three])])
    with pytest.raises(spectra.LinAlgError, match="did not converge in 0 iterations") as info:
        spectra.eigh(spectra.BlockDiagonal(sp.block_diag(three), offsets), k=3, maxiter=0)
    assert info.value.indices == [(0,), (1,), (2,)]
    with pytest.raises(spectra.InputError, match="square"):
        spectra.BlockDiagonal(sp.random(30, 40, format="csr"), [0, 30])
    with pytest.raises(spectra.InputError, match="sparse"):
        spectra.eigh(spectra.BlockDiagonal(np.eye(4), [0, 2, 4]), k=1)
