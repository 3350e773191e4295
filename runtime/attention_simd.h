/* The vectorised row helpers the attention kernels share (attention.c,
 * the forward; attention_bwd.c, the backward): included by those two
 * files only, each getting its own static copies. */
#ifndef TGC_RT_ATTENTION_SIMD_H
#define TGC_RT_ATTENTION_SIMD_H
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rt_internal.h"

/* The scores' row max and exponentials are most of the kernel's time after
 * the two products; libm's expf does not vectorise and this file is built
 * for the baseline ISA, so they are written with GCC's vector extensions
 * (eight floats at a time, AVX2 clones where the CPU has it). exp8 is
 * Cephes' expf (range reduction by ln 2 in two parts, a degree-5
 * polynomial, 2^n through the exponent bits; within 2 ulps of expf);
 * arguments below -87.3, masked keys' -inf among them, give exactly 0. */
/* The helpers below are static and inlined into their callers, so the
 * calling convention of 32-byte vectors without AVX never applies. */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ATTN_CLONES __attribute__((target_clones("avx2,fma", "default")))
#else
#define ATTN_CLONES
#endif

static inline v8f splat(float x) {
    return (v8f){x, x, x, x, x, x, x, x};
}

static inline v8f select8(v8i m, v8f a, v8f b) {
    return (v8f)(((v8i)a & m) | ((v8i)b & ~m));
}

static inline v8f exp8(v8f x) {
    v8i dead = x < splat(-87.3f);
    x = select8(dead, splat(-87.3f), x);
    const v8f magic = splat(12582912.0f); /* 1.5 * 2^23: adding it rounds to an integer */
    v8f fx = (x * splat(1.44269504088896341f) + magic) - magic;
    v8f r = x - fx * splat(0.693359375f) + fx * splat(2.12194440e-4f);
    v8f p = splat(1.9875691500e-4f);
    p = p * r + splat(1.3981999507e-3f);
    p = p * r + splat(8.3334519073e-3f);
    p = p * r + splat(4.1665795894e-2f);
    p = p * r + splat(1.6666665459e-1f);
    p = p * r + splat(5.0000001201e-1f);
    p = p * r * r + r + splat(1.0f);
    v8i bits = (__builtin_convertvector(fx, v8i) + 127) << 23;
    return (v8f)((v8i)(p * (v8f)bits) & ~dead);
}

/* row[j..j+8), or its part before n followed by `pad`: a whole vector is
 * one fixed-size load, the tail alone is copied piecewise. */
static inline v8f load8(const float *row, int64_t j, int64_t n, float pad) {
    v8f x;
    if (n - j >= 8) {
        memcpy(&x, row + j, sizeof x);
        return x;
    }
    x = splat(pad);
    for (int64_t l = 0; l < n - j; l++)
        x[l] = row[j + l];
    return x;
}

/* max(m, row[0..n)) (NaN scores are skipped; their exp makes the row NaN). */
ATTN_CLONES static float row_max(const float *row, int64_t n, float m) {
    v8f acc = splat(m);
    for (int64_t j = 0; j < n; j += 8) {
        v8f x = load8(row, j, n, m);
        acc = select8(x > acc, x, acc);
    }
    for (int l = 0; l < 8; l++)
        m = acc[l] > m ? acc[l] : m;
    return m;
}

/* row[j] = exp(row[j] - m), returning their sum. */
ATTN_CLONES static float exp_row(float *row, int64_t n, float m) {
    v8f sum = splat(0.0f);
    for (int64_t j = 0; j < n; j += 8) {
        v8f e = exp8(load8(row, j, n, -INFINITY) - splat(m));
        sum += e;
        if (n - j >= 8)
            memcpy(row + j, &e, sizeof e);
        else
            for (int64_t l = 0; l < n - j; l++)
                row[j + l] = e[l];
    }
    float s = 0;
    for (int l = 0; l < 8; l++)
        s += sum[l];
    return s;
}
/* Dropout's mask over a tile row (RtAttnDesc.dropout; drop_mask below):
 * element index0 + j is kept, times drop_scale, or dropped. The draw is Philox
 * 4x32-10's first word with key (seed, seed >> 32) and counter (index,
 * index >> 32, site, step): ir/dropout.c's philox_first, which the
 * written-out form's dropout_apply draws, so both forms drop the same
 * probabilities. */
