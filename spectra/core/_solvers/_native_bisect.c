/* Eigenvalues il..iu of a symmetric tridiagonal matrix by bisection, the wanted values
 * bisected side by side, with what LAPACK's ?stein needs to find their vectors.
 *
 * LAPACK's ?stebz (the bisection inside ?syevr with an index range) bisects one interval
 * at a time: each step of the Sturm count waits for the division of the step before, so
 * it runs at the division's latency. Here the wanted values are lanes of one loop: at
 * every row of the Sturm recurrence all lanes divide at once (independent chains, at the
 * division's throughput), until every lane's interval is within ?stebz's tolerance.
 *
 * The split test, the recurrence, the pivot guard, the Gershgorin interval, its widening
 * and the stopping tolerance are ?stebz's with ABSTOL <= 0 (ulp * ||T||, relative 2 ulp,
 * pivmin), so each value lies within ?stebz's tolerance of its own (not bit for bit).
 * Where the matrix splits (negligible off-diagonal entries, frequent in the Laplacians of
 * graphs with leaves) one Sturm count runs over all blocks (a zero coupling restarts the
 * recurrence exactly as a block's first row), and each value is assigned the block it
 * lies in, as ?stebz's IBLOCK (ISPLIT: each block's last row, 1-based). The values come
 * out in ?stein's order: by block, ascending within each.
 *
 * Returns the number of blocks (>= 1), or -2 (not finite, or indices out of range),
 * -3 (no memory), -4 (a value whose block it could not tell), -5 (a matrix ?syevr would
 * scale): the caller then runs ?syevr. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "_native_eigh.h"

/* built for AVX2 as well as the baseline where GCC can (as in _native_eigh.c) */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define SPECTRA_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SPECTRA_CLONES
#endif

/* lanes bisected together: four vectors of doubles, two of floats (the wanted values are
 * taken in groups of this many) */
#define LANES 16
/* per lane, the blocks with a value in its final interval noted (more: not served) */
#define EVENTS 8
/* ?stebz's widening of the Gershgorin interval */
#define FUDGE 2.1

typedef double vd __attribute__((vector_size(32)));
typedef long long md __attribute__((vector_size(32)));
typedef float vs __attribute__((vector_size(32)));
typedef int ms __attribute__((vector_size(32)));

/* One row of the Sturm recurrence for the lanes of one vector: q = d - e2 / q - x, |q| <
 * pivmin taken as -pivmin, and the count of q <= 0 (a comparison is -1 where true). */
#define STURM_ROW(V, M, q, count, di, ei, x, piv)                                         \
    do {                                                                                  \
        V t_ = (di) - (ei) / (q) - (x);                                                   \
        M small_ = (t_ < (piv)) & (t_ > -(piv));                                          \
        (q) = (V)(((M) - (piv) & small_) | ((M)t_ & ~small_));                            \
        (count) -= (M)((q) <= 0);                                                         \
    } while (0)

/* ?stebz's Gershgorin interval of rows start..end-1 (e2s[start] = 0: the first row, or a
 * split), widened by FUDGE * (tnorm * ulp * rows + pivs * pivmin) into gl, gu; returns
 * tnorm, the larger magnitude of the interval before widening. The whole matrix is the
 * block 0..n-1 (?stebz widens it by 2 pivmin, each block of a split matrix by 1). */
#define DEFINE_INTERVAL(NAME, T)                                                          \
    static T NAME(const T *d, const T *e2s, ptrdiff_t start, ptrdiff_t end, T ulp,        \
                  T pivmin, T pivs, T *gl, T *gu) {                                       \
        T lo = d[start], hi = d[start];                                                   \
        for (ptrdiff_t j = start; j < end; j++) {                                         \
            T off = (T)sqrt((double)e2s[j]) + (j + 1 < end ? (T)sqrt((double)e2s[j + 1]) : 0); \
            lo = d[j] - off < lo ? d[j] - off : lo;                                       \
            hi = d[j] + off > hi ? d[j] + off : hi;                                       \
        }                                                                                 \
        const T tnorm = (T)fmax(fabs((double)lo), fabs((double)hi));                      \
        *gl = lo - (T)FUDGE * tnorm * ulp * (T)(end - start) - (T)FUDGE * pivs * pivmin;  \
        *gu = hi + (T)FUDGE * tnorm * ulp * (T)(end - start) + (T)FUDGE * pivs * pivmin;  \
        return tnorm;                                                                     \
    }
