/* Matrix products for generated code: C[b] (+)= A[b] @ B[b] over a batch
 * index space, every operand addressed by element strides.
 *
 * f32 products go to oneDNN's matmul primitive where the CPU and shape
 * favour it (use_dnnl; matmul_dnnl.c keeps one primitive per shape per
 * context and reads strided and batched operands in place). The rest of
 * f32, and f64, go to OpenBLAS's cblas_sgemm/dgemm, single-threaded (the
 * process has one threading runtime, OpenMP: rt_blas_single_thread) and
 * split over the pool's threads by blocks of C. An operand whose columns are
 * contiguous is passed as it is (NoTrans, ld = row stride), one whose rows
 * are contiguous as a transpose (Trans, ld = column stride); only layouts
 * BLAS cannot describe (both strides > 1, zero or negative strides, a
 * leading dimension below what BLAS requires) are copied to a contiguous
 * scratch matrix. A C with contiguous rows is computed directly, one with
 * contiguous columns as C^T = B^T A^T, any other through a scratch matrix.
 * f16/bf16 operands are widened to f32 scratch, multiplied by sgemm and
 * rounded once into C; bf16 products with up to RT_BF16_KERNEL_MAX_M rows
 * go to the AVX-512 BF16 kernel (matmul_bf16.c) where the CPU has it. Integers and bool use a loop
 * with 64-bit wrapping accumulation (bool: C = OR_k (A and B)). Scratch is allocated per call; the
 * only global state is OpenBLAS's thread count, 1. See docs/runtime.md
 * "Matrix products". */
#include <cblas.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

int omp_in_parallel(void); /* libgomp */

typedef struct Mat {
    const char *p; /* element (0, 0) */
    int64_t rs, cs;
} Mat;

/* Per-call scratch: grown on demand, freed at the end of the call. The
 * source a converted/copied operand came from is remembered, so a
 * broadcast operand is not converted again for every batch. */
typedef struct Slot {
    void *p;
    size_t cap;
    const void *src;
} Slot;

typedef struct Scratch {
    Slot a, b, c;
} Scratch;

static void *slot_get(Slot *s, size_t bytes) {
    if (bytes <= s->cap && s->p) return s->p;
    rt_aligned_free(s->p);
    s->p = rt_aligned_alloc(bytes);
    s->cap = s->p ? bytes : 0;
    s->src = NULL;
    return s->p;
}

static int64_t max1(int64_t x) {
    return x > 1 ? x : 1;
}

static bool mul_size(int64_t a, int64_t b, size_t es, size_t *out) {
    if (a < 0 || b < 0) return false;
    if (a && (uint64_t)b > SIZE_MAX / (uint64_t)a) return false;
    size_t n = (size_t)a * (size_t)b;
    if (es && n > SIZE_MAX / es) return false;
    *out = n * es;
    return true;
}

/* ---- element access ---- */

/* Wraps like C and torch: the low bits of the 64-bit sum. */
static void store_int(char *p, RtDType t, uint64_t v) {
    switch (t) {
    case RT_BOOL: *(uint8_t *)p = v != 0; break;
    case RT_U8:
    case RT_I8: *(uint8_t *)p = (uint8_t)v; break;
    case RT_I16:
    case RT_U16: {
        uint16_t x = (uint16_t)v;
        memcpy(p, &x, 2);
        break;
    }
    case RT_I32:
    case RT_U32: {
        uint32_t x = (uint32_t)v;
        memcpy(p, &x, 4);
        break;
    }
    default: memcpy(p, &v, 8); break;
    }
}

/* ---- the loop kernels (integers, and floats when BLAS cannot be used) ---- */

typedef struct LoopJob {
    RtDType t;
    int64_t n, k;
    bool acc;
    Mat A, B;
    char *c;
    int64_t c_rs, c_cs;
} LoopJob;

