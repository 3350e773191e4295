/* Training-mode ops resolved for the build (see train.h, pass_train_mode):
 * batch_norm(training=true), dropout / dropout1d / dropout2d
 * (training=true) and attention's dropout_p. The front end leaves them
 * as they are written, since only the build says which form they take:
 * the training form under --train, the eval form otherwise (what PyTorch's
 * model.eval() exports). */
#include <string.h>

#include "ir/infer.h"
#include "ir/irbuild.h"
#include "ir/lower_nn.h"
#include "ir/lower_sugar.h"
#include "passes/train.h"

typedef struct Tm {
    Graph *g;
    Diag *d;
    InferCtx ic;
    bool training;
    bool written_attn;  /* attention's dropout written out (--target cuda) */
    Value *seed, *step; /* dropout's key and counter (made at the first dropout) */
    int sites;
    TrainModeUpdates *up;
    Value **all;  /* the graph's values as the pass found them */
    int nall, at; /* all[at] is being rewritten */
    bool *early;  /* all[i] was placed before its turn (a param read before its line) */
} Tm;

static Value *arg_t(Value *v, int i) {
    return v->args[i].kind == ARG_TENSOR ? v->args[i].t : NULL;
}

/* A 0-d i64 state of the step, zeros: the optimizer state saves it. */
static Value *i64_state(Tm *m, const char *name, SrcLoc loc) {
    Value *s = value_new(m->g, OP_PARAM, loc);
    s->name = name;
    s->dtype = DT_I64;
    s->init.kind = INIT_ZEROS;
    s->optim_state = true;
    graph_append(m->g, s);
    return s;
}

/* x + 1 for an i64 count (a plain literal would promote it to f32). */
static Value *plus_one(IrB *b, Value *x) {
    Value *one = irb_scalar(b, 1);
    one->dtype = DT_I64;
    one->scalar_is_int = true;
    Arg alpha = irb_num(b, 1);
    alpha.num_is_int = true;
    Arg a[3] = {irb_t(b, x), irb_t(b, one), alpha};
    return irb_op(b, OP_ADD, 3, a);
}

static void add_update(Tm *m, Value *param, Value *next) {
    TrainModeUpdates *u = m->up;
    if (!u || !next) return;
    TrainModeUpdate x = {param, next};
    ARENA_PUSH(m->g->arena, u->u, u->n, u->cap, x);
}

/* v becomes an alias of r, keeping its identity (its readers, its name,
 * its place among the outputs). */
static void become_alias(Tm *m, Value *v, Value *r, const char *label) {
    v->op = OP_ALIAS;
    v->nargs = 1;
    v->args = ARENA_ARRAY(m->g->arena, Arg, 1);
    v->args[0] = arg_tensor(r, v->loc);
    v->label = label;
    value_collect_inputs(m->g, v);
}

static bool check_running(Tm *m, Value *v, int i) {
    Value *s = arg_t(v, i);
    if (s->op == OP_PARAM) return true;
    diag_error(m->d, v->args[i].loc,
               "batch_norm(training=true): %s must be a param, updated in place each step; "
               "found a computed value",
               i == 1 ? "running_mean" : "running_var");
    return false;
}

/* The running statistic s after the step: (1 - f) * s + f * batch, in
 * ct (the statistics' dtype, f32 for 16-bit ones) as ATen's CPU kernel
 * computes it (f and 1 - f in that precision). */
static Value *running(IrB *b, Value *s, Value *batch, Value *f, Value *one_minus_f, DType ct) {
    Value *r = irb_binary(b, OP_ADD, irb_binary(b, OP_MUL, irb_to(b, batch, ct), f),
                          irb_binary(b, OP_MUL, irb_to(b, s, ct), one_minus_f));
    return irb_to(b, r, s->dtype);
}

static const char *nbt_name(Tm *m, const char *mean_name) {
    size_t n = strlen(mean_name), k = strlen(".running_mean");
    if (n > k && !strcmp(mean_name + n - k, ".running_mean"))
        return arena_printf(m->g->arena, "%.*s.num_batches_tracked", (int)(n - k), mean_name);
    return arena_printf(m->g->arena, "%s.num_batches_tracked", mean_name);
}

/* momentum=None's count of batches: the graph's own param of that name
 * when it declares one (PyTorch's buffer, loaded from a state_dict and
 * saved with the weights), else an optimizer state made here. */
static Value *batches_tracked(Tm *m, Value *v, const char *name) {
    for (int i = 0; i < m->nall; i++) {
        Value *p = m->all[i];
        if (p->op != OP_PARAM || !p->name || strcmp(p->name, name)) continue;
        if (p->ndim != 0 || dtype_is_float(p->dtype) || p->dtype == DT_BOOL) {
            diag_error(m->d, p->loc,
                       "batch_norm(training=true, momentum=None) counts its batches in '%s', "
                       "which must then be a 0-d integer param, found %s%s",
                       name, dtype_name(p->dtype), shape_str(m->g->arena, p->shape, p->ndim));
            return NULL;
        }
        p->buffer = true;
        if (i > m->at && !m->early[i]) { /* declared below: placed before its first reader */
            graph_append(m->g, p);
            m->early[i] = true;
        }
        return p;
    }
    return i64_state(m, name, v->loc);
}

