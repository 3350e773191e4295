/* bf16 matrix products on CPUs with AVX-512 BF16 (vdpbf16ps), for
 * rt_matmul: C (+)= A @ B with bf16 A [m, k] and B [k, n], f32
 * accumulation, the result rounded once into C (bf16, or f32 for callers
 * that keep an f32 output). OpenBLAS 0.3.21 has no cblas_sbgemm, and the
 * fallback (widen to f32, sgemm, narrow) spends most of its time widening
 * for small m and moves twice the bytes for large m.
 *
 * vdpbf16ps multiplies 16 pairs of bf16 (exact products) and adds both
 * into 16 f32 lanes, so both operands are packed as pairs along k:
 * - A in panels of QB_MR rows: for each pair kp, QB_MR dwords
 *   (A[i][2kp], A[i][2kp+1]), broadcast one at a time;
 * - B in panels of 32 columns: for each pair kp, 32 dwords
 *   (B[2kp][j], B[2kp+1][j]), two vectors.
 * An odd k is padded with a zero; short panels with zero rows or columns
 * (never stored). The microkernel keeps a QB_MR x 32 f32 tile in registers
 * over the whole k, so the result is rounded once when it is stored.
 *
 * Work items are blocks of QB_NC columns (times chunks of rows when there
 * are too few column blocks for the threads); each packs its B block into
 * a per-thread buffer sized to stay in L2, then sweeps every A panel over
 * it. A is packed once, up front.
 *
 * vdpbf16ps treats denormal inputs as zero and flushes denormal results to
 * zero (it ignores MXCSR): results below 2^-126 in magnitude may differ
 * from the f32 path by that much. Rounding to bf16 is done with integer
 * operations, as rt_f32_to_bf16 does (NaN becomes 0x7fc0). */
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

bool rt_matmul_bf16(int64_t m, int64_t n, int64_t k, const uint16_t *a, int64_t a_rs, int64_t a_cs,
                    const uint16_t *b, int64_t b_rs, int64_t b_cs, void *c, RtDType ct,
                    int64_t c_rs, int64_t c_cs, bool acc, RtPool *pool);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define QB_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
#define QB_MR 12
#define QB_NR 32
#define QB_L2_BYTES (1u << 20) /* half the L2 of the cores measured on: B block + A panel */

typedef struct Bf16Job {
    int64_t m, n, k, kp; /* kp: pairs along k */
    const uint16_t *b;
    int64_t b_rs, b_cs;
    const uint32_t *ap; /* packed A: [ceil(m / QB_MR)][kp][QB_MR] */
    uint32_t **bbuf;    /* per thread: [nc / 32][kp][32] */
    char *c;
    RtDType ct;
    int64_t c_rs, c_cs;
    bool acc;
    int64_t nc, nblocks, mchunks, panels_per_chunk;
} Bf16Job;

static inline uint16_t ld16(const uint16_t *base, int64_t off) {
    return base[off];
}

/* ---- packing ---- */

typedef struct PackA {
    const uint16_t *a;
    int64_t m, k, kp, rs, cs;
    uint32_t *ap;
} PackA;

static void pack_a_range(void *ctx, int64_t p0, int64_t p1, int thread) {
    (void)thread;
    const PackA *j = ctx;
    for (int64_t p = p0; p < p1; p++) {
        uint32_t *dst = j->ap + p * j->kp * QB_MR;
        for (int r = 0; r < QB_MR; r++) {
            int64_t i = p * QB_MR + r;
            if (i >= j->m) {
                for (int64_t q = 0; q < j->kp; q++)
                    dst[q * QB_MR + r] = 0;
                continue;
            }
            const uint16_t *row = j->a + i * j->rs;
            int64_t full = j->k / 2;
            if (j->cs == 1)
                for (int64_t q = 0; q < full; q++) {
                    uint32_t v;
                    memcpy(&v, row + 2 * q, 4); /* little-endian: low half is 2q */
                    dst[q * QB_MR + r] = v;
                }
            else
                for (int64_t q = 0; q < full; q++)
                    dst[q * QB_MR + r] = (uint32_t)ld16(row, 2 * q * j->cs) |
                                         (uint32_t)ld16(row, (2 * q + 1) * j->cs) << 16;
            if (j->k & 1) dst[full * QB_MR + r] = ld16(row, (j->k - 1) * j->cs);
        }
    }
}

