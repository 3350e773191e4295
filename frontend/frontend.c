#include "frontend/frontend.h"
#include "frontend/tg/build.h"
#include "passes/pipeline.h"

Graph *tgc_frontend(Arena *a, Diag *d, const SrcFile *file, const DimOverride *ov, int nov,
                    const PrecisionPolicy *pol) {
    return tgc_frontend_train(a, d, file, ov, nov, pol, NULL);
}

Program *tgc_frontend_parse(Arena *a, Diag *d, const SrcFile *file) {
    TokenList toks = lex(a, d, file);
    Program *prog = parse_program(a, d, toks);
    return d->errors && !prog->has_graph ? NULL : prog;
}

Graph *tgc_frontend_graph(Arena *a, Diag *d, const Program *prog, const DimOverride *ov, int nov) {
    Graph *g = build_graph(a, d, prog, ov, nov, pipeline_lower);
    return d->errors ? NULL : g;
}

Graph *tgc_frontend_train(Arena *a, Diag *d, const SrcFile *file, const DimOverride *ov, int nov,
                          const PrecisionPolicy *pol, const TrainSpec *train) {
    Program *prog = tgc_frontend_parse(a, d, file);
    Graph *g = prog ? tgc_frontend_graph(a, d, prog, ov, nov) : NULL;
    return g && pipeline_prepare(g, d, pol, train) ? g : NULL;
}
