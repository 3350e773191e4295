/* Channels-last activations for convolution networks.
 *
 * Requires: a planned graph (after pass_conv_epilogue: the fused chains are
 * aliases of their convs), views folded. Gives: the 4-d f32 values between
 * the first convolution and the pooling head stored channels-last (NHWC):
 * the value keeps its logical N, C, H, W shape and gets the strides
 * (H*W*C, 1, W*C, C), so `tgc show` (run before this pass) keeps PyTorch's
 * view while the plan and the kernels see the physical one.
 *
 * Why: oneDNN's direct kernels (jit:avx2, jit_dw, jit_1x1) want NHWC; on
 * NCHW a depthwise convolution runs im2col + sgemm (gemm:jit), and an
 * NCHW tensor between two NHWC convolutions costs two reorders. Keeping
 * the elementwise ops (batch norm, activations, the squeeze-excite
 * multiply, residual adds) in the same layout removes both.
 *
 * Which values: a convolution's result, and an elementwise kernel's result
 * one of whose operands of the same shape is channels-last (the layout
 * flows forward from the convolutions; a view already NHWC in memory
 * counts), as do pools, pads and interpolations, when every reader
 * indexes by strides: generated elementwise, reduction, normalisation and
 * copy kernels, convolutions (as source or residual, described to oneDNN
 * by the same strides) and views of those. Graph inputs, params and outputs keep the user's
 * layout, so the only reorders are the first convolution's read of the
 * input and the copy into an output. Views of a value that changes layout
 * are recomputed from the new strides; a view that then has no strides
 * (a `.view()` or a no-copy reshape across the channels) keeps its owner
 * NCHW. Training graphs are left alone. */
#include <stdlib.h>
#include <string.h>

#include "ir/conv.h"
#include "passes/fusion.h"
#include "passes/pipeline.h"

static bool is_conv2d(const Value *v) {
    if (!(op_info(v->op)->flags & OPF_CONV)) return false;
    ConvGeom geo;
    conv_geometry(v, &geo);
    return geo.nd == 2 && geo.batched;
}

/* Strides of a dense N, C, H, W tensor in NHWC order. */
static void nhwc(const int64_t *s, int64_t out[4]) {
    int64_t h = s[2] > 1 ? s[2] : 1, w = s[3] > 1 ? s[3] : 1, c = s[1] > 1 ? s[1] : 1;
    out[1] = 1, out[3] = c, out[2] = w * c, out[0] = h * w * c;
}

/* Whether t (4-d) has channels-last strides over its shape, as a
 * permute(0, 3, 1, 2) view of a dense N, H, W, C tensor has. */
static bool physically_nhwc(const Value *t) {
    if (t->ndim != 4 || t->storage->dead) return false;
    int64_t want[4];
    nhwc(t->shape, want);
    for (int d = 0; d < 4; d++)
        if (t->shape[d] > 1 && t->strides[d] != want[d]) return false;
    return true;
}

/* Whether u's reading of operand t (a value over a candidate's storage)
 * follows t's strides, whatever they are. */
static bool reader_ok(const Value *u, const Value *t) {
    if (u->is_view) return true; /* its own readers are checked too */
    if (fusion_is_expression(u) || (op_info(u->op)->flags & OPF_REDUCTION)) return true;
    /* Normalisations are reductions over rows that read x by its strides
     * (codegen/kernel_desc.c: kd_reduction): ConvNeXt's layer norm over
     * the channels reads a conv's result through permute(0, 2, 3, 1). */
    if (u->op == OP_LAYER_NORM || u->op == OP_RMS_NORM || u->op == OP_SOFTMAX ||
        u->op == OP_LOG_SOFTMAX)
        return u->in[0] == t;
    if (op_info(u->op)->flags & OPF_CONV) {
        if (!is_conv2d(u)) return false;
        if (u->args[0].t == t) return true;
        for (int j = 0; u->conv_epi && j < u->conv_epi->npost; j++)
            if (u->conv_epi->post[j].other == t) return true;
        return false; /* a weight, a bias, a batch-norm tensor */
    }
    switch (u->op) {
    case OP_RESHAPE:
    case OP_FLATTEN:
    case OP_VIEW:
    case OP_UNFLATTEN:
    case OP_CAT:
    case OP_CONCAT:
    case OP_STACK:
    case OP_REPEAT:
    case OP_FLIP:
    case OP_INDEX_SELECT: return true;
    default: return false;
    }
}

typedef struct Lay {
    Graph *g;
    bool *cl;                    /* [order]: stored channels-last */
    int64_t (*old)[TG_MAX_DIMS]; /* [order]: strides before the pass */
    int64_t *old_off;
} Lay;

/* A value whose producer writes by its strides and that may change them:
 * an owner (no view), 4-d f32, not an input, param or output. */
