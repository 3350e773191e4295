/* Contexts: everything a compiled program needs around its generated
 * forward function. A context owns the weights (mapped, copied, converted
 * or initialised), the activation arena, the thread pool, the staging
 * buffers for inputs and outputs whose storage dtype differs from the
 * declared one, and its last error message. Nothing is global: two
 * contexts run at once on different threads (one run at a time per
 * context). See docs/runtime.md "Compiled programs". */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "context_internal.h"
#include "profile_internal.h"

/* ---- checking the descriptor (generated code, but a context must not
 * crash on a broken one) ---- */

static RtStatus check_tensor(RtContext *c, const char *what, int i, const RtTensorInfo *t,
                             bool param) {
    size_t nb;
    if (!t->name)
        return rt_error_set(&c->err, TGCRT_ERR_ARG, "program '%s': %s %d has no name",
                            c->p->name ? c->p->name : "?", what, i);
    if (t->desc.ndim < 0 || t->desc.ndim > RT_MAX_DIMS || !rt_desc_nbytes(&t->desc, &nb))
        return rt_error_set(&c->err, TGCRT_ERR_ARG, "%s '%s': invalid declared type", what,
                            t->name);
    if (rt_dtype_size(t->storage) == 0 ||
        (t->storage != t->desc.dtype &&
         !(rt_dtype_is_float(t->storage) && rt_dtype_is_float(t->desc.dtype))))
        return rt_error_set(&c->err, TGCRT_ERR_ARG,
                            "%s '%s': storage dtype %s cannot hold declared dtype %s", what,
                            t->name, rt_dtype_name(t->storage), rt_dtype_name(t->desc.dtype));
    if (param && (t->init < RT_INIT_NONE || t->init > RT_INIT_ARANGE))
        return rt_error_set(&c->err, TGCRT_ERR_ARG, "param '%s': unknown initialiser %d", t->name,
                            (int)t->init);
    return TGCRT_OK;
}

RtStatus rt_ctx_check_program(RtContext *c) {
    const RtProgram *p = c->p;
    /* A CUDA program has steps instead of a forward function. */
    if (p->ninputs < 0 || p->nparams < 0 || p->noutputs < 0 || !p->forward == !p->cuda ||
        (p->ninputs && !p->inputs) || (p->nparams && !p->params) || (p->noutputs && !p->outputs) ||
        p->default_threads < 0)
        return rt_error_set(&c->err, TGCRT_ERR_ARG, "program '%s': malformed descriptor",
                            p->name ? p->name : "?");
    RtStatus s = TGCRT_OK;
    for (int i = 0; !s && i < p->ninputs; i++)
        s = check_tensor(c, "input", i, &p->inputs[i], false);
    for (int i = 0; !s && i < p->nparams; i++)
        s = check_tensor(c, "param", i, &p->params[i], true);
    for (int i = 0; !s && i < p->noutputs; i++)
        s = check_tensor(c, "output", i, &p->outputs[i], false);
    if (!s && p->train) s = rt_train_check(c);
    return s;
}

size_t rt_ctx_storage_bytes(const RtTensorInfo *t) {
    size_t nb = 0;
    RtDesc d = t->desc;
    d.dtype = t->storage;
    rt_desc_nbytes(&d, &nb); /* checked by check_tensor */
    return nb;
}

static size_t numel_of(const RtTensorInfo *t) {
    int64_t n = 0;
    rt_desc_numel(&t->desc, &n);
    return (size_t)n;
}

/* ---- params ---- */

static bool bool_bytes_ok(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] > 1) return false;
    return true;
}

/* rt_ctx_copy_param_tensor a megabyte of the file at a time, each time
 * handing back the file's pages read so far: the copy is the param, so
 * the weight is held once, and at most one chunk of the file beside it
 * while it loads (issue 32; tgc report counts the param once). */
static void copy_releasing(RtContext *c, const RtStTensor *w, const RtTensorInfo *t, void *dst) {
    size_t n = numel_of(t), ss = rt_dtype_size(w->desc.dtype), ds = rt_dtype_size(t->storage);
    size_t chunk = ((size_t)1 << 20) / (ss ? ss : 1);
    const char *src = w->data;
    for (size_t off = 0; off < n; off += chunk) {
        size_t k = n - off < chunk ? n - off : chunk;
        char *d = (char *)dst + off * ds;
        if (w->desc.dtype == t->storage) {
            memcpy(d, src + off * ss, k * ss);
            if (t->storage == RT_BOOL)
                for (size_t j = 0; j < k; j++)
                    ((uint8_t *)d)[j] = ((uint8_t *)d)[j] != 0;
        } else {
            rt_convert_float_par(c->pool, src + off * ss, w->desc.dtype, d, t->storage, k);
        }
        rt_st_release(c->st, src, (off + k) * ss);
    }
}

