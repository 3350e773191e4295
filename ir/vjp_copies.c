/* Vector-Jacobian products of the ops that copy (see vjp.h): cat and
 * stack hand each operand its slice; repeat sums its tiles; the gathers
 * (gather, index_select, indexing, embedding) scatter-add through a
 * one-hot matrix, as a product (index_select, embedding) or a masked sum
 * (gather), so both backends run them with the kernels they have. */
#include <string.h>

#include "ir/infer.h"
#include "ir/vjp.h"

bool vjp_cat(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    const Arg *ts = &v->args[0];
    int dim = (int)v->args[1].i;
    if (dim < 0) dim += v->ndim;
    int64_t off = 0;
    for (int k = 0; k < ts->n; k++) {
        Value *t = ts->ts[k];
        /* legacy cat skips 1-D empty tensors */
        bool skipped = t->ndim == 1 && t->shape[0] == 0 && v->ndim != 1;
        int64_t len = skipped ? 0 : t->shape[dim];
        if (c->needs[k] && !skipped) {
            Arg a[4] = {irb_t(&c->b, gy), irb_i(&c->b, dim), irb_i(&c->b, off), irb_i(&c->b, len)};
            gx[k] = irb_op(&c->b, OP_NARROW, 4, a);
        }
        off += len;
    }
    return true;
}

bool vjp_stack(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    const Arg *ts = &v->args[0];
    int dim = (int)v->args[1].i;
    if (dim < 0) dim += v->ndim;
    for (int k = 0; k < ts->n; k++)
        if (c->needs[k]) {
            Arg a[3] = {irb_t(&c->b, gy), irb_i(&c->b, dim), irb_i(&c->b, k)};
            gx[k] = irb_op(&c->b, OP_SELECT, 3, a);
        }
    return true;
}

/* [r0, r1 * s1, ...] -> [r0, r1, s1, ...] summed over the r's. */
bool vjp_repeat(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v);
    const Arg *r = &v->args[1];
    int lead = r->n - x->ndim;
    int64_t shape[2 * TG_MAX_DIMS], red[2 * TG_MAX_DIMS];
    int n = 0, nr = 0;
    for (int i = 0; i < r->n; i++) {
        red[nr++] = n;
        shape[n++] = r->ints[i];
        if (i >= lead) shape[n++] = x->shape[i - lead];
    }
    if (n > TG_MAX_DIMS)
        return vjp_unsupported(c, v, "the gradient of repeat needs more than 12 dimensions");
    Value *g = irb_reshape(&c->b, gy, shape, n);
    vjp_set(c, v, 0, gx, irb_reduce(&c->b, OP_SUM, g, red, nr));
    return true;
}

/* arange(k) as int64. */
static Value *arange(IrB *b, int64_t k) {
    /* every argument given: value_make does not fill in defaults */
    Arg a[3] = {{.kind = ARG_NUM, .f = 0, .num_is_int = true, .loc = b->loc},
                {.kind = ARG_NUM, .f = (double)k, .num_is_int = true, .loc = b->loc},
                {.kind = ARG_NUM, .f = 1, .num_is_int = true, .loc = b->loc}};
    return irb_op(b, OP_ARANGE, 3, a);
}

/* Indices idx (any shape) as a one-hot mask over k classes, idx.shape +
 * [k], negative indices counted from the end as the kernels count them. */
static Value *one_hot(IrB *b, Value *idx, int64_t k) {
    Value *wrapped = irb_binary(
        b, OP_ADD, idx,
        irb_binary(b, OP_MUL, irb_to(b, irb_binary(b, OP_LT, idx, irb_scalar(b, 0)), idx->dtype),
                   irb_scalar(b, (double)k)));
    Value *col = NULL;
    if (wrapped) {
        int64_t shape[TG_MAX_DIMS];
        memcpy(shape, idx->shape, sizeof shape[0] * (size_t)idx->ndim);
        shape[idx->ndim] = 1;
        col = irb_reshape(b, wrapped, shape, idx->ndim + 1);
    }
    Value *r = arange(b, k);
    if (col && r && col->dtype != r->dtype) r = irb_to(b, r, col->dtype);
    return irb_binary(b, OP_EQ, col, r);
}

/* perm moves dim to the end of nd dims (movedim(dim, -1)); inv undoes it. */
static void dim_last(int nd, int dim, int64_t *perm, int64_t *inv) {
    int k = 0;
    for (int i = 0; i < nd; i++)
        if (i != dim) perm[k++] = i;
    perm[k] = dim;
    for (int i = 0; i < nd; i++)
        inv[perm[i]] = i;
}

