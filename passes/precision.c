/* Precision policies (see precision.h, docs/precision.md).
 *
 * Uniform policies (f32, f16, bf16) give every floating value the policy's
 * dtype: params, activations, creation ops and explicit float casts; float
 * inputs are cast to it where they are used. Mixed policies follow PyTorch
 * autocast: ops flagged OPF_AMP_LOW in ir/ops.def (matrix products) cast
 * their float operands to the low dtype, ops flagged OPF_AMP_F32 (softmax,
 * norms, reductions, exp/log/pow...) cast them to f32, and every other op
 * runs in the widest dtype of its operands. Params are stored in the low
 * dtype under both kinds: that is the memory the policy is chosen for.
 * Outputs get a cast back to their declared dtype. */
#include "passes/precision.h"

#include <string.h>

#include "ir/infer.h"
#include "passes/pass_util.h"
#include "passes/pipeline.h"

bool precision_parse(const char *s, Precision *out) {
    if (!strcmp(s, "mixed-f16")) return *out = PREC_MIXED_F16, true;
    if (!strcmp(s, "mixed-bf16")) return *out = PREC_MIXED_BF16, true;
    switch (dtype_from_name(s)) {
    case DT_F32: *out = PREC_F32; return true;
    case DT_F16: *out = PREC_F16; return true;
    case DT_BF16: *out = PREC_BF16; return true;
    default: return false;
    }
}

const char *precision_name(Precision p) {
    switch (p) {
    case PREC_F32: return "f32";
    case PREC_F16: return "f16";
    case PREC_BF16: return "bf16";
    case PREC_MIXED_F16: return "mixed-f16";
    case PREC_MIXED_BF16: return "mixed-bf16";
    default: return "declared";
    }
}

DType precision_low_dtype(Precision p) {
    switch (p) {
    case PREC_F32: return DT_F32;
    case PREC_F16:
    case PREC_MIXED_F16: return DT_F16;
    case PREC_BF16:
    case PREC_MIXED_BF16: return DT_BF16;
    default: return DT_NONE;
    }
}

bool precision_is_mixed(Precision p) {
    return p == PREC_MIXED_F16 || p == PREC_MIXED_BF16;
}

int64_t precision_group(const PrecisionPolicy *pol, int64_t k) {
    int64_t g = pol->group_size > 0 ? pol->group_size : pol->quant_bits == 4 ? 128 : k;
    return g < k ? g : k > 0 ? k : 1;
}

DType *precision_storage_dtypes(Arena *a, const Graph *g) {
    DType *dt = ARENA_ARRAY(a, DType, g->nvalues > 0 ? g->nvalues : 1);
    for (int i = 0; i < g->nvalues; i++) {
        TGC_ASSERT(g->values[i]->order == i);
        dt[i] = g->values[i]->dtype;
    }
    return dt;
}

typedef struct {
    const PrecisionPolicy *pol;
    DType low;
    InferCtx ic;
    int nmemo;
    Value **memo_low, **memo_f32; /* by Value.id: the one cast of a value to low / f32 */
    Value **subst;                /* by Value.id: the value that replaces it for later uses */
} PolicyCtx;

/* One cast per value and dtype, placed before its first use. */
static Value *cast_value(Rewriter *rw, PolicyCtx *pc, Value *x, DType t, SrcLoc loc,
                         const char *why) {
    if (x->op == OP_SCALAR && x->weak) return x; /* weak literals follow the other operand */
    Value **memo = x->id < pc->nmemo ? (t == DT_F32    ? pc->memo_f32
                                        : t == pc->low ? pc->memo_low
                                                       : NULL)
                                     : NULL;
    if (memo && memo[x->id]) return memo[x->id];
    Value *c = cast_node(rw->g, x, t, loc, why);
    rewrite_emit(rw, c);
    if (memo) memo[x->id] = c;
    return c;
}

/* The widest floating dtype among v's float tensor operands (PyTorch's
 * promotion within the float category: f16 with bf16 gives f32). */
