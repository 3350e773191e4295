/* Vector-Jacobian products of views (see vjp.h): each writes the gradient
 * back through the inverse of the view's index map. A reshape reshapes
 * back, a transpose transposes, a slice pads with zeros (strided slices
 * interleave them), windows add their overlaps, and an expand's sum is
 * the pass's own reduction of broadcast dimensions. */
#include <string.h>

#include "ir/infer.h"
#include "ir/vjp.h"

static int64_t wrap(int64_t d, int n) {
    return d < 0 ? d + (n ? n : 1) : d;
}

bool vjp_identity(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    vjp_set(c, v, 0, gx, gy);
    return true;
}

/* The pass casts every contribution to its operand's dtype. */
bool vjp_cast(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    return vjp_identity(c, v, gy, gx);
}

bool vjp_reshape(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v);
    vjp_set(c, v, 0, gx, irb_reshape(&c->b, gy, x->shape, x->ndim));
    return true;
}

bool vjp_transpose(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    int n = v->ndim;
    vjp_set(c, v, 0, gx,
            irb_transpose(&c->b, gy, (int)wrap(v->args[1].i, n), (int)wrap(v->args[2].i, n)));
    return true;
}

bool vjp_permute(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    const Arg *d = &v->args[1];
    int64_t inv[TG_MAX_DIMS];
    for (int i = 0; i < d->n; i++)
        inv[wrap(d->ints[i], v->ndim)] = i;
    vjp_set(c, v, 0, gx, irb_permute(&c->b, gy, inv, d->n));
    return true;
}

/* The sum over expanded dimensions is the pass's reduction to x's shape. */
bool vjp_expand(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    return vjp_identity(c, v, gy, gx);
}

/* g placed at start, start + step, ... along dim of a zero tensor whose
 * size there is `size`. */
static Value *scatter_strided(IrB *b, Value *g, int dim, int64_t start, int64_t step,
                              int64_t size) {
    if (!g) return NULL;
    int64_t n = g->shape[dim];
    if (step > 1 && n > 0) {
        /* [.., n, ..] -> [.., n, 1, ..] -> zeros after each: [.., n, step, ..]
         * -> [.., n * step, ..], element i at i * step. */
        int nd = g->ndim;
        int64_t orig[TG_MAX_DIMS], split[TG_MAX_DIMS];
        memcpy(orig, g->shape, sizeof orig[0] * (size_t)nd);
        for (int i = 0, k = 0; i < nd; i++) {
            split[k++] = orig[i];
            if (i == dim) split[k++] = 1;
        }
        g = irb_reshape(b, g, split, nd + 1);
        g = irb_pad_constant(b, g, dim + 1, 0, step - 1, 0.0);
        orig[dim] = n * step;
        g = irb_reshape(b, g, orig, nd);
        n *= step;
    }
    return irb_pad_constant(b, g, dim, start, size - start - n, 0.0);
}

bool vjp_slice(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v);
    int dim = (int)wrap(v->args[1].i, x->ndim);
    int64_t size = x->shape[dim], start, step = 1;
    if (v->op == OP_NARROW) {
        start = wrap(v->args[2].i, (int)size);
    } else {
        start = v->args[2].kind == ARG_INT ? v->args[2].i : 0;
        step = v->args[4].kind == ARG_INT ? v->args[4].i : 1;
    }
    vjp_set(c, v, 0, gx, scatter_strided(&c->b, gy, dim, start, step, size));
    return true;
}

bool vjp_select(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v);
    int dim = (int)wrap(v->args[1].i, x->ndim);
    int64_t index = v->args[2].i < 0 ? v->args[2].i + x->shape[dim] : v->args[2].i;
    int64_t shape[TG_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape[0] * (size_t)x->ndim);
    shape[dim] = 1;
    Value *g = irb_reshape(&c->b, gy, shape, x->ndim);
    vjp_set(c, v, 0, gx, irb_pad_constant(&c->b, g, dim, index, x->shape[dim] - index - 1, 0.0));
    return true;
}

/* diagonal(x, offset, d1, d2) is [others..., L]; its element k sits at
 * (r0 + k, c0 + k) of the (d1, d2) plane, flat position r0 * n2 + c0 +
 * k * (n2 + 1) of that plane in row-major order. The gradient scatters gy
 * there (a strided scatter over the flattened plane), then reshapes the
 * plane back to [n1, n2] and moves d1 and d2 to their places. */
bool vjp_diagonal(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v);
    IrB *b = &c->b;
    int nd = x->ndim, d1 = (int)v->args[2].i, d2 = (int)v->args[3].i; /* normalised by inference */
    int64_t off = v->args[1].i, n1 = x->shape[d1], n2 = x->shape[d2];
    int64_t start = (off < 0 ? -off : 0) * n2 + (off > 0 ? off : 0);
    Value *g = scatter_strided(b, gy, v->ndim - 1, start, n2 + 1, n1 * n2);
    int64_t shape[TG_MAX_DIMS], perm[TG_MAX_DIMS], order[TG_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < nd; i++)
        if (i != d1 && i != d2) order[k] = i, shape[k++] = x->shape[i];
    order[k] = d1, shape[k++] = n1;
    order[k] = d2, shape[k++] = n2;
    for (int i = 0; i < nd; i++)
        perm[order[i]] = i;
    vjp_set(c, v, 0, gx, irb_permute(b, irb_reshape(b, g, shape, nd), perm, nd));
    return true;
}

/* unfold(dimension, size, step): window w's element k is x[w * step + k];
 * each k's slice of the gradient is scattered back with stride `step`,
 * and the overlaps add up. Non-overlapping windows are one reshape. */
bool vjp_windows(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Value *x = IN0(v);
    int dim = (int)wrap(v->args[1].i, x->ndim);
    int64_t size = v->args[2].i, step = v->args[3].i, len = x->shape[dim];
    int last = v->ndim - 1;
    IrB *b = &c->b;
    Value *sum = NULL;
    if (step == size) {
        int64_t perm[TG_MAX_DIMS];
        int n = 0;
        for (int i = 0; i < last; i++) {
            perm[n++] = i;
            if (i == dim) perm[n++] = last;
        }
        Value *g = irb_permute(b, gy, perm, n);
        int64_t shape[TG_MAX_DIMS];
        memcpy(shape, x->shape, sizeof shape[0] * (size_t)x->ndim);
        shape[dim] = v->shape[dim] * size;
        g = irb_reshape(b, g, shape, x->ndim);
        sum = irb_pad_constant(b, g, dim, 0, len - shape[dim], 0.0);
    } else {
        for (int64_t k = 0; k < size; k++) {
            Arg a[3] = {irb_t(b, gy), irb_i(b, last), irb_i(b, k)};
            Value *gk = irb_op(b, OP_SELECT, 3, a);
            Value *part = gk ? scatter_strided(b, gk, dim, k, step, len) : NULL;
            sum = sum ? irb_binary(b, OP_ADD, sum, part) : part;
        }
    }
    vjp_set(c, v, 0, gx, sum);
    return true;
}

bool vjp_flip(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Arg a[2] = {irb_t(&c->b, gy), v->args[1]};
    vjp_set(c, v, 0, gx, irb_op(&c->b, OP_FLIP, 2, a));
    return true;
}

bool vjp_tri(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    Arg a[2] = {irb_t(&c->b, gy), v->args[1]};
    vjp_set(c, v, 0, gx, irb_op(&c->b, v->op, v->args[1].kind == ARG_ABSENT ? 1 : 2, a));
    return true;
}
