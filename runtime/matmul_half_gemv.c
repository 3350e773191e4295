/* f16/bf16 matrix products with few rows (or few columns) on AVX2 + FMA
 * (+ F16C for f16), for rt_matmul: C (+)= A @ B with A [m, k] small. The
 * fallback (matmul.c's widen + sgemm) widens the whole matrix operand B to
 * f32 scratch on every call, which at batch 1 costs far more than the
 * product; here B is read in place and widened in registers (bf16: a
 * 16-bit shift; f16: vcvtph2ps), A is gathered into a dense f32 copy
 * (O(m k), any strides), the sums are kept in f32 and rounded once into C,
 * as the widening path does: the result differs only by summation order.
 *
 * Two layouts of B are read in place, one kernel each:
 * - k contiguous (B^T stored [n][k], torch.nn.Linear weights): each column
 *   of B is a dot product against up to HG_MR rows of A at once;
 * - n contiguous (B stored [k][n]): rows of B are axpy'd into a strip of
 *   32 columns of C for up to 4 rows of A at once.
 * Any other B layout returns false (the caller widens). With m large and
 * n small the product is transposed (C^T = B^T A^T) first. The pool splits
 * the columns of C. */
#include <string.h>

#include "rt_internal.h"

/* Up to this many rows of A (or columns of B, transposed) the in-place
 * kernels run; above it the widening path's sgemm catches up. Measured
 * (2 threads, the loaded AVX2 EPYC, min of 30-200 runs, in-place against
 * widen + sgemm, bf16; f16 alike):
 *   [m, 784] @ [784, 256]:          m = 1 13 us vs 374, 16: 221 vs 509,
 *                                   32: 433 vs 619, 64: 858 vs 826;
 *   [m, 4096] @ [4096, 4096]^T:     m = 1 0.9 ms vs 203, 32: 43 vs 184;
 *   [m, 4096] @ [4096, 4096]:       m = 1 3.9 ms vs 68, 32: 35 vs 86;
 *   [m, 256] @ [256, 10]^T:         m = 1 0.7 us vs 5.8, 32: 18 vs 25. */
#define HG_MAX_M 32
#define HG_MR 8 /* rows of A per pass over a column (dot kernel) */
#define HG_AR 4 /* rows of A per pass over a strip (axpy kernel) */
/* Least multiply-adds per pool task: waking the second thread costs about
 * 10 us on the loaded 2-core machine measured (as in qmatmul.c). */
#define HG_GRAIN (1 << 18)

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <stdatomic.h>

#include "rt_avx2.h"

#define HG_TARGET __attribute__((target("avx2,fma,f16c")))

typedef struct HalfJob {
    bool f16;
    int64_t m, n, k;
    const float *x; /* A as dense f32 [m][k] */
    const uint16_t *b;
    int64_t b_rs, b_cs;
    uint16_t *c;
    int64_t c_rs, c_cs;
    bool acc;
} HalfJob;

