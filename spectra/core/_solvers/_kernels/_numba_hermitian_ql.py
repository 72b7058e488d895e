"""Complex Hermitian eigenpairs, one SIMD lane per matrix: Householder + real QL (numba).

LAPACK's ``zhetd2`` reduction in lane form: for ``k = 0 .. n-2`` the reflector
``H = I - tau v v^H`` (``zlarfg``: ``H^H x = beta e_1`` with ``beta`` real) zeroes column
``k`` below the subdiagonal, and the trailing block is updated as
``A := H^H A H = A - v w^H - w v^H`` with ``y = A v``, ``w = tau y - |tau|^2 (v^H y) v / 2``.
Because every ``beta`` is real, the tridiagonal matrix is *real* symmetric; the reflectors
are accumulated into ``Q = H_0 H_1 ... H_{n-2}`` and the real implicit QL of
:mod:`._numba_tridiag_ql` rotates the columns of ``Q`` (real and imaginary parts alike).

Complex numbers are held as separate real and imaginary lane buffers (column-major per
matrix, batch innermost, as in the real kernel); the ``tau = 0`` branch of ``zlarfg`` is a
select with a safe divisor. Lanes are scaled by their largest entry first and computed in
float64. Only the lower triangle of the input is read.
"""

from __future__ import annotations

import math

import numpy as np

from ._numba_tridiag_ql import LANES, _col, _tql2, _v, ascending, jit


@jit
def _load(a, start, m, n, ar, ai, scale):
    """Lanes ``start .. start+m`` of the complex ``a`` into full Hermitian ``ar + i ai``
    (from the lower triangle), each divided by its largest |re|, |im|."""
    L = LANES
    for lane in range(L):
        scale[lane] = 1.0
    for lane in range(m):
        g = a[start + lane]
        peak = 0.0
        for i in range(n):
            for j in range(i + 1):
                peak = max(peak, abs(g[i, j].real), abs(g[i, j].imag))
        scale[lane] = peak if peak > 0.0 else 1.0
    ar[:] = 0.0
    ai[:] = 0.0
    for j in range(n):
        cr, ci = _col(ar, j, n), _col(ai, j, n)
        for i in range(j, n):
            rr, ri = _col(ar, i, n), _col(ai, i, n)
            for lane in range(m):
                z = a[start + lane, i, j]
                x, y = z.real / scale[lane], z.imag / scale[lane]
                cr[i * L + lane] = x  # (i, j), lower
                ci[i * L + lane] = y if i != j else 0.0
                rr[j * L + lane] = x  # (j, i) = conj
                ri[j * L + lane] = -y if i != j else 0.0


@jit
def _reduce(ar, ai, n, d, e, taur, taui, vecs, yr, yi, t):
    """zhetd2 on every lane: ``d`` (diagonal) and ``e`` (``e[k+1]`` between rows k, k+1)
    real; the reflectors' ``v`` go to ``vecs`` (``2 n`` lane rows per k) and ``tau``."""
    L = LANES
    _v(e, 0)[:] = 0.0
    for k in range(n - 1):
        colr, coli = _col(ar, k, n), _col(ai, k, n)
        xn = t[0]
        xn[:] = 0.0
        for i in range(k + 2, n):
            for lane in range(L):
                xr, xi = colr[i * L + lane], coli[i * L + lane]
                xn[lane] += xr * xr + xi * xi
        tr, ti = _v(taur, k), _v(taui, k)
        sr, si, ek1 = t[1], t[2], _v(e, k + 1)
        for lane in range(L):  # zlarfg
            alr, ali = colr[(k + 1) * L + lane], coli[(k + 1) * L + lane]
            keep = xn[lane] == 0.0 and ali == 0.0
            beta = math.sqrt(alr * alr + ali * ali + xn[lane])
            beta = beta if alr < 0.0 else -beta
            beta = alr if keep else beta
            bs = 1.0 if keep else beta
            tr[lane] = 0.0 if keep else (beta - alr) / bs
            ti[lane] = 0.0 if keep else -ali / bs
            dr, di = alr - beta, ali  # 1 / (alpha - beta)
            dr = 1.0 if keep else dr
            den = dr * dr + di * di
            sr[lane] = dr / den
            si[lane] = -di / den
            ek1[lane] = beta
        # v (rows k+1 .. n-1; v[k+1] = 1) into this k's slot of vecs
        vkr, vki = vecs[2 * k], vecs[2 * k + 1]
        for i in range(n):
            for lane in range(L):
                vkr[i * L + lane] = 0.0
                vki[i * L + lane] = 0.0
        for lane in range(L):
            vkr[(k + 1) * L + lane] = 1.0
        for i in range(k + 2, n):
            for lane in range(L):
                xr, xi = colr[i * L + lane], coli[i * L + lane]
                vkr[i * L + lane] = xr * sr[lane] - xi * si[lane]
                vki[i * L + lane] = xr * si[lane] + xi * sr[lane]
        # y = A22 v
        for i in range(n):
            for lane in range(L):
                yr[i * L + lane] = 0.0
                yi[i * L + lane] = 0.0
        for j in range(k + 1, n):
            cjr, cji = _col(ar, j, n), _col(ai, j, n)
            for i in range(k + 1, n):
                for lane in range(L):
                    xr, xi = cjr[i * L + lane], cji[i * L + lane]
                    pr, pi = vkr[j * L + lane], vki[j * L + lane]
                    yr[i * L + lane] += xr * pr - xi * pi
                    yi[i * L + lane] += xr * pi + xi * pr
        # w = tau y - |tau|^2 (v^H y) / 2 v   (v^H y is real for Hermitian A)
        s = t[3]
        s[:] = 0.0
        for i in range(k + 1, n):
            for lane in range(L):
                s[lane] += (
                    vkr[i * L + lane] * yr[i * L + lane] + vki[i * L + lane] * yi[i * L + lane]
                )
        for lane in range(L):
            s[lane] = 0.5 * (tr[lane] * tr[lane] + ti[lane] * ti[lane]) * s[lane]
        for i in range(k + 1, n):
            for lane in range(L):
                y_r, y_i = yr[i * L + lane], yi[i * L + lane]
                wr = tr[lane] * y_r - ti[lane] * y_i - s[lane] * vkr[i * L + lane]
                wi = tr[lane] * y_i + ti[lane] * y_r - s[lane] * vki[i * L + lane]
                yr[i * L + lane] = wr
                yi[i * L + lane] = wi
        # A22 -= v w^H + w v^H
        for j in range(k + 1, n):
            cjr, cji = _col(ar, j, n), _col(ai, j, n)
            for i in range(k + 1, n):
                for lane in range(L):
                    v_r, v_i = vkr[i * L + lane], vki[i * L + lane]
                    w_r, w_i = yr[i * L + lane], yi[i * L + lane]
                    wjr, wji = yr[j * L + lane], yi[j * L + lane]
                    vjr, vji = vkr[j * L + lane], vki[j * L + lane]
                    cjr[i * L + lane] -= (v_r * wjr + v_i * wji) + (w_r * vjr + w_i * vji)
                    cji[i * L + lane] -= (v_i * wjr - v_r * wji) + (w_i * vjr - w_r * vji)
    for k in range(n):
        dk, ck = _v(d, k), _col(ar, k, n)
        for lane in range(L):
            dk[lane] = ck[k * L + lane]


