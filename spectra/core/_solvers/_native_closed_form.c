/* The closed forms of real 1x1, 2x2 and 3x3 symmetric matrices for one matrix at a time
 * (and of complex Hermitian ones, reduced to real ones first: complex_small below):
 * spectra/core/_solvers/_kernels/_numba_closed_form.py (``sym2``, ``lanes3``, the gauge)
 * written again in C, operation for operation and in the same order, so that one matrix
 * here and a batch in numba's lanes give the same bits (tests/core/test_native_closed_form.py).
 *
 * Only + - * /, sqrt, comparisons and exact power-of-two scaling are used; the file is
 * compiled with -ffp-contract=off (no fused multiply-add) like numba's code without
 * fastmath, and every max/min is Python's (the first argument unless the second compares
 * greater/smaller), as numba's builtins are. float32 input is solved in float64 and
 * rounded, and the gauge is decided on the rounded output, as the numba kernels do.
 */
#include <math.h>
#include <stddef.h>

#include "_native_eigh.h"

#define TINY 0x1p-900 /* a 3x3 whose largest entry is below TINY is scaled by UP first */
#define UP 0x1p600

static double pmax(double a, double b) { return b > a ? b : a; }
static double pmin(double a, double b) { return b < a ? b : a; }

/* 2^e with m / 2^e in [1, 2); 1 for 0, m itself for Inf/NaN */
static double pow2(double m) {
    if (m == 0.0 || !isfinite(m)) return m == 0.0 ? 1.0 : m;
    int e;
    (void)frexp(m, &e);
    return ldexp(1.0, e - 1);
}

/* one Newton step on 4x^3 - 3x - r */
static double newton(double x, double r) {
    double x2 = x * x;
    return x - (x * (4.0 * x2 - 3.0) - r) / (12.0 * x2 - 3.0);
}

/* eigenpairs of [[a, b], [b, d]]: out = (w1, w2, x, y), v2 = (x, y), v1 = (-y, x) */
static void eig2(double a, double b, double d, double out[4]) {
    double h = 0.5 * (a - d);
    double mid = 0.5 * (a + d);
    double sc = pmax(fabs(h), fabs(b));
    sc = sc > 0.0 ? sc : 1.0;
    h = h / sc;
    b = b / sc;
    double r = sqrt(h * h + b * b);
    int pos = h >= 0;
    double x = pos ? h + r : b;
    double y = pos ? b : r - h;
    double nrm = sqrt(x * x + y * y);
    int zero = nrm == 0.0;
    double inv = 1.0 / (zero ? 1.0 : nrm);
    x = zero ? 1.0 : x * inv;
    y = zero ? 0.0 : y * inv;
    out[0] = mid - r * sc;
    out[1] = mid + r * sc;
    out[2] = x;
    out[3] = y;
}

/* the 3x3 closed form (numba's lanes3 for one lane): d diagonal, o = (o01, o02, o12)
 * -> w (3) and vectors (9: entry i of vector j at 3 j + i) */
