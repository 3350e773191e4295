/* IR verifier, run between passes: a failure is a compiler bug (exit 3),
 * never the user's fault. */
#include "ir/infer.h"
#include "passes/pipeline.h"

void pass_verify(const Graph *g, bool layouts) {
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        TGC_ASSERT(v->order == i);
        TGC_ASSERT(v->ndim >= 0 && v->ndim <= TG_MAX_DIMS);
        TGC_ASSERT(v->dtype >= 0 && v->dtype < DT_COUNT);
        for (int k = 0; k < v->nin; k++)
            TGC_ASSERT(v->in[k]->order < i && g->values[v->in[k]->order] == v->in[k]);
        for (int k = 0; k < v->ndim; k++)
            TGC_ASSERT(v->shape[k] >= 0);
        if (!layouts) continue;
        TGC_ASSERT(v->storage && v->storage->storage == v->storage);
        TGC_ASSERT(v->is_view == (v->storage != v));
        TGC_ASSERT(v->offset >= 0);
        if (!v->is_view) TGC_ASSERT(layout_is_contiguous(v) && v->offset == 0);
    }
}
