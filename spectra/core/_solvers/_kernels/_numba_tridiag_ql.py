"""Householder tridiagonalization + implicit QL, one SIMD lane per matrix (numba, real).

The algorithm is EISPACK's ``tred2``/``tql2`` (as in JAMA), written so that every inner
loop runs over the lanes of a block of ``LANES`` matrices held with the batch innermost:
``V[(j * n + k) * LANES + l]`` is entry ``(k, j)`` of matrix ``l`` (column-major per
matrix, so the column rotations of QL and the column updates of ``tred2`` are contiguous),
``d[i * LANES + l]`` and ``e[i * LANES + l]`` the diagonal and off-diagonal.

Per-lane control flow becomes masks:

- ``tred2``'s zero-row branch is the general branch with a safe divisor (it produces the
  same numbers), and the sign choice of the Householder vector is a select;
- ``tql2`` iterates on eigenvalue ``l`` while *any* lane has ``|e_l| > eps * tst1``; each lane
  has its own split point ``m`` (a select loop), its QL sweep starts at ``i = m - 1`` (the
  state ``p, c, s`` is reset there by selects) and a lane that is not in its sweep, or has
  converged, gets the identity rotation and keeps its values (selects, never products with
  a mask, so the garbage of idle lanes never leaks).

Lanes are scaled by their largest entry first (1e+-150 inputs neither overflow nor
underflow); arithmetic is float64 whatever the input precision, and the convergence test
uses the *input* precision (float32 needs fewer iterations). A lane that has not converged
after ``MAX_ITER`` iterations on one eigenvalue is flagged; the caller recomputes it.
The same masked formulation is what a Triton kernel (a program per block of lanes) needs.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

#: matrices per block (shared by numba-jacobi and the complex QL): 64 ran 8-25% faster
#: than 32 for real QL at n = 8-32 and Jacobi at n = 4-5, complex QL even (interleaved,
#: one thread, 2026-11-30); the block of V (n^2 LANES doubles, 512 KiB at n = 32) sits in L2
LANES = 64
MAX_ITER = 60

jit = functools.partial(numba.njit, nogil=True, cache=True, error_model="numpy")


@jit
def _v(x, i):
    """Lane vector ``i`` of a lane buffer (a view: lane loops over views vectorize)."""
    return x[i * LANES : (i + 1) * LANES]


@jit
def _col(V, j, n):
    """Column ``j`` of every lane: entry ``k`` of lane ``l`` is at ``k * LANES + l``."""
    return V[j * n * LANES : (j + 1) * n * LANES]


@jit
def lane_scales(a, start, m, n, scale):
    """``scale[lane]``: the largest ``|entry|`` of the lower triangle of lane ``start + lane``
    of the real ``a`` (1 for a zero matrix and for the padding lanes past ``m``)."""
    for lane in range(scale.shape[0]):
        scale[lane] = 1.0
    for lane in range(m):
        g = a[start + lane]
        peak = 0.0
        for i in range(n):
            for j in range(i + 1):
                peak = max(peak, abs(g[i, j]))
        scale[lane] = peak if peak > 0.0 else 1.0


@jit
def ascending(keys, stride, lane, n, order):
    """``order[:n]``: the indices ``k`` sorted by ``keys[k * stride * LANES + lane]``
    ascending (a stable insertion sort: ``n`` is small)."""
    L = LANES
    for k in range(n):
        order[k] = k
    for k in range(1, n):
        cur = order[k]
        val = keys[cur * stride * L + lane]
        j = k - 1
        while j >= 0 and keys[order[j] * stride * L + lane] > val:
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = cur


@jit
def _load(a, start, m, n, V, scale):
    """Lower triangle of lanes ``start .. start+m`` into ``V`` (column-major), each lane
    divided by its largest entry; lanes past ``m`` are zero matrices."""
    L = LANES
    lane_scales(a, start, m, n, scale)
    V[:] = 0.0
    for j in range(n):
        col = _col(V, j, n)
        for k in range(j, n):
            for lane in range(m):
                col[k * L + lane] = a[start + lane, k, j] / scale[lane]


@jit
def _tred2(V, d, e, n, vectors, t1, t2, t3):
    """Householder reduction of the lower triangle of ``V`` to tridiagonal ``(d, e)``;
    ``V`` becomes the accumulated orthogonal transformation if ``vectors``."""
    L = LANES
    for j in range(n):
        dj, src = _v(d, j), _col(V, j, n)
        for lane in range(L):
            dj[lane] = src[(n - 1) * L + lane]
    for i in range(n - 1, 0, -1):
        sc, h = t1, t2
        sc[:] = 0.0
        h[:] = 0.0
        for k in range(i):
            dk = _v(d, k)
            for lane in range(L):
                sc[lane] += abs(dk[lane])
        for lane in range(L):
            sc[lane] = sc[lane] if sc[lane] > 0.0 else 1.0  # zero row: same numbers
        for k in range(i):
            dk = _v(d, k)
            for lane in range(L):
                x = dk[lane] / sc[lane]
                dk[lane] = x
                h[lane] += x * x
        di1, ei = _v(d, i - 1), _v(e, i)
        for lane in range(L):
            f = di1[lane]
            g = math.sqrt(h[lane])
            g = -g if f > 0.0 else g
            ei[lane] = sc[lane] * g
            hv = h[lane] - f * g
            h[lane] = hv if hv != 0.0 else 1.0  # safe divisor (0 only for a zero row)
            sc[lane] = hv  # keep h itself for d[i]
            di1[lane] = f - g
        for j in range(i):
            _v(e, j)[:] = 0.0
        coli = _col(V, i, n)
        for j in range(i):
            dj, ej, colj = _v(d, j), _v(e, j), _col(V, j, n)
            for lane in range(L):
                coli[j * L + lane] = dj[lane]
                ej[lane] += colj[j * L + lane] * dj[lane]
            for k in range(j + 1, i):
                dk, ek = _v(d, k), _v(e, k)
                for lane in range(L):
                    vkj = colj[k * L + lane]
                    ej[lane] += vkj * dk[lane]
                    ek[lane] += vkj * dj[lane]
        ff = t3
        ff[:] = 0.0
        for j in range(i):
            dj, ej = _v(d, j), _v(e, j)
            for lane in range(L):
                ej[lane] = ej[lane] / h[lane]
                ff[lane] += ej[lane] * dj[lane]
        for lane in range(L):
            ff[lane] = ff[lane] / (h[lane] + h[lane])
        for j in range(i):
            dj, ej = _v(d, j), _v(e, j)
            for lane in range(L):
                ej[lane] -= ff[lane] * dj[lane]
        rowi1 = i - 1
        for j in range(i):
            dj, ej, colj = _v(d, j), _v(e, j), _col(V, j, n)
            for k in range(j, i):
                dk, ek = _v(d, k), _v(e, k)
                for lane in range(L):
                    colj[k * L + lane] -= dj[lane] * ek[lane] + ej[lane] * dk[lane]
            for lane in range(L):
                dj[lane] = colj[rowi1 * L + lane]
                colj[i * L + lane] = 0.0
        di = _v(d, i)
        for lane in range(L):
            di[lane] = sc[lane]
    if not vectors:
        for j in range(n):
            dj, colj = _v(d, j), _col(V, j, n)
            for lane in range(L):
                dj[lane] = colj[j * L + lane]
        _v(e, 0)[:] = 0.0
        return
    last = n - 1
    for i in range(n - 1):
        coli, coli1, h = _col(V, i, n), _col(V, i + 1, n), _v(d, i + 1)
        hs = t1
        for lane in range(L):
            hs[lane] = h[lane] if h[lane] != 0.0 else 1.0  # h = 0: the column is zero
        for lane in range(L):
            coli[last * L + lane] = coli[i * L + lane]
            coli[i * L + lane] = 1.0
        for k in range(i + 1):
            dk = _v(d, k)
            for lane in range(L):
                dk[lane] = coli1[k * L + lane] / hs[lane]
        for j in range(i + 1):
            colj = _col(V, j, n)
            g = t2
            g[:] = 0.0
            for k in range(i + 1):
                for lane in range(L):
                    g[lane] += coli1[k * L + lane] * colj[k * L + lane]
            for k in range(i + 1):
                dk = _v(d, k)
                for lane in range(L):
                    colj[k * L + lane] -= g[lane] * dk[lane]
        for k in range(i + 1):
            for lane in range(L):
                coli1[k * L + lane] = 0.0
    for j in range(n):
        dj, colj = _v(d, j), _col(V, j, n)
        for lane in range(L):
            dj[lane] = colj[last * L + lane]
            colj[last * L + lane] = 0.0
    colj = _col(V, last, n)
    for lane in range(L):
        colj[last * L + lane] = 1.0
    _v(e, 0)[:] = 0.0


@jit
def _rotate_columns(V, i, n, cr, sr):
    """Columns ``i, i + 1`` of every lane of ``V`` times the lane's rotation ``(c, s)``."""
    L = LANES
    x, y = _col(V, i, n), _col(V, i + 1, n)
    for k in range(n):
        for lane in range(L):
            hv = y[k * L + lane]
            xv = x[k * L + lane]
            y[k * L + lane] = sr[lane] * xv + cr[lane] * hv
            x[k * L + lane] = cr[lane] * xv - sr[lane] * hv


