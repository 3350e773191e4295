/* The gradient pass: reverse-mode differentiation of a 0-d loss with
 * respect to the trainable params, as IR (see train.h).
 *
 * Values are visited once, in reverse graph order, so each value's
 * adjoint is complete (every consumer has added its contribution) before
 * its own op's vector-Jacobian product (ir/vjp.h) hands it on. A value
 * needs a gradient when it is floating and depends on a trainable param
 * through ops other than detach; only those are visited. */
#include <fnmatch.h>
#include <string.h>

#include "ir/infer.h"
#include "ir/vjp.h"
#include "passes/pass_util.h"
#include "passes/train.h"

/* --freeze takes shell patterns with Python's fnmatch.fnmatchcase meaning:
 * no flags, so `*` crosses the dots of a dotted name ('encoder.layers.*',
 * '*.running_mean'); a plain name matches only itself. */
static bool frozen_by(const char *pattern, const char *name) {
    return fnmatch(pattern, name, 0) == 0;
}

static bool is_trainable(const Value *v, const TrainSpec *t) {
    /* A state (a KV cache) holds what runs wrote, never a weight. */
    if (v->op != OP_PARAM || !dtype_is_float(v->dtype) || v->buffer || v->state) return false;
    for (int i = 0; i < t->nfreeze; i++)
        if (frozen_by(t->freeze[i], v->name)) return false;
    return true;
}

static Value *find_loss(Graph *g, Diag *d, const TrainSpec *t) {
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i]->name && !strcmp(g->outputs[i]->name, t->loss)) {
            Value *l = g->outputs[i];
            if (l->ndim != 0 || !dtype_is_float(l->dtype)) {
                diag_error(d, l->loc,
                           "--train %s: the loss must be a 0-d floating-point output, found %s%s",
                           t->loss, dtype_name(l->dtype), shape_str(g->arena, l->shape, l->ndim));
                return NULL;
            }
            return l;
        }
    char list[512] = "";
    for (int i = 0; i < g->noutputs; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                 value_name(g->arena, g->outputs[i]));
    diag_plain_error(d, "--train: '%s' is not an output of graph '%s' (outputs: %s)", t->loss,
                     g->name ? g->name : "", list);
    return NULL;
}

static bool check_freeze(Graph *g, Diag *d, const TrainSpec *t) {
    bool ok = true;
    for (int k = 0; k < t->nfreeze; k++) {
        bool found = false;
        for (int i = 0; i < g->nvalues && !found; i++)
            found = g->values[i]->op == OP_PARAM && !g->values[i]->state &&
                    frozen_by(t->freeze[k], g->values[i]->name);
        if (!found) {
            diag_plain_error(
                d, "--freeze: '%s' is not a param of graph '%s' and matches none of its params",
                t->freeze[k], g->name ? g->name : "");
            ok = false;
        }
    }
    return ok;
}

/* A contribution brought to its operand's shape and dtype. */
static Value *fit(IrB *b, Value *gx, const Value *x) {
    if (!gx) return NULL;
    if (gx->ndim != x->ndim || memcmp(gx->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim))
        gx = vjp_sum_to(b, gx, x->shape, x->ndim);
    return irb_to(b, gx, x->dtype);
}

/* The first value on a path from p to the loss that stops the gradient. */
static const Value *barrier(const Graph *g, int norig, const Value *p, const bool *reach,
                            const bool *needs, bool *dep) {
    memset(dep, 0, sizeof(bool) * (size_t)norig);
    dep[p->order] = true;
    for (int i = p->order + 1; i < norig; i++) {
        const Value *v = g->values[i];
        for (int k = 0; k < v->nin && !dep[i]; k++)
            dep[i] = v->in[k]->order < norig && dep[v->in[k]->order];
        if (dep[i] && reach[i] && !needs[i]) return v;
    }
    return NULL;
}

/* pass_insert_casts retypes a number literal in place, to the dtype its
 * consumer computes in, so a literal must not be shared by consumers that
 * compute in different dtypes. The rules reuse the forward op's operands,
 * literals included (pow's exponent in `exponent - 1`, which computes in
 * f32 while the forward pow of an f64 tensor computes in f64): each use of
 * a forward literal by a backward node gets its own copy, placed before it. */
static void own_literals(Rewriter *rw, Value *v, void *ctx) {
    int first = *(const int *)ctx;
    if (v->id < first) return;
    for (int i = 0; i < v->nargs; i++) {
        Arg *a = &v->args[i];
        if (a->kind != ARG_TENSOR && a->kind != ARG_TENSORS) continue;
        int n = a->kind == ARG_TENSOR ? 1 : a->n;
        if (a->kind == ARG_TENSORS && n) /* the list may be shared with a forward node */
            a->ts = arena_dup(rw->g->arena, a->ts, sizeof(Value *) * (size_t)n);
        Value **ts = a->kind == ARG_TENSOR ? &a->t : a->ts;
        for (int k = 0; k < n; k++) {
            Value *lit = ts[k];
            if (lit->op != OP_SCALAR || !lit->weak || lit->id >= first) continue;
            Value *c = value_new(rw->g, OP_SCALAR, lit->loc);
            c->weak = true;
            c->dtype = lit->dtype;
            c->scalar = lit->scalar;
            c->scalar_is_int = lit->scalar_is_int;
            rewrite_emit(rw, c);
            ts[k] = c;
        }
    }
}