static void loop_rows(void *ctx, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    const LoopJob *j = ctx;
    size_t es = rt_dtype_size(j->t);
    bool fl = rt_dtype_is_float(j->t);
    for (int64_t i = i0; i < i1; i++) {
        for (int64_t n = 0; n < j->n; n++) {
            char *cp = j->c + (ptrdiff_t)((i * j->c_rs + n * j->c_cs) * (int64_t)es);
            const char *ap = j->A.p + (ptrdiff_t)(i * j->A.rs * (int64_t)es);
            const char *bp = j->B.p + (ptrdiff_t)(n * j->B.cs * (int64_t)es);
            ptrdiff_t as = (ptrdiff_t)(j->A.cs * (int64_t)es),
                      bs = (ptrdiff_t)(j->B.rs * (int64_t)es);
            if (fl) {
                double acc = j->acc ? rt_load_float(cp, j->t, 0) : 0.0;
                for (int64_t k = 0; k < j->k; k++, ap += as, bp += bs)
                    acc += rt_load_float(ap, j->t, 0) * rt_load_float(bp, j->t, 0);
                rt_store_float(cp, j->t, 0, acc);
            } else {
                uint64_t acc = j->acc ? (uint64_t)rt_load_int(cp, j->t, 0) : 0;
                for (int64_t k = 0; k < j->k; k++, ap += as, bp += bs)
                    acc += (uint64_t)rt_load_int(ap, j->t, 0) * (uint64_t)rt_load_int(bp, j->t, 0);
                store_int(cp, j->t, acc);
            }
        }
    }
}

static void matmul_loop(RtDType t, int64_t m, int64_t n, int64_t k, bool acc, Mat A, Mat B, Mat C,
                        RtPool *pool) {
    LoopJob j = {t, n, k, acc, A, B, (char *)C.p, C.rs, C.cs};
    int64_t work = max1(n) * max1(k);
    int64_t grain = work >= 16384 ? 1 : 16384 / work;
    rt_pool_parallel_for(pool, 0, m, grain, loop_rows, &j);
}

/* ---- BLAS ---- */

static void gather(char *dst, const char *src, int64_t r, int64_t c, int64_t rs, int64_t cs,
                   size_t es) {
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++)
            memcpy(dst + (size_t)(i * c + j) * es,
                   src + (ptrdiff_t)((i * rs + j * cs) * (int64_t)es), es);
}

static void scatter(char *dst, const char *src, int64_t r, int64_t c, int64_t rs, int64_t cs,
                    size_t es) {
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++)
            memcpy(dst + (ptrdiff_t)((i * rs + j * cs) * (int64_t)es),
                   src + (size_t)(i * c + j) * es, es);
}

/* How BLAS reads an r x c operand with strides (rs, cs): NoTrans (0) with
 * ld = rs, Trans (1) with ld = cs, or not at all (-1). A stride along a
 * dimension of size 1 is irrelevant and replaced by a legal ld. */
static int blas_layout(int64_t r, int64_t c, int64_t rs, int64_t cs, int64_t *ld) {
    int how = -1;
    if ((cs == 1 || c <= 1) && (r <= 1 || rs >= max1(c))) {
        *ld = r <= 1 ? max1(c) : rs;
        how = 0;
    } else if ((rs == 1 || r <= 1) && (c <= 1 || cs >= max1(r))) {
        *ld = c <= 1 ? max1(r) : cs;
        how = 1;
    }
    return how >= 0 && *ld <= INT_MAX ? how : -1;
}

/* An operand as BLAS takes it: the matrix itself, or a contiguous copy in
 * s (remembered by source, so a broadcast operand is copied once). */
