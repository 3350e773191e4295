/* The gradient of scaled dot-product attention for generated code (see
 * tgcrt_abi.h), FlashAttention-2's backward (Dao, 2023) without the
 * [l, s] probabilities:
 *
 *   for each batch index (one task; its dq, dk, dv are its own):
 *     for each block of BM query rows:
 *       lse = log-sum-exp of the row's scores, by one sweep over the keys
 *       D = rowsum(dO * O)
 *       for each block of BN keys (causal: only up to the block's last row):
 *         S = scale * Q K^T (+ mask, or -inf where masked/causal)
 *         P = exp(S - lse);  dV += P^T dO;  dP = dO V^T
 *         dS = P * (dP - D); dQ += scale dS K;  dK += scale dS^T Q
 *       (with dropout, Z the mask times 1/(1 - p), redrawn per tile:
 *        dP = (dO V^T) Z and dV += (P Z)^T dO)
 *
 * The log-sum-exp is recomputed here rather than saved by the forward:
 * the op table gives a node one result, and the sweep costs one product
 * of the six per block pair. Everything is computed in f32 (f16 and bf16
 * blocks widened as they are loaded) into the f32 packed result, whose
 * dk and dv rows the products accumulate in place. Tasks run on the pool
 * in at most RT_ATTN_MAX_SLOTS slots (batch indices t, t + nslots, ...);
 * BLAS runs single-threaded meanwhile, as in the forward (attention.c). */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "attention_simd.h"
#include "rt_internal.h"

static int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

static int64_t pad16(int64_t n) {
    return (n + 15) / 16 * 16;
}

typedef struct Geo {
    int64_t bm, bn, nbatch_flat, nslots, w, slot_floats;
} Geo;

static bool geometry(const RtAttnBwdDesc *bd, Geo *g) {
    const RtAttnDesc *d = &bd->f;
    if (d->dtype != RT_F32 && d->dtype != RT_F16 && d->dtype != RT_BF16) return false;
    if (d->mask_kind < 0 || d->mask_kind > 2 || d->nbatch < 0 || d->nbatch > RT_ATTN_MAX_BATCH)
        return false;
    if (d->l < 0 || d->s < 0 || d->e < 0 || d->ev < 0) return false;
    if (d->dropout && (d->drop_threshold < 0 || d->drop_threshold > (1 << 24))) return false;
    memset(g, 0, sizeof *g);
    g->nbatch_flat = 1;
    for (int64_t i = 0; i < d->nbatch; i++) {
        if (d->batch[i] < 0) return false;
        g->nbatch_flat *= d->batch[i];
    }
    g->bm = min64(RT_ATTN_BLOCK_M, d->l);
    g->bn = min64(RT_ATTN_BWD_BLOCK_N, d->s);
    g->nslots = min64(RT_ATTN_MAX_SLOTS, g->nbatch_flat);
    g->w = (d->e > d->ev ? d->e : d->ev) + 2;
    /* q, dO, k, v blocks, P and dP, row max and sum */
    g->slot_floats = pad16(g->bm * d->e) + pad16(g->bm * d->ev) + pad16(g->bn * d->e) +
                     pad16(g->bn * d->ev) + 2 * pad16(g->bm * g->bn) + 2 * pad16(g->bm);
    return true;
}

size_t rt_attention_backward_scratch_bytes(const RtAttnBwdDesc *d) {
    Geo g;
    if (!geometry(d, &g) || g.nbatch_flat == 0) return 0;
    return (size_t)(g.nslots * g.slot_floats) * sizeof(float);
}

typedef struct Ctx {
    const RtAttnBwdDesc *d;
    Geo g;
    const char *q, *k, *v, *mask, *o, *go;
    float *r, *scratch;
    AttnDrop drop; /* d->f.dropout: the mask's key (attention_simd.h) */
} Ctx;

/* One batch index's element offsets. */
typedef struct Offs {
    int64_t q, k, v, m, o, g, r;
} Offs;

static Offs offsets(const RtAttnBwdDesc *bd, int64_t b) {
    const RtAttnDesc *d = &bd->f;
    Offs x = {0};
    for (int64_t i = d->nbatch - 1; i >= 0; i--) {
        int64_t j = b % d->batch[i];
        b /= d->batch[i];
        x.q += j * d->q_bs[i], x.k += j * d->k_bs[i], x.v += j * d->v_bs[i];
        x.m += j * d->m_bs[i], x.o += j * d->o_bs[i], x.g += j * bd->g_bs[i];
        x.r += j * bd->r_bs[i];
    }
    return x;
}

