/* Scaled dot-product attention for generated code (see tgcrt_abi.h), computed
 * flash-attention style (Dao et al., "FlashAttention", 2022) so that the
 * [l, s] scores are never stored whole:
 *
 *   for each batch index and block of BM query rows (one task):
 *     m = -inf, sum = 0, acc = 0                          // per row
 *     for each block of BN keys (causal: only up to the block's last row):
 *       S = scale * Q_blk K_blk^T  (+ mask, or -inf where masked/causal)
 *       m' = max(m, rowmax S); P = exp(S - m'); c = exp(m - m')
 *       sum = sum * c + rowsum P; acc = acc * c + P V_blk; m = m'
 *     out = acc / sum                                      // rounded once
 *
 * With dropout (attention's dropout_p in a training build) P is multiplied
 * by dropout's mask after the row sum is updated: the normaliser is the
 * undropped row's, P V the dropped one's (attention_simd.h, drop_mask).
 *
 * q [l, e], k [s, e], v [s, ev], out [l, ev], mask [l, s] per batch index,
 * all addressed by element strides. Everything is computed in f32; f16 and
 * bf16 blocks are widened as they are loaded. The two block products go to
 * OpenBLAS's sgemm (several times faster than a plain loop here, as the
 * library picks AVX2/AVX-512 kernels at run time while this file is built
 * for the baseline ISA). Tasks run on the pool in at most
 * RT_ATTN_MAX_SLOTS slots, each with its own part of the planned scratch,
 * and BLAS runs single-threaded meanwhile: the blocks are the parallelism. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "attention_simd.h"
#include "rt_internal.h"

static int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

/* Floats rounded up to 64 bytes, so every part of a slot stays aligned. */
static int64_t pad16(int64_t n) {
    return (n + 15) / 16 * 16;
}

typedef struct Geo {
    int64_t bm, bn;      /* block sizes, clamped to l and s */
    int64_t nbatch_flat; /* product of the batch dims */
    int64_t nqb;         /* query blocks per batch index */
    int64_t ntasks, nslots;
    bool k_direct, v_direct; /* BLAS reads k / v in place: no block copies */
    int64_t slot_floats;
} Geo;

static bool valid(const RtAttnDesc *d) {
    if (d->dtype != RT_F32 && d->dtype != RT_F16 && d->dtype != RT_BF16) return false;
    if (d->mask_kind < 0 || d->mask_kind > 2 || d->nbatch < 0 || d->nbatch > RT_ATTN_MAX_BATCH)
        return false;
    if (d->dropout && (d->drop_threshold < 0 || d->drop_threshold > (1 << 24))) return false;
    if (d->l < 0 || d->s < 0 || d->e < 0 || d->ev < 0) return false;
    for (int64_t i = 0; i < d->nbatch; i++)
        if (d->batch[i] < 0) return false;
    return true;
}

/* A block BLAS can read in place: f32, unit column stride, a leading
 * dimension it accepts. */
static bool direct(const RtAttnDesc *d, int64_t rs, int64_t cs, int64_t cols) {
    return d->dtype == RT_F32 && cs == 1 && rs >= cols && rs >= 1;
}

static bool geometry(const RtAttnDesc *d, Geo *g) {
    if (!valid(d)) return false;
    memset(g, 0, sizeof *g);
    g->bm = min64(RT_ATTN_BLOCK_M, d->l);
    g->bn = min64(RT_ATTN_BLOCK_N, d->s);
    g->nbatch_flat = 1;
    for (int64_t i = 0; i < d->nbatch; i++)
        g->nbatch_flat *= d->batch[i];
    g->nqb = g->bm ? (d->l + g->bm - 1) / g->bm : 0;
    g->ntasks = g->nbatch_flat * g->nqb;
    g->nslots = min64(RT_ATTN_MAX_SLOTS, g->ntasks);
    g->k_direct = direct(d, d->k_rs, d->k_cs, d->e);
    g->v_direct = direct(d, d->v_rs, d->v_cs, d->ev);
    /* q block, k block, v block, scores, accumulator, row max, row sum */
    g->slot_floats = pad16(g->bm * d->e) + (g->k_direct ? 0 : pad16(g->bn * d->e)) +
                     (g->v_direct ? 0 : pad16(g->bn * d->ev)) + pad16(g->bm * g->bn) +
                     pad16(g->bm * d->ev) + 2 * pad16(g->bm);
    return true;
}

size_t rt_attention_scratch_bytes(const RtAttnDesc *d) {
    Geo g;
    if (!geometry(d, &g) || d->s == 0 || d->ev == 0) return 0;
    return (size_t)(g.nslots * g.slot_floats) * sizeof(float);
}

typedef struct Ctx {
    const RtAttnDesc *d;
    Geo g;
    const char *q, *k, *v, *mask;
    char *out;
    float *scratch;
    AttnDrop drop; /* d->dropout: the mask's key (attention_simd.h) */
} Ctx;

