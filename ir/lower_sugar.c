/* repeat_interleave as unsqueeze -> expand -> reshape, and f64 attention
 * written out (see lower_sugar.h). */
#include "ir/lower_sugar.h"

#include <math.h>

#include "ir/infer.h"
#include "ir/irbuild.h"

/* dim None (or a 0-d input) repeats the flattened input. */
static bool flattens(const Value *v) {
    return v->args[2].kind != ARG_INT || IN0(v)->ndim == 0;
}

bool infer_repeat_interleave(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *r = ARG(v, 1), *d = ARG(v, 2), *os = ARG(v, 3);
    if (r->kind != ARG_INT)
        return infer_error(c, r->loc,
                           "repeat_interleave: only an integer repeats is supported (a tensor of "
                           "repeats gives a shape that depends on the data)");
    if (r->i < 0) return infer_error(c, r->loc, "repeats can not be negative");
    v->dtype = x->dtype;
    int64_t dim = 0;
    if (flattens(v)) {
        if (d->kind == ARG_INT) { /* 0-d input: dim must still be valid */
            int64_t k = d->i;
            if (!norm_dim(c, d->loc, &k, x->ndim)) return false;
        }
        v->ndim = 1;
        v->shape[0] = value_numel(x);
    } else {
        dim = d->i;
        if (!norm_dim(c, d->loc, &dim, x->ndim)) return false;
        set_shape(v, x->shape, x->ndim);
    }
    if (__builtin_mul_overflow(v->shape[dim], r->i, &v->shape[dim]))
        return infer_error(c, r->loc, "repeat_interleave: the result is too large");
    if (os->kind == ARG_INT && os->i != v->shape[dim])
        return infer_error(c, os->loc,
                           "repeat_interleave: output_size %lld does not match the size of the "
                           "result along dim %lld (%lld)",
                           (long long)os->i, (long long)dim, (long long)v->shape[dim]);
    return true;
}

static Value *make(InferCtx *c, OpCode op, SrcLoc loc, int n, Arg *args) {
    return value_make(c, op, loc, n, args);
}

Value *lower_repeat_interleave(InferCtx *c, Value *v) {
    Arena *a = c->g->arena;
    SrcLoc loc = v->loc;
    Value *x = IN0(v);
    int64_t r = ARG(v, 1)->i, dim = 0;
    if (flattens(v)) {
        int64_t n = value_numel(x);
        Arg args[2] = {arg_tensor(x, loc), arg_ints(a, &n, 1, loc)};
        if (!(x = make(c, OP_RESHAPE, loc, 2, args))) return NULL;
        graph_append(c->g, x);
    } else {
        dim = ARG(v, 2)->i;
        if (!norm_dim(c, loc, &dim, x->ndim)) return NULL;
    }
    Arg ua[2] = {arg_tensor(x, loc), arg_int(dim + 1, loc)};
    Value *u = make(c, OP_UNSQUEEZE, loc, 2, ua);
    if (!u) return NULL;
    graph_append(c->g, u);
    int64_t shape[TG_MAX_DIMS];
    for (int i = 0; i < u->ndim; i++)
        shape[i] = u->shape[i];
    shape[dim + 1] = r;
    Arg ea[2] = {arg_tensor(u, loc), arg_ints(a, shape, u->ndim, loc)};
    Value *e = make(c, OP_EXPAND, loc, 2, ea);
    if (!e) return NULL;
    graph_append(c->g, e);
    Arg ra[2] = {arg_tensor(e, loc), arg_ints(a, v->shape, v->ndim, loc)};
    Value *out = make(c, OP_RESHAPE, loc, 2, ra);
    if (out) out->label = "repeat_interleave";
    return out;
}

Value *lower_sdpa_f64(InferCtx *c, Value *v) {
    /* with dropout the build's form decides (passes/train_mode.c) */
    if (ARG(v, 4)->f != 0) return v;
    return lower_sdpa_math(c, v, NULL, NULL);
}

Value *lower_sdpa_math(InferCtx *c, Value *v, SdpaDropFn drop, void *ctx) {
    IrB b = irb_init(c, v->loc);
    Value *q = ARG(v, 0)->t, *k = ARG(v, 1)->t, *val = ARG(v, 2)->t;
    const Arg *mask = ARG(v, 3), *scale = ARG(v, 6);
    int64_t L = q->shape[q->ndim - 2], E = q->shape[q->ndim - 1], S = k->shape[k->ndim - 2];
    double sc = scale->kind == ARG_NUM ? scale->f : 1.0 / sqrt((double)E);
    Value *s = irb_binary(&b, OP_MATMUL, q, irb_transpose(&b, k, k->ndim - 2, k->ndim - 1));
    s = irb_binary(&b, OP_MUL, s, irb_scalar(&b, sc));
    Value *hide = NULL; /* true where a key takes no part */
    if (ARG(v, 5)->i) { /* is_causal: torch.ones(L, S).tril() takes part */
        int64_t ls[2] = {L, S};
        Arg ta[2] = {irb_t(&b, irb_full(&b, ls, 2, 1, DT_BOOL)), irb_i(&b, 0)};
        hide = irb_unary(&b, OP_LOGICAL_NOT, irb_op(&b, OP_TRIL, 2, ta));
    } else if (mask->kind == ARG_TENSOR && mask->t->dtype == DT_BOOL) {
        hide = irb_unary(&b, OP_LOGICAL_NOT, mask->t);
    } else if (mask->kind == ARG_TENSOR) {
        s = irb_binary(&b, OP_ADD, s, mask->t);
    }
    if (hide) {
        Arg fa[3] = {irb_t(&b, s), irb_t(&b, hide), irb_t(&b, irb_scalar(&b, -INFINITY))};
        s = irb_op(&b, OP_MASKED_FILL, 3, fa);
    }
    Arg sa[3] = {irb_t(&b, s), irb_i(&b, -1), {.kind = ARG_ABSENT, .loc = v->loc}};
    Value *p = irb_op(&b, OP_SOFTMAX, 3, sa);
    if (p && drop) p = drop(ctx, &b, p, ARG(v, 4)->f);
    if (!p) return NULL;
    Arg ma[2] = {arg_tensor(p, v->loc), arg_tensor(val, v->loc)};
    Value *out = value_make(c, OP_MATMUL, v->loc, 2, ma);
    if (!out) return NULL;
    TGC_ASSERT(out->dtype == v->dtype && value_same_shape(out, v));
    out->label = "scaled_dot_product_attention";
    return out;
}
