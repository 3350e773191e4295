/* rt_matmul against a naive reference, for every dtype, operand layouts
 * that BLAS takes directly (row- and column-major, padded leading
 * dimensions) and layouts it cannot (both strides > 1, negative strides, a
 * zero stride), C row- or column-major or strided, accumulate on and off,
 * batches with and without broadcast (and the foldable [b, m, k] @ [k, n]
 * case), size-1 and size-0 dimensions. Every C element outside the result
 * must be left as it was. Also: a large f32 product (OpenBLAS's threads),
 * wrapping integer sums, and malformed descriptors doing nothing. */
#include <math.h>
#include <stdlib.h>

#include "rt_test.h"
#include "tgcrt.h"

static uint64_t rng_state = 0x1234567;
static uint64_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return rng_state >> 33;
}

static bool is_float(RtDType t) {
    return t == RT_F16 || t == RT_BF16 || t == RT_F32 || t == RT_F64;
}

static double get(const char *p, RtDType t, int64_t i) {
    p += i * (int64_t)rt_dtype_size(t);
    switch (t) {
    case RT_BOOL:
    case RT_U8: return *(const uint8_t *)p;
    case RT_I8: return *(const int8_t *)p;
    case RT_I16: {
        int16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case RT_I32: {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    case RT_I64:
    case RT_U64: {
        int64_t v; /* u64: its bits, as get_i compares them */
        memcpy(&v, p, 8);
        return (double)v;
    }
    case RT_U16: {
        uint16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case RT_U32: {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    case RT_F16:
    case RT_BF16: {
        uint16_t v;
        memcpy(&v, p, 2);
        return t == RT_F16 ? rt_f16_to_f32(v) : rt_bf16_to_f32(v);
    }
    case RT_F32: {
        float v;
        memcpy(&v, p, 4);
        return v;
    }
    default: {
        double v;
        memcpy(&v, p, 8);
        return v;
    }
    }
}

static int64_t get_i(const char *p, RtDType t, int64_t i) {
    p += i * (int64_t)rt_dtype_size(t);
    if (t == RT_I64 || t == RT_U64) {
        int64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    return (int64_t)get(p, t, 0);
}

/* Random element bits: small values for floats, any bits for integers. */
static void fill(char *p, RtDType t, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        char *q = p + i * (int64_t)rt_dtype_size(t);
        double v = ((double)(rnd() % 20001) - 10000) / 4000.0;
        switch (t) {
        case RT_BOOL: *(uint8_t *)q = rnd() & 1; break;
        case RT_U8:
        case RT_I8: *(uint8_t *)q = (uint8_t)rnd(); break;
        case RT_I16:
        case RT_U16: {
            uint16_t x = (uint16_t)rnd();
            memcpy(q, &x, 2);
            break;
        }
        case RT_I32:
        case RT_U32: {
            uint32_t x = (uint32_t)rnd();
            memcpy(q, &x, 4);
            break;
        }
        case RT_I64:
        case RT_U64: {
            uint64_t x = rnd() << 33 ^ rnd();
            memcpy(q, &x, 8);
            break;
        }
        case RT_F16: {
            uint16_t x = rt_f32_to_f16((float)v);
            memcpy(q, &x, 2);
            break;
        }
        case RT_BF16: {
            uint16_t x = rt_f32_to_bf16((float)v);
            memcpy(q, &x, 2);
            break;
        }
        case RT_F32: {
            float x = (float)v;
            memcpy(q, &x, 4);
            break;
        }
        default: memcpy(q, &v, 8); break;
        }
    }
}

/* A physical layout of an r x c matrix: strides, the offset of element
 * (0, 0) and the elements one matrix spans. */
typedef struct Phys {
    int64_t rs, cs, base, span;
} Phys;

enum { NMODES = 7 };
static Phys layout(int mode, int64_t r, int64_t c) {
    switch (mode) {
    case 0: return (Phys){c, 1, 0, r * c};                        /* row-major */
    case 1: return (Phys){c + 3, 1, 0, r * (c + 3)};              /* row-major, padded */
    case 2: return (Phys){1, r, 0, r * c};                        /* column-major */
    case 3: return (Phys){1, r + 2, 0, c * (r + 2)};              /* column-major, padded */
    case 4: return (Phys){2 * c + 1, 2, 0, r * (2 * c + 1)};      /* both strides > 1 */
    case 5: return (Phys){-c, 1, r > 0 ? (r - 1) * c : 0, r * c}; /* rows reversed */
    default: return (Phys){1, 0, 0, r};                           /* columns broadcast */
    }
}

typedef struct Batch {
    int n;
    int64_t dims[2];
    bool a_bcast[2], b_bcast[2];
} Batch;

static const Batch BATCHES[] = {
    {0, {0, 0}, {0, 0}, {0, 0}}, {1, {3, 0}, {0, 0}, {0, 0}}, {2, {2, 3}, {1, 0}, {0, 1}},
    {1, {4, 0}, {0, 0}, {1, 0}}, /* B broadcast: foldable when A and C are row-major */
    {2, {2, 2}, {0, 1}, {1, 0}},
};
enum { NBATCHES = sizeof BATCHES / sizeof BATCHES[0] };

/* Strides of one operand over the batch dimensions: a matrix span each,
 * 0 where broadcast. Returns the number of matrices stored. */
static int64_t batch_strides(const Batch *bt, const bool *bcast, int64_t span, int64_t *bs) {
    int64_t s = span;
    for (int i = bt->n - 1; i >= 0; i--) {
        bs[i] = bcast[i] ? 0 : s;
        s *= bcast[i] ? 1 : bt->dims[i];
    }
    return span ? s / span : 1;
}

static int cases, failures;

static void run_case(RtDType t, int64_t m, int64_t n, int64_t k, int am, int bm, int cm, bool acc,
                     const Batch *bt, RtPool *pool) {
    size_t es = rt_dtype_size(t);
    Phys pa = layout(am, m, k), pb = layout(bm, k, n), pc = layout(cm, m, n);
    RtMatmulDesc d = {0};
    d.dtype = t, d.m = m, d.n = n, d.k = k, d.accumulate = acc, d.nbatch = bt->n;
    d.a_rs = pa.rs, d.a_cs = pa.cs, d.b_rs = pb.rs, d.b_cs = pb.cs, d.c_rs = pc.rs, d.c_cs = pc.cs;
    bool no_bcast[2] = {0, 0};
    for (int i = 0; i < bt->n; i++)
        d.batch[i] = bt->dims[i];
    int64_t na = batch_strides(bt, bt->a_bcast, pa.span, d.a_bs);
    int64_t nb = batch_strides(bt, bt->b_bcast, pb.span, d.b_bs);
    int64_t nc = batch_strides(bt, no_bcast, pc.span, d.c_bs);
    int64_t la = na * pa.span + 1, lb = nb * pb.span + 1, lc = nc * pc.span + 1;
    char *A = malloc((size_t)la * es), *B = malloc((size_t)lb * es), *C = malloc((size_t)lc * es);
    char *C0 = malloc((size_t)lc * es);
    fill(A, t, la);
    fill(B, t, lb);
    fill(C, t, lc);
    if (is_float(t) && !acc) /* garbage that must not leak into the result */
        for (int64_t i = 0; i < lc; i++) {
            float nan = NAN;
            uint16_t h = 0x7e00;
            double dnan = NAN;
            if (t == RT_F32) memcpy(C + i * 4, &nan, 4);
            if (t == RT_F64) memcpy(C + i * 8, &dnan, 8);
            if (t == RT_F16 || t == RT_BF16) memcpy(C + i * 2, &h, 2);
        }
    memcpy(C0, C, (size_t)lc * es);
    char *a0 = A + pa.base * (int64_t)es, *b0 = B + pb.base * (int64_t)es;
    char *c0 = C + pc.base * (int64_t)es;
    rt_matmul(&d, a0, b0, c0, pool);

    /* The reference, and the elements the result covers. */
    char *touched = calloc((size_t)lc, 1);
    int bad = 0;
    int64_t nbat = bt->n == 0 ? 1 : bt->n == 1 ? bt->dims[0] : bt->dims[0] * bt->dims[1];
    for (int64_t q = 0; q < nbat; q++) {
        int64_t idx[2] = {bt->n == 2 ? q / bt->dims[1] : q, bt->n == 2 ? q % bt->dims[1] : 0};
        int64_t oa = pa.base, ob = pb.base, oc = pc.base;
        for (int i = 0; i < bt->n; i++)
            oa += idx[i] * d.a_bs[i], ob += idx[i] * d.b_bs[i], oc += idx[i] * d.c_bs[i];
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                int64_t ci = oc + i * pc.rs + j * pc.cs;
                touched[ci] = 1;
                double got = get(C, t, ci), want, tol = 0;
                if (is_float(t)) {
                    double s = acc ? get(C0, t, ci) : 0, mag = fabs(s);
                    for (int64_t kk = 0; kk < k; kk++) {
                        double x = get(A, t, oa + i * pa.rs + kk * pa.cs);
                        double y = get(B, t, ob + kk * pb.rs + j * pb.cs);
                        s += x * y, mag += fabs(x * y);
                    }
                    want = s;
                    tol = t == RT_F64   ? 1e-12 * mag
                          : t == RT_F32 ? 1e-5 * mag
                          : t == RT_F16 ? 1e-3 * fabs(s) + 1e-5 * mag + 1e-7
                                        : 8e-3 * fabs(s) + 1e-5 * mag + 1e-38;
                    if (!(fabs(got - want) <= tol)) bad++;
                } else {
                    uint64_t s = acc ? (uint64_t)get_i(C0, t, ci) : 0;
                    for (int64_t kk = 0; kk < k; kk++)
                        s += (uint64_t)get_i(A, t, oa + i * pa.rs + kk * pa.cs) *
                             (uint64_t)get_i(B, t, ob + kk * pb.rs + j * pb.cs);
                    int64_t w;
                    switch (t) {
                    case RT_BOOL: w = s != 0; break;
                    case RT_U8: w = (uint8_t)s; break;
                    case RT_I8: w = (int8_t)(uint8_t)s; break;
                    case RT_I16: w = (int16_t)(uint16_t)s; break;
                    case RT_I32: w = (int32_t)(uint32_t)s; break;
                    case RT_U16: w = (uint16_t)s; break;
                    case RT_U32: w = (uint32_t)s; break;
                    default: w = (int64_t)s; break;
                    }
                    if (get_i(C, t, ci) != w) bad++;
                    want = (double)w;
                }
                if (bad == 1 && failures < 10) {
                    printf("%s m=%lld n=%lld k=%lld modes a%d b%d c%d acc=%d batch%d: C[%lld] "
                           "= %.17g, want %.17g (tol %g)\n",
                           rt_dtype_name(t), (long long)m, (long long)n, (long long)k, am, bm, cm,
                           acc, bt->n, (long long)ci, got, want, tol);
                    bad++;
                }
            }
    }
    for (int64_t i = 0; i < lc; i++)
        if (!touched[i] && memcmp(C + i * (int64_t)es, C0 + i * (int64_t)es, es)) {
            if (failures < 10)
                printf("%s m=%lld n=%lld k=%lld modes a%d b%d c%d: C[%lld] outside the result "
                       "changed\n",
                       rt_dtype_name(t), (long long)m, (long long)n, (long long)k, am, bm, cm,
                       (long long)i);
            bad++;
            break;
        }
    cases++;
    if (bad) failures++;
    free(touched);
    free(A);
    free(B);
    free(C);
    free(C0);
}

static void test_layouts(RtPool *pool) {
    static const int64_t sizes[][3] = {{2, 3, 4}, {1, 3, 4}, {3, 1, 4}, {3, 4, 1}, {1, 1, 1},
                                       {0, 3, 2}, {3, 0, 2}, {3, 2, 0}, {5, 6, 7}, {9, 5, 17}};
    int rot = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int t = 0; t < RT_DTYPE_COUNT; t++)
            /* u16 and u64 take i16's and i64's paths; u32 stands for them. */
            for (int acc = 0; acc < 2 && t != RT_U16 && t != RT_U64; acc++)
                for (int bi = 0; bi < NBATCHES; bi++)
                    for (int am = 0; am < NMODES; am++)
                        for (int bm = 0; bm < NMODES; bm++) {
                            int cm = rot++ % 6; /* C never broadcast (mode 6) */
                            run_case((RtDType)t, sizes[s][0], sizes[s][1], sizes[s][2], am, bm, cm,
                                     acc, &BATCHES[bi], pool);
                        }
    printf("%d layout cases, %d failed\n", cases, failures);
    CHECK_INT(0, failures);
}

/* A product big enough for OpenBLAS to use its threads, and the batch fold. */
static void test_large(RtPool *pool) {
    int64_t m = 130, n = 97, k = 211;
    float *a = malloc(sizeof(float) * (size_t)(3 * m * k)),
          *b = malloc(sizeof(float) * (size_t)(k * n));
    float *c = malloc(sizeof(float) * (size_t)(3 * m * n));
    for (int64_t i = 0; i < 3 * m * k; i++)
        a[i] = (float)((int)(rnd() % 200) - 100) / 64.0f;
    for (int64_t i = 0; i < k * n; i++)
        b[i] = (float)((int)(rnd() % 200) - 100) / 64.0f;
    RtMatmulDesc d = {.dtype = RT_F32,
                      .m = m,
                      .n = n,
                      .k = k,
                      .a_rs = k,
                      .a_cs = 1,
                      .b_rs = n,
                      .b_cs = 1,
                      .c_rs = n,
                      .c_cs = 1,
                      .nbatch = 1,
                      .batch = {3},
                      .a_bs = {m * k},
                      .b_bs = {0},
                      .c_bs = {m * n}};
    rt_matmul(&d, a, b, c, pool);
    int bad = 0;
    for (int64_t q = 0; q < 3; q++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t kk = 0; kk < k; kk++)
                    s += (double)a[(q * m + i) * k + kk] * b[kk * n + j];
                /* Multiples of 1/4096 below 2^24/4096: exact in f32. */
                if (c[(q * m + i) * n + j] != (float)s) bad++;
            }
    CHECK_INT(0, bad);
    free(a);
    free(b);
    free(c);
}

/* bf16 shapes past the AVX-512 BF16 kernel's tiles (12 rows x 32
 * columns, k in pairs): partial tiles, odd k, several column blocks and
 * row chunks, every layout of A, B and C, accumulate, batches. */
static void test_bf16_tiles(RtPool *pool) {
    static const int64_t sizes[][3] = {{13, 33, 3}, {12, 32, 2},  {25, 65, 31},   {1, 100, 257},
                                       {40, 1, 64}, {7, 200, 33}, {100, 32, 100}, {37, 300, 129},
                                       {300, 5, 7}}; /* the last past the kernel's m limit */
    int before = failures, rot = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int acc = 0; acc < 2; acc++)
            for (int am = 0; am < NMODES; am++)
                for (int bm = 0; bm < NMODES; bm++) {
                    int bi = rot % NBATCHES, cm = rot++ % 6;
                    run_case(RT_BF16, sizes[s][0], sizes[s][1], sizes[s][2], am, bm, cm, acc,
                             &BATCHES[bi < 2 ? bi : 0], pool);
                }
    CHECK_INT(before, failures);

    /* Values whose products and sums are exact in f32: the result must be
     * the exact sum rounded once to bf16, bit for bit. */
    int64_t m = 77, n = 301, k = 515;
    uint16_t *a = malloc(2 * (size_t)(m * k)), *b = malloc(2 * (size_t)(k * n));
    uint16_t *c = malloc(2 * (size_t)(m * n));
    for (int64_t i = 0; i < m * k; i++)
        a[i] = rt_f32_to_bf16((float)((int)(rnd() % 61) - 30) / 8.0f);
    for (int64_t i = 0; i < k * n; i++)
        b[i] = rt_f32_to_bf16((float)((int)(rnd() % 61) - 30) / 16.0f);
    for (int64_t i = 0; i < m * n; i++)
        c[i] = rt_f32_to_bf16((float)((int)(rnd() % 1001) - 500) / 32.0f);
    uint16_t *c0 = malloc(2 * (size_t)(m * n));
    memcpy(c0, c, 2 * (size_t)(m * n));
    RtMatmulDesc d = {.dtype = RT_BF16,
                      .m = m,
                      .n = n,
                      .k = k,
                      .a_rs = k,
                      .a_cs = 1,
                      .b_rs = 1,
                      .b_cs = k,
                      .c_rs = n,
                      .c_cs = 1,
                      .accumulate = 1};
    rt_matmul(&d, a, b, c, pool); /* B read as a transposed [n, k] matrix */
    int bad = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = rt_bf16_to_f32(c0[i * n + j]);
            for (int64_t kk = 0; kk < k; kk++)
                s += (double)rt_bf16_to_f32(a[i * k + kk]) * rt_bf16_to_f32(b[j * k + kk]);
            if (c[i * n + j] != rt_f32_to_bf16((float)s) && bad++ < 3)
                printf("bf16 exact: C[%lld][%lld] = 0x%04x, want 0x%04x\n", (long long)i,
                       (long long)j, c[i * n + j], rt_f32_to_bf16((float)s));
        }
    CHECK_INT(0, bad);
    free(a);
    free(b);
    free(c);
    free(c0);
}

