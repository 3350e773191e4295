/* The runtime's convolution descriptors (RtConvDesc, runtime/tgcrt.h) of a
 * planned graph: geometry, where each operand lives (a bufs slot and a
 * byte offset, as cg_fwd_ptr addresses it), the folded batch norm and the
 * post-ops of passes/conv_epilogue.c. The scratch every conv needs at run
 * time (oneDNN's scratchpad in user mode) is the arena's tail, sized by
 * asking the runtime, so `tgc report` and the executable agree. */
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/kernel_desc.h"
#include "ir/conv.h"

static RtConvRef ref_of(const CgProgram *p, const Value *v) {
    if (!v) return (RtConvRef){.slot = -1, .offset = 0};
    const Value *o = v->storage;
    int slot;
    int64_t base = kd_buffer(p, o, &slot); /* -1: an empty buffer outside the arena */
    int64_t off = v->offset * (int64_t)dtype_size(p->dt[o->order]);
    return (RtConvRef){.slot = slot, .offset = (base > 0 ? base : 0) + off};
}

/* v's element strides over (N, C, H, W), a 1-d or unbatched value's
 * missing dims given the strides a dense tensor would have. */
static void nchw_strides(const Value *v, int nd, bool batched, int64_t out[4]) {
    int64_t s[4], sh[4];
    int k = 0;
    int64_t dense = 1;
    for (int i = v->ndim - 1; i >= 0; i--)
        dense *= v->shape[i] ? v->shape[i] : 1;
    /* present dims in N C H W order */
    bool present[4] = {batched, true, nd == 2, true};
    for (int i = 0; i < 4; i++) {
        if (present[i]) {
            s[i] = v->strides[k];
            sh[i] = v->shape[k];
            k++;
        } else {
            s[i] = -1;
            sh[i] = 1;
        }
    }
    /* a missing dim of size 1 sits outside the next present one */
    for (int i = 3; i >= 0; i--) {
        if (s[i] >= 0) continue;
        int64_t inner = dense;
        for (int j = i + 1; j < 4; j++)
            if (present[j]) {
                inner = s[j] * (sh[j] ? sh[j] : 1);
                break;
            }
        s[i] = inner;
    }
    memcpy(out, s, sizeof s);
}

static int post_kind(const ConvPost *q) {
    switch (q->op) {
    case OP_ADD: return RT_CONV_POST_ADD;
    case OP_RELU:
    case OP_LEAKY_RELU: return RT_CONV_POST_RELU;
    case OP_RELU6:
    case OP_HARDTANH: return RT_CONV_POST_CLIP;
    case OP_HARDSWISH: return RT_CONV_POST_HARDSWISH;
    case OP_HARDSIGMOID: return RT_CONV_POST_HARDSIGMOID;
    case OP_ELU: return RT_CONV_POST_ELU;
    case OP_SIGMOID: return RT_CONV_POST_SIGMOID;
    case OP_TANH: return RT_CONV_POST_TANH;
    case OP_SILU: return RT_CONV_POST_SILU;
    case OP_GELU: return q->alpha ? RT_CONV_POST_GELU_TANH : RT_CONV_POST_GELU_ERF;
    case OP_MISH: return RT_CONV_POST_MISH;
    default: TGC_ASSERT(!"conv post-op"); return 0;
    }
}

static bool is_param(const Value *v) {
    return !v || v->storage->op == OP_PARAM;
}

static void describe(const CgProgram *p, const Value *v, RtConvDesc *d) {
    ConvGeom g;
    conv_geometry(v, &g);
    memset(d, 0, sizeof *d);
    d->dtype = (int32_t)p->dt[v->order];
    d->transposed = g.transposed;
    d->n = g.n, d->cin = g.cin, d->cout = g.cout, d->groups = g.groups;
    for (int i = 0; i < 2; i++) {
        d->in[i] = g.in[i], d->out[i] = g.out[i], d->k[i] = g.k[i];
        d->stride[i] = g.stride[i], d->dilation[i] = g.dilation[i];
        d->pad_l[i] = g.pad_l[i], d->pad_r[i] = g.pad_r[i];
    }
    const Value *x = v->args[0].t, *w = v->args[1].t;
    const Value *b = v->args[2].kind == ARG_TENSOR ? v->args[2].t : NULL;
    d->src = ref_of(p, x);
    d->weight = ref_of(p, w);
    d->bias = ref_of(p, b);
    d->dst = ref_of(p, v);
    nchw_strides(x, g.nd, g.batched, d->src_strides);
    nchw_strides(v, g.nd, g.batched, d->dst_strides);
    /* A training step updates its params: fold nothing once at setup. */
    d->constant_weights = is_param(w) && is_param(b) && !p->g->train_loss;
    const ConvEpilogue *e = v->conv_epi;
    if (e && e->bn) {
        d->has_bn = 1;
        d->bn_mean = ref_of(p, e->bn->mean);
        d->bn_var = ref_of(p, e->bn->var);
        d->bn_weight = ref_of(p, e->bn->weight);
        d->bn_bias = ref_of(p, e->bn->bias);
        d->bn_eps = e->bn->eps;
    }
    for (int i = 0; e && i < e->npost; i++) {
        const ConvPost *q = &e->post[i];
        RtConvPost *r = &d->post[d->npost++];
        r->kind = post_kind(q);
        r->alpha = (float)q->alpha, r->beta = (float)q->beta;
        if (q->op == OP_RELU6) r->alpha = 0, r->beta = 6;
        if (q->op == OP_ADD) {
            r->src = ref_of(p, q->other);
            nchw_strides(q->other, g.nd, g.batched, r->strides);
        } else {
            r->src.slot = -1;
        }
    }
}