/* 8 elements as f32: bf16 is the high half of an f32; f16 through F16C. */
HG_TARGET static inline __m256 ld8h(const uint16_t *p, bool f16) {
    __m128i h = _mm_loadu_si128((const __m128i *)p);
    if (f16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* The last `live` (< 8) elements, through a zeroed copy: reading 8 could
 * run past the end of B. */
HG_TARGET static inline __m256 ld8h_tail(const uint16_t *p, int live, bool f16) {
    uint16_t buf[8] = {0};
    memcpy(buf, p, (size_t)live * 2);
    return ld8h(buf, f16);
}

/* C[i][j] = round(v (+ C[i][j])): one rounding of the f32 sum. */
static void store_out(const HalfJob *j, int64_t i, int64_t col, float v) {
    uint16_t *p = j->c + (ptrdiff_t)(i * j->c_rs + col * j->c_cs);
    if (j->acc) v += j->f16 ? rt_f16_to_f32(*p) : rt_bf16_to_f32(*p);
    *p = j->f16 ? rt_f32_to_f16(v) : rt_f32_to_bf16(v);
}

/* ---- k contiguous: out[r] = sum_k x[r][k] col[k], r < mr ---- */

/* Four accumulators at mr == 1 (one FMA chain would be latency-bound). */
HG_TARGET static inline __attribute__((always_inline)) void
dot_body(int64_t k, const int mr, const bool f16, const float *x, const uint16_t *col, float *out) {
    __m256 acc[HG_MR], e[3] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
        acc[r] = _mm256_setzero_ps();
    int64_t kk = 0;
    if (mr == 1)
        for (; kk + 32 <= k; kk += 32) {
            acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(x + kk), ld8h(col + kk, f16), acc[0]);
            e[0] = _mm256_fmadd_ps(_mm256_loadu_ps(x + kk + 8), ld8h(col + kk + 8, f16), e[0]);
            e[1] = _mm256_fmadd_ps(_mm256_loadu_ps(x + kk + 16), ld8h(col + kk + 16, f16), e[1]);
            e[2] = _mm256_fmadd_ps(_mm256_loadu_ps(x + kk + 24), ld8h(col + kk + 24, f16), e[2]);
        }
    for (; kk + 8 <= k; kk += 8) {
        __m256 w = ld8h(col + kk, f16);
#pragma GCC unroll 8
        for (int r = 0; r < mr; r++)
            acc[r] = _mm256_fmadd_ps(_mm256_loadu_ps(x + r * k + kk), w, acc[r]);
    }
    if (kk < k) { /* x masked too: the next row of x follows */
        int live = (int)(k - kk);
        __m256i msk = rt_avx2_live_mask(live);
        __m256 w = ld8h_tail(col + kk, live, f16);
#pragma GCC unroll 8
        for (int r = 0; r < mr; r++)
            acc[r] = _mm256_fmadd_ps(_mm256_maskload_ps(x + r * k + kk, msk), w, acc[r]);
    }
    acc[0] = _mm256_add_ps(_mm256_add_ps(acc[0], e[0]), _mm256_add_ps(e[1], e[2]));
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
        out[r] = rt_avx2_hsum8(acc[r]);
}

HG_TARGET static void dot_rows(int64_t k, int mr, bool f16, const float *x, const uint16_t *col,
                               float *out) {
#define ROWS_F16(R) dot_body(k, R, true, x, col, out)
#define ROWS_BF16(R) dot_body(k, R, false, x, col, out)
    if (f16) {
        RT_ROWS_SWITCH(mr, ROWS_F16)
    } else {
        RT_ROWS_SWITCH(mr, ROWS_BF16)
    }
#undef ROWS_F16
#undef ROWS_BF16
}

/* Columns [n0, n1): each column is read once from memory, then from L1
 * for further passes of HG_MR rows. */
static void dot_range(void *ctx, int64_t n0, int64_t n1, int thread) {
    (void)thread;
    const HalfJob *j = ctx;
    for (int64_t col = n0; col < n1; col++) {
        const uint16_t *bc = j->b + (ptrdiff_t)(col * j->b_cs);
        for (int64_t r0 = 0; r0 < j->m; r0 += HG_MR) {
            int mr = j->m - r0 < HG_MR ? (int)(j->m - r0) : HG_MR;
            float out[HG_MR];
            dot_rows(j->k, mr, j->f16, j->x + r0 * j->k, bc, out);
            for (int r = 0; r < mr; r++)
                store_out(j, r0 + r, col, out[r]);
        }
    }
}

/* ---- n contiguous: a strip of nv * 8 columns from j0 (`live` of them
 * real) for mr rows, every row of B axpy'd into nv * mr accumulators ---- */

HG_TARGET static inline __attribute__((always_inline)) void axpy_body(const HalfJob *j,
                                                                      const int mr, const int nv,
                                                                      const bool f16, int64_t r0,
                                                                      int64_t j0, int live) {
    int64_t k = j->k;
    const float *x = j->x + r0 * k;
    const uint16_t *bp = j->b + j0;
    __m256 acc[HG_AR][4];
#pragma GCC unroll 4
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            acc[r][v] = _mm256_setzero_ps();
    for (int64_t kk = 0; kk < k; kk++, bp += j->b_rs) {
        __m256 w[4];
        if (live == nv * 8) {
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++)
                w[v] = ld8h(bp + 8 * v, f16);
        } else { /* the last strip: a zeroed copy, not a read past B */
            uint16_t buf[32] = {0};
            memcpy(buf, bp, (size_t)live * 2);
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++)
                w[v] = ld8h(buf + 8 * v, f16);
        }
#pragma GCC unroll 4
        for (int r = 0; r < mr; r++) {
            __m256 xb = _mm256_broadcast_ss(x + r * k + kk);
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++)
                acc[r][v] = _mm256_fmadd_ps(xb, w[v], acc[r][v]);
        }
    }
    float out[32];
    for (int r = 0; r < mr; r++) {
        for (int v = 0; v < nv; v++)
            _mm256_storeu_ps(out + 8 * v, acc[r][v]);
        for (int c = 0; c < live; c++)
            store_out(j, r0 + r, j0 + c, out[c]);
    }
}

