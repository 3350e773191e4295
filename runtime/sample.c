/* Choosing the next token from a row of logits (tgcrt.h "sampling";
 * docs/runtime.md "Generation").
 *
 * Greedy is torch.argmax: the first index of the largest value (a NaN
 * counts as the largest, as torch's max does). Sampling follows Hugging
 * Face's logits warpers in their order: divide by the temperature, keep the
 * top k (every token tied with the k-th value too, as TopKLogitsWarper's
 * `scores < topk[-1]` does), keep the smallest most-likely set whose
 * probability reaches top_p (TopPLogitsWarper: a token stays when the mass
 * of the tokens more likely than it is below top_p, so the most likely
 * always stays), then draw from what is left, renormalised. All in double.
 *
 * The draws: row r of a generation has its own generator, xoshiro256**
 * (Blackman and Vigna 2018) whose four state words are the first four
 * outputs of splitmix64 started at seed XOR ((r + 1) * 0xD1B54A32D192ED03),
 * so a row's tokens depend on the seed and its own logits only (not on the
 * batch it ran in). A draw is u = (next >> 11) * 2^-53 in [0, 1); the
 * token is the first, in the order most likely first (ties: lower index
 * first), whose cumulative weight exceeds u times the kept total. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"
#include "tgcrt.h"

/* ---- the generator ---- */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

