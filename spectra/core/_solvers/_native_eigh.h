/* What the compiled helper's sources share (_native_eigh.c, _native_closed_form.c) and
 * what it hands the C++ entry (_native_entry.cpp) through the capsule
 * "spectra.core._solvers._native_eigh.api". */
#ifndef SPECTRA_NATIVE_EIGH_H
#define SPECTRA_NATIVE_EIGH_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* status codes, mirrored in _native.py */
#define ST_OK 0
#define ST_REJECTED 1  /* not exactly Hermitian, or not finite: the Python route decides */
#define ST_FAILED 2    /* LAPACK's info, or non-finite eigenvalues */
#define ST_UNGAUGED 3  /* eigenpairs written, the gauge left to the Python route */
#define ST_NOT_LOADED 4
#define ST_NO_MEMORY 5

/* n = 1..3 (kind 0: float32, 1: float64, 2: complex64, 3: complex128): eigenvalues at w,
 * eigenvectors (column j = vector j, column-major) at v unless NULL, not yet in the
 * gauge; 0 if not served */
int spectra_closed_form(int kind, int n, const void *a, ptrdiff_t s0, ptrdiff_t s1, void *w,
                        void *v);

/* eigenvalues il..iu (1-based) of the symmetric tridiagonal matrix (diagonal d,
 * off-diagonal e; float if single, else double) into w, with each one's block (iblock,
 * 1-based) and the blocks' last rows (isplit, room for n), as LAPACK's ?stebz gives them
 * to ?stein (_native_bisect.c): the number of blocks, or < 0 where it declines (see there) */
ptrdiff_t spectra_bisect(int single, ptrdiff_t n, const void *d, const void *e, ptrdiff_t il,
                         ptrdiff_t iu, void *w, int *iblock, int *isplit);

/* the partial solve's chain (_native_window.c): the LAPACKE _work entry points of ?sytrd,
 * ?stein, ?ormtr (or their complex forms) for kind, then blocks of matrices */
int spectra_window_load(int kind, void *trd, void *stein, void *mtr);
int spectra_window_loaded(int kind);
ptrdiff_t spectra_window_batch(int kind, ptrdiff_t b, int n, int lo, int hi, const void *a,
                               ptrdiff_t sb, ptrdiff_t s0, ptrdiff_t s1, void *w, ptrdiff_t wb,
                               void *v, ptrdiff_t vb, ptrdiff_t v0, ptrdiff_t v1,
                               ptrdiff_t *declined);

/* the checks over a sparse matrix's entry list (_native_edges.c, int64 indices): 1 if
 * every off-diagonal entry has its mirror with the conjugate value exactly and no pair is
 * given twice, else 0 (not decided); the connected components of the entries' graph, each
 * node's label at labels (numbered by smallest node): their count, or -1 (no memory, an
 * index out of range) */
int spectra_mirror_exact(int kind, int64_t n, int64_t m, const int64_t *rows,
                         const int64_t *cols, const void *values);
int64_t spectra_components(int64_t n, int64_t m, const int64_t *src, const int64_t *dst,
                           int64_t *labels);

/* m <= 8 real symmetric n x n matrices at a (C-ordered, one after another, lower
 * triangle read) reduced to tridiagonal form as ?sytrd 'U' reduces their column-major
 * view (_native_lanes.c): reflectors into h (m x n x n, ?sytrd's layout), tau, diagonal d
 * and off-diagonal e (m x n each); work: (n (n + 1) / 2 + 3 n) * 8 entries. 0, or -1 for
 * bad sizes */
int spectra_sytrd_lanes_s(int n, int m, const float *a, float *work, float *h, float *tau,
                          float *d, float *e);
int spectra_sytrd_lanes_d(int n, int m, const double *a, double *work, double *h,
                          double *tau, double *d, double *e);
/* their eigenvectors z (m x n x n, z[l][k] the k-th vector of matrix l) multiplied by Q in
 * place, as ?ormtr 'L', 'U', 'N' does with those reflectors; work: (n (n + 1) / 2 + 9 n)
 * * 8 entries */
int spectra_ormtr_lanes_s(int n, int m, const float *h, const float *tau, float *z,
                          float *work);
int spectra_ormtr_lanes_d(int n, int m, const double *h, const double *tau, double *z,
                          double *work);
/* the reduction of complex Hermitian matrices (?hetrd 'U'): a, h and tau complex (re, im
 * interleaved), d and e real; work: (n (n + 1) + 6 n) * 8 real entries */
int spectra_hetrd_lanes_c(int n, int m, const float *a, float *work, float *h, float *tau,
                          float *d, float *e);
int spectra_hetrd_lanes_z(int n, int m, const double *a, double *work, double *h,
                          double *tau, double *d, double *e);

#define SPECTRA_NATIVE_API_VERSION 3
typedef struct {
    int version;
    /* one matrix as the direct path solves it (the closed form for n <= 3, LAPACK
     * otherwise), with the checks and the gauge: a status */
    int (*eigh)(int kind, int n, const void *a, ptrdiff_t s0, ptrdiff_t s1, void *w, void *v,
                int check, double tol, double keep, double keep2, double low, double high);
    /* whether torch's LAPACK routines were found (load) */
    int (*loaded)(int kind);
    /* 1 if the n x n matrix at a equals its conjugate transpose entry for entry (and, with
     * finite, every entry is finite) */
    int (*hermitian)(int kind, const void *a, ptrdiff_t n, ptrdiff_t s0, ptrdiff_t s1,
                     int finite);
    /* the gauge of m column-major columns of n entries at v, in place: 1 if gauged */
    int (*gauge)(int kind, void *v, ptrdiff_t n, ptrdiff_t m, double tol, double keep,
                 double keep2, double low, double high);
    /* b matrices at a (batch stride sb) as eigh solves each one, into w (b, n) and v
     * (b, n, n) column-major per matrix (NULL: eigenvalues only): a status; the first
     * matrix not OK stops it (its index at *index) */
    int (*eigh_batch)(int kind, ptrdiff_t b, int n, const void *a, ptrdiff_t sb, ptrdiff_t s0,
                      ptrdiff_t s1, void *w, void *v, int check, double tol, double keep,
                      double keep2, double low, double high, ptrdiff_t *index);
} spectra_native_api;

#ifdef __cplusplus
}
#endif
#endif
