/* The gradient of scaled_dot_product_attention.
 *
 * Where it can, one attention_backward node (runtime/attention_bwd.c,
 * FlashAttention-2's backward) computes dq, dk and dv from q, k, v, the
 * mask, the forward's result and its gradient, recomputing the
 * probabilities block by block: no [..., L, S] tensor is stored, so
 * training memory grows linearly in the sequence. Its packed f32 result
 * (ir/infer_attention.c) is sliced into the three gradients here.
 * attention_dropout's (dropout_p in a training build) is the same node
 * given dropout's key, site and p: it redraws the forward's mask per tile.
 *
 * The written-out form below remains only where that node cannot serve:
 * a float mask that needs its own gradient (dmask = dS is itself an
 * [..., L, S] tensor) and f64 operands (the kernels compute in f32; f64
 * attention is written out by the front end anyway, ir/lower_sugar.c).
 * It recomputes the probabilities from the operands,
 *   P = softmax(q @ k^T * scale + mask)        (-inf where masked/causal)
 * and then, with g the output's gradient,
 *   dv = P^T @ g,  dP = g @ v^T,  dS = P * (dP - rowsum(dP * P)),
 *   dq = dS @ k * scale,  dk = dS^T @ q * scale,  dmask = dS (a float mask).
 * f16/bf16 operands are differentiated in f32 (the pass casts the results
 * back). Batch dims that broadcast are summed by the gradient pass
 * (ir/vjp.h). */
#include <math.h>

#include "ir/infer.h"
#include "ir/vjp.h"

static Value *mm(IrB *b, Value *x, Value *y) {
    return irb_binary(b, OP_MATMUL, x, y);
}

static Value *mT(IrB *b, Value *x) {
    return x ? irb_transpose(b, x, x->ndim - 2, x->ndim - 1) : NULL;
}

static Value *times(IrB *b, Value *x, double s) {
    return irb_binary(b, OP_MUL, x, irb_scalar(b, s));
}

static Value *where(IrB *b, Value *cond, Value *x, Value *y) {
    Arg a[3] = {irb_t(b, cond), irb_t(b, x), irb_t(b, y)};
    return irb_op(b, OP_WHERE, 3, a);
}

/* arange(n) as int64 (every argument given: value_make fills no defaults). */
static Value *arange(IrB *b, int64_t n) {
    Arg a[3] = {{.kind = ARG_NUM, .f = 0, .num_is_int = true, .loc = b->loc},
                {.kind = ARG_NUM, .f = (double)n, .num_is_int = true, .loc = b->loc},
                {.kind = ARG_NUM, .f = 1, .num_is_int = true, .loc = b->loc}};
    return irb_op(b, OP_ARANGE, 3, a);
}

/* The blockwise gradient: one attention_backward node, sliced. */
static bool flash_grad(VjpCtx *c, Value *v, Value *gy, Value **gx, double scale) {
    IrB *b = &c->b;
    Value *q = ARG(v, 0)->t, *k = ARG(v, 1)->t, *val = ARG(v, 2)->t;
    const Arg *mask = ARG(v, 3);
    Arg absent = {.kind = ARG_ABSENT, .loc = b->loc};
    /* attention_dropout: the backward redraws its mask from the same key */
    bool drop = v->op == OP_SDPA_DROP;
    Arg a[12] = {irb_t(b, q),
                 irb_t(b, k),
                 irb_t(b, val),
                 mask->kind == ARG_TENSOR ? irb_t(b, mask->t) : absent,
                 irb_t(b, v),
                 irb_t(b, gy),
                 *ARG(v, 5),
                 irb_num(b, scale),
                 drop ? *ARG(v, 7) : absent,
                 drop ? *ARG(v, 8) : absent,
                 irb_num(b, drop ? ARG(v, 4)->f : 0.0),
                 irb_i(b, drop ? ARG(v, 9)->i : 0)};
    Value *r = irb_op(b, OP_SDPA_BWD, 12, a);
    if (!r) return false;
    int64_t E = q->shape[q->ndim - 1], L = q->shape[q->ndim - 2], S = k->shape[k->ndim - 2];
    int64_t Ev = val->shape[val->ndim - 1];
    int rows = r->ndim - 2, cols = r->ndim - 1;
    Value *dq = irb_slice(b, irb_slice(b, r, rows, 0, L, 1), cols, 0, E, 1);
    Value *dk = irb_slice(b, irb_slice(b, r, rows, L, L + S, 1), cols, 0, E, 1);
    Value *dv = irb_slice(b, irb_slice(b, r, rows, L + S, L + 2 * S, 1), cols, 0, Ev, 1);
    vjp_set(c, v, 0, gx, dq);
    vjp_set(c, v, 1, gx, dk);
    vjp_set(c, v, 2, gx, dv);
    return dq && dk && dv;
}

bool vjp_sdpa(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    IrB *b = &c->b;
    Value *q = ARG(v, 0)->t, *k = ARG(v, 1)->t, *val = ARG(v, 2)->t;
    const Arg *mask = ARG(v, 3), *sc = ARG(v, 6);
    DType t = dtype_size(q->dtype) == 2 ? DT_F32 : q->dtype;
    int64_t E = q->shape[q->ndim - 1], L = q->shape[q->ndim - 2], S = k->shape[k->ndim - 2];
    double scale = sc->kind == ARG_NUM ? sc->f : 1.0 / sqrt((double)E);
    bool mask_grad = mask->kind == ARG_TENSOR && mask->t->dtype != DT_BOOL && vjp_needs(c, v, 3);
    /* attention_dropout is made only where the blockwise gradient serves */
    if (v->op == OP_SDPA_DROP || (q->dtype != DT_F64 && !mask_grad))
        return flash_grad(c, v, gy, gx, scale);
    Value *qf = irb_to(b, q, t), *kf = irb_to(b, k, t), *vf = irb_to(b, val, t);
    Value *g = irb_to(b, gy, t);

    Value *s = times(b, mm(b, qf, mT(b, kf)), scale);
    if (ARG(v, 5)->i) { /* key j takes part in row i when j <= i */
        int64_t col[2] = {L, 1};
        Value *rows = irb_reshape(b, arange(b, L), col, 2);
        Value *keep = irb_binary(b, OP_GE, rows, arange(b, S));
        s = where(b, keep, s, irb_scalar(b, -INFINITY));
    } else if (mask->kind == ARG_TENSOR && mask->t->dtype == DT_BOOL) {
        s = where(b, mask->t, s, irb_scalar(b, -INFINITY));
    } else if (mask->kind == ARG_TENSOR) {
        s = irb_binary(b, OP_ADD, s, irb_to(b, mask->t, t));
    }
    if (!s) return false;
    Arg sa[2] = {irb_t(b, s), irb_i(b, s->ndim - 1)};
    Value *p = irb_op(b, OP_SOFTMAX, 2, sa);
    Value *dp = mm(b, g, mT(b, vf));
    int64_t last = s->ndim - 1;
    Value *rowsum = irb_reduce_keep(b, OP_SUM, irb_binary(b, OP_MUL, dp, p), &last, 1, true);
    Value *ds = irb_binary(b, OP_MUL, p, irb_binary(b, OP_SUB, dp, rowsum));
    vjp_set(c, v, 0, gx, times(b, mm(b, ds, kf), scale));
    vjp_set(c, v, 1, gx, times(b, mm(b, mT(b, ds), qf), scale));
    vjp_set(c, v, 2, gx, mm(b, mT(b, p), g));
    if (mask->kind == ARG_TENSOR && mask->t->dtype != DT_BOOL) vjp_set(c, v, 3, gx, ds);
    return ds != NULL;
}