/* Columns [j0, j0 + nj) of B, nj <= 32, as one packed panel [kp][32]. */
static void pack_b_panel(const Bf16Job *j, int64_t j0, int64_t nj, uint32_t *dst) {
    int64_t full = j->k / 2;
    if (j->b_rs == 1) {
        /* Columns contiguous along k (a transposed weight): each pair is one
         * dword of its column. In runs of 64 pairs, so the transposed writes
         * stay within 8 KiB (L1) while every column is read in order. */
        for (int64_t q0 = 0; q0 < full; q0 += 64) {
            int64_t q1 = q0 + 64 < full ? q0 + 64 : full;
            for (int64_t c = 0; c < nj; c++) {
                const uint16_t *col = j->b + (j0 + c) * j->b_cs;
                for (int64_t q = q0; q < q1; q++) {
                    uint32_t v;
                    memcpy(&v, col + 2 * q, 4);
                    dst[q * QB_NR + c] = v;
                }
            }
        }
    } else {
        for (int64_t q = 0; q < full; q++)
            for (int64_t c = 0; c < nj; c++)
                dst[q * QB_NR + c] =
                    (uint32_t)ld16(j->b, 2 * q * j->b_rs + (j0 + c) * j->b_cs) |
                    (uint32_t)ld16(j->b, (2 * q + 1) * j->b_rs + (j0 + c) * j->b_cs) << 16;
    }
    if (j->k & 1)
        for (int64_t c = 0; c < nj; c++)
            dst[full * QB_NR + c] = ld16(j->b, (j->k - 1) * j->b_rs + (j0 + c) * j->b_cs);
    if (nj < QB_NR)
        for (int64_t q = 0; q < j->kp; q++)
            for (int64_t c = nj; c < QB_NR; c++)
                dst[q * QB_NR + c] = 0;
}

/* Columns [n0, n0 + nn) of B into panels dst[p][kp][32]. Row-major B goes
 * a pair of rows at a time across every full panel, so each row is read
 * as one contiguous run (a panel at a time would stride over all of B's
 * rows once per panel): two rows of 32 columns are interleaved by word,
 * out0 taking columns 0-15 of both, out1 columns 16-31. */
QB_TARGET static void pack_b_block(const Bf16Job *j, int64_t n0, int64_t nn, uint32_t *dst) {
    int64_t fullp = j->b_cs == 1 && j->b_rs != 1 ? nn / QB_NR : 0, full = j->k / 2;
    if (fullp) {
        __m512i i0 = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8,
                                      39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
        __m512i i1 = _mm512_add_epi16(i0, _mm512_set1_epi16(16));
        for (int64_t q = 0; q < full; q++) {
            const uint16_t *b0 = j->b + 2 * q * j->b_rs + n0, *b1 = b0 + j->b_rs;
            for (int64_t p = 0; p < fullp; p++) {
                __m512i r0 = _mm512_loadu_si512(b0 + p * QB_NR);
                __m512i r1 = _mm512_loadu_si512(b1 + p * QB_NR);
                uint32_t *o = dst + (p * j->kp + q) * QB_NR;
                _mm512_storeu_si512(o, _mm512_permutex2var_epi16(r0, i0, r1));
                _mm512_storeu_si512(o + 16, _mm512_permutex2var_epi16(r0, i1, r1));
            }
        }
        if (j->k & 1)
            for (int64_t p = 0; p < fullp; p++)
                for (int64_t c = 0; c < QB_NR; c++)
                    dst[(p * j->kp + full) * QB_NR + c] =
                        ld16(j->b, (j->k - 1) * j->b_rs + n0 + p * QB_NR + c);
    }
    for (int64_t p = fullp; p * QB_NR < nn; p++) {
        int64_t nj = nn - p * QB_NR < QB_NR ? nn - p * QB_NR : QB_NR;
        pack_b_panel(j, n0 + p * QB_NR, nj, dst + p * j->kp * QB_NR);
    }
}

/* ---- the microkernel and the store ---- */

/* f32 -> bf16 as rt_f32_to_bf16: round to nearest even on the bits, NaN
 * to 0x7fc0. */
QB_TARGET static inline __m256i round_bf16(__m512 v) {
    __m512i u = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_set1_epi32(0x7fc0));
    return _mm512_cvtepi32_epi16(r);
}

