/* The reduction of eight real symmetric matrices at once to tridiagonal form, for the
 * `twisted` strategy's kernel (_kernels/_numba_twisted.py, which calls it through its
 * address, as it calls LAPACK).
 *
 * What it computes is LAPACK's ?sytd2 with UPLO = 'U' on the column-major view of each
 * C-ordered matrix (the Hermitian matrix of its lower triangle): Householder reflectors
 * H(k-1) that annihilate row k left of its subdiagonal, from the last row up, applied from
 * both sides to the leading k x k block (p = tau A v, w = p - (tau/2)(p.v) v,
 * A -= v w^T + w v^T). The reflectors are stored as ?sytrd stores them (column k of the
 * column-major view, rows 0..k-2; tau at k-1), so LAPACK's ?ormtr applies them back.
 *
 * Why: OpenBLAS's ?sytrd runs one ?symv and one ?syr2 per column, at n <= 192 on vectors
 * too short for its kernels (float32 n = 64: 57-66 us a matrix on the AMD EPYC VM, one
 * thread). Here the eight matrices are interleaved entry by entry (each entry's eight
 * lanes contiguous, lower triangle packed), so every loop runs over the lanes in SIMD
 * registers and the same instructions touch every lane: 26 us a matrix at n = 64.
 *
 * Arithmetic: each lane's operations are the same whatever its neighbours (padding lanes
 * are zero matrices), so a matrix's bits do not depend on its place in a batch. Each
 * matrix is first scaled by a power of two (exactly) to a largest entry in [0.5, 1); a
 * reflector's norm is computed from the column scaled by its largest entry; a column whose
 * norm is below tiny = (smallest normal) / eps, or zero, gets no reflector (tau = 0): its
 * entries are below the matrix's rounding. No fused multiply-add (setup.py's flags), so
 * the SIMD clones (target_clones) round as the generic code does. */
#include <math.h>
#include <float.h>
#include <string.h>

#include "_native_eigh.h"

#define W 8

#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__) && !defined(__clang__)
#define CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CLONES
#endif

/* The power of two that brings a matrix's largest entry (peak) into [0.5, 1), kept such
 * that it and its inverse are normal numbers of the working precision (max_exp: its
 * FLT_MAX_EXP or DBL_MAX_EXP): subnormal and huge entries come near 1, within range. */
static double power_of_two_scale(double peak, int max_exp) {
    int ex = 0;
    if (peak > 0.0 && peak <= DBL_MAX) frexp(peak, &ex);
    ex = ex < 3 - max_exp ? 3 - max_exp : ex > max_exp - 3 ? max_exp - 3 : ex;
    return ldexp(1.0, -ex);
}

