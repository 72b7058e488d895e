/* One small symmetric/Hermitian eigendecomposition in one call: the exact-Hermitian and
 * finiteness checks, LAPACK's ?syevd/?heevd (the very routine torch.linalg.eigh calls,
 * found in the library torch loaded), the finiteness test of the eigenvalues and the
 * spectra gauge, without a Python step in between.
 *
 * It does what the Python route of spectra/core/_pipeline/_direct.py does, operation for
 * operation, so the results are the same bits (tests/core/test_native.py):
 *  - the input is copied into the column-major eigenvector buffer exactly as torch's
 *    cloneBatchedColumnMajor does, and LAPACK is called as torch calls it (jobz, uplo 'L',
 *    lda = n, the workspace sizes its own query returns);
 *  - the gauge makes the decisions of spectra/core/_pipeline/_gauge.py: real columns take
 *    the sign of their largest-magnitude entry (the first entry within the relative
 *    tolerance of the peak on opposite-sign near-ties); complex columns are multiplied by
 *    conj(p)/|p| of their first entry whose squared modulus is within (1 - tol)^2 of the
 *    peak's, with real multiplies and adds each rounded to the working precision and the
 *    correctly rounded square root (the file is compiled with -ffp-contract=off: no fused
 *    multiply-add may change a rounding).
 * Anything unusual (input not exactly Hermitian or not finite, LAPACK's info, a
 * non-finite result, squared moduli outside the safe range) is reported by the return
 * code, and the Python route then decides, as it does today.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_native_eigh.h"

/* The checks and the gauge make exact decisions (comparisons, maxima, negations, and the
 * complex gauge's products rounded one by one: -ffp-contract=off), so their bits are the
 * same in every instruction set; where the compiler can, each is built for AVX2 as well
 * as the baseline and the loader picks the CPU's (GCC's function multi-versioning). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define SPECTRA_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SPECTRA_CLONES
#endif

typedef struct {
    float re, im;
} cfloat;
typedef struct {
    double re, im;
} cdouble;

typedef void (*syevd_s)(const char *, const char *, const int *, float *, const int *,
                        float *, float *, const int *, int *, const int *, int *);
typedef void (*syevd_d)(const char *, const char *, const int *, double *, const int *,
                        double *, double *, const int *, int *, const int *, int *);
typedef void (*heevd_c)(const char *, const char *, const int *, cfloat *, const int *,
                        float *, cfloat *, const int *, float *, const int *, int *,
                        const int *, int *);
typedef void (*heevd_z)(const char *, const char *, const int *, cdouble *, const int *,
                        double *, cdouble *, const int *, double *, const int *, int *,
                        const int *, int *);

static syevd_s p_ssyevd = NULL;
static syevd_d p_dsyevd = NULL;
static heevd_c p_cheevd = NULL;
static heevd_z p_zheevd = NULL;

/* ?potrf and ?trsm of the same library (the generalized pair, eigh_pair): element types
 * behind void pointers, one table entry per kind */
typedef void (*potrf_fn)(const char *, const int *, void *, const int *, int *);
typedef void (*trsm_fn)(const char *, const char *, const char *, const char *, const int *,
                        const int *, const void *, const void *, const int *, void *,
                        const int *);
static potrf_fn p_potrf[4] = {NULL, NULL, NULL, NULL};
static trsm_fn p_trsm[4] = {NULL, NULL, NULL, NULL};

#define MAX_N 256
/* the batch loop (eigh_batch) takes larger matrices too: its one scratch per block makes
 * the workspace query (not cached from MAX_N on) a once-per-block cost */
#define MAX_BATCH_N 2048
#define ALIGN 64

/* workspace sizes from LAPACK's own query, per kernel-thread count, kind, jobz and n
 * (benign races: every thread of one count computes the same numbers). MKL's query depends
 * on the calling thread's kernel threads (zheevd, jobz 'N', n = 32: 672 complex entries on
 * one thread, 416 on two), and a workspace other than the one torch's call queries in the
 * same thread can change the bits: the sizes are kept per count (MKL_Get_Max_Threads where
 * torch's LAPACK is MKL, else one count), up to WS_THREADS (1.7 MB of zero pages, touched
 * only where used); above it every call queries. */
#define WS_THREADS 64
static int ws_lwork[WS_THREADS][4][2][MAX_N];
static int ws_lrwork[WS_THREADS][4][2][MAX_N];
static int ws_liwork[WS_THREADS][4][2][MAX_N];
static char ws_known[WS_THREADS][4][2][MAX_N];
typedef int (*max_threads_fn)(void);
static max_threads_fn p_max_threads = NULL;

static void *aligned(size_t bytes) {
    size_t size = (bytes + ALIGN - 1) / ALIGN * ALIGN;
    return aligned_alloc(ALIGN, size ? size : ALIGN);
}

static int max1(int x) { return x > 1 ? x : 1; }

/* ---- checks ------------------------------------------------------------------------ */

/* exactly Hermitian (every entry equal to its mirror's conjugate: NaN never is), and with
 * finite set, every entry finite. Each row of the lower triangle is tested without a
 * branch (a running "all equal" flag, and a sum of x * 0, which is NaN exactly where some
 * x is NaN or infinite: the order of the sum cannot change that), so the compiler keeps
 * the walk in vector registers; the verdict is read once per row. */
#define DEFINE_REAL_CHECK(NAME, T)                                                        \
    SPECTRA_CLONES static int NAME(const T *a, Py_ssize_t n, Py_ssize_t s0, Py_ssize_t s1, \
                                   int finite) {                                          \
        for (Py_ssize_t i = 0; i < n; i++) {                                              \
            const T *row = a + i * s0, *col = a + i * s1;                                 \
            int same = 1;                                                                 \
            T zero = 0;                                                                   \
            if (s1 == 1) { /* C order, the row contiguous: a loop of its own (float32 64x64: \
                            0.84 against 1.47 us with the strided loop alone, measured) */ \
                for (Py_ssize_t j = 0; j <= i; j++) {                                     \
                    T x = row[j], y = col[j * s0];                                        \
                    same &= x == y;                                                       \
                    zero += x * (T)0;                                                     \
                }                                                                         \
            } else {                                                                      \
                for (Py_ssize_t j = 0; j <= i; j++) {                                     \
                    T x = row[j * s1], y = col[j * s0];                                   \
                    same &= x == y;                                                       \
                    zero += x * (T)0;                                                     \
                }                                                                         \
            }                                                                             \
            if (!same || (finite && zero != zero)) return 0;                              \
        }                                                                                 \
        return 1;                                                                         \
    }
DEFINE_REAL_CHECK(check_s, float)
DEFINE_REAL_CHECK(check_d, double)

#define DEFINE_COMPLEX_CHECK(NAME, T, R)                                                  \
    SPECTRA_CLONES static int NAME(const T *a, Py_ssize_t n, Py_ssize_t s0, Py_ssize_t s1, \
                                   int finite) {                                          \
        for (Py_ssize_t i = 0; i < n; i++) {                                              \
            const T *row = a + i * s0, *col = a + i * s1;                                 \
            int same = 1;                                                                 \
            R zero = 0;                                                                   \
            for (Py_ssize_t j = 0; j <= i; j++) {                                         \
                T x = row[j * s1], y = col[j * s0];                                       \
                same &= (x.re == y.re) & (x.im == -y.im);                                 \
                zero += x.re * (R)0 + x.im * (R)0;                                        \
            }                                                                             \
            if (!same || (finite && zero != zero)) return 0;                              \
        }                                                                                 \
        return 1;                                                                         \
    }
DEFINE_COMPLEX_CHECK(check_c, cfloat, float)
DEFINE_COMPLEX_CHECK(check_z, cdouble, double)

/* FN_s, FN_d, FN_c or FN_z by kind (0: float32, 1: float64, 2: complex64, 3: complex128),
 * for the per-matrix tests whose four versions take the same arguments */
