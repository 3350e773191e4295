/* The sampler (runtime/sample.c): torch.argmax's tie rule, greedy through
 * the sampler, f16/bf16 logits, seeded reproducibility and per-row
 * streams, top-k keeping ties, and a statistical test: 20,000 draws at
 * temperature 0.7, top-k 5, top-p 0.9 from fixed logits against the
 * renormalised distribution computed here independently (Hugging Face's
 * warpers in order), by a chi-square test at p = 1e-6 (3 degrees of
 * freedom: the bound 30.66), and tokens outside the kept set never drawn.
 * The draws are deterministic for the seed, so the test is too: the bound
 * says how unlikely a correct sampler is to fail it for another seed. */
#include <math.h>
#include <stdlib.h>

#include "rt_test.h"
#include "tgcrt.h"

static void test_argmax(void) {
    float a[] = {1, 3, 3, 2};
    CHECK_INT(1, rt_argmax(a, RT_F32, 4));
    float b[] = {-INFINITY, -INFINITY};
    CHECK_INT(0, rt_argmax(b, RT_F32, 2));
    float c[] = {1, NAN, 5, NAN}; /* torch: a NaN is the max */
    CHECK_INT(1, rt_argmax(c, RT_F32, 4));
    uint16_t h[] = {rt_f32_to_f16(0.5f), rt_f32_to_f16(2), rt_f32_to_f16(2), rt_f32_to_f16(-1)};
    CHECK_INT(1, rt_argmax(h, RT_F16, 4));
    uint16_t bf[] = {rt_f32_to_bf16(-3), rt_f32_to_bf16(-2), rt_f32_to_bf16(4), rt_f32_to_bf16(4)};
    CHECK_INT(2, rt_argmax(bf, RT_BF16, 4));
    double d[] = {0, 0, 0};
    CHECK_INT(0, rt_argmax(d, RT_F64, 3));

    /* Temperature 0 through the sampler: the same rule, whatever top-k/p. */
    RtSampling s = {.temperature = 0, .top_k = 1, .top_p = 0.5, .seed = 9};
    RtSampler *sm = NULL;
    RtError err;
    rt_error_clear(&err);
    CHECK_INT(TGCRT_OK, rt_sampler_create(&s, 4, 1, &sm, &err));
    int64_t tok = -1;
    CHECK_INT(TGCRT_OK, rt_sampler_next(sm, 0, a, RT_F32, &tok, &err));
    CHECK_INT(1, tok);
    rt_sampler_destroy(sm);
}

/* n draws from logits under s on row `row` of a sampler of `rows` rows. */
static void draws(const RtSampling *s, const void *logits, RtDType dt, int64_t vocab, int64_t rows,
                  int64_t row, int n, int64_t *out) {
    RtSampler *sm = NULL;
    RtError err;
    rt_error_clear(&err);
    if (rt_sampler_create(s, vocab, rows, &sm, &err)) {
        printf("  %s\n", err.msg);
        CHECK(false);
        return;
    }
    for (int i = 0; i < n; i++)
        if (rt_sampler_next(sm, row, logits, dt, &out[i], &err)) {
            printf("  %s\n", err.msg);
            CHECK(false);
            break;
        }
    rt_sampler_destroy(sm);
}

