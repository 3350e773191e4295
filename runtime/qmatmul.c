/* Quantized matrix products for generated code: y (+)= x @ dequant(q)^T,
 * the weight q stored as int8 or packed int4 [n][k] with f32 scales per
 * group of k (docs/runtime.md "Quantized matrix products").
 *
 * Two regimes, because their bottlenecks differ:
 * - few rows (GEMV-like, decoding one token): the product is bound by
 *   reading the weights, so they are read once, in their quantized form,
 *   unpacked and scaled in registers and multiplied into every row of x at
 *   once; the pool splits n.
 * - many rows: the product is bound by arithmetic, where nothing beats
 *   OpenBLAS's sgemm; blocks of q's rows are dequantized into f32 scratch
 *   (O(n k) work against O(m n k)) and handed to cblas_sgemm.
 * Both dequantize the same way, w = (float)q * scale (one f32 product), and
 * accumulate in f32, so the result only differs by summation order.
 *
 * x is always first gathered into a dense f32 copy (O(m k), negligible):
 * it turns every stride, batch layout and dtype of x into one case. When a
 * scratch buffer cannot be allocated the product still completes: the
 * GEMV kernel without the sgemm scratch, a scalar loop without the x copy.
 * No global state: the CPU check is a builtin that reads cached CPUID. */
#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define QM_X86 1
#define QM_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#else
#define QM_X86 0
#endif

/* Up to this many rows (batch * m) reading the weights in place is faster
 * than dequantize + sgemm (measured at n = k = 4096 on 2 threads: m = 16
 * about 6 ms against 10, m = 64 about 24 against 21). */
#define QM_GEMV_MAX_ROWS 32
#define QM_MR 8 /* rows of x one pass over a weight row serves */
/* Bytes of f32 weights dequantized per sgemm call: OpenBLAS repacks x for
 * every call, so blocks of 256 rows (4 MiB at k = 4096) ran 30% slower
 * than one call; 1024 rows are within a few percent. */
#define QM_BLOCK_BYTES (16u << 20)

typedef struct QmShape {
    const RtQMatmulDesc *d;
    int64_t rows;    /* batch * m */
    int64_t kbytes;  /* bytes of one weight row */
    int64_t ngroups; /* scales per weight row */
    int64_t group;   /* clamped to [1, k] */
} QmShape;

/* Element offset of row r (batch-major, then m) of x or y. */
static int64_t row_offset(const RtQMatmulDesc *d, int64_t r, const int64_t *bs, int64_t rs) {
    int64_t off = (r % d->m) * rs;
    r /= d->m;
    for (int j = (int)d->nbatch - 1; j >= 0 && r; j--) {
        off += (r % d->batch[j]) * bs[j];
        r /= d->batch[j];
    }
    return off;
}

static float load_f(const char *p, RtDType t) {
    uint16_t h;
    float f;
    switch (t) {
    case RT_F32: memcpy(&f, p, 4); return f;
    case RT_F16: memcpy(&h, p, 2); return rt_f16_to_f32(h);
    default: memcpy(&h, p, 2); return rt_bf16_to_f32(h);
    }
}

static void store_f(char *p, RtDType t, float f) {
    uint16_t h;
    switch (t) {
    case RT_F32: memcpy(p, &f, 4); return;
    case RT_F16: h = rt_f32_to_f16(f); break;
    default: h = rt_f32_to_bf16(f); break;
    }
    memcpy(p, &h, 2);
}

static int8_t q_at(const QmShape *s, const void *q, int64_t n, int64_t k) {
    const uint8_t *row = (const uint8_t *)q + n * s->kbytes;
    if (s->d->bits == 8) return (int8_t)row[k];
    int v = (row[k >> 1] >> ((k & 1) * 4)) & 15;
    return (int8_t)(v >= 8 ? v - 16 : v);
}

/* ---- dequantizing one weight row: w[k] = q[k] * scale[k / group] ---- */

static void dequant_row_c(const QmShape *s, const void *q, const float *scales, int64_t n,
                          float *w) {
    int64_t k = s->d->k;
    const float *sc = scales + n * s->ngroups;
    for (int64_t g0 = 0, g = 0; g0 < k; g0 += s->group, g++) {
        int64_t g1 = g0 + s->group < k ? g0 + s->group : k;
        for (int64_t kk = g0; kk < g1; kk++)
            w[kk] = (float)q_at(s, q, n, kk) * sc[g];
    }
}