#define BY_KIND(kind, FN, ...)                                                            \
    ((kind) == 0   ? FN##_s(__VA_ARGS__)                                                 \
     : (kind) == 1 ? FN##_d(__VA_ARGS__)                                                 \
     : (kind) == 2 ? FN##_c(__VA_ARGS__)                                                 \
                   : FN##_z(__VA_ARGS__))

static int check_one(int kind, const void *a, Py_ssize_t n, Py_ssize_t s0, Py_ssize_t s1,
                     int finite) {
    return BY_KIND(kind, check, a, n, s0, s1, finite);
}

/* ---- Hermitian within a tolerance (quick_check's test, accept-only) ---------------- */

/* 1 if the n x n matrix at a is Hermitian within tol relative to its largest entry, as
 * quick_check tests it (max |A - A^H| <= tol * max |A|, tol alone where A = 0) and every
 * entry is finite; computed in double, accepted only with a margin below the bound (1e-5
 * relative: float32's rounding of the torch test's steps is far below it). 0 where not
 * certain: the torch test then decides (and names what it refuses). */
/* per entry pair (x = a[i, j], y = a[j, i]), in double: |x - conj(y)| and |x| squared (a
 * hypot per entry cost complex checks a third of a 48 x 48 solve, measured), and a probe
 * that is NaN exactly where x is not finite */
#define REAL_ENTRY(SFX, T)                                                                \
    static inline double dist2_##SFX(T x, T y) {                                          \
        const double d = (double)x - (double)y;                                           \
        return d * d;                                                                     \
    }                                                                                     \
    static inline double mag2_##SFX(T x) { return (double)x * (double)x; }                \
    static inline double probe_##SFX(T x) { return (double)x * 0.0; }                    \
    static inline int nonzero_##SFX(T x) { return x != 0; }
#define COMPLEX_ENTRY(SFX, T)                                                             \
    static inline double dist2_##SFX(T x, T y) {                                          \
        const double re = (double)x.re - (double)y.re, im = (double)x.im + (double)y.im;  \
        return re * re + im * im;                                                         \
    }                                                                                     \
    static inline double mag2_##SFX(T x) {                                                \
        return (double)x.re * (double)x.re + (double)x.im * (double)x.im;                 \
    }                                                                                     \
    static inline double probe_##SFX(T x) { return (double)x.re * 0.0 + (double)x.im * 0.0; } \
    static inline int nonzero_##SFX(T x) { return x.re != 0 || x.im != 0; }
REAL_ENTRY(s, float)
REAL_ENTRY(d, double)
COMPLEX_ENTRY(c, cfloat)
COMPLEX_ENTRY(z, cdouble)

/* squares are compared (their rounding, ~1e-16 relative, is far inside the 1e-5 margin);
 * where they could overflow or underflow (largest square outside 1e-280 .. 1e280, but for
 * the zero matrix, accepted) nothing is decided */
#define DEFINE_WITHIN(SFX, T)                                                             \
    static int within_##SFX(const T *a, Py_ssize_t n, Py_ssize_t s0, Py_ssize_t s1,       \
                            double tol) {                                                 \
        double diff = 0.0, scale = 0.0, zero = 0.0;                                       \
        int nonzero = 0;                                                                  \
        for (Py_ssize_t i = 0; i < n; i++) {                                              \
            const T *row = a + i * s0, *col = a + i * s1;                                 \
            for (Py_ssize_t j = 0; j <= i; j++) {                                         \
                const T x = row[j * s1], y = col[j * s0];                                 \
                const double d = dist2_##SFX(x, y), ax = mag2_##SFX(x), ay = mag2_##SFX(y); \
                diff = d > diff ? d : diff;                                               \
                scale = ax > scale ? ax : scale;                                          \
                scale = ay > scale ? ay : scale;                                          \
                zero += probe_##SFX(x) + probe_##SFX(y);                                  \
                nonzero |= nonzero_##SFX(x) | nonzero_##SFX(y);                           \
            }                                                                             \
        }                                                                                 \
        if (zero != zero) return 0; /* NaN or Inf */                                      \
        if (!nonzero) return 1;                                                           \
        if (!(scale > 1e-280 && scale < 1e280)) return 0;                                 \
        const double bound = tol * (1.0 - 1e-5);                                          \
        return diff <= bound * bound * scale;                                             \
    }
DEFINE_WITHIN(s, float)
DEFINE_WITHIN(d, double)
DEFINE_WITHIN(c, cfloat)
DEFINE_WITHIN(z, cdouble)

static int within_one(int kind, const void *a, Py_ssize_t n, Py_ssize_t s0, Py_ssize_t s1,
                      double tol) {
    return BY_KIND(kind, within, a, n, s0, s1, tol);
}

/* ---- column-major copy (torch's cloneBatchedColumnMajor) --------------------------- */

#define DEFINE_COPY(NAME, T)                                                              \
    static void NAME(T *out, const T *a, Py_ssize_t n, Py_ssize_t s0, Py_ssize_t s1) {    \
        for (Py_ssize_t j = 0; j < n; j++)                                                \
            for (Py_ssize_t i = 0; i < n; i++) out[i + j * n] = a[i * s0 + j * s1];       \
    }
DEFINE_COPY(copy_s, float)
DEFINE_COPY(copy_d, double)
DEFINE_COPY(copy_c, cfloat)
DEFINE_COPY(copy_z, cdouble)

/* ---- gauge ------------------------------------------------------------------------- */

/* real columns (contiguous, column-major): 1 if gauged, 0 if a column is not finite.
 * The largest and smallest entries are running maxima and minima over the lanes of a
 * vector (GNU C vector extensions; a maximum is exact in any order, and the select below
 * is "x > m ? x : m" lane by lane), finiteness a sum of x * 0 (NaN exactly where some
 * entry is NaN or infinite, whatever the order), so the pass has no branch. */
typedef double vec_d __attribute__((vector_size(32)));
typedef long long mask_d __attribute__((vector_size(32)));
typedef float vec_s __attribute__((vector_size(32)));
typedef int mask_s __attribute__((vector_size(32)));
#define DEFINE_REAL_GAUGE(NAME, T, V, M)                                                  \
    SPECTRA_CLONES static int NAME(T *v, Py_ssize_t n, Py_ssize_t m, double tol_d,        \
                                   double keep_d) {                                       \
        const T tol = (T)tol_d, keep = (T)keep_d;                                         \
        enum { L = (int)(sizeof(V) / sizeof(T)) };                                        \
        for (Py_ssize_t j = 0; j < m; j++) {                                              \
            T *col = v + j * n;                                                           \
            V his, los, zeros;                                                            \
            for (int k = 0; k < L; k++) {                                                 \
                his[k] = los[k] = col[0];                                                 \
                zeros[k] = 0;                                                             \
            }                                                                             \
            Py_ssize_t i = 0;                                                             \
            for (; i + L <= n; i += L) {                                                  \
                V x;                                                                      \
                memcpy(&x, col + i, sizeof x);                                            \
                M up = x > his, down = x < los;                                           \
                his = (V)(((M)x & up) | ((M)his & ~up));                                  \
                los = (V)(((M)x & down) | ((M)los & ~down));                              \
                zeros += x * (T)0;                                                        \
            }                                                                             \
            T hi = his[0], lo = los[0], zero = zeros[0];                                  \
            for (int k = 1; k < L; k++) {                                                 \
                hi = his[k] > hi ? his[k] : hi;                                           \
                lo = los[k] < lo ? los[k] : lo;                                           \
                zero += zeros[k];                                                         \
            }                                                                             \
            for (; i < n; i++) {                                                          \
                T x = col[i];                                                             \
                hi = x > hi ? x : hi;                                                     \
                lo = x < lo ? x : lo;                                                     \
                zero += x * (T)0;                                                         \
            }                                                                             \
            if (zero != zero) return 0;                                                   \
            T peak = hi >= -lo ? hi : -lo;                                                \
            int negative = !(hi >= -lo);                                                  \
            T s = hi + lo;                                                                \
            if (peak > 0 && fabs((double)s) <= (double)(tol * peak)) {                    \
                T bar = peak * keep; /* opposite-sign near-tie: the first near-peak entry */ \
                for (Py_ssize_t i = 0; i < n; i++) {                                      \
                    T x = col[i];                                                         \
                    if ((x < 0 ? -x : x) >= bar) {                                        \
                        negative = x < 0;                                                 \
                        break;                                                            \
                    }                                                                     \
                }                                                                         \
            }                                                                             \
            if (negative)                                                                 \
                for (Py_ssize_t i = 0; i < n; i++) col[i] = -col[i];                      \
        }                                                                                 \
        return 1;                                                                         \
    }
DEFINE_REAL_GAUGE(gauge_s, float, vec_s, mask_s)
DEFINE_REAL_GAUGE(gauge_d, double, vec_d, mask_d)

/* complex columns: 1 if gauged, 0 if a peak's square lies outside (low, high) or is NaN
 * (the abs rule of the Python route then applies). A column is read as its interleaved
 * real and imaginary parts, a vector at a time: the squares x * x, added to their
 * pair-swapped copy, give every lane of a pair the entry's re^2 + im^2 (the same sum in
 * either order), and the phase multiply is x * (cr, cr) + swap(x) * (-ci, ci), the scalar
 * formula's products and sums rounded one by one. */