/* The gradient of rows = table.index_select(dim, idx) (idx 1-D of n, rows
 * of shape pre + [n] + post): movedim(g, dim, -1) @ one_hot(idx) moved back. */
static Value *index_select_grad(IrB *b, Value *g, int dim, Value *idx, const Value *table) {
    int nd = g->ndim;
    int64_t perm[TG_MAX_DIMS], inv[TG_MAX_DIMS];
    dim_last(nd, dim, perm, inv);
    Value *oh = irb_to(b, one_hot(b, idx, table->shape[dim]), g->dtype);
    Value *moved = irb_permute(b, g, perm, nd);
    Value *prod = irb_binary(b, OP_MATMUL, moved, oh);
    return irb_permute(b, prod, inv, nd);
}

/* index_select(input, dim, index) and the internal index(input, dim,
 * index) of x[idx]: index of any shape, flattened. */
bool vjp_index_select(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    if (!vjp_needs(c, v, 0)) return true;
    IrB *b = &c->b;
    Value *x = IN0(v), *idx = v->args[2].t;
    int dim = (int)v->args[1].i;
    if (dim < 0) dim += x->ndim;
    if (x->ndim == 0) {
        vjp_set(c, v, 0, gx, irb_unary(b, OP_SUM, gy));
        return true;
    }
    int64_t n = value_numel(idx);
    Value *flat = irb_reshape(b, idx, &n, 1);
    int64_t shape[TG_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < x->ndim; i++)
        shape[nd++] = i == dim ? n : x->shape[i];
    Value *g = irb_reshape(b, gy, shape, nd);
    vjp_set(c, v, 0, gx, g ? index_select_grad(b, g, dim, flat, x) : NULL);
    return true;
}

/* embedding(ids, table): table's gradient is one_hot(ids)^T @ g. */
bool vjp_embedding(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    if (!vjp_needs(c, v, 1)) return true;
    IrB *b = &c->b;
    Value *ids = IN0(v), *table = v->args[1].t;
    int64_t n = value_numel(ids), rows[2] = {n, table->shape[1]};
    Value *flat = irb_reshape(b, ids, &n, 1);
    Value *g = irb_reshape(b, gy, rows, 2);
    vjp_set(c, v, 1, gx, g ? index_select_grad(b, g, 0, flat, table) : NULL);
    return true;
}

/* gather(x, dim, idx): x's gradient at k along dim sums g where idx == k:
 * a masked sum over idx's positions, then zeros where idx is narrower
 * than x in the other dims. */
bool vjp_gather(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    if (!vjp_needs(c, v, 0)) return true;
    IrB *b = &c->b;
    Value *x = IN0(v), *idx = v->args[2].t;
    int dim = (int)v->args[1].i, nd = idx->ndim;
    if (dim < 0) dim += x->ndim ? x->ndim : 1;
    if (nd == 0 || x->ndim == 0) {
        /* 0-d operands: idx must be 0, the value passes through */
        vjp_set(c, v, 0, gx, irb_reshape(b, irb_unary(b, OP_SUM, gy), x->shape, x->ndim));
        return true;
    }
    int64_t perm[TG_MAX_DIMS], inv[TG_MAX_DIMS];
    dim_last(nd, dim, perm, inv);
    Value *gi = irb_permute(b, idx, perm, nd);               /* [..., J] */
    Value *mask = gi ? one_hot(b, gi, x->shape[dim]) : NULL; /* [..., J, K] */
    int64_t col[TG_MAX_DIMS + 1];
    Value *gm = irb_permute(b, gy, perm, nd);
    if (gm) {
        memcpy(col, gm->shape, sizeof col[0] * (size_t)nd);
        col[nd] = 1;
    }
    Value *g = gm ? irb_reshape(b, gm, col, nd + 1) : NULL;
    Arg wa[3] = {irb_t(b, mask), irb_t(b, g), irb_t(b, irb_scalar(b, 0))};
    Value *sel = irb_op(b, OP_WHERE, 3, wa);
    int64_t red = nd - 1;
    Value *sum = irb_reduce(b, OP_SUM, sel, &red, 1); /* [..., K] */
    Value *r = irb_permute(b, sum, inv, nd);
    for (int i = 0; r && i < nd; i++)
        if (i != dim && r->shape[i] < x->shape[i])
            r = irb_pad_constant(b, r, i, 0, x->shape[i] - r->shape[i], 0.0);
    vjp_set(c, v, 0, gx, r);
    return true;
}
