/* CUDA contexts: creation and destruction. A context holds, on one GPU, the
 * loaded module, one stream, every device buffer (arena, inputs, params,
 * outputs, the error cell and the table of their addresses the kernels
 * get), pinned staging for inputs and outputs, a cuBLAS handle and, with
 * convolutions, a cuDNN handle (cuda_conv.c). The
 * driver's context is the device's primary context (the one the CUDA
 * runtime, and so cuBLAS, uses), made current only for the duration of
 * each call (push/pop), so a host program's own CUDA state is left as it
 * was. See docs/runtime.md "CUDA programs". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "rt_index_error.h"
#include "rt_internal.h"

RtStatus rt_cuda_fail(const RtCudaCtx *c, RtError *err, CUresult r, const char *call,
                      const char *what) {
    char s[RT_CUDA_RESULT_STR_MAX];
    rt_cuda_result_str(c ? c->cu : NULL, r, s, sizeof s);
    RtStatus st = r == CUDA_ERROR_OUT_OF_MEMORY ? TGCRT_ERR_NOMEM : TGCRT_ERR_DEVICE;
    /* "cuMemAlloc_v2 (param 'w') failed: ..." */
    char w[240] = "";
    if (what && *what) snprintf(w, sizeof w, what[0] == '(' ? " %s" : " (%s)", what);
    if (c && c->name[0])
        return rt_error_set(err, st, "GPU %d (%s): %s%s failed: %s", c->ordinal, c->name, call, w,
                            s);
    return rt_error_set(err, st, "%s%s failed: %s", call, w, s);
}

RtStatus rt_cuda_probe(RtError *err) {
    return rt_cuda_driver(err) ? TGCRT_OK : TGCRT_ERR_DEVICE;
}

/* ---- the device ---- */

static RtStatus pick_ordinal(RtCudaCtx *c, int count, RtError *err) {
    const char *e = getenv("TGC_CUDA_DEVICE");
    c->ordinal = 0;
    if (!e || !*e) return TGCRT_OK;
    long v = 0;
    const char *q = e;
    for (; *q >= '0' && *q <= '9' && v < count; q++)
        v = v * 10 + (*q - '0');
    if (*q || v >= count)
        return rt_error_set(err, TGCRT_ERR_DEVICE,
                            "TGC_CUDA_DEVICE=%s: expected a GPU index from 0 to %d (this machine "
                            "has %d NVIDIA GPU%s)",
                            e, count - 1, count, count == 1 ? "" : "s");
    c->ordinal = (int)v;
    return TGCRT_OK;
}

static RtStatus open_device(RtCudaCtx *c, RtError *err) {
    const CuDriver *cu = c->cu;
    char s[RT_CUDA_RESULT_STR_MAX];
    CUresult r = cu->cuInit(0);
    if (r == CUDA_ERROR_NO_DEVICE)
        return rt_error_set(err, TGCRT_ERR_DEVICE,
                            "this program was built with --target cuda and runs on an NVIDIA "
                            "GPU, but the CUDA driver found none (cuInit: %s): run it on a "
                            "machine with an NVIDIA GPU, or rebuild it with --target cpu",
                            rt_cuda_result_str(cu, r, s, sizeof s));
    if (r)
        return rt_error_set(err, TGCRT_ERR_DEVICE,
                            "this program was built with --target cuda and runs on an NVIDIA "
                            "GPU, but the CUDA driver could not be initialised (cuInit: %s): "
                            "check the driver with nvidia-smi, or rebuild it with --target cpu",
                            rt_cuda_result_str(cu, r, s, sizeof s));
    int count = 0, major = 0, minor = 0;
    if ((r = cu->cuDeviceGetCount(&count))) return rt_cuda_fail(c, err, r, "cuDeviceGetCount", "");
    if (count < 1)
        return rt_error_set(err, TGCRT_ERR_DEVICE,
                            "this program was built with --target cuda and runs on an NVIDIA "
                            "GPU, but the CUDA driver found none: run it on a machine with an "
                            "NVIDIA GPU, or rebuild it with --target cpu");
    RtStatus st = pick_ordinal(c, count, err);
    if (st) return st;
    if ((r = cu->cuDeviceGet(&c->device, c->ordinal)))
        return rt_cuda_fail(c, err, r, "cuDeviceGet", "");
    if ((r = cu->cuDeviceGetName(c->name, (int)sizeof c->name, c->device)))
        return rt_cuda_fail(c, err, r, "cuDeviceGetName", "");
    c->name[sizeof c->name - 1] = 0;
    if ((r = cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                      c->device)) ||
        (r = cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                      c->device)))
        return rt_cuda_fail(c, err, r, "cuDeviceGetAttribute", "(compute capability)");
    c->sm = major * 10 + minor;
    CUcontext ctx = NULL;
    if ((r = cu->cuDevicePrimaryCtxRetain(&ctx, c->device)))
        return rt_cuda_fail(c, err, r, "cuDevicePrimaryCtxRetain", "");
    c->ctx = ctx;
    return TGCRT_OK;
}

/* ---- buffers ---- */