#ifdef __clang__
#define SWAP_S(x) __builtin_shufflevector(x, x, 1, 0, 3, 2, 5, 4, 7, 6)
#define SWAP_D(x) __builtin_shufflevector(x, x, 1, 0, 3, 2)
#else
#define SWAP_S(x) __builtin_shuffle(x, (mask_s){1, 0, 3, 2, 5, 4, 7, 6})
#define SWAP_D(x) __builtin_shuffle(x, (mask_d){1, 0, 3, 2})
#endif
#define DEFINE_COMPLEX_GAUGE(NAME, T, R, SQRT, V, M, SWAP)                                \
    SPECTRA_CLONES static int NAME(T *v, Py_ssize_t n, Py_ssize_t m, double keep2_d,      \
                                   double low_d, double high_d) {                         \
        const R keep2 = (R)keep2_d, low = (R)low_d, high = (R)high_d;                     \
        enum { L = (int)(sizeof(V) / sizeof(R)), C = L / 2 }; /* C entries per vector */  \
        R *peaks = malloc(sizeof(R) * (size_t)(m > 0 ? m : 1));                           \
        if (peaks == NULL) return 0;                                                      \
        for (Py_ssize_t j = 0; j < m; j++) { /* every column screened before any write */  \
            const T *col = v + j * n;                                                     \
            /* the peak by independent maxima (a max is exact in any order); a NaN square \
             * never wins a comparison, so it is flagged on its own */                    \
            V top = {0};                                                                  \
            M nans = {0};                                                                 \
            Py_ssize_t i = 0;                                                             \
            for (; i + C <= n; i += C) {                                                  \
                V x;                                                                      \
                memcpy(&x, col + i, sizeof x);                                            \
                V sq = x * x;                                                             \
                V m2 = sq + SWAP(sq);                                                     \
                M up = m2 > top;                                                          \
                top = (V)(((M)m2 & up) | ((M)top & ~up));                                 \
                nans |= m2 != m2;                                                         \
            }                                                                             \
            R peak2 = 0;                                                                  \
            int nan = 0;                                                                  \
            for (int k = 0; k < L; k++) {                                                 \
                peak2 = top[k] > peak2 ? top[k] : peak2;                                  \
                nan |= nans[k] != 0;                                                      \
            }                                                                             \
            for (; i < n; i++) {                                                          \
                R m0 = col[i].re * col[i].re + col[i].im * col[i].im;                     \
                peak2 = m0 > peak2 ? m0 : peak2;                                          \
                nan |= m0 != m0;                                                          \
            }                                                                             \
            if (nan || !(peak2 > low && peak2 < high)) {                                  \
                free(peaks);                                                              \
                return 0;                                                                 \
            }                                                                             \
            peaks[j] = peak2;                                                             \
        }                                                                                 \
        for (Py_ssize_t j = 0; j < m; j++) {                                              \
            T *col = v + j * n;                                                           \
            R bar = peaks[j] * keep2;                                                     \
            Py_ssize_t first = 0;                                                         \
            for (Py_ssize_t i = 0; i < n; i++) {                                          \
                R re = col[i].re, im = col[i].im;                                         \
                R m2 = re * re + im * im;                                                 \
                if (m2 >= bar) {                                                          \
                    first = i;                                                            \
                    break;                                                                \
                }                                                                         \
            }                                                                             \
            R pr = col[first].re, pi = col[first].im;                                    \
            R pr2 = pr * pr, pi2 = pi * pi;                                               \
            R size = SQRT(pr2 + pi2);                                                     \
            R cr = pr / size, ci = -pi / size;                                            \
            V cc, ss;                                                                     \
            for (int k = 0; k < L; k += 2) {                                              \
                cc[k] = cc[k + 1] = cr;                                                   \
                ss[k] = -ci;                                                              \
                ss[k + 1] = ci;                                                           \
            }                                                                             \
            Py_ssize_t i = 0;                                                             \
            for (; i + C <= n; i += C) {                                                  \
                V x;                                                                      \
                memcpy(&x, col + i, sizeof x);                                            \
                V y = x * cc + SWAP(x) * ss;                                              \
                memcpy(col + i, &y, sizeof y);                                            \
            }                                                                             \
            for (; i < n; i++) {                                                          \
                R re = col[i].re, im = col[i].im;                                         \
                R a1 = re * cr, a2 = im * ci, b1 = re * ci, b2 = im * cr;                 \
                col[i].re = a1 - a2;                                                      \
                col[i].im = b1 + b2;                                                      \
            }                                                                             \
        }                                                                                 \
        free(peaks);                                                                      \
        return 1;                                                                         \
    }
DEFINE_COMPLEX_GAUGE(gauge_c, cfloat, float, sqrtf, vec_s, mask_s, SWAP_S)
DEFINE_COMPLEX_GAUGE(gauge_z, cdouble, double, sqrt, vec_d, mask_d, SWAP_D)

#define DEFINE_FINITE(NAME, R)                                                            \
    static int NAME(const R *w, Py_ssize_t n) {                                           \
        for (Py_ssize_t i = 0; i < n; i++)                                                \
            if (!isfinite(w[i])) return 0;                                                \
        return 1;                                                                         \
    }
DEFINE_FINITE(finite_s, float)
DEFINE_FINITE(finite_d, double)

/* m columns of n entries, column-major: 1 if gauged (0: left to the Python gauge) */
static int gauge(int kind, void *v, Py_ssize_t n, Py_ssize_t m, double tol, double keep,
                 double keep2, double low, double high) {
    return kind == 0   ? gauge_s(v, n, m, tol, keep)
           : kind == 1 ? gauge_d(v, n, m, tol, keep)
           : kind == 2 ? gauge_c(v, n, m, keep2, low, high)
                       : gauge_z(v, n, m, keep2, low, high);
}

/* ---- LAPACK ------------------------------------------------------------------------ */

/* workspace sizes for (kind, jobz, n) from LAPACK's query, as torch makes it */
static void query(int kind, int vec, int n, int *lwork, int *lrwork, int *liwork) {
    const int t = p_max_threads != NULL ? p_max_threads() - 1 : 0;
    const int kept = n < MAX_N && t >= 0 && t < WS_THREADS;
    if (kept && ws_known[t][kind][vec][n]) {
        *lwork = ws_lwork[t][kind][vec][n];
        *lrwork = ws_lrwork[t][kind][vec][n];
        *liwork = ws_liwork[t][kind][vec][n];
        return;
    }
    const char jobz = vec ? 'V' : 'N', uplo = 'L';
    const int lda = max1(n), minus = -1;
    int info = 0, iq = 0;
    *lrwork = 1;
    if (kind == 0) {
        float a = 0, w = 0, wq = 0;
        p_ssyevd(&jobz, &uplo, &n, &a, &lda, &w, &wq, &minus, &iq, &minus, &info);
        *lwork = max1((int)wq);
    } else if (kind == 1) {
        double a = 0, w = 0, wq = 0;
        p_dsyevd(&jobz, &uplo, &n, &a, &lda, &w, &wq, &minus, &iq, &minus, &info);
        *lwork = max1((int)wq);
    } else if (kind == 2) {
        cfloat a = {0, 0}, wq = {0, 0};
        float w = 0, rq = 0;
        p_cheevd(&jobz, &uplo, &n, &a, &lda, &w, &wq, &minus, &rq, &minus, &iq, &minus, &info);
        *lwork = max1((int)wq.re);
        *lrwork = max1((int)rq);
    } else {
        cdouble a = {0, 0}, wq = {0, 0};
        double w = 0, rq = 0;
        p_zheevd(&jobz, &uplo, &n, &a, &lda, &w, &wq, &minus, &rq, &minus, &iq, &minus, &info);
        *lwork = max1((int)wq.re);
        *lrwork = max1((int)rq);
    }
    *liwork = max1(iq);
    if (kept) {
        ws_lwork[t][kind][vec][n] = *lwork;
        ws_lrwork[t][kind][vec][n] = *lrwork;
        ws_liwork[t][kind][vec][n] = *liwork;
        ws_known[t][kind][vec][n] = 1;
    }
}

static const size_t ITEM[4] = {sizeof(float), sizeof(double), sizeof(cfloat), sizeof(cdouble)};
static const size_t REAL_ITEM[4] = {sizeof(float), sizeof(double), sizeof(float),
                                    sizeof(double)};

/* n <= 3: the closed form (_native_closed_form.c), finiteness and gauge */
static int solve_closed(int kind, int n, const void *a, Py_ssize_t s0, Py_ssize_t s1, void *w,
                        void *v, int check, double tol, double keep, double keep2, double low,
                        double high) {
    double scratch[18];
    spectra_closed_form(kind, n, a, s0, s1, w, v ? v : (void *)scratch);
    if (check && !((kind == 0 || kind == 2) ? finite_s(w, n) : finite_d(w, n))) return ST_FAILED;
    if (!v) return ST_OK;
    return gauge(kind, v, n, n, tol, keep, keep2, low, high) ? ST_OK : ST_UNGAUGED;
}

