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
 * x is gathered into a dense f32 copy (O(m k)) unless it is one already:
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
#include "rt_avx2.h"
#define QM_X86 1
#define QM_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#define QM_AVX2 __attribute__((target("avx2,fma")))
#else
#define QM_X86 0
#endif

/* Up to this many rows (batch * m) reading the weights in place is faster
 * than dequantize + sgemm (measured at n = k = 4096 on 2 threads: m = 16
 * about 6 ms against 10, m = 64 about 24 against 21). */
#define QM_GEMV_MAX_ROWS RT_QMATMUL_GEMV_MAX_ROWS
#define QM_MR 8 /* rows of x one pass over a weight row serves */
/* How far ahead (bytes) the one-row AVX2 kernel prefetches its weights:
 * 16 cache lines, past the row's end too (the next rows follow it; a
 * prefetch past the weights' end does not fault). Without it one row's
 * weights arrive by demand misses only, and decoding streamed int8
 * weights at 10 GB/s where a plain read gets 17.8 (docs/performance.md
 * "The decode step: prefetching, one-row attention, a profiler"). */
#define QM_PREFETCH 1024
/* Least multiply-adds (rows * k per weight row) per pool task: waking the
 * second thread costs ~10 us on the loaded 2-core machine measured, so
 * mlp.tg's 784 -> 256 int8 layer at batch 1 (200k) took 24.7 us split
 * (grain 65536) against 14.5 us on one thread; 4096 x 4096 still splits. */
#define QM_GRAIN (1 << 18)
/* Bytes of f32 weights dequantized per sgemm call: OpenBLAS repacks x for
 * every call, so blocks of 256 rows (4 MiB at k = 4096) ran 30% slower
 * than one call; 1024 rows are within a few percent. */
#define QM_BLOCK_BYTES (16u << 20)
/* Least weights per dequantizing task. Between two sgemm calls the pool's
 * second thread competes with OpenBLAS's spinning one: mlp.tg's 784 -> 256
 * layer at batch 64 (200k weights) ran 4% faster dequantized on one thread
 * (docs/performance.md "Low precision at batch 64"). */
#define QM_DEQUANT_GRAIN (1 << 20)

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
#define ROWS(R) dot_rows_body(s, R, x, row, sc, out)
    RT_ROWS_SWITCH(mr, ROWS)
#undef ROWS
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
/* ---- the same kernels on AVX2 + FMA (CPUs without AVX-512): 8 lanes,
 * and no masked byte loads, so a chunk shorter than 8 (only the last one
 * of a row) is copied into a zeroed buffer first. Without them the GEMV
 * fell back to dot_rows_c: mlp.tg at batch 1 took 562 us against 8.6 us
 * in f32 (docs/performance.md "Low precision at batch 1 on AVX2"). ---- */

/* 8 weights from element kk of `row` (kk a multiple of 8), as f32.
 * int4: 4 bytes, each duplicated, the low nibble shifted into place for
 * even lanes and the high one for odd lanes, sign-extended by a shift
 * pair. Reads 8 (int8) or 4 (int4) bytes: the caller guarantees them. */
QM_AVX2 static inline __m256 load8(const uint8_t *row, int bits, int64_t kk) {
    __m256i v;
    if (bits == 8) {
        v = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(row + kk)));
    } else {
        int32_t b4;
        memcpy(&b4, row + kk / 2, 4);
        __m128i b = _mm_cvtsi32_si128(b4);
        v = _mm256_cvtepu8_epi32(_mm_unpacklo_epi8(b, b));
        v = _mm256_srlv_epi32(v, _mm256_set_epi32(4, 0, 4, 0, 4, 0, 4, 0));
        v = _mm256_srai_epi32(_mm256_slli_epi32(v, 28), 28);
    }
    return _mm256_cvtepi32_ps(v);
}

/* The last `live` (< 8) weights of a row from kk: through a zeroed copy,
 * since reading 8 bytes could run past the end of q. */
QM_AVX2 static inline __m256 load8_tail(const uint8_t *row, int bits, int64_t kk, int live) {
    uint8_t buf[8] = {0};
    memcpy(buf, row + (bits == 8 ? kk : kk / 2), bits == 8 ? (size_t)live : (size_t)(live + 1) / 2);
    return load8(buf, bits, 0);
}

/* 32 int4 weights from kk (kk even) as four vectors of 8 int32,
 * unscaled: one 16-byte load, both nibbles of each
 * byte split with a shift and a mask and put back in order by an
 * interleave, the sign taken by (v ^ 8) - 8 on the bytes (the per-8
 * load8 spent a variable shift and two more shifts on every 8). */
