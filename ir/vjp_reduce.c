/* Vector-Jacobian products of reductions, softmaxes and norms (see
 * vjp.h), as PyTorch defines them: amax/amin share the gradient evenly
 * among tied maxima, std's gradient is 0 where std is 0, and the norms
 * recompute their statistics from the saved input rather than storing
 * them (one more pass over x, no extra memory). */
#include "ir/infer.h"
#include "ir/vjp.h"

static Value *S(VjpCtx *c, double x) {
    return irb_scalar(&c->b, x);
}
static Value *B(VjpCtx *c, OpCode op, Value *a, Value *b) {
    return irb_binary(&c->b, op, a, b);
}
static Value *mul(VjpCtx *c, Value *a, Value *b) {
    return B(c, OP_MUL, a, b);
}
static Value *sum_keep(VjpCtx *c, OpCode op, Value *x, const bool *reduced) {
    int64_t dims[TG_MAX_DIMS];
    int n = 0;
    for (int i = 0; x && i < x->ndim; i++)
        if (reduced[i]) dims[n++] = i;
    if (!n) return x;
    return irb_reduce_keep(&c->b, op, x, dims, n, true);
}
static double count(const Value *x, const bool *reduced) {
    double n = 1;
    for (int i = 0; i < x->ndim; i++)
        if (reduced[i]) n *= (double)x->shape[i];
    return n;
}
static bool keepdim_arg(const Value *v, int i) {
    return v->args[i].kind == ARG_BOOL && v->args[i].i;
}

bool vjp_sum_mean(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v);
    bool red[TG_MAX_DIMS];
    if (!vjp_reduced_dims(c, v, 1, red)) return false;
    Value *g = vjp_unreduce(&c->b, gy, x, red, keepdim_arg(v, 2));
    if (v->op == OP_MEAN) g = B(c, OP_DIV, g, S(c, count(x, red)));
    vjp_set(c, v, 0, gx, irb_expand(&c->b, g, x->shape, x->ndim));
    return true;
}

static Value *where(VjpCtx *c, Value *cond, Value *a, Value *b) {
    Arg args[3] = {irb_t(&c->b, cond), irb_t(&c->b, a), irb_t(&c->b, b)};
    return irb_op(&c->b, OP_WHERE, 3, args);
}

/* grad times the product of the other elements: prod / x where x != 0;
 * at a zero, the product of the rest when it is its reduction's only
 * zero, else 0 (PyTorch's prod_backward, whose zero cases are written with
 * cumprods, gives the same values). */
bool vjp_prod(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v);
    bool red[TG_MAX_DIMS];
    if (!vjp_reduced_dims(c, v, 1, red)) return false;
    bool keep = keepdim_arg(v, 2);
    Value *g = vjp_unreduce(&c->b, gy, x, red, keep), *p = vjp_unreduce(&c->b, v, x, red, keep);
    Value *zero = B(c, OP_EQ, x, S(c, 0));
    Value *rest = sum_keep(c, OP_PROD, where(c, zero, S(c, 1), x), red);
    Value *nzeros = sum_keep(c, OP_SUM, irb_to(&c->b, zero, DT_I64), red);
    Value *at_zero = where(c, B(c, OP_EQ, nzeros, S(c, 1)), rest, S(c, 0));
    vjp_set(c, v, 0, gx, where(c, zero, mul(c, g, at_zero), B(c, OP_DIV, mul(c, g, p), x)));
    return true;
}

/* A one-hot mask (bool, x's shape) of the first maximum (is_max) or minimum
 * of x over the reduced dims, first in row-major order over them: the
 * reduced dims moved last and flattened, argmax'ed, compared with arange. */