static bool blas_operand(Mat X, int64_t r, int64_t c, size_t es, Slot *s, const void **p,
                         bool *trans, int *ld) {
    int64_t l;
    int how = blas_layout(r, c, X.rs, X.cs, &l);
    if (how >= 0) {
        *p = X.p;
        *trans = how == 1;
        *ld = (int)l;
        return true;
    }
    size_t bytes;
    if (!mul_size(r, c, es, &bytes) || !slot_get(s, bytes)) return false;
    if (s->src != X.p) gather(s->p, X.p, r, c, X.rs, X.cs, es);
    s->src = X.p;
    *p = s->p;
    *trans = false;
    *ld = (int)max1(c);
    return true;
}

/* A product with one row (or one column) is a matrix-vector product:
 * OpenBLAS 0.3.21's gemm packs the whole matrix operand on every call
 * (the weights, at batch 1), its gemv streams it once. Measured (2
 * threads, this machine: docs/performance.md "Batch 1: products with one row go to gemv"):
 * [1, 784] x [784, 512] 160 us through sgemm, 15 us through sgemv. */
static bool gemv(RtDType t, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void *a,
                 int lda, const void *b, int ldb, bool acc, void *c, int ldc) {
    enum CBLAS_TRANSPOSE NT = CblasNoTrans, T = CblasTrans;
    const void *mat, *vec;
    int ldm, incx, incy, rows, cols;
    enum CBLAS_TRANSPOSE how;
    if (m == 1) { /* c[j] = sum_i a[i] B[i][j]: B's rows stored as given */
        mat = b, ldm = ldb, vec = a, incy = 1;
        incx = ta ? lda : 1; /* a: one row; as a transpose its elements are lda apart */
        how = tb ? NT : T;   /* tb: B^T [n][k] stored; else B [k][n] */
        rows = (int)(tb ? n : k), cols = (int)(tb ? k : n);
    } else if (n == 1) { /* c[i * ldc] = sum_j A[i][j] b[j] */
        mat = a, ldm = lda, vec = b, incy = ldc;
        incx = tb ? 1 : ldb;
        how = ta ? T : NT;
        rows = (int)(ta ? k : m), cols = (int)(ta ? m : k);
    } else {
        return false;
    }
    if (t == RT_F64)
        cblas_dgemv(CblasRowMajor, how, rows, cols, 1.0, mat, ldm, vec, incx, acc ? 1.0 : 0.0, c,
                    incy);
    else
        cblas_sgemv(CblasRowMajor, how, rows, cols, 1.0f, mat, ldm, vec, incx, acc ? 1.0f : 0.0f, c,
                    incy);
    return true;
}

static void gemm1(RtDType t, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void *a,
                  int lda, const void *b, int ldb, bool acc, void *c, int ldc) {
    if (gemv(t, ta, tb, m, n, k, a, lda, b, ldb, acc, c, ldc)) return;
    enum CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
    if (t == RT_F64)
        cblas_dgemm(CblasRowMajor, TA, TB, (int)m, (int)n, (int)k, 1.0, a, lda, b, ldb,
                    acc ? 1.0 : 0.0, c, ldc);
    else
        cblas_sgemm(CblasRowMajor, TA, TB, (int)m, (int)n, (int)k, 1.0f, a, lda, b, ldb,
                    acc ? 1.0f : 0.0f, c, ldc);
}

/* OpenBLAS is single-threaded (rt_blas_single_thread): a product big
 * enough is split into one block of C's rows (or columns) per thread, one
 * OpenBLAS call per block, over the pool's threads. */
typedef struct GemmJob {
    RtDType t;
    bool ta, tb, acc, by_rows;
    int64_t m, n, k;
    const char *a, *b;
    char *c;
    int lda, ldb, ldc;
} GemmJob;

static void gemm_range(void *ctx, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    const GemmJob *j = ctx;
    size_t es = rt_dtype_size(j->t);
    if (j->by_rows) {
        /* rows i0..i1 of A (row i at i*lda, or column i of A^T at i) and C */
        const char *a = j->a + (size_t)i0 * (j->ta ? 1 : (size_t)j->lda) * es;
        gemm1(j->t, j->ta, j->tb, i1 - i0, j->n, j->k, a, j->lda, j->b, j->ldb, j->acc,
              j->c + (size_t)i0 * (size_t)j->ldc * es, j->ldc);
    } else {
        const char *b = j->b + (size_t)i0 * (j->tb ? (size_t)j->ldb : 1) * es;
        gemm1(j->t, j->ta, j->tb, j->m, i1 - i0, j->k, j->a, j->lda, b, j->ldb, j->acc,
              j->c + (size_t)i0 * es, j->ldc);
    }
}