static RtStatus load_param(RtContext *c, int i, const char *end) {
    const RtTensorInfo *t = &c->p->params[i];
    void **slot = &c->bufs[1 + c->p->ninputs + i];
    char e[RT_DESC_STR_MAX];
    size_t nb = rt_ctx_storage_bytes(t), n = numel_of(t);
    /* A state (a KV cache) starts at zero and is never read from a file,
     * even one that holds a tensor of its name: it is the runs' own. */
    if (t->state) {
        if (!(c->owned[i] = rt_aligned_alloc(nb)))
            return rt_error_set(&c->err, TGCRT_ERR_NOMEM,
                                "out of memory for state '%s' (%zu bytes)", t->name, nb);
        if (nb) memset(c->owned[i], 0, nb);
        *slot = c->owned[i];
        return TGCRT_OK;
    }
    const RtStTensor *w = c->st ? rt_st_find(c->st, t->name) : NULL;

    if (!w) {
        if (t->init == RT_INIT_NONE) {
            if (c->st)
                return rt_error_set(&c->err, TGCRT_ERR_MISSING,
                                    "%s: missing tensor '%s' (expected %s) and the graph gives "
                                    "it no initialiser",
                                    rt_st_name(c->st), t->name,
                                    rt_desc_format(&t->desc, e, sizeof e));
            return rt_error_set(&c->err, TGCRT_ERR_MISSING,
                                "no weights given: missing tensor '%s' (expected %s) and the "
                                "graph gives it no initialiser",
                                t->name, rt_desc_format(&t->desc, e, sizeof e));
        }
        if (!(c->owned[i] = rt_aligned_alloc(nb)))
            return rt_error_set(&c->err, TGCRT_ERR_NOMEM,
                                "out of memory initialising param '%s' (%zu bytes)", t->name, nb);
        rt_fill(c->pool, t->init, t->init_a, t->init_b, (uint64_t)t->init_seed, t->name, t->storage,
                c->owned[i], (int64_t)n);
        *slot = c->owned[i];
        return TGCRT_OK;
    }

    RtStatus s = rt_ctx_check_param_tensor(c, c->st, w, t);
    if (!s && c->p->train && c->p->train->role[i] == RT_ROLE_STATE)
        s = rt_train_check_state(&c->err, rt_st_name(c->st), t, w->data, w->desc.dtype);
    if (s) return s;

    /* Zero copy when the data is aligned to its element size and a
     * kernel's whole-vector load at the last elements (up to 64 bytes past
     * the end) stays inside what can be read: the file's data, or a mapped
     * file's last page (so the last tensor of a file is not copied, unless
     * it ends within 64 bytes of a page). Bool bytes must be 0 or 1
     * (the kernels' encoding). Never for a training program: a step
     * replaces its params, so they must be its own, writable memory. */
    if (w->desc.dtype == t->storage && !c->p->train) {
        size_t es = rt_dtype_size(t->storage);
        const char *d = w->data;
        if ((uintptr_t)d % es == 0 && end && (size_t)(end - d) >= nb + RT_ALIGN &&
            (t->storage != RT_BOOL || bool_bytes_ok(w->data, nb))) {
            *slot = (void *)w->data; /* read-only mapping: kernels never write params */
            return TGCRT_OK;
        }
    }
    if (!(c->owned[i] = rt_aligned_alloc(nb)))
        return rt_error_set(&c->err, TGCRT_ERR_NOMEM,
                            "out of memory loading param '%s' (%zu bytes)", t->name, nb);
    copy_releasing(c, w, t, c->owned[i]);
    *slot = c->owned[i];
    return TGCRT_OK;
}

