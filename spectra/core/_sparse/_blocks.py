"""A batch given as one block-diagonal sparse matrix and its block pointer (PyG's ``ptr``).

PyG collates the graphs of a ``Batch`` into one block-diagonal adjacency: graph ``i`` owns
rows and columns ``ptr[i]:ptr[i+1]``. :class:`BlockDiagonal` wraps such a matrix with its
pointer; ``spectra.eigh(BlockDiagonal(L, ptr), k=K)`` solves the blocks together (exactly
as the list ``[L_0, L_1, ...]`` of the blocks) and returns lists per block. The pointer is
checked against the matrix (integers, ``ptr[0] = 0``, strictly increasing, ``ptr[-1] = n``)
and the matrix against the pointer: an entry that couples two blocks is refused, naming
the blocks and the entry.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import torch

from .._errors import InputError


class BlockDiagonal:
    """A block-diagonal sparse matrix (torch sparse COO/CSR or SciPy sparse) and its block
    pointer ``ptr`` (``B + 1`` offsets: block ``i`` is ``a[ptr[i]:ptr[i+1], ptr[i]:ptr[i+1]]``,
    as PyG's ``Batch.ptr``). :func:`spectra.eigh` solves the blocks together and returns
    one result per block, as for the list of the blocks.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp, spectra
    >>> path = lambda m: sp.diags([-np.ones(m - 1), 2 * np.ones(m), -np.ones(m - 1)], [-1, 0, 1])
    >>> a = sp.block_diag([path(600), path(700)], format="csr")
    >>> w = spectra.eigvalsh(spectra.BlockDiagonal(a, [0, 600, 1300]), k=2)
    >>> len(w), np.allclose(w[1], 2 - 2 * np.cos(np.pi * np.arange(1, 3) / 701))
    (2, True)
    """

    def __init__(self, matrix: Any, ptr: Any):
        self.matrix = matrix
        self.ptr = ptr
        shape = tuple(int(s) for s in getattr(matrix, "shape", ()))
        if len(shape) != 2 or shape[0] != shape[1]:
            raise InputError("a", f"must be a square (n, n) sparse matrix, got shape {shape}")
        self.offsets = _check_ptr(ptr, shape[0])

    @property
    def shape(self) -> tuple[int, int]:
        n = int(self.offsets[-1])
        return (n, n)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __repr__(self) -> str:
        return f"BlockDiagonal({len(self)} blocks, n = {self.shape[0]:,})"

    def blocks(self) -> list[Any]:
        """The diagonal blocks, in the matrix's family (torch sparse COO or SciPy CSR);
        raises :class:`InputError` when an entry lies outside them."""
        if isinstance(self.matrix, torch.Tensor):
            return _torch_blocks(self.matrix, self.offsets)
        return _scipy_blocks(self.matrix, self.offsets)


def split_input(a: Any) -> tuple[bool, list[Any], list[str]]:
    """``(single, items, names)`` of a sparse input: one matrix, a list, or the blocks of a
    :class:`BlockDiagonal` (named ``"block i of a"``)."""
    if isinstance(a, BlockDiagonal):
        items = a.blocks()
        return False, items, [f"block {i} of a" for i in range(len(items))]
    if isinstance(a, (list, tuple)):
        return False, list(a), [f"a[{i}]" for i in range(len(a))]
    return True, [a], ["a"]


def _check_ptr(ptr: Any, n: int) -> np.ndarray:
    p = ptr.detach().cpu().numpy() if isinstance(ptr, torch.Tensor) else np.asarray(ptr)
    if p.ndim != 1 or p.size < 2:
        raise InputError("ptr", f"must be a 1-D pointer of B + 1 >= 2 offsets, got shape {p.shape}")
    if p.dtype.kind not in "iu":
        raise InputError("ptr", f"must hold integers, got dtype {p.dtype}")
    p = p.astype(np.int64)
    if p[0] != 0 or p[-1] != n:
        raise InputError(
            "ptr", f"must run from 0 to n = {n} (the matrix size), got {p[0]} .. {p[-1]}"
        )
    empty = np.flatnonzero(np.diff(p) <= 0)
    if empty.size:
        raise InputError(
            "ptr",
            "must be strictly increasing (no empty or negative blocks)",
            [(int(i),) for i in empty],
        )
    return p


def _coupling(rows: np.ndarray, cols: np.ndarray, offsets: np.ndarray) -> None:
    """Refuse entries ``(rows[t], cols[t])`` whose row and column lie in different blocks."""
    br = np.searchsorted(offsets, rows, side="right") - 1
    bc = np.searchsorted(offsets, cols, side="right") - 1
    bad = np.flatnonzero(br != bc)
    if bad.size:
        t = bad[0]
        pairs = sorted({(int(br[s]), int(bc[s])) for s in bad[:1000]})
        raise InputError(
            "a",
            f"couples blocks {pairs[0][0]} and {pairs[0][1]} of ptr: entry ({rows[t]}, {cols[t]}) "
            f"lies outside the diagonal blocks ({bad.size} such entries)",
            sorted({(b,) for pair in pairs for b in pair}),
        )


def _scipy_blocks(matrix: Any, offsets: np.ndarray) -> list[Any]:
    import scipy.sparse as sp

    if not sp.issparse(matrix):
        raise InputError(
            "a", f"must be a torch or SciPy sparse matrix, got {type(matrix).__name__}"
        )
    csr = sp.csr_matrix(matrix)
    csr.sum_duplicates()
    rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
    _coupling(rows, csr.indices.astype(np.int64), offsets)
    out = []
    for lo, hi in itertools.pairwise(offsets):
        start, stop = csr.indptr[lo], csr.indptr[hi]
        indptr = csr.indptr[lo : hi + 1] - start
        block = sp.csr_matrix(
            (csr.data[start:stop], csr.indices[start:stop] - lo, indptr), shape=(hi - lo, hi - lo)
        )
        out.append(block)
    return out


def _torch_blocks(matrix: torch.Tensor, offsets: np.ndarray) -> list[torch.Tensor]:
    layouts = (torch.sparse_coo, torch.sparse_csr, torch.sparse_csc)
    if matrix.layout not in layouts:
        raise InputError("a", f"must be a torch sparse tensor, got layout {matrix.layout}")
    coo = (matrix if matrix.layout == torch.sparse_coo else matrix.to_sparse_coo()).coalesce()
    idx, val = coo.indices(), coo.values()
    idx_np = idx.cpu().numpy()
    _coupling(idx_np[0], idx_np[1], offsets)
    # coalesced COO is sorted by row: each block is one contiguous run of entries
    cuts = np.searchsorted(idx_np[0], offsets)
    out = []
    for b, (lo, hi) in enumerate(itertools.pairwise(offsets)):
        s, e = int(cuts[b]), int(cuts[b + 1])
        size = int(hi - lo)
        out.append(
            torch.sparse_coo_tensor(idx[:, s:e] - int(lo), val[s:e], (size, size)).coalesce()
        )
    return out