/* The scores of query rows i0.. (bm of them) against keys j0.. (bn):
 * scale * Q K^T, then the mask and causality as the forward applies them. */
static void scores(const Ctx *c, const Offs *x, const float *qb, const float *kb, float *sb,
                   int64_t i0, int64_t bm, int64_t j0, int64_t bn) {
    const RtAttnDesc *d = &c->d->f;
    size_t es = d->dtype == RT_F32 ? 4 : 2;
    if (d->e > 0)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)bm, (int)bn, (int)d->e,
                    (float)d->scale, qb, (int)d->e, kb, (int)d->e, 0.0f, sb, (int)bn);
    else
        memset(sb, 0, sizeof(float) * (size_t)(bm * bn));
    for (int64_t i = 0; i < bm; i++) {
        float *row = sb + i * bn;
        int64_t gi = i0 + i;
        if (d->mask_kind) {
            const char *mrow =
                c->mask + (size_t)(x->m + gi * d->m_rs) * (d->mask_kind == 1 ? 1 : es);
            if (d->mask_kind == 1) {
                for (int64_t j = 0; j < bn; j++)
                    if (!mrow[(j0 + j) * d->m_cs]) row[j] = -INFINITY;
            } else {
                for (int64_t j = 0; j < bn; j++)
                    row[j] += rt_load_f(mrow + (size_t)((j0 + j) * d->m_cs) * es, d->dtype);
            }
        }
        if (d->causal)
            for (int64_t j = gi - j0 + 1 < 0 ? 0 : gi - j0 + 1; j < bn; j++)
                row[j] = -INFINITY;
    }
}

/* Loads key block j0 (bn rows) and its values. */
static void load_kv(const Ctx *c, const Offs *x, int64_t j0, int64_t bn, float *kb, float *vb) {
    const RtAttnDesc *d = &c->d->f;
    size_t es = d->dtype == RT_F32 ? 4 : 2;
    load_block(c->k + (size_t)(x->k + j0 * d->k_rs) * es, d->dtype, d->k_rs, d->k_cs, bn, d->e, kb,
               d->e);
    if (vb)
        load_block(c->v + (size_t)(x->v + j0 * d->v_rs) * es, d->dtype, d->v_rs, d->v_cs, bn, d->ev,
                   vb, d->ev);
}