RtStatus rt_ctx_check_param_tensor(RtContext *c, const RtSafetensors *st, const RtStTensor *w,
                                   const RtTensorInfo *t) {
    char e[RT_DESC_STR_MAX], f[RT_DESC_STR_MAX];
    bool same_shape = w->desc.ndim == t->desc.ndim;
    for (int d = 0; same_shape && d < t->desc.ndim; d++)
        same_shape = w->desc.shape[d] == t->desc.shape[d];
    if (!same_shape)
        return rt_error_set(&c->err, TGCRT_ERR_SHAPE, "%s: tensor '%s': expected %s, found %s",
                            rt_st_name(st), t->name, rt_desc_format(&t->desc, e, sizeof e),
                            rt_desc_format(&w->desc, f, sizeof f));
    RtDType have = w->desc.dtype;
    if (have != t->storage && !(rt_dtype_is_float(have) && rt_dtype_is_float(t->storage)))
        return rt_error_set(&c->err, TGCRT_ERR_DTYPE, "%s: tensor '%s': expected %s%s, found %s",
                            rt_st_name(st), t->name, rt_desc_format(&t->desc, e, sizeof e),
                            rt_dtype_is_float(t->desc.dtype) ? " (or another floating dtype)" : "",
                            rt_desc_format(&w->desc, f, sizeof f));
    return TGCRT_OK;
}

void rt_ctx_copy_param_tensor(RtContext *c, const RtStTensor *w, const RtTensorInfo *t, void *dst) {
    size_t nb = rt_ctx_storage_bytes(t);
    if (w->desc.dtype == t->storage) {
        if (nb) memcpy(dst, w->data, nb);
        if (t->storage == RT_BOOL)
            for (size_t k = 0; k < nb; k++)
                ((uint8_t *)dst)[k] = ((uint8_t *)dst)[k] != 0;
    } else {
        rt_convert_float_par(c->pool, w->data, w->desc.dtype, dst, t->storage, numel_of(t));
    }
}

/* ---- creation ---- */

RtStatus rt_ctx_alloc_staging(RtContext *c, const RtTensorInfo *t, void **slot, const char *what) {
    if (t->storage == t->desc.dtype || c->p->cuda) return TGCRT_OK; /* CUDA: pinned staging */
    size_t nb = rt_ctx_storage_bytes(t);
    if (!(*slot = rt_aligned_alloc(nb)))
        return rt_error_set(&c->err, TGCRT_ERR_NOMEM,
                            "out of memory for the staging buffer of %s '%s' (%zu bytes)", what,
                            t->name, nb);
    return TGCRT_OK;
}

RtStatus rt_ctx_alloc_tables(RtContext *c) {
    const RtProgram *p = c->p;
    /* The buffers: the arena, the inputs, params and outputs, then the
     * index-error cell the kernels set (RtForwardFn). */
    size_t err_slot = 1 + (size_t)p->ninputs + (size_t)p->nparams + (size_t)p->noutputs;
    size_t nbufs = err_slot + 1 + (p->nconvs > 0);
    if (p->nconvs < 0 || (p->nconvs > 0 && (!p->convs || !p->conv_setup || !p->conv_free ||
                                            (size_t)p->conv_slot != err_slot + 1)))
        return rt_error_set(&c->err, TGCRT_ERR_ARG, "program '%s': malformed convolution table",
                            p->name);
    /* ... and last, the profiler's pointer (NULL: not profiling). */
    if (p->prof_slot > 0) nbufs++;
    if (p->nsteps < 0 || (p->nsteps > 0 && !p->steps) ||
        (p->prof_slot > 0 && (size_t)p->prof_slot != nbufs - 1) || p->prof_slot < 0)
        return rt_error_set(&c->err, TGCRT_ERR_ARG, "program '%s': malformed step table",
                            p->name ? p->name : "?");
    c->bufs = calloc(nbufs, sizeof *c->bufs);
    if (c->bufs) c->bufs[err_slot] = c->index_error;
    c->owned = calloc((size_t)p->nparams + 1, sizeof *c->owned);
    c->in_stage = calloc((size_t)p->ninputs + 1, sizeof *c->in_stage);
    c->out_stage = calloc((size_t)p->noutputs + 1, sizeof *c->out_stage);
    if (!c->bufs || !c->owned || !c->in_stage || !c->out_stage)
        return rt_error_set(&c->err, TGCRT_ERR_NOMEM, "out of memory creating a context");
    return TGCRT_OK;
}

