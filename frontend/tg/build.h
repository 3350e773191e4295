/* Lowers a parsed Program into a Graph: resolves names and symbolic
 * dimensions, binds call arguments through the op table's signatures and
 * runs each op's shape/dtype inference. */
#ifndef TGC_BUILD_H
#define TGC_BUILD_H
#include "frontend/tg/ast.h"
#include "ir/ir.h"

Graph *build_graph(Arena *a, Diag *d, const Program *prog, const DimOverride *overrides,
                   int noverrides);
#endif
