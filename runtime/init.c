/* Param initialisers (zeros, ones, full, randn, uniform, arange) and the
 * values of --random-inputs. Every element is a pure function of (seed,
 * tensor name, element index), so a tensor fills in parallel, in any
 * order, and gives the same bits on every machine and thread count:
 *
 *   key      = mix(seed ^ fnv1a64(name))
 *   draw(i,j)= mix(key + (2 i + j + 1) * 0x9e3779b97f4a7c15)   j = 0, 1
 *   unit(x)  = (x >> 11) * 2^-53                               in [0, 1)
 *   normal_i = sqrt(-2 ln(1 - unit(draw(i,0)))) * cos(2 pi unit(draw(i,1)))
 *
 * mix is splitmix64's finaliser. See docs/runtime.md "Initialisers". */
#include <math.h>
#include <string.h>

#include "rt_internal.h"

#define RT_TWO_PI 6.283185307179586476925286766559

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t fnv1a64(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static uint64_t draw(uint64_t key, uint64_t i, unsigned j) {
    return mix64(key + (2 * i + j + 1) * 0x9e3779b97f4a7c15ull);
}

static double unit(uint64_t x) {
    return (double)(x >> 11) * 0x1.0p-53;
}

static double normal(uint64_t key, uint64_t i) {
    double u1 = 1.0 - unit(draw(key, i, 0)); /* (0, 1]: log is finite */
    double u2 = unit(draw(key, i, 1));
    return sqrt(-2.0 * log(u1)) * cos(RT_TWO_PI * u2);
}

/* The largest value of dtype t below the representable value held in
 * element i (uniform's [a, b) after rounding). */
static void step_down(void *p, RtDType t, size_t i) {
    size_t es = rt_dtype_size(t);
    uint64_t bits = 0, sign = (uint64_t)1 << (8 * es - 1);
    memcpy(&bits, (char *)p + i * es, es); /* little-endian: low bytes */
    if (bits & sign)
        bits++; /* negative: larger magnitude */
    else if (bits == 0)
        bits = sign | 1; /* +0: the smallest negative subnormal */
    else
        bits--;
    memcpy((char *)p + i * es, &bits, es);
}

static void store_int(void *p, RtDType t, size_t i, int64_t v) {
    char *q = (char *)p + i * rt_dtype_size(t);
    switch (t) {
    case RT_BOOL: *(uint8_t *)q = v != 0; break;
    case RT_U8: *(uint8_t *)q = (uint8_t)v; break;
    case RT_I8: *(uint8_t *)q = (uint8_t)(uint64_t)v; break;
    case RT_I16:
    case RT_U16: {
        uint16_t x = (uint16_t)(uint64_t)v;
        memcpy(q, &x, 2);
        break;
    }
    case RT_I32:
    case RT_U32: {
        uint32_t x = (uint32_t)(uint64_t)v;
        memcpy(q, &x, 4);
        break;
    }
    case RT_I64:
    case RT_U64: memcpy(q, &v, 8); break;
    default: break;
    }
}

/* A double to an integer dtype: saturated to the dtype's range, NaN -> 0. */
static int64_t to_int(double v, RtDType t) {
    double lo, hi;
    switch (t) {
    case RT_BOOL: return v != 0;
    case RT_U8: lo = 0, hi = 255; break;
    case RT_I8: lo = -128, hi = 127; break;
    case RT_I16: lo = -32768, hi = 32767; break;
    case RT_I32: lo = -2147483648.0, hi = 2147483647.0; break;
    case RT_U16: lo = 0, hi = 65535; break;
    case RT_U32: lo = 0, hi = 4294967295.0; break;
    case RT_U64:
        /* Returned as the u64's bits, which store_int writes back. */
        if (v != v || v <= 0) return 0;
        return v >= 0x1p64 ? -1 : (int64_t)(uint64_t)v;
    default: lo = -0x1p63, hi = 0x1p63; break;
    }
    if (v != v) return 0;
    if (v <= lo) return (int64_t)lo;
    if (v >= hi) return t == RT_I64 ? INT64_MAX : (int64_t)hi;
    return (int64_t)v;
}

typedef struct FillJob {
    int kind;
    double a, b;
    uint64_t key;
    RtDType dt;
    void *dst;
} FillJob;

static void fill_range(void *ctx, int64_t begin, int64_t end, int thread) {
    (void)thread;
    const FillJob *j = ctx;
    bool fl = rt_dtype_is_float(j->dt);
    for (int64_t s = begin; s < end; s++) {
        size_t i = (size_t)s;
        double v = 0;
        switch (j->kind) {
        case RT_INIT_ONES: v = 1; break;
        case RT_INIT_FULL: v = j->a; break;
        case RT_INIT_RANDN: v = j->a * normal(j->key, i); break;
        case RT_INIT_UNIFORM: v = j->a + (j->b - j->a) * unit(draw(j->key, i, 0)); break;
        case RT_INIT_ARANGE: v = (double)s; break;
        case RT_FILL_RANDOM_INPUT:
            if (fl) {
                v = normal(j->key, i);
            } else {
                uint64_t x = draw(j->key, i, 0);
                store_int(j->dst, j->dt, i,
                          j->dt == RT_BOOL ? (int64_t)(x >> 63)
                                           : (int64_t)(((x >> 32) * 10) >> 32));
                continue;
            }
            break;
        default: v = 0; break; /* RT_INIT_ZEROS */
        }
        if (fl) {
            rt_store_float(j->dst, j->dt, i, v);
            if (j->kind == RT_INIT_UNIFORM && j->a < j->b &&
                rt_load_float(j->dst, j->dt, i) >= j->b)
                step_down(j->dst, j->dt, i);
        } else {
            /* uniform rounds down so it stays in [a, b); full converts as
             * PyTorch's torch.full does (toward zero; any nonzero is true);
             * other values are rounded to nearest. */
            double r = j->kind == RT_INIT_UNIFORM ? floor(v)
                       : j->kind == RT_INIT_FULL  ? v
                                                  : nearbyint(v);
            store_int(j->dst, j->dt, i, to_int(r, j->dt));
        }
    }
}

void rt_fill(RtPool *pool, int kind, double a, double b, uint64_t seed, const char *name,
             RtDType dt, void *dst, int64_t numel) {
    if (numel <= 0) return;
    if (kind == RT_INIT_ZEROS) {
        memset(dst, 0, (size_t)numel * rt_dtype_size(dt)); /* 0 bits are 0 in every dtype */
        return;
    }
    FillJob j = {kind, a, b, mix64(seed ^ fnv1a64(name)), dt, dst};
    rt_pool_parallel_for(pool, 0, numel, 1 << 14, fill_range, &j);
}
