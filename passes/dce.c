/* Dead-value removal. Requires: outputs marked. Gives: v->dead on every
 * value no output depends on; unnamed dead values leave the graph, named
 * ones stay (tgc show lists every name) and are warned about. */
#include "ir/state.h"
#include "passes/pass_util.h"
#include "passes/pipeline.h"

void pass_dce(Graph *g, Diag *d) {
    for (int i = 0; i < g->nvalues; i++)
        g->values[i]->dead = true;
    for (int i = 0; i < g->noutputs; i++)
        g->outputs[i]->dead = false;
    /* A state's update writes what the next run reads: it lives even when
     * no output of this run depends on it. */
    for (int i = 0; i < g->nvalues; i++)
        if (ir_is_state_update(g->values[i])) g->values[i]->dead = false;
    for (int i = g->nvalues - 1; i >= 0; i--) {
        Value *v = g->values[i];
        if (v->dead) continue;
        for (int k = 0; k < v->nin; k++)
            v->in[k]->dead = false;
    }
    /* A named dead value stays, and so must the unnamed values it reads
     * (t = (x * 0.5).to(f16) with t unused keeps x * 0.5). */
    bool *keep = ARENA_ARRAY(g->arena, bool, g->nvalues > 0 ? g->nvalues : 1);
    for (int i = g->nvalues - 1; i >= 0; i--) {
        Value *v = g->values[i];
        if (!v->dead || v->name) keep[i] = true;
        if (keep[i])
            for (int k = 0; k < v->nin; k++)
                keep[v->in[k]->order] = true;
    }
    int n = 0;
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        if (!keep[i]) continue;
        if (v->dead && v->name && v->op != OP_INPUT && v->op != OP_PARAM)
            diag_warning(d, v->loc, "'%s' is computed but no output depends on it", v->name);
        v->order = n;
        v->id = n; /* unnamed values print as %order */
        g->values[n++] = v;
    }
    g->nvalues = n;
}