/* LAPACK's scratch for (kind, jobz, n): the sizes of its own query, 64-byte aligned, and
 * for eigenvalues only a buffer for the matrix LAPACK overwrites. A batch reuses one for
 * all its matrices, as torch's batched call does (scratch is written before it is read:
 * the results do not depend on it; allocating it per matrix cost page faults, measured) */
typedef struct {
    void *buf, *work, *rwork;
    int *iwork;
    int lwork, lrwork, liwork;
} scratch_t;

static void scratch_free(scratch_t *s) {
    free(s->buf);
    free(s->work);
    free(s->rwork);
    free(s->iwork);
}

static int scratch_alloc(scratch_t *s, int kind, int n, int vec) {
    memset(s, 0, sizeof *s);
    query(kind, vec, n, &s->lwork, &s->lrwork, &s->liwork);
    s->buf = vec ? NULL : aligned(ITEM[kind] * (size_t)n * (size_t)n);
    s->work = aligned(ITEM[kind] * (size_t)s->lwork);
    s->rwork = kind >= 2 ? aligned(REAL_ITEM[kind] * (size_t)s->lrwork) : NULL;
    s->iwork = aligned(sizeof(int) * (size_t)s->liwork);
    if ((!vec && !s->buf) || !s->work || !s->iwork || (kind >= 2 && !s->rwork)) {
        scratch_free(s);
        return 0;
    }
    return 1;
}

/* the whole solve, as the plan of one matrix runs it (the closed form for n <= 3,
 * LAPACK otherwise); a, w, v: element pointers (v NULL for eigenvalues only); sc: the
 * scratch for (kind, v != NULL, n), or NULL (allocated here for this matrix) */
/* LAPACK's ?syevd/?heevd ('L') on the column-major buf in place (jobz 'V' with vec), the
 * eigenvalues at w, with the scratch sc for (kind, vec, n): LAPACK's info */
static int syevd_in(int kind, int vec, int n, void *buf, void *w, scratch_t *sc) {
    const char jobz = vec ? 'V' : 'N', uplo = 'L';
    const int lda = max1(n);
    int info = 0;
    switch (kind) {
        case 0:
            p_ssyevd(&jobz, &uplo, &n, buf, &lda, w, sc->work, &sc->lwork, sc->iwork,
                     &sc->liwork, &info);
            break;
        case 1:
            p_dsyevd(&jobz, &uplo, &n, buf, &lda, w, sc->work, &sc->lwork, sc->iwork,
                     &sc->liwork, &info);
            break;
        case 2:
            p_cheevd(&jobz, &uplo, &n, buf, &lda, w, sc->work, &sc->lwork, sc->rwork,
                     &sc->lrwork, sc->iwork, &sc->liwork, &info);
            break;
        default:
            p_zheevd(&jobz, &uplo, &n, buf, &lda, w, sc->work, &sc->lwork, sc->rwork,
                     &sc->lrwork, sc->iwork, &sc->liwork, &info);
    }
    return info;
}

/* the column-major copy of kind's n x n matrix at a (strides s0, s1) into out */
static void copy_kind(int kind, void *out, const void *a, Py_ssize_t n, Py_ssize_t s0,
                      Py_ssize_t s1) {
    switch (kind) {
        case 0: copy_s(out, a, n, s0, s1); break;
        case 1: copy_d(out, a, n, s0, s1); break;
        case 2: copy_c(out, a, n, s0, s1); break;
        default: copy_z(out, a, n, s0, s1);
    }
}

/* the column-major adjoint (conjugate transpose) of the column-major n x n matrix at a
 * into out */
static void adjoint_kind(int kind, void *out, const void *a, int n) {
    copy_kind(kind, out, a, n, n, 1);
    const size_t parts = 2 * (size_t)n * (size_t)n;
    if (kind == 2) {
        float *x = out;
        for (size_t k = 1; k < parts; k += 2) x[k] = -x[k];
    } else if (kind == 3) {
        double *x = out;
        for (size_t k = 1; k < parts; k += 2) x[k] = -x[k];
    }
}

/* the whole solve, as the plan of one matrix runs it (the closed form for n <= 3,
 * LAPACK otherwise); a, w, v: element pointers (v NULL for eigenvalues only); sc: the
 * scratch for (kind, v != NULL, n), or NULL (allocated here for this matrix) */
static int solve_in(int kind, int n, const void *a, Py_ssize_t s0, Py_ssize_t s1, void *w,
                    void *v, int check, double tol, double keep, double keep2, double low,
                    double high, scratch_t *sc) {
    if (check && !check_one(kind, a, n, s0, s1, 1)) return ST_REJECTED;
    if (n <= 3) return solve_closed(kind, n, a, s0, s1, w, v, check, tol, keep, keep2, low, high);
    const int vec = v != NULL;
    scratch_t own;
    if (sc == NULL) {
        if (!scratch_alloc(&own, kind, n, vec)) return ST_NO_MEMORY;
        sc = &own;
    }
    void *buf = vec ? v : sc->buf;
    copy_kind(kind, buf, a, n, s0, s1);
    const int info = syevd_in(kind, vec, n, buf, w, sc);
    if (sc == &own) scratch_free(&own);
    if (info != 0) return ST_FAILED;
    if (check && !((kind == 0 || kind == 2) ? finite_s(w, n) : finite_d(w, n)))
        return ST_FAILED;
    if (!vec) return ST_OK;
    return gauge(kind, v, n, n, tol, keep, keep2, low, high) ? ST_OK : ST_UNGAUGED;
}

static int solve(int kind, int n, const void *a, Py_ssize_t s0, Py_ssize_t s1, void *w,
                 void *v, int check, double tol, double keep, double keep2, double low,
                 double high) {
    return solve_in(kind, n, a, s0, s1, w, v, check, tol, keep, keep2, low, high, NULL);
}

/* b matrices at a (batch stride sb): each solved as solve() solves one, its results at
 * w + k n and v + k n n (column-major); a matrix whose outputs do not start on a 64-byte
 * boundary is solved in aligned scratch buffers and copied, as torch solves one matrix in
 * its fresh buffers (MKL's results depend on alignment). Stops at the first matrix that is
 * not OK: its status, and its index in *index. */
static int solve_batch(int kind, Py_ssize_t b, int n, const char *a, Py_ssize_t sb,
                       Py_ssize_t s0, Py_ssize_t s1, char *w, char *v, int check, double tol,
                       double keep, double keep2, double low, double high, Py_ssize_t *index) {
    const size_t item = ITEM[kind], ritem = REAL_ITEM[kind];
    const size_t wbytes = ritem * (size_t)n, vbytes = item * (size_t)n * (size_t)n;
    void *ws = NULL, *vs = NULL;
    int status = ST_OK;
    scratch_t sc, *scp = NULL; /* one LAPACK scratch for the batch (n > 3) */
    if (n > 3 && b > 0) {
        if (!scratch_alloc(&sc, kind, n, v != NULL)) {
            *index = 0;
            return ST_NO_MEMORY;
        }
        scp = &sc;
    }
    for (Py_ssize_t k = 0; k < b; k++) {
        const char *ak = a + (size_t)(k * sb) * item;
        char *wk = w + (size_t)k * wbytes, *vk = v ? v + (size_t)k * vbytes : NULL;
        if ((uintptr_t)wk % ALIGN == 0 && (!vk || (uintptr_t)vk % ALIGN == 0)) {
            status = solve_in(kind, n, ak, s0, s1, wk, vk, check, tol, keep, keep2, low, high,
                              scp);
        } else {
            if (ws == NULL) {
                ws = aligned(wbytes);
                vs = v ? aligned(vbytes) : NULL;
                if (ws == NULL || (v && vs == NULL)) {
                    status = ST_NO_MEMORY;
                    *index = k;
                    break;
                }
            }
            status = solve_in(kind, n, ak, s0, s1, ws, vk ? vs : NULL, check, tol, keep, keep2,
                              low, high, scp);
            if (status == ST_OK) {
                memcpy(wk, ws, wbytes);
                if (vk) memcpy(vk, vs, vbytes);
            }
        }
        if (status != ST_OK) {
            *index = k;
            break;
        }
    }
    free(ws);
    free(vs);
    if (scp != NULL) scratch_free(scp);
    return status;
}

/* ---- the generalized pair A v = w B v -------------------------------------------- */