/* ---- the GEMV kernel: one weight row against up to QM_MR rows of x ---- */

/* out[r] = sum_k x[r][k] * w[k] for r < mr, x dense [mr][k]. */
static void dot_rows_c(const QmShape *s, int mr, const float *x, const void *q, const float *scales,
                       int64_t n, float *out) {
    int64_t k = s->d->k;
    const float *sc = scales + n * s->ngroups;
    float acc[QM_MR] = {0};
    for (int64_t g0 = 0, g = 0; g0 < k; g0 += s->group, g++) {
        int64_t g1 = g0 + s->group < k ? g0 + s->group : k;
        for (int64_t kk = g0; kk < g1; kk++) {
            float w = (float)q_at(s, q, n, kk) * sc[g];
            for (int r = 0; r < mr; r++)
                acc[r] += x[r * k + kk] * w;
        }
    }
    for (int r = 0; r < mr; r++)
        out[r] = acc[r];
}

#if QM_X86
/* 16 weights from element kk of row `row` (kk a multiple of 16), as f32,
 * lanes at or past `live` zeroed. int4: 8 bytes, each byte duplicated,
 * then the low nibble shifted into place for even lanes and the high one
 * for odd lanes, and sign-extended from bit 3 by a shift pair. */
QM_AVX512 static inline __m512 load16(const uint8_t *row, int bits, int64_t kk, __mmask16 live) {
    __m512i v;
    if (bits == 8) {
        v = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(live, row + kk));
    } else {
        __mmask16 bytes = (__mmask16)((1u << ((__builtin_popcount(live) + 1) / 2)) - 1);
        __m128i b = _mm_maskz_loadu_epi8(bytes, row + kk / 2);
        v = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(b, b));
        v = _mm512_srlv_epi32(v, _mm512_set_epi32(4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0));
        v = _mm512_srai_epi32(_mm512_slli_epi32(v, 28), 28);
    }
    return _mm512_maskz_cvtepi32_ps(live, v);
}

/* The kernel for a constant mr (inlined per value so the accumulators
 * live in registers). Needs group % 16 == 0 or group >= k, so a chunk of
 * 16 never straddles two scales. Two accumulators per row at mr == 1:
 * one FMA chain would be latency-bound. */
QM_AVX512 static inline __attribute__((always_inline)) void
dot_rows_body(const QmShape *s, const int mr, const float *x, const uint8_t *row, const float *sc,
              float *out) {
    int64_t k = s->d->k;
    int bits = (int)s->d->bits;
    __m512 acc[QM_MR], acc2 = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
        acc[r] = _mm512_setzero_ps();
    for (int64_t g0 = 0, g = 0; g0 < k; g0 += s->group, g++) {
        int64_t g1 = g0 + s->group < k ? g0 + s->group : k;
        __m512 scale = _mm512_set1_ps(sc[g]);
        int64_t kk = g0;
        if (mr == 1)
            for (; kk + 32 <= g1; kk += 32) {
                __m512 w0 = _mm512_mul_ps(load16(row, bits, kk, 0xffff), scale);
                __m512 w1 = _mm512_mul_ps(load16(row, bits, kk + 16, 0xffff), scale);
                acc[0] = _mm512_fmadd_ps(_mm512_loadu_ps(x + kk), w0, acc[0]);
                acc2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + kk + 16), w1, acc2);
            }
        for (; kk < g1; kk += 16) {
            __mmask16 live = g1 - kk >= 16 ? 0xffff : (__mmask16)((1u << (g1 - kk)) - 1);
            __m512 w = _mm512_mul_ps(load16(row, bits, kk, live), scale);
#pragma GCC unroll 8
            for (int r = 0; r < mr; r++)
                acc[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(live, x + r * k + kk), w, acc[r]);
        }
    }
    acc[0] = _mm512_add_ps(acc[0], acc2);
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
        out[r] = _mm512_reduce_add_ps(acc[r]);
}

