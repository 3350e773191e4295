/* The compiler's front half: source text -> checked IR with layouts. */
#ifndef TGC_PIPELINE_H
#define TGC_PIPELINE_H
#include "frontend/ast.h"
#include "ir/build.h"
#include "ir/ir.h"
#include "passes/precision.h"

/* Parses and checks a .tg source and runs every pass up to (not including)
 * fusion, the precision policy pol (NULL: declared dtypes) included.
 * Returns NULL when the source has errors (reported to d). */
Graph *tgc_frontend(Arena *a, Diag *d, const SrcFile *file, const DimOverride *ov, int nov,
                    const PrecisionPolicy *pol);

void pass_insert_casts(Graph *g, Diag *d);
void pass_broadcast(Graph *g, Diag *d);
bool pass_fold_views(Graph *g, Diag *d);
bool contiguous_materialize(Value *v, Diag *d);
void pass_dce(Graph *g, Diag *d);
void pass_verify(const Graph *g, bool layouts);
/* Folds batch norms into convs and fuses their epilogues (passes/conv_epilogue.c);
 * run by the code generators' planning, after `tgc show`'s view. */
void pass_conv_epilogue(Graph *g);
#endif
