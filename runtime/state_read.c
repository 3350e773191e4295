/* Reading a state (a param declared `state`) of any context: tgc
 * compile's NAME_get_state. A state is what the forward wrote there, at
 * its storage dtype, in the context's (or its owner's) buffer. */
#include <string.h>

#include "context_internal.h"

RtStatus rt_context_get_state(RtContext *c, const char *name, void *dst) {
    if (!c) return TGCRT_ERR_ARG;
    if (!c->ready) {
        if (c->err.status) return c->err.status;
        return rt_error_set(&c->err, TGCRT_ERR_ARG, "the context was not created");
    }
    const RtProgram *p = c->p;
    if (!name || !dst)
        return rt_error_set(&c->err, TGCRT_ERR_ARG, "get_state: %s is NULL",
                            name ? "dst" : "the state's name");
    int nstates = 0;
    for (int i = 0; i < p->nparams; i++) {
        const RtTensorInfo *t = &p->params[i];
        if (!t->state) continue;
        nstates++;
        if (strcmp(t->name, name)) continue;
        if (c->cuda)
            return rt_error_set(&c->err, TGCRT_ERR_ARG,
                                "get_state: '%s' lives on the GPU; reading states of CUDA "
                                "programs is not supported yet",
                                name);
        size_t nb = rt_ctx_storage_bytes(t);
        if (nb) memcpy(dst, c->bufs[1 + p->ninputs + i], nb);
        rt_error_clear(&c->err);
        return TGCRT_OK;
    }
    return rt_error_set(&c->err, TGCRT_ERR_ARG, "get_state: program '%s' has no state '%s'%s",
                        p->name ? p->name : "?", name, nstates ? "" : " (it declares none)");
}