/* ---- channels-last between convolutions ----
 *
 * oneDNN's fast f32 kernels on AVX2 (jit:avx2) take channels-last (NHWC)
 * tensors; on NCHW it falls back to im2col + sgemm (gemm:jit), measured
 * 1.35-1.8x slower per ResNet convolution. A conv's result that only
 * convolutions read (as their source or as the residual of a fused add) is
 * never seen by generated code, so it is stored NHWC: the same bytes, other
 * strides, which only the RtConvDescs of its producer and readers carry.
 * `tgc show` and every other kernel still see PyTorch's NCHW strides. */

/* Whether v is a conv's result read only by convs as a 2-d source or
 * residual: no output, no view of it read by anything else. */
static bool conv_only_reads(const Graph *g, const Value *c) {
    if (c->storage != c || c->is_output || c->dtype != DT_F32 || c->ndim != 4) return false;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *u = g->values[i];
        if (u->dead) continue;
        if (u->storage == c && u->is_output) return false;
        for (int k = 0; k < u->nin; k++) {
            const Value *t = u->in[k];
            if (t->storage != c) continue;
            if (u->op == OP_ALIAS && t == c) continue; /* the fused chain's end */
            if (!(op_info(u->op)->flags & OPF_CONV) || t->ndim != 4 || t->offset != 0 ||
                memcmp(t->strides, c->strides, sizeof(int64_t) * 4))
                return false;
            ConvGeom geo;
            conv_geometry(u, &geo);
            if (geo.nd != 2 || !geo.batched) return false;
            bool ok = u->args[0].t == t;
            for (int j = 0; !ok && u->conv_epi && j < u->conv_epi->npost; j++)
                ok = u->conv_epi->post[j].other == t;
            if (!ok) return false; /* a weight, a bias, a batch-norm tensor */
        }
    }
    return true;
}

static void nhwc_strides(const int64_t dims[4], int64_t out[4]) {
    out[1] = 1, out[3] = dims[1], out[2] = dims[3] * dims[1], out[0] = dims[2] * out[2];
}

/* Rewrites the strides of every descriptor touching a channels-last value. */
static void plan_channels_last(const CgProgram *p) {
    const Graph *g = p->g;
    for (int k = 0; k < p->nconvs; k++) {
        const Value *c = p->conv_values[k];
        if (!conv_only_reads(g, c)) continue;
        RtConvDesc *d = &p->convs[k];
        int64_t dims[4] = {d->n, d->cout, d->out[0], d->out[1]}, cl[4];
        nhwc_strides(dims, cl);
        memcpy(d->dst_strides, cl, sizeof cl);
        for (int j = 0; j < p->nconvs; j++) {
            const Value *u = p->conv_values[j];
            RtConvDesc *e = &p->convs[j];
            if (u->args[0].t->storage == c) memcpy(e->src_strides, cl, sizeof cl);
            for (int q = 0; u->conv_epi && q < u->conv_epi->npost; q++) {
                const Value *o = u->conv_epi->post[q].other;
                if (o && o->storage == c) memcpy(e->post[q].strides, cl, sizeof cl);
            }
        }
    }
}

void cg_conv_plan(Arena *a, CgProgram *p, MemPlan *plan, bool cuda) {
    const Graph *g = p->g;
    int n = 0;
    for (int i = 0; i < g->nvalues; i++)
        n += (op_info(g->values[i]->op)->flags & OPF_CONV) && !g->values[i]->dead;
    p->nconvs = n;
    if (!n) return;
    p->convs = ARENA_ARRAY(a, RtConvDesc, n);
    p->conv_values = ARENA_ARRAY(a, const Value *, n);
    int64_t base = memplan_align(plan->arena_bytes), scratch = 0;
    for (int i = 0, k = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (!(op_info(v->op)->flags & OPF_CONV) || v->dead) continue;
        describe(p, v, &p->convs[k]);
        p->conv_values[k++] = v;
    }
    plan_channels_last(p);
    /* The runtime that will run them sizes the tail: oneDNN's scratchpad,
     * or cuDNN's staging and workspace, which start on 256 bytes as
     * cuMemAlloc's own. */
    if (cuda) base = (base + 255) / 256 * 256;
    for (int k = 0; k < n; k++) {
        RtConvDesc *d = &p->convs[k];
        d->scratch_offset = base;
        int64_t s = (int64_t)(cuda ? rt_cuda_conv_scratch_bytes(d) : rt_conv_scratch_bytes(d, 0));
        if (s > scratch) scratch = s;
        p->conv_prepared_bytes +=
            (int64_t)(cuda ? rt_cuda_conv_prepared_bytes(d) : rt_conv_prepared_bytes(d));
    }
    p->conv_scratch_bytes = memplan_align(scratch);
    for (int k = 0; k < n; k++) /* every conv may use the whole shared tail */
        p->convs[k].scratch_bytes = p->conv_scratch_bytes;
    if (p->conv_scratch_bytes) {
        /* One region at the tail, outside the planner's slots (the lower
         * bound and step figures are the activations'). */
        plan->arena_bytes = base + p->conv_scratch_bytes;
    }
}

int cg_conv_index(const CgProgram *p, const Value *v) {
    for (int i = 0; i < p->nconvs; i++)
        if (p->conv_values[i] == v) return i;
    TGC_ASSERT(!"conv not planned");
    return -1;
}
