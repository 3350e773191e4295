/* The front door: source -> checked IR with layouts. Runs the front end
 * for the source (the .tg language, frontend/tg/) and then the passes up to
 * fusion (passes/pipeline.h). The one place where a front end's graph is
 * handed to the passes; the driver, the unit tests and the fuzzers enter
 * here. */
#ifndef TGC_FRONTEND_H
#define TGC_FRONTEND_H
#include "frontend/tg/ast.h"
#include "ir/ir.h"
#include "passes/precision.h"
#include "passes/train.h"

/* Parses and checks a source and runs every pass up to (not including)
 * fusion, the precision policy pol (NULL: declared dtypes) included.
 * Returns NULL when the source has errors (reported to d). */
Graph *tgc_frontend(Arena *a, Diag *d, const SrcFile *file, const DimOverride *ov, int nov,
                    const PrecisionPolicy *pol);
/* The same for a training build: the gradient pass and the optimizer's
 * update (passes/train.h) join the graph before the other passes. */
Graph *tgc_frontend_train(Arena *a, Diag *d, const SrcFile *file, const DimOverride *ov, int nov,
                          const PrecisionPolicy *pol, const TrainSpec *train);
/* The two halves of the front end, for a caller that builds one source
 * many times (tgc report --checkpoint auto): the parsed program (NULL when
 * it has no graph to build), and its checked graph before any pass (NULL
 * when d holds errors), to hand to pipeline_prepare. */
Program *tgc_frontend_parse(Arena *a, Diag *d, const SrcFile *file);
Graph *tgc_frontend_graph(Arena *a, Diag *d, const Program *prog, const DimOverride *ov, int nov);
#endif
