/* Two O(nnz) passes over the entry list of a sparse matrix (a batch of graphs), for the
 * checks that run before any solve (_native.py: native_mirror_exact, native_components):
 *
 *  - spectra_mirror_exact: whether every off-diagonal entry (i, j, x) has its mirror
 *    (j, i, conj(x)) exactly, with no (row, column) pair given twice. The entries are
 *    bucketed by row (a counting sort), each row sorted by column, and every row's
 *    entries below the diagonal are matched in order against the rows above: the
 *    mirrors of row j's lower entries (j, c1 < c2 < ...) are met as rows c1, c2, ... are
 *    read, in that order. It proves symmetry or declines (0): the caller's tolerant test
 *    then decides, so a duplicate or a value off by one rounding is never refused here;
 *  - spectra_components: connected components of the undirected graph of the entries
 *    (union-find with path halving), labelled in the order of each component's smallest
 *    node, which is how scipy.sparse.csgraph.connected_components numbers them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_native_eigh.h"

typedef struct {
    int64_t col, entry;
} slot_t;

static int by_column(const void *x, const void *y) {
    int64_t a = ((const slot_t *)x)->col, b = ((const slot_t *)y)->col;
    return (a > b) - (a < b);
}

/* sort the columns of one row (with the entry each came from), ascending: insertion sort
 * for short rows, qsort through scratch (room for the longest row) for long ones (a hub
 * of a power-law graph would cost its degree squared) */
static void sort_row(int64_t *col, int64_t *entry, int64_t len, slot_t *scratch) {
    if (len > 32) {
        for (int64_t a = 0; a < len; a++) scratch[a] = (slot_t){col[a], entry[a]};
        qsort(scratch, (size_t)len, sizeof(slot_t), by_column);
        for (int64_t a = 0; a < len; a++) col[a] = scratch[a].col, entry[a] = scratch[a].entry;
        return;
    }
    for (int64_t a = 1; a < len; a++) {
        int64_t c = col[a], e = entry[a], b = a - 1;
        while (b >= 0 && col[b] > c) {
            col[b + 1] = col[b];
            entry[b + 1] = entry[b];
            b--;
        }
        col[b + 1] = c;
        entry[b + 1] = e;
    }
}

/* whether the values of entries p and q are each other's conjugates, exactly */
static int mirrored(int kind, const void *x, int64_t p, int64_t q) {
    switch (kind) {
    case 0: return ((const float *)x)[p] == ((const float *)x)[q];
    case 1: return ((const double *)x)[p] == ((const double *)x)[q];
    case 2: {
        const float *z = (const float *)x;
        return z[2 * p] == z[2 * q] && z[2 * p + 1] == -z[2 * q + 1];
    }
    default: {
        const double *z = (const double *)x;
        return z[2 * p] == z[2 * q] && z[2 * p + 1] == -z[2 * q + 1];
    }
    }
}

int spectra_mirror_exact(int kind, int64_t n, int64_t m, const int64_t *rows,
                         const int64_t *cols, const void *values) {
    if (kind < 0 || kind > 3 || n < 0 || m < 0) return 0;
    if (m == 0) return 1;
    int64_t *ptr = calloc((size_t)n + 1, sizeof(int64_t));
    int64_t *col = malloc(sizeof(int64_t) * (size_t)m);
    int64_t *entry = malloc(sizeof(int64_t) * (size_t)m);
    int64_t *cursor = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    int ok = ptr && col && entry && cursor;
    for (int64_t p = 0; ok && p < m; p++) {
        if (rows[p] < 0 || rows[p] >= n || cols[p] < 0 || cols[p] >= n) ok = 0;
        else ptr[rows[p] + 1]++;
    }
    slot_t *scratch = NULL;
    if (ok) {
        int64_t longest = 0;
        for (int64_t i = 0; i < n; i++) {
            longest = ptr[i + 1] > longest ? ptr[i + 1] : longest;
            ptr[i + 1] += ptr[i];
        }
        if (longest > 32 && !(scratch = malloc(sizeof(slot_t) * (size_t)longest))) ok = 0;
    }
    if (ok) {
        memcpy(cursor, ptr, sizeof(int64_t) * (size_t)n);
        for (int64_t p = 0; p < m; p++) {
            int64_t at = cursor[rows[p]]++;
            col[at] = cols[p];
            entry[at] = p;
        }
        for (int64_t i = 0; ok && i < n; i++) {
            sort_row(col + ptr[i], entry + ptr[i], ptr[i + 1] - ptr[i], scratch);
            for (int64_t p = ptr[i] + 1; p < ptr[i + 1]; p++)
                if (col[p] == col[p - 1]) ok = 0; /* a pair given twice: not decided here */
        }
        memcpy(cursor, ptr, sizeof(int64_t) * (size_t)n); /* each row's next lower entry */
    }
    for (int64_t i = 0; ok && i < n; i++) {
        for (int64_t p = ptr[i]; ok && p < ptr[i + 1]; p++) {
            int64_t j = col[p];
            if (j <= i) continue; /* lower entries are matched from above, the diagonal skipped */
            int64_t q = cursor[j];
            if (q >= ptr[j + 1] || col[q] != i || !mirrored(kind, values, entry[p], entry[q]))
                ok = 0;
            else cursor[j] = q + 1;
        }
    }
    for (int64_t j = 0; ok && j < n; j++) /* every lower entry was met from above */
        if (cursor[j] < ptr[j + 1] && col[cursor[j]] < j) ok = 0;
    free(ptr), free(col), free(entry), free(cursor), free(scratch);
    return ok;
}

static int64_t find_root(int64_t *parent, int64_t x) {
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

int64_t spectra_components(int64_t n, int64_t m, const int64_t *src, const int64_t *dst,
                           int64_t *labels) {
    if (n < 0 || m < 0) return -1;
    int64_t *parent = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (parent == NULL) return -1;
    for (int64_t i = 0; i < n; i++) parent[i] = i;
    for (int64_t p = 0; p < m; p++) {
        int64_t a = src[p], b = dst[p];
        if (a < 0 || a >= n || b < 0 || b >= n) {
            free(parent);
            return -1;
        }
        a = find_root(parent, a);
        b = find_root(parent, b);
        if (a != b) { /* the smaller root stays: a component's root is its smallest node */
            if (a < b) parent[b] = a;
            else parent[a] = b;
        }
    }
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t r = find_root(parent, i);
        labels[i] = r == i ? count++ : labels[r]; /* r < i: labelled already */
    }
    free(parent);
    return count;
}
