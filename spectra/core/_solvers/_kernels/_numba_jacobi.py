"""Cyclic Jacobi with one SIMD lane per matrix, compiled by numba (real symmetric).

Layout: a block of ``LANES`` matrices is held as ``A[(i * n + j) * LANES + l]`` (entry
``(i, j)`` of matrix ``l``): the batch is the innermost, contiguous axis, so every step of
the algorithm is a loop over lanes that LLVM turns into SIMD instructions, and a block
(``n^2 LANES`` doubles for ``A`` and as many for ``V``) stays in L1/L2. Each rotation
``(p, q)`` is computed per lane (Rutishauser's formulas, ``t = 0`` where ``a_pq = 0``, so no
branch depends on a lane), then columns ``p, q`` of ``A`` and ``V`` are rotated and the rows
copied from the columns (``A`` stays exactly symmetric). The same formulation is the one a
GPU kernel would use (a Triton program per block of lanes, the block in registers/SRAM).

Every lane is scaled by its largest entry first (no overflow or underflow at 1e+-150), and
computed in float64 whatever the input precision; a lane stops once it
has ``off(A) <= tol ||A||_F`` (``tol`` is the *input* precision: float32 needs fewer sweeps).
A converged lane is frozen (identity rotations, exact no-ops), so a lane's result does not
depend on its neighbours in the block. Eigenvalues come out sorted ascending with the
matching eigenvectors.

This module imports numba: the core imports it on first use; each kernel compiles on its
first call for a dtype, or loads from numba's cache (``cache=True``).
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

# LANES: matrices per block, a compile-time constant so lane loops have a fixed trip count
# (shared with the QL kernel, as are the lane scaling and the per-lane ascending sort)
from ._numba_tridiag_ql import LANES, ascending, lane_scales

#: enough for any input: cyclic Jacobi converges quadratically (n <= 32 needs <= ~10)
MAX_SWEEPS = 30

jit = functools.partial(numba.njit, nogil=True, cache=True, error_model="numpy")


@jit
def _load(a, start, m, n, buf, scale):
    """Copy lanes ``start .. start+m`` of ``a`` (lower triangle, symmetrized) into ``buf``;
    scale each lane by its largest entry; pad the lanes past ``m`` with zero matrices."""
    L = LANES
    lane_scales(a, start, m, n, scale)
    for i in range(n):
        for j in range(i + 1):
            for lane in range(L):
                x = a[start + lane, i, j] / scale[lane] if lane < m else 0.0
                buf[(i * n + j) * L + lane] = x
                buf[(j * n + i) * L + lane] = x


@jit
def _converged(A, n, tol2, off, tot, done):
    """Mark lanes with ``sum_{i != j} a_ij^2 <= tol2 * sum a_ij^2`` as done (they are frozen
    from then on, so a lane's result never depends on its neighbours); all done?"""
    L = LANES
    off[:] = 0.0
    tot[:] = 0.0
    for i in range(n):
        for j in range(n):
            x = A[(i * n + j) * L : (i * n + j + 1) * L]
            acc = tot if i == j else off
            for lane in range(L):
                acc[lane] += x[lane] * x[lane]
    alldone = True
    for lane in range(L):
        done[lane] = done[lane] or off[lane] <= tol2 * (tot[lane] + off[lane])
        alldone = alldone and done[lane]
    return alldone


@jit
def _row(A, i, n):
    """Lane vector of entry ``i`` (a view: lane loops over views vectorize; numba's negative
    index handling on computed offsets would block LLVM's vectorizer)."""
    L = LANES
    return A[i * L : (i + 1) * L]


@jit
def _rotate(A, V, n, p, q, c, s, done, vectors):
    """Annihilate ``a_pq`` in every lane (one Jacobi rotation per lane)."""
    L = LANES
    app, aqq = _row(A, p * n + p, n), _row(A, q * n + q, n)
    apq, aqp = _row(A, p * n + q, n), _row(A, q * n + p, n)
    for lane in range(L):
        x = apq[lane]
        theta = (aqq[lane] - app[lane]) / (2.0 * x)
        t = 1.0 / (abs(theta) + math.sqrt(theta * theta + 1.0))
        t = -t if theta < 0.0 else t
        t = 0.0 if x == 0.0 or done[lane] else t  # identity: exact no-op
        cc = 1.0 / math.sqrt(t * t + 1.0)
        c[lane] = cc
        s[lane] = t * cc
        tv = t * x
        app[lane] = app[lane] - tv  # the exact new diagonal (Rutishauser)
        aqq[lane] = aqq[lane] + tv
    for r in range(n):
        if r == p or r == q:  # noqa: SIM109 - plain compares compile to two cmp
            continue
        xp, xq = _row(A, r * n + p, n), _row(A, r * n + q, n)
        yp, yq = _row(A, p * n + r, n), _row(A, q * n + r, n)
        for lane in range(L):
            x = xp[lane]
            y = xq[lane]
            u = c[lane] * x - s[lane] * y
            v = s[lane] * x + c[lane] * y
            xp[lane] = u
            xq[lane] = v
            yp[lane] = u
            yq[lane] = v
    for lane in range(L):
        apq[lane] = 0.0
        aqp[lane] = 0.0
    if vectors:
        for r in range(n):
            xp, xq = _row(V, r * n + p, n), _row(V, r * n + q, n)
            for lane in range(L):
                x = xp[lane]
                y = xq[lane]
                xp[lane] = c[lane] * x - s[lane] * y
                xq[lane] = s[lane] * x + c[lane] * y


@jit
def jacobi_real(a, w, vt, tol):
    """Eigenpairs of the real symmetric ``a`` (B, n, n): ``w`` (B, n) ascending and
    ``vt`` (B, n, n) with ``vt[b, k]`` the k-th eigenvector (or ``vt`` empty: values only).
    Returns the largest number of sweeps a block needed."""
    L = LANES
    bsz, n = a.shape[0], a.shape[1]
    vectors = vt.shape[0] > 0
    A = np.empty(n * n * L)
    V = np.empty(n * n * L)
    c, s = np.empty(L), np.empty(L)
    scale = np.empty(L)
    done = np.zeros(L, dtype=np.bool_)
    order = np.empty(n, dtype=np.int64)
    tol2 = tol * tol
    worst = 0
    for start in range(0, bsz, L):
        m = min(L, bsz - start)
        _load(a, start, m, n, A, scale)
        if vectors:
            V[:] = 0.0
            for i in range(n):
                V[(i * n + i) * L : (i * n + i + 1) * L] = 1.0
        sweeps = 0
        done[:] = False
        while sweeps < MAX_SWEEPS and not _converged(A, n, tol2, c, s, done):
            for p in range(n - 1):
                for q in range(p + 1, n):
                    _rotate(A, V, n, p, q, c, s, done, vectors)
            sweeps += 1
        worst = max(worst, sweeps)
        _store(A, V, n, start, m, scale, order, w, vt, vectors)
    return worst


@jit
def _store(A, V, n, start, m, scale, order, w, vt, vectors):
    """Sort each lane's diagonal ascending; write values (unscaled) and vectors."""
    L = LANES
    for lane in range(m):
        ascending(A, n + 1, lane, n, order)  # the diagonal: A[(k * n + k) * L + lane]
        for k in range(n):
            col = order[k]
            w[start + lane, k] = A[(col * n + col) * L + lane] * scale[lane]
            if vectors:
                for i in range(n):
                    vt[start + lane, k, i] = V[(i * n + col) * L + lane]
