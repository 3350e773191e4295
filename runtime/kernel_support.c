/* Helpers the generated kernels call: integer powers (a loop, kept out of
 * the vectorised code) and the half-precision conversions LLVM calls when
 * the target CPU lacks F16C. */
#include <stdint.h>
#include <string.h>

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
