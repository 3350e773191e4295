/* Inference of the loss functions with PyTorch 1.13's argument rules
 * (torch/nn/functional.py and ATen's Loss.cpp / LossNLL.cpp), PyTorch's
 * message where it has one. Each loss is then written in primitive ops by
 * ir/lower_loss.c. */
#include <string.h>

#include "ir/infer.h"
#include "ir/lower_loss.h"

static const char *name_of(const Value *v) {
    return op_info(v->op)->name;
}

static char *shp(InferCtx *c, const Value *t) {
    return shape_str(c->g->arena, t->shape, t->ndim);
}

/* torch.nn.functional reads .size() / .dim() of every tensor argument, so
 * a bare number is an error there, not a broadcast scalar. */
static bool tensor_operands(InferCtx *c, const Value *v) {
    for (int i = 0; i < v->nargs; i++) {
        const Arg *a = ARG(v, i);
        if (a->kind == ARG_TENSOR && a->t->op == OP_SCALAR && a->t->weak)
            return infer_error(c, a->loc, "%s: argument '%s' must be a tensor, found a number",
                               name_of(v), op_info(v->op)->params[i].name);
    }
    return true;
}

static bool check_reduction(InferCtx *c, const Value *v) {
    if (loss_reduction(v) >= 0) return true;
    const Arg *r = ARG(v, loss_args(v->op)->reduction);
    return infer_error(c, r->loc,
                       "%s: \"%s\" is not a valid value for reduction: expected \"none\", "
                       "\"mean\" or \"sum\"",
                       name_of(v), r->s);
}

static bool float_input(InferCtx *c, const Value *v) {
    if (dtype_is_float(IN0(v)->dtype)) return true;
    return infer_error(c, ARG(v, 0)->loc, "%s needs a floating-point input, found %s", name_of(v),
                       dtype_name(IN0(v)->dtype));
}

/* The result: the unreduced shape for reduction "none", else 0-d. */
static bool result(Value *v, DType t, const int64_t *shape, int ndim) {
    v->dtype = t;
    if (loss_reduction(v) == LOSS_NONE)
        set_shape(v, shape, ndim);
    else
        v->ndim = 0;
    return true;
}

/* ---- mse_loss, l1_loss, smooth_l1_loss ------------------------------------ */

/* F.mse_loss and friends broadcast input against target (with a warning
 * when the sizes differ) and compute in the promoted dtype. */
bool infer_pointwise_loss(InferCtx *c, Value *v) {
    if (!tensor_operands(c, v) || !check_reduction(c, v)) return false;
    const Value *x = IN0(v), *y = ARG(v, 1)->t;
    int64_t shape[TG_MAX_DIMS];
    int nd = x->ndim;
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)nd);
    if (!broadcast_into(c, shape, &nd, y, ARG(v, 1)->loc, "input", "target")) return false;
    /* broadcast_tensors first: both operands have the result's dims. */
    DType t = dtype_promote(x->dtype, y->dtype);
    if (v->op == OP_L1_LOSS && (x->dtype == DT_BOOL || y->dtype == DT_BOOL))
        return infer_error(c, ARG(v, x->dtype == DT_BOOL ? 0 : 1)->loc,
                           "l1_loss: Subtraction, the `-` operator, with a bool tensor is not "
                           "supported. If you are trying to invert a mask, use the `~` or "
                           "`logical_not()` operator instead.");
    if (v->op != OP_L1_LOSS && !dtype_is_float(t))
        return infer_error(c, v->loc,
                           "%s needs floating-point values, found input %s and target %s",
                           name_of(v), dtype_name(x->dtype), dtype_name(y->dtype));
    if (!dtype_is_float(t)) {
        /* l1_loss of integers: |input - target| stays integral, as in 1.13;
         * its mean has no integral dtype, its sum is i64 like torch.sum. */
        if (loss_reduction(v) == LOSS_MEAN)
            return infer_error(c, v->loc,
                               "l1_loss: the mean of integer values needs a floating-point "
                               "dtype (mean(): could not infer output dtype, got %s); use "
                               "reduction=\"sum\" or convert the input",
                               dtype_name(t));
        if (loss_reduction(v) == LOSS_SUM) t = DT_I64;
    }
    if (v->op == OP_SMOOTH_L1_LOSS && !(ARG(v, 5)->f >= 0))
        return infer_error(c, ARG(v, 5)->loc,
                           "smooth_l1_loss does not support negative values for beta.");
    if (!value_same_shape(x, y))
        diag_warning(c->d, ARG(v, 1)->loc,
                     "%s: using a target size (%s) that is different to the input size (%s); "
                     "this will likely lead to incorrect results due to broadcasting",
                     name_of(v), shp(c, y), shp(c, x));
    return result(v, t, shape, nd);
}

