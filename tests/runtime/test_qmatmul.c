/* rt_qmatmul against a double-precision reference of the same formula,
 * y = (acc ? y : 0) + sum_k x[k] * (float)(q[k] * scale[k / group]), over
 * random shapes (both regimes: few rows read the weights in place, many go
 * through sgemm), int8 and int4 (odd k), groups that divide k, do not, are
 * k or exceed it, every x/y dtype, x row-major, padded, transposed or
 * doubly strided, y row-major, transposed or strided, batch dimensions,
 * accumulate on and off. Every y element outside the result must be left
 * as it was.
 *
 * Tolerances: f32 y within 1e-5 * sum_k |x w| (+ |bias|) of the reference;
 * f16/bf16 y within half an ulp of the output dtype plus that (the f32 sum
 * is rounded once). Exact cases: rows of x that are unit vectors
 * reproduce (float)(q * scale) exactly. */
#include <math.h>
#include <stdlib.h>

#include "rt_test.h"
#include "tgcrt.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return rng_state >> 33;
}
static int64_t rnd_in(int64_t lo, int64_t hi) { /* [lo, hi] */
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

static double get(const char *p, RtDType t, int64_t i) {
    uint16_t h;
    float f;
    switch (t) {
    case RT_F32: memcpy(&f, p + i * 4, 4); return f;
    case RT_F16: memcpy(&h, p + i * 2, 2); return rt_f16_to_f32(h);
    default: memcpy(&h, p + i * 2, 2); return rt_bf16_to_f32(h);
    }
}

static void put(char *p, RtDType t, int64_t i, float v) {
    uint16_t h;
    switch (t) {
    case RT_F32: memcpy(p + i * 4, &v, 4); return;
    case RT_F16: h = rt_f32_to_f16(v); break;
    default: h = rt_f32_to_bf16(v); break;
    }
    memcpy(p + i * 2, &h, 2);
}

/* Half an ulp of v in the output dtype (f32: 0, covered by the relative
 * part); subnormals have the ulp of the smallest binade. */
static double half_ulp(double v, RtDType t) {
    if (t == RT_F32 || v == 0) return 0;
    int e;
    frexp(fabs(v), &e); /* |v| in [2^(e-1), 2^e) */
    int mant = t == RT_F16 ? 10 : 7, emin = t == RT_F16 ? -14 : -126;
    if (e - 1 < emin) e = emin + 1;
    return ldexp(1.0, e - 1 - mant - 1);
}

static int qval(const uint8_t *q, int bits, int64_t kbytes, int64_t n, int64_t k) {
    const uint8_t *row = q + n * kbytes;
    if (bits == 8) return (int8_t)row[k];
    int v = (row[k / 2] >> (k % 2 * 4)) & 15;
    return v >= 8 ? v - 16 : v;
}

typedef struct Case {
    RtDType xt, yt;
    int64_t m, n, k, bits, group;
    int xmode, ymode; /* layouts, see strides() */
    int nbatch;
    int64_t batch[2];
    bool acc;
    bool unit_rows; /* x rows are unit vectors: exact results expected */
} Case;

/* Strides of an r x c matrix: row-major, padded, column-major (a
 * transposed view), both strides > 1. Returns the elements it spans. */
static int64_t strides(int mode, int64_t r, int64_t c, int64_t *rs, int64_t *cs) {
    switch (mode) {
    case 0: *rs = c, *cs = 1; return r * c;
    case 1: *rs = c + 5, *cs = 1; return r * (c + 5);
    case 2: *rs = 1, *cs = r; return r * c;
    default: *rs = 2 * c + 1, *cs = 2; return r * (2 * c + 1);
    }
}

static int cases, failures;

static void run_case(const Case *c, RtPool *pool) {
    RtQMatmulDesc d = {0};
    d.x_dtype = c->xt, d.y_dtype = c->yt, d.m = c->m, d.n = c->n, d.k = c->k, d.bits = c->bits;
    d.group = c->group, d.accumulate = c->acc, d.nbatch = c->nbatch;
    int64_t xspan = strides(c->xmode, c->m, c->k, &d.x_rs, &d.x_cs);
    int64_t yspan = strides(c->ymode, c->m, c->n, &d.y_rs, &d.y_cs);
    int64_t nb = 1;
    for (int i = c->nbatch - 1; i >= 0; i--) {
        d.batch[i] = c->batch[i];
        d.x_bs[i] = xspan * nb + (i == 0 ? 3 : 0); /* not always foldable */
        d.y_bs[i] = yspan * nb;
        nb *= c->batch[i];
    }
    int64_t xlen = c->nbatch ? d.x_bs[0] * c->batch[0] + 1 : xspan + 1;
    int64_t ylen = yspan * nb + 1;
    size_t xes = rt_dtype_size(c->xt), yes = rt_dtype_size(c->yt);
    int64_t kbytes = c->bits == 8 ? c->k : (c->k + 1) / 2;
    int64_t ng = c->k ? (c->k + c->group - 1) / c->group : 0;
    char *x = malloc((size_t)xlen * xes + 1), *y = malloc((size_t)ylen * yes + 1);
    char *y0 = malloc((size_t)ylen * yes + 1);
    uint8_t *q = malloc((size_t)(c->n * kbytes) + 1);
    float *sc = malloc(sizeof(float) * (size_t)(c->n * ng) + 1);
    for (int64_t i = 0; i < xlen; i++)
        put(x, c->xt, i, (float)((double)rnd_in(-8000, 8000) / 4000.0));
    for (int64_t i = 0; i < c->n * kbytes; i++)
        q[i] = (uint8_t)rnd();
    for (int64_t i = 0; i < c->n * ng; i++)
        sc[i] = (float)((double)rnd_in(-1000, 1000) / 20000.0 + 1e-4);
    for (int64_t i = 0; i < ylen; i++)
        put(y, c->yt, i, c->acc ? (float)((double)rnd_in(-100, 100) / 16.0) : NAN);
    /* Unit rows: row i of every batch is e_(i * 7 mod k). */
    int64_t *xb = calloc((size_t)nb, sizeof(int64_t)), *yb = calloc((size_t)nb, sizeof(int64_t));
    for (int64_t b = 0; b < nb; b++) {
        int64_t rest = b;
        for (int i = c->nbatch - 1; i >= 0; i--) {
            xb[b] += rest % c->batch[i] * d.x_bs[i];
            yb[b] += rest % c->batch[i] * d.y_bs[i];
            rest /= c->batch[i];
        }
        if (c->unit_rows)
            for (int64_t i = 0; i < c->m; i++)
                for (int64_t kk = 0; kk < c->k; kk++)
                    put(x, c->xt, xb[b] + i * d.x_rs + kk * d.x_cs, kk == i * 7 % c->k ? 1.0f : 0);
    }
    memcpy(y0, y, (size_t)ylen * yes);
    rt_qmatmul(&d, x, q, sc, y, pool);

    char *touched = calloc((size_t)ylen, 1);
    int bad = 0;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t i = 0; i < c->m; i++)
            for (int64_t j = 0; j < c->n; j++) {
                int64_t yi = yb[b] + i * d.y_rs + j * d.y_cs;
                touched[yi] = 1;
                double s = c->acc ? get(y0, c->yt, yi) : 0, mag = fabs(s);
                for (int64_t kk = 0; kk < c->k; kk++) {
                    float w =
                        (float)qval(q, (int)c->bits, kbytes, j, kk) * sc[j * ng + kk / c->group];
                    double xv = get(x, c->xt, xb[b] + i * d.x_rs + kk * d.x_cs);
                    s += xv * w, mag += fabs(xv * w);
                }
                double got = get(y, c->yt, yi), want = s, tol;
                if (c->unit_rows && !c->acc) {
                    /* The exact weight, rounded once to y's dtype. */
                    char tmp[4];
                    put(tmp, c->yt, 0, (float)s);
                    want = get(tmp, c->yt, 0);
                    tol = 0;
                } else {
                    double big = fabs(got) > fabs(want) ? fabs(got) : fabs(want);
                    tol = 1e-5 * mag + half_ulp(big, c->yt);
                }
                if (!(fabs(got - want) <= tol)) {
                    if (!bad && failures < 10)
                        printf("x %s y %s m=%lld n=%lld k=%lld bits=%lld group=%lld xmode=%d "
                               "ymode=%d batch%d acc=%d unit=%d: y[%lld][%lld] = %.9g, want "
                               "%.9g (tol %g)\n",
                               rt_dtype_name(c->xt), rt_dtype_name(c->yt), (long long)c->m,
                               (long long)c->n, (long long)c->k, (long long)c->bits,
                               (long long)c->group, c->xmode, c->ymode, c->nbatch, c->acc,
                               c->unit_rows, (long long)i, (long long)j, got, want, tol);
                    bad++;
                }
            }
    for (int64_t i = 0; i < ylen; i++)
        if (!touched[i] && memcmp(y + i * (int64_t)yes, y0 + i * (int64_t)yes, yes)) {
            if (!bad && failures < 10)
                printf("m=%lld n=%lld k=%lld: y[%lld] outside the result changed\n",
                       (long long)c->m, (long long)c->n, (long long)c->k, (long long)i);
            bad++;
            break;
        }
    cases++;
    if (bad) failures++;
    free(touched);
    free(xb);
    free(yb);
    free(x);
    free(y);
    free(y0);
    free(q);
    free(sc);
}

