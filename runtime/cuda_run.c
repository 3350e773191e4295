/* One run of a CUDA program, all on the context's one stream:
 *
 *   inputs  -> pinned staging (converted to the storage dtype on the pool)
 *           -> device (async copies)
 *   error cell = 0
 *   the steps: kernel launches, products on cuBLAS or tg_matmul,
 *           convolutions on cuDNN (then their epilogue kernels); with
 *           cuda_graph, captured once at the first run and replayed
 *   outputs, error cell -> pinned staging (async copies)
 *   synchronise; an index out of range fails the run; pinned -> caller's
 *           outputs (converted to the declared dtype)
 *
 * Copies from pinned memory are true asynchronous DMA, so the stream never
 * waits for the host between them. The copies are outside the graph: the
 * caller's buffers are converted on the host anyway, and the device
 * buffers are fixed for the context's life, so every captured address
 * stays valid. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"
#include "rt_index_error.h"
#include "rt_internal.h"

/* tg_matmul's TgMatmulDesc is RtMatmulDesc with long long fields: 52 of
 * them, passed by value as one kernel parameter. */
_Static_assert(sizeof(RtMatmulDesc) == 52 * sizeof(long long), "RtMatmulDesc's layout changed");

static RtStatus launch_step(RtCudaCtx *c, int s, RtError *err) {
    const RtCudaStep *st = &c->p->cuda->steps[s];
    const CuDriver *cu = c->cu;
    char what[160];
    if (st->kind == RT_CUDA_LAUNCH) {
        if (st->grid == 0) return TGCRT_OK; /* an empty tensor: nothing to launch */
        void *args[] = {&c->bufs};
        CUresult r = cu->cuLaunchKernel(c->fn[s], st->grid, 1, 1, st->block, 1, 1, st->smem,
                                        c->stream, args, NULL);
        if (!r) return TGCRT_OK;
        snprintf(what, sizeof what, "(step %d, kernel '%s')", s, st->kernel);
        return rt_cuda_fail(c, err, r, "cuLaunchKernel", what);
    }
    if (st->kind == RT_CUDA_CONV) return rt_cuda_conv_run(c, s, err);
    const RtCudaMatmul *m = &c->mm[s];
    if (m->skip) return TGCRT_OK;
    CUdeviceptr a = c->dev[st->a.slot] + (CUdeviceptr)st->a.offset;
    CUdeviceptr b = c->dev[st->b.slot] + (CUdeviceptr)st->b.offset;
    CUdeviceptr cc = c->dev[st->c.slot] + (CUdeviceptr)st->c.offset;
    if (m->blas) {
        RtStatus rs = rt_cuda_gemm_run(&c->blas, c->blas_h, &m->plan, a, b, cc, err);
        if (rs && err) {
            char msg[RT_ERROR_MSG_MAX];
            snprintf(msg, sizeof msg, "%s", err->msg);
            rt_error_set(err, rs, "GPU %d (%s): step %d (matrix product): %s", c->ordinal, c->name,
                         s, msg);
        }
        return rs;
    }
    /* tg_matmul(TgMatmulDesc d, const char *a, const char *b, char *c):
     * the descriptor is passed by value (RtMatmulDesc has its layout). */
    void *args[] = {(void *)st->mm, &a, &b, &cc};
    CUresult r = cu->cuLaunchKernel(c->fn[s], m->grid[0], m->grid[1], m->grid[2], RT_CUDA_MM_BLOCK,
                                    RT_CUDA_MM_BLOCK, 1, 0, c->stream, args, NULL);
    if (!r) return TGCRT_OK;
    snprintf(what, sizeof what, "(step %d, kernel 'tg_matmul')", s);
    return rt_cuda_fail(c, err, r, "cuLaunchKernel", what);
}

static RtStatus enqueue_steps(RtCudaCtx *c, RtError *err) {
    RtStatus s = TGCRT_OK;
    for (int i = 0; !s && i < c->p->cuda->nsteps; i++)
        s = launch_step(c, i, err);
    return s;
}

