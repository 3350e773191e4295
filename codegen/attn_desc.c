/* scaled_dot_product_attention nodes as the runtime's RtAttnDesc
 * (runtime/attention.c), and their scratch: each node's blocks need
 * rt_attention_scratch_bytes of f32 workspace, planned at the arena's tail
 * where the convolutions' scratch is (the steps run one at a time, so the
 * tail is the largest of them, not their sum). The arena the executable
 * allocates is then the one `tgc report` prints. */
#include <string.h>

#include "codegen/codegen.h"
#include "ir/dropout.h"

/* The strides of x (an operand with ndim - 2 batch dims of its own) for
 * the nb batch dims of the result, right-aligned: 0 where x has no such
 * dim or broadcasts it. */
static void batch_strides(const Value *x, int nb, const int64_t *batch, int64_t *out) {
    int own = x->ndim - 2;
    for (int d = 0; d < nb; d++) {
        int xd = d - (nb - own);
        out[d] = xd < 0 || (x->shape[xd] == 1 && batch[d] != 1) ? 0 : x->strides[xd];
    }
}

/* The forward's description; for attention_backward (bwd) the forward's
 * result is its operand `out` and the flags sit one place later. */
static void describe(const CgProgram *p, const Value *v, bool bwd, RtAttnDesc *d) {
    const Value *q = v->args[0].t, *k = v->args[1].t, *val = v->args[2].t;
    const Value *o = bwd ? v->args[4].t : v;
    int fl = bwd ? 6 : 5;
    const Value *m = v->args[3].kind == ARG_TENSOR ? v->args[3].t : NULL;
    memset(d, 0, sizeof *d);
    d->dtype = p->dt[q->order];
    d->causal = v->args[fl].kind == ARG_BOOL && v->args[fl].i;
    d->l = q->shape[q->ndim - 2];
    d->e = q->shape[q->ndim - 1];
    d->s = k->shape[k->ndim - 2];
    d->ev = val->shape[val->ndim - 1];
    d->scale =
        v->args[fl + 1].kind == ARG_NUM ? v->args[fl + 1].f : 1.0 / __builtin_sqrt((double)d->e);
    int nb = v->ndim - 2;
    TGC_ASSERT(nb <= RT_ATTN_MAX_BATCH);
    d->nbatch = nb;
    memcpy(d->batch, v->shape, sizeof(int64_t) * (size_t)nb);
    d->q_rs = q->strides[q->ndim - 2], d->q_cs = q->strides[q->ndim - 1];
    d->k_rs = k->strides[k->ndim - 2], d->k_cs = k->strides[k->ndim - 1];
    d->v_rs = val->strides[val->ndim - 2], d->v_cs = val->strides[val->ndim - 1];
    d->o_rs = o->strides[o->ndim - 2], d->o_cs = o->strides[o->ndim - 1];
    batch_strides(q, nb, d->batch, d->q_bs);
    batch_strides(k, nb, d->batch, d->k_bs);
    batch_strides(val, nb, d->batch, d->v_bs);
    batch_strides(o, nb, d->batch, d->o_bs);
    if (m) {
        d->mask_kind = p->dt[m->order] == DT_BOOL ? 1 : 2;
        /* The mask right-aligned against [batch..., L, S]; a size-1 dim
         * (or a missing one) broadcasts with stride 0. */
        int64_t full[TG_MAX_DIMS], st[TG_MAX_DIMS];
        memcpy(full, d->batch, sizeof(int64_t) * (size_t)nb);
        full[nb] = d->l, full[nb + 1] = d->s;
        for (int i = 0; i < nb + 2; i++) {
            int md = i - (nb + 2 - m->ndim);
            st[i] = md < 0 || (m->shape[md] == 1 && full[i] != 1) ? 0 : m->strides[md];
        }
        memcpy(d->m_bs, st, sizeof(int64_t) * (size_t)nb);
        d->m_rs = st[nb], d->m_cs = st[nb + 1];
    }
    /* dropout's mask: attention_dropout's p and site, or those its
     * gradient was given (ir/dropout.h) */
    bool drop = bwd ? v->args[8].kind == ARG_TENSOR : v->op == OP_SDPA_DROP;
    if (drop) {
        double p = bwd ? v->args[10].f : v->args[4].f;
        d->dropout = 1;
        d->drop_threshold = dropout_threshold(p);
        d->drop_site = bwd ? v->args[11].i : v->args[9].i;
        d->drop_scale = dropout_scale(p, DT_F32);
    }
}

void cg_attn_describe(const CgProgram *p, const Value *v, RtAttnDesc *d) {
    describe(p, v, false, d);
}

void cg_attn_bwd_describe(const CgProgram *p, const Value *v, RtAttnBwdDesc *d) {
    memset(d, 0, sizeof *d);
    describe(p, v, true, &d->f);
    const Value *g = v->args[5].t;
    int nb = (int)d->f.nbatch;
    d->g_rs = g->strides[g->ndim - 2], d->g_cs = g->strides[g->ndim - 1];
    batch_strides(g, nb, d->f.batch, d->g_bs);
    /* the packed result: its own storage, rows of max(E, Ev) + 2 */
    TGC_ASSERT(v->strides[v->ndim - 1] == 1 && v->strides[v->ndim - 2] == v->shape[v->ndim - 1]);
    batch_strides(v, nb, d->f.batch, d->r_bs);
}

void cg_attn_plan(CgProgram *p, MemPlan *plan, bool cuda) {
    const Graph *g = p->g;
    if (cuda) return; /* the CUDA kernel keeps its tiles in shared memory (cu_attention.c) */
    int64_t need = 0;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if ((v->op != OP_SDPA && v->op != OP_SDPA_DROP && v->op != OP_SDPA_BWD) || v->dead)
            continue;
        int64_t s;
        if (v->op == OP_SDPA_BWD) {
            RtAttnBwdDesc bd;
            cg_attn_bwd_describe(p, v, &bd);
            s = (int64_t)rt_attention_backward_scratch_bytes(&bd);
        } else {
            RtAttnDesc d;
            cg_attn_describe(p, v, &d);
            s = (int64_t)rt_attention_scratch_bytes(&d);
        }
        if (s > need) need = s;
    }
    if (!need) return;
    int64_t base =
        p->conv_scratch_bytes ? p->convs[0].scratch_offset : memplan_align(plan->arena_bytes);
    p->attn_scratch_offset = base;
    p->attn_scratch_bytes = memplan_align(need);
    if (base + p->attn_scratch_bytes > plan->arena_bytes)
        plan->arena_bytes = base + p->attn_scratch_bytes;
}
