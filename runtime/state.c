/* State kept between runs (params declared `state`: a KV cache) and
 * contexts shared over one set of params and states.
 *
 * A state is allocated zeroed by the context (program.c, load_param) and
 * written in place by the forward; rt_context_reset_state zeroes it again.
 * A generating executable compiles its decoder twice (prefill over a chunk
 * of tokens, step over one), both over the same params and states: the
 * second context is made with rt_context_create_shared over the first, so
 * the weights and the KV cache are held once, and so is the arena (the two
 * never run at once) and the thread pool (one per process). See
 * docs/runtime.md "Generation". */
#include <stdlib.h>
#include <string.h>

#include "context_internal.h"

RtStatus rt_context_reset_state(RtContext *c) {
    if (!c) return TGCRT_ERR_ARG;
    if (!c->ready) {
        if (c->err.status) return c->err.status;
        return rt_error_set(&c->err, TGCRT_ERR_ARG, "the context was not created");
    }
    const RtProgram *p = c->p;
    for (int i = 0; i < p->nparams; i++) {
        if (!p->params[i].state) continue;
        void *host = c->bufs[1 + p->ninputs + i];
        size_t nb = rt_ctx_storage_bytes(&p->params[i]);
        /* On CUDA the host buffer is only the zeros the device copy was
         * made from (a run writes the device's): upload them again. */
        if (nb) memset(host, 0, nb);
        if (c->cuda) {
            RtStatus s = rt_cuda_param_upload(c->cuda, i, host, &c->err);
            if (s) return s;
        }
    }
    rt_error_clear(&c->err);
    return TGCRT_OK;
}

/* ---- shared contexts ---- */

static const char *pname(const RtProgram *p) {
    return p && p->name ? p->name : "?";
}

/* Points every param slot of c at owner's param of the same name, after
 * checking that they are the same tensor: declared type, storage dtype and
 * whether it is a state. */
static RtStatus share_params(RtContext *c, const RtContext *owner) {
    const RtProgram *p = c->p, *q = owner->p;
    char e[RT_DESC_STR_MAX], f[RT_DESC_STR_MAX];
    for (int i = 0; i < p->nparams; i++) {
        const RtTensorInfo *t = &p->params[i];
        int j = 0;
        while (j < q->nparams && strcmp(q->params[j].name, t->name))
            j++;
        if (j == q->nparams)
            return rt_error_set(&c->err, TGCRT_ERR_ARG,
                                "cannot share program '%s' over program '%s': %s '%s' is not "
                                "one of '%s''s params",
                                pname(p), pname(q), t->state ? "state" : "param", t->name,
                                pname(q));
        const RtTensorInfo *u = &q->params[j];
        if (!rt_desc_equal(&t->desc, &u->desc) || t->storage != u->storage || t->state != u->state)
            return rt_error_set(&c->err, TGCRT_ERR_ARG,
                                "cannot share program '%s' over program '%s': %s '%s' is %s%s "
                                "stored as %s in '%s' but %s%s stored as %s in '%s'",
                                pname(p), pname(q), t->state ? "state" : "param", t->name,
                                t->state ? "a state " : "", rt_desc_format(&t->desc, e, sizeof e),
                                rt_dtype_name(t->storage), pname(p), u->state ? "a state " : "",
                                rt_desc_format(&u->desc, f, sizeof f), rt_dtype_name(u->storage),
                                pname(q));
        c->bufs[1 + p->ninputs + i] = owner->bufs[1 + q->ninputs + j];
    }
    return TGCRT_OK;
}

static RtStatus setup_shared(RtContext *c, RtContext *owner) {
    const RtProgram *p = c->p;
    RtStatus s = rt_ctx_check_program(c);
    if (s) return s;
    if (!owner->ready)
        return rt_error_set(&c->err, TGCRT_ERR_ARG,
                            "cannot share program '%s' over a context that was not created%s%s",
                            pname(p), owner->err.msg[0] ? ": " : "", owner->err.msg);
    /* A shared context owns nothing to share further: share the owner's. */
    if (owner->owner) owner = owner->owner;
    const RtProgram *q = owner->p;
    /* A GPU context's params live on its device, and a training step
     * replaces its params' buffers: neither can be shared (yet). */
    if (p->cuda || q->cuda)
        return rt_error_set(&c->err, TGCRT_ERR_ARG,
                            "cannot share program '%s' over program '%s': shared contexts of "
                            "CUDA programs are not supported yet",
                            pname(p), pname(q));
    if (p->train || q->train)
        return rt_error_set(&c->err, TGCRT_ERR_ARG,
                            "cannot share program '%s' over program '%s': a training program's "
                            "params change buffers at every step",
                            pname(p), pname(q));
    if (p->arena_bytes > q->arena_bytes)
        return rt_error_set(&c->err, TGCRT_ERR_ARG,
                            "cannot share program '%s' over program '%s': its arena (%zu bytes) "
                            "is larger than '%s''s (%zu bytes); make the larger one the owner",
                            pname(p), pname(q), p->arena_bytes, pname(q), q->arena_bytes);
    if ((s = rt_ctx_alloc_tables(c))) return s;
    c->owner = owner;
    c->pool = owner->pool;
    c->bufs[0] = owner->bufs[0];
    if ((s = share_params(c, owner))) return s;
    for (int i = 0; !s && i < p->ninputs; i++)
        s = rt_ctx_alloc_staging(c, &p->inputs[i], &c->in_stage[i], "input");
    for (int i = 0; !s && i < p->noutputs; i++)
        s = rt_ctx_alloc_staging(c, &p->outputs[i], &c->out_stage[i], "output");
    if (s) return s;
    /* Convolutions keep per-context state (primitives, prepared weights). */
    if (p->nconvs > 0) {
        if ((s = p->conv_setup(p, c->bufs, rt_pool_threads(c->pool), &c->conv_state, &c->err)))
            return s;
        c->bufs[p->conv_slot] = c->conv_state;
    }
    return TGCRT_OK;
}

RtStatus rt_context_create_shared(const RtProgram *p, RtContext *owner, RtContext **out) {
    if (!out) return TGCRT_ERR_ARG;
    RtContext *c = *out = calloc(1, sizeof *c);
    if (!c) return TGCRT_ERR_NOMEM;
    rt_error_clear(&c->err);
    c->p = p;
    if (!p) return rt_error_set(&c->err, TGCRT_ERR_ARG, "no program given");
    if (!owner) return rt_error_set(&c->err, TGCRT_ERR_ARG, "no owner context given");
    RtStatus s = rt_cpu_select(p, &c->cpu_level, &c->err);
    if (s) return s;
    c->forward = p->nlevels > 0 ? p->levels[c->cpu_level].forward : p->forward;
    s = setup_shared(c, owner);
    c->ready = s == TGCRT_OK;
    return s;
}
