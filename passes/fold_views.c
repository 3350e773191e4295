/* View folding. Requires: shapes inferred, broadcasts and casts explicit.
 * Gives: every value's strides, storage offset and storage owner. A view
 * points at the owner of its input's storage, so chains of views collapse
 * onto the owner; non-views own fresh contiguous storage. */
#include <string.h>

#include "ir/infer.h"
#include "passes/pipeline.h"

static void own_storage(Value *v) {
    shape_contiguous_strides(v->shape, v->ndim, v->strides);
    v->offset = 0;
    v->storage = v;
    v->is_view = false;
}

bool pass_fold_views(Graph *g, Diag *d) {
    bool ok = true;
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        const OpInfo *info = op_info(v->op);
        if (!(info->flags & (OPF_VIEW | OPF_MAYBE_VIEW)) || !info->layout) {
            own_storage(v);
            continue;
        }
        if (info->layout(v)) {
            v->storage = IN0(v)->storage;
            v->is_view = true;
            continue;
        }
        if (!contiguous_materialize(v, d)) ok = false;
        own_storage(v);
    }
    return ok;
}
