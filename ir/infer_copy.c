/* Operations that build a new tensor from others: cat, stack, gather,
 * index_select, embedding, integer-tensor indexing, repeat, flip, tril/triu. */
#include <string.h>

#include "ir/infer.h"

static bool int_index(InferCtx *c, Arg *a, const char *what) {
    DType t = a->t->dtype;
    if (t == DT_I64 || t == DT_I32) return true;
    return infer_error(c, a->loc, "%s expects an i64 or i32 index tensor, found %s", what,
                       dtype_name(t));
}

static bool concat_common(InferCtx *c, Value *v, int64_t *dim, bool stack) {
    Arg *ts = ARG(v, 0), *d = ARG(v, 1);
    Arena *a = c->g->arena;
    if (ts->n == 0)
        return infer_error(c, ts->loc, "%s expects a non-empty list of tensors",
                           stack ? "stack" : "cat");
    Value *first = ts->ts[0];
    int nd = first->ndim + (stack ? 1 : 0);
    if (nd > TG_MAX_DIMS)
        return infer_error(c, v->loc, "at most %d dimensions are supported", TG_MAX_DIMS);
    if (!stack && first->ndim == 0)
        return infer_error(c, ts->loc,
                           "zero-dimensional tensor (at position 0) cannot be concatenated");
    if (!norm_dim(c, d->loc, &d->i, nd)) return false;
    *dim = d->i;
    DTypeState s;
    dtype_state_init(&s);
    for (int k = 0; k < ts->n; k++) {
        Value *t = ts->ts[k];
        dtype_state_add(&s, t->dtype, 1, false);
        if (stack) {
            if (!value_same_shape(t, first))
                return infer_error(c, ts->loc,
                                   "stack expects each tensor to be equal size, but got %s at "
                                   "entry 0 and %s at entry %d",
                                   shape_str(a, first->shape, first->ndim),
                                   shape_str(a, t->shape, t->ndim), k);
            continue;
        }
        if (t->ndim != first->ndim)
            return infer_error(c, ts->loc,
                               "Tensors must have same number of dimensions: got %d and %d",
                               first->ndim, t->ndim);
        for (int i = 0; i < t->ndim; i++)
            if (i != *dim && t->shape[i] != first->shape[i])
                return infer_error(
                    c, ts->loc,
                    "Sizes of tensors must match except in dimension %lld. Expected size "
                    "%lld but got size %lld for tensor number %d in the list.",
                    (long long)*dim, (long long)first->shape[i], (long long)t->shape[i], k);
    }
    v->dtype = dtype_state_result(&s);
    return true;
}

bool infer_cat(InferCtx *c, Value *v) {
    int64_t dim;
    if (!concat_common(c, v, &dim, false)) return false;
    Arg *ts = ARG(v, 0);
    set_shape(v, ts->ts[0]->shape, ts->ts[0]->ndim);
    v->shape[dim] = 0;
    for (int k = 0; k < ts->n; k++)
        v->shape[dim] += ts->ts[k]->shape[dim];
    return true;
}

bool infer_stack(InferCtx *c, Value *v) {
    int64_t dim;
    if (!concat_common(c, v, &dim, true)) return false;
    Arg *ts = ARG(v, 0);
    Value *f = ts->ts[0];
    v->ndim = f->ndim + 1;
    for (int i = 0, k = 0; i < v->ndim; i++)
        v->shape[i] = i == dim ? ts->n : f->shape[k++];
    return true;
}

bool infer_gather(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *d = ARG(v, 1), *ix = ARG(v, 2);
    Value *idx = ix->t;
    if (idx->dtype != DT_I64)
        return infer_error(c, ix->loc, "gather(): Expected dtype int64 for index, found %s",
                           dtype_name(idx->dtype));
    if (!norm_dim(c, d->loc, &d->i, x->ndim)) return false;
    if (idx->ndim != x->ndim && !(x->ndim <= 1 && idx->ndim <= 1))
        return infer_error(c, ix->loc,
                           "Index tensor must have the same number of dimensions as input tensor");
    for (int i = 0; i < idx->ndim && i < x->ndim; i++)
        if (i != d->i && idx->shape[i] > x->shape[i])
            return infer_error(c, ix->loc,
                               "Size does not match at dimension %d expected index %s to be "
                               "smaller than self %s apart from dimension %lld",
                               i, shape_str(c->g->arena, idx->shape, idx->ndim),
                               shape_str(c->g->arena, x->shape, x->ndim), (long long)d->i);
    v->dtype = x->dtype;
    set_shape(v, idx->shape, idx->ndim);
    return true;
}