void rt_rng_seed(RtRng *r, uint64_t seed, uint64_t stream) {
    uint64_t x = seed ^ ((stream + 1) * 0xD1B54A32D192ED03u);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

uint64_t rt_rng_next(RtRng *r) {
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double rt_rng_uniform(RtRng *r) {
    return (double)(rt_rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---- greedy ---- */

int64_t rt_argmax(const void *logits, RtDType dt, int64_t n) {
    int64_t best = 0;
    double m = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double x = rt_load_float(logits, dt, (size_t)i);
        if (isnan(x)) return i;
        if (x > m || i == 0) m = x, best = i;
    }
    return best;
}

/* ---- sampling ---- */

RtStatus rt_sampling_check(const RtSampling *s, RtError *err) {
    if (!s) return rt_error_set(err, TGCRT_ERR_ARG, "no sampling settings given");
    if (!(s->temperature >= 0) || !isfinite(s->temperature))
        return rt_error_set(err, TGCRT_ERR_ARG,
                            "temperature %g: expected a finite number >= 0 (0: greedy)",
                            s->temperature);
    if (s->top_k < 0)
        return rt_error_set(err, TGCRT_ERR_ARG, "top-k %lld: expected a count >= 0 (0: no limit)",
                            (long long)s->top_k);
    if (!(s->top_p > 0 && s->top_p <= 1))
        return rt_error_set(err, TGCRT_ERR_ARG,
                            "top-p %g: expected a probability in (0, 1] (1: no limit)", s->top_p);
    return TGCRT_OK;
}

typedef struct Cand {
    double z; /* logit / temperature */
    int64_t i;
} Cand;

struct RtSampler {
    RtSampling s;
    int64_t vocab, rows;
    RtRng *rng;   /* per row */
    Cand *cand;   /* vocab */
    double *heap; /* top_k smallest-on-top heap of the k largest */
};

RtStatus rt_sampler_create(const RtSampling *s, int64_t vocab, int64_t rows, RtSampler **out,
                           RtError *err) {
    if (!out) return rt_error_set(err, TGCRT_ERR_ARG, "rt_sampler_create: out is NULL");
    *out = NULL;
    RtStatus st = rt_sampling_check(s, err);
    if (st) return st;
    if (vocab < 1 || rows < 1 || (uint64_t)vocab > SIZE_MAX / sizeof(Cand))
        return rt_error_set(err, TGCRT_ERR_ARG,
                            "rt_sampler_create: vocab %lld and rows %lld must be >= 1",
                            (long long)vocab, (long long)rows);
    RtSampler *r = calloc(1, sizeof *r);
    int64_t k = s->top_k > 0 && s->top_k < vocab ? s->top_k : 0;
    if (r) {
        r->s = *s;
        r->vocab = vocab;
        r->rows = rows;
        r->rng = calloc((size_t)rows, sizeof *r->rng);
        r->cand = malloc((size_t)vocab * sizeof *r->cand);
        r->heap = malloc(((size_t)k + 1) * sizeof *r->heap);
    }
    if (!r || !r->rng || !r->cand || !r->heap) {
        rt_sampler_destroy(r);
        return rt_error_set(err, TGCRT_ERR_NOMEM, "out of memory for the sampler (vocab %lld)",
                            (long long)vocab);
    }
    for (int64_t i = 0; i < rows; i++)
        rt_rng_seed(&r->rng[i], s->seed, (uint64_t)i);
    *out = r;
    return TGCRT_OK;
}

void rt_sampler_destroy(RtSampler *r) {
    if (!r) return;
    free(r->rng);
    free(r->cand);
    free(r->heap);
    free(r);
}

/* The k-th largest of z[0..n) (k < n, none NaN): a min-heap of the k
 * largest seen. */
static double kth_largest(const Cand *c, int64_t n, int64_t k, double *h) {
    for (int64_t i = 0; i < n; i++) {
        double x = c[i].z;
        int64_t j;
        if (i < k) { /* push, sift up */
            for (j = i; j > 0 && h[(j - 1) / 2] > x; j = (j - 1) / 2)
                h[j] = h[(j - 1) / 2];
            h[j] = x;
        } else if (x > h[0]) { /* replace the smallest, sift down */
            for (j = 0;;) {
                int64_t l = 2 * j + 1, m = l + 1 < k && h[l + 1] < h[l] ? l + 1 : l;
                if (l >= k || h[m] >= x) break;
                h[j] = h[m];
                j = m;
            }
            h[j] = x;
        }
    }
    return h[0];
}

/* Most likely first; ties: the lower index first. */
static int by_z_desc(const void *a, const void *b) {
    const Cand *x = a, *y = b;
    if (x->z != y->z) return x->z > y->z ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

RtStatus rt_sampler_next(RtSampler *r, int64_t row, const void *logits, RtDType dt, int64_t *token,
                         RtError *err) {
    if (!r || !logits || !token || row < 0 || row >= r->rows || !rt_dtype_is_float(dt))
        return rt_error_set(err, TGCRT_ERR_ARG,
                            "rt_sampler_next: bad arguments (row %lld, dtype %s)", (long long)row,
                            rt_dtype_name(dt));
    if (r->s.temperature == 0) {
        *token = rt_argmax(logits, dt, r->vocab);
        return TGCRT_OK;
    }
    int64_t n = 0;
    for (int64_t i = 0; i < r->vocab; i++) {
        double x = rt_load_float(logits, dt, (size_t)i);
        if (isnan(x) || x == INFINITY)
            return rt_error_set(err, TGCRT_ERR_VALUE,
                                "cannot sample: the logits of row %lld hold %s at token %lld",
                                (long long)row, isnan(x) ? "nan" : "inf", (long long)i);
        if (x == -INFINITY) continue; /* probability 0 */
        r->cand[n++] = (Cand){x / r->s.temperature, i};
    }
    if (n == 0)
        return rt_error_set(err, TGCRT_ERR_VALUE, "cannot sample: every logit of row %lld is -inf",
                            (long long)row);
    /* top-k: whatever ties with the k-th largest stays. */
    if (r->s.top_k > 0 && r->s.top_k < n) {
        double t = kth_largest(r->cand, n, r->s.top_k, r->heap);
        int64_t m = 0;
        for (int64_t i = 0; i < n; i++)
            if (r->cand[i].z >= t) r->cand[m++] = r->cand[i];
        n = m;
    }
    qsort(r->cand, (size_t)n, sizeof *r->cand, by_z_desc);
    /* Weights relative to the largest (cand[0]), in place of z. */
    double zmax = r->cand[0].z, total = 0;
    for (int64_t i = 0; i < n; i++)
        total += r->cand[i].z = exp(r->cand[i].z - zmax);
    /* top-p: a token stays while the mass before it is below top_p. */
    if (r->s.top_p < 1) {
        double before = 0, bound = r->s.top_p * total;
        int64_t m = 0;
        while (m < n && before < bound)
            before += r->cand[m++].z;
        n = m;
        total = before;
    }
    double u = rt_rng_uniform(&r->rng[row]) * total, cum = 0;
    for (int64_t i = 0; i < n; i++) {
        cum += r->cand[i].z;
        if (cum > u) {
            *token = r->cand[i].i;
            return TGCRT_OK;
        }
    }
    *token = r->cand[n - 1].i; /* rounding: u * total at the very top */
    return TGCRT_OK;
}