static DType widest_float(const Value *v) {
    DType w = DT_NONE;
    for (int k = 0; k < v->nin; k++) {
        DType t = v->in[k]->dtype;
        if (!dtype_is_float(t) || (v->in[k]->op == OP_SCALAR && v->in[k]->weak)) continue;
        if (w == DT_NONE || w == t)
            w = t;
        else if (w == DT_F64 || t == DT_F64)
            w = DT_F64;
        else
            w = DT_F32;
    }
    return w;
}

/* Casts each float tensor operand of v whose dtype is not t to t. */
static void cast_float_operands(Rewriter *rw, PolicyCtx *pc, Value *v, DType t, const char *why) {
    for (int k = 0; k < v->nargs; k++) {
        Arg *a = &v->args[k];
        if (a->kind == ARG_TENSOR && dtype_is_float(a->t->dtype) && a->t->dtype != t)
            a->t = cast_value(rw, pc, a->t, t, a->loc, why);
        if (a->kind == ARG_TENSORS)
            for (int i = 0; i < a->n; i++)
                if (dtype_is_float(a->ts[i]->dtype) && a->ts[i]->dtype != t)
                    a->ts[i] = cast_value(rw, pc, a->ts[i], t, a->loc, why);
    }
    value_collect_inputs(rw->g, v);
}

/* The index of v's dtype parameter in the op's signature, or -1. */
static int dtype_param(const Value *v) {
    const OpInfo *info = op_info(v->op);
    for (int k = 0; k < info->nparams && k < v->nargs; k++)
        if (info->params[k].type == PT_DTYPE) return k;
    return -1;
}

static void apply_policy(Rewriter *rw, Value *v, void *ctx) {
    PolicyCtx *c = ctx;
    Precision p = c->pol->prec;
    bool mixed = precision_is_mixed(p);
    for (int k = 0; k < v->nargs; k++) {
        Arg *a = &v->args[k];
        if (a->kind == ARG_TENSOR && a->t->id < c->nmemo && c->subst[a->t->id])
            a->t = c->subst[a->t->id];
        for (int i = 0; a->kind == ARG_TENSORS && i < a->n; i++)
            if (a->ts[i]->id < c->nmemo && c->subst[a->ts[i]->id])
                a->ts[i] = c->subst[a->ts[i]->id];
    }
    if (v->op == OP_SCALAR || v->ntuple) return; /* tuple elements are rewritten on their own */
    if (v->op == OP_INPUT) {
        if (dtype_is_float(v->dtype) && c->pol->io != DT_NONE) v->dtype = c->pol->io;
        return;
    }
    if (v->op == OP_PARAM) {
        /* A training step keeps f32 master weights and optimizer states;
         * the products cast them at use, as autocast does. */
        if (dtype_is_float(v->dtype) && !(mixed && rw->g->train_loss)) v->dtype = c->low;
        return;
    }
    unsigned flags = op_info(v->op)->flags;
    if (!mixed) {
        cast_float_operands(rw, c, v, c->low, "precision policy");
    } else if (flags & OPF_AMP_LOW) {
        cast_float_operands(rw, c, v, c->low, "autocast: matrix product in the low dtype");
    } else if (flags & OPF_AMP_F32) {
        cast_float_operands(rw, c, v, DT_F32, "autocast: computed in f32");
    } else if (v->op == OP_SLICE_SCATTER) {
        /* src is written into input as input's dtype (copy_ converts): a
         * state keeps its storage, so its update stays in place. */
        cast_float_operands(rw, c, v, v->args[0].t->dtype, "autocast: written in input's dtype");
    } else if (!(flags & OPF_ELEMENTWISE)) {
        /* Elementwise ops and cat promote by themselves (insert_casts.c). */
        DType w = widest_float(v);
        if (w != DT_NONE) cast_float_operands(rw, c, v, w, "autocast: widest operand dtype");
    }
    int dp = dtype_param(v);
    if (!mixed && dp >= 0 && v->args[dp].kind == ARG_DTYPE && dtype_is_float(v->args[dp].dt))
        v->args[dp].dt = c->low;
    if (!value_infer(&c->ic, v)) return;
    /* A float-valued creation op with its default dtype, under a uniform policy. */
    if (!mixed && dtype_is_float(v->dtype) && v->dtype != c->low && dp >= 0 &&
        v->args[dp].kind == ARG_ABSENT) {
        v->args[dp] = arg_dtype(c->low, v->loc);
        value_infer(&c->ic, v);
    }
    /* A float made from integers only (true division, exp of an int...):
     * computed in f32 as PyTorch does, then stored in the policy's dtype,
     * the cast taking over the value's name and uses. */
    if (!mixed && dtype_is_float(v->dtype) && v->dtype != c->low && v->id < c->nmemo) {
        rewrite_emit_self(rw, v);
        Value *cv = cast_node(rw->g, v, c->low, v->loc, "precision policy");
        rewrite_emit(rw, cv);
        cv->name = v->name;
        cv->is_output = v->is_output;
        v->name = NULL;
        v->is_output = false;
        c->subst[v->id] = cv;
    }
}

