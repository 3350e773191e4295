/* Elementwise operations: broadcast shapes and PyTorch's dtype rules.
 * Number literals are weak (wrapped numbers) and 0-d tensors rank below
 * tensors with dims, as in c10's result_type. */
#include <stdio.h>
#include <math.h>
#include <string.h>

#include "ir/infer.h"

/* Broadcast shape of all tensor operands (argument positions in idx). */
static bool broadcast_operands(InferCtx *c, Value *v, const int *idx, int n) {
    int64_t shape[TG_MAX_DIMS];
    int nd = 0;
    const char *names[3];
    char before[64] = "";
    for (int k = 0; k < n; k++) {
        Arg *a = ARG(v, idx[k]);
        names[k] = op_info(v->op)->params[idx[k]].name;
        if (k > 0)
            snprintf(before + strlen(before), sizeof before - strlen(before), "%s%s",
                     k > 1 ? ", " : "", names[k - 1]);
        if (k == 0) {
            set_shape(v, a->t->shape, a->t->ndim);
            memcpy(shape, a->t->shape, sizeof shape);
            nd = a->t->ndim;
            continue;
        }
        if (!broadcast_into(c, shape, &nd, a->t, v->loc, before, names[k])) return false;
    }
    set_shape(v, shape, nd);
    return true;
}

static DType promote_operands(Value *v, const int *idx, int n) {
    DTypeState s;
    dtype_state_init(&s);
    for (int k = 0; k < n; k++) {
        Value *t = ARG(v, idx[k])->t;
        dtype_state_add(&s, t->dtype, t->ndim, t->weak);
    }
    return dtype_state_result(&s);
}

static const int BIN[2] = {0, 1};

static const char *torch_dtype(DType t) {
    static const char *names[DT_COUNT] = {"Bool",   "Byte",   "Char",     "Short", "Int",
                                          "Long",   "Half",   "BFloat16", "Float", "Double",
                                          "UInt16", "UInt32", "UInt64"};
    return t >= 0 && t < DT_COUNT ? names[t] : "?";
}

static bool binary(InferCtx *c, Value *v) {
    if (!broadcast_operands(c, v, BIN, 2)) return false;
    v->dtype = promote_operands(v, BIN, 2);
    return true;
}

static bool bool_operand(Value *v) {
    return ARG(v, 0)->t->dtype == DT_BOOL || ARG(v, 1)->t->dtype == DT_BOOL;
}

bool infer_add_sub(InferCtx *c, Value *v) {
    if (!binary(c, v)) return false;
    if (v->op == OP_SUB && bool_operand(v)) {
        bool both = ARG(v, 0)->t->dtype == DT_BOOL && ARG(v, 1)->t->dtype == DT_BOOL;
        return infer_error(
            c, v->loc,
            "Subtraction, the `-` operator, with %s is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead.",
            both ? "two bool tensors" : "a bool tensor");
    }
    Arg *alpha = ARG(v, 2);
    if (!alpha->num_is_int && alpha->f != 1 && !dtype_is_float(v->dtype))
        return infer_error(
            c, alpha->loc,
            "For integral input tensors, argument alpha must not be a floating point number.");
    return true;
}

bool infer_arith(InferCtx *c, Value *v) {
    if (!binary(c, v)) return false;
    if (v->dtype == DT_BOOL &&
        (v->op == OP_REMAINDER || v->op == OP_FLOOR_DIVIDE || v->op == OP_POW))
        return infer_error(
            c, v->loc,
            "%s is not implemented for bool tensors; convert with .to(i64) or .to(f32) first",
            op_info(v->op)->name);
    return true;
}

bool infer_div(InferCtx *c, Value *v) {
    if (!binary(c, v)) return false;
    Arg *mode = ARG(v, 2);
    if (mode->kind == ARG_STR && strcmp(mode->s, "trunc") && strcmp(mode->s, "floor"))
        return infer_error(
            c, mode->loc,
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '%s'",
            mode->s);
    if (mode->kind == ARG_ABSENT && !dtype_is_float(v->dtype))
        v->dtype = DT_F32; /* true division */
    return true;
}

/* torch.xlogy computes in floating point: integer and bool operands give
 * the default float dtype, as true division. */
bool infer_xlogy(InferCtx *c, Value *v) {
    if (!binary(c, v)) return false;
    if (!dtype_is_float(v->dtype)) v->dtype = DT_F32;
    return true;
}

bool infer_compare(InferCtx *c, Value *v) {
    if (!binary(c, v)) return false;
    v->dtype = DT_BOOL;
    return true;
}

bool infer_bitwise(InferCtx *c, Value *v) {
    if (!binary(c, v)) return false;
    if (dtype_is_float(v->dtype))
        return infer_error(
            c, v->loc,
            "%s needs bool or integer tensors, found %s (for truth values of floats, "
            "compare first, e.g. (x > 0) & (y > 0))",
            v->op == OP_BITWISE_AND ? "&" : "|", dtype_name(v->dtype));
    return true;
}