/* The steps, directly or through the graph (captured at the first run). */
static RtStatus run_steps(RtCudaCtx *c, RtError *err) {
    const CuDriver *cu = c->cu;
    if (!c->p->cuda->cuda_graph || !c->p->cuda->nsteps) return enqueue_steps(c, err);
    CUresult r;
    if (!c->graph) {
        /* Relaxed: other threads (other contexts) may allocate while this
         * stream captures, and cuBLAS may call what the stricter modes
         * forbid; the captured work itself is only this stream's. */
        if ((r = cu->cuStreamBeginCapture_v2(c->stream, CU_STREAM_CAPTURE_MODE_RELAXED)))
            return rt_cuda_fail(c, err, r, "cuStreamBeginCapture_v2", "");
        RtStatus s = enqueue_steps(c, err);
        CUgraph g = NULL;
        r = cu->cuStreamEndCapture(c->stream, &g); /* always: the stream must leave capture */
        if (!s && r) s = rt_cuda_fail(c, err, r, "cuStreamEndCapture", "");
        if (!s && (r = cu->cuGraphInstantiateWithFlags(&c->graph, g, 0))) {
            c->graph = NULL;
            s = rt_cuda_fail(c, err, r, "cuGraphInstantiateWithFlags", "");
        }
        if (g) cu->cuGraphDestroy(g); /* the executable graph keeps its own copy */
        if (s) return s;
    }
    if ((r = cu->cuGraphLaunch(c->graph, c->stream)))
        return rt_cuda_fail(c, err, r, "cuGraphLaunch", "");
    return TGCRT_OK;
}

static RtStatus copy_failed(RtCudaCtx *c, RtError *err, CUresult r, const char *call,
                            const char *what, const char *name) {
    char w[200];
    snprintf(w, sizeof w, "%s '%s'", what, name);
    return rt_cuda_fail(c, err, r, call, w);
}

static size_t numel_of(const RtTensorInfo *t) {
    int64_t n = 0;
    rt_desc_numel(&t->desc, &n);
    return (size_t)n;
}

/* Output i of a training program that updates a param (train.c): it
 * stays on the GPU. In place, the step's kernel already wrote it over the
 * param (the slots alias, cuda.c); otherwise it is copied over the param
 * after the steps. The compiled step leaves every param as it was when the
 * loss is not finite, so the copy needs no test of the loss. */
static int updates(const RtProgram *p, int i) {
    return p->train ? p->train->update_of[i] : -1;
}

/* storage_out: outputs receive the storage dtype (a training context's
 * own buffers), else the declared dtype (the caller's). */
static RtStatus run(RtCudaCtx *c, const void *const *inputs, void *const *outputs, bool storage_out,
                    RtPool *pool, RtError *err) {
    const RtProgram *p = c->p;
    const CuDriver *cu = c->cu;
    int ni = p->ninputs, np = p->nparams;
    CUresult r;
    for (int i = 0; i < ni; i++) {
        const RtTensorInfo *t = &p->inputs[i];
        size_t nb = c->bytes[1 + i];
        if (!nb) continue;
        if (t->storage != t->desc.dtype)
            rt_convert_float_par(pool, inputs[i], t->desc.dtype, c->in_pin[i], t->storage,
                                 numel_of(t));
        else
            memcpy(c->in_pin[i], inputs[i], nb);
        if ((r = cu->cuMemcpyHtoDAsync_v2(c->dev[1 + i], c->in_pin[i], nb, c->stream)))
            return copy_failed(c, err, r, "cuMemcpyHtoDAsync_v2", "input", t->name);
    }
    CUdeviceptr cell = c->dev[c->nbufs - 1];
    if ((r = cu->cuMemsetD8Async(cell, 0, 8 * RT_INDEX_ERROR_WORDS, c->stream)))
        return rt_cuda_fail(c, err, r, "cuMemsetD8Async", "(the error cell)");
    RtStatus s = run_steps(c, err);
    if (s) return s;
    if ((r = cu->cuMemcpyDtoHAsync_v2(c->err_pin, cell, 8 * RT_INDEX_ERROR_WORDS, c->stream)))
        return rt_cuda_fail(c, err, r, "cuMemcpyDtoHAsync_v2", "(the error cell)");
    for (int i = 0; i < p->noutputs; i++) {
        size_t nb = c->bytes[1 + ni + np + i];
        int u = updates(p, i);
        if (!nb || (u >= 0 && rt_output_in_place(p, i))) continue;
        if (u >= 0)
            r = cu->cuMemcpyDtoDAsync_v2(c->dev[1 + ni + u], c->dev[1 + ni + np + i], nb,
                                         c->stream);
        else
            r = cu->cuMemcpyDtoHAsync_v2(c->out_pin[i], c->dev[1 + ni + np + i], nb, c->stream);
        if (r)
            return copy_failed(c, err, r, u >= 0 ? "cuMemcpyDtoDAsync_v2" : "cuMemcpyDtoHAsync_v2",
                               "output", p->outputs[i].name);
    }
    /* A kernel's fault (an illegal address, say) surfaces here. */
    if ((r = cu->cuStreamSynchronize(c->stream)))
        return rt_cuda_fail(c, err, r, "cuStreamSynchronize", "(running the program)");

    unsigned long long e = *c->err_pin;
    if (e) {
        const RtCudaProgram *cp = p->cuda;
        const char *name =
            e <= (unsigned long long)cp->nerror_names ? cp->error_names[e - 1] : "an index tensor";
        char msg[512];
        rt_index_error_format(name, (int64_t)c->err_pin[1], (int64_t)c->err_pin[2], msg,
                              sizeof msg);
        return rt_error_set(err, TGCRT_ERR_VALUE, "%s", msg);
    }
    for (int i = 0; i < p->noutputs; i++) {
        const RtTensorInfo *t = &p->outputs[i];
        size_t nb = c->bytes[1 + ni + np + i];
        if (!nb || updates(p, i) >= 0) continue;
        if (t->storage != t->desc.dtype && !storage_out)
            rt_convert_float_par(pool, c->out_pin[i], t->storage, outputs[i], t->desc.dtype,
                                 numel_of(t));
        else
            memcpy(outputs[i], c->out_pin[i], nb);
    }
    return TGCRT_OK;
}