QM_AVX512 static void dot_rows_avx512(const QmShape *s, int mr, const float *x, const void *q,
                                      const float *scales, int64_t n, float *out) {
    const uint8_t *row = (const uint8_t *)q + n * s->kbytes;
    const float *sc = scales + n * s->ngroups;
    switch (mr) {
    case 1: dot_rows_body(s, 1, x, row, sc, out); break;
    case 2: dot_rows_body(s, 2, x, row, sc, out); break;
    case 3: dot_rows_body(s, 3, x, row, sc, out); break;
    case 4: dot_rows_body(s, 4, x, row, sc, out); break;
    case 5: dot_rows_body(s, 5, x, row, sc, out); break;
    case 6: dot_rows_body(s, 6, x, row, sc, out); break;
    case 7: dot_rows_body(s, 7, x, row, sc, out); break;
    default: dot_rows_body(s, 8, x, row, sc, out); break;
    }
}

QM_AVX512 static void dequant_row_avx512(const QmShape *s, const void *q, const float *scales,
                                         int64_t n, float *w) {
    int64_t k = s->d->k;
    const uint8_t *row = (const uint8_t *)q + n * s->kbytes;
    const float *sc = scales + n * s->ngroups;
    for (int64_t g0 = 0, g = 0; g0 < k; g0 += s->group, g++) {
        int64_t g1 = g0 + s->group < k ? g0 + s->group : k;
        __m512 scale = _mm512_set1_ps(sc[g]);
        for (int64_t kk = g0; kk < g1; kk += 16) {
            __mmask16 live = g1 - kk >= 16 ? 0xffff : (__mmask16)((1u << (g1 - kk)) - 1);
            _mm512_mask_storeu_ps(w + kk, live,
                                  _mm512_mul_ps(load16(row, (int)s->d->bits, kk, live), scale));
        }
    }
}

