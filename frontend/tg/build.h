/* Lowers a parsed Program into a Graph: resolves names and symbolic
 * dimensions, binds call arguments through the op table's signatures and
 * runs each op's shape/dtype inference. */
#ifndef TGC_BUILD_H
#define TGC_BUILD_H
#include "frontend/tg/ast.h"
#include "ir/infer.h"
#include "ir/ir.h"

/* The lowering of sugar ops into primitives, run on each op right after
 * its inference so that value ids and messages follow the source's order:
 * the value that replaces v (v itself when it stays), or NULL after a
 * report. The pipeline owns it (passes/pipeline.c: pipeline_lower). */
typedef Value *(*BuildLowerFn)(InferCtx *c, Value *v);

Graph *build_graph(Arena *a, Diag *d, const Program *prog, const DimOverride *overrides,
                   int noverrides, BuildLowerFn lower);
#endif
