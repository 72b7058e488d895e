"""Symbolic Cholesky analysis: the exact fill of a symmetric pattern in a given ordering.

The elimination tree (Liu's algorithm with path compression), its postorder, and the column
counts of the Cholesky factor by Gilbert, Ng and Peyton's row-subtree skeleton ("An
efficient algorithm to compute row and column counts for sparse Cholesky factorization",
SIAM J. Matrix Anal. Appl. 15, 1994), as Davis' CSparse ``cs_etree`` / ``cs_post`` /
``cs_counts`` write them: O(nnz alpha(nnz, n)) time, O(n) extra memory. SciPy has no
symbolic factorization and scikit-sparse (CHOLMOD's ``analyze``) ships no wheels, hence
these few loops, compiled by numba (imported on first use, ``cache=True``).

With diagonal pivots (the shift-invert factorization's: the shifted matrix is positive
definite) SuperLU's ``L`` and ``U`` have exactly these counts (tested against
``splu(...).L.nnz``). The sum of the squared counts is the factorization's multiply-add
count, up to a constant.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np


@numba.njit(nogil=True, cache=True)
def _etree_postorder(indptr, indices, n):  # pragma: no cover - compiled
    parent = np.full(n, -1, np.int64)
    ancestor = np.full(n, -1, np.int64)
    for k in range(n):
        for p in range(indptr[k], indptr[k + 1]):
            i = indices[p]
            while i != -1 and i < k:
                nxt = ancestor[i]
                ancestor[i] = k
                if nxt == -1:
                    parent[i] = k
                i = nxt
    head = np.full(n, -1, np.int64)
    sibling = np.empty(n, np.int64)
    for j in range(n - 1, -1, -1):
        if parent[j] != -1:
            sibling[j] = head[parent[j]]
            head[parent[j]] = j
    post = np.empty(n, np.int64)
    stack = np.empty(n, np.int64)
    k = 0
    for root in range(n):
        if parent[root] != -1:
            continue
        top = 0
        stack[0] = root
        while top >= 0:
            p = stack[top]
            child = head[p]
            if child == -1:
                top -= 1
                post[k] = p
                k += 1
            else:
                head[p] = sibling[child]
                top += 1
                stack[top] = child
    return parent, post


@numba.njit(nogil=True, cache=True)
def _column_counts(indptr, indices, parent, post, n):  # pragma: no cover - compiled
    ancestor = np.arange(n)
    maxfirst = np.full(n, -1, np.int64)
    prevleaf = np.full(n, -1, np.int64)
    first = np.full(n, -1, np.int64)
    delta = np.zeros(n, np.int64)
    for k in range(n):
        j = post[k]
        delta[j] = 1 if first[j] == -1 else 0
        while j != -1 and first[j] == -1:
            first[j] = k
            j = parent[j]
    for k in range(n):
        j = post[k]
        if parent[j] != -1:
            delta[parent[j]] -= 1
        for p in range(indptr[j], indptr[j + 1]):
            i = indices[p]
            if i <= j or first[j] <= maxfirst[i]:
                continue  # not a leaf of row i's subtree
            maxfirst[i] = first[j]
            jprev = prevleaf[i]
            prevleaf[i] = j
            delta[j] += 1
            if jprev != -1:  # a later leaf: the least common ancestor's overlap goes
                q = jprev
                while q != ancestor[q]:
                    q = ancestor[q]
                s = jprev
                while s != q:
                    up = ancestor[s]
                    ancestor[s] = q
                    s = up
                delta[q] -= 1
        if parent[j] != -1:
            ancestor[j] = parent[j]
    for j in post:
        if parent[j] != -1:
            delta[parent[j]] += delta[j]
    return delta


def column_counts(pattern: Any) -> np.ndarray:
    """The column counts (the diagonal included) of the Cholesky factor of the symmetric
    pattern ``pattern`` (a SciPy CSR matrix, both triangles stored, values ignored) in its
    own ordering.

    >>> import scipy.sparse as sp
    >>> star = sp.lil_matrix(np.eye(4))
    >>> star[0, 1:] = star[1:, 0] = 1.0  # node 0 joined to every other node
    >>> column_counts(star.tocsr()).tolist()  # the hub first: it fills everything
    [4, 3, 2, 1]
    >>> column_counts(star.tocsr()[::-1, ::-1]).tolist()  # the hub last: no fill
    [2, 2, 2, 1]
    """
    n = int(pattern.shape[0])
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    indptr = np.ascontiguousarray(pattern.indptr, dtype=np.int64)
    indices = np.ascontiguousarray(pattern.indices, dtype=np.int64)
    parent, post = _etree_postorder(indptr, indices, n)
    return np.asarray(_column_counts(indptr, indices, parent, post, n))