static bool batch_norm(Tm *m, Value *v) {
    IrB b = irb_init(&m->ic, v->loc);
    Value *x = v->args[0].t, *rm = arg_t(v, 1), *rv = arg_t(v, 2), *w = arg_t(v, 3),
          *bias = arg_t(v, 4);
    double eps = v->args[7].f;
    if (rm) rm->buffer = rv->buffer = true;
    Value *r;
    if (!m->training && rm) {
        r = lower_batch_norm_eval(&b, x, rm, rv, w, bias, eps);
    } else {
        BatchStats st;
        r = lower_batch_norm_batch(&b, x, w, bias, eps, &st);
        if (r && rm && m->training) {
            if (!check_running(m, v, 1) || !check_running(m, v, 2)) return false;
            Value *f, *omf;
            DType ct = rm->dtype == DT_F64 ? DT_F64 : DT_F32;
            if (v->args[6].kind == ARG_NUM) {
                double mom = v->args[6].f;
                float mf = (float)mom;
                /* weak literals: they compute in the statistic's dtype */
                f = irb_scalar(&b, ct == DT_F64 ? mom : mf);
                omf = irb_scalar(&b, ct == DT_F64 ? 1 - mom : 1.0f - mf);
            } else { /* momentum=None: the cumulative average, 1 / batches seen */
                Value *nbt = batches_tracked(m, v, nbt_name(m, rm->name));
                if (!nbt) return false;
                Value *next = plus_one(&b, nbt);
                add_update(m, nbt, next);
                f = irb_to(&b, irb_binary(&b, OP_DIV, irb_scalar(&b, 1), irb_to(&b, next, DT_F64)),
                           ct);
                omf = irb_binary(&b, OP_SUB, irb_scalar(&b, 1), f);
            }
            double n = (double)st.count;
            /* the unbiased variance: the sum of squares over n - 1 */
            Value *uv = irb_binary(&b, OP_MUL, st.var, irb_scalar(&b, n / (n - 1)));
            add_update(m, rm, running(&b, rm, st.mean, f, omf, ct));
            add_update(m, rv, running(&b, rv, uv, f, omf, ct));
        }
    }
    if (!r) return false;
    become_alias(m, v, r, "batch_norm");
    return true;
}

/* dropout's key, made at the first dropout */
static void dropout_key(Tm *m, IrB *b) {
    if (m->seed) return;
    m->seed = i64_state(m, "__dropout_seed", b->loc);
    m->step = i64_state(m, "__dropout_step", b->loc);
    add_update(m, m->step, plus_one(b, m->step));
}

static Value *dropout_noise(Tm *m, IrB *b, Value *x, double p, int nmask) {
    dropout_key(m, b);
    Arg a[6] = {irb_t(b, x),   irb_t(b, m->seed),    irb_t(b, m->step),
                irb_num(b, p), irb_i(b, m->sites++), irb_i(b, nmask)};
    return irb_op(b, OP_DROPOUT_APPLY, 6, a);
}

static bool dropout(Tm *m, Value *v) {
    if (!m->training) return true; /* the identity view */
    IrB b = irb_init(&m->ic, v->loc);
    Value *x = v->args[0].t;
    int nmask = v->op == OP_DROPOUT ? x->ndim : x->ndim == (v->op == OP_DROPOUT1D ? 2 : 3) ? 1 : 2;
    if (v->op == OP_DROPOUT2D) nmask = 2; /* 1.13 reads a 3-d input as (N, C, L) */
    Value *r = dropout_noise(m, &b, x, v->args[1].f, nmask);
    if (!r) return false;
    become_alias(m, v, r, op_info(v->op)->name);
    return true;
}

static Value *drop_probs(void *ctx, IrB *b, Value *probs, double p) {
    return dropout_noise(ctx, b, probs, p, probs->ndim);
}

/* Whether x depends on a float param: a float mask that does needs its
 * own gradient, an [..., L, S] tensor only the written-out form makes. */
static bool from_param(Value *x, bool *seen, int nseen) {
    if (x->id < nseen && seen[x->id]) return false;
    if (x->id < nseen) seen[x->id] = true;
    if (x->op == OP_PARAM) return dtype_is_float(x->dtype);
    for (int i = 0; i < x->nin; i++)
        if (from_param(x->in[i], seen, nseen)) return true;
    return false;
}

/* The blockwise kernels' batch is the result's; the written-out form's
 * mask is drawn over the probabilities' [..., L, S], whose batch is q's
 * and k's broadcast: the two agree when that is the result's batch. */
