"""The compiled helper's passes over an entry list (``spectra.core._sparse._entries``):
the proof that a matrix is exactly Hermitian, against the dense matrix (exactly equal to
its conjugate transpose off the diagonal, no pair given twice), and the connected
components, against ``scipy.sparse.csgraph.connected_components`` (labels equal, numbered
the same way). Random lists in any order, every dtype, and the adversarial ones: one value
off by one rounding, a missing mirror, a duplicate, a complex symmetric (not Hermitian)
matrix, the diagonal (not read), indices out of range, empty lists, isolated nodes."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from spectra.core._solvers import _native
from spectra.core._sparse._entries import entry_components, mirror_exact
from spectra.core.domain import entry_components as exported_components
from spectra.core.domain import mirror_exact as exported_mirror

pytestmark = pytest.mark.skipif(
    _native.native_module() is None, reason="the compiled helper is not built"
)

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def _hermitian_list(n: int, m: int, dtype, seed: int):
    """An exactly Hermitian entry list of ``m`` distinct off-diagonal pairs (both
    directions) and a few diagonal entries, shuffled."""
    rng = np.random.default_rng(seed)
    pairs = set()
    while len(pairs) < m:
        i, j = (int(x) for x in rng.integers(0, n, 2))
        if i != j:
            pairs.add((min(i, j), max(i, j)))
    up = np.array(sorted(pairs)).T
    x = rng.standard_normal(up.shape[1])
    if np.iscomplexobj(np.zeros(1, dtype=dtype)):
        x = x + 1j * rng.standard_normal(up.shape[1])
    x = x.astype(dtype)
    diag = rng.choice(n, size=min(n, 5), replace=False)
    d = rng.standard_normal(diag.size).astype(dtype)
    rows = np.concatenate([up[0], up[1], diag])
    cols = np.concatenate([up[1], up[0], diag])
    vals = np.concatenate([x, np.conj(x), d]).astype(dtype)
    perm = rng.permutation(rows.size)
    return rows[perm], cols[perm], vals[perm]


def _dense_verdict(n: int, rows, cols, vals) -> bool:
    """Exactly Hermitian off the diagonal, no (row, column) pair twice: the reference."""
    keys = rows.astype(np.int64) * n + cols
    if np.unique(keys).size != keys.size:
        return False
    a = np.zeros((n, n), dtype=vals.dtype)
    a[rows, cols] = vals
    np.fill_diagonal(a, 0)
    return bool(np.array_equal(a, a.conj().T))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", range(4))
def test_a_hermitian_list_in_any_order_is_proven(dtype, seed):
    rows, cols, vals = _hermitian_list(60, 400, dtype, seed)
    assert _dense_verdict(60, rows, cols, vals)
    assert mirror_exact(60, rows, cols, vals) is True


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_rounding_off_gives_no_verdict(dtype):
    rows, cols, vals = _hermitian_list(40, 200, dtype, 7)
    off = int(np.flatnonzero(rows != cols)[3])
    vals = vals.copy()
    vals[off] = np.nextafter(vals[off].real, np.inf).astype(vals.real.dtype) + (
        vals[off] - vals[off].real
    )
    assert not _dense_verdict(40, rows, cols, vals)
    assert mirror_exact(40, rows, cols, vals) is False


def test_a_missing_mirror_and_a_duplicate_give_no_verdict():
    rows, cols, vals = _hermitian_list(30, 100, np.float64, 8)
    off = np.flatnonzero(rows != cols)
    keep = np.ones(rows.size, dtype=bool)
    keep[off[0]] = False  # its mirror stays alone
    assert mirror_exact(30, rows[keep], cols[keep], vals[keep]) is False
    assert not _dense_verdict(30, rows[keep], cols[keep], vals[keep])
    # a pair given twice (its mirror too, halves summing to the same matrix): undecided
    i = off[0]
    j = int(np.flatnonzero((rows == cols[i]) & (cols == rows[i]))[0])
    r2 = np.concatenate([rows, rows[[i, j]]])
    c2 = np.concatenate([cols, cols[[i, j]]])
    v2 = np.concatenate([vals, vals[[i, j]]])
    v2[[i, j]] /= 2
    v2[-2:] /= 2
    assert mirror_exact(30, r2, c2, v2) is False


def test_complex_symmetric_is_not_hermitian_and_the_diagonal_is_not_read():
    rows, cols = np.array([0, 1, 2, 2]), np.array([1, 0, 2, 0])
    vals = np.array([1 + 2j, 1 + 2j, 5 + 1j, 3.0], dtype=np.complex128)  # (2, 0) unmatched
    assert mirror_exact(3, rows[:3], cols[:3], vals[:3]) is False  # symmetric, not Hermitian
    vals[1] = 1 - 2j
    assert mirror_exact(3, rows[:3], cols[:3], vals[:3]) is True  # the diagonal's 5 + 1j unread
    assert mirror_exact(3, rows, cols, vals) is False


@pytest.mark.parametrize("seed", range(8))
def test_random_lists_agree_with_the_dense_reference(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 12))
    keys = rng.choice(n * n, size=int(rng.integers(1, n * n // 2 + 1)), replace=False)
    keys = np.union1d(keys[keys != n], [1])  # (0, 1) there, (1, 0) not: one pair unmatched
    rows, cols = keys // n, keys % n
    vals = rng.integers(1, 3, keys.size).astype(np.float64)
    if seed % 4:  # mirrored: exactly Hermitian, then (seed 3 mod 4) one value changed
        up = rows < cols
        rows = np.concatenate([rows[up], cols[up], rows[rows == cols]])
        cols = np.concatenate([cols[up], rows[: up.sum()], cols[keys // n == keys % n]])
        vals = np.concatenate([vals[up], vals[up], vals[keys // n == keys % n]])
        if seed % 4 == 3:
            vals[0] += 1
    expected = _dense_verdict(n, rows, cols, vals)
    assert expected is (seed % 4 in (1, 2))  # the cases are what they are meant to be
    assert mirror_exact(n, rows, cols, vals) is expected


def test_out_of_range_empty_and_unsupported_inputs():
    assert mirror_exact(2, np.array([0, 2]), np.array([2, 0]), np.ones(2)) is False
    assert mirror_exact(3, np.array([0, -1]), np.array([-1, 0]), np.ones(2)) is False
    assert mirror_exact(0, np.array([]), np.array([]), np.ones(0)) is True
    assert mirror_exact(2, np.array([0]), np.array([1, 0]), np.ones(2)) is False  # lengths
    assert mirror_exact(2, np.array([0]), np.array([1]), np.ones(1, dtype=np.int64)) is None


@pytest.mark.parametrize("seed", range(5))
def test_components_match_scipy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    m = int(rng.integers(0, n))  # sparse: many components, isolated nodes
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)  # loops and repeats included
    graph = sp.coo_matrix((np.ones(m), (src, dst)), shape=(n, n))
    count, expected = connected_components(graph, directed=False)
    got = entry_components(n, src, dst)
    assert got is not None and got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)
    assert int(got.max()) + 1 == count


def test_components_of_edges_given_one_way_and_of_nothing():
    labels = entry_components(5, np.array([4, 3]), np.array([1, 4]))  # one direction only
    assert labels is not None and labels.tolist() == [0, 1, 2, 1, 1]
    empty = entry_components(0, np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    assert empty is not None and empty.shape == (0,)
    none = entry_components(3, np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    assert none is not None and none.tolist() == [0, 1, 2]


def test_components_refuse_nodes_out_of_range():
    with pytest.raises(ValueError, match=r"outside 0\.\.2"):
        entry_components(3, np.array([0, 3]), np.array([1, 0]))
    with pytest.raises(ValueError, match="sources against"):
        entry_components(3, np.array([0]), np.array([1, 2]))


def test_the_domain_surface_exports_them():
    assert exported_mirror is mirror_exact and exported_components is entry_components


def test_a_hub_of_high_degree():
    """A star of 60,000 leaves in random order (a power-law graph's hub, whose row the
    helper sorts through qsort: by insertion it took ~10^9 steps): proven, and no verdict
    when one value or one duplicate breaks it."""
    rng = np.random.default_rng(5)
    leaves = rng.permutation(np.arange(1, 60_001))
    rows = np.concatenate([np.zeros(leaves.size, dtype=np.int64), leaves])
    cols = np.concatenate([leaves, np.zeros(leaves.size, dtype=np.int64)])
    vals = np.concatenate([leaves, leaves]).astype(np.float64)
    assert mirror_exact(60_001, rows, cols, vals) is True
    vals[leaves.size + 17] += 1.0  # one leaf's way back differs
    assert mirror_exact(60_001, rows, cols, vals) is False
    rows2, cols2 = np.append(rows, 0), np.append(cols, leaves[3])  # the hub's pair twice
    assert mirror_exact(60_001, rows2, cols2, np.append(vals, 1.0)) is False
