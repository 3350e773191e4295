/* Attention recognition: attention written out as
 *     softmax(q @ k^T * scale [+ mask | masked_fill | where], dim=-1) @ v
 * becomes one scaled_dot_product_attention node, whose blockwise kernel
 * (runtime/attention.c) never stores the [..., L, S] scores.
 *
 * Requires: a checked graph with layouts (after tgc_frontend: casts and
 * broadcast expands explicit, views folded). It runs in the code
 * generators' planning (pipeline_plan), so `tgc show` still prints the
 * graph as written; in a training build it runs first before the gradient
 * pass (pass_attention_fuse_train, from pass_train), since afterwards the
 * probabilities have the backward as a second reader and the gradient of
 * the written-out form stores them; on --target cuda the scratch function says 0 wherever
 * the flash kernel can run (codegen/cuda/cu_attention.c). Gives: the final product node
 * rewritten in place into the attention op (its name, storage and layout
 * kept), at most two views or masks placed just before it; the scores,
 * scaled and masked scores and probabilities lose their only use and leave
 * the graph (pass_dce).
 *
 * Recognised, each intermediate having exactly one use and not being an
 * output, all of one dtype among f32, f16 and bf16, except for autocast's
 * form (--precision mixed-f16/bf16): softmax in f32 between two casts,
 * cast(softmax(cast(s, f32)), low) with s and the product in the low
 * dtype. The op computes in f32 and rounds once, as it does for a low
 * dtype, so the casts' roundings of the scores and the probabilities drop
 * out with them (PyTorch 2's SDPA under autocast likewise keeps f32
 * inside):
 *  - the product: matmul / bmm of operands with at least 2 dims;
 *  - the key: x.transpose(-2, -1) (any spelling of the last two dims),
 *    .mT, a permute swapping only the last two dims: the key is x; any
 *    other right operand k of shape [..., E, S]: the key is a view k.mT;
 *  - the scale: s * c, c * s, s / c, (q * c) @ k^T with c a number
 *    (products of several multiply); none: scale 1;
 *  - the mask: s.masked_fill(~m, -inf) (bool mask m), s.masked_fill(m,
 *    -inf) (mask ~m), where(m, s, -inf) (m), where(m, -inf, s) (~m), s +
 *    f or f + s with f a tensor of s's dtype (float mask); the masked
 *    value must keep the scores' shape (a mask that widens them is left
 *    alone); m = tril(ones([L, L], dtype=bool)) becomes is_causal=True;
 *  - softmax over the last dim, without dtype=.
 * The op's own inference then checks the rest (batch dims broadcast as in
 * the product); the rewrite is undone when it fails, when the result's
 * shape or dtype differ from the product's, or when the kernel's scratch
 * would exceed one score tensor (saves_memory: short sequences). */
#include <math.h>
#include <string.h>

#include "ir/infer.h"
#include "passes/pipeline.h"
#include "runtime/tgcrt_abi.h" /* RtAttnDesc: the header only, the core does not link the runtime */

typedef struct Match {
    Value *q, *k, *v, *mask;
    Value *k_pre; /* the right operand of q @ k^T when no view drops out */
    bool negate;  /* the mask is the complement of m: a logical_not goes in */
    bool causal;
    double scale;
} Match;

/* A value used once, by the pattern itself: nothing else reads it, so
 * nothing else needs it stored. */
static bool only_use(const int *uses, const Value *x) {
    return uses[x->order] == 1 && !x->is_output && !x->dead && !x->is_view && x->storage == x;
}

/* Sees through the expands that broadcasting inserted (passes/broadcast.c):
 * the attention op broadcasts its operands itself. */
static Value *unexpand(Value *x) {
    while (x->op == OP_EXPAND || x->op == OP_EXPAND_AS)
        x = IN0(x);
    return x;
}

static bool number(Value *x, double *c) {
    x = unexpand(x);
    if (x->op != OP_SCALAR || x->ndim != 0 || !isfinite(x->scalar)) return false;
    *c = x->scalar;
    return true;
}

static bool minus_inf(Value *x) {
    x = unexpand(x);
    return x->op == OP_SCALAR && x->ndim == 0 && isinf(x->scalar) && x->scalar < 0;
}

/* add's alpha (the default, or written) is 1. */
static bool unit_alpha(const Value *x) {
    const Arg *a = x->nargs > 2 ? &x->args[2] : NULL;
    return !a || a->kind == ARG_ABSENT || (a->kind == ARG_NUM && a->f == 1) ||
           (a->kind == ARG_INT && a->i == 1);
}

static bool last_dim(int64_t d, int ndim) {
    return d == ndim - 1 || d == -1;
}