/* f16/bf16 products with few rows (or few columns): on AVX2 they read B in
 * place (matmul_half_gemv.c; k contiguous: dot kernel, n contiguous: axpy
 * kernel, else the widening path). m = 1..33 around the kernels' row
 * blocks (8 and 4) and the in-place limit (32), m large with n small (the
 * transposed product), k and n around the vector widths (8, 32), every
 * layout of A, B and C, accumulate. Values with exact f32 products and
 * sums: the result must be the exact sum rounded once, bit for bit. */
static void test_half_gemv(RtPool *pool) {
    static const int64_t ks[] = {1, 3, 7, 8, 9, 16, 31, 32, 33, 40, 65, 100, 257};
    static const int64_t ns[] = {1, 2, 5, 15, 16, 17, 31, 32, 33, 47, 67};
    int bad = 0, runs = 0;
    for (int it = 0; it < 1200; it++) {
        RtDType t = it % 2 ? RT_F16 : RT_BF16;
        int64_t m = 1 + (int64_t)(rnd() % 33), n = ns[rnd() % (sizeof ns / sizeof ns[0])];
        int64_t k = ks[rnd() % (sizeof ks / sizeof ks[0])];
        if (it % 5 == 4) { /* few columns, many rows */
            int64_t x = m;
            m = 33 + (int64_t)(rnd() % 40), n = x;
        }
        /* B layouts the kernels take (column-major: k contiguous, row-major:
         * n contiguous, padded or not) most of the time, any other else. */
        int r = (int)(rnd() % 10);
        int bm = r < 8 ? r % 4 : (int)(rnd() % NMODES);
        int am = (int)(rnd() % NMODES), cm = (int)(rnd() % 6);
        bool acc = rnd() % 2;
        Phys pa = layout(am, m, k), pb = layout(bm, k, n), pc = layout(cm, m, n);
        uint16_t *a = malloc(2 * (size_t)(pa.span + 1)), *b = malloc(2 * (size_t)(pb.span + 1));
        uint16_t *c = malloc(2 * (size_t)(pc.span + 1)), *c0 = malloc(2 * (size_t)(pc.span + 1));
        uint16_t (*cv)(float) = t == RT_F16 ? rt_f32_to_f16 : rt_f32_to_bf16;
        float (*wd)(uint16_t) = t == RT_F16 ? rt_f16_to_f32 : rt_bf16_to_f32;
        for (int64_t i = 0; i <= pa.span; i++)
            a[i] = cv((float)((int)(rnd() % 61) - 30) / 8.0f);
        for (int64_t i = 0; i <= pb.span; i++)
            b[i] = cv((float)((int)(rnd() % 61) - 30) / 16.0f);
        for (int64_t i = 0; i <= pc.span; i++)
            c[i] = acc ? cv((float)((int)(rnd() % 1001) - 500) / 32.0f) : 0x7e00;
        memcpy(c0, c, 2 * (size_t)(pc.span + 1));
        RtMatmulDesc d = {.dtype = t,
                          .m = m,
                          .n = n,
                          .k = k,
                          .a_rs = pa.rs,
                          .a_cs = pa.cs,
                          .b_rs = pb.rs,
                          .b_cs = pb.cs,
                          .c_rs = pc.rs,
                          .c_cs = pc.cs,
                          .accumulate = acc};
        rt_matmul(&d, a + pa.base, b + pb.base, c + pc.base, pool);
        char *touched = calloc((size_t)pc.span + 1, 1);
        int before = bad;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                int64_t ci = pc.base + i * pc.rs + j * pc.cs;
                touched[ci] = 1;
                double sum = acc ? wd(c0[ci]) : 0;
                for (int64_t kk = 0; kk < k; kk++)
                    sum += (double)wd(a[pa.base + i * pa.rs + kk * pa.cs]) *
                           wd(b[pb.base + kk * pb.rs + j * pb.cs]);
                if (c[ci] != cv((float)sum) && bad++ < 3)
                    printf("%s gemv m=%lld n=%lld k=%lld a%d b%d c%d acc=%d: C[%lld][%lld] = "
                           "0x%04x, want 0x%04x\n",
                           rt_dtype_name(t), (long long)m, (long long)n, (long long)k, am, bm, cm,
                           acc, (long long)i, (long long)j, c[ci], cv((float)sum));
            }
        for (int64_t i = 0; i <= pc.span && bad == before; i++)
            if (!touched[i] && c[i] != c0[i] && bad++ < 3)
                printf("%s gemv m=%lld n=%lld k=%lld: C[%lld] outside the result changed\n",
                       rt_dtype_name(t), (long long)m, (long long)n, (long long)k, (long long)i);
        runs++;
        free(touched);
        free(a);
        free(b);
        free(c);
        free(c0);
    }
    printf("%d half gemv cases, %d wrong elements\n", runs, bad);
    CHECK_INT(0, bad);
}

