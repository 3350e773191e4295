/* Helpers for passes that insert nodes in front of the value they rewrite. */
#ifndef TGC_PASS_UTIL_H
#define TGC_PASS_UTIL_H
#include "ir/ir.h"

/* Rebuilds g->values in one walk: fn may call rewrite_emit() to place new
 * nodes before v; v itself is appended after fn returns. */
typedef struct Rewriter {
    Graph *g;
    Value **list;
    int count, cap;
    bool placed; /* fn emitted v itself (rewrite_emit_self), to put nodes after it */
} Rewriter;

typedef void (*RewriteFn)(Rewriter *rw, Value *v, void *ctx);
void rewrite_graph(Graph *g, RewriteFn fn, void *ctx);
void rewrite_emit(Rewriter *rw, Value *v);
/* Emits v now, so that fn can place nodes after it. */
void rewrite_emit_self(Rewriter *rw, Value *v);

/* A new cast of x to t (not yet placed in the graph), shown by `tgc show`
 * as a compiler-made copy with the reason why. */
Value *cast_node(Graph *g, Value *x, DType t, SrcLoc loc, const char *why);
#endif