bool pass_grad(Graph *g, Diag *d, const TrainSpec *t, GradSet *out) {
    memset(out, 0, sizeof *out);
    Value *loss = find_loss(g, d, t);
    if (!loss || !check_freeze(g, d, t)) return false;
    int n = g->nvalues;
    Arena *a = g->arena;
    g->backward_id = g->next_id;
    bool *needs = ARENA_ARRAY(a, bool, n), *reach = ARENA_ARRAY(a, bool, n);
    Value **adj = ARENA_ARRAY(a, Value *, n);
    for (int i = 0; i < n; i++) {
        Value *v = g->values[i];
        if (v->op == OP_PARAM) {
            needs[i] = is_trainable(v, t);
        } else if (!(op_info(v->op)->flags & OPF_LEAF) && v->op != OP_DETACH && !v->ntuple &&
                   dtype_is_float(v->dtype)) {
            for (int k = 0; k < v->nin && !needs[i]; k++)
                needs[i] = needs[v->in[k]->order];
        }
    }
    /* What the loss depends on, not counting through detach: a param reached
     * only through detach gets no gradient (torch leaves its .grad None),
     * rather than an error at the detach. */
    reach[loss->order] = true;
    for (int i = loss->order; i >= 0; i--)
        if (reach[i] && g->values[i]->op != OP_DETACH)
            for (int k = 0; k < g->values[i]->nin; k++)
                reach[g->values[i]->in[k]->order] = true;

    InferCtx ic = {.g = g, .d = d};
    if (needs[loss->order]) {
        IrB b = irb_init(&ic, loss->loc);
        if (t->loss_scaling) {
            /* d(scale * loss) = scale: the gradients come out scaled */
            Value *s = value_new(g, OP_PARAM, loss->loc);
            s->name = "__loss_scale";
            s->dtype = DT_F32;
            s->init = (ParamInit){.kind = INIT_FULL, .a = 65536.0};
            s->optim_state = true;
            graph_append(g, s);
            out->scale = s;
            adj[loss->order] = irb_to(&b, s, loss->dtype);
        } else {
            adj[loss->order] = irb_full(&b, NULL, 0, 1.0, loss->dtype);
        }
    }
    for (int i = loss->order; i >= 0 && !d->errors; i--) {
        Value *v = g->values[i];
        if (!adj[i] || !needs[i] || v->op == OP_PARAM) continue;
        VjpFn vjp = op_info(v->op)->vjp;
        if (!vjp) {
            diag_error(d, v->loc,
                       "cannot differentiate %s: the gradient of '%s' must flow through it to "
                       "reach a trainable param",
                       op_display_name(v), t->loss);
            return false;
        }
        bool *in_needs = ARENA_ARRAY(a, bool, v->nin ? v->nin : 1);
        Value **gx = ARENA_ARRAY(a, Value *, v->nin ? v->nin : 1);
        for (int k = 0; k < v->nin; k++)
            in_needs[k] = needs[v->in[k]->order];
        VjpCtx vc = {.b = irb_init(&ic, v->loc), .needs = in_needs};
        if (!vjp(&vc, v, adj[i], gx) || d->errors) return false;
        for (int k = 0; k < v->nin; k++) {
            Value *x = v->in[k];
            Value *c = in_needs[k] ? fit(&vc.b, gx[k], x) : NULL;
            if (!c) continue;
            Value *prev = adj[x->order];
            adj[x->order] = prev ? irb_binary(&vc.b, OP_ADD, prev, c) : c;
            if (!adj[x->order]) return false;
        }
    }
    if (d->errors) return false;

    out->loss = loss; /* (out->scale set above) */
    out->params = ARENA_ARRAY(a, Value *, n);
    out->grads = ARENA_ARRAY(a, Value *, n);
    bool *dep = ARENA_ARRAY(a, bool, n);
    for (int i = 0; i < n; i++) {
        Value *p = g->values[i];
        if (p->op != OP_PARAM || !needs[i] || !reach[i]) continue;
        if (!adj[i]) {
            const Value *bar = barrier(g, n, p, reach, needs, dep);
            SrcLoc at = bar ? bar->loc : p->loc;
            diag_error(d, at,
                       "cannot differentiate %s: the gradient of '%s' with respect to '%s' "
                       "must flow through it, and its result (%s) has no derivative",
                       bar ? op_display_name(bar) : "the graph", t->loss, p->name,
                       bar ? dtype_name(bar->dtype) : "?");
            return false;
        }
        out->params[out->n] = p;
        out->grads[out->n++] = adj[i];
    }
    if (!out->n) {
        diag_error(d, loss->loc, "--train %s: the loss depends on no trainable param", t->loss);
        return false;
    }
    rewrite_graph(g, own_literals, &g->backward_id);
    return true;
}