QM_AVX2 static inline void load32_int4(const uint8_t *row, int64_t kk, __m256i w[4]) {
    __m128i b = _mm_loadu_si128((const __m128i *)(row + kk / 2));
    __m128i m = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
    __m128i lo = _mm_and_si128(b, m), hi = _mm_and_si128(_mm_srli_epi16(b, 4), m);
    __m128i b0 = _mm_sub_epi8(_mm_xor_si128(_mm_unpacklo_epi8(lo, hi), eight), eight);
    __m128i b1 = _mm_sub_epi8(_mm_xor_si128(_mm_unpackhi_epi8(lo, hi), eight), eight);
    w[0] = _mm256_cvtepi8_epi32(b0);
    w[1] = _mm256_cvtepi8_epi32(_mm_srli_si128(b0, 8));
    w[2] = _mm256_cvtepi8_epi32(b1);
    w[3] = _mm256_cvtepi8_epi32(_mm_srli_si128(b1, 8));
}

/* As dot_rows_body: needs group % 8 == 0 or group >= k. mr <= 8 keeps the
 * 8 accumulators, the weights and one x vector in the 16 ymm registers.
 * Four accumulators at mr == 1, unrolled by 32: FMA latency bounds one
 * chain (two chains: mlp.tg int8 at batch 1 took 16.5 us on one thread, four:
 * 14.5 us). */
QM_AVX2 static inline __attribute__((always_inline)) void
dot_rows_body2(const QmShape *s, const int mr, const float *x, const uint8_t *row, const float *sc,
               float *out) {
    int64_t k = s->d->k;
    int bits = (int)s->d->bits;
    __m256 acc[QM_MR], acc1[3] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
        acc[r] = _mm256_setzero_ps();
    for (int64_t g0 = 0, g = 0; g0 < k; g0 += s->group, g++) {
        int64_t g1 = g0 + s->group < k ? g0 + s->group : k;
        __m256 scale = _mm256_set1_ps(sc[g]);
        int64_t kk = g0;
        if (mr == 1 && bits == 8)
            for (; kk + 32 <= g1; kk += 32) {
                if (!(kk & 63)) _mm_prefetch((const char *)row + kk + QM_PREFETCH, _MM_HINT_T0);
                __m256 w0 = _mm256_mul_ps(load8(row, bits, kk), scale);
                __m256 w1 = _mm256_mul_ps(load8(row, bits, kk + 8), scale);
                __m256 w2 = _mm256_mul_ps(load8(row, bits, kk + 16), scale);
                __m256 w3 = _mm256_mul_ps(load8(row, bits, kk + 24), scale);
                acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(x + kk), w0, acc[0]);
                acc1[0] = _mm256_fmadd_ps(_mm256_loadu_ps(x + kk + 8), w1, acc1[0]);
                acc1[1] = _mm256_fmadd_ps(_mm256_loadu_ps(x + kk + 16), w2, acc1[1]);
                acc1[2] = _mm256_fmadd_ps(_mm256_loadu_ps(x + kk + 24), w3, acc1[2]);
            }
        if (mr == 1 && bits == 4 && kk + 32 <= g1) {
            /* x . q over the group's 32-weight blocks, then times the scale
             * once (not once per weight): 4096 x 4096 at batch 1, one
             * thread, best of 300: 2.52-2.66 ms before, 1.89-1.95 after.
             * (The same for int8 measured slower: its loads extend in
             * place, without the shuffles this saves.) */
            __m256 g4[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                            _mm256_setzero_ps()};
            for (; kk + 32 <= g1; kk += 32) {
                if (!(kk & 127))
                    _mm_prefetch((const char *)row + kk / 2 + QM_PREFETCH, _MM_HINT_T0);
                __m256i w[4];
                load32_int4(row, kk, w);
#pragma GCC unroll 4
                for (int c = 0; c < 4; c++)
                    g4[c] = _mm256_fmadd_ps(_mm256_loadu_ps(x + kk + 8 * c),
                                            _mm256_cvtepi32_ps(w[c]), g4[c]);
            }
            acc[0] = _mm256_fmadd_ps(g4[0], scale, acc[0]);
            acc1[0] = _mm256_fmadd_ps(g4[1], scale, acc1[0]);
            acc1[1] = _mm256_fmadd_ps(g4[2], scale, acc1[1]);
            acc1[2] = _mm256_fmadd_ps(g4[3], scale, acc1[2]);
        }
        for (; kk + 8 <= g1; kk += 8) {
            __m256 w = _mm256_mul_ps(load8(row, bits, kk), scale);
#pragma GCC unroll 8
            for (int r = 0; r < mr; r++)
                acc[r] = _mm256_fmadd_ps(_mm256_loadu_ps(x + r * k + kk), w, acc[r]);
        }
        if (kk < g1) { /* the end of the row: x masked too (the next row follows) */
            int live = (int)(g1 - kk);
            __m256i m = rt_avx2_live_mask(live);
            __m256 w = _mm256_mul_ps(load8_tail(row, bits, kk, live), scale);
#pragma GCC unroll 8
            for (int r = 0; r < mr; r++)
                acc[r] = _mm256_fmadd_ps(_mm256_maskload_ps(x + r * k + kk, m), w, acc[r]);
        }
    }
    acc[0] = _mm256_add_ps(_mm256_add_ps(acc[0], acc1[0]), _mm256_add_ps(acc1[1], acc1[2]));
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
        out[r] = rt_avx2_hsum8(acc[r]);
}