static bool have_avx512(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
#endif

typedef void (*DotFn)(const QmShape *, int, const float *, const void *, const float *, int64_t,
                      float *);
typedef void (*DequantFn)(const QmShape *, const void *, const float *, int64_t, float *);

/* The vector kernels need every 16-element chunk under one scale. */
static bool vector_ok(const QmShape *s) {
    return QM_X86 && (s->group % 16 == 0 || s->group >= s->d->k);
}

static DotFn pick_dot(const QmShape *s) {
#if QM_X86
    if (vector_ok(s) && have_avx512()) return dot_rows_avx512;
#endif
    return dot_rows_c;
}

static DequantFn pick_dequant(const QmShape *s) {
#if QM_X86
    if (vector_ok(s) && have_avx512()) return dequant_row_avx512;
#endif
    return dequant_row_c;
}

/* ---- the GEMV regime: the pool splits n, each task sweeps its weight
 * rows once per QM_MR rows of x ---- */

typedef struct GemvJob {
    const QmShape *s;
    const float *x; /* dense [rows][k] */
    const void *q;
    const float *scales;
    char *y;
    DotFn dot;
} GemvJob;

static void gemv_range(void *ctx, int64_t n0, int64_t n1, int thread) {
    (void)thread;
    const GemvJob *j = ctx;
    const RtQMatmulDesc *d = j->s->d;
    RtDType yt = (RtDType)d->y_dtype;
    size_t es = rt_dtype_size(yt);
    for (int64_t r0 = 0; r0 < j->s->rows; r0 += QM_MR) {
        int mr = j->s->rows - r0 < QM_MR ? (int)(j->s->rows - r0) : QM_MR;
        int64_t yo[QM_MR];
        for (int r = 0; r < mr; r++)
            yo[r] = row_offset(d, r0 + r, d->y_bs, d->y_rs);
        for (int64_t n = n0; n < n1; n++) {
            float out[QM_MR];
            j->dot(j->s, mr, j->x + r0 * d->k, j->q, j->scales, n, out);
            for (int r = 0; r < mr; r++) {
                char *p = j->y + (ptrdiff_t)((yo[r] + n * d->y_cs) * (int64_t)es);
                store_f(p, yt, d->accumulate ? load_f(p, yt) + out[r] : out[r]);
            }
        }
    }
}

static void run_gemv(const QmShape *s, const float *x, const void *q, const float *scales, void *y,
                     RtPool *pool) {
    GemvJob j = {s, x, q, scales, y, pick_dot(s)};
    int64_t work = s->rows * s->d->k;
    int64_t grain = work >= 65536 ? 1 : 65536 / work;
    rt_pool_parallel_for(pool, 0, s->d->n, grain, gemv_range, &j);
}

/* ---- the sgemm regime ---- */

typedef struct DequantJob {
    const QmShape *s;
    const void *q;
    const float *scales;
    int64_t n0;
    float *w; /* [n1 - n0][k] */
    DequantFn fn;
} DequantJob;

static void dequant_range(void *ctx, int64_t n0, int64_t n1, int thread) {
    (void)thread;
    const DequantJob *j = ctx;
    for (int64_t n = n0; n < n1; n++)
        j->fn(j->s, j->q, j->scales, n, j->w + (n - j->n0) * j->s->d->k);
}

/* Rows of y (or x) lie at r * rs for every r: batch dims that continue
 * the rows, so BLAS can address them with one leading dimension. */
static bool rows_uniform(const RtQMatmulDesc *d, const int64_t *bs, int64_t rs) {
    int64_t expect = d->m * rs;
    for (int j = (int)d->nbatch - 1; j >= 0; j--) {
        if (d->batch[j] > 1 && bs[j] != expect) return false;
        expect *= d->batch[j];
    }
    return true;
}

/* false when scratch cannot be allocated: the caller falls back. */
static bool run_sgemm(const QmShape *s, const float *x, const void *q, const float *scales, void *y,
                      RtPool *pool) {
    const RtQMatmulDesc *d = s->d;
    int64_t k = d->k, n = d->n, rows = s->rows;
    if (rows > INT_MAX || n > INT_MAX || k > INT_MAX) return false;
    RtDType yt = (RtDType)d->y_dtype;
    size_t es = rt_dtype_size(yt);
    bool direct = yt == RT_F32 && (d->y_cs == 1 || n == 1) && rows_uniform(d, d->y_bs, d->y_rs) &&
                  (rows == 1 || (d->y_rs >= n && d->y_rs <= INT_MAX));
    int64_t nb = (int64_t)(QM_BLOCK_BYTES / 4) / k;
    nb = nb < 16 ? 16 : nb & ~(int64_t)15;
    if (nb > n) nb = n;
    if ((uint64_t)nb * (uint64_t)k > SIZE_MAX / 8 || (uint64_t)rows * (uint64_t)nb > SIZE_MAX / 8)
        return false;
    float *w = rt_aligned_alloc((size_t)(nb * k) * 4);
    float *yb = direct ? NULL : rt_aligned_alloc((size_t)(rows * nb) * 4);
    if (!w || (!direct && !yb)) {
        rt_aligned_free(w);
        rt_aligned_free(yb);
        return false;
    }
    DequantJob dj = {s, q, scales, 0, w, pick_dequant(s)};
    for (int64_t n0 = 0; n0 < n; n0 += nb) {
        int64_t cnt = n - n0 < nb ? n - n0 : nb;
        dj.n0 = n0;
        rt_pool_parallel_for(pool, n0, n0 + cnt, 1, dequant_range, &dj);
        if (direct) {
            float *c = (float *)y + n0 * d->y_cs;
            int ldc = rows == 1 ? (int)(n > 1 ? n : 1) : (int)d->y_rs;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)cnt, (int)k, 1.0f,
                        x, (int)k, w, (int)k, d->accumulate ? 1.0f : 0.0f, c, ldc);
            continue;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)cnt, (int)k, 1.0f, x,
                    (int)k, w, (int)k, 0.0f, yb, (int)cnt);
        for (int64_t r = 0; r < rows; r++) {
            int64_t yo = row_offset(d, r, d->y_bs, d->y_rs);
            for (int64_t jn = 0; jn < cnt; jn++) {
                char *p = (char *)y + (ptrdiff_t)((yo + (n0 + jn) * d->y_cs) * (int64_t)es);
                float v = yb[r * cnt + jn];
                store_f(p, yt, d->accumulate ? load_f(p, yt) + v : v);
            }
        }
    }
    rt_aligned_free(w);
    rt_aligned_free(yb);
    return true;
}

/* ---- without any scratch: one element at a time ---- */

