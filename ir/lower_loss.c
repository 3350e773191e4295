/* The loss functions in primitive ops (see lower_loss.h), following
 * PyTorch 1.13's formulas term by term (ATen's Loss.cpp, LossNLL.cpp and
 * the CPU kernels they call) so values match to rounding. f16/bf16 losses
 * are computed in f32 and rounded once, as the CPU kernels accumulate in
 * float. Every op on a path from input (or target) to the loss has a
 * vector-Jacobian product; comparisons only build masks. */
#include "ir/lower_loss.h"

#include <string.h>

#include "ir/infer.h"
#include "ir/irbuild.h"

typedef IrB L;

/* Argument positions in each row's signature (ir/ops.def). */
static const LossArgs ARGS_POINTWISE = {-1, 2, 3, 4, -1, -1, -1};
static const LossArgs ARGS_SMOOTH_L1 = {-1, 2, 3, 4, -1, -1, 5};
static const LossArgs ARGS_NLL = {2, 3, 5, 6, 4, -1, -1};
static const LossArgs ARGS_CE = {2, 3, 5, 6, 4, -1, 7};
static const LossArgs ARGS_BCE = {2, 3, 4, 5, -1, 6, -1};

const LossArgs *loss_args(OpCode op) {
    switch (op) {
    case OP_MSE_LOSS:
    case OP_L1_LOSS: return &ARGS_POINTWISE;
    case OP_SMOOTH_L1_LOSS: return &ARGS_SMOOTH_L1;
    case OP_NLL_LOSS: return &ARGS_NLL;
    case OP_CROSS_ENTROPY: return &ARGS_CE;
    case OP_BCE_WITH_LOGITS: return &ARGS_BCE;
    default: return NULL;
    }
}

int loss_reduction(const Value *v) {
    const LossArgs *la = loss_args(v->op);
    const Arg *sa = &v->args[la->size_average], *rd = &v->args[la->reduce];
    if (sa->kind == ARG_BOOL || rd->kind == ARG_BOOL) {
        /* torch.nn._reduction.legacy_get_string: None counts as true. */
        bool size_average = sa->kind != ARG_BOOL || sa->i, reduce = rd->kind != ARG_BOOL || rd->i;
        return !reduce ? LOSS_NONE : size_average ? LOSS_MEAN : LOSS_SUM;
    }
    const char *s = v->args[la->reduction].s;
    if (!strcmp(s, "none")) return LOSS_NONE;
    if (!strcmp(s, "mean")) return LOSS_MEAN;
    if (!strcmp(s, "sum")) return LOSS_SUM;
    return -1;
}

bool lower_loss_applies(OpCode op) {
    return loss_args(op) != NULL;
}

/* ---- helpers ---------------------------------------------------------------- */

static DType compute_dtype(DType t) {
    return dtype_size(t) == 2 ? DT_F32 : t;
}

static Value *tensor_arg(const Value *v, int i) {
    return i >= 0 && v->args[i].kind == ARG_TENSOR ? v->args[i].t : NULL;
}

/* A weak integer literal: compares with an i64 target in i64 (irb_scalar's
 * f32 literal would promote the comparison to float). */
static Value *int_scalar(L *l, int64_t x) {
    Value *v = value_new(l->c->g, OP_SCALAR, l->loc);
    v->weak = true;
    v->dtype = DT_I64;
    v->scalar = (double)x;
    v->scalar_is_int = true;
    graph_append(l->c->g, v);
    return v;
}

static Value *sum_all(L *l, Value *x) {
    Arg a[1] = {irb_t(l, x)};
    return irb_op(l, OP_SUM, 1, a);
}

static Value *sum_dim(L *l, Value *x, int64_t dim) {
    return irb_reduce(l, OP_SUM, x, &dim, 1);
}

/* x - y; alpha given, since an absent one reads as a float 0 that
 * integer subtraction refuses. */
static Value *sub(L *l, Value *x, Value *y) {
    Arg alpha = irb_num(l, 1);
    alpha.num_is_int = true;
    Arg a[3] = {irb_t(l, x), irb_t(l, y), alpha};
    return irb_op(l, OP_SUB, 3, a);
}

static Value *where(L *l, Value *cond, Value *a, Value *b) {
    Arg args[3] = {irb_t(l, cond), irb_t(l, a), irb_t(l, b)};
    return irb_op(l, OP_WHERE, 3, args);
}

