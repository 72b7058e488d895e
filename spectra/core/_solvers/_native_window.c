/* Eigenpairs lo..hi-1 of each matrix of a block by the steps of ?syevr, its bisection the
 * helper's (_native_bisect.c), in one call without the GIL (_lapack_subset.py).
 *
 * Per matrix: the C-order input is copied (conjugated if complex) into a buffer that
 * LAPACK reads column-major, upper triangle, which is the matrix itself (as the ctypes
 * ?syevr route copies it); ?sytrd/?hetrd reduces it, spectra_bisect finds the wanted
 * values and their blocks, ?stein their vectors, ?ormtr/?unmtr transforms them back, and
 * the pairs are written in ascending order. The LAPACK routines are the LAPACKE _work
 * entry points of the library SciPy ships, handed over by address (spectra_window_load).
 * A matrix where a step declines is reported, not written: the caller runs ?syevr on it. */
#include <stdlib.h>
#include <string.h>

#include "_native_eigh.h"

#define COL_MAJOR 102

typedef int (*trd_f)(int, char, int, void *, int, void *, void *, void *, void *, int);
typedef int (*stein_f)(int, int, const void *, const void *, int, const void *, const int *,
                       const int *, void *, int, void *, int *, int *);
typedef int (*mtr_f)(int, char, char, char, int, int, const void *, int, const void *, void *,
                     int, void *, int);

static trd_f p_trd[4];
static stein_f p_stein[4];
static mtr_f p_mtr[4];

static const size_t ITEM[4] = {sizeof(float), sizeof(double), 2 * sizeof(float),
                               2 * sizeof(double)};

int spectra_window_load(int kind, void *trd, void *stein, void *mtr) {
    if (kind < 0 || kind > 3) return 0;
    p_trd[kind] = (trd_f)trd;
    p_stein[kind] = (stein_f)stein;
    p_mtr[kind] = (mtr_f)mtr;
    return trd != NULL && stein != NULL && mtr != NULL;
}

int spectra_window_loaded(int kind) {
    return kind >= 0 && kind <= 3 && p_trd[kind] && p_stein[kind] && p_mtr[kind];
}

/* the conjugated copy of a complex C-order matrix (R: its real type) */
#define DEFINE_CONJ_COPY(NAME, R)                                                         \
    static void NAME(R *y, const R *x, ptrdiff_t n, ptrdiff_t s0, ptrdiff_t s1) {         \
        for (ptrdiff_t r = 0; r < n; r++)                                                 \
            for (ptrdiff_t c = 0; c < n; c++) {                                           \
                const R *z = x + 2 * (r * s0 + c * s1);                                   \
                y[2 * (r * n + c)] = z[0];                                                \
                y[2 * (r * n + c) + 1] = -z[1];                                           \
            }                                                                             \
    }
DEFINE_CONJ_COPY(conj_copy_c, float)
DEFINE_CONJ_COPY(conj_copy_z, double)

/* the buffer LAPACK reads: the C-order matrix at a (strides s0, s1, in items), conjugated
 * if complex */
static void copy_in(int kind, void *buf, const void *a, ptrdiff_t n, ptrdiff_t s0,
                    ptrdiff_t s1) {
    if (kind >= 2) {
        if (kind == 2) conj_copy_c(buf, a, n, s0, s1);
        else conj_copy_z(buf, a, n, s0, s1);
        return;
    }
    size_t item = ITEM[kind];
    for (ptrdiff_t r = 0; r < n; r++) {
        const char *row = (const char *)a + (size_t)(r * s0) * item;
        char *out = (char *)buf + (size_t)(r * n) * item;
        if (s1 == 1) memcpy(out, row, (size_t)n * item);
        else
            for (ptrdiff_t c = 0; c < n; c++)
                memcpy(out + (size_t)c * item, row + (size_t)(c * s1) * item, item);
    }
}

/* scratch for one block: every matrix in the same buffers (its bits do not depend on its
 * place in the batch) */
typedef struct {
    void *a, *d, *e, *tau, *work, *rwork, *values, *z;
    int *iblock, *isplit, *ifail, *iwork, *order;
    int lwork;
} window_t;

static void window_free(window_t *s) {
    free(s->a), free(s->d), free(s->e), free(s->tau), free(s->work), free(s->rwork);
    free(s->values), free(s->z), free(s->iblock), free(s->isplit), free(s->ifail);
    free(s->iwork), free(s->order);
}

/* the size a workspace query wrote (its first entry, real part: float or double) */
static int query_size(int kind, const double *query) {
    return kind == 0 || kind == 2 ? (int)((const float *)query)[0] : (int)query[0];
}