/* x * c or c * x with c a number, x of the product's own shape: x. */
static Value *times_number(const int *uses, Value *m, double *c) {
    if (m->op != OP_MUL || !only_use(uses, m)) return NULL;
    for (int i = 0; i < 2; i++) {
        Value *x = m->args[i].t, *n = m->args[1 - i].t;
        if (value_same_shape(x, m) && x->dtype == m->dtype && number(n, c)) return x;
    }
    return NULL;
}

/* The key under a view that swaps its last two dims, or NULL. */
static Value *untransposed(Value *kt) {
    int n = kt->ndim;
    if (kt->op == OP_TRANSPOSE) {
        int64_t a = kt->args[1].i, b = kt->args[2].i;
        if ((a == n - 2 && b == n - 1) || (a == n - 1 && b == n - 2)) return IN0(kt);
    }
    if (kt->op == OP_PERMUTE) {
        const int64_t *p = kt->args[1].ints;
        for (int i = 0; i < n - 2; i++)
            if (p[i] != i) return NULL;
        if (p[n - 2] == n - 1 && p[n - 1] == n - 2) return IN0(kt);
    }
    return NULL;
}

/* scores [* c | / c] with scores = q @ k^T [q possibly * c]: fills q, k,
 * scale. s must have the masked (or softmax's) input's shape x. */
static bool match_scores(const int *uses, Value *s, const Value *x, Match *m) {
    double c;
    Value *t;
    m->scale = 1.0;
    if (!value_same_shape(s, x) || s->dtype != x->dtype) return false;
    if ((t = times_number(uses, s, &c))) {
        m->scale = c, s = t;
    } else if (s->op == OP_DIV && only_use(uses, s) &&
               (s->nargs < 3 || s->args[2].kind == ARG_ABSENT) &&
               value_same_shape(s->args[0].t, s) && number(s->args[1].t, &c) && c != 0) {
        m->scale = 1.0 / c, s = s->args[0].t;
    }
    if ((s->op != OP_MATMUL && s->op != OP_BMM) || !only_use(uses, s) || s->dtype != x->dtype)
        return false;
    Value *q = s->args[0].t, *kt = s->args[1].t;
    if (q->ndim < 2 || kt->ndim < 2) return false; /* 1-D operands: a vector product */
    if ((t = times_number(uses, q, &c))) m->scale *= c, q = t;
    m->q = q;
    m->k = untransposed(kt);
    m->k_pre = m->k ? NULL : kt;
    return isfinite(m->scale);
}

/* softmax's input x: a mask applied to the scores, or the scores. */
static bool match_masked(const int *uses, Value *x, Match *m) {
    m->mask = NULL, m->negate = false;
    if (x->op == OP_MASKED_FILL && only_use(uses, x) && minus_inf(x->args[2].t)) {
        Value *mk = unexpand(x->args[1].t);
        if (mk->dtype != DT_BOOL) return false;
        if ((mk->op == OP_BITWISE_NOT || mk->op == OP_LOGICAL_NOT) && IN0(mk)->dtype == DT_BOOL)
            m->mask = IN0(mk);
        else
            m->mask = mk, m->negate = true;
        return match_scores(uses, x->args[0].t, x, m);
    }
    if (x->op == OP_WHERE && only_use(uses, x)) {
        Value *cond = unexpand(x->args[0].t);
        if (cond->dtype != DT_BOOL) return false;
        for (int i = 1; i <= 2; i++)
            if (minus_inf(x->args[3 - i].t)) {
                m->mask = cond, m->negate = i == 2;
                return match_scores(uses, x->args[i].t, x, m);
            }
        return false;
    }
    if (x->op == OP_ADD && only_use(uses, x) && unit_alpha(x))
        for (int i = 0; i < 2; i++) {
            Value *f = unexpand(x->args[1 - i].t);
            if (f->op == OP_SCALAR || f->dtype != x->dtype) continue;
            if (match_scores(uses, x->args[i].t, x, m)) {
                m->mask = f;
                return true;
            }
        }
    return match_scores(uses, x, x, m);
}

/* tril(ones([n, n], dtype=bool)) over the scores' [L, S] with L = S:
 * PyTorch's top-left aligned is_causal. */
static bool causal_mask(const Value *m, const Value *scores) {
    int n = scores->ndim;
    if (m->op != OP_TRIL || m->args[1].i != 0 || m->ndim != 2 || m->dtype != DT_BOOL) return false;
    const Value *one = IN0(m);
    if (one->op != OP_ONES || one->dtype != DT_BOOL) return false;
    return m->shape[0] == scores->shape[n - 2] && m->shape[1] == scores->shape[n - 1] &&
           m->shape[0] == m->shape[1];
}