/* apply_loss_reduction (ATen's Loss.cpp). */
static Value *reduce_mean_sum(L *l, Value *loss, int red) {
    if (red == LOSS_NONE) return loss;
    if (red == LOSS_SUM) return sum_all(l, loss);
    Arg a[1] = {irb_t(l, loss)};
    return irb_op(l, OP_MEAN, 1, a);
}

/* A per-class weight [C] shaped to broadcast along an input's class dim. */
static Value *class_view(L *l, Value *w, int ndim, int class_dim) {
    int64_t shape[TG_MAX_DIMS];
    for (int i = 0; i < ndim; i++)
        shape[i] = i == class_dim ? w->shape[0] : 1;
    return irb_reshape(l, w, shape, ndim);
}

/* ---- mse_loss, l1_loss, smooth_l1_loss ------------------------------------ */

static Value *lower_pointwise(L *l, Value *v, int red) {
    /* The operands' common dtype (an integer l1 sum is i64 only after it). */
    DType t = compute_dtype(dtype_promote(IN0(v)->dtype, ARG(v, 1)->t->dtype));
    Value *d = sub(l, irb_to(l, IN0(v), t), irb_to(l, ARG(v, 1)->t, t));
    Value *e;
    if (v->op == OP_MSE_LOSS) {
        e = irb_unary(l, OP_SQUARE, d); /* diff * diff */
    } else {
        e = irb_unary(l, OP_ABS, d);
        double beta = v->op == OP_SMOOTH_L1_LOSS ? ARG(v, 5)->f : 0;
        /* z < beta ? 0.5 * z * z / beta : z - 0.5 * beta; beta 0 is l1_loss
         * (F.smooth_l1_loss), which also keeps 1/beta out of the gradient. */
        if (beta > 0) {
            Value *z = e;
            Value *quad = irb_binary(
                l, OP_DIV, irb_binary(l, OP_MUL, irb_binary(l, OP_MUL, irb_scalar(l, 0.5), z), z),
                irb_scalar(l, beta));
            Value *lin = irb_binary(l, OP_SUB, z, irb_scalar(l, 0.5 * beta));
            e = where(l, irb_binary(l, OP_LT, z, irb_scalar(l, beta)), quad, lin);
        }
    }
    return reduce_mean_sum(l, e, red);
}

/* ---- nll_loss, cross_entropy ---------------------------------------------- */

/* The per-target terms of nll_loss over log-probabilities logp (class dim
 * 0 for an unbatched [C] input, else 1): loss = -logp[t] * w[t], 0 where
 * t == ignore_index; keep marks the counted targets, wt their weights (0
 * where ignored; NULL without weights); total is the mean's divisor. */
typedef struct Picked {
    Value *loss, *keep, *wt, *total;
} Picked;

static void pick(L *l, Value *logp, Value *target, Value *w, int64_t ignore, Picked *p) {
    int cd = logp->ndim == 1 ? 0 : 1;
    Value *t = irb_to(l, target, DT_I64);
    p->keep = irb_binary(l, OP_NE, t, int_scalar(l, ignore));
    /* Ignored targets may be any value: index with class 0 there instead,
     * so that only real targets meet the gather's range check. */
    Value *safe = where(l, p->keep, t, int_scalar(l, 0));
    int64_t is[TG_MAX_DIMS];
    int n = 0;
    is[n++] = target->ndim ? target->shape[0] : 1;
    if (target->ndim) is[n++] = 1;
    for (int i = 1; i < target->ndim; i++)
        is[n++] = target->shape[i];
    Arg ga[3] = {irb_t(l, logp), irb_i(l, cd), irb_t(l, irb_reshape(l, safe, is, n))};
    Value *picked = irb_reshape(l, irb_op(l, OP_GATHER, 3, ga), target->shape, target->ndim);
    p->wt = NULL;
    Value *term;
    if (w) {
        int64_t cnt = value_numel(target);
        Arg ia[3] = {irb_t(l, irb_to(l, w, logp->dtype)), irb_i(l, 0),
                     irb_t(l, irb_reshape(l, safe, &cnt, 1))};
        Value *wt = irb_reshape(l, irb_op(l, OP_INDEX_SELECT, 3, ia), target->shape, target->ndim);
        term = irb_binary(l, OP_MUL, irb_unary(l, OP_NEG, picked), wt);
        p->wt = where(l, p->keep, wt, irb_scalar(l, 0));
    } else {
        term = irb_unary(l, OP_NEG, picked);
    }
    /* where, not a product with the mask: -inf log-probabilities of
     * ignored targets give 0, not NaN, and no gradient. */
    p->loss = where(l, p->keep, term, irb_scalar(l, 0));
    p->total = NULL;
}