#define SYTRD_LANES(NAME, real, SQRT, HYPOT, FABS, COPYSIGN, TINY, MAX_EXP)                        \
    CLONES static int NAME##_in(ptrdiff_t n, ptrdiff_t m, const real *restrict a, real *restrict X, \
                    real *restrict v, real *restrict p, real *restrict q,                          \
                    real *restrict h, real *restrict tau, real *restrict d,                        \
                    real *restrict e);                                                             \
    int NAME(int n, int m, const real *a, real *work, real *h, real *tau, real *d, real *e) {      \
        return NAME##_in((ptrdiff_t)n, (ptrdiff_t)m, a, work, work + (size_t)n * (n + 1) / 2 * W,  \
                         work + (size_t)n * (n + 1) / 2 * W + (size_t)n * W,                       \
                         work + (size_t)n * (n + 1) / 2 * W + 2 * (size_t)n * W, h, tau, d, e);    \
    }                                                                                              \
    CLONES static int NAME##_in(ptrdiff_t n, ptrdiff_t m, const real *restrict a, real *restrict X, \
                    real *restrict v, real *restrict p, real *restrict q,                          \
                    real *restrict h, real *restrict tau, real *restrict d,                        \
                    real *restrict e) {                                                            \
        const real tiny = TINY;                                                                    \
        real ev[W], dv[W], sc[W], xmax[W], ss[W], rr[W], tv[W], sv[W], kk[W], acc[W];              \
        if (n < 1 || m < 1 || m > W) return -1;                                                    \
        for (ptrdiff_t l = 0; l < W; l++) {                                                        \
            double peak = 0.0;                                                                     \
            for (ptrdiff_t i = 0; l < m && i < n; i++)                                             \
                for (ptrdiff_t j = 0; j <= i; j++) {                                               \
                    double x = FABS(a[(size_t)l * n * n + (size_t)i * n + j]);                     \
                    peak = x > peak ? x : peak;                                                    \
                }                                                                                  \
            sc[l] = (real)power_of_two_scale(peak, MAX_EXP);                                       \
        }                                                                                          \
        for (ptrdiff_t i = 0; i < n; i++) {                                                        \
            real *row = X + (size_t)i * (i + 1) / 2 * W;                                           \
            for (ptrdiff_t j = 0; j <= i; j++)                                                     \
                for (ptrdiff_t l = 0; l < W; l++)                                                  \
                    row[j * W + l] = l < m ? a[(size_t)l * n * n + (size_t)i * n + j] * sc[l]      \
                                           : (real)0;                                              \
        }                                                                                          \
        for (ptrdiff_t k = n - 1; k > 0; k--) {                                                    \
            real *rk = X + (size_t)k * (k + 1) / 2 * W;                                            \
            for (ptrdiff_t l = 0; l < W; l++) {                                                    \
                xmax[l] = 0;                                                                       \
                ss[l] = 0;                                                                         \
            }                                                                                      \
            for (ptrdiff_t i = 0; i < k - 1; i++)                                                  \
                for (ptrdiff_t l = 0; l < W; l++) {                                                \
                    real x = FABS(rk[i * W + l]);                                                  \
                    xmax[l] = x > xmax[l] ? x : xmax[l];                                           \
                }                                                                                  \
            for (ptrdiff_t l = 0; l < W; l++) rr[l] = xmax[l] > 0 ? 1 / xmax[l] : 0;               \
            for (ptrdiff_t i = 0; i < k - 1; i++)                                                  \
                for (ptrdiff_t l = 0; l < W; l++) {                                                \
                    real y = rk[i * W + l] * rr[l];                                                \
                    ss[l] += y * y;                                                                \
                }                                                                                  \
            for (ptrdiff_t l = 0; l < W; l++) {                                                    \
                real alpha = rk[(k - 1) * W + l];                                                  \
                real xn = xmax[l] * SQRT(ss[l]);                                                   \
                real nrm = HYPOT(alpha, xn);                                                       \
                int on = xn > 0 && nrm > tiny;                                                     \
                real beta = -COPYSIGN(nrm, alpha);                                                 \
                tv[l] = on ? (beta - alpha) / beta : 0;                                            \
                sv[l] = on ? 1 / (alpha - beta) : 0;                                               \
                ev[l] = (on ? beta : alpha) / sc[l];                                               \
                dv[l] = rk[k * W + l] / sc[l];                                                     \
            }                                                                                      \
            for (ptrdiff_t l = 0; l < m; l++) {                                                    \
                e[l * n + k - 1] = ev[l];                                                          \
                d[l * n + k] = dv[l];                                                              \
                tau[l * n + k - 1] = tv[l];                                                        \
            }                                                                                      \
            for (ptrdiff_t i = 0; i < k - 1; i++)                                                  \
                for (ptrdiff_t l = 0; l < W; l++) v[i * W + l] = rk[i * W + l] * sv[l];            \
            for (ptrdiff_t l = 0; l < W; l++) v[(k - 1) * W + l] = tv[l] != 0 ? 1 : 0;             \
            /* p = A v over the leading k x k block: row sums in acc, column sums in q */          \
            memset(q, 0, sizeof(real) * W * (size_t)k);                                            \
            for (ptrdiff_t i = 0; i < k; i++) {                                                    \
                const real *ri = X + (size_t)i * (i + 1) / 2 * W;                                  \
                for (ptrdiff_t l = 0; l < W; l++) acc[l] = 0;                                      \
                for (ptrdiff_t j = 0; j < i; j++)                                                  \
                    for (ptrdiff_t l = 0; l < W; l++) {                                            \
                        acc[l] += ri[j * W + l] * v[j * W + l];                                    \
                        q[j * W + l] += ri[j * W + l] * v[i * W + l];                              \
                    }                                                                              \
                for (ptrdiff_t l = 0; l < W; l++) p[i * W + l] = acc[l] + ri[i * W + l] * v[i * W + l]; \
            }                                                                                      \
            /* p = tau (A v), then w = p - (tau / 2)(p . v) v, in p */                             \
            for (ptrdiff_t l = 0; l < W; l++) kk[l] = 0;                                           \
            for (ptrdiff_t i = 0; i < k; i++)                                                      \
                for (ptrdiff_t l = 0; l < W; l++) {                                                \
                    real y = tv[l] * (p[i * W + l] + q[i * W + l]);                                \
                    p[i * W + l] = y;                                                              \
                    kk[l] += y * v[i * W + l];                                                     \
                }                                                                                  \
            for (ptrdiff_t l = 0; l < W; l++) kk[l] *= (real)-0.5 * tv[l];                         \
            for (ptrdiff_t i = 0; i < k; i++)                                                      \
                for (ptrdiff_t l = 0; l < W; l++) p[i * W + l] += kk[l] * v[i * W + l];            \
            for (ptrdiff_t i = 0; i < k; i++) {                                                    \
                real *ri = X + (size_t)i * (i + 1) / 2 * W;                                        \
                for (ptrdiff_t j = 0; j <= i; j++)                                                 \
                    for (ptrdiff_t l = 0; l < W; l++)                                              \
                        ri[j * W + l] -= v[i * W + l] * p[j * W + l] + p[i * W + l] * v[j * W + l]; \
            }                                                                                      \
            for (ptrdiff_t l = 0; l < m; l++)                                                      \
                for (ptrdiff_t i = 0; i < k - 1; i++)                                              \
                    h[(size_t)l * n * n + (size_t)k * n + i] = v[i * W + l];                       \
        }                                                                                          \
        for (ptrdiff_t l = 0; l < m; l++) d[l * n] = X[l] / sc[l];                                 \
        return 0;                                                                                  \
    }