/* One query block of batch index b: its lse and D, then every key block. */
static void query_block(const Ctx *c, const Offs *x, int64_t b, int64_t i0, float *ws) {
    const RtAttnBwdDesc *bd = c->d;
    const RtAttnDesc *d = &bd->f;
    const Geo *g = &c->g;
    size_t es = d->dtype == RT_F32 ? 4 : 2;
    int64_t e = d->e, ev = d->ev, w = g->w, bm = min64(g->bm, d->l - i0);
    float *qb = ws, *gb = qb + pad16(g->bm * e), *kb = gb + pad16(g->bm * ev);
    float *vb = kb + pad16(g->bn * e), *pb = vb + pad16(g->bn * ev);
    float *dpb = pb + pad16(g->bm * g->bn), *mx = dpb + pad16(g->bm * g->bn);
    float *sum = mx + pad16(g->bm);
    float *dq = c->r + x->r, *dk = dq + d->l * w, *dv = dk + d->s * w;
    load_block(c->q + (size_t)(x->q + i0 * d->q_rs) * es, d->dtype, d->q_rs, d->q_cs, bm, e, qb, e);
    load_block(c->go + (size_t)(x->g + i0 * bd->g_rs) * es, d->dtype, bd->g_rs, bd->g_cs, bm, ev,
               gb, ev);
    /* Causal: keys past the block's last row take part in none of its rows. */
    int64_t jend = d->causal ? min64(d->s, i0 + bm) : d->s;
    for (int64_t i = 0; i < bm; i++)
        mx[i] = -INFINITY, sum[i] = 0;
    for (int64_t j0 = 0; j0 < jend; j0 += g->bn) {
        int64_t bn = min64(g->bn, jend - j0);
        load_kv(c, x, j0, bn, kb, NULL);
        scores(c, x, qb, kb, pb, i0, bm, j0, bn);
        for (int64_t i = 0; i < bm; i++) {
            float m = row_max(pb + i * bn, bn, mx[i]);
            if (m == -INFINITY) continue;
            float s = exp_row(pb + i * bn, bn, m);
            sum[i] = sum[i] * expf(mx[i] - m) + s;
            mx[i] = m;
        }
    }
    for (int64_t i = 0; i < bm; i++) {
        float *row = dq + (i0 + i) * w;
        /* every key masked: -inf - -inf makes the row's P NaN, as the forward's output */
        row[w - 2] = mx[i] + logf(sum[i]);
        const char *orow = c->o + (size_t)(x->o + (i0 + i) * d->o_rs) * es;
        float dd = 0;
        for (int64_t y = 0; y < ev; y++)
            dd += gb[i * ev + y] * rt_load_f(orow + (size_t)(y * d->o_cs) * es, d->dtype);
        row[w - 1] = dd;
    }
    for (int64_t j0 = 0; j0 < jend; j0 += g->bn) {
        int64_t bn = min64(g->bn, jend - j0);
        load_kv(c, x, j0, bn, kb, vb);
        scores(c, x, qb, kb, pb, i0, bm, j0, bn);
        for (int64_t i = 0; i < bm; i++)
            exp_row(pb + i * bn, bn, dq[(i0 + i) * w + w - 2]);
        if (ev > 0)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)bm, (int)bn, (int)ev, 1.0f,
                        gb, (int)ev, vb, (int)ev, 0.0f, dpb, (int)bn);
        else
            memset(dpb, 0, sizeof(float) * (size_t)(bm * bn));
        /* dS = P * (dP Z - D), then P becomes P Z (Z = 1 without dropout) */
        for (int64_t i = 0; i < bm; i++) {
            float dd = dq[(i0 + i) * w + w - 1], *p = pb + i * bn, *dp = dpb + i * bn;
            if (d->dropout) {
                float z[RT_ATTN_BWD_BLOCK_N];
                drop_mask(&c->drop, z, bn, (uint64_t)((b * d->l + i0 + i) * d->s + j0));
                for (int64_t j = 0; j < bn; j++) {
                    dp[j] = p[j] * (dp[j] * z[j] - dd);
                    p[j] *= z[j];
                }
                continue;
            }
            for (int64_t j = 0; j < bn; j++)
                dp[j] = p[j] * (dp[j] - dd);
        }
        /* dV += (P Z)^T dO */
        if (ev > 0)
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)bn, (int)ev, (int)bm, 1.0f,
                        pb, (int)bn, gb, (int)ev, 1.0f, dv + j0 * w, (int)w);
        if (e > 0) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)bm, (int)e, (int)bn,
                        (float)d->scale, dpb, (int)bn, kb, (int)e, 1.0f, dq + i0 * w, (int)w);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)bn, (int)e, (int)bm,
                        (float)d->scale, dpb, (int)bn, qb, (int)e, 1.0f, dk + j0 * w, (int)w);
        }
    }
}

static void run_slots(void *ctx, int64_t begin, int64_t end, int thread) {
    (void)thread;
    const Ctx *c = ctx;
    const RtAttnDesc *d = &c->d->f;
    for (int64_t t = begin; t < end; t++) {
        float *ws = c->scratch + t * c->g.slot_floats;
        for (int64_t b = t; b < c->g.nbatch_flat; b += c->g.nslots) {
            Offs x = offsets(c->d, b);
            float *r = c->r + x.r;
            memset(r, 0, sizeof(float) * (size_t)((d->l + 2 * d->s) * c->g.w));
            for (int64_t i0 = 0; i0 < d->l; i0 += c->g.bm)
                query_block(c, &x, b, i0, ws);
        }
    }
}

void rt_attention_backward(const RtAttnBwdDesc *d, const void *q, const void *k, const void *v,
                           const void *mask, const int64_t *seed, const int64_t *step,
                           const void *out, const void *grad_out, float *result, void *scratch,
                           RtPool *pool) {
    Ctx c = {.d = d, .q = q, .k = k, .v = v, .o = out, .go = grad_out, .r = result};
    c.mask = d->f.mask_kind ? mask : NULL;
    if (!geometry(d, &c.g) || c.g.nbatch_flat == 0) return;
    if (d->f.dropout) {
        if (!seed || !step) return;
        c.drop = (AttnDrop){(uint64_t)*seed, (uint64_t)*step, (uint32_t)d->f.drop_site,
                            (uint32_t)d->f.drop_threshold, (float)d->f.drop_scale};
    }
    c.scratch = scratch;
    rt_blas_single_thread();
    rt_pool_parallel_for(pool, 0, c.g.nslots, 1, run_slots, &c);
}