static void eig3(const double dd[3], const double oo[3], double w[3], double vec[9]) {
    double d0 = dd[0], d1 = dd[1], d2 = dd[2], o01 = oo[0], o02 = oo[1], o12 = oo[2];
    double s = pmax(pmax(pmax(pmax(pmax(fabs(d0), fabs(d1)), fabs(d2)), fabs(o01)), fabs(o02)),
                    fabs(o12));
    s = s > 0.0 ? s : 1.0;
    double f = s < TINY ? UP : 1.0;
    double inv = 1.0 / (s * f);
    d0 = (d0 * f) * inv, d1 = (d1 * f) * inv, d2 = (d2 * f) * inv;
    o01 = (o01 * f) * inv, o02 = (o02 * f) * inv, o12 = (o12 * f) * inv;
    double q = (d0 + d1 + d2) / 3.0;
    d0 = d0 - q, d1 = d1 - q, d2 = d2 - q;
    double t = pmax(pmax(pmax(pmax(pmax(fabs(d0), fabs(d1)), fabs(d2)), fabs(o01)), fabs(o02)),
                    fabs(o12));
    int flat = t == 0.0;
    t = flat ? 1.0 : t;
    inv = 1.0 / t;
    d0 = d0 * inv, d1 = d1 * inv, d2 = d2 * inv;
    o01 = o01 * inv, o02 = o02 * inv, o12 = o12 * inv;
    double p2 = (d0 * d0 + d1 * d1 + d2 * d2) + 2.0 * (o01 * o01 + o02 * o02 + o12 * o12);
    double p = sqrt(p2 / 6.0);
    p = flat ? 1.0 : p;
    double det = d0 * d1 * d2 + 2.0 * (o01 * o12 * o02) - d0 * (o12 * o12) - d1 * (o02 * o02) -
                 d2 * (o01 * o01);
    double r = det / (2.0 * p * p * p);
    int top = r >= 0;
    double xr = 1.0;
    double ra = pmin(fabs(r), 1.0);
    for (int i = 0; i < 6; i++) xr = newton(xr, ra);
    double far = (top ? 2.0 * xr : -2.0 * xr) * p;
    far = flat ? 0.0 : far;
    /* eigenvector of far: the largest cross product of two rows of B - far I */
    double r00 = d0 - far, r11 = d1 - far, r22 = d2 - far;
    double c0 = o01 * o12 - o02 * r11, c1 = o02 * o01 - r00 * o12, c2 = r00 * r11 - o01 * o01;
    double e0 = o01 * r22 - o02 * o12, e1 = o02 * o02 - r00 * r22, e2 = r00 * o12 - o01 * o02;
    double f0 = r11 * r22 - o12 * o12, f1 = o12 * o02 - o01 * r22, f2 = o01 * o12 - r11 * o02;
    double n01 = c0 * c0 + c1 * c1 + c2 * c2;
    double n02 = e0 * e0 + e1 * e1 + e2 * e2;
    double n12 = f0 * f0 + f1 * f1 + f2 * f2;
    int b = n02 > n01;
    c0 = b ? e0 : c0, c1 = b ? e1 : c1, c2 = b ? e2 : c2;
    n01 = b ? n02 : n01;
    b = n12 > n01;
    c0 = b ? f0 : c0, c1 = b ? f1 : c1, c2 = b ? f2 : c2;
    n01 = b ? n12 : n01;
    inv = 1.0 / sqrt(flat ? 1.0 : n01);
    double v0 = flat ? 1.0 : c0 * inv, v1 = flat ? 0.0 : c1 * inv, v2 = flat ? 0.0 : c2 * inv;
    /* orthonormal complement (u, z) of v */
    b = v0 * v0 >= v1 * v1;
    double u0 = b ? -v2 : 0.0, u1 = b ? 0.0 : v2, u2 = b ? v0 : -v1;
    inv = 1.0 / sqrt(u0 * u0 + u1 * u1 + u2 * u2);
    u0 = u0 * inv, u1 = u1 * inv, u2 = u2 * inv;
    double z0 = v1 * u2 - v2 * u1, z1 = v2 * u0 - v0 * u2, z2 = v0 * u1 - v1 * u0;
    double bz0 = d0 * z0 + o01 * z1 + o02 * z2;
    double bz1 = o01 * z0 + d1 * z1 + o12 * z2;
    double bz2 = o02 * z0 + o12 * z1 + d2 * z2;
    double m_uu = u0 * (d0 * u0 + o01 * u1 + o02 * u2) + u1 * (o01 * u0 + d1 * u1 + o12 * u2) +
                  u2 * (o02 * u0 + o12 * u1 + d2 * u2);
    double m_zz = z0 * bz0 + z1 * bz1 + z2 * bz2;
    double m_uz = u0 * bz0 + u1 * bz1 + u2 * bz2;
    double g[4];
    eig2(m_uu, m_uz, m_zz, g);
    double mu1 = g[0], mu2 = g[1], gx = g[2], gy = g[3];
    w[0] = (q + t * (top ? mu1 : far)) * s;
    w[1] = (q + t * (top ? mu2 : mu1)) * s;
    w[2] = (q + t * (top ? far : mu2)) * s;
    /* x1 = -gy u + gx z (eigenvalue mu1), x2 = gx u + gy z (mu2) */
    double x10 = u0 * -gy + z0 * gx, x11 = u1 * -gy + z1 * gx, x12 = u2 * -gy + z2 * gx;
    double x20 = u0 * gx + z0 * gy, x21 = u1 * gx + z1 * gy, x22 = u2 * gx + z2 * gy;
    vec[0] = top ? x10 : v0, vec[1] = top ? x11 : v1, vec[2] = top ? x12 : v2;
    vec[3] = top ? x20 : x10, vec[4] = top ? x21 : x11, vec[5] = top ? x22 : x12;
    vec[6] = top ? v0 : x20, vec[7] = top ? v1 : x21, vec[8] = top ? v2 : x22;
}

/* a complex entry, read in double */
typedef struct {
    double re, im;
} cplx;

/* |z| without overflow or underflow */
static double cabs_(cplx z) { return hypot(z.re, z.im); }