/* Below this many multiply-adds a second thread's wake-up costs more than
 * it saves. */
#define GEMM_SPLIT_MIN_MACS (1 << 18)
/* Each block at least this many rows (columns): OpenBLAS's kernels work
 * on 16 x 4 .. 24 x 8 register tiles, and a thinner block wastes them. */
#define GEMM_SPLIT_MIN_ROWS 16

static void gemm(RtDType t, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void *a,
                 int lda, const void *b, int ldb, bool acc, void *c, int ldc, RtPool *pool) {
    int threads = rt_pool_threads(pool);
    if (threads > 1 && (double)m * (double)n * (double)k >= GEMM_SPLIT_MIN_MACS) {
        /* Each block packs the whole of the operand that is not split:
         * split the larger one, so that the smaller is packed twice. */
        bool by_rows = m >= n;
        GemmJob j = {t, ta, tb, acc, by_rows, m, n, k, a, b, c, lda, ldb, ldc};
        int64_t len = by_rows ? m : n;
        int64_t grain = (len + threads - 1) / threads;
        if (grain < GEMM_SPLIT_MIN_ROWS) grain = GEMM_SPLIT_MIN_ROWS;
        rt_pool_parallel_for(pool, 0, len, grain, gemm_range, &j);
        return;
    }
    gemm1(t, ta, tb, m, n, k, a, lda, b, ldb, acc, c, ldc);
}

void rt_sgemm_par(RtPool *pool, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
                  int lda, const float *b, int ldb, bool acc, float *c, int ldc) {
    gemm(RT_F32, ta, tb, m, n, k, a, lda, b, ldb, acc, c, ldc, pool);
}

/* C (+)= A @ B through BLAS for f32/f64; false when it cannot (a dimension
 * above INT_MAX, or no memory for scratch): the caller falls back to the
 * loop. m, n, k > 0. */
static bool matmul_blas(RtDType t, int64_t m, int64_t n, int64_t k, bool acc, Mat A, Mat B, Mat C,
                        Scratch *s, RtPool *pool) {
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX) return false;
    size_t es = rt_dtype_size(t);
    int64_t ldc;
    if (blas_layout(m, n, C.rs, C.cs, &ldc) == 1) {
        /* Contiguous columns: C^T = B^T A^T, with C^T's rows contiguous. */
        Mat T = A;
        A = (Mat){B.p, B.cs, B.rs};
        B = (Mat){T.p, T.cs, T.rs};
        C = (Mat){C.p, C.cs, C.rs};
        int64_t x = m;
        m = n;
        n = x;
    }
    const void *a, *b;
    bool ta, tb;
    int lda, ldb;
    if (!blas_operand(A, m, k, es, &s->a, &a, &ta, &lda) ||
        !blas_operand(B, k, n, es, &s->b, &b, &tb, &ldb))
        return false;
    if (blas_layout(m, n, C.rs, C.cs, &ldc) == 0) {
        gemm(t, ta, tb, m, n, k, a, lda, b, ldb, acc, (void *)C.p, (int)ldc, pool);
        return true;
    }
    size_t bytes;
    if (!mul_size(m, n, es, &bytes) || !slot_get(&s->c, bytes)) return false;
    if (acc) gather(s->c.p, C.p, m, n, C.rs, C.cs, es);
    gemm(t, ta, tb, m, n, k, a, lda, b, ldb, acc, s->c.p, (int)n, pool);
    scatter((char *)C.p, s->c.p, m, n, C.rs, C.cs, es);
    return true;
}