/* One pair as the serial Cholesky path computes it with torch's calls (_solve.py,
 * _direct_generalized.py), each of them the LAPACK/BLAS call torch makes, on the same
 * column-major buffers: L = potrf('L') of a copy of b (cholesky_ex), C = L^-1 A
 * (solve_triangular(L, A): trsm left, lower, no transpose), C L^-H (solve_triangular(L^H,
 * ., left=False): trsm right, lower, conjugate transpose), ?syevd/?heevd ('L') of C in
 * place (with closed, n <= 3: the closed form, as the plan solves it), and with vectors V = L^-H U (solve_triangular(L^H, U): trsm left, lower,
 * conjugate transpose) and the gauge. a: the Hermitian matrix (row-major contiguous), b:
 * row-major contiguous (its lower triangle is read); with btol >= 0, ST_REJECTED unless a
 * is exactly Hermitian and finite and b is certainly Hermitian within btol and finite
 * (within_one: the full path's checks pass them, a as it is); f, c:
 * aligned n x n scratch, sc: the scratch of (kind, vec, n). With by_left, C by two left
 * solves, C = L^-1 (L^-1 A)^H (reduce_by_left_solves: the form the threaded pairs take,
 * on the caller's kernel threads). ST_FAILED where b is not
 * positive definite, LAPACK fails or an eigenvalue is not finite (the full path
 * decides). */
static int pair_in(int kind, int n, const void *a, const void *b, void *w, void *v, int closed,
                   int by_left, double btol, double tol, double keep, double keep2, double low,
                   double high, void *f, void *c, void *u, scratch_t *sc) {
    static const float one_s[2] = {1.0f, 0.0f};
    static const double one_d[2] = {1.0, 0.0};
    const void *one = (kind == 0 || kind == 2) ? (const void *)one_s : (const void *)one_d;
    const char left = 'L', right = 'R', lower = 'L', none = 'N', nonunit = 'N';
    const char adjoint = kind >= 2 ? 'C' : 'T';
    const int lda = max1(n), vec = v != NULL;
    int info = 0;
    /* (b: the exact test first, as the full path's check makes it: one compare per entry,
     * where the tolerance test takes a hypot per complex pair) */
    if (btol >= 0 && !(check_one(kind, a, n, n, 1, 1) &&
                       (check_one(kind, b, n, n, 1, 1) || within_one(kind, b, n, n, 1, btol))))
        return ST_REJECTED;
    copy_kind(kind, f, b, n, n, 1);
    p_potrf[kind](&lower, &n, f, &lda, &info);
    if (info != 0) return ST_FAILED;
    copy_kind(kind, c, a, n, n, 1);
    p_trsm[kind](&left, &lower, &none, &nonunit, &n, &n, one, f, &lda, c, &lda);
    if (by_left) { /* L^-1 (L^-1 A)^H, into u: then u is C */
        adjoint_kind(kind, u, c, n);
        p_trsm[kind](&left, &lower, &none, &nonunit, &n, &n, one, f, &lda, u, &lda);
        void *t = c;
        c = u;
        u = t;
    } else {
        p_trsm[kind](&right, &lower, &adjoint, &nonunit, &n, &n, one, f, &lda, c, &lda);
    }
    if (closed && n <= 3) { /* the closed form where the plan runs it (closed_form_into: the compiled
                   * one, its vectors in the gauge), on C as it lies (column-major) */
        if (solve_closed(kind, n, c, 1, n, w, vec ? u : NULL, 0, tol, keep, keep2, low, high) !=
            ST_OK)
            return ST_FAILED;
        c = u;
    } else if (syevd_in(kind, vec, n, c, w, sc) != 0) {
        return ST_FAILED;
    }
    if (!((kind == 0 || kind == 2) ? finite_s(w, n) : finite_d(w, n))) return ST_FAILED;
    if (!vec) return ST_OK;
    p_trsm[kind](&left, &lower, &adjoint, &nonunit, &n, &n, one, f, &lda, c, &lda);
    memcpy(v, c, ITEM[kind] * (size_t)n * (size_t)n);
    return gauge(kind, v, n, n, tol, keep, keep2, low, high) ? ST_OK : ST_UNGAUGED;
}

/* pairs (a[k], b[k]), k < count, each n x n row-major contiguous, as pair_in solves one,
 * into w + k n and v + k n n (column-major per matrix; NULL: eigenvalues only); stops at
 * the first pair not OK (its index at *index) */
static int pair_batch(int kind, Py_ssize_t count, int n, const char *a, const char *b, char *w,
                      char *v, int closed, int by_left, double btol, double tol, double keep,
                      double keep2, double low, double high, Py_ssize_t *index) {
    const size_t item = ITEM[kind], bytes = item * (size_t)n * (size_t)n;
    const int vec = v != NULL;
    scratch_t sc;
    if (!scratch_alloc(&sc, kind, n, vec)) return ST_NO_MEMORY;
    void *f = aligned(bytes), *c = aligned(bytes), *u = aligned(bytes);
    int status = (f && c && u) ? ST_OK : ST_NO_MEMORY;
    for (Py_ssize_t k = 0; k < count && status == ST_OK; k++) {
        status = pair_in(kind, n, a + k * bytes, b + k * bytes, w + k * REAL_ITEM[kind] * n,
                         vec ? v + k * bytes : NULL, closed, by_left, btol, tol, keep, keep2, low,
                         high, f, c, u, &sc);
        if (status != ST_OK) *index = k;
    }
    free(f);
    free(c);
    free(u);
    scratch_free(&sc);
    return status;
}

static int api_loaded(int kind) {
    return (kind == 0 ? (void *)p_ssyevd
            : kind == 1 ? (void *)p_dsyevd
            : kind == 2 ? (void *)p_cheevd
                        : (void *)p_zheevd) != NULL;
}

/* ---- Python ------------------------------------------------------------------------ */

/* eigh(kind, n, a, s0, s1, w, v, check, tol, keep, keep2, low, high) -> status
 * a, w, v: addresses (v = 0: eigenvalues only); s0, s1: a's strides in elements;
 * keep = 1 - tol, keep2 = (1 - tol)^2 as the Python gauge computes them; (low, high):
 * the range of squared peaks in which the complex gauge compares squares */
static PyObject *py_eigh(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 13) {
        PyErr_SetString(PyExc_TypeError, "eigh takes 13 arguments");
        return NULL;
    }
    long kind = PyLong_AsLong(args[0]);
    long n = PyLong_AsLong(args[1]);
    void *a = PyLong_AsVoidPtr(args[2]);
    Py_ssize_t s0 = PyLong_AsSsize_t(args[3]), s1 = PyLong_AsSsize_t(args[4]);
    void *w = PyLong_AsVoidPtr(args[5]);
    void *v = PyLong_AsVoidPtr(args[6]);
    int check = PyObject_IsTrue(args[7]);
    double tol = PyFloat_AsDouble(args[8]), keep = PyFloat_AsDouble(args[9]);
    double keep2 = PyFloat_AsDouble(args[10]);
    double low = PyFloat_AsDouble(args[11]), high = PyFloat_AsDouble(args[12]);
    if (PyErr_Occurred()) return NULL;
    if (kind < 0 || kind > 3 || n < 1 || n >= MAX_N || !a || !w) {
        PyErr_SetString(PyExc_ValueError, "eigh: kind in 0..3, 0 < n < 256, a and w set");
        return NULL;
    }
    if (n > 3 && !api_loaded((int)kind)) return PyLong_FromLong(ST_NOT_LOADED);
    int status;
    if (n >= 16) {
        Py_BEGIN_ALLOW_THREADS status =
            solve((int)kind, (int)n, a, s0, s1, w, v, check, tol, keep, keep2, low, high);
        Py_END_ALLOW_THREADS
    } else {
        status = solve((int)kind, (int)n, a, s0, s1, w, v, check, tol, keep, keep2, low, high);
    }
    return PyLong_FromLong(status);
}

/* eigh_batch(kind, b, n, a, sb, s0, s1, w, v, check, tol, keep, keep2, low, high)
 * -> (status, index): eigh for each of b matrices (batch stride sb, in elements), into
 * w (b, n) and v (b, n, n) column-major per matrix (v = 0: eigenvalues only); stops at the
 * first matrix not OK (index -1 when all are) */
