/* Reductions and the neural-network functions built on them. */
#include <string.h>

#include "ir/infer.h"

static bool need_float(InferCtx *c, Value *v, DType t, const char *why) {
    if (dtype_is_float(t)) return true;
    return infer_error(c, v->loc, "%s needs a floating-point tensor, found %s%s",
                       op_info(v->op)->name, dtype_name(t), why ? why : "");
}

bool infer_sum_prod(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    if (!reduce_shape(c, v, ARG(v, 1), ARG(v, 2)->i, (bool[TG_MAX_DIMS]){0})) return false;
    Arg *dt = ARG(v, 3);
    if (dt->kind == ARG_DTYPE)
        v->dtype = dt->dt;
    else
        /* Integers sum in i64 (PyTorch), except u64, which i64 cannot
         * hold: numpy's u64. */
        v->dtype = dtype_is_float(x->dtype) || x->dtype == DT_U64 ? x->dtype : DT_I64;
    return true;
}

bool infer_mean(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    if (!reduce_shape(c, v, ARG(v, 1), ARG(v, 2)->i, (bool[TG_MAX_DIMS]){0})) return false;
    Arg *dt = ARG(v, 3);
    v->dtype = dt->kind == ARG_DTYPE ? dt->dt : x->dtype;
    if (!dtype_is_float(v->dtype))
        return infer_error(
            c, v->loc,
            "mean(): could not infer output dtype. Input dtype must be either a "
            "floating point or complex dtype. Got: %s (pass dtype=f32 or convert first)",
            dtype_name(x->dtype));
    return true;
}

bool infer_amax(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    if (!reduce_shape(c, v, ARG(v, 1), ARG(v, 2)->i, (bool[TG_MAX_DIMS]){0})) return false;
    v->dtype = x->dtype;
    return true;
}

bool infer_argmax(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    if (x->dtype == DT_BOOL && !c->bool_arg_ok)
        return infer_error(c, v->loc, "%s is not implemented for bool tensors",
                           op_info(v->op)->name);
    if (!reduce_shape(c, v, ARG(v, 1), ARG(v, 2)->i, (bool[TG_MAX_DIMS]){0})) return false;
    v->dtype = DT_I64;
    return true;
}

bool infer_var(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    if (!need_float(c, v, x->dtype, " (std and var only support floating point dtypes)"))
        return false;
    if (!reduce_shape(c, v, ARG(v, 1), ARG(v, 3)->i, (bool[TG_MAX_DIMS]){0})) return false;
    v->dtype = x->dtype;
    return true;
}

bool infer_logsumexp(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    if (!reduce_shape(c, v, ARG(v, 1), ARG(v, 2)->i, (bool[TG_MAX_DIMS]){0})) return false;
    v->dtype = dtype_is_float(x->dtype) ? x->dtype : DT_F32;
    return true;
}

bool infer_all_any(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    if (!reduce_shape(c, v, ARG(v, 1), ARG(v, 2)->i, (bool[TG_MAX_DIMS]){0})) return false;
    v->dtype = x->dtype == DT_U8 ? DT_U8 : DT_BOOL;
    return true;
}

/* max(x) reduces everything; max(x, other) is maximum; max(x, dim) returns
 * the pair (values, indices), made here as amax and argmax nodes. */