static int window_alloc(window_t *s, int kind, int n, int m) {
    size_t item = ITEM[kind], real = kind == 0 || kind == 2 ? sizeof(float) : sizeof(double);
    size_t nn = (size_t)n;
    memset(s, 0, sizeof *s);
    s->a = malloc(item * nn * nn);
    s->d = malloc(real * nn);
    s->e = malloc(real * (nn > 1 ? nn - 1 : 1));
    s->tau = malloc(item * (nn > 1 ? nn - 1 : 1));
    s->rwork = malloc(real * 5 * nn);
    s->values = malloc(real * (size_t)m);
    s->z = malloc(item * nn * (size_t)m);
    s->iblock = malloc(sizeof(int) * (size_t)m);
    s->isplit = malloc(sizeof(int) * nn);
    s->ifail = malloc(sizeof(int) * (size_t)m);
    s->iwork = malloc(sizeof(int) * nn);
    s->order = malloc(sizeof(int) * (size_t)m);
    if (!s->a || !s->d || !s->e || !s->tau || !s->rwork || !s->values || !s->z || !s->iblock ||
        !s->isplit || !s->ifail || !s->iwork || !s->order)
        return 0;
    double query[4] = {0, 0, 0, 0}; /* room for one complex double */
    int lwork = 1, q;
    if (p_trd[kind](COL_MAJOR, 'U', n, s->a, n, s->d, s->e, s->tau, query, -1) != 0) return 0;
    q = query_size(kind, query);
    lwork = q > lwork ? q : lwork;
    if (p_mtr[kind](COL_MAJOR, 'L', 'U', 'N', n, m, s->a, n, s->tau, s->z, n, query, -1) != 0)
        return 0;
    q = query_size(kind, query);
    lwork = q > lwork ? q : lwork;
    s->lwork = lwork;
    s->work = malloc(item * (size_t)lwork);
    return s->work != NULL;
}

/* one matrix, already in s->a: 1 if its pairs are in s->values / s->z with s->order
 * their ascending order, 0 if a step declined */
static int window_one(window_t *s, int kind, int n, int lo, int hi) {
    int m = hi - lo, single = kind == 0 || kind == 2;
    if (p_trd[kind](COL_MAJOR, 'U', n, s->a, n, s->d, s->e, s->tau, s->work, s->lwork) != 0)
        return 0;
    ptrdiff_t blocks =
        spectra_bisect(single, n, s->d, s->e, lo + 1, hi, s->values, s->iblock, s->isplit);
    if (blocks < 0) return 0;
    if (p_stein[kind](COL_MAJOR, n, s->d, s->e, m, s->values, s->iblock, s->isplit, s->z, n,
                      s->rwork, s->iwork, s->ifail) != 0)
        return 0;
    if (p_mtr[kind](COL_MAJOR, 'L', 'U', 'N', n, m, s->a, n, s->tau, s->z, n, s->work,
                    s->lwork) != 0)
        return 0;
    for (int j = 0; j < m; j++) s->order[j] = j;
    if (blocks > 1) /* ?stein's order is by block: ascending, stable on ties */
        for (int j = 1; j < m; j++)
            for (int k = j; k > 0; k--) {
                int x = s->order[k], y = s->order[k - 1];
                int less = single ? ((float *)s->values)[x] < ((float *)s->values)[y]
                                  : ((double *)s->values)[x] < ((double *)s->values)[y];
                if (!less) break;
                s->order[k] = y;
                s->order[k - 1] = x;
            }
    return 1;
}

/* the b matrices at a (batch stride sb, strides s0, s1; items): pairs lo..hi-1 into w
 * (batch stride wb, contiguous values) and v (batch stride vb, strides v0, v1); returns
 * the number of matrices declined, their indices in declined (room for b), or -1 (no
 * memory, nothing written) */
ptrdiff_t spectra_window_batch(int kind, ptrdiff_t b, int n, int lo, int hi, const void *a,
                               ptrdiff_t sb, ptrdiff_t s0, ptrdiff_t s1, void *w, ptrdiff_t wb,
                               void *v, ptrdiff_t vb, ptrdiff_t v0, ptrdiff_t v1,
                               ptrdiff_t *declined) {
    if (!spectra_window_loaded(kind) || n < 1 || lo < 0 || hi <= lo || hi > n) return -1;
    int m = hi - lo;
    window_t s;
    if (!window_alloc(&s, kind, n, m)) {
        window_free(&s);
        return -1;
    }
    size_t item = ITEM[kind], real = kind == 0 || kind == 2 ? sizeof(float) : sizeof(double);
    ptrdiff_t count = 0;
    for (ptrdiff_t i = 0; i < b; i++) {
        copy_in(kind, s.a, (const char *)a + (size_t)(i * sb) * item, n, s0, s1);
        if (!window_one(&s, kind, n, lo, hi)) {
            declined[count++] = i;
            continue;
        }
        char *wi = (char *)w + (size_t)(i * wb) * real;
        char *vi = (char *)v + (size_t)(i * vb) * item;
        for (int j = 0; j < m; j++) {
            int src = s.order[j];
            memcpy(wi + (size_t)j * real, (char *)s.values + (size_t)src * real, real);
            const char *col = (const char *)s.z + (size_t)src * (size_t)n * item;
            char *out = vi + (size_t)(j * v1) * item;
            if (v0 == 1) memcpy(out, col, (size_t)n * item);
            else
                for (int r = 0; r < n; r++)
                    memcpy(out + (size_t)(r * v0) * item, col + (size_t)r * item, item);
        }
    }
    window_free(&s);
    return count;
}