@jit
def _tql2(V, W, d, e, n, vectors, cplx, eps, st, flags):
    """Implicit QL on the tridiagonal ``(d, e)`` of every lane, rotating the columns of
    ``V`` (and of ``W``, the imaginary part, if ``cplx``); ``flags[l]`` is set for lanes that
    did not converge. ``e[i]`` is the entry between rows ``i - 1`` and ``i`` on entry."""
    L = LANES
    f, tst1, act = st[0], st[1], st[2]
    p, c, s, c2, c3, s2 = st[3], st[4], st[5], st[6], st[7], st[8]
    el1, dl1, cr, sr, mm = st[9], st[10], st[11], st[12], st[13]
    for i in range(1, n):
        _v(e, i - 1)[:] = _v(e, i)
    _v(e, n - 1)[:] = 0.0
    f[:] = 0.0
    tst1[:] = 0.0
    for ll in range(n):
        dl, el = _v(d, ll), _v(e, ll)
        for lane in range(L):
            tst1[lane] = max(tst1[lane], abs(dl[lane]) + abs(el[lane]))
        for it in range(MAX_ITER + 1):
            anyact = False
            for lane in range(L):
                a = abs(el[lane]) > eps * tst1[lane]
                act[lane] = 1.0 if a else 0.0
                anyact = anyact or a
            if not anyact:
                break
            if it == MAX_ITER:
                for lane in range(L):
                    flags[lane] = flags[lane] or act[lane] > 0.0
                break
            # split point m >= l of each lane: the first small e (e[n-1] = 0 always)
            for lane in range(L):
                mm[lane] = n - 1
            for i in range(n - 2, ll - 1, -1):
                ei = _v(e, i)
                for lane in range(L):
                    mm[lane] = i if abs(ei[lane]) <= eps * tst1[lane] else mm[lane]
            # shift (Wilkinson-like, from the leading 2x2), masked to the active lanes
            dl1v = _v(d, ll + 1)
            el1v = _v(e, ll + 1) if ll + 1 < n else _v(e, ll)
            h = cr  # scratch
            for lane in range(L):
                on = act[lane] > 0.0
                ev = el[lane] if on else 1.0
                g = dl[lane]
                pp = (dl1v[lane] - g) / (2.0 * ev)
                r = math.sqrt(pp * pp + 1.0)
                r = -r if pp < 0.0 else r
                new_dl = ev / (pp + r)
                new_dl1 = ev * (pp + r)
                hh = g - new_dl
                dl[lane] = new_dl if on else dl[lane]
                dl1v[lane] = new_dl1 if on else dl1v[lane]
                dl1[lane] = dl1v[lane]
                h[lane] = hh if on else 0.0
                f[lane] += h[lane]
                el1[lane] = el1v[lane]
            for i in range(ll + 2, n):
                di = _v(d, i)
                for lane in range(L):
                    di[lane] -= h[lane]
            # QL sweep from i = m - 1 down to l, lane by lane
            for i in range(n - 2, ll - 1, -1):
                di, di1, ei, ei1 = _v(d, i), _v(d, i + 1), _v(e, i), _v(e, i + 1)
                for lane in range(L):
                    start = i == mm[lane] - 1
                    part = act[lane] > 0.0 and i < mm[lane]
                    p0 = di1[lane] if start else p[lane]
                    c0 = 1.0 if start else c[lane]
                    s0 = 0.0 if start else s[lane]
                    c20 = 1.0 if start else c2[lane]
                    c3n = c20
                    c2n = c0
                    s2n = s0
                    eiv = ei[lane]
                    g = c0 * eiv
                    hh = c0 * p0
                    r = math.sqrt(p0 * p0 + eiv * eiv)
                    ei1n = s0 * r
                    sn = eiv / r
                    cn = p0 / r
                    pn = cn * di[lane] - sn * g
                    di1n = hh + sn * (cn * g + sn * di[lane])
                    ei1[lane] = ei1n if part else ei1[lane]
                    di1[lane] = di1n if part else di1[lane]
                    p[lane] = pn if part else p[lane]
                    c[lane] = cn if part else c[lane]
                    s[lane] = sn if part else s[lane]
                    c2[lane] = c2n if part else c2[lane]
                    c3[lane] = c3n if part else c3[lane]
                    s2[lane] = s2n if part else s2[lane]
                    cr[lane] = cn if part else 1.0
                    sr[lane] = sn if part else 0.0
                if vectors:
                    _rotate_columns(V, i, n, cr, sr)
                    if cplx:
                        _rotate_columns(W, i, n, cr, sr)
            for lane in range(L):
                on = act[lane] > 0.0
                pv = -s[lane] * s2[lane] * c3[lane] * el1[lane] * el[lane] / dl1[lane]
                el[lane] = s[lane] * pv if on else el[lane]
                dl[lane] = c[lane] * pv if on else dl[lane]
        for lane in range(L):
            dl[lane] = dl[lane] + f[lane]
            el[lane] = 0.0


