/* slice_scatter on --target cuda: not generated yet. The refusal is a
 * user-facing message before any code is made (cu_module.c asks
 * cu_slice_write_unsupported), so cu_k_slice_write is never reached. */
#include <stdio.h>

#include "codegen/cuda/cu.h"

const char *cu_slice_write_unsupported(const CgProgram *p) {
    static char msg[512];
    const Graph *g = p->g;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (v->op != OP_SLICE_SCATTER || v->dead) continue;
        const SrcLoc *l = &v->loc;
        snprintf(msg, sizeof msg,
                 "slice_scatter at %s:%d:%d: %snot supported on --target cuda (--target cpu "
                 "computes it)",
                 l->file && l->file->path ? l->file->path : "<input>", l->line, l->col,
                 v->args[3].kind == ARG_TENSOR ? "with a tensor start: " : "");
        return msg;
    }
    return NULL;
}

void cu_k_slice_write(Cu *cu, const Value *v) {
    cu_fail(cu, "%s", cu_slice_write_unsupported(cu->p));
    (void)v;
}