static RtStatus setup(RtContext *c, int threads, const char *path, const void *mem, size_t len,
                      const char *mem_name) {
    const RtProgram *p = c->p;
    RtStatus s = rt_ctx_check_program(c);
    if (s) return s;
    /* A CUDA program fails here, before any weight is read, where there is
     * no driver; its steps are checked like the rest of the descriptor. */
    if (p->cuda && ((s = rt_cuda_check_program(p, &c->err)) || (s = rt_cuda_probe(&c->err))))
        return s;
    if (threads < 0)
        return rt_error_set(&c->err, TGCRT_ERR_ARG,
                            "thread count %d is negative (0 means the program's default)", threads);
    if ((s = rt_ctx_alloc_tables(c))) return s;

    if ((s = rt_pool_create(threads ? threads : p->default_threads, &c->pool, &c->err))) return s;
    rt_blas_set_threads(rt_pool_threads(c->pool));

    if (path)
        s = rt_st_open(path, &c->st, &c->err);
    else if (mem)
        s = rt_st_open_memory(mem, len, mem_name, &c->st, &c->err);
    if (s) return s;

    const char *end = c->st ? rt_st_readable_end(c->st) : NULL;
    for (int i = 0; !s && i < p->nparams; i++)
        s = load_param(c, i, end);
    if (!s && p->train && c->st) s = rt_train_pair_check(c, c->st, RT_ROLE_WEIGHT, true);
    if (s) return s;
    /* Keep the mapping only while a param points into it. */
    bool mapped = false;
    for (int i = 0; i < p->nparams; i++)
        mapped |= !c->owned[i];
    if (!mapped) {
        rt_st_close(c->st);
        c->st = NULL;
    }

    for (int i = 0; !s && i < p->ninputs; i++)
        s = rt_ctx_alloc_staging(c, &p->inputs[i], &c->in_stage[i], "input");
    /* A training context's own output buffers serve as the staging
     * (rt_train_out_stage). */
    for (int i = 0; !s && !p->train && i < p->noutputs; i++)
        s = rt_ctx_alloc_staging(c, &p->outputs[i], &c->out_stage[i], "output");
    if (!s && p->train) s = rt_train_setup(c);
    if (s) return s;
    if (p->cuda) /* the params at storage dtype, uploaded once */
        return rt_cuda_create(p, c->bufs + 1 + p->ninputs, &c->cuda, &c->err);
    if ((s = rt_arena_init(&c->arena, p->arena_bytes, &c->err))) return s;
    c->bufs[0] = c->arena.base;
    if (p->nconvs > 0) { /* primitives made and weights prepared once, here */
        if ((s = p->conv_setup(p, c->bufs, rt_pool_threads(c->pool), &c->conv_state, &c->err)))
            return s;
        c->bufs[p->conv_slot] = c->conv_state;
    }
    return TGCRT_OK;
}

static RtStatus create(const RtProgram *p, const char *path, const void *mem, size_t len,
                       const char *mem_name, int threads, RtContext **out) {
    if (!out) return TGCRT_ERR_ARG;
    RtContext *c = *out = calloc(1, sizeof *c);
    if (!c) return TGCRT_ERR_NOMEM;
    rt_error_clear(&c->err);
    c->p = p;
    if (!p) return rt_error_set(&c->err, TGCRT_ERR_ARG, "no program given");
    /* Before anything else: a CPU that lacks the code's features is told
     * so, never handed an instruction it would die on (SIGILL). */
    RtStatus s = rt_cpu_select(p, &c->cpu_level, &c->err);
    if (s) return s;
    c->forward = p->nlevels > 0 ? p->levels[c->cpu_level].forward : p->forward;
    s = setup(c, threads, path, mem, len, mem_name);
    c->ready = s == TGCRT_OK;
    return s;
}

RtStatus rt_context_create(const RtProgram *p, const char *weights_path, int threads,
                           RtContext **out) {
    const void *mem = p && !weights_path ? p->embedded_weights : NULL;
    return create(p, weights_path, mem, mem ? p->embedded_weights_len : 0, "embedded weights",
                  threads, out);
}

RtStatus rt_context_create_from_memory(const RtProgram *p, const void *st, size_t len, int threads,
                                       RtContext **out) {
    /* st NULL: no weights at all (not even embedded ones), initialisers only. */
    return create(p, NULL, st, st ? len : 0, "weights buffer", threads, out);
}

/* ---- running ---- */

RtStatus rt_ctx_stage_inputs(RtContext *c, const void *const *inputs, const char *fn) {
    const RtProgram *p = c->p;
    if (!c->ready) {
        if (c->err.status) return c->err.status;
        return rt_error_set(&c->err, TGCRT_ERR_ARG, "the context was not created");
    }
    if (p->ninputs && !inputs)
        return rt_error_set(&c->err, TGCRT_ERR_ARG, "%s: the inputs array is NULL", fn);
    for (int i = 0; i < p->ninputs; i++)
        if (!inputs[i] && rt_ctx_storage_bytes(&p->inputs[i]))
            return rt_error_set(&c->err, TGCRT_ERR_ARG, "%s: input '%s' is NULL", fn,
                                p->inputs[i].name);
    if (c->cuda) return TGCRT_OK; /* rt_cuda_run stages them itself */
    void **in = c->bufs + 1;
    for (int i = 0; i < p->ninputs; i++) {
        const RtTensorInfo *t = &p->inputs[i];
        if (c->in_stage[i]) {
            rt_convert_float_par(c->pool, inputs[i], t->desc.dtype, c->in_stage[i], t->storage,
                                 numel_of(t));
            in[i] = c->in_stage[i];
        } else {
            in[i] = (void *)inputs[i]; /* kernels never write inputs */
        }
    }
    return TGCRT_OK;
}