SYTRD_LANES(spectra_sytrd_lanes_s, float, sqrtf, hypotf, fabsf, copysignf,
            FLT_MIN / FLT_EPSILON, FLT_MAX_EXP)
SYTRD_LANES(spectra_sytrd_lanes_d, double, sqrt, hypot, fabs, copysign,
            DBL_MIN / DBL_EPSILON, DBL_MAX_EXP)

/* The back-transformation of the same eight matrices' eigenvectors (?ormtr 'L', 'U', 'N'
 * with the reflectors above): z (m x n x n, z[l][k] the k-th eigenvector of matrix l, i.e.
 * its column-major eigenvector matrix) becomes Q z, Q = H(n-1) ... H(1), in place. The
 * reflectors are interleaved lane by lane once (packed, V), then the vectors in chunks of
 * K (Z: each chunk stays in cache while every reflector passes over it), and every
 * reflector is applied to all eight lanes at once: each lane's sums run in the order of
 * its entries, whatever its neighbours. */
#define K 8
#define ORMTR_LANES(NAME, real)                                                                    \
    CLONES static int NAME##_in(ptrdiff_t n, ptrdiff_t m, const real *restrict h,                  \
                                const real *restrict tau, real *restrict z,                        \
                                real *restrict Z, real *restrict V, real *restrict T) {            \
        real s[W];                                                                                 \
        if (n < 1 || m < 1 || m > W) return -1;                                                    \
        for (ptrdiff_t r = 1; r < n; r++) { /* H(r): its unit at entry r - 1 */                    \
            real *restrict vr = V + r * (r - 1) / 2 * W;                                           \
            for (ptrdiff_t l = 0; l < W; l++) T[r * W + l] = l < m ? tau[l * n + r - 1] : 0;       \
            for (ptrdiff_t i = 0; i < r - 1; i++)                                                  \
                for (ptrdiff_t l = 0; l < W; l++)                                                  \
                    vr[i * W + l] = l < m ? h[(l * n + r) * n + i] : (real)0;                      \
            for (ptrdiff_t l = 0; l < W; l++) vr[(r - 1) * W + l] = 1;                             \
        }                                                                                          \
        for (ptrdiff_t k0 = 0; k0 < n; k0 += K) {                                                  \
            ptrdiff_t kn = n - k0 < K ? n - k0 : K;                                                \
            for (ptrdiff_t k = 0; k < kn; k++)                                                     \
                for (ptrdiff_t i = 0; i < n; i++)                                                  \
                    for (ptrdiff_t l = 0; l < W; l++)                                              \
                        Z[(k * n + i) * W + l] = l < m ? z[(l * n + k0 + k) * n + i] : 0;          \
            for (ptrdiff_t r = 1; r < n; r++) {                                                    \
                const real *restrict vr = V + r * (r - 1) / 2 * W;                                 \
                const real *restrict t = T + r * W;                                                \
                for (ptrdiff_t k = 0; k < kn; k++) {                                               \
                    real *restrict zk = Z + k * n * W;                                             \
                    for (ptrdiff_t l = 0; l < W; l++) s[l] = 0;                                    \
                    for (ptrdiff_t i = 0; i < r; i++)                                              \
                        for (ptrdiff_t l = 0; l < W; l++) s[l] += vr[i * W + l] * zk[i * W + l];   \
                    for (ptrdiff_t l = 0; l < W; l++) s[l] *= t[l];                                \
                    for (ptrdiff_t i = 0; i < r; i++)                                              \
                        for (ptrdiff_t l = 0; l < W; l++) zk[i * W + l] -= s[l] * vr[i * W + l];   \
                }                                                                                  \
            }                                                                                      \
            for (ptrdiff_t l = 0; l < m; l++)                                                      \
                for (ptrdiff_t k = 0; k < kn; k++)                                                 \
                    for (ptrdiff_t i = 0; i < n; i++)                                              \
                        z[(l * n + k0 + k) * n + i] = Z[(k * n + i) * W + l];                      \
        }                                                                                          \
        return 0;                                                                                  \
    }                                                                                              \
    int NAME(int n, int m, const real *h, const real *tau, real *z, real *work) {                  \
        ptrdiff_t nn = n;                                                                          \
        return NAME##_in(nn, (ptrdiff_t)m, h, tau, z, work, work + K * nn * W,                     \
                         work + K * nn * W + nn * (nn - 1) / 2 * W);                               \
    }