@jit
def tridiag_ql_real(a, w, vt, tol):
    """Eigenpairs of the real symmetric ``a`` (B, n, n), lower triangle: ``w`` (B, n)
    ascending, ``vt`` (B, n, n) with ``vt[b, k]`` the k-th eigenvector (or empty: values
    only). Returns a bool array of the matrices that did not converge."""
    L = LANES
    bsz, n = a.shape[0], a.shape[1]
    vectors = vt.shape[0] > 0
    V = np.empty(n * n * L)
    d = np.empty(n * L)
    e = np.empty(n * L)
    scale = np.empty(L)
    t1, t2, t3 = np.empty(L), np.empty(L), np.empty(L)
    st = np.empty((14, L))
    flags = np.zeros(L, dtype=np.bool_)
    failed = np.zeros(bsz, dtype=np.bool_)
    order = np.empty(n, dtype=np.int64)
    for start in range(0, bsz, L):
        m = min(L, bsz - start)
        _load(a, start, m, n, V, scale)
        flags[:] = False
        if n > 1:
            _tred2(V, d, e, n, vectors, t1, t2, t3)
            _tql2(V, V, d, e, n, vectors, False, tol, st, flags)
        else:
            d[:L] = V[:L]
            V[:L] = 1.0
        for lane in range(m):
            failed[start + lane] = flags[lane]
            ascending(d, 1, lane, n, order)
            for k in range(n):
                col = order[k]
                w[start + lane, k] = d[col * L + lane] * scale[lane]
                if vectors:
                    for i in range(n):
                        vt[start + lane, k, i] = V[(col * n + i) * L + lane]
    return failed