void pass_precision(Graph *g, Diag *d, const PrecisionPolicy *pol) {
    if (!pol || pol->prec == PREC_DECLARED) {
        if (!pol || pol->io == DT_NONE) return;
    }
    DType *declared = ARENA_ARRAY(g->arena, DType, g->noutputs > 0 ? g->noutputs : 1);
    for (int i = 0; i < g->noutputs; i++)
        declared[i] = g->outputs[i]->dtype;
    PolicyCtx c = {.pol = pol, .low = precision_low_dtype(pol->prec), .ic = {.g = g, .d = d}};
    c.nmemo = g->next_id;
    c.memo_low = ARENA_ARRAY(g->arena, Value *, c.nmemo + 1);
    c.memo_f32 = ARENA_ARRAY(g->arena, Value *, c.nmemo + 1);
    c.subst = ARENA_ARRAY(g->arena, Value *, c.nmemo + 1);
    if (pol->prec != PREC_DECLARED) rewrite_graph(g, apply_policy, &c);
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i]->id < c.nmemo && c.subst[g->outputs[i]->id])
            g->outputs[i] = c.subst[g->outputs[i]->id];
    /* Outputs: back to the declared dtype (or --precision-io's), by a cast
     * placed right after the value and taking over its name. */
    Value **old = g->values;
    int n = g->nvalues;
    /* The outputs each value is, as chains indexed by value id (a graph may
     * have thousands of outputs: no scan of them per value). */
    int nids = g->next_id; /* casts made below get later ids */
    int *first_out = ARENA_ARRAY(g->arena, int, nids + 1);
    int *next_out = ARENA_ARRAY(g->arena, int, g->noutputs > 0 ? g->noutputs : 1);
    for (int i = 0; i <= nids; i++)
        first_out[i] = -1;
    for (int k = g->noutputs - 1; k >= 0; k--) {
        int id = g->outputs[k]->id;
        next_out[k] = first_out[id];
        first_out[id] = k;
    }
    g->values = NULL;
    g->nvalues = g->cap_values = 0;
    for (int i = 0; i < n; i++) {
        Value *o = old[i];
        o->order = g->nvalues;
        ARENA_PUSH(g->arena, g->values, g->nvalues, g->cap_values, o);
        for (int k = o->id < nids ? first_out[o->id] : -1; k >= 0; k = next_out[k]) {
            if (g->outputs[k] != o) continue;
            DType want = declared[k];
            if (dtype_is_float(want) && pol->io != DT_NONE) want = pol->io;
            /* A param or input output keeps its name: the weights file and
             * the interface find it by that name. */
            if (o->dtype == want || !dtype_is_float(o->dtype) || o->op == OP_PARAM ||
                o->op == OP_INPUT)
                continue;
            Value *cv = cast_node(g, o, want, o->loc, "output in its declared dtype");
            cv->name = o->name;
            cv->is_output = true;
            o->is_output = false;
            o->name = NULL;
            for (int j = k; j >= 0; j = next_out[j])
                if (g->outputs[j] == o) g->outputs[j] = cv;
            cv->order = g->nvalues;
            ARENA_PUSH(g->arena, g->values, g->nvalues, g->cap_values, cv);
        }
    }
}
