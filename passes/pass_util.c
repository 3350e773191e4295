#include "passes/pass_util.h"

#include "ir/infer.h"

void rewrite_emit(Rewriter *rw, Value *v) {
    v->order = rw->count;
    ARENA_PUSH(rw->g->arena, rw->list, rw->count, rw->cap, v);
}

void rewrite_graph(Graph *g, RewriteFn fn, void *ctx) {
    Rewriter rw = {.g = g};
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        rw.placed = false;
        fn(&rw, v, ctx);
        value_collect_inputs(g, v);
        if (!rw.placed) rewrite_emit(&rw, v);
    }
    g->values = rw.list;
    g->nvalues = rw.count;
    g->cap_values = rw.cap;
}

void rewrite_emit_self(Rewriter *rw, Value *v) {
    value_collect_inputs(rw->g, v);
    rewrite_emit(rw, v);
    rw->placed = true;
}

Value *cast_node(Graph *g, Value *x, DType t, SrcLoc loc, const char *why) {
    Value *c = value_new(g, OP_CAST, loc);
    c->nargs = 2;
    c->args = ARENA_ARRAY(g->arena, Arg, 2);
    c->args[0] = arg_tensor(x, loc);
    c->args[1] = arg_dtype(t, loc);
    c->dtype = t;
    set_shape(c, x->shape, x->ndim);
    c->label = "cast";
    c->copy_reason = why;
    value_collect_inputs(g, c);
    return c;
}