static PyObject *py_eigh_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 15) {
        PyErr_SetString(PyExc_TypeError, "eigh_batch takes 15 arguments");
        return NULL;
    }
    long kind = PyLong_AsLong(args[0]);
    Py_ssize_t b = PyLong_AsSsize_t(args[1]);
    long n = PyLong_AsLong(args[2]);
    const char *a = PyLong_AsVoidPtr(args[3]);
    Py_ssize_t sb = PyLong_AsSsize_t(args[4]), s0 = PyLong_AsSsize_t(args[5]);
    Py_ssize_t s1 = PyLong_AsSsize_t(args[6]);
    char *w = PyLong_AsVoidPtr(args[7]), *v = PyLong_AsVoidPtr(args[8]);
    int check = PyObject_IsTrue(args[9]);
    double tol = PyFloat_AsDouble(args[10]), keep = PyFloat_AsDouble(args[11]);
    double keep2 = PyFloat_AsDouble(args[12]);
    double low = PyFloat_AsDouble(args[13]), high = PyFloat_AsDouble(args[14]);
    if (PyErr_Occurred()) return NULL;
    if (kind < 0 || kind > 3 || b < 0 || n < 1 || n > MAX_BATCH_N || (b > 0 && (!a || !w))) {
        PyErr_SetString(PyExc_ValueError, "eigh_batch: kind in 0..3, 0 < n <= 2048, a and w set");
        return NULL;
    }
    if (n > 3 && !api_loaded((int)kind))
        return Py_BuildValue("(in)", ST_NOT_LOADED, (Py_ssize_t)0);
    Py_ssize_t index = -1;
    int status;
    Py_BEGIN_ALLOW_THREADS status = solve_batch((int)kind, b, (int)n, a, sb, s0, s1, w, v, check,
                                                tol, keep, keep2, low, high, &index);
    Py_END_ALLOW_THREADS return Py_BuildValue("(in)", status, index);
}

/* eigh_pair(kind, count, n, a, b, w, v, closed, by_left, btol, tol, keep, keep2, low,
 * high) -> (status, index): the generalized pairs as pair_batch solves them (a, b, w, v:
 * addresses; v = 0: eigenvalues only); index -1 when every pair is OK */
static PyObject *py_eigh_pair(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 15) {
        PyErr_SetString(PyExc_TypeError, "eigh_pair takes 15 arguments");
        return NULL;
    }
    long kind = PyLong_AsLong(args[0]);
    Py_ssize_t count = PyLong_AsSsize_t(args[1]);
    long n = PyLong_AsLong(args[2]);
    const char *a = PyLong_AsVoidPtr(args[3]), *b = PyLong_AsVoidPtr(args[4]);
    char *w = PyLong_AsVoidPtr(args[5]), *v = PyLong_AsVoidPtr(args[6]);
    int closed = PyObject_IsTrue(args[7]), by_left = PyObject_IsTrue(args[8]);
    double btol = PyFloat_AsDouble(args[9]);
    double tol = PyFloat_AsDouble(args[10]), keep = PyFloat_AsDouble(args[11]);
    double keep2 = PyFloat_AsDouble(args[12]);
    double low = PyFloat_AsDouble(args[13]), high = PyFloat_AsDouble(args[14]);
    if (PyErr_Occurred()) return NULL;
    if (kind < 0 || kind > 3 || count < 0 || n < 1 || n >= MAX_N ||
        (count > 0 && (!a || !b || !w))) {
        PyErr_SetString(PyExc_ValueError, "eigh_pair: kind in 0..3, 0 < n < 256, a, b, w set");
        return NULL;
    }
    if (!api_loaded((int)kind) || !p_potrf[kind] || !p_trsm[kind])
        return Py_BuildValue("(in)", ST_NOT_LOADED, (Py_ssize_t)0);
    Py_ssize_t index = -1;
    int status;
    if (count * n >= 16) {
        Py_BEGIN_ALLOW_THREADS status = pair_batch((int)kind, count, (int)n, a, b, w, v, closed,
                                                   by_left, btol, tol, keep, keep2, low, high,
                                                   &index);
        Py_END_ALLOW_THREADS
    } else {
        status = pair_batch((int)kind, count, (int)n, a, b, w, v, closed, by_left, btol, tol, keep,
                            keep2, low, high, &index);
    }
    return Py_BuildValue("(in)", status, index);
}

/* gauge(kind, n, m, v, tol, keep, keep2, low, high) -> 1 if gauged in place, 0 if left
 * to the Python gauge: the gauge alone, on m column-major columns of n entries at v (the
 * tests feed it the ties and ranges that LAPACK's outputs rarely reach) */
static PyObject *py_gauge(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "gauge takes 9 arguments");
        return NULL;
    }
    long kind = PyLong_AsLong(args[0]);
    Py_ssize_t n = PyLong_AsSsize_t(args[1]), m = PyLong_AsSsize_t(args[2]);
    void *v = PyLong_AsVoidPtr(args[3]);
    double tol = PyFloat_AsDouble(args[4]), keep = PyFloat_AsDouble(args[5]);
    double keep2 = PyFloat_AsDouble(args[6]);
    double low = PyFloat_AsDouble(args[7]), high = PyFloat_AsDouble(args[8]);
    if (PyErr_Occurred()) return NULL;
    if (kind < 0 || kind > 3 || n < 1 || m < 0 || !v) {
        PyErr_SetString(PyExc_ValueError, "gauge: kind in 0..3, n > 0, m >= 0, v set");
        return NULL;
    }
    int done;
    if (n * m >= 4096) { /* a batch's block: other threads run meanwhile */
        Py_BEGIN_ALLOW_THREADS done = gauge((int)kind, v, n, m, tol, keep, keep2, low, high);
        Py_END_ALLOW_THREADS
    } else {
        done = gauge((int)kind, v, n, m, tol, keep, keep2, low, high);
    }
    return PyLong_FromLong(done);
}

/* the block a per-matrix test reads: args[0..6] = kind, b, n, a, sb, s0, s1 (strides in
 * elements); 1 if read and valid, else 0 with the Python error set (named by name) */
typedef struct {
    int kind;
    Py_ssize_t b, n, sb, s0, s1;
    const char *a;
} block_t;

static int block_args(PyObject *const *args, const char *name, block_t *out) {
    long kind = PyLong_AsLong(args[0]);
    out->b = PyLong_AsSsize_t(args[1]);
    out->n = PyLong_AsSsize_t(args[2]);
    out->a = PyLong_AsVoidPtr(args[3]);
    out->sb = PyLong_AsSsize_t(args[4]);
    out->s0 = PyLong_AsSsize_t(args[5]);
    out->s1 = PyLong_AsSsize_t(args[6]);
    if (PyErr_Occurred()) return 0;
    if (kind < 0 || kind > 3 || out->b < 0 || out->n < 0 || (!out->a && out->b * out->n > 0)) {
        PyErr_Format(PyExc_ValueError, "%s: kind in 0..3, b, n >= 0, a set", name);
        return 0;
    }
    out->kind = (int)kind;
    return 1;
}

/* hermitian(kind, b, n, a, sb, s0, s1, finite) -> 1 if each of the b matrices at a
 * (strides sb, s0, s1 in elements) is exactly Hermitian (and, with finite, finite) */
static PyObject *py_hermitian(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    block_t k;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "hermitian takes 8 arguments");
        return NULL;
    }
    if (!block_args(args, "hermitian", &k)) return NULL;
    int finite = PyObject_IsTrue(args[7]);
    int ok = 1;
    const size_t item = ITEM[k.kind];
    Py_BEGIN_ALLOW_THREADS for (Py_ssize_t i = 0; i < k.b && ok; i++) ok =
        check_one(k.kind, k.a + (size_t)(i * k.sb) * item, k.n, k.s0, k.s1, finite);
    Py_END_ALLOW_THREADS return PyLong_FromLong(ok);
}

/* within(kind, b, n, a, sb, s0, s1, tol) -> 1 if each of the b matrices at a is Hermitian
 * within tol (within_one: finite, with a margin below the bound), 0 if any is not certain */
static PyObject *py_within(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    block_t k;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "within takes 8 arguments");
        return NULL;
    }
    if (!block_args(args, "within", &k)) return NULL;
    double tol = PyFloat_AsDouble(args[7]);
    if (PyErr_Occurred()) return NULL;
    int ok = tol < 1.0; /* (a bound of the matrix's own size, or NaN: the torch test decides) */
    const size_t item = ITEM[k.kind];
    Py_BEGIN_ALLOW_THREADS for (Py_ssize_t i = 0; i < k.b && ok; i++) ok =
        within_one(k.kind, k.a + (size_t)(i * k.sb) * item, k.n, k.s0, k.s1, tol);
    Py_END_ALLOW_THREADS return PyLong_FromLong(ok);
}

/* ---- symbolic Cholesky counts (spectra/core/_sparse/_symbolic.py) -------------------- */

/* column counts (the diagonal included) of the Cholesky factor of the symmetric pattern
 * (indptr, indices: CSR, both triangles) in its own order: Liu's elimination tree with path
 * compression, its postorder, Gilbert-Ng-Peyton's row-subtree skeleton; 0 on no memory */
