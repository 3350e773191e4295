/* Convolution epilogues: what follows a convolution and can run inside its
 * library call does.
 *
 * Requires: a checked graph with layouts (after tgc_frontend; `tgc show`
 * prints the graph before this pass, so it still shows the unfolded ops).
 * Gives: on each conv, a ConvEpilogue (ir/conv.h):
 *  - a batch_norm whose statistics and affine params are params, applied to
 *    the conv's result (ir/lower_nn.c writes it as x * alpha + beta and
 *    keeps a BatchNormOf on the last node), is folded into the conv's
 *    weights and bias when the context prepares them;
 *  - then f32 activations and the addition of a dense tensor of the
 *    result's shape computed before the conv (a residual) become oneDNN
 *    post-ops.
 * A chain link is taken only when the conv's value (or the previous link)
 * has that one user and is not an output. The last node of the chain
 * becomes an alias of the conv, which gets the added tensors as operands
 * (so they stay live until it runs); the rest of the chain is removed. */
#include <string.h>

#include "ir/conv.h"
#include "passes/pipeline.h"

static bool is_param(const Value *v) {
    return !v || (v->op == OP_PARAM && v->storage == v);
}

static bool post_activation(const Value *u, ConvPost *p) {
    memset(p, 0, sizeof *p);
    p->op = u->op;
    switch (u->op) {
    case OP_RELU:
    case OP_RELU6:
    case OP_HARDSWISH:
    case OP_HARDSIGMOID:
    case OP_SIGMOID:
    case OP_TANH:
    case OP_SILU:
    case OP_MISH: return true;
    case OP_GELU: p->alpha = !strcmp(u->args[1].s, "tanh"); return true;
    case OP_LEAKY_RELU:
    case OP_ELU: p->alpha = u->args[1].f; return true;
    case OP_HARDTANH: p->alpha = u->args[1].f, p->beta = u->args[2].f; return p->alpha <= p->beta;
    default: return false;
    }
}

typedef struct Users {
    int *count;
    Value **last;
} Users;

static Value *only_user(const Users *us, const Value *v) {
    if (v->is_output || us->count[v->order] != 1) return NULL;
    Value *u = us->last[v->order];
    return u && !u->dead ? u : NULL;
}

/* A lowered batch_norm reading v: v -> mul(v, alpha) -> add(., beta). */
static Value *bn_of(const Users *us, const Value *v) {
    Value *m = only_user(us, v);
    if (!m || m->op != OP_MUL || m->in[0] != v) return NULL;
    Value *u = only_user(us, m);
    if (!u || !u->bn || u->bn->x != v) return NULL;
    const BatchNormOf *bn = u->bn;
    if (!is_param(bn->mean) || !is_param(bn->var) || !is_param(bn->weight) || !is_param(bn->bias))
        return NULL;
    return u;
}

/* x * sigmoid(x) on v, as ONNX exports SiLU (Sigmoid, then Mul with the
 * sigmoid's input): v's two users are the sigmoid and the product, the
 * sigmoid's one user the product. Returns the product, NULL otherwise. */
static Value *silu_of(const Users *us, const Value *v) {
    if (v->is_output || us->count[v->order] != 2) return NULL;
    Value *m = us->last[v->order];
    if (!m || m->dead || m->op != OP_MUL || m->nin != 2 || m->dtype != v->dtype ||
        !value_same_shape(m, v))
        return NULL;
    Value *s = m->in[0] == v ? m->in[1] : m->in[1] == v ? m->in[0] : NULL;
    if (!s || s->op != OP_SIGMOID || s->nin != 1 || s->in[0] != v || s->dtype != v->dtype)
        return NULL;
    return only_user(us, s) == m ? m : NULL;
}

static void add_operand(Graph *g, Value *c, Value *t) {
    Arg *args = ARENA_ARRAY(g->arena, Arg, c->nargs + 1);
    memcpy(args, c->args, sizeof(Arg) * (size_t)c->nargs);
    args[c->nargs] = arg_tensor(t, c->loc);
    c->args = args;
    c->nargs++;
    value_collect_inputs(g, c);
}

static void fuse(Graph *g, Users *us, Value *c) {
    ConvEpilogue *e = ARENA_NEW(g->arena, ConvEpilogue);
    Value *cur = c;
    bool f32 = c->dtype == DT_F32;
    /* A training step updates the batch norm's params: nothing is folded. */
    if ((c->dtype == DT_F32 || c->dtype == DT_F64) && !g->train_loss) {
        Value *u = bn_of(us, c);
        if (u) {
            e->bn = u->bn;
            cur = u;
        }
    }
    while (f32 && e->npost < CONV_MAX_POST) {
        Value *u = only_user(us, cur);
        if (u && u->dtype != c->dtype) break;
        if (!u) {
            Value *m = silu_of(us, cur);
            if (!m) break;
            e->post[e->npost++] = (ConvPost){.op = OP_SILU};
            cur = m;
            continue;
        }
        ConvPost p;
        if (u->nin >= 1 && u->in[0] == cur && post_activation(u, &p)) {
            e->post[e->npost++] = p;
            cur = u;
            continue;
        }
        if (u->op != OP_ADD || u->nin != 2 || (u->args[2].kind == ARG_NUM && u->args[2].f != 1))
            break;
        Value *o = u->in[0] == cur ? u->in[1] : u->in[0];
        if (o == cur || o->dtype != c->dtype || !value_same_shape(o, c) ||
            !layout_is_contiguous(o) || o->storage->order > c->order || o->storage->dead)
            break;
        e->post[e->npost++] = (ConvPost){.op = OP_ADD, .other = o};
        cur = u;
    }
    if (cur == c) return;
    c->conv_epi = e;
    for (int i = 0; i < e->npost; i++)
        if (e->post[i].other) add_operand(g, c, (Value *)e->post[i].other);
    if (e->bn) {
        Value *bp[4] = {e->bn->mean, e->bn->var, e->bn->weight, e->bn->bias};
        for (int i = 0; i < 4; i++)
            if (bp[i]) add_operand(g, c, bp[i]);
    }
    /* The chain's last node now reads the conv's result as it is. */
    cur->op = OP_ALIAS;
    cur->args = ARENA_ARRAY(g->arena, Arg, 1);
    cur->args[0] = arg_tensor(c, cur->loc);
    cur->nargs = 1;
    cur->bn = NULL;
    value_collect_inputs(g, cur);
    cur->is_view = true;
    cur->storage = c->storage;
    cur->offset = c->offset;
    memcpy(cur->strides, c->strides, sizeof cur->strides);
    /* Views of the old owner now view the conv's storage: both are dense
     * with the same shape, so their offsets and strides still hold. */
    for (int i = 0; i < g->nvalues; i++)
        if (g->values[i]->storage == cur) g->values[i]->storage = c->storage;
}

void pass_conv_epilogue(Graph *g) {
    int nv = g->nvalues > 0 ? g->nvalues : 1;
    Users us = {ARENA_ARRAY(g->arena, int, nv), ARENA_ARRAY(g->arena, Value *, nv)};
    bool any = false;
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        any |= (op_info(v->op)->flags & OPF_CONV) && !v->dead && !v->conv_epi;
        if (v->dead) continue;
        for (int k = 0; k < v->nin; k++) {
            us.count[v->in[k]->order]++;
            us.last[v->in[k]->order] = v;
        }
    }
    if (!any) return;
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        if ((op_info(v->op)->flags & OPF_CONV) && !v->dead && !v->conv_epi) fuse(g, &us, v);
    }
    Diag quiet;
    diag_init(&quiet, NULL);
    pass_dce(g, &quiet);
}