QM_AVX2 static void dot_rows_avx2(const QmShape *s, int mr, const float *x, const void *q,
                                  const float *scales, int64_t n, float *out) {
    const uint8_t *row = (const uint8_t *)q + n * s->kbytes;
    const float *sc = scales + n * s->ngroups;
#define ROWS(R) dot_rows_body2(s, R, x, row, sc, out)
    RT_ROWS_SWITCH(mr, ROWS)
#undef ROWS
}

/* One row of x against weight rows [n0, n0 + cnt): the mr = 1 body in a
 * loop, so that a decode step's products (rows of 1 KiB at d = 1024) do
 * not pay an indirect call, a row-count switch and a dtype switch per
 * output. */
QM_AVX2 static void dot1_range_avx2(const QmShape *s, const float *x, const void *q,
                                    const float *scales, int64_t n0, int64_t cnt, float *out) {
    for (int64_t i = 0; i < cnt; i++) {
        const uint8_t *row = (const uint8_t *)q + (n0 + i) * s->kbytes;
        dot_rows_body2(s, 1, x, row, scales + (n0 + i) * s->ngroups, out + i);
    }
}

QM_AVX2 static void dequant_row_avx2(const QmShape *s, const void *q, const float *scales,
                                     int64_t n, float *w) {
    int64_t k = s->d->k;
    int bits = (int)s->d->bits;
    const uint8_t *row = (const uint8_t *)q + n * s->kbytes;
    const float *sc = scales + n * s->ngroups;
    for (int64_t g0 = 0, g = 0; g0 < k; g0 += s->group, g++) {
        int64_t g1 = g0 + s->group < k ? g0 + s->group : k;
        __m256 scale = _mm256_set1_ps(sc[g]);
        int64_t kk = g0;
        for (; kk + 8 <= g1; kk += 8)
            _mm256_storeu_ps(w + kk, _mm256_mul_ps(load8(row, bits, kk), scale));
        if (kk < g1) {
            int live = (int)(g1 - kk);
            _mm256_maskstore_ps(w + kk, rt_avx2_live_mask(live),
                                _mm256_mul_ps(load8_tail(row, bits, kk, live), scale));
        }
    }
}

static bool have_avx2(void) {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

typedef void (*DotFn)(const QmShape *, int, const float *, const void *, const float *, int64_t,
                      float *);
typedef void (*DequantFn)(const QmShape *, const void *, const float *, int64_t, float *);
typedef void (*Dot1RangeFn)(const QmShape *, const float *, const void *, const float *, int64_t,
                            int64_t, float *);

/* The vector kernels need every chunk (16 elements on AVX-512, 8 on AVX2)
 * under one scale. */
static bool vector_ok(const QmShape *s, int64_t chunk) {
    return QM_X86 && (s->group % chunk == 0 || s->group >= s->d->k);
}

static DotFn pick_dot(const QmShape *s) {
#if QM_X86
    if (vector_ok(s, 16) && have_avx512()) return dot_rows_avx512;
    if (vector_ok(s, 8) && have_avx2()) return dot_rows_avx2;
#endif
    return dot_rows_c;
}

/* The one-row kernel over a range of outputs for the picked kernel dot,
 * where there is one. */
static Dot1RangeFn dot1_range_of(DotFn dot) {
#if QM_X86
    if (dot == dot_rows_avx2) return dot1_range_avx2;
#endif
    (void)dot;
    return NULL;
}

static DequantFn pick_dequant(const QmShape *s) {
#if QM_X86
    if (vector_ok(s, 16) && have_avx512()) return dequant_row_avx512;
    if (vector_ok(s, 8) && have_avx2()) return dequant_row_avx2;
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
    Dot1RangeFn dot1; /* NULL: the per-output DotFn */
} GemvJob;

static void gemv_range(void *ctx, int64_t n0, int64_t n1, int thread) {
    (void)thread;
    const GemvJob *j = ctx;
    const RtQMatmulDesc *d = j->s->d;
    RtDType yt = (RtDType)d->y_dtype;
    size_t es = rt_dtype_size(yt);
    if (j->s->rows == 1 && j->dot1) {
        int64_t yo = row_offset(d, 0, d->y_bs, d->y_rs);
        bool direct = yt == RT_F32 && d->y_cs == 1 && !d->accumulate;
        float out[256];
        for (int64_t c0 = n0; c0 < n1; c0 += 256) {
            int64_t cnt = n1 - c0 < 256 ? n1 - c0 : 256;
            float *dst = direct ? (float *)j->y + yo + c0 : out;
            j->dot1(j->s, j->x, j->q, j->scales, c0, cnt, dst);
            if (direct) continue;
            for (int64_t i = 0; i < cnt; i++) {
                char *p = j->y + (ptrdiff_t)((yo + (c0 + i) * d->y_cs) * (int64_t)es);
                rt_store_f(p, yt, d->accumulate ? rt_load_f(p, yt) + out[i] : out[i]);
            }
        }
        return;
    }
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
                rt_store_f(p, yt, d->accumulate ? rt_load_f(p, yt) + out[r] : out[r]);
            }
        }
    }
}