static inline uint32_t attn_philox(uint64_t seed, uint64_t index, uint32_t site, uint64_t step) {
    uint32_t c0 = (uint32_t)index, c1 = (uint32_t)(index >> 32), c2 = site, c3 = (uint32_t)step;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1, c3 = (uint32_t)p0, c0 = n0, c2 = n2;
        k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    }
    return c0;
}

typedef struct AttnDrop {
    uint64_t seed, step;
    uint32_t site, threshold;
    float scale;
} AttnDrop;

/* The mask of n elements from index0 into z: drop_scale where kept, else
 * 0. The draws cost about as much as the tile's two products, so with
 * AVX2 they are made eight at a time (the 32 x 32 -> 64-bit products by
 * vpmuludq on the even and odd lanes). */
static void mask_scalar(const AttnDrop *z, float *out, int64_t j, int64_t n, uint64_t index0) {
    for (; j < n; j++)
        out[j] = attn_philox(z->seed, index0 + (uint64_t)j, z->site, z->step) >> 8 < z->threshold
                     ? z->scale
                     : 0.0f;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
__attribute__((target("avx2"))) static inline void mulhilo8(__m256i m, __m256i x, __m256i *hi,
                                                            __m256i *lo) {
    __m256i ev = _mm256_mul_epu32(x, m), od = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), m);
    *lo = _mm256_blend_epi32(ev, _mm256_slli_epi64(od, 32), 0xAA);
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(ev, 32), od, 0xAA);
}

__attribute__((target("avx2"))) static int64_t mask_avx2(const AttnDrop *z, float *out, int64_t n,
                                                         uint64_t index0) {
    const __m256i m0 = _mm256_set1_epi32((int)0xD2511F53u),
                  m1 = _mm256_set1_epi32((int)0xCD9E8D57u);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i thr = _mm256_set1_epi32((int)z->threshold);
    const __m256 sc = _mm256_set1_ps(z->scale);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        uint64_t base = index0 + (uint64_t)j;
        if ((uint32_t)base > 0xFFFFFFF8u) break; /* the low word wraps within the eight */
        __m256i c0 = _mm256_add_epi32(_mm256_set1_epi32((int)(uint32_t)base), lane);
        __m256i c1 = _mm256_set1_epi32((int)(uint32_t)(base >> 32));
        __m256i c2 = _mm256_set1_epi32((int)z->site),
                c3 = _mm256_set1_epi32((int)(uint32_t)z->step);
        uint32_t k0 = (uint32_t)z->seed, k1 = (uint32_t)(z->seed >> 32);
        for (int r = 0; r < 10; r++) {
            __m256i hi0, lo0, hi1, lo1;
            mulhilo8(m0, c0, &hi0, &lo0);
            mulhilo8(m1, c2, &hi1, &lo1);
            c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32((int)k0));
            c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32((int)k1));
            c1 = lo1, c3 = lo0;
            k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
        }
        /* (r >> 8) < threshold <= 2^24: a signed compare is exact */
        __m256i keep = _mm256_cmpgt_epi32(thr, _mm256_srli_epi32(c0, 8));
        _mm256_storeu_ps(out + j, _mm256_and_ps(_mm256_castsi256_ps(keep), sc));
    }
    return j;
}
#endif

static void drop_mask(const AttnDrop *z, float *out, int64_t n, uint64_t index0) {
    int64_t j = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx2")) j = mask_avx2(z, out, n, index0);
#endif
    mask_scalar(z, out, j, n, index0);
}

/* rows x cols elements at base (element strides rs, cs) as dense f32 rows
 * of ld floats. */
static inline void load_block(const char *base, int64_t t, int64_t rs, int64_t cs, int64_t rows,
                              int64_t cols, float *dst, int64_t ld) {
    size_t es = t == RT_F32 ? 4 : 2;
    for (int64_t r = 0; r < rows; r++) {
        const char *row = base + (size_t)(r * rs) * es;
        float *o = dst + r * ld;
        if (t == RT_F32 && cs == 1) {
            memcpy(o, row, (size_t)cols * 4);
            continue;
        }
        for (int64_t c = 0; c < cols; c++)
            o[c] = rt_load_f(row + (size_t)(c * cs) * es, t);
    }
}

#endif