static Value *new_node(Graph *g, OpCode op, SrcLoc loc, int nargs) {
    Value *x = value_new(g, op, loc);
    x->nargs = nargs;
    x->args = ARENA_ARRAY(g->arena, Arg, nargs);
    return x;
}

/* k.mT as a view of k's storage. */
static Value *transposed_view(Graph *g, InferCtx *c, Value *k, SrcLoc loc) {
    Value *t = new_node(g, OP_TRANSPOSE, loc, 3);
    t->args[0] = arg_tensor(k, loc);
    t->args[1] = arg_int(k->ndim - 2, loc);
    t->args[2] = arg_int(k->ndim - 1, loc);
    t->label = "mT";
    if (!value_infer(c, t)) return NULL;
    layout_transpose(t);
    t->storage = k->storage;
    t->is_view = true;
    return t;
}

/* ~m in its own storage (m's shape: the op broadcasts it). */
static Value *complement(Graph *g, InferCtx *c, Value *mk, SrcLoc loc) {
    Value *t = new_node(g, OP_LOGICAL_NOT, loc, 1);
    t->args[0] = arg_tensor(mk, loc);
    if (!value_infer(c, t)) return NULL;
    shape_contiguous_strides(t->shape, t->ndim, t->strides);
    t->offset = 0;
    t->storage = t;
    t->copy_reason = "the complement of an attention mask written with masked_fill(mask, -inf)";
    return t;
}

/* Places the new nodes (NULL ones skipped) just before p in g->values. */
static void insert_before(Graph *g, Value *p, Value **add, int nadd) {
    for (int i = 0; i < nadd; i++)
        if (add[i]) graph_insert(g, add[i], p->order);
}

/* Whether the op saves memory: its kernel's scratch (f32 blocks for up to
 * RT_ATTN_MAX_SLOTS query blocks in flight, planned at the arena's tail)
 * must not exceed one [..., L, S] score tensor x, of which the written-out
 * form keeps at least two live (the product's and softmax's results). At
 * short sequences the scratch is the larger (transformer_block at seq 128:
 * 516 KiB of scratch for 256 KiB of scores), and the graph stays as written. */
static bool saves_memory(const Value *p, const Value *x, const Match *m, AttnScratchFn scratch) {
    static const int64_t RT[] = {[DT_F32] = RT_F32, [DT_F16] = RT_F16, [DT_BF16] = RT_BF16};
    const Value *k = m->k, *v = m->v;
    RtAttnDesc d = {.dtype = RT[p->dtype], .mask_kind = m->mask ? 1 : 0, .causal = m->causal};
    d.l = m->q->shape[m->q->ndim - 2], d.e = m->q->shape[m->q->ndim - 1];
    d.s = k->shape[k->ndim - 2], d.ev = v->shape[v->ndim - 1];
    d.k_rs = k->strides[k->ndim - 2], d.k_cs = k->strides[k->ndim - 1];
    d.v_rs = v->strides[v->ndim - 2], d.v_cs = v->strides[v->ndim - 1];
    d.nbatch = p->ndim - 2;
    memcpy(d.batch, p->shape, sizeof(int64_t) * (size_t)d.nbatch);
    int64_t scores = shape_numel(x->shape, x->ndim) * (int64_t)dtype_size(x->dtype);
    size_t need = scratch(&d); /* SIZE_MAX: the kernel cannot run it */
    return need <= (size_t)scores;
}

/* Rewrites the product p (probabilities @ v) when the pattern matches. */
/* x = cast(y, t) used only here: y, else NULL. */
static Value *uncast(const int *uses, Value *x, DType t) {
    return x->op == OP_CAST && x->dtype == t && only_use(uses, x) ? IN0(x) : NULL;
}