static const RtDType FLOATS[] = {RT_F32, RT_F16, RT_BF16};

static void test_random(RtPool *pool) {
    /* k around the vector widths (8 on AVX2, 16 on AVX-512) and the mr = 1
     * unroll (32); groups of 8 and 24 reach the AVX2 kernels only. */
    static const int64_t ks[] = {1,  2,  3,  7,  9,  15,  16,  17,  23,
                                 31, 32, 33, 40, 64, 100, 129, 256, 300};
    for (int it = 0; it < 1500; it++) {
        Case c = {0};
        c.xt = FLOATS[rnd() % 3], c.yt = FLOATS[rnd() % 3];
        c.k = ks[rnd() % (sizeof ks / sizeof ks[0])];
        c.m = rnd() % 3 ? rnd_in(1, 9) : rnd_in(10, 40);
        c.n = rnd() % 4 ? rnd_in(1, 40) : 1;
        c.bits = rnd() % 2 ? 8 : 4;
        int64_t groups[] = {1, 3, 5, 8, 16, 24, 32, 64, c.k, c.k + 7};
        c.group = groups[rnd() % 10];
        c.xmode = (int)(rnd() % 4), c.ymode = (int)(rnd() % 4);
        c.nbatch = (int)(rnd() % 3);
        c.batch[0] = rnd_in(1, 3), c.batch[1] = rnd_in(1, 3);
        c.acc = rnd() % 2;
        c.unit_rows = rnd() % 8 == 0;
        run_case(&c, pool);
    }
}

