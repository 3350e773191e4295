/* slice_scatter(input, src, dim=0, start=None, end=None, step=1):
 * torch.slice_scatter (input with input[..., start:end:step, ...] along
 * dim replaced by src), extended so that start may be a 0-d integer
 * tensor, a position known only when the program runs (a KV cache's
 * write position); end is then None (start + src.size(dim)) and step 1.
 * Its inference, its layout (in place into a state, ir/state.h) and its
 * vector-Jacobian product. */
#include "ir/infer.h"
#include "ir/state.h"
#include "ir/vjp.h"

/* PyTorch's message for a src whose shape is not the slice's. */
static bool shape_mismatch(InferCtx *c, const Value *v, const Value *src, const int64_t *slice,
                           int n) {
    return infer_error(c, ARG(v, 1)->loc,
                       "expected src to have a size equal to the slice of self. src size = %s, "
                       "slice size = %s",
                       shape_str(c->g->arena, src->shape, src->ndim),
                       shape_str(c->g->arena, slice, n));
}

bool infer_slice_scatter(InferCtx *c, Value *v) {
    Value *x = IN0(v), *src = ARG(v, 1)->t;
    Arg *d = ARG(v, 2), *s = ARG(v, 3), *e = ARG(v, 4), *st = ARG(v, 5);
    if (x->ndim == 0) return infer_error(c, v->loc, "slice() cannot be applied to a 0-dim tensor.");
    if (!norm_dim(c, d->loc, &d->i, x->ndim)) return false;
    if (st->i <= 0) return infer_error(c, st->loc, "slice step must be positive");
    int64_t size = x->shape[d->i], len;
    if (s->kind == ARG_TENSOR) {
        const Value *p = s->t;
        if (p->ndim != 0)
            return infer_error(c, s->loc,
                               "slice_scatter: a tensor start must be 0-d (one position), found "
                               "shape %s",
                               shape_str(c->g->arena, p->shape, p->ndim));
        if (!dtype_is_int(p->dtype))
            return infer_error(c, s->loc,
                               "slice_scatter: a tensor start must have an integer dtype, found %s",
                               dtype_name(p->dtype));
        if (e->kind != ARG_ABSENT)
            return infer_error(c, e->loc,
                               "slice_scatter: with a tensor start, end must be None (the slice "
                               "is start to start + src.size(dim))");
        if (st->i != 1)
            return infer_error(c, st->loc,
                               "slice_scatter: with a tensor start, step must be 1, found %lld",
                               (long long)st->i);
        len = src->ndim == x->ndim ? src->shape[d->i] : size;
        if (len > size)
            return infer_error(c, ARG(v, 1)->loc,
                               "slice_scatter: src has %lld elements along dim %lld, more than "
                               "input's %lld",
                               (long long)len, (long long)d->i, (long long)size);
    } else if (s->kind == ARG_INT || s->kind == ARG_ABSENT) {
        if (st->i > ((int64_t)1 << 32))
            return infer_error(c, st->loc, "slice step %lld is too large", (long long)st->i);
        int64_t start = s->kind == ARG_ABSENT ? 0 : s->i;
        int64_t end = e->kind == ARG_ABSENT ? size : e->i;
        if (start < 0) start += size;
        if (end < 0) end += size;
        start = start < 0 ? 0 : start > size ? size : start;
        end = end < start ? start : end > size ? size : end;
        s->kind = e->kind = ARG_INT;
        s->i = start;
        e->i = end;
        len = (end - start + st->i - 1) / st->i;
    } else {
        return infer_error(c, s->loc,
                           "slice_scatter: start must be an integer, None or a 0-d integer "
                           "tensor");
    }
    int64_t slice[TG_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++)
        slice[i] = i == d->i ? len : x->shape[i];
    bool same = src->ndim == x->ndim;
    for (int i = 0; same && i < x->ndim; i++)
        same = src->shape[i] == slice[i];
    if (!same) return shape_mismatch(c, v, src, slice, x->ndim);
    if (src->dtype != x->dtype)
        return infer_error(c, ARG(v, 1)->loc,
                           "slice_scatter: src's dtype (%s) must be input's (%s); convert it "
                           "with .to(%s)",
                           dtype_name(src->dtype), dtype_name(x->dtype), dtype_name(x->dtype));
    infer_identity(c, v);
    return true;
}

/* Into a state: the result is the state itself, written in place. Any
 * other input: no view (the op copies input, then writes the slice). */
bool layout_slice_scatter(Value *v) {
    const Value *x = IN0(v);
    if (!ir_is_state(x)) return false;
    for (int i = 0; i < x->ndim; i++)
        v->strides[i] = x->strides[i];
    v->offset = x->offset;
    return true;
}

/* d input = gy with the slice zeroed (the slice was overwritten); d src =
 * the slice of gy: a strided slice for an integer start, an index_select
 * of start + arange(len) for a tensor start. */
bool vjp_slice_scatter(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    IrB *b = &c->b;
    const Value *src = v->args[1].t;
    int dim = (int)v->args[2].i;
    const Arg *s = &v->args[3];
    Arg start = s->kind == ARG_TENSOR ? irb_t(b, s->t) : irb_i(b, s->i);
    Arg end = v->args[4].kind == ARG_INT ? irb_i(b, v->args[4].i) : (Arg){.kind = ARG_ABSENT};
    if (vjp_needs(c, v, 0)) {
        Value *z = irb_full(b, src->shape, src->ndim, 0.0, gy->dtype);
        Arg a[6] = {irb_t(b, gy), irb_t(b, z), irb_i(b, dim), start, end, irb_i(b, v->args[5].i)};
        vjp_set(c, v, 0, gx, irb_op(b, OP_SLICE_SCATTER, 6, a));
    }
    if (vjp_needs(c, v, 1)) {
        int64_t len = src->shape[dim];
        Value *g;
        if (s->kind == ARG_TENSOR) {
            Arg r[4] = {irb_num(b, 0), irb_num(b, (double)len), irb_num(b, 1),
                        arg_dtype(DT_I64, b->loc)};
            Arg one = irb_num(b, 1);
            one.num_is_int = true; /* alpha of an integer add */
            Arg add[3] = {irb_t(b, irb_op(b, OP_ARANGE, 4, r)), irb_t(b, irb_to(b, s->t, DT_I64)),
                          one};
            Value *idx = irb_op(b, OP_ADD, 3, add);
            Arg a[3] = {irb_t(b, gy), irb_i(b, dim), irb_t(b, idx)};
            g = irb_op(b, OP_INDEX_SELECT, 3, a);
        } else {
            g = irb_slice(b, gy, dim, s->i, v->args[4].i, v->args[5].i);
        }
        vjp_set(c, v, 1, gx, g);
    }
    return true;
}
