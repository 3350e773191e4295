/* The convolutions of a CUDA program through cuDNN's legacy API, set up
 * once per context: descriptors from the RtConvDesc (the plan is
 * cuda_conv_plan.c), constant batch norms folded into the weights on the
 * host and uploaded, and each convolution's algorithm chosen by measuring
 * (cudnnFind...Ex) within the workspace the compiler planned at the
 * arena's tail, so that a run allocates nothing and `tgc report` stays
 * exact. A run enqueues cuDNN's call and then the epilogue kernel the
 * compiler wrote (bias, batch norm, post-ops, a staged result's window).
 * See docs/runtime.md, "Convolutions: cuDNN". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_internal.h"
#include "cuda_internal.h"
#include "rt_internal.h"

static bool has_convs(const RtCudaProgram *cp) {
    for (int s = 0; s < cp->nsteps; s++)
        if (cp->steps[s].kind == RT_CUDA_CONV) {
            const RtConvDesc *d = cp->steps[s].conv;
            if (d->n && d->out[0] && d->out[1]) return true;
        }
    return false;
}

RtStatus rt_cuda_conv_load(RtCudaCtx *c, RtError *err) {
    if (!has_convs(c->p->cuda)) return TGCRT_OK;
    char why[512];
    if (rt_cuda_dnn_load(&c->dnn, why, sizeof why)) return TGCRT_OK;
    return rt_error_set(err, TGCRT_ERR_DEVICE,
                        "this program has convolutions, which run on the GPU through cuDNN 9, "
                        "but " RT_CUDNN_SONAME " could not be loaded (%s): install cuDNN 9 for "
                        "your CUDA (NVIDIA's cudnn9 package, or pip's nvidia-cudnn-cu12/-cu13 "
                        "with its lib folder on LD_LIBRARY_PATH), or rebuild it with --target cpu",
                        why);
}

/* ---- errors ---- */

static RtStatus dnn_fail(const RtCudaCtx *c, RtError *err, int step, const char *call,
                         cudnnStatus_t s) {
    char st[160];
    rt_cuda_dnn_status(&c->dnn, s, st, sizeof st);
    return rt_error_set(err, TGCRT_ERR_DEVICE, "GPU %d (%s): step %d (convolution): %s failed: %s",
                        c->ordinal, c->name, step, call, st);
}

