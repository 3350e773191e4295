/* Creation operations: shapes from arguments, dtypes as torch infers them. */
#include <math.h>
#include <string.h>

#include "ir/infer.h"

static bool shape_from(InferCtx *c, Value *v, Arg *s) {
    int n = s->kind == ARG_INT ? 1 : s->n;
    const int64_t *dims = s->kind == ARG_INT ? &s->i : s->ints;
    if (n > TG_MAX_DIMS)
        return infer_error(c, s->loc, "at most %d dimensions are supported", TG_MAX_DIMS);
    for (int i = 0; i < n; i++)
        if (dims[i] < 0)
            return infer_error(c, s->loc,
                               "Trying to create tensor with negative dimension %lld: %s",
                               (long long)dims[i], shape_str(c->g->arena, dims, n));
    set_shape(v, dims, n);
    return true;
}

static DType dtype_or(Arg *a, DType dflt) {
    return a->kind == ARG_DTYPE ? a->dt : dflt;
}

static DType number_dtype(const Arg *a) {
    if (a->kind == ARG_BOOL) return DT_BOOL;
    return a->num_is_int ? DT_I64 : DT_F32;
}

bool infer_fill_shape(InferCtx *c, Value *v) {
    if (!shape_from(c, v, ARG(v, 0))) return false;
    v->dtype = dtype_or(ARG(v, 1), DT_F32);
    return true;
}

bool infer_full(InferCtx *c, Value *v) {
    if (!shape_from(c, v, ARG(v, 0))) return false;
    v->dtype = dtype_or(ARG(v, 2), number_dtype(ARG(v, 1)));
    return true;
}

bool infer_arange(InferCtx *c, Value *v) {
    Arg *s = ARG(v, 0), *e = ARG(v, 1), *st = ARG(v, 2);
    bool any_float = !s->num_is_int || (e->kind == ARG_NUM && !e->num_is_int) || !st->num_is_int;
    if (e->kind == ARG_ABSENT) { /* arange(end) */
        *e = *s;
        s->f = 0;
        s->num_is_int = true;
    }
    double start = s->f, end = e->f, step = st->f;
    if (step == 0) return infer_error(c, st->loc, "arange: step must be nonzero");
    if (!isfinite(start) || !isfinite(end) || !isfinite(step))
        return infer_error(c, v->loc, "arange: unsupported range: %g -> %g with step %g", start,
                           end, step);
    if ((step > 0 && end < start) || (step < 0 && end > start))
        return infer_error(c, v->loc,
                           "arange: upper bound and larger bound inconsistent with step sign");
    double n = ceil((end - start) / step);
    if (!(n <= 1e12)) /* also catches NaN from extreme ratios */
        return infer_error(c, v->loc, "arange: %g elements are too many", n);
    int64_t size = (int64_t)n;
    set_shape(v, &size, 1);
    v->dtype = dtype_or(ARG(v, 3), any_float ? DT_F32 : DT_I64);
    return true;
}

bool infer_eye(InferCtx *c, Value *v) {
    Arg *n = ARG(v, 0), *m = ARG(v, 1);
    if (n->i < 0)
        return infer_error(c, n->loc, "n must be greater or equal to 0, got %lld", (long long)n->i);
    int64_t s[2] = {n->i, m->kind == ARG_INT ? m->i : n->i};
    if (s[1] < 0)
        return infer_error(c, m->loc, "m must be greater or equal to 0, got %lld", (long long)s[1]);
    set_shape(v, s, 2);
    v->dtype = dtype_or(ARG(v, 2), DT_F32);
    return true;
}

bool infer_tensor(InferCtx *c, Value *v) {
    Arg *d = ARG(v, 0);
    (void)c;
    set_shape(v, d->data_shape, d->data_ndim);
    DType t = d->data_has_bool_only ? DT_BOOL : d->data_has_float ? DT_F32 : DT_I64;
    v->dtype = dtype_or(ARG(v, 1), t);
    return true;
}

/* x's shape, and the dtype argument dtype_arg or else x's dtype. */
static bool like_input(Value *v, int dtype_arg) {
    Value *x = IN0(v);
    set_shape(v, x->shape, x->ndim);
    v->dtype = dtype_or(ARG(v, dtype_arg), x->dtype);
    return true;
}

bool infer_fill_like(InferCtx *c, Value *v) {
    (void)c;
    return like_input(v, 1);
}

bool infer_full_like(InferCtx *c, Value *v) {
    (void)c;
    return like_input(v, 2);
}
