/* Broadcasting made explicit (PyTorch's rule, checked at inference).
 * Requires: shapes inferred, casts inserted. Gives: every operand of an
 * elementwise op has the op's shape; smaller operands go through an
 * inserted expand view, whose stretched dims get stride 0 when views fold. */
#include "ir/infer.h"
#include "passes/pass_util.h"
#include "passes/pipeline.h"

static void expand_operands(Rewriter *rw, Value *v, void *ctx) {
    (void)ctx;
    if (!(op_info(v->op)->flags & OPF_ELEMENTWISE) || v->op == OP_CAST) return;
    for (int k = 0; k < v->nargs; k++) {
        Arg *a = &v->args[k];
        if (a->kind != ARG_TENSOR || value_same_shape(a->t, v)) continue;
        Value *e = value_new(rw->g, OP_EXPAND, a->loc);
        e->nargs = 2;
        e->args = ARENA_ARRAY(rw->g->arena, Arg, 2);
        e->args[0] = arg_tensor(a->t, a->loc);
        e->args[1] = arg_ints(rw->g->arena, v->shape, v->ndim, a->loc);
        e->dtype = a->t->dtype;
        set_shape(e, v->shape, v->ndim);
        e->label = "broadcast";
        value_collect_inputs(rw->g, e);
        rewrite_emit(rw, e);
        a->t = e;
    }
}

void pass_broadcast(Graph *g, Diag *d) {
    (void)d;
    rewrite_graph(g, expand_operands, NULL);
}