/* 16 columns of one row of the tile into C, columns [0, nj) of them. */
QB_TARGET static inline void store16(const Bf16Job *j, char *cp, __m512 v, int nj) {
    __mmask16 live = nj >= 16 ? 0xffff : (__mmask16)((1u << nj) - 1);
    if (j->ct == RT_F32) {
        float *p = (float *)cp;
        if (j->c_cs == 1) {
            if (j->acc) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(live, p));
            _mm512_mask_storeu_ps(p, live, v);
            return;
        }
        float t[16];
        _mm512_storeu_ps(t, v);
        for (int c = 0; c < nj; c++)
            p[c * j->c_cs] = j->acc ? p[c * j->c_cs] + t[c] : t[c];
        return;
    }
    uint16_t *p = (uint16_t *)cp;
    if (j->c_cs == 1) {
        if (j->acc) {
            __m512i old = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(live, p));
            v = _mm512_add_ps(v, _mm512_castsi512_ps(_mm512_slli_epi32(old, 16)));
        }
        _mm256_mask_storeu_epi16(p, live, round_bf16(v));
        return;
    }
    float t[16];
    if (j->acc) {
        for (int c = 0; c < nj; c++)
            t[c] = rt_bf16_to_f32(p[c * j->c_cs]);
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(live, t));
    }
    uint16_t h[16];
    _mm256_storeu_si256((__m256i *)h, round_bf16(v));
    for (int c = 0; c < nj; c++)
        p[c * j->c_cs] = h[c];
}

/* C[i0 : i0 + mr][j0 : j0 + nj] from one A panel and one B panel, mr a
 * constant after inlining so the 2 * mr accumulators stay in registers. */
QB_TARGET static inline __attribute__((always_inline)) void
kernel_body(const Bf16Job *j, const int mr, const uint32_t *ap, const uint32_t *bp, int64_t i0,
            int64_t j0, int nj) {
    __m512 c0[QB_MR], c1[QB_MR];
#pragma GCC unroll 12
    for (int r = 0; r < mr; r++)
        c0[r] = c1[r] = _mm512_setzero_ps();
    for (int64_t q = 0; q < j->kp; q++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp + q * QB_NR);
        __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + q * QB_NR + 16);
        const uint32_t *aq = ap + q * QB_MR;
#pragma GCC unroll 12
        for (int r = 0; r < mr; r++) {
            __m512bh av = (__m512bh)_mm512_set1_epi32((int)aq[r]);
            c0[r] = _mm512_dpbf16_ps(c0[r], av, b0);
            c1[r] = _mm512_dpbf16_ps(c1[r], av, b1);
        }
    }
    size_t es = rt_dtype_size(j->ct);
    for (int r = 0; r < mr; r++) {
        char *row = j->c + (ptrdiff_t)(((i0 + r) * j->c_rs + j0 * j->c_cs) * (int64_t)es);
        store16(j, row, c0[r], nj < 16 ? nj : 16);
        if (nj > 16) store16(j, row + (ptrdiff_t)(16 * j->c_cs * (int64_t)es), c1[r], nj - 16);
    }
}

QB_TARGET static void kernel(const Bf16Job *j, int mr, const uint32_t *ap, const uint32_t *bp,
                             int64_t i0, int64_t j0, int nj) {
    switch (mr) {
    case 1: kernel_body(j, 1, ap, bp, i0, j0, nj); break;
    case 2: kernel_body(j, 2, ap, bp, i0, j0, nj); break;
    case 3: kernel_body(j, 3, ap, bp, i0, j0, nj); break;
    case 4: kernel_body(j, 4, ap, bp, i0, j0, nj); break;
    case 5: kernel_body(j, 5, ap, bp, i0, j0, nj); break;
    case 6: kernel_body(j, 6, ap, bp, i0, j0, nj); break;
    case 7: kernel_body(j, 7, ap, bp, i0, j0, nj); break;
    case 8: kernel_body(j, 8, ap, bp, i0, j0, nj); break;
    case 9: kernel_body(j, 9, ap, bp, i0, j0, nj); break;
    case 10: kernel_body(j, 10, ap, bp, i0, j0, nj); break;
    case 11: kernel_body(j, 11, ap, bp, i0, j0, nj); break;
    default: kernel_body(j, 12, ap, bp, i0, j0, nj); break;
    }
}

