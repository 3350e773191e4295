/* Element conversions the I/O needs: bf16 inputs are read from float32
 * arrays and bf16 outputs written as float32 (cli.md); f16 -> f32 is for
 * printing. Bit-level, through memcpy, so no type punning. */
#include "tgcrt.h"

#include <string.h>

uint16_t rt_f32_to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0; /* NaN: torch returns this quiet NaN */
    /* Round to nearest even: add 0x7fff plus the lowest kept bit, then
     * truncate; a carry into the exponent rounds up to the next binade or
     * to infinity, which is what round-to-nearest gives. */
    uint32_t lsb = (u >> 16) & 1u;
    u += 0x7fffu + lsb;
    return (uint16_t)(u >> 16);
}

float rt_bf16_to_f32(uint16_t x) {
    uint32_t u = (uint32_t)x << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float rt_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13); /* inf or NaN, payload kept */
    } else if (exp) {
        u = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (!man) {
        u = sign; /* signed zero */
    } else {
        /* subnormal: normalise the mantissa */
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while (!(man & 0x400u));
        u = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void rt_f32_to_bf16_n(const float *src, uint16_t *dst, size_t n) {
    for (size_t i = 0; i < n; i++)
        dst[i] = rt_f32_to_bf16(src[i]);
}

void rt_bf16_to_f32_n(const uint16_t *src, float *dst, size_t n) {
    for (size_t i = 0; i < n; i++)
        dst[i] = rt_bf16_to_f32(src[i]);
}