static int column_counts(Py_ssize_t n, const int64_t *indptr, const int64_t *indices,
                         int64_t *delta) {
    int64_t *work = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1) * 8);
    if (work == NULL) return 0;
    int64_t *parent = work, *ancestor = work + n, *head = work + 2 * n, *sibling = work + 3 * n;
    int64_t *post = work + 4 * n, *stack = work + 5 * n, *maxfirst = work + 6 * n;
    int64_t *first = work + 7 * n;
    for (Py_ssize_t k = 0; k < n; k++) parent[k] = ancestor[k] = head[k] = -1;
    for (Py_ssize_t k = 0; k < n; k++) {
        for (int64_t p = indptr[k]; p < indptr[k + 1]; p++) {
            int64_t i = indices[p];
            while (i != -1 && i < k) {
                int64_t next = ancestor[i];
                ancestor[i] = k;
                if (next == -1) parent[i] = k;
                i = next;
            }
        }
    }
    for (Py_ssize_t j = n - 1; j >= 0; j--) {
        if (parent[j] != -1) {
            sibling[j] = head[parent[j]];
            head[parent[j]] = j;
        }
    }
    Py_ssize_t k = 0;
    for (Py_ssize_t root = 0; root < n; root++) {
        if (parent[root] != -1) continue;
        Py_ssize_t top = 0;
        stack[0] = root;
        while (top >= 0) {
            int64_t p = stack[top], child = head[p];
            if (child == -1) {
                top--;
                post[k++] = p;
            } else {
                head[p] = sibling[child];
                stack[++top] = child;
            }
        }
    }
    int64_t *prevleaf = head; /* head is free again */
    for (Py_ssize_t j = 0; j < n; j++) {
        ancestor[j] = j;
        maxfirst[j] = prevleaf[j] = first[j] = -1;
        delta[j] = 0;
    }
    for (Py_ssize_t q = 0; q < n; q++) {
        int64_t j = post[q];
        delta[j] = first[j] == -1 ? 1 : 0;
        while (j != -1 && first[j] == -1) {
            first[j] = q;
            j = parent[j];
        }
    }
    for (Py_ssize_t q = 0; q < n; q++) {
        int64_t j = post[q];
        if (parent[j] != -1) delta[parent[j]] -= 1;
        for (int64_t p = indptr[j]; p < indptr[j + 1]; p++) {
            int64_t i = indices[p];
            if (i <= j || first[j] <= maxfirst[i]) continue; /* not a leaf of row i's subtree */
            maxfirst[i] = first[j];
            int64_t jprev = prevleaf[i];
            prevleaf[i] = j;
            delta[j] += 1;
            if (jprev != -1) { /* a later leaf: the least common ancestor's overlap goes */
                int64_t r = jprev;
                while (r != ancestor[r]) r = ancestor[r];
                int64_t t = jprev;
                while (t != r) {
                    int64_t up = ancestor[t];
                    ancestor[t] = r;
                    t = up;
                }
                delta[r] -= 1;
            }
        }
        if (parent[j] != -1) ancestor[j] = parent[j];
    }
    for (Py_ssize_t q = 0; q < n; q++) {
        int64_t j = post[q];
        if (parent[j] != -1) delta[parent[j]] += delta[j];
    }
    free(work);
    return 1;
}

/* column_counts(n, indptr, indices, out) -> 1 (0: no memory); int64 arrays at those
 * addresses, out of length n */
static PyObject *py_column_counts(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "column_counts takes 4 arguments");
        return NULL;
    }
    Py_ssize_t n = PyLong_AsSsize_t(args[0]);
    const int64_t *indptr = PyLong_AsVoidPtr(args[1]), *indices = PyLong_AsVoidPtr(args[2]);
    int64_t *out = PyLong_AsVoidPtr(args[3]);
    if (PyErr_Occurred()) return NULL;
    if (n < 0 || (n > 0 && (!indptr || !out))) {
        PyErr_SetString(PyExc_ValueError, "column_counts: n >= 0, arrays set");
        return NULL;
    }
    int ok;
    Py_BEGIN_ALLOW_THREADS ok = column_counts(n, indptr, indices, out);
    Py_END_ALLOW_THREADS return PyLong_FromLong(ok);
}

/* mirror_exact(kind, n, m, rows, cols, values) -> 1 if proven exactly Hermitian, else 0
 * (spectra_mirror_exact; addresses as ints, int64 indices) */
static PyObject *py_mirror_exact(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "mirror_exact takes 6 arguments");
        return NULL;
    }
    long kind = PyLong_AsLong(args[0]);
    Py_ssize_t n = PyLong_AsSsize_t(args[1]), m = PyLong_AsSsize_t(args[2]);
    const int64_t *rows = PyLong_AsVoidPtr(args[3]), *cols = PyLong_AsVoidPtr(args[4]);
    const void *values = PyLong_AsVoidPtr(args[5]);
    if (PyErr_Occurred()) return NULL;
    if (m > 0 && (!rows || !cols || !values)) {
        PyErr_SetString(PyExc_ValueError, "mirror_exact: arrays set");
        return NULL;
    }
    int ok;
    Py_BEGIN_ALLOW_THREADS ok = spectra_mirror_exact((int)kind, n, m, rows, cols, values);
    Py_END_ALLOW_THREADS return PyLong_FromLong(ok);
}

/* components(n, m, src, dst, labels) -> count (-1: no memory or an index out of range) */
static PyObject *py_components(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "components takes 5 arguments");
        return NULL;
    }
    Py_ssize_t n = PyLong_AsSsize_t(args[0]), m = PyLong_AsSsize_t(args[1]);
    const int64_t *src = PyLong_AsVoidPtr(args[2]), *dst = PyLong_AsVoidPtr(args[3]);
    int64_t *labels = PyLong_AsVoidPtr(args[4]);
    if (PyErr_Occurred()) return NULL;
    if ((m > 0 && (!src || !dst)) || (n > 0 && !labels)) {
        PyErr_SetString(PyExc_ValueError, "components: arrays set");
        return NULL;
    }
    int64_t count;
    Py_BEGIN_ALLOW_THREADS count = spectra_components(n, m, src, dst, labels);
    Py_END_ALLOW_THREADS return PyLong_FromLongLong(count);
}

/* bisect(single, n, d, e, il, iu, w, iblock, isplit) -> spectra_bisect's result (addresses
 * as ints; iblock and isplit int32) */
static PyObject *py_bisect(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "bisect takes 9 arguments");
        return NULL;
    }
    long single = PyLong_AsLong(args[0]);
    Py_ssize_t n = PyLong_AsSsize_t(args[1]);
    const void *d = PyLong_AsVoidPtr(args[2]), *e = PyLong_AsVoidPtr(args[3]);
    Py_ssize_t il = PyLong_AsSsize_t(args[4]), iu = PyLong_AsSsize_t(args[5]);
    void *w = PyLong_AsVoidPtr(args[6]);
    int *iblock = PyLong_AsVoidPtr(args[7]), *isplit = PyLong_AsVoidPtr(args[8]);
    if (PyErr_Occurred()) return NULL;
    if (!d || !w || !iblock || !isplit || (n > 1 && !e)) {
        PyErr_SetString(PyExc_ValueError, "bisect: arrays set");
        return NULL;
    }
    Py_ssize_t status;
    Py_BEGIN_ALLOW_THREADS status = spectra_bisect((int)single, n, d, e, il, iu, w, iblock, isplit);
    Py_END_ALLOW_THREADS return PyLong_FromSsize_t(status);
}

/* window_load(kind, trd, stein, mtr) -> 1 if all three set (addresses as ints) */
static PyObject *py_window_load(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "window_load takes 4 arguments");
        return NULL;
    }
    long kind = PyLong_AsLong(args[0]);
    void *trd = PyLong_AsVoidPtr(args[1]), *stein = PyLong_AsVoidPtr(args[2]);
    void *mtr = PyLong_AsVoidPtr(args[3]);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromLong(spectra_window_load((int)kind, trd, stein, mtr));
}

/* window_batch(kind, b, n, lo, hi, a, sb, s0, s1, w, wb, v, vb, v0, v1, declined) ->
 * the number declined (their indices at declined, int64), or -1 */
static PyObject *py_window_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 16) {
        PyErr_SetString(PyExc_TypeError, "window_batch takes 16 arguments");
        return NULL;
    }
    Py_ssize_t x[16];
    for (int i = 0; i < 16; i++) {
        x[i] = PyLong_AsSsize_t(args[i]);
    }
    if (PyErr_Occurred()) return NULL;
    const void *a = (const void *)(intptr_t)x[5];
    void *w = (void *)(intptr_t)x[9], *v = (void *)(intptr_t)x[11];
    ptrdiff_t *declined = (ptrdiff_t *)(intptr_t)x[15];
    if (!a || !w || !v || !declined) {
        PyErr_SetString(PyExc_ValueError, "window_batch: arrays set");
        return NULL;
    }
    Py_ssize_t count;
    Py_BEGIN_ALLOW_THREADS count = spectra_window_batch(
        (int)x[0], x[1], (int)x[2], (int)x[3], (int)x[4], a, x[6], x[7], x[8], w, x[10], v,
        x[12], x[13], x[14], declined);
    Py_END_ALLOW_THREADS return PyLong_FromSsize_t(count);
}