/* Work item w: column block w / mchunks, row chunk w % mchunks. */
QB_TARGET static void run_items(void *ctx, int64_t w0, int64_t w1, int thread) {
    const Bf16Job *j = ctx;
    uint32_t *bb = j->bbuf[thread];
    int64_t npanels = (j->m + QB_MR - 1) / QB_MR;
    for (int64_t w = w0; w < w1; w++) {
        int64_t blk = w / j->mchunks, chunk = w % j->mchunks;
        int64_t n0 = blk * j->nc, nn = j->n - n0 < j->nc ? j->n - n0 : j->nc;
        int64_t nbp = (nn + QB_NR - 1) / QB_NR;
        pack_b_block(j, n0, nn, bb);
        int64_t p0 = chunk * j->panels_per_chunk;
        int64_t p1 = p0 + j->panels_per_chunk < npanels ? p0 + j->panels_per_chunk : npanels;
        for (int64_t ip = p0; ip < p1; ip++) {
            int64_t i0 = ip * QB_MR;
            int mr = j->m - i0 < QB_MR ? (int)(j->m - i0) : QB_MR;
            const uint32_t *ap = j->ap + ip * j->kp * QB_MR;
            for (int64_t p = 0; p < nbp; p++) {
                int nj = nn - p * QB_NR < QB_NR ? (int)(nn - p * QB_NR) : QB_NR;
                kernel(j, mr, ap, bb + p * j->kp * QB_NR, i0, n0 + p * QB_NR, nj);
            }
        }
    }
}

static bool have_bf16(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512bf16");
}

bool rt_matmul_bf16(int64_t m, int64_t n, int64_t k, const uint16_t *a, int64_t a_rs, int64_t a_cs,
                    const uint16_t *b, int64_t b_rs, int64_t b_cs, void *c, RtDType ct,
                    int64_t c_rs, int64_t c_cs, bool acc, RtPool *pool) {
    if (m <= 0 || n <= 0 || k <= 0 || (ct != RT_BF16 && ct != RT_F32) || !have_bf16()) return false;
    int64_t kp = (k + 1) / 2;
    int threads = rt_pool_threads(pool);
    /* Columns per block: a B block of kp * nc dwords fits the L2 budget;
     * at least two items per thread when n allows it. */
    int64_t nc = (int64_t)(QB_L2_BYTES / 4) / kp / QB_NR * QB_NR;
    if (nc < QB_NR) nc = QB_NR;
    if (nc > 512) nc = 512;
    if (m <= QB_MR) nc = 1024; /* B is used once: longer runs, no reuse to keep in L2 */
    int64_t per = ((n + 2 * threads - 1) / (2 * threads) + QB_NR - 1) / QB_NR * QB_NR;
    if (nc > per) nc = per;
    int64_t nblocks = (n + nc - 1) / nc, npanels = (m + QB_MR - 1) / QB_MR;
    int64_t mchunks = nblocks >= 2 * threads ? 1 : (2 * threads + nblocks - 1) / nblocks;
    if (mchunks > npanels) mchunks = npanels;
    int64_t ppc = (npanels + mchunks - 1) / mchunks;
    mchunks = (npanels + ppc - 1) / ppc;

    if ((uint64_t)npanels * (uint64_t)kp > SIZE_MAX / 4 / QB_MR ||
        (uint64_t)nc * (uint64_t)kp > SIZE_MAX / 4 / (uint64_t)threads)
        return false;
    uint32_t *ap = rt_aligned_alloc((size_t)(npanels * kp) * QB_MR * 4);
    uint32_t **bbuf = calloc((size_t)threads, sizeof *bbuf);
    bool ok = ap && bbuf;
    for (int t = 0; ok && t < threads; t++)
        ok = (bbuf[t] = rt_aligned_alloc((size_t)(nc * kp) * 4)) != NULL;
    if (ok) {
        PackA pa = {a, m, k, kp, a_rs, a_cs, ap};
        rt_pool_parallel_for(pool, 0, npanels, 1, pack_a_range, &pa);
        Bf16Job j = {m,         n,  k,    kp,   b,   b_rs, b_cs,    ap,      bbuf,
                     (char *)c, ct, c_rs, c_cs, acc, nc,   nblocks, mchunks, ppc};
        rt_pool_parallel_for(pool, 0, nblocks * mchunks, 1, run_items, &j);
    }
    for (int t = 0; bbuf && t < threads; t++)
        rt_aligned_free(bbuf[t]);
    free(bbuf);
    rt_aligned_free(ap);
    return ok;
}
#else
bool rt_matmul_bf16(int64_t m, int64_t n, int64_t k, const uint16_t *a, int64_t a_rs, int64_t a_cs,
                    const uint16_t *b, int64_t b_rs, int64_t b_cs, void *c, RtDType ct,
                    int64_t c_rs, int64_t c_cs, bool acc, RtPool *pool) {
    (void)m, (void)n, (void)k, (void)a, (void)a_rs, (void)a_cs, (void)b, (void)b_rs, (void)b_cs;
    (void)c, (void)ct, (void)c_rs, (void)c_cs, (void)acc, (void)pool;
    return false;
}
#endif