bool infer_index_select(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *d = ARG(v, 1), *ix = ARG(v, 2);
    if (!int_index(c, ix, "index_select()")) return false;
    if (ix->t->ndim > 1)
        return infer_error(c, ix->loc,
                           "index_select(): Index is supposed to be a vector, found %d dims",
                           ix->t->ndim);
    if (!norm_dim(c, d->loc, &d->i, x->ndim)) return false;
    infer_identity(c, v);
    if (x->ndim) v->shape[d->i] = value_numel(ix->t);
    return true;
}

/* x[idx]: idx's shape replaces dimension dim (a copy, as in PyTorch). */
bool infer_index_tensor(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *d = ARG(v, 1), *ix = ARG(v, 2);
    Value *idx = ix->t;
    if (!dtype_is_int(idx->dtype) || dtype_is_unsigned(idx->dtype))
        return infer_error(c, ix->loc,
                           "tensors used as indices must be i64 or i32 tensors, found %s",
                           dtype_name(idx->dtype));
    if (!norm_dim(c, d->loc, &d->i, x->ndim)) return false;
    if (x->ndim - 1 + idx->ndim > TG_MAX_DIMS)
        return infer_error(c, v->loc, "at most %d dimensions are supported", TG_MAX_DIMS);
    v->dtype = x->dtype;
    v->ndim = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (i == d->i)
            for (int k = 0; k < idx->ndim; k++)
                v->shape[v->ndim++] = idx->shape[k];
        else
            v->shape[v->ndim++] = x->shape[i];
    }
    return true;
}

bool infer_embedding(InferCtx *c, Value *v) {
    Arg *ids = ARG(v, 0), *w = ARG(v, 1);
    if (!int_index(c, ids, "embedding")) return false;
    if (w->t->ndim != 2)
        return infer_error(
            c, w->loc, "embedding: the table (weight) must be 2-D [num_embeddings, dim], found %s",
            shape_str(c->g->arena, w->t->shape, w->t->ndim));
    if (ids->t->ndim + 1 > TG_MAX_DIMS)
        return infer_error(c, v->loc, "at most %d dimensions are supported", TG_MAX_DIMS);
    v->dtype = w->t->dtype;
    set_shape(v, ids->t->shape, ids->t->ndim);
    v->shape[v->ndim++] = w->t->shape[1];
    return true;
}

bool infer_repeat(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *r = ARG(v, 1);
    if (r->n < x->ndim)
        return infer_error(c, r->loc,
                           "Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor (%d < %d)",
                           r->n, x->ndim);
    if (r->n > TG_MAX_DIMS)
        return infer_error(c, r->loc, "at most %d dimensions are supported", TG_MAX_DIMS);
    v->dtype = x->dtype;
    v->ndim = r->n;
    for (int i = 0; i < r->n; i++) {
        if (r->ints[i] < 0)
            return infer_error(c, r->loc, "repeat: repeats must be non-negative, found %lld",
                               (long long)r->ints[i]);
        int d = i - (r->n - x->ndim);
        if (__builtin_mul_overflow(d >= 0 ? x->shape[d] : 1, r->ints[i], &v->shape[i]))
            return infer_error(c, r->loc, "repeat: the result is too large");
    }
    return true;
}

bool infer_flip(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *d = ARG(v, 1);
    int n = d->kind == ARG_INT ? 1 : d->n;
    bool seen[TG_MAX_DIMS] = {0};
    for (int k = 0; k < n; k++) {
        int64_t *dim = d->kind == ARG_INT ? &d->i : &d->ints[k];
        if (!norm_dim(c, d->loc, dim, x->ndim)) return false;
        if (x->ndim && seen[*dim])
            return infer_error(c, d->loc, "dim %lld appears multiple times in the list of dims",
                               (long long)*dim);
        if (x->ndim) seen[*dim] = true;
    }
    return infer_identity(c, v);
}

bool infer_tri(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    if (x->ndim < 2)
        return infer_error(c, v->loc, "%s: input tensor must have at least 2 dimensions, found %d",
                           op_info(v->op)->name, x->ndim);
    return infer_identity(c, v);
}