/* Mask and causality of one row of a score block (query row gi, keys
 * j0..j0+bn), then its online-softmax update; returns the factor the row's
 * accumulator must be scaled by. */
static float row_update(const Ctx *c, float *row, int64_t bn, int64_t gi, int64_t j0,
                        const char *mrow, float *mx, float *sum) {
    const RtAttnDesc *d = c->d;
    if (d->mask_kind == 1) {
        for (int64_t j = 0; j < bn; j++)
            if (!mrow[(j0 + j) * d->m_cs]) row[j] = -INFINITY;
    } else if (d->mask_kind == 2) {
        size_t es = d->dtype == RT_F32 ? 4 : 2;
        for (int64_t j = 0; j < bn; j++)
            row[j] += rt_load_f(mrow + (size_t)((j0 + j) * d->m_cs) * es, d->dtype);
    }
    if (d->causal)
        for (int64_t j = gi - j0 + 1 < 0 ? 0 : gi - j0 + 1; j < bn; j++)
            row[j] = -INFINITY;
    float m = row_max(row, bn, *mx);
    if (m == -INFINITY) { /* nothing takes part yet: P = 0, nothing to rescale */
        memset(row, 0, sizeof(float) * (size_t)bn);
        return 1.0f;
    }
    float s = exp_row(row, bn, m);
    float corr = expf(*mx - m); /* 0 when the old max was -inf */
    *sum = *sum * corr + s;
    *mx = m;
    return corr;
}

/* How many of the keys [j0, j0 + bn) a bool mask lets any row of
 * [i0, i0 + bm) see, counted up to the last one seen: the keys after it
 * add nothing to any row (their scores are -inf: P = 0), so the block is
 * cut there, and a block nothing sees (0) is skipped. A decoding step's
 * mask over the whole KV cache (keys up to its position) skips the blocks
 * past it and cuts the one it ends in: at position 30 of a 512-key cache
 * the step reads 31 keys, not 256. */
static int64_t block_live_keys(const Ctx *c, int64_t mo, int64_t i0, int64_t bm, int64_t j0,
                               int64_t bn) {
    const RtAttnDesc *d = c->d;
    if (d->mask_kind != 1) return bn;
    for (int64_t j = bn - 1; j >= 0; j--)
        for (int64_t i = 0; i < bm; i++)
            if (c->mask[(size_t)(mo + (i0 + i) * d->m_rs + (j0 + j) * d->m_cs)]) return j + 1;
    return 0;
}

/* One task: query rows [i0, i0 + bm) of batch index b. */
static void run_task(const Ctx *c, int64_t b, int64_t i0, float *ws) {
    const RtAttnDesc *d = c->d;
    const Geo *g = &c->g;
    size_t es = d->dtype == RT_F32 ? 4 : 2;
    int64_t qo = 0, ko = 0, vo = 0, mo = 0, oo = 0, rest = b;
    for (int64_t i = d->nbatch - 1; i >= 0; i--) {
        int64_t x = rest % d->batch[i];
        rest /= d->batch[i];
        qo += x * d->q_bs[i], ko += x * d->k_bs[i], vo += x * d->v_bs[i];
        mo += x * d->m_bs[i], oo += x * d->o_bs[i];
    }
    int64_t bm = min64(g->bm, d->l - i0), e = d->e, ev = d->ev;
    float *qb = ws, *kb = qb + pad16(g->bm * e);
    float *vb = kb + (g->k_direct ? 0 : pad16(g->bn * e));
    float *sb = vb + (g->v_direct ? 0 : pad16(g->bn * ev)), *acc = sb + pad16(g->bm * g->bn);
    float *mx = acc + pad16(g->bm * ev), *sum = mx + pad16(g->bm);
    load_block(c->q + (size_t)(qo + i0 * d->q_rs) * es, d->dtype, d->q_rs, d->q_cs, bm, e, qb, e);
    for (int64_t i = 0; i < bm; i++)
        mx[i] = -INFINITY, sum[i] = 0;
    memset(acc, 0, sizeof(float) * (size_t)(bm * ev));
    /* Causal: keys past the block's last row take part in none of its rows. */
    int64_t jend = d->causal ? min64(d->s, i0 + bm) : d->s;
    for (int64_t j0 = 0; j0 < jend; j0 += g->bn) {
        int64_t bn = block_live_keys(c, mo, i0, bm, j0, min64(g->bn, jend - j0));
        if (bn == 0) continue;
        const char *kp = c->k + (size_t)(ko + j0 * d->k_rs) * es;
        const char *vp = c->v + (size_t)(vo + j0 * d->v_rs) * es;
        const float *kf = kb, *vf = vb;
        int64_t kld = e, vld = ev;
        if (g->k_direct)
            kf = (const float *)kp, kld = d->k_rs;
        else
            load_block(kp, d->dtype, d->k_rs, d->k_cs, bn, e, kb, e);
        if (g->v_direct)
            vf = (const float *)vp, vld = d->v_rs;
        else
            load_block(vp, d->dtype, d->v_rs, d->v_cs, bn, ev, vb, ev);
        /* One query row (a decode step): sgemv, which reads the key and
         * value blocks in place, where sgemm with m = 1 packed both blocks
         * on every call (11% of an int8 decode step's samples). */
        if (e > 0 && bm == 1)
            cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)bn, (int)e, (float)d->scale, kf, (int)kld,
                        qb, 1, 0.0f, sb, 1);
        else if (e > 0)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)bm, (int)bn, (int)e,
                        (float)d->scale, qb, (int)e, kf, (int)kld, 0.0f, sb, (int)bn);
        else
            memset(sb, 0, sizeof(float) * (size_t)(bm * bn));
        for (int64_t i = 0; i < bm; i++) {
            const char *mrow =
                c->mask ? c->mask + (size_t)(mo + (i0 + i) * d->m_rs) * (d->mask_kind == 1 ? 1 : es)
                        : NULL;
            float corr = row_update(c, sb + i * bn, bn, i0 + i, j0, mrow, &mx[i], &sum[i]);
            /* the normaliser has the undropped row; P V the dropped one */
            if (d->dropout) {
                float z[RT_ATTN_BLOCK_N], *row = sb + i * bn;
                drop_mask(&c->drop, z, bn, (uint64_t)((b * d->l + i0 + i) * d->s + j0));
                for (int64_t j = 0; j < bn; j++)
                    row[j] *= z[j];
            }
            if (corr != 1.0f)
                for (int64_t x = 0; x < ev; x++)
                    acc[i * ev + x] *= corr;
        }
        if (bm == 1)
            cblas_sgemv(CblasRowMajor, CblasTrans, (int)bn, (int)ev, 1.0f, vf, (int)vld, sb, 1,
                        1.0f, acc, 1);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)bm, (int)ev, (int)bn, 1.0f,
                        sb, (int)bn, vf, (int)vld, 1.0f, acc, (int)ev);
    }
    for (int64_t i = 0; i < bm; i++) {
        char *orow = c->out + (size_t)(oo + (i0 + i) * d->o_rs) * es;
        float inv = 1.0f / sum[i]; /* all keys masked: 0 * inf = NaN, as PyTorch */
        for (int64_t x = 0; x < ev; x++)
            rt_store_f(orow + (size_t)(x * d->o_cs) * es, (RtDType)d->dtype, acc[i * ev + x] * inv);
    }
}

