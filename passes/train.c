/* The optimizer's update as IR (see train.h): torch.optim.SGD and
 * torch.optim.AdamW (single-tensor implementations of PyTorch 1.13),
 * operation for operation, with their states in f32 params that start at
 * zero. AdamW's bias corrections are computed in f64 from the step count,
 * as PyTorch computes them in Python floats, and rounded to f32 once where
 * PyTorch hands them to the f32 kernels. */
#include <math.h>
#include <string.h>

#include "ir/infer.h"
#include "ir/irbuild.h"
#include "passes/pipeline.h"
#include "passes/train.h"

TrainSpec train_spec_default(OptimKind k) {
    TrainSpec t = {.optim = k, .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    if (k == OPTIM_ADAMW) t.weight_decay = 1e-2;
    return t;
}

const char *optim_name(OptimKind k) {
    return k == OPTIM_SGD ? "sgd" : k == OPTIM_ADAMW ? "adamw" : "none";
}

bool optim_parse(const char *s, OptimKind *out) {
    for (OptimKind k = OPTIM_NONE; k <= OPTIM_ADAMW; k++)
        if (!strcmp(s, optim_name(k))) {
            *out = k;
            return true;
        }
    return false;
}

typedef struct Tr {
    Graph *g;
    IrB b;
    const TrainSpec *t;
    Value *skip; /* loss scaling: true when this step's gradients are not finite */
} Tr;

static Value *S(Tr *r, double x) {
    return irb_scalar(&r->b, x);
}
static Value *B(Tr *r, OpCode op, Value *x, Value *y) {
    return irb_binary(&r->b, op, x, y);
}
/* x + alpha * y, one ATen add. */
static Value *add_scaled(Tr *r, Value *x, Value *y, double alpha) {
    Arg a[3] = {irb_t(&r->b, x), irb_t(&r->b, y), irb_num(&r->b, alpha)};
    return irb_op(&r->b, OP_ADD, 3, a);
}

/* An optimizer state: a param of p's shape (or 0-d), zeros; f32, or f64
 * for an f64 param (torch.optim keeps states in the param's dtype). */
static Value *state(Tr *r, const char *name, const Value *like) {
    Value *v = value_new(r->g, OP_PARAM, r->b.loc);
    v->name = name;
    v->dtype = like && like->dtype == DT_F64 ? DT_F64 : DT_F32;
    if (like) set_shape(v, like->shape, like->ndim);
    v->init.kind = INIT_ZEROS;
    v->optim_state = true;
    graph_append(r->g, v);
    return v;
}

static void output(Tr *r, Value *v, const char *name, Value *updates) {
    if (r->skip && updates) { /* a skipped step leaves every param and state as it was */
        Arg a[3] = {irb_t(&r->b, r->skip), irb_t(&r->b, updates), irb_t(&r->b, v)};
        v = irb_op(&r->b, OP_WHERE, 3, a);
        if (!v) return;
    }
    if (v->name || v->op == OP_PARAM || v->is_output) {
        Arg a[1] = {irb_t(&r->b, v)};
        v = irb_op(&r->b, OP_ALIAS, 1, a);
        if (!v) return;
    }
    v->name = name;
    v->is_output = true;
    v->updates = updates;
    ARENA_PUSH(r->g->arena, r->g->outputs, r->g->noutputs, r->g->cap_outputs, v);
}

static const char *named(Tr *r, const Value *p, const char *suffix) {
    return arena_printf(r->g->arena, "%s%s", p->name, suffix);
}

static void sgd(Tr *r, Value *p, Value *grad) {
    const TrainSpec *t = r->t;
    Value *d = grad;
    if (t->weight_decay != 0) d = add_scaled(r, d, p, t->weight_decay);
    if (t->momentum != 0) {
        Value *buf = state(r, named(r, p, ".momentum_buffer"), p);
        d = add_scaled(r, B(r, OP_MUL, buf, S(r, t->momentum)), d, 1.0);
        if (d) output(r, d, named(r, buf, "@next"), buf);
    }
    Value *next = add_scaled(r, p, d, -t->lr);
    if (next) output(r, next, named(r, p, "@next"), p);
}

/* The step count and the two bias-correction factors of this step. */
typedef struct AdamStep {
    Value *step_size; /* lr / (1 - beta1^t), f32 */
    Value *bc2_sqrt;  /* sqrt(1 - beta2^t), f32 */
    /* the same in f64, for f64 params (PyTorch's Python floats applied to
     * f64 tensors: no rounding to f32) */
    Value *step_size64, *bc2_sqrt64;
} AdamStep;

static AdamStep adam_step(Tr *r) {
    const TrainSpec *t = r->t;
    Value *step = state(r, "__step", NULL);
    Value *next = B(r, OP_ADD, step, S(r, 1));
    if (next) output(r, next, "__step@next", step);
    Value *t64 = irb_to(&r->b, next, DT_F64);
    Value *bc1 =
        B(r, OP_SUB, S(r, 1), irb_unary(&r->b, OP_EXP, B(r, OP_MUL, t64, S(r, log(t->beta1)))));
    Value *bc2 =
        B(r, OP_SUB, S(r, 1), irb_unary(&r->b, OP_EXP, B(r, OP_MUL, t64, S(r, log(t->beta2)))));
    Value *step_size = B(r, OP_DIV, S(r, t->lr), bc1), *bc2_sqrt = irb_unary(&r->b, OP_SQRT, bc2);
    AdamStep s = {
        .step_size = irb_to(&r->b, step_size, DT_F32),
        .bc2_sqrt = irb_to(&r->b, bc2_sqrt, DT_F32),
        .step_size64 = step_size,
        .bc2_sqrt64 = bc2_sqrt,
    };
    return s;
}

static void adamw(Tr *r, const AdamStep *s, Value *p, Value *grad) {
    const TrainSpec *t = r->t;
    Value *m = state(r, named(r, p, ".exp_avg"), p), *v = state(r, named(r, p, ".exp_avg_sq"), p);
    Value *p1 = t->weight_decay != 0 ? B(r, OP_MUL, p, S(r, 1 - t->lr * t->weight_decay)) : p;
    Value *m1 = add_scaled(r, B(r, OP_MUL, m, S(r, t->beta1)), grad, 1 - t->beta1);
    Value *v1 =
        add_scaled(r, B(r, OP_MUL, v, S(r, t->beta2)), B(r, OP_MUL, grad, grad), 1 - t->beta2);
    bool f64 = p->dtype == DT_F64;
    Value *denom =
        B(r, OP_ADD, B(r, OP_DIV, irb_unary(&r->b, OP_SQRT, v1), f64 ? s->bc2_sqrt64 : s->bc2_sqrt),
          S(r, t->eps));
    Value *next = B(r, OP_SUB, p1,
                    B(r, OP_MUL, f64 ? s->step_size64 : s->step_size, B(r, OP_DIV, m1, denom)));
    if (!m1 || !v1 || !next) return;
    output(r, m1, named(r, m, "@next"), m);
    output(r, v1, named(r, v, "@next"), v);
    output(r, next, named(r, p, "@next"), p);
}

/* Whether every element of x is finite (0-d bool): x - x is 0 for finite
 * x and NaN for inf and NaN. */
static Value *all_finite(Tr *r, Value *x) {
    return irb_unary(&r->b, OP_ALL, B(r, OP_EQ, B(r, OP_SUB, x, x), S(r, 0)));
}

/* GradScaler: the gradients times 1/scale; skip = some gradient is inf or
 * NaN; the scale halves on a skipped step and doubles after 2000 good ones
 * in a row (torch's _amp_update_scale_). */
static void unscale(Tr *r, GradSet *gs) {
    Value *inv = irb_to(&r->b, B(r, OP_DIV, S(r, 1), irb_to(&r->b, gs->scale, DT_F64)), DT_F32);
    Value *finite = NULL;
    for (int i = 0; i < gs->n; i++) {
        Value *g = B(r, OP_MUL, irb_to(&r->b, gs->grads[i], DT_F32), inv);
        gs->grads[i] = g;
        Value *ok = all_finite(r, g);
        finite = finite ? B(r, OP_LOGICAL_AND, finite, ok) : ok;
    }
    Value *skip = B(r, OP_LOGICAL_OR, r->skip, irb_unary(&r->b, OP_LOGICAL_NOT, finite));
    r->skip = NULL; /* the scale's own update is not guarded by the skip */
    Value *tracker = state(r, "__growth_tracker", NULL);
    Value *count = B(r, OP_ADD, tracker, S(r, 1));
    Value *grow = B(r, OP_GE, count, S(r, 2000));
    Value *z = S(r, 0);
    Arg ta[3] = {irb_t(&r->b, grow), irb_t(&r->b, z), irb_t(&r->b, count)};
    Value *kept = irb_op(&r->b, OP_WHERE, 3, ta);
    Arg tb[3] = {irb_t(&r->b, skip), irb_t(&r->b, z), irb_t(&r->b, kept)};
    Value *next_tracker = irb_op(&r->b, OP_WHERE, 3, tb);
    Arg sa[3] = {irb_t(&r->b, grow), irb_t(&r->b, B(r, OP_MUL, gs->scale, S(r, 2))),
                 irb_t(&r->b, gs->scale)};
    Value *grown = irb_op(&r->b, OP_WHERE, 3, sa);
    Arg sb[3] = {irb_t(&r->b, skip), irb_t(&r->b, B(r, OP_MUL, gs->scale, S(r, 0.5))),
                 irb_t(&r->b, grown)};
    Value *next_scale = irb_op(&r->b, OP_WHERE, 3, sb);
    if (!next_tracker || !next_scale) return;
    output(r, next_tracker, "__growth_tracker@next", tracker);
    output(r, next_scale, "__loss_scale@next", gs->scale);
    r->skip = skip; /* from here on, every update is guarded */
}

bool pass_train(Graph *g, Diag *d, const TrainSpec *t) {
    TrainModeUpdates up;
    if (!pass_train_mode(g, d, true, t->attn_dropout_written, &up)) return false;
    pass_attention_fuse_train(g); /* attention written out: the O(seq) gradient */
    GradSet gs;
    if (!pass_grad(g, d, t, &gs)) return false;
    InferCtx ic = {.g = g, .d = d};
    Tr r = {.g = g, .b = irb_init(&ic, gs.loss->loc), .t = t};
    if (t->optim == OPTIM_NONE) {
        for (int i = 0; i < gs.n; i++)
            output(&r, gs.grads[i], named(&r, gs.params[i], ".grad"), NULL);
        return !d->errors;
    }
    g->train_loss = gs.loss;
    g->optimizer = optim_name(t->optim);
    /* A step whose loss is NaN or infinite leaves every param and state as
     * it was (the runtime then stops with the step's number), so updates
     * may be written over their params. */
    r.skip = irb_unary(&r.b, OP_LOGICAL_NOT, all_finite(&r, gs.loss));
    if (gs.scale) unscale(&r, &gs);
    /* batch norm's running statistics, dropout's step: guarded like the
     * optimizer's states */
    for (int i = 0; i < up.n; i++)
        output(&r, up.u[i].next, named(&r, up.u[i].param, "@next"), up.u[i].param);
    AdamStep s = {0};
    if (t->optim == OPTIM_ADAMW) s = adam_step(&r);
    for (int i = 0; i < gs.n && !d->errors; i++) {
        /* f64 params train in f64 (states too), as torch.optim does for a
         * model in .double(); every other param is trained in f32. */
        bool f64 = gs.params[i]->dtype == DT_F64 && !gs.scale;
        Value *grad = irb_to(&r.b, gs.grads[i], f64 ? DT_F64 : DT_F32);
        if (grad && !grad->grad_of && grad->op != OP_PARAM) grad->grad_of = gs.params[i];
        if (gs.params[i]->dtype != DT_F32 && !f64) {
            diag_error(d, gs.params[i]->loc,
                       "--train: param '%s' is %s; training keeps params in f32 or f64 (use "
                       "--precision mixed-bf16 or mixed-f16 for low-precision compute)",
                       gs.params[i]->name, dtype_name(gs.params[i]->dtype));
            return false;
        }
        if (t->optim == OPTIM_SGD)
            sgd(&r, gs.params[i], grad);
        else
            adamw(&r, &s, gs.params[i], grad);
    }
    return !d->errors && pass_checkpoint(g, d, t);
}