static bool writer_ok(const Value *v) {
    if (v->dead || v->is_view || v->storage != v || v->ndim != 4 || v->dtype != DT_F32 ||
        v->is_output || v->ntuple || (op_info(v->op)->flags & OPF_LEAF))
        return false;
    if (value_numel(v) == 0) return false;
    /* Reductions (pools: a max or sum over windows), cat (a constant pad)
     * and index_select (a reflect or replicate pad, an interpolate) store
     * by the value's strides too (codegen/kernel_desc.c). */
    return is_conv2d(v) || fusion_is_expression(v) || (op_info(v->op)->flags & OPF_REDUCTION) ||
           v->op == OP_CAT || v->op == OP_CONCAT || v->op == OP_INDEX_SELECT;
}

/* Whether v reads a channels-last owner: an elementwise op through a
 * same-shape operand (not a broadcast of a pooled [N, C, 1, 1]), a pool, a
 * pad or an interpolate through any (windows of it, one part of a cat, the
 * rows or columns an index_select picks). */
static bool fed_channels_last(const Lay *l, const Value *v) {
    bool any_shape = (op_info(v->op)->flags & OPF_REDUCTION) || v->op == OP_CAT ||
                     v->op == OP_CONCAT || v->op == OP_INDEX_SELECT;
    for (int k = 0; k < v->nin; k++) {
        const Value *t = v->in[k];
        bool same = t->ndim == 4 && value_same_shape(t, v);
        if (l->cl[t->storage->order] && (any_shape || same)) return true;
        /* A view already channels-last in memory, whatever its owner: the
         * permute(0, 3, 1, 2) back from ConvNeXt's channels-last linears
         * (an [N, H, W, C] product read as N, C, H, W). */
        if (same && physically_nhwc(t)) return true;
    }
    return false;
}

/* Clears owners that have a reader not indexing by strides, or an output
 * among their views. Returns whether anything changed. */
static bool drop_bad_readers(Lay *l) {
    Graph *g = l->g;
    bool changed = false;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *u = g->values[i];
        if (u->dead) continue;
        if (u->is_output && u->storage != u && l->cl[u->storage->order]) {
            l->cl[u->storage->order] = false;
            changed = true;
        }
        for (int k = 0; k < u->nin; k++) {
            const Value *t = u->in[k];
            if (!l->cl[t->storage->order] || reader_ok(u, t)) continue;
            l->cl[t->storage->order] = false;
            changed = true;
        }
    }
    return changed;
}

/* Lays out every owner as l->cl says and recomputes the views over the
 * channels-last ones, in graph order. Returns the first owner one of whose
 * views has no strides over the new layout (NULL: all have). */
static Value *apply(Lay *l) {
    Graph *g = l->g;
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        memcpy(v->strides, l->old[i], sizeof l->old[i]);
        v->offset = l->old_off[i];
        if (l->cl[i]) nhwc(v->shape, v->strides);
    }
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        if (v->dead || !v->is_view || !l->cl[v->storage->order]) continue;
        const OpInfo *info = op_info(v->op);
        if (!info->layout || !info->layout(v)) return v->storage;
    }
    return NULL;
}

/* A contiguous() copy the pass made channels-last whose input already has
 * those strides (a conv reading a permute(0, 3, 1, 2) of an N, H, W, C
 * tensor, ConvNeXt's layer norm before each stage) copies nothing: it
 * becomes a view of its input again, as contiguous() of a dense value is. */
static void unfold_copies(Lay *l) {
    Graph *g = l->g;
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        if (v->dead || v->op != OP_CONTIGUOUS || !l->cl[i] || v->storage != v || v->nin != 1)
            continue;
        const Value *t = v->in[0];
        if (t->dtype != v->dtype || !value_same_shape(t, v) || !physically_nhwc(t)) continue;
        for (int j = 0; j < g->nvalues; j++) {
            Value *w = g->values[j];
            if (w != v && w->storage == v) {
                w->storage = t->storage;
                w->offset += t->offset;
            }
        }
        v->is_view = true;
        v->storage = t->storage;
        v->offset = t->offset;
        memcpy(v->strides, t->strides, sizeof v->strides);
        v->copy_reason = NULL;
    }
}

void pass_layout(Graph *g) {
    if (g->train_loss || g->nvalues == 0) return;
    Lay l = {g, calloc((size_t)g->nvalues, sizeof(bool)),
             calloc((size_t)g->nvalues, sizeof(int64_t[TG_MAX_DIMS])),
             calloc((size_t)g->nvalues, sizeof(int64_t))};
    if (!l.cl || !l.old || !l.old_off) goto done;
    bool any = false;
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        TGC_ASSERT(v->order == i);
        memcpy(l.old[i], v->strides, sizeof l.old[i]);
        l.old_off[i] = v->offset;
        /* Forward from the convolutions, through the elementwise ops they
         * feed: views of a channels-last value carry it too, for the
         * check in fed_channels_last (their storage is the owner). */
        if (writer_ok(v) && (is_conv2d(v) || fed_channels_last(&l, v))) l.cl[i] = any = true;
    }
    if (!any) goto done;
    while (drop_bad_readers(&l)) {
    }
    for (;;) {
        Value *bad = apply(&l);
        if (!bad) break;
        l.cl[bad->order] = false;
        while (drop_bad_readers(&l)) {
        }
    }
    unfold_copies(&l);
done:
    free(l.cl);
    free(l.old);
    free(l.old_off);
}