static Value *first_extreme(VjpCtx *c, Value *x, const bool *red, bool is_max) {
    IrB *b = &c->b;
    int nd = x->ndim, k = 0;
    int64_t perm[TG_MAX_DIMS], inv[TG_MAX_DIMS], shape[TG_MAX_DIMS], n = 1;
    for (int i = 0; i < nd; i++)
        if (!red[i]) shape[k] = x->shape[i], perm[k++] = i;
    int kept = k;
    for (int i = 0; i < nd; i++)
        if (red[i]) n *= x->shape[i], perm[k++] = i;
    for (int i = 0; i < nd; i++)
        inv[perm[i]] = i;
    shape[kept] = n;
    Value *flat = irb_reshape(b, irb_permute(b, x, perm, nd), shape, kept + 1);
    Arg am[3] = {irb_t(b, flat), irb_i(b, kept), irb_bool(b, true)};
    Value *idx = irb_op(b, is_max ? OP_ARGMAX : OP_ARGMIN, 3, am); /* [kept..., 1] */
    /* every argument given: value_make does not fill in defaults */
    Arg ar[3] = {{.kind = ARG_NUM, .f = 0, .num_is_int = true, .loc = b->loc},
                 {.kind = ARG_NUM, .f = (double)n, .num_is_int = true, .loc = b->loc},
                 {.kind = ARG_NUM, .f = 1, .num_is_int = true, .loc = b->loc}};
    Value *hot = B(c, OP_EQ, idx, irb_op(b, OP_ARANGE, 3, ar)); /* [kept..., n] */
    for (int i = kept; i < nd; i++)
        shape[i] = x->shape[perm[i]];
    return irb_permute(b, irb_reshape(b, hot, shape, nd), inv, nd);
}

/* amax/amin and max()/min() share the gradient evenly among tied extremes
 * (torch's evenly_distribute_backward). The amax/amin nodes that stand for
 * max(x, dim)/min(x, dim) and for the max pools (those carry the front-end
 * op's label and reduce given dims) pass it all to the first extreme, as
 * torch's max.dim (its index) and max_pool backward (the first maximum of
 * the window) do. */
bool vjp_amax(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v);
    bool red[TG_MAX_DIMS];
    if (!vjp_reduced_dims(c, v, 1, red)) return false;
    bool keep = keepdim_arg(v, 2);
    Value *g = vjp_unreduce(&c->b, gy, x, red, keep);
    if (v->label && v->args[1].kind != ARG_ABSENT) {
        Value *hot = first_extreme(c, x, red, v->op == OP_AMAX);
        vjp_set(c, v, 0, gx, where(c, hot, g, S(c, 0)));
        return true;
    }
    Value *m = vjp_unreduce(&c->b, v, x, red, keep);
    Value *hit = irb_to(&c->b, B(c, OP_EQ, x, m), gy->dtype);
    Value *share = B(c, OP_DIV, g, sum_keep(c, OP_SUM, hit, red));
    vjp_set(c, v, 0, gx, mul(c, hit, share));
    return true;
}

bool vjp_var_std(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v);
    bool red[TG_MAX_DIMS];
    if (!vjp_reduced_dims(c, v, 1, red)) return false;
    double corr = v->args[2].kind == ARG_INT ? (double)v->args[2].i : 1.0;
    bool keep = keepdim_arg(v, 3);
    double n = count(x, red);
    Value *mean = B(c, OP_DIV, sum_keep(c, OP_SUM, x, red), S(c, n));
    Value *g = vjp_unreduce(&c->b, gy, x, red, keep);
    Value *xc = B(c, OP_SUB, x, mean);
    if (v->op == OP_VAR) {
        vjp_set(c, v, 0, gx, mul(c, mul(c, g, S(c, 2.0 / (n - corr))), xc));
    } else {
        Value *s = vjp_unreduce(&c->b, v, x, red, keep);
        Value *gs = B(c, OP_DIV, g, mul(c, s, S(c, n - corr)));
        Arg a[3] = {irb_t(&c->b, gs), irb_t(&c->b, B(c, OP_EQ, s, S(c, 0))), irb_t(&c->b, S(c, 0))};
        vjp_set(c, v, 0, gx, mul(c, irb_op(&c->b, OP_MASKED_FILL, 3, a), xc));
    }
    return true;
}

