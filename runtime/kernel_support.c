/* Helpers the generated kernels call: integer powers (a loop, kept out of
 * the vectorised code), the half-precision conversions LLVM calls when
 * the target CPU lacks F16C, and the streaming row store of large
 * normalisation outputs. */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "tgcrt.h"

int64_t rt_kernel_ipow(int64_t base, int64_t exp);
int64_t rt_kernel_ipow(int64_t base, int64_t exp) {
    /* torch: negative exponents of integers give 1/base^|e| truncated. */
    if (exp < 0) return base == 1 ? 1 : base == -1 ? ((exp & 1) ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)base; /* unsigned: wraps like torch's int math */
    while (exp) {
        if (exp & 1) r *= b;
        b *= b;
        exp >>= 1;
    }
    return (int64_t)r;
}

/* LLVM 14 lowers fpext/fptrunc of half to these on CPUs without F16C. */
float __gnu_h2f_ieee(uint16_t h);
uint16_t __gnu_f2h_ieee(float f);
__attribute__((weak)) float __gnu_h2f_ieee(uint16_t h) {
    return rt_f16_to_f32(h);
}
__attribute__((weak)) uint16_t __gnu_f2h_ieee(float f) {
    return rt_f32_to_f16(f);
}

/* The last-level cache's size, asked once (0 until then): what the system
 * says, at most 32 MiB, which is also the answer where it says nothing.
 * The cap is there because a virtual machine may report its host's whole
 * cache (this 2-core VM: 320 MiB, where lscpu counts 32 MiB). */
static int64_t llc_bytes(void) {
    static atomic_llong cached;
    int64_t v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v) return v;
    long l3 = -1, l2 = -1;
#if defined(_SC_LEVEL3_CACHE_SIZE)
    l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    v = l3 > 0 ? l3 : l2 > 0 ? l2 : (int64_t)32 << 20;
    if (v > (int64_t)32 << 20) v = (int64_t)32 << 20;
    atomic_store_explicit(&cached, v, memory_order_relaxed);
    return v;
}

/* Copies a row a normalisation kernel built in its stack buffer to the
 * output. When the whole output (total bytes) is larger than the
 * last-level cache, it would be evicted before anything reads it, so the
 * row is written with non-temporal stores, which skip the read for
 * ownership a plain store makes (see codegen/llvm/k_reduce.c, RowOut). */
void rt_kernel_stream_row(void *dst, const void *src, int64_t bytes, int64_t total);
void rt_kernel_stream_row(void *dst, const void *src, int64_t bytes, int64_t total) {
    if (bytes <= 0) return;
#if defined(__SSE2__)
    if (total > llc_bytes()) {
        char *d = dst;
        const char *s = src;
        size_t n = (size_t)bytes, head = (16 - ((uintptr_t)d & 15)) & 15;
        if (head > n) head = n;
        memcpy(d, s, head);
        d += head, s += head, n -= head;
        for (; n >= 64; d += 64, s += 64, n -= 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)s);
            __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
            __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
            _mm_stream_si128((__m128i *)d, a);
            _mm_stream_si128((__m128i *)(d + 16), b);
            _mm_stream_si128((__m128i *)(d + 32), c);
            _mm_stream_si128((__m128i *)(d + 48), e);
        }
        for (; n >= 16; d += 16, s += 16, n -= 16)
            _mm_stream_si128((__m128i *)d, _mm_loadu_si128((const __m128i *)s));
        memcpy(d, s, n);
        /* Streamed stores are weakly ordered: make them visible before
         * the pool's hand-off tells another thread the output is done. */
        _mm_sfence();
        return;
    }
#else
    (void)total;
#endif
    memcpy(dst, src, (size_t)bytes);
}