/* f16/bf16 <-> f32 for one matrix. */
/* X [r][c], element (i, j) at (i rs + j cs) * 2 bytes, into dense f32;
 * rows with contiguous elements 8 at a time (matmul_half_gemv.c). A scalar
 * call per element made the widening path of a bf16 MLP at batch 64 take
 * 47% of its time (1.13 ms against sgemm's 25%). */
static void widen(float *dst, const char *src, RtDType t, int64_t r, int64_t c, int64_t rs,
                  int64_t cs) {
    bool f16 = t == RT_F16;
    for (int64_t i = 0; i < r; i++) {
        const char *row = src + (ptrdiff_t)(i * rs * 2);
        if (cs == 1 && rt_half_widen_row(dst + i * c, (const uint16_t *)row, c, f16)) continue;
        for (int64_t j = 0; j < c; j++) {
            uint16_t h;
            memcpy(&h, row + (ptrdiff_t)(j * cs * 2), 2);
            dst[i * c + j] = f16 ? rt_f16_to_f32(h) : rt_bf16_to_f32(h);
        }
    }
}

typedef struct WidenJob {
    float *dst;
    const char *src;
    RtDType t;
    int64_t c, rs, cs;
} WidenJob;

static void widen_range(void *ctx, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    const WidenJob *j = ctx;
    widen(j->dst + i0 * j->c, j->src + (ptrdiff_t)(i0 * j->rs * 2), j->t, i1 - i0, j->c, j->rs,
          j->cs);
}

/* Elements per pool task when widening: below it the second thread's
 * wake-up costs more than the conversion. */
#define WIDEN_GRAIN (1 << 16)

/* An operand widened in the orientation it is stored: with contiguous
 * columns (a linear layer's weight used as B^T) as X^T, so that the
 * conversion reads rows; sgemm takes the transpose. */
static void widen_op(Slot *s, Mat X, RtDType t, int64_t r, int64_t c, bool *trans, int *ld,
                     RtPool *pool) {
    *trans = X.cs != 1 && X.rs == 1 && c > 1;
    *ld = (int)max1(*trans ? r : c);
    if (s->src == X.p) return;
    WidenJob j = {s->p, X.p, t, *trans ? r : c, *trans ? X.cs : X.rs, *trans ? X.rs : X.cs};
    int64_t rows = *trans ? c : r, per_row = max1(j.c);
    rt_pool_parallel_for(pool, 0, rows, per_row >= WIDEN_GRAIN ? 1 : WIDEN_GRAIN / per_row,
                         widen_range, &j);
    s->src = X.p;
}

static void narrow(char *dst, const float *src, RtDType t, int64_t r, int64_t c, int64_t rs,
                   int64_t cs) {
    bool f16 = t == RT_F16;
    for (int64_t i = 0; i < r; i++) {
        char *row = dst + (ptrdiff_t)(i * rs * 2);
        if (cs == 1 && rt_half_narrow_row((uint16_t *)row, src + i * c, c, f16)) continue;
        for (int64_t j = 0; j < c; j++) {
            float f = src[i * c + j];
            uint16_t h = f16 ? rt_f32_to_f16(f) : rt_f32_to_bf16(f);
            memcpy(row + (ptrdiff_t)(j * cs * 2), &h, 2);
        }
    }
}

/* matmul_bf16.c: false when the CPU lacks AVX-512 BF16 or memory is short.
 * vdpbf16ps runs at about half the f32 FMA rate on the CPU measured, so
 * the kernel wins only while widening the operands dominates: measured
 * (bench/bf16_gemm.c, 2 threads) 2-5x faster at m <= 64, 1.2-1.6x at
 * m = 256, even at 512 x 1024 x 1024, 0.6x at 2048^3. */
#define RT_BF16_KERNEL_MAX_M 256