static void test_edges(RtPool *pool) {
    /* Wrapping: i32 sums past 2^31, i8 products. */
    int32_t a32[2] = {INT32_MAX, 2}, b32[2] = {1, 1}, c32 = 0;
    RtMatmulDesc d = {.dtype = RT_I32,
                      .m = 1,
                      .n = 1,
                      .k = 2,
                      .a_rs = 2,
                      .a_cs = 1,
                      .b_rs = 1,
                      .b_cs = 1,
                      .c_rs = 1,
                      .c_cs = 1};
    rt_matmul(&d, a32, b32, &c32, pool);
    CHECK_INT(INT32_MIN + 1, c32);
    int8_t a8[2] = {100, 100}, b8[2] = {3, 1}, c8 = 0;
    d.dtype = RT_I8;
    rt_matmul(&d, a8, b8, &c8, pool);
    CHECK_INT((int8_t)(uint8_t)400, c8);
    uint8_t au[2] = {200, 200}, bu[2] = {1, 1}, cu = 5;
    d.dtype = RT_U8, d.accumulate = 1;
    rt_matmul(&d, au, bu, &cu, pool);
    CHECK_INT((uint8_t)405, cu);
    /* bool: OR of ANDs */
    uint8_t ab[2] = {1, 0}, bb[2] = {0, 1}, cb = 7;
    d.dtype = RT_BOOL, d.accumulate = 0;
    rt_matmul(&d, ab, bb, &cb, pool);
    CHECK_INT(0, cb);
    ab[1] = 1;
    rt_matmul(&d, ab, bb, &cb, pool);
    CHECK_INT(1, cb);
    /* k = 0: C = 0, or unchanged when accumulating. */
    float cf[4] = {1, 2, 3, 4};
    RtMatmulDesc z = {.dtype = RT_F32,
                      .m = 2,
                      .n = 2,
                      .k = 0,
                      .a_rs = 0,
                      .a_cs = 1,
                      .b_rs = 2,
                      .b_cs = 1,
                      .c_rs = 2,
                      .c_cs = 1,
                      .accumulate = 1};
    rt_matmul(&z, NULL, NULL, cf, pool);
    CHECK(cf[0] == 1 && cf[3] == 4);
    z.accumulate = 0;
    rt_matmul(&z, NULL, NULL, cf, pool);
    CHECK(cf[0] == 0 && cf[1] == 0 && cf[2] == 0 && cf[3] == 0);
    /* Malformed descriptors do nothing. */
    float one = 1, out = 42;
    RtMatmulDesc bad = {.dtype = RT_F32,
                        .m = 1,
                        .n = 1,
                        .k = 1,
                        .a_rs = 1,
                        .a_cs = 1,
                        .b_rs = 1,
                        .b_cs = 1,
                        .c_rs = 1,
                        .c_cs = 1};
    bad.nbatch = RT_MATMUL_MAX_BATCH + 1;
    rt_matmul(&bad, &one, &one, &out, pool);
    bad.nbatch = 0, bad.dtype = 99;
    rt_matmul(&bad, &one, &one, &out, pool);
    bad.dtype = RT_F32, bad.m = -1;
    rt_matmul(&bad, &one, &one, &out, pool);
    bad.m = 1, bad.nbatch = 1, bad.batch[0] = -2;
    rt_matmul(&bad, &one, &one, &out, pool);
    rt_matmul(NULL, &one, &one, &out, pool);
    CHECK(out == 42);
    bad.nbatch = 0;
    rt_matmul(&bad, &one, &one, &out, NULL); /* a NULL pool is fine */
    CHECK(out == 1);
}

int main(void) {
    RtPool *pool;
    RtError err;
    if (rt_pool_create(3, &pool, &err)) return 3;
    rt_blas_set_threads(3);
    test_layouts(pool);
    test_large(pool);
    test_bf16_tiles(pool);
    test_bf16_tiles(NULL);
    test_half_gemv(pool);
    test_half_gemv(NULL);
    test_edges(pool);
    rt_blas_set_threads(1);
    test_large(NULL);
    rt_pool_destroy(pool);
    return rt_test_report();
}