static RtStatus run_current(RtCudaCtx *c, const void *const *inputs, void *const *outputs,
                            bool storage_out, RtPool *pool, RtError *err) {
    if (!c) return rt_error_set(err, TGCRT_ERR_ARG, "no CUDA context");
    /* The context is current only during the call: the caller's thread
     * keeps whatever CUDA context it had. */
    CUresult r = c->cu->cuCtxPushCurrent_v2(c->ctx);
    if (r) return rt_cuda_fail(c, err, r, "cuCtxPushCurrent_v2", "");
    RtStatus s = run(c, inputs, outputs, storage_out, pool, err);
    if (s) {
        /* Leave nothing in flight that reads a caller's buffer or writes
         * the staging of the next run. */
        c->cu->cuStreamSynchronize(c->stream);
    }
    CUcontext prev;
    c->cu->cuCtxPopCurrent_v2(&prev);
    return s;
}

RtStatus rt_cuda_run(RtCudaCtx *c, const void *const *inputs, void *const *outputs, RtPool *pool,
                     RtError *err) {
    /* A training program's in-place updates would overwrite its params:
     * only a step (rt_cuda_train_run) may run it. */
    if (c && c->p->train)
        return rt_error_set(err, TGCRT_ERR_ARG,
                            "program '%s' is a CUDA training program: run it with "
                            "rt_context_train_step, which applies its updates",
                            c->p->name ? c->p->name : "?");
    return run_current(c, inputs, outputs, false, pool, err);
}

RtStatus rt_cuda_train_run(RtCudaCtx *c, const void *const *inputs, void *const *outputs,
                           RtPool *pool, RtError *err) {
    return run_current(c, inputs, outputs, true, pool, err);
}

/* A param's device buffer to or from host (its storage dtype, c->bytes),
 * synchronously, ordered after the work already on the stream. */
static RtStatus param_copy(RtCudaCtx *c, int i, void *host, bool up, RtError *err) {
    const CuDriver *cu = c->cu;
    size_t nb = c->bytes[1 + c->p->ninputs + i];
    CUdeviceptr d = c->dev[1 + c->p->ninputs + i];
    CUresult r = cu->cuCtxPushCurrent_v2(c->ctx);
    if (r) return rt_cuda_fail(c, err, r, "cuCtxPushCurrent_v2", "");
    /* The stream is non-blocking: synchronise it first, so the copy sees
     * (or precedes) every step enqueued on it. */
    r = cu->cuStreamSynchronize(c->stream);
    const char *call = "cuStreamSynchronize";
    if (!r && nb) {
        call = up ? "cuMemcpyHtoD_v2" : "cuMemcpyDtoH_v2";
        r = up ? cu->cuMemcpyHtoD_v2(d, host, nb) : cu->cuMemcpyDtoH_v2(host, d, nb);
    }
    CUcontext prev;
    cu->cuCtxPopCurrent_v2(&prev);
    return r ? copy_failed(c, err, r, call, "param", c->p->params[i].name) : TGCRT_OK;
}

RtStatus rt_cuda_param_download(RtCudaCtx *c, int i, void *host, RtError *err) {
    return param_copy(c, i, host, false, err);
}

RtStatus rt_cuda_param_upload(RtCudaCtx *c, int i, const void *host, RtError *err) {
    return param_copy(c, i, (void *)host, true, err);
}