/* mr == 1 takes 32 columns (four FMA chains), more rows 16 columns each:
 * 4 rows x 2 vectors of accumulators, the weights and a broadcast fit in
 * the 16 ymm registers. */
HG_TARGET static void axpy_strip(const HalfJob *j, int mr, int nv, int64_t r0, int64_t j0,
                                 int live) {
#define HG_AXPY(F16)                                                                               \
    switch (mr) {                                                                                  \
    case 1: axpy_body(j, 1, 4, F16, r0, j0, live); break;                                          \
    case 2: axpy_body(j, 2, 2, F16, r0, j0, live); break;                                          \
    case 3: axpy_body(j, 3, 2, F16, r0, j0, live); break;                                          \
    default: axpy_body(j, 4, 2, F16, r0, j0, live); break;                                         \
    }
    (void)nv;
    if (j->f16) {
        HG_AXPY(true)
    } else {
        HG_AXPY(false)
    }
#undef HG_AXPY
}

/* Units of 32 columns [u0, u1). */
static void axpy_range(void *ctx, int64_t u0, int64_t u1, int thread) {
    (void)thread;
    const HalfJob *j = ctx;
    for (int64_t u = u0; u < u1; u++) {
        int64_t j0 = u * 32, cols = j->n - j0 < 32 ? j->n - j0 : 32;
        for (int64_t r0 = 0; r0 < j->m; r0 += HG_AR) {
            int mr = j->m - r0 < HG_AR ? (int)(j->m - r0) : HG_AR;
            if (mr == 1) {
                axpy_strip(j, 1, 4, r0, j0, (int)cols);
                continue;
            }
            for (int64_t h = 0; h < cols; h += 16)
                axpy_strip(j, mr, 2, r0, j0 + h, (int)(cols - h < 16 ? cols - h : 16));
        }
    }
}

/* F16C through CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports
 * does not know "f16c". CPUID traps to the hypervisor in a VM (mlp.tg f16
 * at batch 1 took 31.7 us asking per call, 13.3 us cached), so the answer
 * is cached: the runtime's one piece of global state here, idempotent, so
 * a racy first call is harmless. */
static bool have_f16c(void) {
    static _Atomic int known; /* 0: not asked yet, 1: no, 2: yes */
    int v = atomic_load_explicit(&known, memory_order_relaxed);
    if (!v) {
        unsigned a, b, c, d;
        v = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) ? 2 : 1;
        atomic_store_explicit(&known, v, memory_order_relaxed);
    }
    return v == 2;
}

static bool have_cpu(bool f16) {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && (!f16 || have_f16c());
}