/* ---- nll_loss, cross_entropy ---------------------------------------------- */

static int64_t n_classes(const Value *x) {
    return x->shape[x->ndim == 1 ? 0 : 1];
}

/* weight: [C]; with class-index targets of the input's dtype (ATen's
 * nll_loss kernels read both as one scalar_t). */
static bool class_weight(InferCtx *c, const Value *v, bool same_dtype) {
    const Arg *a = ARG(v, 2);
    if (a->kind != ARG_TENSOR) return true;
    const Value *w = a->t, *x = IN0(v);
    int64_t ch = n_classes(x);
    if (w->ndim != 1 || w->shape[0] != ch)
        return infer_error(c, a->loc,
                           "%s: weight tensor should be defined either for all %lld classes or "
                           "no classes but got weight tensor of shape: %s",
                           name_of(v), (long long)ch, shp(c, w));
    if (same_dtype && w->dtype != x->dtype)
        return infer_error(c, a->loc, "%s: weight has dtype %s, expected %s like the input",
                           name_of(v), dtype_name(w->dtype), dtype_name(x->dtype));
    if (!same_dtype && w->dtype == DT_BOOL)
        return infer_error(c, a->loc, "%s: weight must be a numeric tensor, found bool",
                           name_of(v));
    return true;
}

/* Class-index targets: input [C] with a 0-d target, [N, C] with [N],
 * [N, C, d1, ...] with [N, d1, ...]; i64 (or u8, which ATen also reads). */
static bool class_targets(InferCtx *c, Value *v) {
    const Value *x = IN0(v), *t = ARG(v, 1)->t;
    SrcLoc tl = ARG(v, 1)->loc;
    if (t->dtype != DT_I64 && t->dtype != DT_U8) {
        if (v->op == OP_CROSS_ENTROPY && dtype_is_float(t->dtype))
            return infer_error(c, tl,
                               "cross_entropy: a floating-point target holds class "
                               "probabilities and needs the input's shape %s, found %s (class "
                               "indices need dtype i64)",
                               shp(c, x), shp(c, t));
        return infer_error(c, tl, "%s: expected a target of class indices of dtype i64, found %s",
                           name_of(v), dtype_name(t->dtype));
    }
    if (x->ndim == 1) {
        /* ATen accepts a 1-d target of C elements here and reads only its
         * first: refused rather than copied. */
        if (t->ndim != 0)
            return infer_error(c, tl,
                               "%s: an unbatched input of shape %s (classes) takes a 0-d target, "
                               "found shape %s",
                               name_of(v), shp(c, x), shp(c, t));
        return true;
    }
    if (t->ndim >= 1 && t->shape[0] != x->shape[0])
        return infer_error(c, tl,
                           "Expected input batch_size (%lld) to match target batch_size (%lld).",
                           (long long)x->shape[0], (long long)t->shape[0]);
    int64_t want[TG_MAX_DIMS];
    want[0] = x->shape[0];
    for (int i = 2; i < x->ndim; i++)
        want[i - 1] = x->shape[i];
    bool ok = t->ndim == x->ndim - 1;
    for (int i = 0; ok && i < t->ndim; i++)
        ok = t->shape[i] == want[i];
    if (!ok)
        return infer_error(c, tl, "%s: Expected target size %s, got %s", name_of(v),
                           shape_str(c->g->arena, want, x->ndim - 1), shp(c, t));
    return true;
}

static bool class_input(InferCtx *c, Value *v) {
    if (!tensor_operands(c, v) || !check_reduction(c, v) || !float_input(c, v)) return false;
    if (IN0(v)->ndim < 1)
        return infer_error(c, ARG(v, 0)->loc, "%s: Expected 1 or more dimensions (got 0)",
                           name_of(v));
    return true;
}