DEFINE_INTERVAL(interval_s, float)
DEFINE_INTERVAL(interval_d, double)

/* The q-th value in (lo, hi] of the block of rows start..end-1 (of a split matrix), to
 * the block's own tolerance, as ?stebz bisects each block: a 1 x 1 block's value is its
 * diagonal entry, exactly; a larger one is bisected on from the global interval, which
 * is already within the block's tolerance unless its norm is well below the matrix's. */
#define DEFINE_REFINE(NAME, INTERVAL, T)                                                  \
    static ptrdiff_t NAME##_count(const T *d, const T *e2s, ptrdiff_t start, ptrdiff_t end, \
                                  T x, T pivmin) {                                        \
        ptrdiff_t c = 0;                                                                  \
        T q = 1; /* (e2s[start] = 0: the recurrence starts afresh) */                     \
        for (ptrdiff_t i = start; i < end; i++) {                                         \
            T t = d[i] - e2s[i] / q - x;                                                  \
            q = t < pivmin && t > -pivmin ? -pivmin : t;                                  \
            c += q <= 0;                                                                  \
        }                                                                                 \
        return c;                                                                         \
    }                                                                                     \
    static T NAME(const T *d, const T *e2s, ptrdiff_t start, ptrdiff_t end, T lo, T hi,   \
                  ptrdiff_t q, T pivmin, T ulp, int itmax) {                              \
        if (end - start == 1) return d[start];                                            \
        T gl, gu;                                                                         \
        const T tnorm = INTERVAL(d, e2s, start, end, ulp, pivmin, 1, &gl, &gu);           \
        const T atol = ulp * tnorm > pivmin ? ulp * tnorm : pivmin, rtol = 2 * ulp;       \
        const ptrdiff_t target = NAME##_count(d, e2s, start, end, lo, pivmin) + q;        \
        T a = lo > gl ? lo : gl, b = hi < gu ? hi : gu;                                   \
        for (int it = 0; it < itmax; it++) {                                              \
            T mag = (T)fmax(fabs((double)a), fabs((double)b));                            \
            if (!(b - a >= (rtol * mag > atol ? rtol * mag : atol))) break;               \
            T x = (T)0.5 * (a + b);                                                       \
            if (NAME##_count(d, e2s, start, end, x, pivmin) >= target) b = x;             \
            else a = x;                                                                   \
        }                                                                                 \
        return (T)0.5 * (a + b);                                                          \
    }
DEFINE_REFINE(refine_s, interval_s, float)
DEFINE_REFINE(refine_d, interval_d, double)

#define DEFINE_BISECT(NAME, REFINE, INTERVAL, T, V, M, EPS, TINY)                                           \
    SPECTRA_CLONES static ptrdiff_t NAME(ptrdiff_t n, const T *d, const T *e, ptrdiff_t il, \
                                         ptrdiff_t iu, T *w, int *iblock, int *isplit) {  \
        enum { L = (int)(sizeof(V) / sizeof(T)), NV = LANES / L };                        \
        const T ulp = (T)(EPS), safemn = (T)(TINY);                                       \
        T *e2s = malloc(sizeof(T) * (size_t)n); /* e2s[i]: coupling of rows i - 1, i */   \
        if (e2s == NULL) return -3;                                                       \
        int event_block[LANES][EVENTS], event_count[LANES][EVENTS], overflow = 0;         \
        T emax2 = 0;                                                                      \
        ptrdiff_t blocks = 0;                                                             \
        e2s[0] = 0;                                                                       \
        for (ptrdiff_t j = 1; j < n; j++) { /* ?stebz's split test */                     \
            T e2 = e[j - 1] * e[j - 1];                                                   \
            if ((T)fabs((double)(d[j] * d[j - 1])) * (ulp * ulp) + safemn > e2) {         \
                isplit[blocks++] = (int)j;                                                \
                e2 = 0;                                                                   \
            }                                                                             \
            e2s[j] = e2;                                                                  \
            emax2 = e2 > emax2 ? e2 : emax2;                                              \
        }                                                                                 \
        isplit[blocks++] = (int)n;                                                        \
        const T pivmin = safemn * (emax2 > 1 ? emax2 : 1);                                \
        T gl, gu;                                                                         \
        const T tnorm = INTERVAL(d, e2s, 0, n, ulp, pivmin, 2, &gl, &gu);                 \
        T zero = 0; /* NaN exactly where an entry is not finite (whatever the order) */   \
        for (ptrdiff_t j = 0; j < n; j++) zero += d[j] * 0 + (j + 1 < n ? e[j] * 0 : 0);  \
        if (zero != zero) {                                                               \
            free(e2s);                                                                    \
            return -2;                                                                    \
        }                                                                                 \
        if (!isfinite((double)gl) || !isfinite((double)gu)) { /* overflow: to scale */    \
            free(e2s);                                                                    \
            return -5;                                                                    \
        }                                                                                 \
        /* ?syevr scales a matrix whose largest entry is outside [rmin, rmax]: not served \
         * (the bound here is within a factor n of that entry) */                         \
        const double small = (double)safemn / (double)ulp;                                \
        const double rmin = sqrt(small), rmax = fmin(sqrt(1 / small), 1 / sqrt(sqrt((double)safemn))); \
        if ((double)tnorm < rmin || (double)tnorm > rmax / (double)n) {                   \
            free(e2s);                                                                    \
            return -5;                                                                    \
        }                                                                                 \
        const T atol = ulp * tnorm > pivmin ? ulp * tnorm : pivmin, rtol = 2 * ulp;       \
        const int itmax =                                                                 \
            (int)((log((double)(tnorm + pivmin)) - log((double)pivmin)) / log(2.0)) + 2;  \
        V piv;                                                                            \
        for (int k = 0; k < L; k++) piv[k] = pivmin;                                      \
        for (ptrdiff_t first = il; first <= iu; first += LANES) {                         \
            ptrdiff_t used = iu - first + 1 < LANES ? iu - first + 1 : LANES;             \
            V lo[NV], hi[NV], x[NV], q[NV];                                               \
            M want[NV], count[NV];                                                        \
            for (int v = 0; v < NV; v++)                                                  \
                for (int k = 0; k < L; k++) {                                             \
                    ptrdiff_t j = v * L + k;                                              \
                    lo[v][k] = gl;                                                        \
                    hi[v][k] = gu;                                                        \
                    want[v][k] = first + (j < used ? j : used - 1);                       \
                }                                                                         \
            for (int it = 0; it < itmax; it++) {                                          \
                int open = 0;                                                             \
                for (ptrdiff_t j = 0; j < used; j++) {                                    \
                    T a = lo[j / L][j % L], b = hi[j / L][j % L];                         \
                    T mag = (T)fmax(fabs((double)a), fabs((double)b));                    \
                    T tol = rtol * mag > atol ? rtol * mag : atol;                        \
                    open |= b - a >= tol;                                                 \
                }                                                                         \
                if (!open) break;                                                         \
                for (int v = 0; v < NV; v++) {                                            \
                    x[v] = (T)0.5 * (lo[v] + hi[v]);                                      \
                    q[v] = x[v] - x[v] + 1; /* the first row: e2s[0] = 0 */               \
                    count[v] = count[v] ^ count[v];                                       \
                }                                                                         \
                for (ptrdiff_t i = 0; i < n; i++) {                                       \
                    const T di = d[i], ei = e2s[i];                                       \
                    for (int v = 0; v < NV; v++) STURM_ROW(V, M, q[v], count[v], di, ei, x[v], piv); \
                }                                                                         \
                for (int v = 0; v < NV; v++) {                                            \
                    M up = count[v] >= want[v];                                           \
                    hi[v] = (V)(((M)x[v] & up) | ((M)hi[v] & ~up));                       \
                    lo[v] = (V)(((M)lo[v] & up) | ((M)x[v] & ~up));                       \
                }                                                                         \
            }                                                                             \
            /* the block of each value: the eigenvalues in (lo, hi] are the global      \
             * indices count(lo) + 1 .. count(hi), and the p-th of them is taken to be in  \
             * the block where the blocks' counts in (lo, hi], summed top to bottom,       \
             * reach p (equal values in several blocks: one to each, in block order). One  \
             * Sturm count at lo and at hi for every lane, noting per lane the blocks      \
             * whose counts differ (almost always one) */                                 \
            if (blocks == 1) {                                                            \
                for (ptrdiff_t j = 0; j < used; j++) iblock[first - il + j] = 1;          \
            } else {                                                                      \
                V ql[NV], qh[NV];                                                         \
                M at_lo[NV], at_hi[NV];                                                   \
                ptrdiff_t below[LANES] = {0}, seen[LANES] = {0}, b = 0;                   \
                for (int v = 0; v < NV; v++) {                                            \
                    ql[v] = qh[v] = lo[v] - lo[v] + 1;                                    \
                    at_lo[v] = at_hi[v] = want[v] ^ want[v];                              \
                }                                                                         \
                for (ptrdiff_t i = 0; i < n; i++) {                                       \
                    const T di = d[i], ei = e2s[i];                                       \
                    for (int v = 0; v < NV; v++) {                                        \
                        STURM_ROW(V, M, ql[v], at_lo[v], di, ei, lo[v], piv);             \
                        STURM_ROW(V, M, qh[v], at_hi[v], di, ei, hi[v], piv);             \
                    }                                                                     \
                    if (i + 1 == isplit[b]) { /* block b ends */                          \
                        for (ptrdiff_t j = 0; j < used; j++) {                            \
                            ptrdiff_t diff = at_hi[j / L][j % L] - at_lo[j / L][j % L];   \
                            if (diff > 0 && seen[j] == EVENTS) overflow = 1;              \
                            else if (diff > 0) {                                          \
                                event_block[j][seen[j]] = (int)b;                         \
                                event_count[j][seen[j]++] = (int)diff;                    \
                            }                                                             \
                            below[j] += at_lo[j / L][j % L];                              \
                        }                                                                 \
                        for (int v = 0; v < NV; v++) at_lo[v] = at_hi[v] = want[v] ^ want[v]; \
                        b++;                                                              \
                    }                                                                     \
                }                                                                         \
                for (ptrdiff_t j = 0; j < used; j++) {                                    \
                    ptrdiff_t p = want[j / L][j % L] - below[j], reach = 0, home = -1, q = 0; \
                    for (ptrdiff_t k = 0; k < seen[j] && home < 0; k++) {                 \
                        if (reach + event_count[j][k] >= p) {                             \
                            home = event_block[j][k];                                     \
                            q = p - reach;                                                \
                        }                                                                 \
                        reach += event_count[j][k];                                       \
                    }                                                                     \
                    if (home < 0) { /* (counts not monotone: not served) */               \
                        overflow = 1;                                                     \
                        continue;                                                         \
                    }                                                                     \
                    iblock[first - il + j] = (int)home + 1;                               \
                    ptrdiff_t start = home > 0 ? isplit[home - 1] : 0, end = isplit[home]; \
                    w[first - il + j] = REFINE(d, e2s, start, end, lo[j / L][j % L],      \
                                               hi[j / L][j % L], q, pivmin, ulp, itmax);  \
                }                                                                         \
            }                                                                             \
            if (blocks == 1)                                                              \
                for (ptrdiff_t j = 0; j < used; j++)                                      \
                    w[first - il + j] = (T)0.5 * (lo[j / L][j % L] + hi[j / L][j % L]);   \
        }                                                                                 \
        free(e2s);                                                                        \
        /* ?stein's order: by block, ascending within it */                               \
        for (ptrdiff_t j = 1; j <= iu - il; j++)                                          \
            for (ptrdiff_t k = j; k > 0 && (iblock[k] < iblock[k - 1] ||                  \
                                            (iblock[k] == iblock[k - 1] && w[k] < w[k - 1])); \
                 k--) {                                                                   \
                T s = w[k];                                                               \
                w[k] = w[k - 1];                                                          \
                w[k - 1] = s;                                                             \
                int t = iblock[k];                                                        \
                iblock[k] = iblock[k - 1];                                                \
                iblock[k - 1] = t;                                                        \
            }                                                                             \
        for (ptrdiff_t j = 0; j <= iu - il; j++)                                          \
            if (!isfinite((double)w[j])) return -2;                                       \
        return overflow ? -4 : blocks;                                                    \
    }

/* ulp and the safe minimum as LAPACK's ?lamch('P') and ?lamch('S') */
DEFINE_BISECT(bisect_s, refine_s, interval_s, float, vs, ms, 1.1920928955078125e-07, 1.1754943508222875e-38)
DEFINE_BISECT(bisect_d, refine_d, interval_d, double, vd, md, 2.220446049250313e-16, 2.2250738585072014e-308)

ptrdiff_t spectra_bisect(int single, ptrdiff_t n, const void *d, const void *e, ptrdiff_t il,
                         ptrdiff_t iu, void *w, int *iblock, int *isplit) {
    if (n < 1 || il < 1 || iu < il || iu > n) return -2;
    return single ? bisect_s(n, d, e, il, iu, w, iblock, isplit)
                  : bisect_d(n, d, e, il, iu, w, iblock, isplit);
}
