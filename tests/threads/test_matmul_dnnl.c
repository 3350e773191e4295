/* f32 products through oneDNN's matmul primitive (runtime/matmul_dnnl.c),
 * called directly: rt_matmul sends f32 products there only on CPUs with
 * AVX-512, so on others this is what runs the path. Against a double loop:
 * plain, transposed and sliced operands, accumulation, batches with and
 * without broadcasting, the same shape again (the cached primitive, new
 * data), and the layouts it must refuse (C untouched). Exit 0 pass. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

static int fails;

#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fails++;                                                                               \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

static float *randv(size_t n, unsigned *s) {
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        *s = *s * 1103515245u + 12345u;
        v[i] = (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return v;
}

/* One case: batch dims bd (nb of them), m x k @ k x n, with every
 * operand's strides given; C starts as c0 (acc) and is compared with the
 * double loop at 1e-4 relative to the sum of |terms|. */
typedef struct Case {
    const char *name;
    int nb;
    int64_t bd[2], m, n, k;
    int64_t as[4], bs[4], cs[4]; /* batch strides..., row stride, column stride */
    bool acc;
} Case;

static int64_t span(const int64_t *dims, const int64_t *st, int nd) {
    int64_t e = 1;
    for (int i = 0; i < nd; i++)
        e += (dims[i] - 1) * st[i];
    return e;
}

static void run_case(RtPool *pool, const Case *t, unsigned seed, bool expect) {
    int nd = t->nb + 2;
    int64_t ad[4], bdm[4], cd[4];
    for (int i = 0; i < t->nb; i++)
        ad[i] = bdm[i] = cd[i] = t->bd[i];
    ad[t->nb] = t->m, ad[t->nb + 1] = t->k;
    bdm[t->nb] = t->k, bdm[t->nb + 1] = t->n;
    cd[t->nb] = t->m, cd[t->nb + 1] = t->n;
    int64_t na = span(ad, t->as, nd), nbb = span(bdm, t->bs, nd), nc = span(cd, t->cs, nd);
    unsigned s = seed;
    float *a = randv((size_t)na, &s), *b = randv((size_t)nbb, &s), *c = randv((size_t)nc, &s);
    float *c0 = malloc((size_t)nc * sizeof *c0);
    memcpy(c0, c, (size_t)nc * sizeof *c);
    RtMmOperand ops[3];
    memset(ops, 0, sizeof ops);
    ops[0].p = a, ops[1].p = b, ops[2].p = c;
    for (int i = 0; i < nd; i++) {
        ops[0].dims[i] = ad[i], ops[0].strides[i] = t->as[i];
        ops[1].dims[i] = bdm[i], ops[1].strides[i] = t->bs[i];
        ops[2].dims[i] = cd[i], ops[2].strides[i] = t->cs[i];
    }
    bool done = rt_matmul_dnnl(pool, nd, t->acc, ops);
    CHECK(done == expect, "%s: rt_matmul_dnnl returned %d, expected %d", t->name, done, expect);
    if (!done) {
        CHECK(!memcmp(c, c0, (size_t)nc * sizeof *c), "%s: refused, yet C changed", t->name);
    } else {
        int64_t nbat = t->nb > 0 ? t->bd[0] : 1, nbat2 = t->nb > 1 ? t->bd[1] : 1;
        double worst = 0;
        for (int64_t p = 0; p < nbat; p++)
            for (int64_t q = 0; q < nbat2; q++)
                for (int64_t i = 0; i < t->m; i++)
                    for (int64_t j = 0; j < t->n; j++) {
                        int64_t oa = 0, ob = 0, oc = 0, x[2] = {p, q};
                        for (int d = 0; d < t->nb; d++)
                            oa += x[d] * t->as[d], ob += x[d] * t->bs[d], oc += x[d] * t->cs[d];
                        oc += i * t->cs[t->nb] + j * t->cs[t->nb + 1];
                        double sum = t->acc ? c0[oc] : 0, mag = fabs(sum);
                        for (int64_t kk = 0; kk < t->k; kk++) {
                            double v = (double)a[oa + i * t->as[t->nb] + kk * t->as[t->nb + 1]] *
                                       b[ob + kk * t->bs[t->nb] + j * t->bs[t->nb + 1]];
                            sum += v, mag += fabs(v);
                        }
                        double err = fabs(c[oc] - sum) / (mag + 1e-6);
                        if (err > worst) worst = err;
                    }
        CHECK(worst < 1e-4, "%s: relative error %g", t->name, worst);
    }
    free(a), free(b), free(c), free(c0);
}