/* nll_loss's reduction: the weighted mean divides by the sum of the
 * weights of the counted targets (their number without weights); all
 * ignored gives 0 / 0 = NaN, as PyTorch. */
static Value *reduce_picked(L *l, Value *elem, Picked *p, int red, DType t) {
    if (red == LOSS_NONE) return elem;
    Value *s = sum_all(l, elem);
    if (red == LOSS_SUM) return s;
    if (!p->total) p->total = sum_all(l, p->wt ? p->wt : irb_to(l, p->keep, t));
    return irb_binary(l, OP_DIV, s, p->total);
}

static Value *log_softmax(L *l, Value *x, int dim) {
    Arg a[2] = {irb_t(l, x), irb_i(l, dim)};
    return irb_op(l, OP_LOG_SOFTMAX, 2, a);
}

static Value *lower_nll(L *l, Value *v, int red) {
    DType t = compute_dtype(v->dtype);
    Picked p;
    pick(l, irb_to(l, IN0(v), t), ARG(v, 1)->t, tensor_arg(v, 2), ARG(v, 4)->i, &p);
    return reduce_picked(l, p.loss, &p, red, t);
}

/* cross_entropy_loss_label_smoothing (class indices, label_smoothing > 0):
 * (1 - ls) * nll + ls / C * smooth, smooth = -sum_c logp * w (0 where
 * ignored), reduced like nll (the same divisor for the mean). */
static Value *lower_ce_indices(L *l, Value *v, int red) {
    DType t = compute_dtype(v->dtype);
    Value *x = IN0(v), *w = tensor_arg(v, 2);
    int cd = x->ndim == 1 ? 0 : 1;
    Value *logp = log_softmax(l, irb_to(l, x, t), cd);
    Picked p;
    pick(l, logp, ARG(v, 1)->t, w, ARG(v, 4)->i, &p);
    Value *nll = reduce_picked(l, p.loss, &p, red, t);
    double ls = ARG(v, 7)->f;
    if (!(ls > 0)) return nll; /* ATen ignores a negative label_smoothing */
    if (!nll) return NULL;
    Value *lw = w ? irb_binary(l, OP_MUL, logp, class_view(l, irb_to(l, w, t), x->ndim, cd)) : logp;
    Value *smooth = irb_unary(l, OP_NEG, sum_dim(l, lw, cd));
    smooth = where(l, p.keep, smooth, irb_scalar(l, 0));
    Value *ret = reduce_picked(l, smooth, &p, red, t);
    double c = (double)x->shape[cd];
    return irb_binary(l, OP_ADD, irb_binary(l, OP_MUL, irb_scalar(l, 1 - ls), nll),
                      irb_binary(l, OP_MUL, ret, irb_scalar(l, ls / c)));
}

/* cross_entropy_loss_prob_target: -sum(logp * target' * w), target' the
 * smoothed probabilities; the mean divides by the number of samples
 * (numel / C), not by the weights. */
static Value *lower_ce_probs(L *l, Value *v, int red) {
    DType t = compute_dtype(v->dtype);
    Value *x = IN0(v), *w = tensor_arg(v, 2);
    int cd = x->ndim == 1 ? 0 : 1;
    int64_t c = x->shape[cd];
    /* log_softmax in the input's own dtype, as ATen, before promotion. */
    Value *logp = irb_to(l, log_softmax(l, irb_to(l, x, compute_dtype(x->dtype)), cd), t);
    /* smoothed in the target's own dtype, as ATen, then promoted */
    Value *tgt = irb_to(l, ARG(v, 1)->t, compute_dtype(ARG(v, 1)->t->dtype));
    double ls = ARG(v, 7)->f;
    if (ls > 0)
        tgt = irb_binary(l, OP_ADD, irb_binary(l, OP_MUL, tgt, irb_scalar(l, 1 - ls)),
                         irb_scalar(l, ls / (double)c));
    tgt = irb_to(l, tgt, t);
    Value *prod = irb_binary(l, OP_MUL, logp, tgt);
    if (w) prod = irb_binary(l, OP_MUL, prod, class_view(l, irb_to(l, w, t), x->ndim, cd));
    if (red == LOSS_NONE) return irb_unary(l, OP_NEG, sum_dim(l, prod, cd));
    Value *s = irb_unary(l, OP_NEG, sum_all(l, prod));
    if (red == LOSS_SUM) return s;
    return irb_binary(l, OP_DIV, s, irb_scalar(l, (double)(value_numel(x) / c)));
}