static void run_scalar(const QmShape *s, const void *x, const void *q, const float *scales,
                       void *y) {
    const RtQMatmulDesc *d = s->d;
    RtDType xt = (RtDType)d->x_dtype, yt = (RtDType)d->y_dtype;
    size_t xes = rt_dtype_size(xt), yes = rt_dtype_size(yt);
    for (int64_t r = 0; r < s->rows; r++) {
        int64_t xo = row_offset(d, r, d->x_bs, d->x_rs), yo = row_offset(d, r, d->y_bs, d->y_rs);
        for (int64_t n = 0; n < d->n; n++) {
            const float *sc = scales + n * s->ngroups;
            float acc = 0;
            for (int64_t kk = 0; kk < d->k; kk++) {
                float w = (float)q_at(s, q, n, kk) * sc[kk / s->group];
                acc +=
                    load_f((const char *)x + (ptrdiff_t)((xo + kk * d->x_cs) * (int64_t)xes), xt) *
                    w;
            }
            char *p = (char *)y + (ptrdiff_t)((yo + n * d->y_cs) * (int64_t)yes);
            store_f(p, yt, d->accumulate ? load_f(p, yt) + acc : acc);
        }
    }
}

/* x as dense f32 [rows][k]. */
static void gather_x(const QmShape *s, const void *x, float *dst) {
    const RtQMatmulDesc *d = s->d;
    RtDType xt = (RtDType)d->x_dtype;
    int64_t k = d->k;
    size_t es = rt_dtype_size(xt);
    for (int64_t r = 0; r < s->rows; r++) {
        const char *src =
            (const char *)x + (ptrdiff_t)(row_offset(d, r, d->x_bs, d->x_rs) * (int64_t)es);
        float *out = dst + r * k;
        if (xt == RT_F32 && d->x_cs == 1) {
            memcpy(out, src, (size_t)k * 4);
            continue;
        }
        ptrdiff_t step = (ptrdiff_t)(d->x_cs * (int64_t)es);
        for (int64_t kk = 0; kk < k; kk++, src += step)
            out[kk] = load_f(src, xt);
    }
}

static bool float_dtype(int64_t t) {
    return t == RT_F32 || t == RT_F16 || t == RT_BF16;
}

void rt_qmatmul(const RtQMatmulDesc *d, const void *x, const void *q, const float *scales, void *y,
                RtPool *pool) {
    /* A malformed descriptor (a bug in generated code) does nothing. */
    if (!d || !float_dtype(d->x_dtype) || !float_dtype(d->y_dtype) || d->m < 0 || d->n < 0 ||
        d->k < 0 || (d->bits != 8 && d->bits != 4) || d->group < 1 || d->nbatch < 0 ||
        d->nbatch > RT_QMATMUL_MAX_BATCH)
        return;
    int64_t rows = d->m;
    for (int i = 0; i < d->nbatch; i++) {
        if (d->batch[i] <= 0) return; /* empty (or malformed): nothing to do */
        if (rows > INT64_MAX / d->batch[i]) return;
        rows *= d->batch[i];
    }
    if (rows == 0 || d->n == 0) return;
    if (d->k == 0) { /* an empty sum: y = 0, or y unchanged */
        if (d->accumulate) return;
        size_t es = rt_dtype_size((RtDType)d->y_dtype);
        QmShape s0 = {d, rows, 0, 0, 1};
        for (int64_t r = 0; r < s0.rows; r++) {
            int64_t yo = row_offset(d, r, d->y_bs, d->y_rs);
            for (int64_t n = 0; n < d->n; n++)
                memset((char *)y + (ptrdiff_t)((yo + n * d->y_cs) * (int64_t)es), 0, es);
        }
        return;
    }
    int64_t group = d->group < d->k ? d->group : d->k;
    QmShape s = {d, rows, d->bits == 8 ? d->k : (d->k + 1) / 2, (d->k + group - 1) / group, group};

    float *xf = NULL;
    if ((uint64_t)rows <= SIZE_MAX / 4 / (uint64_t)d->k)
        xf = rt_aligned_alloc((size_t)(rows * d->k) * 4);
    if (!xf) {
        run_scalar(&s, x, q, scales, y);
        return;
    }
    gather_x(&s, x, xf);
    if (rows <= QM_GEMV_MAX_ROWS || !run_sgemm(&s, xf, q, scales, y, pool))
        run_gemv(&s, xf, q, scales, y, pool);
    rt_aligned_free(xf);
}