/* Hand-picked shapes: edges, both regimes, and (last) several sgemm
 * blocks of n (16 MiB of f32 weights per block: 512 rows at k = 8192). */
static void test_shapes(RtPool *pool) {
    static const int64_t shapes[][3] = {{1, 1, 1},    {1, 1, 2},    {1, 7, 1},     {8, 5, 33},
                                        {9, 5, 33},   {1, 37, 128}, {3, 64, 4096}, {16, 100, 4096},
                                        {64, 64, 64}, {40, 3, 1000}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int bits = 4; bits <= 8; bits += 4)
            for (int unit = 0; unit < 2; unit++)
                for (int t = 0; t < 3; t++) {
                    Case c = {FLOATS[t],
                              FLOATS[(t + 1 + unit) % 3],
                              shapes[i][0],
                              shapes[i][1],
                              shapes[i][2],
                              bits,
                              bits == 8 ? shapes[i][2] : 128,
                              t % 2 ? 2 : 0,
                              t,
                              0,
                              {0, 0},
                              t == 1,
                              unit};
                    if (c.unit_rows) c.yt = RT_F32, c.acc = false;
                    run_case(&c, pool);
                }
    Case big = {RT_BF16, RT_F32, 34, 1030, 8192, 4, 128, 0, 1, 0, {0, 0}, true, false};
    run_case(&big, pool);
    /* Three sgemm blocks (512 weight rows each at k = 8192) whose bf16
     * results are rounded 8 at a time into padded rows of y. */
    Case big_bf16 = {RT_BF16, RT_BF16, 34, 1030, 8192, 8, 128, 0, 1, 0, {0, 0}, false, false};
    run_case(&big_bf16, pool);
}