/* ---- binary_cross_entropy_with_logits ---------------------------------------- */

/* PyTorch 1.13's stable form, m = max(-x, 0):
 *   (1 - t) * x + m + log(exp(-m) + exp(-x - m))
 * and with pos_weight, lw = (pos_weight - 1) * t + 1:
 *   (1 - t) * x + lw * (log(exp(-m) + exp(-x - m)) + m)
 * One of the two exponentials is exp(0), so the log never sees 0 and the
 * gradient through these primitives is sigmoid(x) - t, finite everywhere. */
static Value *lower_bce(L *l, Value *v, int red) {
    DType t = compute_dtype(v->dtype);
    Value *x = irb_to(l, IN0(v), t), *y = irb_to(l, ARG(v, 1)->t, t);
    Value *w = tensor_arg(v, 2), *pw = tensor_arg(v, 6);
    Value *nx = irb_unary(l, OP_NEG, x);
    Arg ca[3] = {irb_t(l, nx), irb_num(l, 0), {.kind = ARG_ABSENT, .loc = l->loc}};
    Value *m = irb_op(l, OP_CLAMP, 3, ca);
    Value *lg = irb_unary(l, OP_LOG,
                          irb_binary(l, OP_ADD, irb_unary(l, OP_EXP, irb_unary(l, OP_NEG, m)),
                                     irb_unary(l, OP_EXP, irb_binary(l, OP_SUB, nx, m))));
    Value *loss = irb_binary(l, OP_MUL, irb_binary(l, OP_SUB, irb_scalar(l, 1), y), x);
    if (pw) {
        Value *lw = irb_binary(
            l, OP_ADD,
            irb_binary(l, OP_MUL, irb_binary(l, OP_SUB, irb_to(l, pw, t), irb_scalar(l, 1)), y),
            irb_scalar(l, 1));
        loss = irb_binary(l, OP_ADD, loss, irb_binary(l, OP_MUL, lw, irb_binary(l, OP_ADD, lg, m)));
    } else {
        loss = irb_binary(l, OP_ADD, irb_binary(l, OP_ADD, loss, m), lg);
    }
    if (w) loss = irb_binary(l, OP_MUL, loss, irb_to(l, w, t));
    return reduce_mean_sum(l, loss, red);
}

/* ---- entry ------------------------------------------------------------------ */

Value *lower_loss(InferCtx *c, Value *v) {
    L l = irb_init(c, v->loc);
    int red = loss_reduction(v);
    Value *r;
    switch (v->op) {
    case OP_MSE_LOSS:
    case OP_L1_LOSS:
    case OP_SMOOTH_L1_LOSS: r = lower_pointwise(&l, v, red); break;
    case OP_NLL_LOSS: r = lower_nll(&l, v, red); break;
    case OP_CROSS_ENTROPY:
        r = value_same_shape(IN0(v), ARG(v, 1)->t) ? lower_ce_probs(&l, v, red)
                                                   : lower_ce_indices(&l, v, red);
        break;
    case OP_BCE_WITH_LOGITS: r = lower_bce(&l, v, red); break;
    default: return v;
    }
    r = irb_to(&l, r, v->dtype);
    if (!r) return NULL;
    TGC_ASSERT(r->dtype == v->dtype && value_same_shape(r, v));
    Graph *g = c->g;
    if (g->nvalues > 0 && g->values[g->nvalues - 1] == r) {
        /* the caller appends what we return: take r back out */
        g->nvalues--;
    } else {
        Arg a[1] = {irb_t(&l, r)};
        if (!(r = value_make(c, OP_ALIAS, l.loc, 1, a))) return NULL;
    }
    r->label = op_info(v->op)->name;
    r->loc = v->loc;
    return r;
}
