"""Eigenpairs of real symmetric tridiagonal matrices, eight at a time (numba): implicit
QL for the eigenvalues, a twisted factorization per eigenvalue for its vector; and
:func:`solve_blocks`, the ``twisted`` strategy's whole solve around it (LAPACK's reduction
to tridiagonal form and back, called without the GIL).

The eigenvalues come from implicit QL, one lane per matrix (:func:`_ql_values`: O(n^2) per
matrix). For each eigenvalue ``lam``, the vector is the solution of
``(T - lam I) z = gamma_r e_r`` read off the two triangular factorizations
``T - lam I = L+ D+ L+^T = U- D- U-^T`` (the "twisted factorization" of Dhillon and
Parlett's MRRR, without its relatively robust representations): ``r`` minimizes
``|gamma_i| = |D+_i + D-_i - (d_i - lam)|``, ``z_r = 1`` and the products of the factors'
ratios give the rest. That is O(n) per vector, O(n^2) per matrix, where LAPACK's divide and
conquer spends most of its time; the loops run over a matrix's eigenvalues (SIMD), the
recurrences over the rows (:func:`_twist`).

Without the representation tree, a vector errs by ``err / gap`` along its neighbours,
``err`` the eigenvalue's error: one Rayleigh quotient step makes ``err`` second order, and
a Loewdin correction of pairs closer than ``NEAR * ||T||`` makes close vectors orthogonal
(:func:`_vectors`). A matrix is flagged for LAPACK's divide and conquer when two of its
eigenvalues are within ``GAP * ||T||`` (degenerate or nearly so), a residual
``|T z - lam z|`` exceeds ``RESIDUAL * n * eps * ||T||``, or its QL did not converge.
Arithmetic is float64 whatever the caller's precision; for float32 and complex64 input the
vectors skip the Rayleigh step and the Loewdin correction: the accuracy they buy is below
single precision's rounding (``single`` in :func:`_vectors`).

>>> import numpy as np
>>> d = np.array([[2.0, 2.0, 2.0]]); e = np.array([[-1.0, -1.0, 0.0]])
>>> w = np.empty((1, 3)); z = np.empty((1, 3, 3))
>>> tridiagonal_eigh(d, e, w, z).tolist()
[False]
>>> np.round(w, 12).tolist()
[[0.585786437627, 2.0, 3.414213562373]]
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

#: matrices per block: 8 lanes keep a block's O(n) vectors in L1 (64 lanes ran the whole
#: kernel 2.4x slower at n = 64: the lane-wide QL iterates as long as its slowest lane)
W = 8
#: relative eigenvalue gap below which a lane goes to the divide and conquer: vectors of
#: the twisted factorization err by ~ eps ||T|| / gap in each other's directions, and the
#: Loewdin correction below removes that to second order, (eps / GAP)^2 ~ 5e-18 here
GAP = 1e-7
#: pairs of eigenvalues closer than ``NEAR * ||T||`` get the Loewdin correction
#: ``z_k -= (z_k . z_j) z_j / 2`` (both ways); farther pairs are orthogonal to ~eps/NEAR
NEAR = 0.05
#: residual ``max |T z - lam z|`` allowed, in units of ``n * eps * ||T||``
RESIDUAL = 4.0
#: the pivot a zero ``D+_i`` or ``D-_i`` is replaced by (lanes are scaled to ``||T|| ~ 1``)
PIVMIN = 1e-290
MAX_ITER = 60

jit = numba.njit(nogil=True, cache=True, error_model="numpy")


def _c_call(name: str, *arguments: types.Type) -> Any:
    """A numba intrinsic ``call(address, (args...))``: the C function at ``address`` (an
    integer: LAPACKE's and the compiled helper's entries, looked up at run time) called
    with ``args`` converted to ``arguments`` (``int32`` its return). The kernel thus holds
    no address of this process and its compiled code is cached on disk; an address is
    an integer argument, unboxed in a few hundred nanoseconds (numba's first-class
    function arguments took ~20 us a call to unbox, five of them)."""

    def call(typingctx: Any, address: Any, args: Any) -> Any:
        if not isinstance(address, types.Integer) or not isinstance(
            args, (types.Tuple, types.UniTuple)
        ):
            return None
        if len(args) != len(arguments):
            raise TypeError(f"{name} takes {len(arguments)} arguments, got {len(args)}")
        members = args.types  # their numba types

        def codegen(context: Any, builder: Any, signature: Any, values: Any) -> Any:
            c_type = ir.FunctionType(ir.IntType(32), [context.get_value_type(t) for t in arguments])
            pointer = builder.inttoptr(values[0], c_type.as_pointer())
            given = [builder.extract_value(values[1], i) for i in range(len(arguments))]
            converted = [
                context.cast(builder, v, t, want)
                for v, t, want in zip(given, members, arguments, strict=True)
            ]
            return builder.call(pointer, converted)

        return types.int32(address, args), codegen

    call.__name__ = name
    return intrinsic(call)


_I32, _I8, _P = types.int32, types.int8, types.uint64  # pointers as addresses
#: LAPACKE's ``?sytrd_work``/``?hetrd_work``: (layout, uplo, n, a, lda, d, e, tau, work, lwork)
_sytrd = _c_call("sytrd", _I32, _I8, _I32, _P, _I32, _P, _P, _P, _P, _I32)
#: ``?ormtr_work``/``?unmtr_work``: (layout, side, uplo, trans, m, n, a, lda, tau, c, ldc,
#: work, lwork)
_ormtr = _c_call("ormtr", _I32, _I8, _I8, _I8, _I32, _I32, _P, _I32, _P, _P, _I32, _P, _I32)
#: ``dstedc_work``: (layout, compz, n, d, e, z, ldz, work, lwork, iwork, liwork)
_stedc = _c_call("stedc", _I32, _I8, _I32, _P, _P, _P, _I32, _P, _I32, _P, _I32)
#: the helper's eight-lane reduction: (n, m, a, ws, h, tau, d, e)
_lanes = _c_call("lanes", _I32, _I32, _P, _P, _P, _P, _P, _P)
#: its back-transformation: (n, m, h, tau, z, ws)
_lanes_mtr = _c_call("lanes_mtr", _I32, _I32, _P, _P, _P, _P)
_I64, _F64 = types.int64, types.float64
#: the helper's per-matrix test (``api_hermitian``): (kind, a, n, s0, s1, finite), 1 if
#: exactly Hermitian (and finite)
_hermitian = _c_call("hermitian", _I32, _P, _I64, _I64, _I64, _I32)
#: its gauge (``api_gauge``): (kind, v, n, columns, tol, keep, keep2, low, high), 1 if gauged
_gauge = _c_call("gauge", _I32, _P, _I64, _I64, _F64, _F64, _F64, _F64, _F64)
#: :func:`solve_blocks`' step for a block its fused pass declines
DECLINED = 4


@jit
def _load(d, e, start, m, n, dl, el, eq, scale):
    """Lanes ``start .. start+m`` of ``(d, e)`` scaled by their largest entry into ``dl``,
    ``el`` (``el[i]``: entry ``(i, i+1)``, ``el[n-1] = 0``) and ``eq`` (QL's layout:
    ``eq[i]`` is entry ``(i-1, i)``); padding lanes are zero matrices."""
    for lane in range(W):
        scale[lane] = 1.0
    for lane in range(m):
        peak = 0.0
        for i in range(n):
            peak = max(peak, abs(d[start + lane, i]))
        for i in range(n - 1):
            peak = max(peak, abs(e[start + lane, i]))
        scale[lane] = peak if peak > 0.0 else 1.0
    dl[:] = 0.0
    el[:] = 0.0
    eq[:] = 0.0
    for i in range(n):
        for lane in range(m):
            dl[i * W + lane] = d[start + lane, i] / scale[lane]
    for i in range(n - 1):
        for lane in range(m):
            x = e[start + lane, i] / scale[lane]
            el[i * W + lane] = x
            eq[(i + 1) * W + lane] = x


@numba.njit(nogil=True, cache=True, error_model="numpy", inline="always")
def _ql_values(d, e, n, m, eps, st, flags):
    """Implicit QL (EISPACK's ``tql2`` without vectors) on every lane's ``(d, e)``; lanes
    that did not converge in ``MAX_ITER`` iterations are flagged. On entry ``e[i]`` is the
    entry between rows ``i - 1`` and ``i``; ``d`` ends with the (unsorted) eigenvalues.
    Only the first ``m`` lanes are worked on (a block's padding costs nothing).

    The masked formulation is ``_numba_tridiag_ql._tql2``'s, without its rotations. It is
    not shared: numba fixes a lane count at compile time, ``_tql2``'s 64 lanes ran this
    kernel 2.4x slower at ``n = 64`` (every lane iterates as long as the slowest), and a
    runtime count there would cost the 64-lane kernel its vectorized loops."""
    f, tst1, act = st[0], st[1], st[2]
    p, c, s, c2, c3, s2 = st[3], st[4], st[5], st[6], st[7], st[8]
    el1, dl1, h, mm = st[9], st[10], st[11], st[12]
    for i in range(1, n):
        for lane in range(m):
            e[(i - 1) * W + lane] = e[i * W + lane]
    for lane in range(m):
        e[(n - 1) * W + lane] = 0.0
        f[lane] = 0.0
        tst1[lane] = 0.0
    for ll in range(n):
        lo = ll * W
        for lane in range(m):
            tst1[lane] = max(tst1[lane], abs(d[lo + lane]) + abs(e[lo + lane]))
        for it in range(MAX_ITER + 1):
            anyact = False
            for lane in range(m):
                a = abs(e[lo + lane]) > eps * tst1[lane]
                act[lane] = 1.0 if a else 0.0
                anyact = anyact or a
            if not anyact:
                break
            if it == MAX_ITER:
                for lane in range(m):
                    flags[lane] = flags[lane] or act[lane] > 0.0
                break
            # each lane's split point m >= l: the first negligible e (e[n-1] = 0)
            for lane in range(m):
                mm[lane] = n - 1
            for i in range(n - 2, ll - 1, -1):
                for lane in range(m):
                    small = abs(e[i * W + lane]) <= eps * tst1[lane]
                    mm[lane] = i if small else mm[lane]
            top = ll + 1
            for lane in range(m):
                if act[lane] > 0.0 and mm[lane] > top:
                    top = int(mm[lane])
            l1 = (ll + 1) * W
            for lane in range(m):
                on = act[lane] > 0.0
                ev = e[lo + lane] if on else 1.0
                g = d[lo + lane]
                pp = (d[l1 + lane] - g) / (2.0 * ev)
                r = math.sqrt(pp * pp + 1.0)
                r = -r if pp < 0.0 else r
                new_dl = ev / (pp + r)
                new_dl1 = ev * (pp + r)
                d[lo + lane] = new_dl if on else d[lo + lane]
                d[l1 + lane] = new_dl1 if on else d[l1 + lane]
                dl1[lane] = d[l1 + lane]
                h[lane] = g - new_dl if on else 0.0
                f[lane] += h[lane]
                el1[lane] = e[l1 + lane] if ll + 1 < n else e[lo + lane]
            for i in range(ll + 2, n):
                for lane in range(m):
                    d[i * W + lane] -= h[lane]
            # the QL sweep from i = m - 1 down to l, lane by lane
            for i in range(top - 1, ll - 1, -1):
                i0, i1 = i * W, (i + 1) * W
                for lane in range(m):
                    start = i == mm[lane] - 1
                    part = act[lane] > 0.0 and i < mm[lane]
                    p0 = d[i1 + lane] if start else p[lane]
                    c0 = 1.0 if start else c[lane]
                    s0 = 0.0 if start else s[lane]
                    c20 = 1.0 if start else c2[lane]
                    eiv = e[i0 + lane]
                    g = c0 * eiv
                    hh = c0 * p0
                    r = math.sqrt(p0 * p0 + eiv * eiv)
                    sn = eiv / r
                    cn = p0 / r
                    e[i1 + lane] = s0 * r if part else e[i1 + lane]
                    d[i1 + lane] = hh + sn * (cn * g + sn * d[i0 + lane]) if part else d[i1 + lane]
                    p[lane] = cn * d[i0 + lane] - sn * g if part else p[lane]
                    c3[lane] = c20 if part else c3[lane]
                    c2[lane] = c0 if part else c2[lane]
                    s2[lane] = s0 if part else s2[lane]
                    c[lane] = cn if part else c[lane]
                    s[lane] = sn if part else s[lane]
            for lane in range(m):
                on = act[lane] > 0.0
                pv = -s[lane] * s2[lane] * c3[lane] * el1[lane] * e[lo + lane] / dl1[lane]
                e[lo + lane] = s[lane] * pv if on else e[lo + lane]
                d[lo + lane] = c[lane] * pv if on else d[lo + lane]
        for lane in range(m):
            d[lo + lane] += f[lane]
            e[lo + lane] = 0.0


@jit
def _twist(d, e, lam, n, Z, rp, rm, dp, dm, best, r, nrm):
    """For every eigenvalue ``lam[k]`` of one tridiagonal ``(d, e)``, the solution of
    ``(T - lam_k I) z = gamma_r e_r``, ``z_r = 1``, into column ``k`` of ``Z`` (``Z[i, k]``:
    entry ``i``; not normalized), ``best[k] = gamma_r`` and ``nrm[k] = |z|^2``. The loops
    over ``k`` are independent (SIMD); the recurrences run over ``i``."""
    for k in range(n):
        dp[k] = d[0] - lam[k]
    for i in range(1, n):
        b, di = e[i - 1], d[i]
        row = rp[i - 1]
        for k in range(n):
            prev = dp[k] if dp[k] != 0.0 else PIVMIN
            ratio = b / prev
            row[k] = ratio
            dp[k] = (di - lam[k]) - b * ratio
    # dp now holds D+_{n-1}; gamma_{n-1} = D+_{n-1}
    last = n - 1
    for k in range(n):
        best[k] = dp[k]
        r[k] = last
        dm[k] = d[last] - lam[k]
    # the backward factorization; the twist index of least |gamma_i| found on the way
    # (gamma_i = D+_i + D-_i - (d_i - lam) needs D+_i again: recomputed from the ratios)
    for i in range(n - 2, -1, -1):
        b, di = e[i], d[i]
        row = rm[i + 1]
        for k in range(n):
            nxt = dm[k] if dm[k] != 0.0 else PIVMIN
            ratio = b / nxt
            row[k] = ratio
            diag = di - lam[k]
            dmi = diag - b * ratio
            dm[k] = dmi
            # D+_i = diag - e_{i-1} * rp[i-1] (i > 0), diag at i = 0
            dpi = diag - e[i - 1] * rp[i - 1, k] if i > 0 else diag
            g = dpi + dmi - diag
            take = abs(g) < abs(best[k])
            best[k] = g if take else best[k]
            r[k] = i if take else r[k]
    for i in range(n):
        zi = Z[i]
        for k in range(n):
            zi[k] = 1.0 if r[k] == i else 0.0
    for i in range(n - 2, -1, -1):
        zi, zn, row = Z[i], Z[i + 1], rp[i]
        for k in range(n):
            x = -row[k] * zn[k]
            zi[k] = x if i < r[k] else zi[k]
    for i in range(1, n):
        zi, zp, row = Z[i], Z[i - 1], rm[i]
        for k in range(n):
            x = -row[k] * zp[k]
            zi[k] = x if i > r[k] else zi[k]
    for k in range(n):
        nrm[k] = 0.0
    for i in range(n):
        zi = Z[i]
        for k in range(n):
            nrm[k] += zi[k] * zi[k]


@jit
def _vectors(d, e, lam, n, norm, Z, rp, rm, t, r, single):
    """The unit eigenvectors of one scaled tridiagonal ``(d, e)`` (``e[n - 1] = 0``) for
    its ascending eigenvalues ``lam`` into the columns of ``Z`` (``Z[i, k]``). A twisted
    factorization at ``lam``, one Rayleigh quotient step ``lam + gamma_r / |z|^2`` (the
    eigenvalue's error leaks into the vector as ``err / gap`` along its neighbours, and
    becomes second order), the factorization again, then the Loewdin correction on pairs
    closer than ``NEAR * norm``. Returns the largest residual ``|T z - lam z|``.

    ``single`` (float32 and complex64 input): the first factorization only. Its vectors
    err by ``~eps ||T|| / gap`` (float64's eps; ``gap >= GAP ||T||``, closer pairs are
    flagged): ~1e-9 for a pair just above that gap, ~1e-12 at ``n = 64-128`` on random
    matrices, far below single precision's 6e-8; the refinement cost 40% of the kernel at
    ``n = 64-128``."""
    dp, dm, best, nrm, lam2, dot = t[0], t[1], t[2], t[3], t[4], t[5]
    _twist(d, e, lam, n, Z, rp, rm, dp, dm, best, r, nrm)
    if not single:
        for k in range(n):
            step = best[k] / nrm[k] if nrm[k] > 0.0 else 0.0
            lam2[k] = lam[k] + step if step == step else lam[k]
        _twist(d, e, lam2, n, Z, rp, rm, dp, dm, best, r, nrm)
    for k in range(n):
        nrm[k] = 1.0 / math.sqrt(nrm[k]) if nrm[k] > 0.0 else 0.0
    for i in range(n):
        zi = Z[i]
        for k in range(n):
            zi[k] *= nrm[k]
    # residual |T z - lam z| at the input eigenvalues
    for k in range(n):
        best[k] = 0.0
    for i in range(n):
        zi = Z[i]
        left = e[i - 1] if i > 0 else 0.0
        right = e[i] if i < n - 1 else 0.0
        zl = Z[i - 1] if i > 0 else Z[i]
        zr = Z[i + 1] if i < n - 1 else Z[i]
        for k in range(n):
            x = (d[i] - lam[k]) * zi[k] + left * zl[k] + right * zr[k]
            x = abs(x)
            best[k] = x if x > best[k] or x != x else best[k]
    worst = 0.0
    for k in range(n):
        worst = best[k] if best[k] > worst or best[k] != best[k] else worst
    if single:
        return worst
    # the Loewdin correction on close pairs (k, k + s), one offset s at a time
    near = NEAR * norm
    for s in range(1, n):
        m = n - s
        anyclose = False
        for k in range(m):
            close = lam[k + s] - lam[k] < near
            lam2[k] = 1.0 if close else 0.0
            anyclose = anyclose or close
        if not anyclose:
            break  # ascending: larger offsets are farther apart
        for k in range(m):
            dot[k] = 0.0
        for i in range(n):
            zi = Z[i]
            for k in range(m):
                dot[k] += zi[k] * zi[k + s]
        for k in range(m):
            dot[k] = 0.5 * dot[k] * lam2[k]
        for i in range(n):
            zi = Z[i]
            for k in range(m):
                nrm[k] = zi[k]  # the old z_k, row i
            for k in range(m):
                zi[k] -= dot[k] * zi[k + s]
            for k in range(m):
                zi[k + s] -= dot[k] * nrm[k]
    return worst


@jit
def _transpose_into(Z, out, n):
    """``out[k, i] = Z[i, k]`` in 8 x 8 tiles (a column-by-column copy touched a new cache
    line per entry)."""
    for i0 in range(0, n, 8):
        i1 = min(i0 + 8, n)
        for k0 in range(0, n, 8):
            k1 = min(k0 + 8, n)
            for k in range(k0, k1):
                row = out[k]
                for i in range(i0, i1):
                    row[i] = Z[i, k]


@jit
def tridiagonal_eigh(d, e, w, z, single=False):
    """Eigenpairs of the ``B`` symmetric tridiagonal matrices ``(d[b], e[b])`` (float64;
    ``e[b, i]`` is entry ``(i, i + 1)``, ``e[b, n - 1]`` unused) into ``w`` (``(B, n)``,
    ascending) and ``z`` (``(B, n, n)``, ``z[b, k]`` the k-th unit eigenvector; an empty
    ``z``: eigenvalues only; ``single``: vectors accurate to single precision, see
    :func:`_vectors`). Returns a bool array: the matrices to solve again by a robust
    method (see the module)."""
    n = d.shape[1]
    failed = np.zeros(d.shape[0], dtype=np.bool_)
    scratch, r = np.empty(scratch_size(n)), np.empty(n, np.int32)
    _tridiagonal_into(d, e, w, z, failed, scratch, r, single)
    return failed


@jit
def scratch_size(n):
    """Float64 entries of the scratch :func:`solve_blocks` takes for ``n x n`` matrices
    (:func:`_tridiagonal_into`'s, its own, ``dstedc``'s): one buffer per thread, reused, since
    the n x n arrays of a fresh allocation per block, mapped and unmapped by the
    allocator from 128 KiB on, kept two threads from running in parallel."""
    return _tridiagonal_scratch(n) + 2 * n * n + 3 * n * W + 6 * n + 1


@jit
def _tridiagonal_scratch(n):
    """Float64 entries :func:`_tridiagonal_into` takes from the front of its scratch."""
    return 3 * n * n + 4 * n * W + 9 * n + 14 * W


@jit
def _tridiagonal_into(d, e, w, z, failed, ws, r, single):
    """:func:`tridiagonal_eigh` into ``failed`` with the scratch ``ws`` (float64, at least
    :func:`scratch_size` entries) and ``r`` (int32, ``n`` entries); ``single``: vectors for
    single precision (see :func:`_vectors`)."""
    bsz, n = d.shape[0], d.shape[1]
    if n == 0:
        return
    vectors = z.shape[0] > 0
    eps = np.finfo(np.float64).eps
    o = 0
    dl, el = ws[o : o + n * W], ws[o + n * W : o + 2 * n * W]
    eq, dq = ws[o + 2 * n * W : o + 3 * n * W], ws[o + 3 * n * W : o + 4 * n * W]
    o += 4 * n * W
    rp = ws[o : o + n * n].reshape(n, n)
    rm = ws[o + n * n : o + 2 * n * n].reshape(n, n)
    Z = ws[o + 2 * n * n : o + 3 * n * n].reshape(n, n)
    o += 3 * n * n
    t = ws[o : o + 6 * n].reshape(6, n)
    o += 6 * n
    dv, ev, lv = ws[o : o + n], ws[o + n : o + 2 * n], ws[o + 2 * n : o + 3 * n]
    o += 3 * n
    scale = ws[o : o + W]
    st = ws[o + W : o + 14 * W].reshape(13, W)
    ev[:] = 0.0
    flags = np.zeros(W, dtype=np.bool_)
    for start in range(0, bsz, W):
        m = min(W, bsz - start)
        _load(d, e, start, m, n, dl, el, eq, scale)
        dq[:] = dl
        flags[:] = False
        if n > 1 and m == W:  # (inlined twice: the full block's loops have a constant trip)
            _ql_values(dq, eq, n, W, eps, st, flags)
        elif n > 1:
            _ql_values(dq, eq, n, m, eps, st, flags)
        for lane in range(m):
            b = start + lane
            failed[b] = flags[lane]
            norm = 0.0  # ||T||_1 of the scaled tridiagonal
            for i in range(n):
                dv[i] = dl[i * W + lane]
                ev[i] = el[i * W + lane]
                lv[i] = dq[i * W + lane]
            for i in range(n):
                row = abs(dv[i]) + abs(ev[i]) + (abs(ev[i - 1]) if i > 0 else 0.0)
                norm = max(norm, row)
            lv.sort()
            for k in range(n):
                w[b, k] = lv[k] * scale[lane]
            if not vectors:
                continue
            for k in range(n - 1):
                if lv[k + 1] - lv[k] <= GAP * norm:
                    failed[b] = True
            if failed[b]:
                continue
            res = _vectors(dv, ev, lv, n, norm, Z, rp, rm, t, r, single)
            if not res <= RESIDUAL * n * eps * norm:  # NaN too
                failed[b] = True
            _transpose_into(Z, z[b], n)
    return


@jit
def solve_blocks(a, w, vt, calls, gauge, h, tau, tri, work, lanes_ws, mtr_ws, ws, iwork):
    """Every real symmetric or complex Hermitian ``a[b]`` (C-ordered, its lower triangle
    read) solved into ``w`` (``(B, n)``, ascending) and ``vt`` (``(B, n, n)`` with ``vt[b, k]``
    the k-th eigenvector, i.e. the column-major eigenvector matrix; empty: eigenvalues
    only), ``W`` matrices at a time, without the GIL: LAPACK's ``?sytrd``/``?hetrd`` on the
    conjugated C-ordered copy ('U': the Hermitian matrix of ``a``'s lower triangle, in
    column-major order), :func:`tridiagonal_eigh` on its real tridiagonal, ``dstedc`` for
    the lanes it flags, then ``?ormtr``/``?unmtr``. ``h``, ``tau`` (``(W, n, n)``,
    ``(W, n)`` of ``a``'s dtype), ``tri`` (``(2, W, n)`` of its real dtype: the
    tridiagonals' diagonals and off-diagonals), ``work`` (``?sytrd``/``?ormtr``'s, of
    ``a``'s dtype), ``ws`` (float64, :func:`scratch_size` entries) and ``iwork`` (int32,
    ``3 + 6n``) are the caller's.

    ``calls`` holds the C functions it calls, as addresses (integers, see :func:`_c_call`),
    and the switches of its fused pass: ``(sytrd, ormtr, stedc, reduce, back, hermitian,
    gauge, kind, check, fix)``.

    - ``sytrd``, ``ormtr``, ``stedc``: LAPACKE ``_work`` entries (column-major layout; the
      first two of ``a``'s dtype, ``dstedc``).
    - ``reduce``, ``back``: the compiled eight-lane reduction and back-transformation
      (``_native_lanes.c``: a whole block in one call each), used instead of ``sytrd`` and
      ``ormtr`` where their scratch (``lanes_ws``, ``mtr_ws``, of ``a``'s dtype) is not
      empty.
    - ``hermitian``, ``gauge``: the compiled helper's per-matrix exact-Hermitian test and
      block gauge (``api_hermitian``, ``api_gauge``) for its dtype code ``kind``, run where
      ``check`` and ``fix`` are 1: each block of ``W`` matrices tested (exactly Hermitian,
      finite) just before its reduction; its eigenvalues tested finite and its
      eigenvectors put in the core's gauge (the ``gauge`` argument: ``tol, keep, keep2,
      low, high``) just after its back-transformation, while both are in cache: the
      executor's fused pass. Where either declines, it stops there: ``(DECLINED, b, 0)``.

    Returns ``(0, -1, 0)``, or ``(step, b, info)`` for the first LAPACK call that failed:
    ``step`` 1 the reduction, 2 ``dstedc``, 3 the back-transformation, at batch position
    ``b``."""
    bsz, n = a.shape[0], a.shape[1]
    vectors = vt.shape[0] > 0
    sytrd, ormtr, stedc, reduce, back, hermitian, fix_gauge, kind, check, fix = calls
    tol, keep, keep2, low, high = gauge
    dt, et = tri[0], tri[1]
    col, upper, left, notrans, compz = (
        np.int32(102),
        np.int8(85),
        np.int8(76),
        np.int8(78),
        np.int8(73),
    )
    nn, lw = np.int32(n), np.int32(work.size)
    single = dt.itemsize == 4  # float32, complex64: vectors to single precision
    o = _tridiagonal_scratch(n)  # past _tridiagonal_into's part
    d = ws[o : o + n * W].reshape(W, n)
    e = ws[o + n * W : o + 2 * n * W].reshape(W, n)
    wd = ws[o + 2 * n * W : o + 3 * n * W].reshape(W, n)
    o += 3 * n * W
    zd = ws[o : o + n * n].reshape(n, n)
    dd, ed = ws[o + n * n : o + n * n + n], ws[o + n * n + n : o + n * n + 2 * n]
    dwork = ws[o + n * n + 2 * n : o + 2 * n * n + 6 * n + 1]  # dstedc's: 1 + 4n + n^2
    liwork = 3 + 5 * n
    wi = iwork[liwork : liwork + n]
    e[:] = 0.0
    failed = np.zeros(W, dtype=np.bool_)
    for start in range(0, bsz, W):
        m = min(W, bsz - start)
        if check:
            for j in range(m):
                if not _hermitian(hermitian, (kind, a[start + j].ctypes.data, n, n, 1, 1)):
                    return DECLINED, start + j, 0
        if lanes_ws.size > 0:
            info = _lanes(
                reduce,
                (
                    nn,
                    np.int32(m),
                    a[start].ctypes.data,
                    lanes_ws.ctypes.data,
                    h.ctypes.data,
                    tau.ctypes.data,
                    dt.ctypes.data,
                    et.ctypes.data,
                ),
            )
            if info != 0:
                return 1, start, info
        for j in range(m):
            if lanes_ws.size == 0:
                h[j] = np.conj(a[start + j])  # real: a copy
                info = _sytrd(
                    sytrd,
                    (
                        col,
                        upper,
                        nn,
                        h[j].ctypes.data,
                        nn,
                        dt[j].ctypes.data,
                        et[j].ctypes.data,
                        tau[j].ctypes.data,
                        work.ctypes.data,
                        lw,
                    ),
                )
                if info != 0:
                    return 1, start + j, info
            for i in range(n):
                d[j, i] = dt[j, i]
            for i in range(n - 1):
                e[j, i] = et[j, i]
        z = vt[start : start + m] if vectors else vt
        failed[:] = False
        _tridiagonal_into(d[:m], e[:m], wd[:m], z, failed[:m], ws, wi, single)
        for j in range(m):
            if failed[j]:
                dd[:] = d[j]
                ed[:] = e[j]
                info = _stedc(
                    stedc,
                    (
                        col,
                        compz,
                        nn,
                        dd.ctypes.data,
                        ed.ctypes.data,
                        zd.ctypes.data,
                        nn,
                        dwork.ctypes.data,
                        np.int32(dwork.size),
                        iwork.ctypes.data,
                        np.int32(liwork),
                    ),
                )
                if info != 0:
                    return 2, start + j, info
                wd[j] = dd
                if vectors:
                    out = vt[start + j]
                    for k in range(n):
                        for i in range(n):
                            out[k, i] = zd[k, i]
            for k in range(n):
                w[start + j, k] = wd[j, k]
            if vectors and mtr_ws.size == 0:
                info = _ormtr(
                    ormtr,
                    (
                        col,
                        left,
                        upper,
                        notrans,
                        nn,
                        nn,
                        h[j].ctypes.data,
                        nn,
                        tau[j].ctypes.data,
                        vt[start + j].ctypes.data,
                        nn,
                        work.ctypes.data,
                        lw,
                    ),
                )
                if info != 0:
                    return 3, start + j, info
        if vectors and mtr_ws.size > 0:
            info = _lanes_mtr(
                back,
                (
                    nn,
                    np.int32(m),
                    h.ctypes.data,
                    tau.ctypes.data,
                    vt[start].ctypes.data,
                    mtr_ws.ctypes.data,
                ),
            )
            if info != 0:
                return 3, start, info
        if fix:
            for j in range(m):
                for k in range(n):
                    if not np.isfinite(w[start + j, k]):
                        return DECLINED, start + j, 0
            if vectors and not _gauge(
                fix_gauge,
                (kind, vt[start].ctypes.data, n, m * n, tol, keep, keep2, low, high),
            ):
                return DECLINED, start, 0
    return 0, -1, 0