static bool matmul_half(RtDType t, int64_t m, int64_t n, int64_t k, bool acc, Mat A, Mat B, Mat C,
                        Scratch *s, RtPool *pool) {
    if (t == RT_BF16 && m <= RT_BF16_KERNEL_MAX_M &&
        rt_matmul_bf16(m, n, k, (const uint16_t *)A.p, A.rs, A.cs, (const uint16_t *)B.p, B.rs,
                       B.cs, (void *)C.p, RT_BF16, C.rs, C.cs, acc, pool))
        return true;
    /* Few rows (or columns) on AVX2: B read in place, not widened per call. */
    if (rt_matmul_half_gemv(t, m, n, k, (const uint16_t *)A.p, A.rs, A.cs, (const uint16_t *)B.p,
                            B.rs, B.cs, (uint16_t *)C.p, C.rs, C.cs, acc, pool))
        return true;
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX) return false;
    size_t ba, bb, bc;
    if (!mul_size(m, k, 4, &ba) || !mul_size(k, n, 4, &bb) || !mul_size(m, n, 4, &bc) ||
        !slot_get(&s->a, ba) || !slot_get(&s->b, bb) || !slot_get(&s->c, bc))
        return false;
    bool ta, tb;
    int lda, ldb;
    widen_op(&s->a, A, t, m, k, &ta, &lda, pool);
    widen_op(&s->b, B, t, k, n, &tb, &ldb, pool);
    if (acc) widen(s->c.p, C.p, t, m, n, C.rs, C.cs);
    gemm(RT_F32, ta, tb, m, n, k, s->a.p, lda, s->b.p, ldb, acc, s->c.p, (int)max1(n), pool);
    narrow((char *)C.p, s->c.p, t, m, n, C.rs, C.cs);
    return true;
}

/* ---- one matrix, and the batch loop ---- */

static void matmul_one(RtDType t, int64_t m, int64_t n, int64_t k, bool acc, Mat A, Mat B, Mat C,
                       Scratch *s, RtPool *pool) {
    size_t es = rt_dtype_size(t);
    if (k == 0) {
        if (!acc) {
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++)
                    memset((char *)C.p + (ptrdiff_t)((i * C.rs + j * C.cs) * (int64_t)es), 0, es);
        }
        return;
    }
    bool done = false;
    if (t == RT_F32 || t == RT_F64)
        done = matmul_blas(t, m, n, k, acc, A, B, C, s, pool);
    else if (t == RT_F16 || t == RT_BF16)
        done = matmul_half(t, m, n, k, acc, A, B, C, s, pool);
    if (!done) matmul_loop(t, m, n, k, acc, A, B, C, pool);
}

/* Whether an f32 product of this shape goes to oneDNN's matmul primitive
 * rather than OpenBLAS (docs/runtime.md "Matrix products", the table):
 * where the CPU has AVX-512, which oneDNN uses and the Haswell kernel that
 * OpenBLAS runs here (OPENBLAS_CORETYPE=Haswell) does not, oneDNN's
 * primitive ran 1.8-2.4x OpenBLAS's rate on transformer and square
 * shapes; on an AVX2-only CPU the two run the same instructions and
 * OpenBLAS was as fast or faster on every shape measured. Products with
 * one row or column stay with OpenBLAS's gemv (memory-bound: the same
 * speed, without a primitive per shape). */
static bool use_dnnl(int64_t m, int64_t n, int64_t k) {
    /* Contexts on different threads may ask at once: every one computes
     * the same value, stored atomically. */
    static atomic_int avx512 = -1;
    int v = atomic_load_explicit(&avx512, memory_order_relaxed);
    if (v < 0) {
        /* TGC_MATMUL_DNNL=1 takes the oneDNN path on any CPU: how the
         * suites test it on machines without AVX-512 (docs/runtime.md). */
        const char *force = getenv("TGC_MATMUL_DNNL");
        v = (force && !strcmp(force, "1")) || __builtin_cpu_supports("avx512f") ? 1 : 0;
        atomic_store_explicit(&avx512, v, memory_order_relaxed);
    }
    return v && m > 1 && n > 1 && k > 1;
}