bool infer_nll_loss(InferCtx *c, Value *v) {
    if (!class_input(c, v) || !class_targets(c, v) || !class_weight(c, v, true)) return false;
    const Value *t = ARG(v, 1)->t;
    return result(v, IN0(v)->dtype, t->shape, t->ndim);
}

/* ATen's cross_entropy_loss: a target of the input's shape holds class
 * probabilities, any other class indices. */
bool infer_cross_entropy(InferCtx *c, Value *v) {
    if (!class_input(c, v)) return false;
    const Value *x = IN0(v), *t = ARG(v, 1)->t;
    const Arg *ls = ARG(v, 7);
    if (ls->f > 1.0)
        return infer_error(c, ls->loc, "label_smoothing must be between 0.0 and 1.0. Got: %g",
                           ls->f);
    if (!value_same_shape(x, t)) {
        if (!class_targets(c, v) || !class_weight(c, v, true)) return false;
        return result(v, x->dtype, t->shape, t->ndim);
    }
    if (!dtype_is_float(t->dtype))
        return infer_error(c, ARG(v, 1)->loc,
                           "Expected floating point type for target with class probabilities, "
                           "got %s",
                           dtype_name(t->dtype));
    if (ARG(v, 4)->i >= 0)
        return infer_error(c, ARG(v, 4)->loc,
                           "ignore_index is not supported for floating point target");
    if (!class_weight(c, v, false)) return false;
    /* -(log_softmax(input) * target * weight): PyTorch's promotion. */
    DTypeState s;
    dtype_state_init(&s);
    dtype_state_add(&s, x->dtype, x->ndim, false);
    dtype_state_add(&s, t->dtype, t->ndim, false);
    if (ARG(v, 2)->kind == ARG_TENSOR) dtype_state_add(&s, ARG(v, 2)->t->dtype, 1, false);
    int64_t shape[TG_MAX_DIMS];
    int nd = 0, cd = x->ndim == 1 ? 0 : 1;
    for (int i = 0; i < x->ndim; i++)
        if (i != cd) shape[nd++] = x->shape[i];
    return result(v, dtype_state_result(&s), shape, nd);
}

/* ---- binary_cross_entropy_with_logits --------------------------------------- */

/* weight and pos_weight broadcast against the loss in place (ATen's mul_),
 * so they may not grow it. */
static bool fits_input(InferCtx *c, const Value *v, int i) {
    const Arg *a = ARG(v, i);
    if (a->kind != ARG_TENSOR) return true;
    const Value *x = IN0(v);
    int64_t shape[TG_MAX_DIMS];
    int nd = x->ndim;
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)nd);
    if (!broadcast_into(c, shape, &nd, a->t, a->loc, "input", op_info(v->op)->params[i].name))
        return false;
    if (nd != x->ndim || memcmp(shape, x->shape, sizeof(int64_t) * (size_t)nd))
        return infer_error(c, a->loc,
                           "%s: %s of shape %s: output with shape %s doesn't match the "
                           "broadcast shape %s",
                           name_of(v), op_info(v->op)->params[i].name, shp(c, a->t), shp(c, x),
                           shape_str(c->g->arena, shape, nd));
    if (a->t->dtype == DT_BOOL)
        return infer_error(c, a->loc, "%s: %s must be a numeric tensor, found bool", name_of(v),
                           op_info(v->op)->params[i].name);
    return true;
}

bool infer_bce_with_logits(InferCtx *c, Value *v) {
    if (!tensor_operands(c, v) || !check_reduction(c, v) || !float_input(c, v)) return false;
    const Value *x = IN0(v), *t = ARG(v, 1)->t;
    if (!value_same_shape(x, t))
        return infer_error(c, ARG(v, 1)->loc,
                           "Target size (%s) must be the same as input size (%s)", shp(c, t),
                           shp(c, x));
    /* ATen computes in place in (1 - target)'s dtype; a target of another
     * dtype than the input's is refused rather than half-followed. */
    if (t->dtype != x->dtype)
        return infer_error(c, ARG(v, 1)->loc, "%s: target has dtype %s, expected %s like the input",
                           name_of(v), dtype_name(t->dtype), dtype_name(x->dtype));
    if (!fits_input(c, v, 2) || !fits_input(c, v, 6)) return false;
    return result(v, x->dtype, x->shape, x->ndim);
}