static void test_edges(RtPool *pool) {
    /* k = 0: y = 0, or unchanged when accumulating; m or n = 0: nothing. */
    float y[4] = {1, 2, 3, 4};
    RtQMatmulDesc d = {.x_dtype = RT_F32,
                       .y_dtype = RT_F32,
                       .m = 2,
                       .n = 2,
                       .k = 0,
                       .x_rs = 0,
                       .x_cs = 1,
                       .y_rs = 2,
                       .y_cs = 1,
                       .bits = 8,
                       .group = 1,
                       .accumulate = 1};
    rt_qmatmul(&d, NULL, NULL, NULL, y, pool);
    CHECK(y[0] == 1 && y[3] == 4);
    d.accumulate = 0;
    rt_qmatmul(&d, NULL, NULL, NULL, y, pool);
    CHECK(y[0] == 0 && y[1] == 0 && y[2] == 0 && y[3] == 0);
    float x1 = 2, s1 = 0.5f, out = 42;
    int8_t q1 = -3;
    RtQMatmulDesc one = {.x_dtype = RT_F32,
                         .y_dtype = RT_F32,
                         .m = 1,
                         .n = 1,
                         .k = 1,
                         .x_rs = 1,
                         .x_cs = 1,
                         .y_rs = 1,
                         .y_cs = 1,
                         .bits = 8,
                         .group = 1};
    RtQMatmulDesc z = one;
    z.m = 0;
    rt_qmatmul(&z, &x1, &q1, &s1, &out, pool);
    z = one, z.n = 0;
    rt_qmatmul(&z, &x1, &q1, &s1, &out, pool);
    z = one, z.nbatch = 1, z.batch[0] = 0;
    rt_qmatmul(&z, &x1, &q1, &s1, &out, pool);
    CHECK(out == 42);
    /* Malformed descriptors do nothing. */
    RtQMatmulDesc bad = one;
    bad.bits = 2;
    rt_qmatmul(&bad, &x1, &q1, &s1, &out, pool);
    bad = one, bad.group = 0;
    rt_qmatmul(&bad, &x1, &q1, &s1, &out, pool);
    bad = one, bad.x_dtype = RT_I8;
    rt_qmatmul(&bad, &x1, &q1, &s1, &out, pool);
    bad = one, bad.y_dtype = RT_F64;
    rt_qmatmul(&bad, &x1, &q1, &s1, &out, pool);
    bad = one, bad.nbatch = RT_QMATMUL_MAX_BATCH + 1;
    rt_qmatmul(&bad, &x1, &q1, &s1, &out, pool);
    bad = one, bad.k = -1;
    rt_qmatmul(&bad, &x1, &q1, &s1, &out, pool);
    rt_qmatmul(NULL, &x1, &q1, &s1, &out, pool);
    CHECK(out == 42);
    rt_qmatmul(&one, &x1, &q1, &s1, &out, NULL); /* a NULL pool is fine */
    CHECK(out == -3);
    /* int4 nibble order and sign: bytes 0x8f = (-1, -8), 0x07 = (7, 0). */
    uint8_t q4[2] = {0x8f, 0x07};
    float x4[3] = {1, 10, 100}, s4 = 1, o4 = 0;
    RtQMatmulDesc d4 = one;
    d4.bits = 4, d4.k = 3, d4.group = 3;
    rt_qmatmul(&d4, x4, q4, &s4, &o4, pool);
    CHECK(o4 == -1 - 80 + 700);
}

int main(void) {
    RtPool *pool;
    RtError err;
    if (rt_pool_create(3, &pool, &err)) return 3;
    rt_blas_set_threads(3);
    test_random(pool);
    test_shapes(pool);
    test_random(NULL);
    printf("%d qmatmul cases, %d failed\n", cases, failures);
    CHECK_INT(0, failures);
    test_edges(pool);
    rt_blas_set_threads(1);
    rt_pool_destroy(pool);
    return rt_test_report();
}
