"""The closed forms of :mod:`._closed_form` for real 2x2 and 3x3, compiled by numba.

The same algorithm, step for step and operation for operation (see that module for the
derivation), written for one lane in scalar code; the loop over lanes is the batch. Torch's
elementwise version makes ~250 passes over the batch; here each matrix is read once and
written once, which is what makes n = 3 an order of magnitude faster than LAPACK. Only
``+ - * /``, ``sqrt``, comparisons and exact power-of-two scaling are used, without
fastmath, so a lane's result does not depend on its position in the batch.

This module imports numba, so the core imports it only when a kernel is first needed;
numba compiles each kernel on its first call for a dtype (``cache=True``: a fresh process
loads the cached machine code instead).
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from ._numba_gauge import gauge_row

#: matrices per SoA block (entries of one block stay in L1)
LANES = 64


L = LANES  # a compile-time constant: the rows of a lane block sit at constant offsets, so
# LLVM can prove their loads and stores independent and vectorizes across lanes
jit = functools.partial(numba.njit, nogil=True, cache=True, error_model="numpy")
inline = functools.partial(jit, inline="always")
#: a 3x3 whose largest entry is below TINY is scaled by UP (exactly) before 1 / max|a|
TINY = 2.0**-900
UP = 2.0**600


@inline
def pow2(m):
    """``2^e`` with ``m / 2^e`` in ``[1, 2)``; 1 for 0, and ``m`` for Inf/NaN. Finite for
    every finite ``m`` (``[0.5, 1)`` would need ``2^1024`` above ``2^1023``), and exact
    down to subnormal ``m``: dividing by it scales without rounding."""
    if m == 0.0 or not math.isfinite(m):
        return 1.0 if m == 0.0 else m
    _, e = math.frexp(m)
    return math.ldexp(1.0, e - 1)


@inline
def newton(x, r):
    """One Newton step on ``4x^3 - 3x - r`` (6 from ``x = 1`` reach double precision)."""
    x2 = x * x
    return x - (x * (4.0 * x2 - 3.0) - r) / (12.0 * x2 - 3.0)


@inline
def eig2(a, b, d):
    """``(w1, w2, x, y)``: eigenpairs of ``[[a, b], [b, d]]``, ``v2 = (x, y)``,
    ``v1 = (-y, x)``."""
    h = 0.5 * (a - d)
    mid = 0.5 * (a + d)
    sc = max(abs(h), abs(b))  # no underflow in the squares of a tiny 2x2
    sc = sc if sc > 0.0 else 1.0
    h, b = h / sc, b / sc
    r = math.sqrt(h * h + b * b)
    pos = h >= 0
    x = h + r if pos else b
    y = b if pos else r - h
    nrm = math.sqrt(x * x + y * y)
    zero = nrm == 0.0
    inv = 1.0 / (1.0 if zero else nrm)
    x = 1.0 if zero else x * inv
    y = 0.0 if zero else y * inv
    return mid - r * sc, mid + r * sc, x, y


@jit
def sym2(a, w, vt, gauge=None):
    """``a`` (B, 2, 2) -> ``w`` (B, 2), ``vt`` (B, 2, 2) with ``vt[b, j]`` = vector j;
    ``gauge`` as for :func:`sym3`."""
    for k in range(a.shape[0]):
        a00, a01, a11 = a[k, 0, 0], a[k, 1, 0], a[k, 1, 1]
        s = pow2(max(abs(a00), abs(a01), abs(a11)))
        # divided, not multiplied by 1 / s: 1 / s overflows for subnormal s
        w1, w2, x, y = eig2(a00 / s, a01 / s, a11 / s)
        w[k, 0], w[k, 1] = w1 * s, w2 * s
        if vt.shape[0] > 0:
            vt[k, 0, 0], vt[k, 0, 1] = -y, x
            vt[k, 1, 0], vt[k, 1, 1] = x, y
            if gauge is not None:
                gauge_row(vt[k, 0], gauge[0], gauge[1])
                gauge_row(vt[k, 1], gauge[0], gauge[1])


@jit
def lanes3(x, out, m):
    """The 3x3 closed form on ``m`` lanes: ``x`` (6 L,) entry rows ``d0 d1 d2 o01 o02 o12``
    -> ``out`` (12 L,): 3 eigenvalues, then the 3 eigenvectors (rows). Branch-free
    (every ``if`` is a select) so the lane loop vectorizes."""
    for k in range(m):
        d0, d1, d2 = x[0 * L + k], x[1 * L + k], x[2 * L + k]
        o01, o02, o12 = x[3 * L + k], x[4 * L + k], x[5 * L + k]
        s = max(abs(d0), abs(d1), abs(d2), abs(o01), abs(o02), abs(o12))
        s = s if s > 0.0 else 1.0
        f = UP if s < TINY else 1.0  # 1 / s overflows near the subnormals: scale up first
        inv = 1.0 / (s * f)  # (exact powers of two; f = 1 leaves every bit as it was)
        d0, d1, d2 = (d0 * f) * inv, (d1 * f) * inv, (d2 * f) * inv
        o01, o02, o12 = (o01 * f) * inv, (o02 * f) * inv, (o12 * f) * inv
        q = (d0 + d1 + d2) / 3.0
        d0, d1, d2 = d0 - q, d1 - q, d2 - q
        t = max(abs(d0), abs(d1), abs(d2), abs(o01), abs(o02), abs(o12))
        flat = t == 0.0
        t = 1.0 if flat else t
        inv = 1.0 / t
        d0, d1, d2 = d0 * inv, d1 * inv, d2 * inv
        o01, o02, o12 = o01 * inv, o02 * inv, o12 * inv
        p2 = (d0 * d0 + d1 * d1 + d2 * d2) + 2.0 * (o01 * o01 + o02 * o02 + o12 * o12)
        p = math.sqrt(p2 / 6.0)
        p = 1.0 if flat else p
        det = (
            d0 * d1 * d2
            + 2.0 * (o01 * o12 * o02)
            - d0 * (o12 * o12)
            - d1 * (o02 * o02)
            - d2 * (o01 * o01)
        )
        r = det / (2.0 * p * p * p)
        top = r >= 0
        xr = 1.0
        ra = min(abs(r), 1.0)
        xr = newton(xr, ra)
        xr = newton(xr, ra)
        xr = newton(xr, ra)
        xr = newton(xr, ra)
        xr = newton(xr, ra)
        xr = newton(xr, ra)
        far = (2.0 * xr if top else -2.0 * xr) * p
        far = 0.0 if flat else far
        # eigenvector of far: largest cross product of two rows of B - far I
        r00, r11, r22 = d0 - far, d1 - far, d2 - far
        c0 = o01 * o12 - o02 * r11  # row0 x row1
        c1 = o02 * o01 - r00 * o12
        c2 = r00 * r11 - o01 * o01
        e0 = o01 * r22 - o02 * o12  # row0 x row2
        e1 = o02 * o02 - r00 * r22
        e2 = r00 * o12 - o01 * o02
        f0 = r11 * r22 - o12 * o12  # row1 x row2
        f1 = o12 * o02 - o01 * r22
        f2 = o01 * o12 - r11 * o02
        n01 = c0 * c0 + c1 * c1 + c2 * c2
        n02 = e0 * e0 + e1 * e1 + e2 * e2
        n12 = f0 * f0 + f1 * f1 + f2 * f2
        b = n02 > n01
        c0, c1, c2 = (e0 if b else c0), (e1 if b else c1), (e2 if b else c2)
        n01 = n02 if b else n01
        b = n12 > n01
        c0, c1, c2 = (f0 if b else c0), (f1 if b else c1), (f2 if b else c2)
        n01 = n12 if b else n01
        inv = 1.0 / math.sqrt(1.0 if flat else n01)
        v0 = 1.0 if flat else c0 * inv
        v1 = 0.0 if flat else c1 * inv
        v2 = 0.0 if flat else c2 * inv
        # orthonormal complement (u, z) of v
        b = v0 * v0 >= v1 * v1
        u0 = -v2 if b else 0.0
        u1 = 0.0 if b else v2
        u2 = v0 if b else -v1
        inv = 1.0 / math.sqrt(u0 * u0 + u1 * u1 + u2 * u2)
        u0, u1, u2 = u0 * inv, u1 * inv, u2 * inv
        z0 = v1 * u2 - v2 * u1
        z1 = v2 * u0 - v0 * u2
        z2 = v0 * u1 - v1 * u0
        bz0 = d0 * z0 + o01 * z1 + o02 * z2
        bz1 = o01 * z0 + d1 * z1 + o12 * z2
        bz2 = o02 * z0 + o12 * z1 + d2 * z2
        m_uu = (
            u0 * (d0 * u0 + o01 * u1 + o02 * u2)
            + u1 * (o01 * u0 + d1 * u1 + o12 * u2)
            + u2 * (o02 * u0 + o12 * u1 + d2 * u2)
        )
        m_zz = z0 * bz0 + z1 * bz1 + z2 * bz2
        m_uz = u0 * bz0 + u1 * bz1 + u2 * bz2
        mu1, mu2, gx, gy = eig2(m_uu, m_uz, m_zz)
        out[0 * L + k] = (q + t * (mu1 if top else far)) * s
        out[1 * L + k] = (q + t * (mu2 if top else mu1)) * s
        out[2 * L + k] = (q + t * (far if top else mu2)) * s
        # x1 = -gy u + gx z (eigenvalue mu1), x2 = gx u + gy z (mu2)
        x10, x11, x12 = u0 * -gy + z0 * gx, u1 * -gy + z1 * gx, u2 * -gy + z2 * gx
        x20, x21, x22 = u0 * gx + z0 * gy, u1 * gx + z1 * gy, u2 * gx + z2 * gy
        out[3 * L + k], out[4 * L + k], out[5 * L + k] = (
            (x10 if top else v0),
            (x11 if top else v1),
            (x12 if top else v2),
        )
        out[6 * L + k], out[7 * L + k], out[8 * L + k] = (
            (x20 if top else x10),
            (x21 if top else x11),
            (x22 if top else x12),
        )
        out[9 * L + k], out[10 * L + k], out[11 * L + k] = (
            (v0 if top else x20),
            (v1 if top else x21),
            (v2 if top else x22),
        )


@jit
def gauge_lanes(ob, m, tol, near):
    """:func:`gauge_row`'s decisions for the 3 eigenvectors of ``m`` lanes at once, branch
    free: ``ob`` (9 L,) holds entry ``i`` of vector ``j`` at row ``3 j + i``, in the output
    dtype (so every comparison is made at the output's precision, as torch's)."""
    for j in range(3):
        for k in range(m):
            x0, x1, x2 = ob[(3 * j) * L + k], ob[(3 * j + 1) * L + k], ob[(3 * j + 2) * L + k]
            hi = max(x0, max(x1, x2))
            lo = min(x0, min(x1, x2))
            peak = max(hi, -lo)
            tie = abs(hi + lo) <= tol * peak and peak > 0
            bound = peak * near
            first = (x0 < 0) if abs(x0) >= bound else ((x1 < 0) if abs(x1) >= bound else x2 < 0)
            neg = first if tie else not (hi >= -lo)
            ob[(3 * j) * L + k] = -x0 if neg else x0
            ob[(3 * j + 1) * L + k] = -x1 if neg else x1
            ob[(3 * j + 2) * L + k] = -x2 if neg else x2


@jit
def sym3(a, w, vt, gauge=None):
    """``a`` (B, 3, 3) -> ``w`` (B, 3), ``vt`` (B, 3, 3) (rows: eigenvectors) or empty.

    ``gauge``: ``None``, or ``(tol, 1 - tol)`` as a length-2 array of the output dtype to
    put each eigenvector in the core's gauge (see :func:`gauge_lanes`)."""
    vectors = vt.shape[0] > 0
    x = np.empty(6 * L)
    out = np.empty(12 * L)
    ob = np.empty(9 * L, dtype=vt.dtype)
    for start in range(0, a.shape[0], L):
        m = min(L, a.shape[0] - start)
        for k in range(m):
            g = a[start + k]
            x[0 * L + k], x[1 * L + k], x[2 * L + k] = g[0, 0], g[1, 1], g[2, 2]
            x[3 * L + k], x[4 * L + k], x[5 * L + k] = g[1, 0], g[2, 0], g[2, 1]
        lanes3(x, out, m)
        for k in range(m):
            for i in range(3):
                w[start + k, i] = out[i * L + k]
        if vectors:
            for r in range(9):
                for k in range(m):
                    ob[r * L + k] = out[(3 + r) * L + k]  # rounded to the output dtype
            if gauge is not None:
                gauge_lanes(ob, m, gauge[0], gauge[1])
            for k in range(m):
                for j in range(3):
                    for i in range(3):
                        vt[start + k, j, i] = ob[(3 * j + i) * L + k]