bool infer_where(InferCtx *c, Value *v) {
    static const int ALL[3] = {0, 1, 2}, XY[2] = {1, 2};
    Value *cond = ARG(v, 0)->t;
    if (cond->dtype != DT_BOOL && cond->dtype != DT_U8)
        return infer_error(
            c, ARG(v, 0)->loc,
            "where expected condition to be a boolean tensor, but got a tensor with dtype %s",
            torch_dtype(cond->dtype));
    if (!broadcast_operands(c, v, ALL, 3)) return false;
    v->dtype = promote_operands(v, XY, 2);
    return true;
}

bool infer_masked_fill(InferCtx *c, Value *v) {
    static const int XM[2] = {0, 1};
    Value *mask = ARG(v, 1)->t, *val = ARG(v, 2)->t;
    if (mask->dtype != DT_BOOL)
        return infer_error(c, ARG(v, 1)->loc,
                           "masked_fill_ only supports boolean masks, but got mask with dtype %s",
                           dtype_name(mask->dtype));
    if (val->ndim != 0)
        return infer_error(c, ARG(v, 2)->loc,
                           "masked_fill_ only supports a 0-dimensional value tensor, but got "
                           "tensor with %d dimension(s).",
                           val->ndim);
    if (!broadcast_operands(c, v, XM, 2)) return false;
    v->dtype = ARG(v, 0)->t->dtype;
    return true;
}

bool infer_clamp(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    Arg *lo = ARG(v, 1), *hi = ARG(v, 2);
    if (lo->kind == ARG_ABSENT && hi->kind == ARG_ABSENT)
        return infer_error(c, v->loc,
                           "torch.clamp: At least one of 'min' or 'max' must not be None");
    DTypeState s;
    dtype_state_init(&s);
    dtype_state_add(&s, x->dtype, x->ndim, x->weak);
    for (Arg *a = lo; a <= hi; a++)
        if (a->kind == ARG_NUM) dtype_state_add(&s, a->num_is_int ? DT_I64 : DT_F32, 0, true);
    v->dtype = dtype_state_result(&s);
    if (v->dtype == DT_BOOL)
        return infer_error(c, v->loc, "clamp is not implemented for bool tensors");
    set_shape(v, x->shape, x->ndim);
    return true;
}

static bool unary(InferCtx *c, Value *v) {
    Value *x = IN0(v);
    (void)c;
    set_shape(v, x->shape, x->ndim);
    v->dtype = x->dtype;
    return true;
}

bool infer_unary_keep(InferCtx *c, Value *v) {
    return unary(c, v);
}

bool infer_unary_keep_nobool(InferCtx *c, Value *v) {
    unary(c, v);
    if (v->dtype != DT_BOOL) return true;
    if (v->op == OP_NEG)
        return infer_error(
            c, v->loc,
            "Negation, the `-` operator, on a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
    return infer_error(c, v->loc,
                       "%s does not accept bool tensors (found bool); convert with .to(...) first",
                       op_info(v->op)->name);
}

bool infer_square(InferCtx *c, Value *v) {
    unary(c, v);
    if (v->dtype == DT_BOOL) v->dtype = DT_I64;
    return true;
}

bool infer_unary_float(InferCtx *c, Value *v) {
    unary(c, v);
    if (!dtype_is_float(v->dtype)) v->dtype = DT_F32;
    return true;
}

bool infer_float_only(InferCtx *c, Value *v) {
    unary(c, v);
    if (!dtype_is_float(v->dtype))
        return infer_error(c, v->loc, "%s needs a floating-point tensor, found %s",
                           op_info(v->op)->name, dtype_name(v->dtype));
    return true;
}

/* hardtanh and relu6: PyTorch takes integer tensors too (the bounds
 * truncated toward zero), but not bool; unsigned ones only with a lower
 * bound that truncates to 0 or more, as ATen checks. */
bool infer_clip_activation(InferCtx *c, Value *v) {
    unary(c, v);
    if (v->dtype == DT_BOOL)
        return infer_error(c, v->loc, "%s needs a floating-point or integer tensor, found bool",
                           op_info(v->op)->name);
    if (v->op == OP_HARDTANH && v->dtype == DT_U8 && trunc(ARG(v, 1)->f) < 0)
        return infer_error(c, ARG(v, 1)->loc,
                           "cannot do hardtanh on an unsigned type with negative limits");
    return true;
}

bool infer_gelu(InferCtx *c, Value *v) {
    Arg *ap = ARG(v, 1);
    if (strcmp(ap->s, "none") && strcmp(ap->s, "tanh"))
        return infer_error(c, ap->loc,
                           "gelu: approximate must be \"none\" or \"tanh\", found \"%s\"", ap->s);
    return infer_float_only(c, v);
}

bool infer_logical_not(InferCtx *c, Value *v) {
    unary(c, v);
    v->dtype = DT_BOOL;
    return true;
}

bool infer_bitwise_not(InferCtx *c, Value *v) {
    unary(c, v);
    if (dtype_is_float(v->dtype))
        return infer_error(
            c, v->loc,
            "~ (bitwise_not) is only supported for integer and boolean tensors, found %s",
            dtype_name(v->dtype));
    return true;
}