static void test_seeds(void) {
    float l[8] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f};
    RtSampling s = {.temperature = 1, .top_k = 0, .top_p = 1, .seed = 42};
    int64_t a[200], b[200], c[200], d[200], e[200];
    draws(&s, l, RT_F32, 8, 1, 0, 200, a);
    draws(&s, l, RT_F32, 8, 1, 0, 200, b);
    draws(&s, l, RT_F32, 8, 3, 0, 200, c); /* row 0 of 3: the same stream */
    draws(&s, l, RT_F32, 8, 3, 1, 200, d); /* row 1: its own */
    s.seed = 43;
    draws(&s, l, RT_F32, 8, 1, 0, 200, e);
    int same_ab = 0, same_ac = 0, same_ad = 0, same_ae = 0;
    for (int i = 0; i < 200; i++) {
        same_ab += a[i] == b[i];
        same_ac += a[i] == c[i];
        same_ad += a[i] == d[i];
        same_ae += a[i] == e[i];
    }
    CHECK_INT(200, same_ab);
    CHECK_INT(200, same_ac);
    CHECK(same_ad < 100); /* ~25 expected by chance */
    CHECK(same_ae < 100);

    /* f16 and bf16 logits (exact in both): the same tokens as f32. */
    float x[4] = {0.5f, -1, 2, 0.25f};
    uint16_t h[4], bf[4];
    for (int i = 0; i < 4; i++) {
        h[i] = rt_f32_to_f16(x[i]);
        bf[i] = rt_f32_to_bf16(x[i]);
    }
    int64_t f[100], g[100], k[100];
    draws(&s, x, RT_F32, 4, 1, 0, 100, f);
    draws(&s, h, RT_F16, 4, 1, 0, 100, g);
    draws(&s, bf, RT_BF16, 4, 1, 0, 100, k);
    CHECK(!memcmp(f, g, sizeof f) && !memcmp(f, k, sizeof f));

    /* The generator, as docs/runtime.md defines it (splitmix64 seeding
     * xoshiro256**): values from an independent Python implementation of
     * both, so a change of generator or seeding is seen. */
    RtRng r;
    rt_rng_seed(&r, 0, 0);
    CHECK(rt_rng_next(&r) == 0x3a4bb92775cc364du);
    CHECK(rt_rng_next(&r) == 0x692fffe3c26d7315u);
    rt_rng_seed(&r, 12345, 2);
    CHECK(rt_rng_next(&r) == 0x104e3445dbf79efeu);
    double u = rt_rng_uniform(&r);
    CHECK(u >= 0 && u < 1);
}

/* Hugging Face's warpers, written out: z = l / T; keep z >= the k-th
 * largest; sort descending; keep while the mass before a token is below
 * p; renormalise. want[i] is token i's probability (0: excluded). */
static void expected(const float *l, int n, double t, int k, double p, double *want) {
    double z[64], kth;
    int order[64];
    for (int i = 0; i < n; i++) {
        z[i] = l[i] / t;
        order[i] = i;
    }
    for (int i = 0; i < n; i++) /* selection sort, descending, stable */
        for (int j = i + 1; j < n; j++)
            if (z[order[j]] > z[order[i]]) {
                int x = order[i];
                order[i] = order[j];
                order[j] = x;
            }
    kth = z[order[k - 1]];
    double w[64], tot = 0;
    int m = 0;
    while (m < n && z[order[m]] >= kth) {
        w[m] = exp(z[order[m]] - z[order[0]]);
        tot += w[m++];
    }
    double before = 0;
    int keep = 0;
    while (keep < m && before < p * tot)
        before += w[keep++];
    for (int i = 0; i < n; i++)
        want[i] = 0;
    for (int i = 0; i < keep; i++)
        want[order[i]] = w[i] / before;
}