int main(void) {
    RtPool *pool = NULL;
    RtError err = {0};
    if (rt_pool_create(2, &pool, &err)) {
        printf("FAIL: rt_pool_create\n");
        return 1;
    }
    const Case cases[] = {
        {"plain 37x29 @ 29x41", 0, {0}, 37, 41, 29, {29, 1}, {41, 1}, {41, 1}, false},
        {"accumulate", 0, {0}, 37, 41, 29, {29, 1}, {41, 1}, {41, 1}, true},
        /* a linear layer's weight read as B = W^T: B's rows are contiguous */
        {"B transposed", 0, {0}, 16, 64, 48, {48, 1}, {1, 48}, {64, 1}, false},
        {"A transposed", 0, {0}, 16, 64, 48, {1, 16}, {64, 1}, {64, 1}, false},
        /* rows of a wider tensor (a slice), C into a wider one */
        {"sliced A and C", 0, {0}, 20, 24, 32, {100, 1}, {24, 1}, {50, 1}, false},
        {"batch of 3",
         1,
         {3},
         8,
         12,
         16,
         {8 * 16, 16, 1},
         {16 * 12, 12, 1},
         {8 * 12, 12, 1},
         false},
        /* attention's [b, h, s, e] @ [b, h, e, s] with B broadcast over b */
        {"2 batch dims, B broadcast",
         2,
         {2, 3},
         10,
         10,
         8,
         {3 * 80, 80, 8, 1},
         {0, 80, 1, 8},
         {3 * 100, 100, 10, 1},
         true},
        {"A broadcast over the batch", 1, {4}, 6, 7, 5, {0, 5, 1}, {35, 7, 1}, {42, 7, 1}, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        run_case(pool, &cases[i], 17u + (unsigned)i, true);
    /* The same shapes again with new data: the primitives made above. */
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        run_case(pool, &cases[i], 1000u + (unsigned)i, true);
    /* A negative stride: oneDNN cannot describe it. */
    RtMmOperand ops[3];
    memset(ops, 0, sizeof ops);
    float x[16] = {0}, y[16] = {0}, z[16] = {1};
    ops[0].p = x + 12, ops[1].p = y, ops[2].p = z;
    int64_t d2[2] = {4, 4}, sneg[2] = {-4, 1}, s2[2] = {4, 1};
    for (int o = 0; o < 3; o++) {
        memcpy(ops[o].dims, d2, sizeof d2);
        memcpy(ops[o].strides, o == 0 ? sneg : s2, sizeof s2);
    }
    CHECK(!rt_matmul_dnnl(pool, 2, false, ops) && z[0] == 1, "a negative stride is refused");
    /* C broadcast (stride 0 over a batch of 2) is refused: C is written. */
    int64_t d3[3] = {2, 4, 4}, s3[3] = {16, 4, 1}, s3c[3] = {0, 4, 1};
    ops[0].p = x;
    for (int o = 0; o < 3; o++) {
        memcpy(ops[o].dims, d3, sizeof d3);
        memcpy(ops[o].strides, o == 2 ? s3c : s3, sizeof s3);
    }
    float big[32] = {0};
    ops[0].p = big, ops[1].p = big;
    CHECK(!rt_matmul_dnnl(pool, 3, false, ops) && z[0] == 1, "a broadcast C is refused");
    CHECK(!rt_matmul_dnnl(NULL, 3, false, ops), "no pool: refused");
    rt_pool_destroy(pool);
    printf(fails ? "%d failed\n" : "all passed\n", fails);
    return fails != 0;
}