bool rt_matmul_half_gemv(RtDType t, int64_t m, int64_t n, int64_t k, const uint16_t *a,
                         int64_t a_rs, int64_t a_cs, const uint16_t *b, int64_t b_rs, int64_t b_cs,
                         uint16_t *c, int64_t c_rs, int64_t c_cs, bool acc, RtPool *pool) {
    bool f16 = t == RT_F16;
    if ((t != RT_F16 && t != RT_BF16) || m <= 0 || n <= 0 || k <= 0 || k > INT64_MAX / 128 ||
        !have_cpu(f16))
        return false;
    if (m > HG_MAX_M && n <= HG_MAX_M) { /* few columns: C^T = B^T A^T */
        const uint16_t *p = a;
        int64_t rs = a_rs, cs = a_cs, s;
        a = b, a_rs = b_cs, a_cs = b_rs;
        b = p, b_rs = cs, b_cs = rs;
        s = m, m = n, n = s;
        s = c_rs, c_rs = c_cs, c_cs = s;
    }
    if (m > HG_MAX_M) return false;
    bool dot = b_rs == 1, axpy = !dot && b_cs == 1;
    if (!dot && !axpy) return false;
    float *x = rt_aligned_alloc((size_t)(m * k) * 4);
    if (!x) return false;
    for (int64_t i = 0; i < m; i++)
        for (int64_t kk = 0; kk < k; kk++) {
            uint16_t h = a[(ptrdiff_t)(i * a_rs + kk * a_cs)];
            x[i * k + kk] = f16 ? rt_f16_to_f32(h) : rt_bf16_to_f32(h);
        }
    HalfJob j = {f16, m, n, k, x, b, b_rs, b_cs, c, c_rs, c_cs, acc};
    if (dot) {
        int64_t work = m * k;
        rt_pool_parallel_for(pool, 0, n, work >= HG_GRAIN ? 1 : HG_GRAIN / work, dot_range, &j);
    } else {
        int64_t work = m * k * 32;
        rt_pool_parallel_for(pool, 0, (n + 31) / 32, work >= HG_GRAIN ? 1 : HG_GRAIN / work,
                             axpy_range, &j);
    }
    rt_aligned_free(x);
    return true;
}

/* ---- whole rows converted 8 at a time, for matmul.c's widening path ---- */

HG_TARGET static void widen_row(float *dst, const uint16_t *src, int64_t n, bool f16) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, ld8h(src + i, f16));
    if (i < n) {
        int live = (int)(n - i);
        _mm256_maskstore_ps(dst + i, rt_avx2_live_mask(live), ld8h_tail(src + i, live, f16));
    }
}

/* 8 floats rounded to bf16 as rt_f32_to_bf16 does: nearest even, NaN ->
 * 0x7fc0. */
HG_TARGET static inline __m128i bf16_round8(__m256 v) {
    __m256i u = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
    r = _mm256_srli_epi32(r, 16);
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7fc0), nan);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

HG_TARGET static void narrow_row(uint16_t *dst, const float *src, int64_t n, bool f16) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(src + i);
        if (!f16) {
            _mm_storeu_si128((__m128i *)(dst + i), bf16_round8(v));
            continue;
        }
        /* vcvtps2ph rounds like rt_f32_to_f16 but keeps NaN payloads,
         * where c10 gives 0x7e00: lanes with a NaN go one by one. */
        if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q))) {
            for (int e = 0; e < 8; e++)
                dst[i + e] = rt_f32_to_f16(src[i + e]);
            continue;
        }
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    for (; i < n; i++)
        dst[i] = f16 ? rt_f32_to_f16(src[i]) : rt_f32_to_bf16(src[i]);
}

bool rt_half_widen_row(float *dst, const uint16_t *src, int64_t n, bool f16) {
    if (!have_cpu(f16)) return false;
    widen_row(dst, src, n, f16);
    return true;
}

bool rt_half_narrow_row(uint16_t *dst, const float *src, int64_t n, bool f16) {
    if (!have_cpu(f16)) return false;
    narrow_row(dst, src, n, f16);
    return true;
}
#else
bool rt_half_widen_row(float *dst, const uint16_t *src, int64_t n, bool f16) {
    (void)dst, (void)src, (void)n, (void)f16;
    return false;
}
bool rt_half_narrow_row(uint16_t *dst, const float *src, int64_t n, bool f16) {
    (void)dst, (void)src, (void)n, (void)f16;
    return false;
}
bool rt_matmul_half_gemv(RtDType t, int64_t m, int64_t n, int64_t k, const uint16_t *a,
                         int64_t a_rs, int64_t a_cs, const uint16_t *b, int64_t b_rs, int64_t b_cs,
                         uint16_t *c, int64_t c_rs, int64_t c_cs, bool acc, RtPool *pool) {
    (void)t, (void)m, (void)n, (void)k, (void)a, (void)a_rs, (void)a_cs, (void)b, (void)b_rs;
    (void)b_cs, (void)c, (void)c_rs, (void)c_cs, (void)acc, (void)pool;
    return false;
}
#endif