bool vjp_logsumexp(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v);
    bool red[TG_MAX_DIMS];
    if (!vjp_reduced_dims(c, v, 1, red)) return false;
    bool keep = keepdim_arg(v, 2);
    Value *e = irb_unary(&c->b, OP_EXP, B(c, OP_SUB, x, vjp_unreduce(&c->b, v, x, red, keep)));
    vjp_set(c, v, 0, gx, mul(c, vjp_unreduce(&c->b, gy, x, red, keep), e));
    return true;
}

static bool softmax_dim(VjpCtx *c, const Value *v, bool *red) {
    return vjp_reduced_dims(c, v, 1, red);
}

/* y * (g - sum(g * y)) */
bool vjp_softmax(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    bool red[TG_MAX_DIMS];
    if (!softmax_dim(c, v, red)) return false;
    Value *gyy = mul(c, gy, v);
    vjp_set(c, v, 0, gx, B(c, OP_SUB, gyy, mul(c, v, sum_keep(c, OP_SUM, gyy, red))));
    return true;
}

/* g - exp(y) * sum(g) */
bool vjp_log_softmax(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    bool red[TG_MAX_DIMS];
    if (!softmax_dim(c, v, red)) return false;
    Value *e = irb_unary(&c->b, OP_EXP, v);
    vjp_set(c, v, 0, gx, B(c, OP_SUB, gy, mul(c, e, sum_keep(c, OP_SUM, gy, red))));
    return true;
}

/* Shared by layer_norm and rms_norm: with xhat the normalised input, r the
 * reciprocal of the deviation and gh = g * weight, the input's gradient is
 * r * (gh - mean(gh) - xhat * mean(gh * xhat)) (layer_norm; rms_norm has
 * no mean(gh) term). */
static bool norm_vjp(VjpCtx *c, Value *v, Value *gy, Value **gx, int k, bool centered, int w_arg,
                     int b_arg, double eps) {
    Value *x = IN0(v);
    DType t = dtype_size(x->dtype) == 2 ? DT_F32 : x->dtype;
    IrB *b = &c->b;
    Value *xf = irb_to(b, x, t), *g = irb_to(b, gy, t);
    bool red[TG_MAX_DIMS] = {0};
    for (int i = x->ndim - k; i < x->ndim; i++)
        red[i] = true;
    double n = count(x, red);
    Value *xc = xf;
    if (centered) xc = B(c, OP_SUB, xf, B(c, OP_DIV, sum_keep(c, OP_SUM, xf, red), S(c, n)));
    Value *ms = B(c, OP_DIV, sum_keep(c, OP_SUM, mul(c, xc, xc), red), S(c, n));
    Value *r = irb_unary(b, OP_RSQRT, B(c, OP_ADD, ms, S(c, eps)));
    Value *xhat = mul(c, xc, r);
    Value *w = w_arg >= 0 && v->args[w_arg].kind == ARG_TENSOR ? v->args[w_arg].t : NULL;
    if (w) vjp_set(c, v, w_arg, gx, mul(c, g, xhat));
    if (b_arg >= 0) vjp_set(c, v, b_arg, gx, g);
    if (!vjp_needs(c, v, 0)) return true;
    Value *gh = w ? mul(c, g, irb_to(b, w, t)) : g;
    Value *inner =
        B(c, OP_SUB, gh,
          mul(c, xhat, B(c, OP_DIV, sum_keep(c, OP_SUM, mul(c, gh, xhat), red), S(c, n))));
    if (centered) inner = B(c, OP_SUB, inner, B(c, OP_DIV, sum_keep(c, OP_SUM, gh, red), S(c, n)));
    vjp_set(c, v, 0, gx, mul(c, r, inner));
    return true;
}

bool vjp_layer_norm(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    double eps = v->args[4].kind == ARG_NUM ? v->args[4].f : 1e-5;
    return norm_vjp(c, v, gy, gx, v->args[1].n, true, 2, 3, eps);
}

bool vjp_rms_norm(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    const Arg *w = &v->args[1];
    double eps = v->args[2].kind == ARG_NUM ? v->args[2].f : 1e-6;
    return norm_vjp(c, v, gy, gx, w->kind == ARG_TENSOR ? w->t->ndim : 1, false, 1, -1, eps);
}