static void test_distribution(void) {
    /* Sorted by logit: 8, 9, 0, 1, 2, 3...; top-5 keeps {8, 9, 0, 1, 2};
     * their probabilities at T = 0.7 are 0.520, 0.255, 0.125, 0.061,
     * 0.040: the mass before token 1 is 0.8992 < 0.9, so top-p keeps
     * {8, 9, 0, 1} and drops 2 (a sampler that stops at mass <= p would
     * drop 1 too). */
    float l[10] = {2.0f, 1.5f, 1.2f, 1.0f, 0.5f, 0.3f, 0.0f, -1.0f, 3.0f, 2.5f};
    enum { N = 20000 };
    RtSampling s = {.temperature = 0.7, .top_k = 5, .top_p = 0.9, .seed = 1234};
    int64_t *tok = malloc(N * sizeof *tok);
    if (!tok) return;
    draws(&s, l, RT_F32, 10, 1, 0, N, tok);
    double want[10], count[10] = {0};
    expected(l, 10, 0.7, 5, 0.9, want);
    CHECK(want[1] > 0 && want[2] == 0 && want[3] == 0);
    for (int i = 0; i < N; i++)
        count[tok[i] >= 0 && tok[i] < 10 ? tok[i] : 0] += 1;
    double chi2 = 0;
    int excluded = 0, kept = 0;
    for (int i = 0; i < 10; i++) {
        if (want[i] == 0) {
            excluded += (int)count[i];
            continue;
        }
        kept++;
        double e = want[i] * N;
        chi2 += (count[i] - e) * (count[i] - e) / e;
    }
    printf("  chi-square %.2f over %d tokens (bound 30.66 at p = 1e-6, 3 dof)\n", chi2, kept);
    CHECK_INT(4, kept);
    CHECK_INT(0, excluded);
    CHECK(chi2 < 30.66);
    free(tok);

    /* top-k keeps every token tied with the k-th (TopKLogitsWarper's
     * scores < topk[-1]): with k = 2 over {1, 1, 1, 0}, 0, 1 and 2 are
     * drawn, 3 never. */
    float ties[4] = {1, 1, 1, 0};
    RtSampling st = {.temperature = 1, .top_k = 2, .top_p = 1, .seed = 5};
    int64_t t[300];
    int seen[4] = {0};
    draws(&st, ties, RT_F32, 4, 1, 0, 300, t);
    for (int i = 0; i < 300; i++)
        seen[t[i] & 3]++;
    CHECK(seen[0] > 0 && seen[1] > 0 && seen[2] > 0 && seen[3] == 0);
}

static void test_errors(void) {
    RtError err;
    rt_error_clear(&err);
    RtSampling bad[] = {
        {.temperature = -0.5, .top_p = 1},
        {.temperature = NAN, .top_p = 1},
        {.temperature = 1, .top_k = -1, .top_p = 1},
        {.temperature = 1, .top_p = 0},
        {.temperature = 1, .top_p = 1.5},
    };
    const char *needles[] = {"temperature -0.5", "temperature nan", "top-k -1", "top-p 0",
                             "top-p 1.5"};
    for (int i = 0; i < 5; i++) {
        RtSampler *sm = NULL;
        CHECK_INT(TGCRT_ERR_ARG, rt_sampler_create(&bad[i], 4, 1, &sm, &err));
        CHECK_HAS(err.msg, needles[i]);
        CHECK(sm == NULL);
    }
    RtSampling s = {.temperature = 1, .top_p = 1};
    RtSampler *sm = NULL;
    CHECK_INT(TGCRT_OK, rt_sampler_create(&s, 3, 2, &sm, &err));
    float nan_row[3] = {0, NAN, 1}, inf_row[3] = {INFINITY, 0, 0};
    float ninf[3] = {-INFINITY, -INFINITY, -INFINITY}, one[3] = {-INFINITY, 2, -INFINITY};
    int64_t tok;
    CHECK_INT(TGCRT_ERR_VALUE, rt_sampler_next(sm, 1, nan_row, RT_F32, &tok, &err));
    CHECK_HAS(err.msg, "the logits of row 1 hold nan at token 1");
    CHECK_INT(TGCRT_ERR_VALUE, rt_sampler_next(sm, 0, inf_row, RT_F32, &tok, &err));
    CHECK_INT(TGCRT_ERR_VALUE, rt_sampler_next(sm, 0, ninf, RT_F32, &tok, &err));
    CHECK_HAS(err.msg, "every logit of row 0 is -inf");
    CHECK_INT(TGCRT_OK, rt_sampler_next(sm, 0, one, RT_F32, &tok, &err));
    CHECK_INT(1, tok);
    CHECK_INT(TGCRT_ERR_ARG, rt_sampler_next(sm, 2, one, RT_F32, &tok, &err)); /* no row 2 */
    CHECK_INT(TGCRT_ERR_ARG, rt_sampler_next(sm, 0, one, RT_I32, &tok, &err));
    rt_sampler_destroy(sm);
    rt_sampler_destroy(NULL);
}

int main(void) {
    test_argmax();
    test_seeds();
    test_distribution();
    test_errors();
    return rt_test_report();
}