static void run_gemv(const QmShape *s, const float *x, const void *q, const float *scales, void *y,
                     RtPool *pool) {
    DotFn dot = pick_dot(s);
    GemvJob j = {s, x, q, scales, y, dot, dot1_range_of(dot)};
    int64_t work = s->rows * s->d->k;
    int64_t grain = work >= QM_GRAIN ? 1 : QM_GRAIN / work;
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
    int64_t dq_grain = QM_DEQUANT_GRAIN / k > 1 ? QM_DEQUANT_GRAIN / k : 1;
    for (int64_t n0 = 0; n0 < n; n0 += nb) {
        int64_t cnt = n - n0 < nb ? n - n0 : nb;
        dj.n0 = n0;
        rt_pool_parallel_for(pool, n0, n0 + cnt, dq_grain, dequant_range, &dj);
        if (direct) {
            float *c = (float *)y + n0 * d->y_cs;
            int ldc = rows == 1 ? (int)(n > 1 ? n : 1) : (int)d->y_rs;
            rt_sgemm_par(pool, false, true, rows, cnt, k, x, (int)k, w, (int)k, d->accumulate != 0,
                         c, ldc);
            continue;
        }
        rt_sgemm_par(pool, false, true, rows, cnt, k, x, (int)k, w, (int)k, false, yb, (int)cnt);
        for (int64_t r = 0; r < rows; r++) {
            int64_t yo = row_offset(d, r, d->y_bs, d->y_rs);
            if (yt != RT_F32 && d->y_cs == 1 && !d->accumulate &&
                rt_half_narrow_row((uint16_t *)y + yo + n0, yb + r * cnt, cnt, yt == RT_F16))
                continue;
            for (int64_t jn = 0; jn < cnt; jn++) {
                char *p = (char *)y + (ptrdiff_t)((yo + (n0 + jn) * d->y_cs) * (int64_t)es);
                float v = yb[r * cnt + jn];
                rt_store_f(p, yt, d->accumulate ? rt_load_f(p, yt) + v : v);
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
                acc += rt_load_f((const char *)x + (ptrdiff_t)((xo + kk * d->x_cs) * (int64_t)xes),
                                 xt) *
                       w;
            }
            char *p = (char *)y + (ptrdiff_t)((yo + n * d->y_cs) * (int64_t)yes);
            rt_store_f(p, yt, d->accumulate ? rt_load_f(p, yt) + acc : acc);
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
        if (xt != RT_F32 && d->x_cs == 1 &&
            rt_half_widen_row(out, (const uint16_t *)src, k, xt == RT_F16))
            continue;
        ptrdiff_t step = (ptrdiff_t)(d->x_cs * (int64_t)es);
        for (int64_t kk = 0; kk < k; kk++, src += step)
            out[kk] = rt_load_f(src, xt);
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

    /* x already dense f32 [rows][k] (activations, mostly) is used as it is. */
    bool dense = d->x_dtype == RT_F32 && d->x_cs == 1 && rows_uniform(d, d->x_bs, d->x_rs) &&
                 (rows == 1 || d->x_rs == d->k);
    float *xf = NULL;
    if (!dense && (uint64_t)rows <= SIZE_MAX / 4 / (uint64_t)d->k)
        xf = rt_aligned_alloc((size_t)(rows * d->k) * 4);
    if (!dense && !xf) {
        run_scalar(&s, x, q, scales, y);
        return;
    }
    if (!dense) gather_x(&s, x, xf);
    const float *xd = dense ? (const float *)x : xf;
    if (rows <= QM_GEMV_MAX_ROWS || !run_sgemm(&s, xd, q, scales, y, pool))
        run_gemv(&s, xd, q, scales, y, pool);
    rt_aligned_free(xf);
}