/* one complex Hermitian n x n matrix (n = 1, 2, 3), every entry already divided by the
 * power of two sc (so that no product below overflows) -> eigenvalues ww (times sc) and
 * eigenvectors vec (9 complex, column-major, leading dimension n). The matrix is made
 * real by exact-in-structure unitary steps and handed to the real closed form:
 * - n = 2: A = D R D^H, D = diag(1, p), p = a10 / |a10| (1 for a10 = 0), R real with
 *   off-diagonal |a10|; vectors D u;
 * - n = 3: a rotation G = [[conj g0, conj g1], [-g1, g0]] of rows and columns 1, 2
 *   (g = (a10, a20) / rho, rho = ||(a10, a20)||) zeroes a20 (Givens, backward stable),
 *   then D = diag(1, 1, q), q the phase of the rotated a21, makes the tridiagonal real:
 *   A = U^H D T D^H U with U = diag(1, G); vectors U^H D u. */
static void complex_small(int n, const cplx *e, double sc, double ww[3], cplx vec[9]) {
    if (n == 1) {
        ww[0] = e[0].re * sc;
        vec[0].re = 1.0, vec[0].im = 0.0;
        return;
    }
    if (n == 2) {
        double a00 = e[0].re, a11 = e[3].re;
        cplx b = e[1]; /* a10 */
        double r = cabs_(b);
        double pr = r > 0.0 ? b.re / r : 1.0, pi = r > 0.0 ? b.im / r : 0.0;
        double s = pow2(pmax(pmax(fabs(a00), r), fabs(a11)));
        double g[4];
        eig2(a00 / s, r / s, a11 / s, g);
        ww[0] = g[0] * s * sc, ww[1] = g[1] * s * sc;
        double u[4] = {-g[3], g[2], g[2], g[3]}; /* vector 0 = (-y, x), vector 1 = (x, y) */
        for (int j = 0; j < 2; j++) {
            vec[2 * j].re = u[2 * j], vec[2 * j].im = 0.0;
            vec[2 * j + 1].re = pr * u[2 * j + 1], vec[2 * j + 1].im = pi * u[2 * j + 1];
        }
        return;
    }
    double d0 = e[0].re, d1 = e[4].re, d2 = e[8].re;
    cplx x0 = e[1], x1 = e[2], c = e[5]; /* a10, a20, a21 */
    double rho = hypot(cabs_(x0), cabs_(x1));
    cplx g0 = {1.0, 0.0}, g1 = {0.0, 0.0};
    if (rho > 0.0) {
        g0.re = x0.re / rho, g0.im = x0.im / rho;
        g1.re = x1.re / rho, g1.im = x1.im / rho;
    }
    double n0 = g0.re * g0.re + g0.im * g0.im, n1 = g1.re * g1.re + g1.im * g1.im;
    /* h = conj(g0) g1 conj(c) */
    double hr0 = g0.re * g1.re + g0.im * g1.im, hi0 = g0.re * g1.im - g0.im * g1.re;
    double hr = hr0 * c.re + hi0 * c.im;
    double t11 = (d1 * n0 + d2 * n1) + 2.0 * hr;
    double t22 = (d1 * n1 + d2 * n0) - 2.0 * hr;
    /* beta = (d2 - d1) g0 g1 + c g0^2 - conj(c) g1^2 */
    double pr_ = g0.re * g1.re - g0.im * g1.im, pi_ = g0.re * g1.im + g0.im * g1.re;
    double s0r = g0.re * g0.re - g0.im * g0.im, s0i = 2.0 * g0.re * g0.im;
    double s1r = g1.re * g1.re - g1.im * g1.im, s1i = 2.0 * g1.re * g1.im;
    double dd = d2 - d1;
    double br = dd * pr_ + (c.re * s0r - c.im * s0i) - (c.re * s1r + c.im * s1i);
    double bi = dd * pi_ + (c.re * s0i + c.im * s0r) - (c.re * s1i - c.im * s1r);
    double beta = hypot(br, bi);
    double qr = beta > 0.0 ? br / beta : 1.0, qi = beta > 0.0 ? bi / beta : 0.0;
    double t[3] = {d0, t11, t22}, o[3] = {rho, 0.0, beta}, u[9];
    eig3(t, o, ww, u);
    for (int i = 0; i < 3; i++) ww[i] = ww[i] * sc;
    for (int j = 0; j < 3; j++) {
        double u0 = u[3 * j], u1 = u[3 * j + 1], u2 = u[3 * j + 2];
        double zr = qr * u2, zi = qi * u2; /* q u2 */
        /* v1 = g0 u1 - conj(g1) q u2, v2 = g1 u1 + conj(g0) q u2 */
        vec[3 * j].re = u0, vec[3 * j].im = 0.0;
        vec[3 * j + 1].re = g0.re * u1 - (g1.re * zr + g1.im * zi);
        vec[3 * j + 1].im = g0.im * u1 - (g1.re * zi - g1.im * zr);
        vec[3 * j + 2].re = g1.re * u1 + (g0.re * zr + g0.im * zi);
        vec[3 * j + 2].im = g1.im * u1 + (g0.re * zi - g0.im * zr);
    }
}