/* load(path) -> number of routines found in the library at path (already loaded by
 * torch; its dependencies are searched too) */
static PyObject *py_load(PyObject *self, PyObject *arg) {
    (void)self;
    const char *path = PyUnicode_AsUTF8(arg);
    if (path == NULL) return NULL;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (lib == NULL) return PyLong_FromLong(0);
    p_ssyevd = (syevd_s)dlsym(lib, "ssyevd_");
    p_dsyevd = (syevd_d)dlsym(lib, "dsyevd_");
    p_cheevd = (heevd_c)dlsym(lib, "cheevd_");
    p_zheevd = (heevd_z)dlsym(lib, "zheevd_");
    p_max_threads = (max_threads_fn)dlsym(lib, "MKL_Get_Max_Threads");
    static const char *const potrf_names[4] = {"spotrf_", "dpotrf_", "cpotrf_", "zpotrf_"};
    static const char *const trsm_names[4] = {"strsm_", "dtrsm_", "ctrsm_", "ztrsm_"};
    for (int k = 0; k < 4; k++) {
        p_potrf[k] = (potrf_fn)dlsym(lib, potrf_names[k]);
        p_trsm[k] = (trsm_fn)dlsym(lib, trsm_names[k]);
    }
    memset(ws_known, 0, sizeof ws_known);
    long found = (p_ssyevd != NULL) + (p_dsyevd != NULL) + (p_cheevd != NULL) +
                 (p_zheevd != NULL);
    return PyLong_FromLong(found);
}

/* lanes() -> the addresses of spectra_sytrd_lanes_s, _d, spectra_ormtr_lanes_s, _d and
 * the complex reductions spectra_hetrd_lanes_c, _z,
 * for the twisted kernel, which calls them as it calls LAPACK (_native_lanes.c) */
static PyObject *py_lanes(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return Py_BuildValue("(KKKKKK)", (unsigned long long)(uintptr_t)&spectra_sytrd_lanes_s,
                         (unsigned long long)(uintptr_t)&spectra_sytrd_lanes_d,
                         (unsigned long long)(uintptr_t)&spectra_ormtr_lanes_s,
                         (unsigned long long)(uintptr_t)&spectra_ormtr_lanes_d,
                         (unsigned long long)(uintptr_t)&spectra_hetrd_lanes_c,
                         (unsigned long long)(uintptr_t)&spectra_hetrd_lanes_z);
}

/* the per-matrix check and the block gauge of the C++ entry's table (below), which the
 * twisted kernel calls on each block of eight as it solves it (its fused pass) */
static int api_hermitian(int kind, const void *a, ptrdiff_t n, ptrdiff_t s0, ptrdiff_t s1,
                         int finite);
static int api_gauge(int kind, void *v, ptrdiff_t n, ptrdiff_t m, double tol, double keep,
                     double keep2, double low, double high);

/* passes() -> the addresses of api_hermitian and api_gauge */
static PyObject *py_passes(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return Py_BuildValue("(KK)", (unsigned long long)(uintptr_t)&api_hermitian,
                         (unsigned long long)(uintptr_t)&api_gauge);
}

static PyMethodDef methods[] = {
    {"eigh", (PyCFunction)(void (*)(void))py_eigh, METH_FASTCALL,
     "eigh(kind, n, a, s0, s1, w, v, check, tol, keep, keep2, low, high) -> status"},
    {"column_counts", (PyCFunction)(void (*)(void))py_column_counts, METH_FASTCALL,
     "column_counts(n, indptr, indices, out) -> 1 (0: no memory)"},
    {"eigh_batch", (PyCFunction)(void (*)(void))py_eigh_batch, METH_FASTCALL,
     "eigh_batch(kind, b, n, a, sb, s0, s1, w, v, check, tol, keep, keep2, low, high)"
     " -> (status, index)"},
    {"eigh_pair", (PyCFunction)(void (*)(void))py_eigh_pair, METH_FASTCALL,
     "eigh_pair(kind, count, n, a, b, w, v, closed, by_left, btol, tol, keep, keep2, low, high)"
     " -> (status, index)"},
    {"gauge", (PyCFunction)(void (*)(void))py_gauge, METH_FASTCALL,
     "gauge(kind, n, m, v, tol, keep, keep2, low, high) -> 1 if gauged"},
    {"hermitian", (PyCFunction)(void (*)(void))py_hermitian, METH_FASTCALL,
     "hermitian(kind, b, n, a, sb, s0, s1, finite) -> 1 if exactly Hermitian"},
    {"bisect", (PyCFunction)(void (*)(void))py_bisect, METH_FASTCALL,
     "bisect(single, n, d, e, il, iu, w, iblock, isplit) -> blocks (< 0: not served)"},
    {"window_load", (PyCFunction)(void (*)(void))py_window_load, METH_FASTCALL,
     "window_load(kind, trd, stein, mtr) -> 1 if set"},
    {"window_batch", (PyCFunction)(void (*)(void))py_window_batch, METH_FASTCALL,
     "window_batch(kind, b, n, lo, hi, a, sb, s0, s1, w, wb, v, vb, v0, v1, declined)"
     " -> declined count (-1: not run)"},
    {"mirror_exact", (PyCFunction)(void (*)(void))py_mirror_exact, METH_FASTCALL,
     "mirror_exact(kind, n, m, rows, cols, values) -> 1 if exactly Hermitian (0: not decided)"},
    {"within", (PyCFunction)(void (*)(void))py_within, METH_FASTCALL,
     "within(kind, b, n, a, sb, s0, s1, tol) -> 1 if Hermitian within tol (0: not certain)"},
    {"components", (PyCFunction)(void (*)(void))py_components, METH_FASTCALL,
     "components(n, m, src, dst, labels) -> count (-1: not run)"},
    {"load", py_load, METH_O, "load(path) -> routines found"},
    {"lanes", py_lanes, METH_NOARGS,
     "lanes() -> addresses of the eight-lane ?sytrd, ?ormtr (s, d) and ?hetrd (c, z)"},
    {"passes", py_passes, METH_NOARGS,
     "passes() -> addresses of the per-matrix exact-Hermitian check and the block gauge"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native_eigh",
    "One small eigendecomposition in one compiled call (see _native.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

/* ---- the C++ entry's table (_native_entry.cpp) -------------------------------------- */

static int api_eigh(int kind, int n, const void *a, ptrdiff_t s0, ptrdiff_t s1, void *w,
                    void *v, int check, double tol, double keep, double keep2, double low,
                    double high) {
    if (kind < 0 || kind > 3 || n < 1 || n >= MAX_N) return ST_REJECTED;
    if (n > 3 && !api_loaded(kind)) return ST_NOT_LOADED;
    return solve(kind, n, a, s0, s1, w, v, check, tol, keep, keep2, low, high);
}

static int api_hermitian(int kind, const void *a, ptrdiff_t n, ptrdiff_t s0, ptrdiff_t s1,
                         int finite) {
    return kind >= 0 && kind <= 3 && check_one(kind, a, n, s0, s1, finite);
}

static int api_gauge(int kind, void *v, ptrdiff_t n, ptrdiff_t m, double tol, double keep,
                     double keep2, double low, double high) {
    return kind >= 0 && kind <= 3 && gauge(kind, v, n, m, tol, keep, keep2, low, high);
}

static int api_eigh_batch(int kind, ptrdiff_t b, int n, const void *a, ptrdiff_t sb,
                          ptrdiff_t s0, ptrdiff_t s1, void *w, void *v, int check, double tol,
                          double keep, double keep2, double low, double high,
                          ptrdiff_t *index) {
    *index = 0;
    if (kind < 0 || kind > 3 || b < 0 || n < 1 || n > MAX_BATCH_N) return ST_REJECTED;
    if (n > 3 && !api_loaded(kind)) return ST_NOT_LOADED;
    Py_ssize_t at = -1;
    int status = solve_batch(kind, b, n, (const char *)a, sb, s0, s1, (char *)w, (char *)v,
                             check, tol, keep, keep2, low, high, &at);
    *index = at;
    return status;
}

static spectra_native_api api_table = {SPECTRA_NATIVE_API_VERSION, api_eigh, api_loaded,
                                       api_hermitian, api_gauge, api_eigh_batch};

PyMODINIT_FUNC PyInit__native_eigh(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    PyObject *capsule = PyCapsule_New(&api_table, "spectra.core._solvers._native_eigh.api", NULL);
    if (capsule == NULL || PyModule_AddObject(m, "api", capsule) < 0) {
        Py_XDECREF(capsule);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