/* Device memory of `bytes` (at least 1) rounded up to a multiple of 256,
 * cuMemAlloc's alignment: a kernel's vector load at a buffer's last
 * elements stays inside it. */
static RtStatus dev_alloc(RtCudaCtx *c, CUdeviceptr *p, size_t bytes, const char *what,
                          const char *name, RtError *err) {
    char w[200];
    snprintf(w, sizeof w, "%s%s%s%s", what, name ? " '" : "", name ? name : "", name ? "'" : "");
    *p = 0;
    CUresult r = bytes > SIZE_MAX - 255
                     ? CUDA_ERROR_OUT_OF_MEMORY
                     : c->cu->cuMemAlloc_v2(p, bytes ? (bytes + 255) / 256 * 256 : 256);
    if (r) *p = 0;
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        size_t fr = 0, total = 0;
        c->cu->cuMemGetInfo_v2(&fr, &total);
        return rt_error_set(err, TGCRT_ERR_NOMEM,
                            "out of GPU memory for %s (%zu bytes): GPU %d (%s) has %zu of %zu "
                            "bytes free",
                            w, bytes, c->ordinal, c->name, fr, total);
    }
    return r ? rt_cuda_fail(c, err, r, "cuMemAlloc_v2", w) : TGCRT_OK;
}

static RtStatus pin_alloc(RtCudaCtx *c, void **p, size_t bytes, const char *what, const char *name,
                          RtError *err) {
    char w[200];
    snprintf(w, sizeof w, "%s%s%s%s", what, name ? " '" : "", name ? name : "", name ? "'" : "");
    *p = NULL;
    CUresult r = c->cu->cuMemHostAlloc(p, bytes ? bytes : 1, 0);
    if (r) *p = NULL;
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        return rt_error_set(err, TGCRT_ERR_NOMEM, "out of pinned host memory for %s (%zu bytes)", w,
                            bytes);
    return r ? rt_cuda_fail(c, err, r, "cuMemHostAlloc", w) : TGCRT_OK;
}

/* An output that updates a param stays on the GPU (cuda_run.c): no
 * staging. */
static bool staged(const RtProgram *p, int out) {
    return !p->train || p->train->update_of[out] < 0;
}

static RtStatus alloc_buffers(RtCudaCtx *c, void *const *host_params, RtError *err) {
    const RtProgram *p = c->p;
    const CuDriver *cu = c->cu;
    int ni = p->ninputs, np = p->nparams, no = p->noutputs;
    RtStatus s = dev_alloc(c, &c->dev[0], p->arena_bytes, "the arena", NULL, err);
    for (int i = 0; !s && i < ni; i++)
        s = dev_alloc(c, &c->dev[1 + i], c->bytes[1 + i], "input", p->inputs[i].name, err);
    for (int i = 0; !s && i < np; i++)
        s = dev_alloc(c, &c->dev[1 + ni + i], c->bytes[1 + ni + i], "param", p->params[i].name,
                      err);
    for (int i = 0; !s && i < no; i++)
        if (rt_output_in_place(p, i))
            c->dev[1 + ni + np + i] = c->dev[1 + ni + p->train->update_of[i]];
        else
            s = dev_alloc(c, &c->dev[1 + ni + np + i], c->bytes[1 + ni + np + i], "output",
                          p->outputs[i].name, err);
    if (!s)
        s = dev_alloc(c, &c->dev[c->nbufs - 1], 8 * RT_INDEX_ERROR_WORDS, "the error cell", NULL,
                      err);
    if (!s)
        s = dev_alloc(c, &c->bufs, (size_t)c->nbufs * sizeof *c->dev, "the buffer table", NULL,
                      err);
    if (s) return s;

    /* Params once (synchronous copies from pageable memory), and the table
     * of addresses the kernels receive. */
    CUresult r;
    for (int i = 0; i < np; i++) {
        size_t nb = c->bytes[1 + ni + i];
        if (nb && (r = cu->cuMemcpyHtoD_v2(c->dev[1 + ni + i], host_params[i], nb)))
            return rt_cuda_fail(c, err, r, "cuMemcpyHtoD_v2", "(uploading a param)");
    }
    if ((r = cu->cuMemcpyHtoD_v2(c->bufs, c->dev, (size_t)c->nbufs * sizeof *c->dev)))
        return rt_cuda_fail(c, err, r, "cuMemcpyHtoD_v2", "(the buffer table)");

    for (int i = 0; !s && i < ni; i++)
        s = pin_alloc(c, &c->in_pin[i], c->bytes[1 + i], "the staging buffer of input",
                      p->inputs[i].name, err);
    for (int i = 0; !s && i < no; i++)
        if (staged(p, i))
            s = pin_alloc(c, &c->out_pin[i], c->bytes[1 + ni + np + i],
                          "the staging buffer of output", p->outputs[i].name, err);
    if (!s)
        s = pin_alloc(c, (void **)&c->err_pin, 8 * RT_INDEX_ERROR_WORDS, "the error cell's copy",
                      NULL, err);
    return s;
}

/* ---- creation ---- */