#define DNN(call, args)                                                                            \
    do {                                                                                           \
        cudnnStatus_t s_ = c->dnn.call args;                                                       \
        if (s_) return dnn_fail(c, err, step, #call, s_);                                          \
    } while (0)

/* ---- descriptors ---- */

static int data_type(int32_t t) {
    return t == RT_F64    ? CUDNN_DATA_DOUBLE
           : t == RT_F16  ? CUDNN_DATA_HALF
           : t == RT_BF16 ? CUDNN_DATA_BFLOAT16
                          : CUDNN_DATA_FLOAT;
}

static RtStatus describe(RtCudaCtx *c, int step, const RtConvDesc *d, RtCudaConv *v, RtError *err) {
    const RtCudaConvGeom *g = &v->geom;
    int dt = data_type(d->dtype);
    DNN(cudnnCreateTensorDescriptor, (&v->x));
    DNN(cudnnCreateTensorDescriptor, (&v->y));
    DNN(cudnnCreateFilterDescriptor, (&v->w));
    DNN(cudnnCreateConvolutionDescriptor, (&v->conv));
    const int64_t *xs = d->src_strides;
    DNN(cudnnSetTensor4dDescriptorEx,
        (v->x, dt, (int)d->n, (int)d->cin, (int)d->in[0], (int)d->in[1], (int)xs[0], (int)xs[1],
         (int)xs[2], (int)xs[3]));
    /* The result: dst with its own strides, or the dense staging tensor. */
    int64_t ys[4], r0 = g->raw[0], r1 = g->raw[1];
    if (g->staged) {
        ys[3] = 1, ys[2] = r1, ys[1] = r0 * r1, ys[0] = d->cout * r0 * r1;
    } else {
        memcpy(ys, d->dst_strides, sizeof ys);
    }
    DNN(cudnnSetTensor4dDescriptorEx, (v->y, dt, (int)d->n, (int)d->cout, (int)r0, (int)r1,
                                       (int)ys[0], (int)ys[1], (int)ys[2], (int)ys[3]));
    /* A filter is [K, C/groups, kh, kw] with K the forward convolution's
     * output channels: a transposed convolution's weight [cin, cout/groups,
     * kh, kw] is exactly the filter of the convolution it reverses. */
    int64_t k = d->transposed ? d->cin : d->cout;
    int64_t cg = d->transposed ? d->cout / d->groups : d->cin / d->groups;
    DNN(cudnnSetFilter4dDescriptor,
        (v->w, dt, CUDNN_TENSOR_NCHW, (int)k, (int)cg, (int)d->k[0], (int)d->k[1]));
    DNN(cudnnSetConvolution2dDescriptor,
        (v->conv, (int)g->pad[0], (int)g->pad[1], (int)d->stride[0], (int)d->stride[1],
         (int)d->dilation[0], (int)d->dilation[1], CUDNN_CROSS_CORRELATION,
         d->dtype == RT_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT));
    DNN(cudnnSetConvolutionGroupCount, (v->conv, (int)d->groups));
    /* f32 without TF32 (PyTorch's f32 semantics, as for cuBLAS); f16/bf16
     * on tensor cores, accumulating in f32; f64 as it comes. */
    int math = d->dtype == RT_F32   ? CUDNN_FMA_MATH
               : d->dtype == RT_F64 ? CUDNN_DEFAULT_MATH
                                    : CUDNN_TENSOR_OP_MATH;
    DNN(cudnnSetConvolutionMathType, (v->conv, math));
    return TGCRT_OK;
}

/* ---- a constant batch norm, folded on the host ---- */

static float round_to(RtDType t, double v) {
    float f = (float)v;
    if (t == RT_F16) return rt_f16_to_f32(rt_f32_to_f16(f));
    if (t == RT_BF16) return rt_bf16_to_f32(rt_f32_to_bf16(f));
    return f;
}

/* w * scale[o] rounded to the dtype, and shift (rounded to the dtype, held
 * as f32; f64 as it is), as the CPU's conv.c folds them (the same
 * rt_conv_channel_affine), uploaded into the prepared buffer. */
static RtStatus fold(RtCudaCtx *c, int step, const RtConvDesc *d, RtCudaConv *v,
                     void *const *host_params, RtError *err) {
    const RtProgram *p = c->p;
    size_t bytes = rt_cuda_conv_prepared_bytes(d);
    RtDType t = (RtDType)d->dtype;
    size_t es = rt_dtype_size(t);
    int64_t icg = d->cin / d->groups, ocg = d->cout / d->groups, kk = d->k[0] * d->k[1];
    int64_t total = d->cout * icg * kk;
    size_t wbytes = ((size_t)total * es + 255) / 256 * 256;
    void **hb = calloc((size_t)c->nbufs, sizeof *hb);
    double *scale = malloc(sizeof(double) * (size_t)d->cout);
    double *shift = malloc(sizeof(double) * (size_t)d->cout);
    char *host = calloc(1, bytes);
    RtStatus s = TGCRT_OK;
    if (!hb || !scale || !shift || !host) {
        s = rt_error_set(err, TGCRT_ERR_NOMEM, "out of memory folding a batch norm (step %d)",
                         step);
        goto done;
    }
    /* Only params are read (constant_weights): their host copies. */
    for (int i = 0; i < p->nparams; i++)
        hb[1 + p->ninputs + i] = host_params[i];
    rt_conv_channel_affine(d, hb, scale, shift);
    const char *w = rt_conv_ptr(hb, d->weight);
    for (int64_t i = 0; i < total; i++) {
        /* The output channel: dim 0 of a convolution's weight, dim 1 (per
         * group) of a transposed one's. */
        int64_t o = d->transposed ? (i / (ocg * kk)) / icg * ocg + (i / kk) % ocg : i / (icg * kk);
        double x = rt_load_float(w, t, (size_t)i) * scale[o];
        rt_store_float(host, t, (size_t)i, t == RT_F64 ? x : (double)round_to(t, x));
    }
    for (int64_t o = 0; o < d->cout; o++) {
        if (t == RT_F64)
            memcpy(host + wbytes + (size_t)o * 8, &shift[o], 8);
        else {
            float f = round_to(t, shift[o]);
            memcpy(host + wbytes + (size_t)o * 4, &f, 4);
        }
    }
    CUresult r = c->cu->cuMemAlloc_v2(&v->prepared, bytes);
    if (r) {
        v->prepared = 0;
        char what[80];
        snprintf(what, sizeof what, "(the folded weights of step %d, %zu bytes)", step, bytes);
        s = rt_cuda_fail(c, err, r, "cuMemAlloc_v2", what);
        goto done;
    }
    if ((r = c->cu->cuMemcpyHtoD_v2(v->prepared, host, bytes))) {
        s = rt_cuda_fail(c, err, r, "cuMemcpyHtoD_v2", "(folded convolution weights)");
        goto done;
    }
    v->weight = v->prepared;
    v->shift = v->prepared + wbytes;
done:
    free(hb);
    free(scale);
    free(shift);
    free(host);
    return s;
}

/* ---- the algorithm ---- */

/* FFT and Winograd transform the data: their rounding is not a sum of
 * products, so f32 and f64 (which must match PyTorch's f32 semantics) do
 * without them unless TGC_CUDNN_ALL_ALGOS=1. */
static bool allowed(const RtConvDesc *d, int algo) {
    if (d->dtype != RT_F32 && d->dtype != RT_F64) return true;
    const char *all = getenv("TGC_CUDNN_ALL_ALGOS");
    if (all && *all && strcmp(all, "0")) return true;
    if (!d->transposed)
        return algo != CUDNN_CONVOLUTION_FWD_ALGO_FFT &&
               algo != CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING &&
               algo != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD &&
               algo != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
    return algo != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT &&
           algo != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING &&
           algo != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD &&
           algo != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}

/* The first usable entry of a list cuDNN sorted fastest first, or -1. */
static int first_fit(const RtConvDesc *d, const CuDnnAlgoPerf *perf, int n, size_t cap) {
    for (int i = 0; i < n; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= cap &&
            allowed(d, perf[i].algo))
            return i;
    return -1;
}

/* Measures every algorithm that fits the workspace on the real buffers
 * (the arena holds nothing yet; params are only read), fastest first;
 * where measuring fails, cuDNN's heuristic order. */
static RtStatus choose(RtCudaCtx *c, int step, const RtConvDesc *d, RtCudaConv *v, RtError *err) {
    enum { MAXA = 8 };
    CuDnnAlgoPerf perf[MAXA];
    int n = 0, i = -1;
    void *ws = (void *)(uintptr_t)v->ws, *x = (void *)(uintptr_t)v->src;
    void *w = (void *)(uintptr_t)v->weight, *y = (void *)(uintptr_t)v->raw;
    cudnnStatus_t st;
    memset(perf, 0, sizeof perf);
    if (!d->transposed)
        st = c->dnn.cudnnFindConvolutionForwardAlgorithmEx(
            c->dnn_h, v->x, x, v->w, w, v->conv, v->y, y, MAXA, &n, perf, ws, v->ws_bytes);
    else
        st = c->dnn.cudnnFindConvolutionBackwardDataAlgorithmEx(
            c->dnn_h, v->w, w, v->x, x, v->conv, v->y, y, MAXA, &n, perf, ws, v->ws_bytes);
    if (!st) i = first_fit(d, perf, n, v->ws_bytes);
    if (i < 0) {
        n = 0;
        memset(perf, 0, sizeof perf);
        if (!d->transposed)
            DNN(cudnnGetConvolutionForwardAlgorithm_v7,
                (c->dnn_h, v->x, v->w, v->conv, v->y, MAXA, &n, perf));
        else
            DNN(cudnnGetConvolutionBackwardDataAlgorithm_v7,
                (c->dnn_h, v->w, v->x, v->conv, v->y, MAXA, &n, perf));
        /* The heuristics' memory is an estimate: ask for the real size. */
        for (int k = 0; k < n; k++) {
            size_t need = SIZE_MAX;
            if (perf[k].status) continue;
            cudnnStatus_t q = d->transposed
                                  ? c->dnn.cudnnGetConvolutionBackwardDataWorkspaceSize(
                                        c->dnn_h, v->w, v->x, v->conv, v->y, perf[k].algo, &need)
                                  : c->dnn.cudnnGetConvolutionForwardWorkspaceSize(
                                        c->dnn_h, v->x, v->w, v->conv, v->y, perf[k].algo, &need);
            perf[k].memory = q ? SIZE_MAX : need;
        }
        i = first_fit(d, perf, n, v->ws_bytes);
    }
    if (i < 0) {
        char st2[160] = "";
        if (st) rt_cuda_dnn_status(&c->dnn, st, st2, sizeof st2);
        return rt_error_set(err, TGCRT_ERR_DEVICE,
                            "GPU %d (%s): step %d (convolution, %s): cuDNN %zu has no algorithm "
                            "for it within its %zu-byte workspace%s%s",
                            c->ordinal, c->name, step, rt_dtype_name((RtDType)d->dtype),
                            c->dnn.cudnnGetVersion(), v->ws_bytes, st ? "; measuring said " : "",
                            st2);
    }
    v->algo = perf[i].algo;
    v->algo_bytes = perf[i].memory;
    /* Run with the math type the measured kernel used. */
    DNN(cudnnSetConvolutionMathType, (v->conv, perf[i].mathType));
    return TGCRT_OK;
}

/* ---- set-up, run, release ---- */

static CUdeviceptr at(const RtCudaCtx *c, RtConvRef r) {
    return c->dev[r.slot] + (CUdeviceptr)r.offset;
}

RtStatus rt_cuda_conv_setup(RtCudaCtx *c, void *const *host_params, RtError *err) {
    const RtCudaProgram *cp = c->p->cuda;
    if (!has_convs(cp)) return TGCRT_OK;
    int step = -1;
    cudnnHandle_t h = NULL;
    cudnnStatus_t hs = c->dnn.cudnnCreate(&h);
    if (hs) return dnn_fail(c, err, step, "cudnnCreate", hs);
    c->dnn_h = h;
    /* Every call of this context on its one stream (graph capture too). */
    DNN(cudnnSetStream, (c->dnn_h, c->stream));
    for (step = 0; step < cp->nsteps; step++) {
        const RtCudaStep *st = &cp->steps[step];
        if (st->kind != RT_CUDA_CONV) continue;
        const RtConvDesc *d = st->conv;
        RtCudaConv *v = &c->cv[step];
        char why[200];
        if (!rt_cuda_conv_geom(d, &v->geom, why, sizeof why)) /* checked: cannot happen */
            return rt_error_set(err, TGCRT_ERR_ARG, "step %d: %s", step, why);
        if ((v->skip = !d->n || !d->out[0] || !d->out[1])) continue;
        v->src = at(c, d->src);
        v->weight = at(c, d->weight);
        CUdeviceptr scratch = c->dev[0] + (CUdeviceptr)d->scratch_offset;
        v->raw = v->geom.staged ? scratch : at(c, d->dst);
        v->ws = scratch + (CUdeviceptr)v->geom.stage_bytes;
        v->ws_bytes = (size_t)(d->scratch_bytes - v->geom.stage_bytes);
        RtStatus s = describe(c, step, d, v, err);
        if (!s && rt_cuda_conv_prepared_bytes(d)) s = fold(c, step, d, v, host_params, err);
        if (!s) s = choose(c, step, d, v, err);
        if (s) return s;
    }
    return TGCRT_OK;
}

RtStatus rt_cuda_conv_run(RtCudaCtx *c, int step, RtError *err) {
    const RtCudaStep *st = &c->p->cuda->steps[step];
    const RtConvDesc *d = st->conv;
    RtCudaConv *v = &c->cv[step];
    if (v->skip) return TGCRT_OK;
    /* alpha = 1, beta = 0, in the compute type's C type, from host memory:
     * read at the call, so a captured graph holds their values. */
    static const float f[2] = {1.0f, 0.0f};
    static const double g[2] = {1.0, 0.0};
    const void *alpha = d->dtype == RT_F64 ? (const void *)&g[0] : (const void *)&f[0];
    const void *beta = d->dtype == RT_F64 ? (const void *)&g[1] : (const void *)&f[1];
    void *ws = (void *)(uintptr_t)v->ws, *x = (void *)(uintptr_t)v->src;
    void *w = (void *)(uintptr_t)v->weight, *y = (void *)(uintptr_t)v->raw;
    if (!d->transposed)
        DNN(cudnnConvolutionForward,
            (c->dnn_h, alpha, v->x, x, v->w, w, v->conv, v->algo, ws, v->ws_bytes, beta, v->y, y));
    else
        DNN(cudnnConvolutionBackwardData,
            (c->dnn_h, alpha, v->w, w, v->x, x, v->conv, v->algo, ws, v->ws_bytes, beta, v->y, y));
    if (!st->kernel) return TGCRT_OK;
    /* The epilogue: kernel(bufs, shift). */
    void *args[] = {&c->bufs, &v->shift};
    CUresult r = c->cu->cuLaunchKernel(c->fn[step], st->grid, 1, 1, st->block, 1, 1, 0, c->stream,
                                       args, NULL);
    if (!r) return TGCRT_OK;
    char what[160];
    snprintf(what, sizeof what, "(step %d, kernel '%s')", step, st->kernel);
    return rt_cuda_fail(c, err, r, "cuLaunchKernel", what);
}

void rt_cuda_conv_free(RtCudaCtx *c) {
    for (int s = 0; c->cv && s < c->p->cuda->nsteps; s++) {
        RtCudaConv *v = &c->cv[s];
        if (v->x) c->dnn.cudnnDestroyTensorDescriptor(v->x);
        if (v->y) c->dnn.cudnnDestroyTensorDescriptor(v->y);
        if (v->w) c->dnn.cudnnDestroyFilterDescriptor(v->w);
        if (v->conv) c->dnn.cudnnDestroyConvolutionDescriptor(v->conv);
        if (v->prepared) c->cu->cuMemFree_v2(v->prepared);
        memset(v, 0, sizeof *v);
    }
    if (c->dnn_h) c->dnn.cudnnDestroy(c->dnn_h);
    c->dnn_h = NULL;
}