/* the complex kinds (2: complex64, 3: complex128) of spectra_closed_form */
static void closed_form_complex(int kind, int n, const void *a, ptrdiff_t s0, ptrdiff_t s1,
                                void *w, void *v) {
    cplx e[9];
    double peak = 0.0;
    for (int j = 0; j < n; j++)
        for (int i = j; i < n; i++) { /* the lower triangle, as LAPACK's 'L' reads it */
            ptrdiff_t at = i * s0 + j * s1;
            cplx z;
            if (kind == 2) {
                z.re = ((const float *)a)[2 * at], z.im = ((const float *)a)[2 * at + 1];
            } else {
                z.re = ((const double *)a)[2 * at], z.im = ((const double *)a)[2 * at + 1];
            }
            if (i == j) z.im = 0.0;
            e[j * n + i] = z; /* column-major */
            peak = pmax(pmax(peak, fabs(z.re)), fabs(z.im));
        }
    /* an exact power of two: entries at most 2 in modulus, none of the products overflow */
    double sc = pow2(peak);
    for (int j = 0; j < n; j++)
        for (int i = j; i < n; i++) e[j * n + i].re /= sc, e[j * n + i].im /= sc;
    double ww[3];
    cplx vec[9];
    complex_small(n, e, sc, ww, vec);
    const int m = n * n;
    if (kind == 2) {
        for (int i = 0; i < n; i++) ((float *)w)[i] = (float)ww[i];
        if (v != NULL)
            for (int i = 0; i < m; i++) {
                ((float *)v)[2 * i] = (float)vec[i].re;
                ((float *)v)[2 * i + 1] = (float)vec[i].im;
            }
    } else {
        for (int i = 0; i < n; i++) ((double *)w)[i] = ww[i];
        if (v != NULL)
            for (int i = 0; i < m; i++) {
                ((double *)v)[2 * i] = vec[i].re;
                ((double *)v)[2 * i + 1] = vec[i].im;
            }
    }
}

/* one n x n matrix (n = 1, 2, 3; kind 0: float32, 1: float64, 2: complex64, 3:
 * complex128) at a with element strides s0, s1 (its lower triangle is read; complex
 * strides count complex elements) -> eigenvalues at w (n) and, where v is not NULL,
 * eigenvectors at v (column j = vector j, column-major, leading dimension n), not yet in
 * the gauge. Returns 0 for n outside 1..3 or an unknown kind, 1 otherwise. */
int spectra_closed_form(int kind, int n, const void *a, ptrdiff_t s0, ptrdiff_t s1, void *w,
                        void *v) {
    if (kind < 0 || kind > 3 || n < 1 || n > 3) return 0;
    if (kind >= 2) {
        closed_form_complex(kind, n, a, s0, s1, w, v);
        return 1;
    }
    double e[9], ww[3], vec[9];
#define ENTRY(i, j)                                                                       \
    (kind == 0 ? (double)((const float *)a)[(i) * s0 + (j) * s1]                           \
               : ((const double *)a)[(i) * s0 + (j) * s1])
    if (n == 1) {
        ww[0] = ENTRY(0, 0);
        vec[0] = 1.0;
    } else if (n == 2) {
        double a00 = ENTRY(0, 0), a01 = ENTRY(1, 0), a11 = ENTRY(1, 1);
        double s = pow2(pmax(pmax(fabs(a00), fabs(a01)), fabs(a11)));
        /* divided, not multiplied by 1 / s: 1 / s overflows for subnormal s */
        double g[4];
        eig2(a00 / s, a01 / s, a11 / s, g);
        ww[0] = g[0] * s, ww[1] = g[1] * s;
        vec[0] = -g[3], vec[1] = g[2]; /* vector 0 = (-y, x) */
        vec[2] = g[2], vec[3] = g[3];  /* vector 1 = (x, y) */
    } else {
        e[0] = ENTRY(0, 0), e[1] = ENTRY(1, 1), e[2] = ENTRY(2, 2);
        e[3] = ENTRY(1, 0), e[4] = ENTRY(2, 0), e[5] = ENTRY(2, 1);
        eig3(e, e + 3, ww, vec);
    }
#undef ENTRY
    const int m = n * n;
    if (kind == 0) {
        for (int i = 0; i < n; i++) ((float *)w)[i] = (float)ww[i];
        if (v != NULL)
            for (int i = 0; i < m; i++) ((float *)v)[i] = (float)vec[i];
    } else {
        for (int i = 0; i < n; i++) ((double *)w)[i] = ww[i];
        if (v != NULL)
            for (int i = 0; i < m; i++) ((double *)v)[i] = vec[i];
    }
    return 1;
}