static bool fuse(Graph *g, const int *uses, Value *p, AttnScratchFn scratch) {
    Value *a = p->args[0].t, *low;
    DType dt = p->dtype, sdt = dt; /* sdt: the softmax's dtype */
    if (dt != DT_F32 && dt != DT_F16 && dt != DT_BF16) return false;
    /* autocast: the probabilities are cast down from an f32 softmax */
    if (dt != DT_F32 && (low = uncast(uses, a, dt)) && low->op == OP_SOFTMAX) a = low, sdt = DT_F32;
    if (a->op != OP_SOFTMAX || !only_use(uses, a) || a->args[2].kind != ARG_ABSENT ||
        !last_dim(a->args[1].i, a->ndim) || a->dtype != sdt || p->args[1].t->ndim < 2)
        return false;
    Match m = {.v = p->args[1].t};
    Value *x = IN0(a);
    if (sdt != dt && !(x = uncast(uses, x, DT_F32))) return false; /* and up from the scores */
    if (x->dtype != dt || !match_masked(uses, x, &m)) return false;
    if (m.mask && !m.negate && causal_mask(m.mask, x)) m.causal = true, m.mask = NULL;

    Diag quiet;
    diag_init(&quiet, NULL);
    InferCtx c = {.g = g, .d = &quiet};
    Value *add[2] = {NULL, NULL};
    if (m.k_pre && !(m.k = add[0] = transposed_view(g, &c, m.k_pre, p->loc))) return false;
    if (m.mask && m.negate && !(m.mask = add[1] = complement(g, &c, m.mask, p->loc))) return false;

    Value old = *p;
    Arg *args = ARENA_ARRAY(g->arena, Arg, 7);
    args[0] = arg_tensor(m.q, p->loc);
    args[1] = arg_tensor(m.k, p->loc);
    args[2] = arg_tensor(m.v, p->loc);
    args[3] = m.mask ? arg_tensor(m.mask, p->loc) : (Arg){.kind = ARG_ABSENT, .loc = p->loc};
    args[4] = (Arg){.kind = ARG_NUM, .f = 0.0, .loc = p->loc};
    args[5] = (Arg){.kind = ARG_BOOL, .i = m.causal, .loc = p->loc};
    args[6] = (Arg){.kind = ARG_NUM, .f = m.scale, .loc = p->loc};
    p->op = OP_SDPA;
    p->args = args;
    p->nargs = 7;
    p->label = NULL;
    if (!value_infer(&c, p) || p->dtype != dt || !value_same_shape(p, &old) ||
        p->ndim - 2 > RT_ATTN_MAX_BATCH || !saves_memory(p, x, &m, scratch)) {
        *p = old; /* the op's rules refuse it: the graph stays as written */
        return false;
    }
    insert_before(g, p, add, 2);
    return true;
}

/* Before the gradient pass the target is not known yet: the op is taken
 * wherever both backends' kernels run it, i.e. head dims up to 256 (the
 * CUDA kernel's smallest tiles for E = Ev = 256 take 34 KiB of shared
 * memory, within the 48 KiB that cg_cuda_attention_scratch allows on every
 * architecture; the CPU's have no bound), whatever the length: in a
 * training step the written-out form stores [..., L, S] tensors for the
 * backward, which the op's gradient does not. */
static size_t train_scratch(const RtAttnDesc *d) {
    return d->e <= 256 && d->ev <= 256 ? 0 : SIZE_MAX;
}

void pass_attention_fuse_train(Graph *g) {
    int n = g->nvalues;
    bool *was_dead = ARENA_ARRAY(g->arena, bool, n > 0 ? n : 1);
    Value **old = ARENA_ARRAY(g->arena, Value *, n > 0 ? n : 1);
    for (int i = 0; i < n; i++)
        old[i] = g->values[i], was_dead[i] = g->values[i]->dead;
    pass_attention_fuse(g, train_scratch);
    /* The scores and probabilities the op replaced are dead now; their
     * source names would make the later DCE keep them and warn that no
     * output depends on them, which the user did not write. */
    for (int i = 0; i < n; i++)
        if (old[i]->dead && !was_dead[i] && old[i]->op != OP_INPUT && old[i]->op != OP_PARAM)
            old[i]->name = NULL;
}

void pass_attention_fuse(Graph *g, AttnScratchFn scratch) {
    int nv = g->nvalues > 0 ? g->nvalues : 1;
    int *uses = ARENA_ARRAY(g->arena, int, nv);
    bool any = false;
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        any |= v->op == OP_SOFTMAX && !v->dead;
        if (v->dead) continue;
        for (int k = 0; k < v->nin; k++)
            uses[v->in[k]->order]++;
    }
    if (!any) return;
    bool changed = false;
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        if ((v->op == OP_MATMUL || v->op == OP_BMM) && !v->dead && fuse(g, uses, v, scratch)) {
            changed = true;
            /* Inserted nodes shift the list: recount from scratch. */
            uses = ARENA_ARRAY(g->arena, int, g->nvalues);
            for (int j = 0; j < g->nvalues; j++)
                for (int k = 0; k < g->values[j]->nin; k++)
                    if (!g->values[j]->dead) uses[g->values[j]->in[k]->order]++;
            i = v->order;
        }
    }
    if (!changed) return;
    Diag quiet;
    diag_init(&quiet, NULL);
    pass_dce(g, &quiet);
}