static bool same_batch(const Value *v) {
    const Value *q = v->args[0].t, *k = v->args[1].t;
    int nb = v->ndim - 2;
    for (int d = 0; d < nb; d++) {
        int qd = d - (nb - (q->ndim - 2)), kd = d - (nb - (k->ndim - 2));
        int64_t x = qd >= 0 ? q->shape[qd] : 1, y = kd >= 0 ? k->shape[kd] : 1;
        if ((x > y ? x : y) != v->shape[d]) return false;
    }
    return true;
}

/* dropout_p in a training build as attention_dropout: the blockwise
 * forward and attention_backward apply the mask per tile, the same
 * Philox draws over the same [..., L, S] index as the written-out form's
 * dropout_apply, so no [L, S] tensor is made. NULL where it cannot serve
 * (f64, a float mask that needs a gradient, probabilities whose batch is
 * not the result's, CUDA). */
static Value *attention_dropout(Tm *m, IrB *b, Value *v) {
    const Arg *mask = &v->args[3];
    if (m->written_attn || v->dtype == DT_F64 || !same_batch(v)) return NULL;
    if (mask->kind == ARG_TENSOR && mask->t->dtype != DT_BOOL) {
        int n = m->g->next_id;
        bool *seen = ARENA_ARRAY(m->g->arena, bool, n > 0 ? n : 1);
        if (from_param(mask->t, seen, n)) return NULL;
    }
    dropout_key(m, b);
    Arg a[10];
    for (int i = 0; i < 7; i++)
        a[i] = v->args[i];
    a[7] = irb_t(b, m->seed);
    a[8] = irb_t(b, m->step);
    a[9] = irb_i(b, m->sites++);
    return irb_op(b, OP_SDPA_DROP, 10, a);
}

static bool sdpa(Tm *m, Value *v) {
    /* In eval form dropout_p is not applied: the blockwise kernel, or at
     * f64 the math path the front end leaves to this pass. */
    if (!m->training && v->dtype != DT_F64) return true;
    if (m->training) {
        IrB b = irb_init(&m->ic, v->loc);
        Value *r = attention_dropout(m, &b, v);
        if (r) {
            become_alias(m, v, r, "scaled_dot_product_attention");
            return true;
        }
    }
    Value *r = lower_sdpa_math(&m->ic, v, m->training ? drop_probs : NULL, m);
    if (!r) return false;
    graph_append(m->g, r);
    become_alias(m, v, r, "scaled_dot_product_attention");
    return true;
}

static bool needs(const Value *v) {
    switch (v->op) {
    case OP_BATCH_NORM: return v->args[5].i != 0;
    case OP_DROPOUT:
    case OP_DROPOUT1D:
    case OP_DROPOUT2D: return v->args[2].i != 0;
    case OP_SDPA: return v->args[4].kind == ARG_NUM && v->args[4].f != 0;
    default: return false;
    }
}

bool pass_train_mode(Graph *g, Diag *d, bool training, bool written_attn, TrainModeUpdates *up) {
    Tm m = {.g = g,
            .d = d,
            .ic = {.g = g, .d = d},
            .training = training,
            .written_attn = written_attn,
            .up = up};
    if (up) memset(up, 0, sizeof *up);
    /* eval-form batch norms (lowered by the front end) keep their running
     * statistics out of the optimizer too */
    for (int i = 0; i < g->nvalues; i++) {
        const BatchNormOf *bn = g->values[i]->bn;
        if (bn && bn->mean && bn->mean->op == OP_PARAM) bn->mean->buffer = true;
        if (bn && bn->var && bn->var->op == OP_PARAM) bn->var->buffer = true;
    }
    /* The list is rebuilt so that each rewrite's new nodes come before
     * the node they replace. */
    Value **old = g->values;
    int n = g->nvalues;
    m.all = old;
    m.nall = n;
    m.early = ARENA_ARRAY(g->arena, bool, n > 0 ? n : 1);
    g->values = NULL;
    g->nvalues = g->cap_values = 0;
    bool ok = true;
    for (int i = 0; i < n; i++) {
        Value *v = old[i];
        if (m.early[i]) continue;
        m.at = i;
        if (ok && needs(v)) {
            switch (v->op) {
            case OP_BATCH_NORM: ok = batch_norm(&m, v); break;
            case OP_SDPA: ok = sdpa(&m, v); break;
            default: ok = dropout(&m, v); break;
            }
        }
        graph_append(g, v);
    }
    /* a param updated twice in one step has no one value after it */
    for (int i = 0; ok && up && i < up->n; i++)
        for (int j = 0; j < i; j++)
            if (up->u[i].param == up->u[j].param) {
                diag_error(d, up->u[i].param->loc,
                           "batch_norm(training=true): '%s' is the running statistic of two "
                           "batch_norms; each needs its own",
                           up->u[i].param->name);
                ok = false;
                break;
            }
    return ok && !d->errors;
}