@jit
def _form_q(qr, qi, n, taur, taui, vecs, u):
    """``Q = H_0 H_1 ... H_{n-2}`` (column-major lanes), applied from the last reflector."""
    L = LANES
    qr[:] = 0.0
    qi[:] = 0.0
    for j in range(n):
        c = _col(qr, j, n)
        for lane in range(L):
            c[j * L + lane] = 1.0
    ur, ui = u[0], u[1]
    for k in range(n - 2, -1, -1):
        vkr, vki = vecs[2 * k], vecs[2 * k + 1]
        tr, ti = _v(taur, k), _v(taui, k)
        for j in range(k + 1, n):  # u_j = v^H Q[:, j];  Q[:, j] -= tau v u_j
            cjr, cji = _col(qr, j, n), _col(qi, j, n)
            ur[:] = 0.0
            ui[:] = 0.0
            for i in range(k + 1, n):
                for lane in range(L):
                    a_r, a_i = vkr[i * L + lane], -vki[i * L + lane]
                    b_r, b_i = cjr[i * L + lane], cji[i * L + lane]
                    ur[lane] += a_r * b_r - a_i * b_i
                    ui[lane] += a_r * b_i + a_i * b_r
            for lane in range(L):  # tau * u_j
                x, y = ur[lane], ui[lane]
                ur[lane] = tr[lane] * x - ti[lane] * y
                ui[lane] = tr[lane] * y + ti[lane] * x
            for i in range(k + 1, n):
                for lane in range(L):
                    v_r, v_i = vkr[i * L + lane], vki[i * L + lane]
                    cjr[i * L + lane] -= v_r * ur[lane] - v_i * ui[lane]
                    cji[i * L + lane] -= v_r * ui[lane] + v_i * ur[lane]


@jit
def hermitian_ql(a, w, vt, tol):
    """Eigenpairs of the complex Hermitian ``a`` (B, n, n), lower triangle: ``w`` (B, n)
    ascending, ``vt`` (B, n, n) complex with ``vt[b, k]`` the k-th eigenvector (or empty).
    Returns a bool array of the matrices that did not converge."""
    L = LANES
    bsz, n = a.shape[0], a.shape[1]
    vectors = vt.shape[0] > 0
    ar, ai = np.empty(n * n * L), np.empty(n * n * L)
    qr, qi = np.empty(n * n * L), np.empty(n * n * L)
    d, e = np.empty(n * L), np.empty(n * L)
    taur, taui = np.empty(n * L), np.empty(n * L)
    vecs = np.empty((2 * n, n * L))
    yr, yi = np.empty(n * L), np.empty(n * L)
    t = np.empty((4, L))
    u = np.empty((2, L))
    scale = np.empty(L)
    st = np.empty((14, L))
    flags = np.zeros(L, dtype=np.bool_)
    failed = np.zeros(bsz, dtype=np.bool_)
    order = np.empty(n, dtype=np.int64)
    for start in range(0, bsz, L):
        m = min(L, bsz - start)
        _load(a, start, m, n, ar, ai, scale)
        flags[:] = False
        if n > 1:
            _reduce(ar, ai, n, d, e, taur, taui, vecs, yr, yi, t)
            if vectors:
                _form_q(qr, qi, n, taur, taui, vecs, u)
            _tql2(qr, qi, d, e, n, vectors, True, tol, st, flags)
        else:
            d[:L] = ar[:L]
            qr[:L] = 1.0
            qi[:L] = 0.0
        for lane in range(m):
            failed[start + lane] = flags[lane]
            ascending(d, 1, lane, n, order)
            for k in range(n):
                col = order[k]
                w[start + lane, k] = d[col * L + lane] * scale[lane]
                if vectors:
                    for i in range(n):
                        idx = (col * n + i) * L + lane
                        vt[start + lane, k, i] = qr[idx] + 1j * qi[idx]
    return failed