/* Element `off` of an operand; an operand that is never read (k = 0) may
 * be NULL. */
static const char *at(const void *base, int64_t off, size_t es) {
    return base ? (const char *)base + (ptrdiff_t)(off * (int64_t)es) : NULL;
}

void rt_matmul(const RtMatmulDesc *d, const void *a, const void *b, void *c, RtPool *pool) {
    /* A malformed descriptor (a bug in generated code) does nothing rather
     * than touch memory it does not describe. */
    if (!d || d->dtype < 0 || d->dtype >= RT_DTYPE_COUNT || d->m < 0 || d->n < 0 || d->k < 0 ||
        d->nbatch < 0 || d->nbatch > RT_MATMUL_MAX_BATCH)
        return;
    for (int i = 0; i < d->nbatch; i++)
        if (d->batch[i] <= 0) return; /* an empty batch: nothing to do (negative: malformed) */
    if (d->m == 0 || d->n == 0) return;
    RtDType t = (RtDType)d->dtype;
    size_t es = rt_dtype_size(t);
    bool acc = d->accumulate != 0;

    /* Fold trailing batch dimensions over which B is broadcast and the
     * rows of A and C simply continue into m: [b, m, k] @ [k, n] is one
     * [b*m, k] @ [k, n] product. */
    int nb = (int)d->nbatch;
    int64_t m = d->m;
    while (nb > 0) {
        int i = nb - 1;
        if (d->b_bs[i] != 0 || d->a_bs[i] != m * d->a_rs || d->c_bs[i] != m * d->c_rs ||
            m > INT64_MAX / d->batch[i])
            break;
        m *= d->batch[i];
        nb--;
    }

    if (t == RT_F32 && d->k > 0 && nb <= RT_MM_DNNL_MAX_DIMS - 2 && use_dnnl(m, d->n, d->k) &&
        !omp_in_parallel()) {
        RtMmOperand ops[3];
        memset(ops, 0, sizeof ops);
        ops[0].p = a, ops[1].p = b, ops[2].p = c;
        const int64_t *bs[3] = {d->a_bs, d->b_bs, d->c_bs};
        for (int o = 0; o < 3; o++) {
            for (int i = 0; i < nb; i++) {
                ops[o].dims[i] = d->batch[i];
                ops[o].strides[i] = bs[o][i];
            }
        }
        int64_t rows[3] = {m, d->k, m}, cols[3] = {d->k, d->n, d->n};
        int64_t rs[3] = {d->a_rs, d->b_rs, d->c_rs}, cs[3] = {d->a_cs, d->b_cs, d->c_cs};
        for (int o = 0; o < 3; o++) {
            ops[o].dims[nb] = rows[o], ops[o].strides[nb] = rs[o];
            ops[o].dims[nb + 1] = cols[o], ops[o].strides[nb + 1] = cs[o];
        }
        if (rt_matmul_dnnl(pool, nb + 2, acc, ops)) return;
    }

    Scratch s = {{0}, {0}, {0}};
    int64_t idx[RT_MATMUL_MAX_BATCH] = {0}, off[3] = {0, 0, 0};
    const int64_t *const bstrides[3] = {d->a_bs, d->b_bs, d->c_bs};
    do {
        Mat A = {at(a, off[0], es), d->a_rs, d->a_cs};
        Mat B = {at(b, off[1], es), d->b_rs, d->b_cs};
        Mat C = {at(c, off[2], es), d->c_rs, d->c_cs};
        matmul_one(t, m, d->n, d->k, acc, A, B, C, &s, pool);
    } while (rt_batch_next(nb, d->batch, bstrides, idx, off));
    rt_aligned_free(s.a.p);
    rt_aligned_free(s.b.p);
    rt_aligned_free(s.c.p);
}
