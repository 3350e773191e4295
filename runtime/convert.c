/* Element conversions: bf16 inputs are read from float32 arrays and bf16
 * outputs written as float32 (cli.md); f16 <-> f32 for printing, for
 * weights stored in another floating dtype and for --precision; the
 * generic floating conversions contexts use. Bit-level, through memcpy, so
 * no type punning, and integer-only rounding, so the result does not depend
 * on the FPU's rounding mode or flush-to-zero flags. */
#include "rt_internal.h"

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

uint16_t rt_f32_to_f16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u;  /* NaN: the quiet NaN c10 gives */
    if (a >= 0x477ff000u) return sign | 0x7c00u; /* >= 65520 (and inf) rounds to inf */
    if (a >= 0x38800000u) {
        /* A normal half (>= 2^-14): rebias the exponent (127 -> 15), then
         * round the 23-bit mantissa to 10 bits to nearest even; a carry
         * into the exponent is the right result. */
        uint32_t m = a - 0x38000000u;
        m += 0xfffu + ((m >> 13) & 1u);
        return sign | (uint16_t)(m >> 13);
    }
    if (a < 0x33000000u) return sign; /* <= 2^-25: rounds to (signed) zero */
    /* A subnormal half, in units of 2^-24: the 24-bit significand shifted
     * right, rounded to nearest even (2^-14 itself may come out). */
    uint32_t e = a >> 23, mant = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e; /* 14 .. 24 */
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (h & 1u))) h++;
    return sign | (uint16_t)h;
}

double rt_load_float(const void *p, RtDType t, size_t i) {
    switch (t) {
    case RT_F64: {
        double v;
        memcpy(&v, (const char *)p + i * 8, 8);
        return v;
    }
    case RT_F32: {
        float v;
        memcpy(&v, (const char *)p + i * 4, 4);
        return v;
    }
    case RT_F16:
    case RT_BF16: {
        uint16_t h;
        memcpy(&h, (const char *)p + i * 2, 2);
        return t == RT_F16 ? rt_f16_to_f32(h) : rt_bf16_to_f32(h);
    }
    default: return 0;
    }
}

void rt_store_float(void *p, RtDType t, size_t i, double v) {
    switch (t) {
    case RT_F64: memcpy((char *)p + i * 8, &v, 8); break;
    case RT_F32: {
        float f = (float)v;
        memcpy((char *)p + i * 4, &f, 4);
        break;
    }
    case RT_F16:
    case RT_BF16: {
        uint16_t h = t == RT_F16 ? rt_f32_to_f16((float)v) : rt_f32_to_bf16((float)v);
        memcpy((char *)p + i * 2, &h, 2);
        break;
    }
    default: break;
    }
}

void rt_convert_float(const void *src, RtDType st, void *dst, RtDType dt, size_t n) {
    if (!n) return;
    if (st == dt) {
        memcpy(dst, src, n * rt_dtype_size(st));
        return;
    }
    if (st == RT_BF16 && dt == RT_F32) {
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, (const char *)src + 2 * i, 2);
            float f = rt_bf16_to_f32(h);
            memcpy((char *)dst + 4 * i, &f, 4);
        }
        return;
    }
    if (st == RT_F32 && (dt == RT_BF16 || dt == RT_F16)) {
        for (size_t i = 0; i < n; i++) {
            float f;
            memcpy(&f, (const char *)src + 4 * i, 4);
            uint16_t h = dt == RT_F16 ? rt_f32_to_f16(f) : rt_f32_to_bf16(f);
            memcpy((char *)dst + 2 * i, &h, 2);
        }
        return;
    }
    for (size_t i = 0; i < n; i++)
        rt_store_float(dst, dt, i, rt_load_float(src, st, i));
}

typedef struct ConvertJob {
    const char *src;
    char *dst;
    RtDType st, dt;
} ConvertJob;

static void convert_range(void *ctx, int64_t begin, int64_t end, int thread) {
    (void)thread;
    const ConvertJob *j = ctx;
    rt_convert_float(j->src + (size_t)begin * rt_dtype_size(j->st), j->st,
                     j->dst + (size_t)begin * rt_dtype_size(j->dt), j->dt, (size_t)(end - begin));
}

void rt_convert_float_par(RtPool *pool, const void *src, RtDType st, void *dst, RtDType dt,
                          size_t n) {
    ConvertJob j = {src, dst, st, dt};
    if (n) rt_pool_parallel_for(pool, 0, (int64_t)n, 1 << 16, convert_range, &j);
}
