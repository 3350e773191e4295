/* Dtype promotion made explicit.
 * Requires: inferred dtypes. Gives: every elementwise operand (and each
 * tensor of cat/stack/outer) already in the dtype the op computes in, via
 * inserted cast nodes; number literals are retyped in place, being weak.
 * Comparisons compute in their operands' promoted dtype; where's condition
 * and masked_fill's mask keep theirs. */
#include "ir/infer.h"
#include "passes/pass_util.h"
#include "passes/pipeline.h"

static DType compute_dtype(Value *v) {
    switch (v->op) {
    case OP_EQ:
    case OP_NE:
    case OP_LT:
    case OP_LE:
    case OP_GT:
    case OP_GE: {
        DTypeState s;
        dtype_state_init(&s);
        for (int k = 0; k < 2; k++)
            dtype_state_add(&s, v->args[k].t->dtype, v->args[k].t->ndim, v->args[k].t->weak);
        return dtype_state_result(&s);
    }
    case OP_LOGICAL_AND:
    case OP_LOGICAL_OR:
    case OP_LOGICAL_NOT:
    case OP_CAST: return DT_NONE; /* truthiness, or already a cast */
    default: return v->dtype;
    }
}

static bool operand_is_data(const Value *v, int arg) {
    if (v->op == OP_WHERE) return arg != 0;
    if (v->op == OP_MASKED_FILL) return arg != 1;
    if (v->op == OP_DROPOUT_APPLY) return arg == 0; /* seed and step stay i64 */
    return true;
}

static Value *cast_to(Rewriter *rw, Value *x, DType t, SrcLoc loc) {
    if (x->op == OP_SCALAR && x->weak) {
        x->dtype = t;
        return x;
    }
    Value *c = cast_node(rw->g, x, t, loc, "type promotion");
    rewrite_emit(rw, c);
    return c;
}

static void cast_operands(Rewriter *rw, Value *v, void *ctx) {
    (void)ctx;
    bool promotes = (op_info(v->op)->flags & OPF_ELEMENTWISE) || v->op == OP_CAT ||
                    v->op == OP_CONCAT || v->op == OP_STACK || v->op == OP_OUTER;
    if (!promotes) return;
    DType t = compute_dtype(v);
    if (t == DT_NONE) return;
    for (int k = 0; k < v->nargs; k++) {
        Arg *a = &v->args[k];
        if (!operand_is_data(v, k)) continue;
        if (a->kind == ARG_TENSOR && a->t->dtype != t) a->t = cast_to(rw, a->t, t, a->loc);
        if (a->kind == ARG_TENSORS)
            for (int i = 0; i < a->n; i++)
                if (a->ts[i]->dtype != t) a->ts[i] = cast_to(rw, a->ts[i], t, a->loc);
    }
}

void pass_insert_casts(Graph *g, Diag *d) {
    (void)d;
    rewrite_graph(g, cast_operands, NULL);
}
