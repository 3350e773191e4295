#include "frontend/frontend.h"
#include "frontend/tg/build.h"
#include "passes/pipeline.h"

Graph *tgc_frontend(Arena *a, Diag *d, const SrcFile *file, const DimOverride *ov, int nov,
                    const PrecisionPolicy *pol) {
    return tgc_frontend_train(a, d, file, ov, nov, pol, NULL);
}

Graph *tgc_frontend_train(Arena *a, Diag *d, const SrcFile *file, const DimOverride *ov, int nov,
                          const PrecisionPolicy *pol, const TrainSpec *train) {
    TokenList toks = lex(a, d, file);
    Program *prog = parse_program(a, d, toks);
    if (d->errors && !prog->has_graph) return NULL;
    Graph *g = build_graph(a, d, prog, ov, nov);
    if (d->errors) return NULL;
    return pipeline_prepare(g, d, pol, train) ? g : NULL;
}