bool infer_max_min(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *d = ARG(v, 1);
    bool is_max = v->op == OP_MAX;
    if (d->kind == ARG_TENSOR) {
        v->op = is_max ? OP_MAXIMUM : OP_MINIMUM;
        v->label = NULL;
        if (ARG(v, 2)->kind == ARG_BOOL && ARG(v, 2)->i)
            return infer_error(c, ARG(v, 2)->loc, "%s(input, other) takes no keepdim",
                               is_max ? "max" : "min");
        return infer_arith(c, v);
    }
    if (d->kind == ARG_ABSENT) {
        v->op = is_max ? OP_AMAX : OP_AMIN;
        v->label = is_max ? "max" : "min";
        if (!reduce_shape(c, v, d, false, (bool[TG_MAX_DIMS]){0})) return false;
        v->dtype = x->dtype;
        return true;
    }
    if (d->kind != ARG_INT)
        return infer_error(c, d->loc, "%s: dim must be an integer or a tensor",
                           is_max ? "max" : "min");
    Arg args[3] = {arg_tensor(x, v->loc), arg_ints(c->g->arena, &d->i, 1, d->loc), *ARG(v, 2)};
    Value *vals = value_make(c, is_max ? OP_AMAX : OP_AMIN, v->loc, 3, args);
    if (!vals) return false;
    Arg iargs[3] = {arg_tensor(x, v->loc), arg_int(d->i, d->loc), *ARG(v, 2)};
    /* torch.max(bool, dim) has indices, though torch.argmax(bool) is
     * not implemented. */
    c->bool_arg_ok = true;
    Value *idx = value_make(c, is_max ? OP_ARGMAX : OP_ARGMIN, v->loc, 3, iargs);
    c->bool_arg_ok = false;
    if (!idx) return false;
    vals->label = idx->label = op_info(v->op)->name;
    v->tuple = ARENA_ARRAY(c->g->arena, Value *, 2);
    v->tuple[0] = vals;
    v->tuple[1] = idx;
    v->ntuple = 2;
    return true;
}

bool infer_softmax(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *d = ARG(v, 1), *dt = ARG(v, 2);
    if (!norm_dim(c, d->loc, &d->i, x->ndim)) return false;
    v->dtype = dt->kind == ARG_DTYPE ? dt->dt : x->dtype;
    if (!need_float(c, v, v->dtype, " (pass dtype=f32 or convert the input first)")) return false;
    set_shape(v, x->shape, x->ndim);
    return true;
}

static bool trailing_match(const Value *x, const int64_t *shape, int n) {
    if (n > x->ndim) return false;
    for (int i = 0; i < n; i++)
        if (x->shape[x->ndim - n + i] != shape[i]) return false;
    return true;
}

bool infer_layer_norm(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *ns = ARG(v, 1);
    Arena *a = c->g->arena;
    if (!need_float(c, v, x->dtype, NULL)) return false;
    if (ns->n == 0)
        return infer_error(c, ns->loc,
                           "layer_norm: normalized_shape must have at least one dimension");
    if (!trailing_match(x, ns->ints, ns->n))
        return infer_error(
            c, ns->loc,
            "Given normalized_shape=%s, expected input with shape [*, %s, but got input of size %s",
            shape_str(a, ns->ints, ns->n), shape_str(a, ns->ints, ns->n) + 1,
            shape_str(a, x->shape, x->ndim));
    for (int k = 2; k <= 3; k++) {
        Arg *w = ARG(v, k);
        if (w->kind != ARG_TENSOR) continue;
        if (w->t->ndim != ns->n || memcmp(w->t->shape, ns->ints, sizeof(int64_t) * (size_t)ns->n))
            return infer_error(c, w->loc,
                               "Expected %s to be of same shape as normalized_shape, but got %s of "
                               "shape %s and normalized_shape = %s",
                               k == 2 ? "weight" : "bias", k == 2 ? "weight" : "bias",
                               shape_str(a, w->t->shape, w->t->ndim),
                               shape_str(a, ns->ints, ns->n));
        if (!dtype_is_float(w->t->dtype))
            return infer_error(c, w->loc, "layer_norm: %s must be floating-point, found %s",
                               k == 2 ? "weight" : "bias", dtype_name(w->t->dtype));
    }
    v->dtype = x->dtype;
    set_shape(v, x->shape, x->ndim);
    return true;
}

bool infer_rms_norm(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *w = ARG(v, 1);
    if (!need_float(c, v, x->dtype, NULL)) return false;
    if (x->ndim == 0) return infer_error(c, v->loc, "rms_norm needs at least one dimension");
    if (w->kind == ARG_TENSOR) {
        if (w->t->ndim == 0 || !trailing_match(x, w->t->shape, w->t->ndim))
            return infer_error(
                c, w->loc,
                "rms_norm: weight of shape %s must match the trailing dimensions of the input %s",
                shape_str(c->g->arena, w->t->shape, w->t->ndim),
                shape_str(c->g->arena, x->shape, x->ndim));
        if (!dtype_is_float(w->t->dtype))
            return infer_error(c, w->loc, "rms_norm: weight must be floating-point, found %s",
                               dtype_name(w->t->dtype));
    }
    v->dtype = x->dtype;
    set_shape(v, x->shape, x->ndim);
    return true;
}
