/* Small AVX2 helpers shared by the runtime's hand-written kernels
 * (qmatmul.c, matmul_half_gemv.c). Include only inside an
 * `#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))`
 * block: the functions carry their own target attribute, so the files
 * still build for the baseline ISA and pick these paths at run time. */
#ifndef TGCRT_RT_AVX2_H
#define TGCRT_RT_AVX2_H
#include <immintrin.h>

#define RT_AVX2_TARGET __attribute__((target("avx2,fma")))

/* Lanes below `live` all ones: for maskload/maskstore. */
RT_AVX2_TARGET static inline __m256i rt_avx2_live_mask(int live) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(live), _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0));
}

/* The sum of the 8 lanes. */
RT_AVX2_TARGET static inline float rt_avx2_hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Runs BODY(R) with R the constant mr (1 to 8; 8 for more): the kernels'
 * always_inline bodies are specialized per row count, so their row loops
 * unroll whole and the accumulators stay in registers. */
#define RT_ROWS_SWITCH(mr, BODY)                                                                   \
    switch (mr) {                                                                                  \
    case 1: BODY(1); break;                                                                        \
    case 2: BODY(2); break;                                                                        \
    case 3: BODY(3); break;                                                                        \
    case 4: BODY(4); break;                                                                        \
    case 5: BODY(5); break;                                                                        \
    case 6: BODY(6); break;                                                                        \
    case 7: BODY(7); break;                                                                        \
    default: BODY(8); break;                                                                       \
    }
#endif