RtStatus rt_ctx_forward(RtContext *c) {
    memset(c->index_error, 0, sizeof c->index_error);
    RtProfile *prof = c->p->prof_slot > 0 ? c->bufs[c->p->prof_slot] : NULL;
    if (prof) rt_prof_run_begin(prof);
    c->forward(c->bufs, c->pool);
    if (prof) rt_prof_run_end(prof);
    if (c->index_error[0]) {
        char msg[512];
        rt_index_error_format((const char *)(intptr_t)c->index_error[0], c->index_error[1],
                              c->index_error[2], msg, sizeof msg);
        return rt_error_set(&c->err, TGCRT_ERR_VALUE, "%s", msg);
    }
    return TGCRT_OK;
}

RtStatus rt_context_run(RtContext *c, const void *const *inputs, void *const *outputs) {
    if (!c) return TGCRT_ERR_ARG;
    const RtProgram *p = c->p;
    RtStatus s = rt_ctx_stage_inputs(c, inputs, "rt_context_run");
    if (s) return s;
    if (p->noutputs && !outputs)
        return rt_error_set(&c->err, TGCRT_ERR_ARG, "rt_context_run: the outputs array is NULL");
    for (int i = 0; i < p->noutputs; i++)
        if (!outputs[i] && rt_ctx_storage_bytes(&p->outputs[i]))
            return rt_error_set(&c->err, TGCRT_ERR_ARG, "rt_context_run: output '%s' is NULL",
                                p->outputs[i].name);

    if (c->cuda) {
        s = rt_cuda_run(c->cuda, inputs, outputs, c->pool, &c->err);
        if (!s) rt_error_clear(&c->err);
        return s;
    }

    /* Outputs whose storage dtype differs are computed into staging
     * buffers and converted afterwards. */
    void **out = c->bufs + 1 + p->ninputs + p->nparams, **stage = c->out_stage;
    for (int i = 0; i < p->noutputs; i++) {
        if (c->train) stage[i] = rt_train_out_stage(c, i); /* not owned: see destroy */
        out[i] = stage[i] ? stage[i] : outputs[i];
    }
    if ((s = rt_ctx_forward(c))) return s;
    for (int i = 0; i < p->noutputs; i++) {
        const RtTensorInfo *t = &p->outputs[i];
        if (stage[i])
            rt_convert_float_par(c->pool, stage[i], t->storage, outputs[i], t->desc.dtype,
                                 numel_of(t));
    }
    rt_error_clear(&c->err);
    return TGCRT_OK;
}

const char *rt_context_error(const RtContext *c) {
    return c ? c->err.msg : "no context (out of memory)";
}

const char *rt_context_cpu_level(const RtContext *c) {
    return c && c->p && c->p->nlevels > 0 ? c->p->levels[c->cpu_level].name : "";
}

const RtProgram *rt_context_program(const RtContext *c) {
    return c ? c->p : NULL;
}

void rt_context_destroy(RtContext *c) {
    if (!c) return;
    const RtProgram *p = c->p;
    if (p && c->owned)
        for (int i = 0; i < p->nparams; i++)
            rt_aligned_free(c->owned[i]);
    if (p && c->in_stage)
        for (int i = 0; i < p->ninputs; i++)
            rt_aligned_free(c->in_stage[i]);
    rt_train_free(c);
    if (p && c->out_stage && !p->train) /* a training context's are its train buffers */
        for (int i = 0; i < p->noutputs; i++)
            rt_aligned_free(c->out_stage[i]);
    free(c->owned);
    free(c->in_stage);
    free(c->out_stage);
    if (c->conv_state) c->p->conv_free(c->conv_state);
    free(c->bufs);
    rt_prof_free(c->prof);
    rt_cuda_destroy(c->cuda);
    rt_arena_release(&c->arena); /* a shared context's is zeroed: the owner's is in bufs[0] */
    if (!c->owner) rt_pool_destroy(c->pool);
    rt_st_close(c->st);
    free(c);
}
