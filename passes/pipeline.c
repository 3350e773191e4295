/* The pass pipeline, readable in one screen. Each pass states in its file
 * what it requires and what it gives; the verifier runs between them. */
#include "passes/pipeline.h"

Graph *tgc_frontend(Arena *a, Diag *d, const SrcFile *file, const DimOverride *ov, int nov,
                    const PrecisionPolicy *pol) {
    TokenList toks = lex(a, d, file);
    Program *prog = parse_program(a, d, toks);
    if (d->errors && !prog->has_graph) return NULL;
    Graph *g = build_graph(a, d, prog, ov, nov);
    if (d->errors) return NULL;
    pass_verify(g, false);
    pass_precision(g, d, pol);
    pass_quantize(g, d, pol);
    if (d->errors) return NULL;
    pass_verify(g, false);
    pass_insert_casts(g, d);
    pass_broadcast(g, d);
    pass_verify(g, false);
    if (!pass_fold_views(g, d)) return NULL;
    pass_verify(g, true);
    pass_dce(g, d);
    pass_verify(g, true);
    return g;
}