/* Slot t runs tasks t, t + nslots, ...: interleaved, so causal blocks
 * (whose cost grows with their row) spread evenly over the slots. */
static void run_slots(void *ctx, int64_t begin, int64_t end, int thread) {
    (void)thread;
    const Ctx *c = ctx;
    for (int64_t t = begin; t < end; t++) {
        float *ws = c->scratch + t * c->g.slot_floats;
        for (int64_t task = t; task < c->g.ntasks; task += c->g.nslots)
            run_task(c, task / c->g.nqb, task % c->g.nqb * c->g.bm, ws);
    }
}

static void zero_out(const RtAttnDesc *d, const Geo *g, char *out) {
    size_t es = d->dtype == RT_F32 ? 4 : 2;
    for (int64_t b = 0; b < g->nbatch_flat; b++) {
        int64_t oo = 0, rest = b;
        for (int64_t i = d->nbatch - 1; i >= 0; i--) {
            oo += rest % d->batch[i] * d->o_bs[i];
            rest /= d->batch[i];
        }
        for (int64_t i = 0; i < d->l; i++)
            for (int64_t x = 0; x < d->ev; x++)
                rt_store_f(out + (size_t)(oo + i * d->o_rs + x * d->o_cs) * es, (RtDType)d->dtype,
                           0.0f);
    }
}

void rt_attention(const RtAttnDesc *d, const void *q, const void *k, const void *v,
                  const void *mask, const int64_t *seed, const int64_t *step, void *out,
                  void *scratch, RtPool *pool) {
    Ctx c = {.d = d, .q = q, .k = k, .v = v, .mask = d->mask_kind ? mask : NULL, .out = out};
    if (!geometry(d, &c.g) || c.g.ntasks == 0 || d->ev == 0) return;
    if (d->dropout) {
        if (!seed || !step) return;
        c.drop = (AttnDrop){(uint64_t)*seed, (uint64_t)*step, (uint32_t)d->drop_site,
                            (uint32_t)d->drop_threshold, (float)d->drop_scale};
    }
    if (d->s == 0) { /* softmax over no keys, times an empty v: zeros */
        zero_out(d, &c.g, out);
        return;
    }
    c.scratch = scratch;
    /* Each slot's sgemm calls run on the thread that runs the slot:
     * OpenBLAS is single-threaded (rt_blas_single_thread), so the
     * parallelism is the pool's alone. */
    rt_blas_single_thread();
    rt_pool_parallel_for(pool, 0, c.g.nslots, 1, run_slots, &c);
}