ORMTR_LANES(spectra_ormtr_lanes_s, float)
ORMTR_LANES(spectra_ormtr_lanes_d, double)

/* The same for eight complex Hermitian matrices (?hetd2 'U' on the column-major view, whose
 * column k above the diagonal is the conjugate of row k of the C-ordered lower triangle):
 * real and imaginary parts in separate interleaved arrays; the reflector of row k makes
 * its subdiagonal entry real (beta), as ?larfg does, tau complex, H = I - tau v v^H;
 * h and tau complex (interleaved re, im) in ?hetrd's layout, d and e real. */
#define HETRD_LANES(NAME, real, SQRT, HYPOT, FABS, COPYSIGN, TINY, MAX_EXP)                        \
    CLONES static int NAME##_in(ptrdiff_t n, ptrdiff_t m, const real *restrict a,                  \
                                real *restrict Xr, real *restrict Xi, real *restrict vr,           \
                                real *restrict vi, real *restrict pr, real *restrict pi,           \
                                real *restrict qr, real *restrict qi, real *restrict h,            \
                                real *restrict tau, real *restrict d, real *restrict e) {          \
        const real tiny = TINY;                                                                    \
        real sc[W], xmax[W], ss[W], rr[W], tr[W], ti[W], sr[W], si[W], kr[W], ki[W];               \
        real ev[W], dv[W];                                                                   \
        if (n < 1 || m < 1 || m > W) return -1;                                                    \
        for (ptrdiff_t l = 0; l < W; l++) {                                                        \
            double peak = 0.0;                                                                     \
            for (ptrdiff_t i = 0; l < m && i < n; i++)                                             \
                for (ptrdiff_t j = 0; j <= i; j++) {                                               \
                    const real *x = a + 2 * ((l * n + i) * n + j);                                 \
                    double y = FABS(x[0]) > FABS(x[1]) ? FABS(x[0]) : FABS(x[1]);                  \
                    peak = y > peak ? y : peak;                                                    \
                }                                                                                  \
            sc[l] = (real)power_of_two_scale(peak, MAX_EXP);                                       \
        }                                                                                          \
        for (ptrdiff_t i = 0; i < n; i++) {                                                        \
            ptrdiff_t row = i * (i + 1) / 2 * W;                                                   \
            for (ptrdiff_t j = 0; j <= i; j++)                                                     \
                for (ptrdiff_t l = 0; l < W; l++) {                                                \
                    const real *x = a + 2 * ((l * n + i) * n + j);                                 \
                    Xr[row + j * W + l] = l < m ? x[0] * sc[l] : (real)0;                          \
                    Xi[row + j * W + l] = l < m && j < i ? x[1] * sc[l] : (real)0;                 \
                }                                                                                  \
        }                                                                                          \
        for (ptrdiff_t k = n - 1; k > 0; k--) {                                                    \
            /* the column: x_i = conj(L[k][i]), i < k; alpha = x_{k-1} */                          \
            const real *rkr = Xr + k * (k + 1) / 2 * W, *rki = Xi + k * (k + 1) / 2 * W;           \
            for (ptrdiff_t l = 0; l < W; l++) {                                                    \
                xmax[l] = 0;                                                                       \
                ss[l] = 0;                                                                         \
            }                                                                                      \
            for (ptrdiff_t i = 0; i < k - 1; i++)                                                  \
                for (ptrdiff_t l = 0; l < W; l++) {                                                \
                    real x = FABS(rkr[i * W + l]), y = FABS(rki[i * W + l]);                       \
                    x = x > y ? x : y;                                                             \
                    xmax[l] = x > xmax[l] ? x : xmax[l];                                           \
                }                                                                                  \
            for (ptrdiff_t l = 0; l < W; l++) rr[l] = xmax[l] > 0 ? 1 / xmax[l] : 0;               \
            for (ptrdiff_t i = 0; i < k - 1; i++)                                                  \
                for (ptrdiff_t l = 0; l < W; l++) {                                                \
                    real x = rkr[i * W + l] * rr[l], y = rki[i * W + l] * rr[l];                   \
                    ss[l] += x * x + y * y;                                                        \
                }                                                                                  \
            for (ptrdiff_t l = 0; l < W; l++) {                                                    \
                real alr = rkr[(k - 1) * W + l], ali = -rki[(k - 1) * W + l];                      \
                real xn = xmax[l] * SQRT(ss[l]);                                                   \
                real nrm = HYPOT(HYPOT(alr, ali), xn);                                             \
                int on = (xn > 0 || ali != 0) && nrm > tiny;                                       \
                real beta = -COPYSIGN(nrm, alr);                                                   \
                /* tau = ((beta - alr) - i ali) / beta; scale = 1 / (alpha - beta) */              \
                real cr = alr - beta, ci = ali, cn = HYPOT(cr, ci);                                \
                tr[l] = on ? (beta - alr) / beta : 0;                                              \
                ti[l] = on ? -ali / beta : 0;                                                      \
                sr[l] = on ? (cr / cn) / cn : 0;                                                   \
                si[l] = on ? -(ci / cn) / cn : 0;                                                  \
                ev[l] = (on ? beta : alr) / sc[l];                                                 \
                dv[l] = rkr[k * W + l] / sc[l];                                                    \
            }                                                                                      \
            for (ptrdiff_t l = 0; l < m; l++) {                                                    \
                e[l * n + k - 1] = ev[l];                                                          \
                d[l * n + k] = dv[l];                                                              \
                tau[2 * (l * n + k - 1)] = tr[l];                                                  \
                tau[2 * (l * n + k - 1) + 1] = ti[l];                                              \
            }                                                                                      \
            /* v_i = x_i * scale = conj(L[k][i]) * (sr + i si), v_{k-1} = 1 */                     \
            for (ptrdiff_t i = 0; i < k - 1; i++)                                                  \
                for (ptrdiff_t l = 0; l < W; l++) {                                                \
                    real xr = rkr[i * W + l], xi = -rki[i * W + l];                                \
                    vr[i * W + l] = xr * sr[l] - xi * si[l];                                       \
                    vi[i * W + l] = xr * si[l] + xi * sr[l];                                       \
                }                                                                                  \
            for (ptrdiff_t l = 0; l < W; l++) {                                                    \
                int on = tr[l] != 0 || ti[l] != 0;                                                 \
                vr[(k - 1) * W + l] = on ? 1 : 0;                                                  \
                vi[(k - 1) * W + l] = 0;                                                           \
            }                                                                                      \
            /* p = B v over the leading k x k block: B[i][j] = L[i][j] (j < i), conj(L[j][i])      \
             * (j > i), Re L[i][i] on the diagonal */                                              \
            memset(qr, 0, sizeof(real) * W * (size_t)k);                                           \
            memset(qi, 0, sizeof(real) * W * (size_t)k);                                           \
            for (ptrdiff_t i = 0; i < k; i++) {                                                    \
                const real *rir = Xr + i * (i + 1) / 2 * W, *rii = Xi + i * (i + 1) / 2 * W;       \
                real accr[W], acci[W];                                                             \
                for (ptrdiff_t l = 0; l < W; l++) accr[l] = acci[l] = 0;                           \
                for (ptrdiff_t j = 0; j < i; j++)                                                  \
                    for (ptrdiff_t l = 0; l < W; l++) {                                            \
                        real br = rir[j * W + l], bi = rii[j * W + l];                             \
                        accr[l] += br * vr[j * W + l] - bi * vi[j * W + l];                        \
                        acci[l] += br * vi[j * W + l] + bi * vr[j * W + l];                        \
                        qr[j * W + l] += br * vr[i * W + l] + bi * vi[i * W + l];                  \
                        qi[j * W + l] += br * vi[i * W + l] - bi * vr[i * W + l];                  \
                    }                                                                              \
                for (ptrdiff_t l = 0; l < W; l++) {                                                \
                    pr[i * W + l] = accr[l] + rir[i * W + l] * vr[i * W + l];                      \
                    pi[i * W + l] = acci[l] + rir[i * W + l] * vi[i * W + l];                      \
                }                                                                                  \
            }                                                                                      \
            /* p = tau (B v); w = p + alpha2 v, alpha2 = -tau/2 (p^H v) */                         \
            for (ptrdiff_t l = 0; l < W; l++) kr[l] = ki[l] = 0;                                   \
            for (ptrdiff_t i = 0; i < k; i++)                                                      \
                for (ptrdiff_t l = 0; l < W; l++) {                                                \
                    real xr = pr[i * W + l] + qr[i * W + l], xi = pi[i * W + l] + qi[i * W + l];   \
                    real yr = tr[l] * xr - ti[l] * xi, yi = tr[l] * xi + ti[l] * xr;               \
                    pr[i * W + l] = yr;                                                            \
                    pi[i * W + l] = yi;                                                            \
                    kr[l] += yr * vr[i * W + l] + yi * vi[i * W + l];                              \
                    ki[l] += yr * vi[i * W + l] - yi * vr[i * W + l];                              \
                }                                                                                  \
            for (ptrdiff_t l = 0; l < W; l++) {                                                    \
                real hr = (real)-0.5 * tr[l], hi = (real)-0.5 * ti[l];                             \
                real yr = hr * kr[l] - hi * ki[l], yi = hr * ki[l] + hi * kr[l];                   \
                kr[l] = yr;                                                                        \
                ki[l] = yi;                                                                        \
            }                                                                                      \
            for (ptrdiff_t i = 0; i < k; i++)                                                      \
                for (ptrdiff_t l = 0; l < W; l++) {                                                \
                    real xr = vr[i * W + l], xi = vi[i * W + l];                                   \
                    pr[i * W + l] += kr[l] * xr - ki[l] * xi;                                      \
                    pi[i * W + l] += kr[l] * xi + ki[l] * xr;                                      \
                }                                                                                  \
            /* L[i][j] -= v_i conj(w_j) + w_i conj(v_j), j <= i */                                 \
            for (ptrdiff_t i = 0; i < k; i++) {                                                    \
                real *rir = Xr + i * (i + 1) / 2 * W, *rii = Xi + i * (i + 1) / 2 * W;             \
                for (ptrdiff_t j = 0; j <= i; j++)                                                 \
                    for (ptrdiff_t l = 0; l < W; l++) {                                            \
                        real a1r = vr[i * W + l], a1i = vi[i * W + l];                             \
                        real b1r = pr[j * W + l], b1i = -pi[j * W + l];                            \
                        real a2r = pr[i * W + l], a2i = pi[i * W + l];                             \
                        real b2r = vr[j * W + l], b2i = -vi[j * W + l];                            \
                        rir[j * W + l] -= (a1r * b1r - a1i * b1i) + (a2r * b2r - a2i * b2i);       \
                        rii[j * W + l] -= (a1r * b1i + a1i * b1r) + (a2r * b2i + a2i * b2r);       \
                    }                                                                              \
                for (ptrdiff_t l = 0; l < W; l++) rii[i * W + l] = 0;                              \
            }                                                                                      \
            for (ptrdiff_t l = 0; l < m; l++)                                                      \
                for (ptrdiff_t i = 0; i < k - 1; i++) {                                            \
                    h[2 * ((l * n + k) * n + i)] = vr[i * W + l];                                  \
                    h[2 * ((l * n + k) * n + i) + 1] = vi[i * W + l];                              \
                }                                                                                  \
        }                                                                                          \
        for (ptrdiff_t l = 0; l < m; l++) d[l * n] = Xr[l] / sc[l];                                \
        return 0;                                                                                  \
    }                                                                                              \
    int NAME(int n, int m, const real *a, real *work, real *h, real *tau, real *d, real *e) {      \
        ptrdiff_t nn = n, half = nn * (nn + 1) / 2 * W, col = nn * W;                              \
        real *Xr = work, *Xi = Xr + half, *v = Xi + half;                                          \
        return NAME##_in(nn, (ptrdiff_t)m, a, Xr, Xi, v, v + col, v + 2 * col, v + 3 * col,        \
                         v + 4 * col, v + 5 * col, h, tau, d, e);                                  \
    }

HETRD_LANES(spectra_hetrd_lanes_c, float, sqrtf, hypotf, fabsf, copysignf, FLT_MIN / FLT_EPSILON,
            FLT_MAX_EXP)
HETRD_LANES(spectra_hetrd_lanes_z, double, sqrt, hypot, fabs, copysign, DBL_MIN / DBL_EPSILON,
            DBL_MAX_EXP)