static RtStatus build(RtCudaCtx *c, void *const *host_params, RtError *err) {
    RtStatus s = rt_cuda_load_module(c, err);
    if (s) return s;
    /* Non-blocking: no implicit synchronisation with the legacy default
     * stream, which other code in the process may use. */
    CUresult r = c->cu->cuStreamCreate(&c->stream, CU_STREAM_NON_BLOCKING);
    if (r) {
        c->stream = NULL;
        return rt_cuda_fail(c, err, r, "cuStreamCreate", "");
    }
    if ((s = alloc_buffers(c, host_params, err))) return s;
    if ((s = rt_cuda_conv_setup(c, host_params, err))) return s;
    return rt_cuda_plan_steps(c, err);
}

RtStatus rt_cuda_create(const RtProgram *p, void *const *host_params, RtCudaCtx **out,
                        RtError *err) {
    *out = NULL;
    RtStatus s = rt_cuda_check_program(p, err);
    if (s) return s;
    RtCudaCtx *c = calloc(1, sizeof *c);
    size_t nbufs = 2 + (size_t)p->ninputs + (size_t)p->nparams + (size_t)p->noutputs;
    if (c) {
        c->p = p;
        c->nbufs = (int)nbufs;
        c->fn = calloc((size_t)p->cuda->nsteps + 1, sizeof *c->fn);
        c->mm = calloc((size_t)p->cuda->nsteps + 1, sizeof *c->mm);
        c->cv = calloc((size_t)p->cuda->nsteps + 1, sizeof *c->cv);
        c->dev = calloc(nbufs, sizeof *c->dev);
        c->bytes = calloc(nbufs, sizeof *c->bytes);
        c->in_pin = calloc((size_t)p->ninputs + 1, sizeof *c->in_pin);
        c->out_pin = calloc((size_t)p->noutputs + 1, sizeof *c->out_pin);
    }
    if (!c || !c->fn || !c->mm || !c->cv || !c->dev || !c->bytes || !c->in_pin || !c->out_pin) {
        rt_cuda_destroy(c);
        return rt_error_set(err, TGCRT_ERR_NOMEM, "out of memory creating a CUDA context");
    }
    rt_cuda_slot_sizes(p, c->bytes);

    /* cuDNN before the GPU is touched: a machine without it fails at once. */
    if (!(c->cu = rt_cuda_driver(err)) || (s = rt_cuda_conv_load(c, err)) ||
        (s = open_device(c, err))) {
        rt_cuda_destroy(c);
        return err && err->status ? err->status : TGCRT_ERR_DEVICE;
    }
    CUresult r = c->cu->cuCtxPushCurrent_v2(c->ctx);
    if (r) {
        s = rt_cuda_fail(c, err, r, "cuCtxPushCurrent_v2", "");
    } else {
        s = build(c, host_params, err);
        CUcontext prev;
        c->cu->cuCtxPopCurrent_v2(&prev);
    }
    if (s) {
        rt_cuda_destroy(c);
        return s;
    }
    *out = c;
    return TGCRT_OK;
}

/* ---- destruction: everything created so far, in reverse ---- */

void rt_cuda_destroy(RtCudaCtx *c) {
    if (!c) return;
    const CuDriver *cu = c->cu;
    if (cu && c->ctx && !cu->cuCtxPushCurrent_v2(c->ctx)) {
        if (c->stream) cu->cuStreamSynchronize(c->stream); /* nothing may still use a buffer */
        if (c->graph) cu->cuGraphExecDestroy(c->graph);
        if (c->blas_h) c->blas.cublasDestroy_v2(c->blas_h);
        rt_cuda_conv_free(c);
        if (c->workspace) cu->cuMemFree_v2(c->workspace);
        if (c->bufs) cu->cuMemFree_v2(c->bufs);
        int first_out = 1 + c->p->ninputs + c->p->nparams;
        for (int i = 0; c->dev && i < c->nbufs; i++) {
            bool alias =
                i >= first_out && i < c->nbufs - 1 && rt_output_in_place(c->p, i - first_out);
            if (c->dev[i] && !alias) cu->cuMemFree_v2(c->dev[i]);
        }
        for (int i = 0; c->in_pin && i < c->p->ninputs; i++)
            if (c->in_pin[i]) cu->cuMemFreeHost(c->in_pin[i]);
        for (int i = 0; c->out_pin && i < c->p->noutputs; i++)
            if (c->out_pin[i]) cu->cuMemFreeHost(c->out_pin[i]);
        if (c->err_pin) cu->cuMemFreeHost(c->err_pin);
        if (c->stream) cu->cuStreamDestroy_v2(c->stream);
        if (c->mod) cu->cuModuleUnload(c->mod);
        if (c->mm_mod) cu->cuModuleUnload(c->mm_mod);
        CUcontext prev;
        cu->cuCtxPopCurrent_v2(&prev);
    }
    if (cu && c->ctx) cu->cuDevicePrimaryCtxRelease_v2(c->device);
    free(c->fn);
    free(c->mm);
    free(c->cv);
    free(c->dev);
    free(c->bytes);
    free(c->in_pin);
    free(c->out_pin);
    free(c);
}
