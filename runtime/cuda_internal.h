/* CUDA programs (tgc build --target cuda): the device side of a context.
 * program.c calls these when RtProgram.cuda is set; cuda.c creates and
 * destroys, cuda_run.c runs. Internal to the runtime; see docs/runtime.md
 * "CUDA programs". */
#ifndef TGCRT_CUDA_INTERNAL_H
#define TGCRT_CUDA_INTERNAL_H
#include "cuda_blas.h"
#include "cuda_dnn.h"

typedef struct RtCudaCtx RtCudaCtx;

/* Loads the CUDA driver (once per process): TGCRT_ERR_DEVICE, saying
 * what to do, where there is none. */
RtStatus rt_cuda_probe(RtError *err);
/* Loads the driver, picks the GPU (TGC_CUDA_DEVICE, else 0) and the image
 * for it, loads the module, allocates every device buffer, uploads the
 * params (host_params[i]: param i at its storage dtype) and plans the
 * matrix products. No driver, no GPU or no code for it is
 * TGCRT_ERR_DEVICE; device memory running out is TGCRT_ERR_NOMEM. On
 * failure *out is NULL and everything created so far is released. */
RtStatus rt_cuda_create(const RtProgram *p, void *const *host_params, RtCudaCtx **out,
                        RtError *err);
/* One run: inputs and outputs are the caller's buffers at the declared
 * dtypes (converted from/to the storage dtypes on the pool). An index out
 * of range is TGCRT_ERR_VALUE naming the tensor; a CUDA failure is
 * TGCRT_ERR_DEVICE naming the call. */
RtStatus rt_cuda_run(RtCudaCtx *c, const void *const *inputs, void *const *outputs, RtPool *pool,
                     RtError *err);
/* A training program's run (rt_cuda_run refuses one): outputs that update
 * no param land in outputs at their storage dtype; each update becomes its
 * param's value on the GPU (written in place by its kernel, or copied over
 * the param after the steps), so params never leave the device. */
RtStatus rt_cuda_train_run(RtCudaCtx *c, const void *const *inputs, void *const *outputs,
                           RtPool *pool, RtError *err);
/* Param i between its device buffer and host (storage dtype), after the
 * work on the stream: what the training API reads and writes. */
RtStatus rt_cuda_param_download(RtCudaCtx *c, int i, void *host, RtError *err);
RtStatus rt_cuda_param_upload(RtCudaCtx *c, int i, const void *host, RtError *err);
void rt_cuda_destroy(RtCudaCtx *c); /* NULL is fine */

/* tg_matmul's launch configuration, as codegen/cuda/cu_matmul_src.c
 * documents it (the runtime cannot include that file): blocks of 16 x 16
 * threads, each computing 64 x 64 tiles of C; grid (ceil(n / 64),
 * min(ceil(m / 64), 65535), min(batch entries, 65535)). */
#define RT_CUDA_MM_TILE 64
#define RT_CUDA_MM_BLOCK 16
#define RT_CUDA_GRID_YZ_MAX 65535u
#define RT_CUDA_MAX_IMAGES 64 /* more is a malformed program */

/* One RT_CUDA_MATMUL step, planned at creation. */
typedef struct RtCudaMatmul {
    bool skip;           /* an empty product (m, n or a batch size is 0) */
    bool blas;           /* cuBLAS with plan, else tg_matmul */
    RtCudaGemmPlan plan; /* blas */
    unsigned grid[3];    /* tg_matmul's grid */
} RtCudaMatmul;

/* One RT_CUDA_CONV step, set up at creation (cuda_conv.c). A transposed
 * convolution is cuDNN's backward data: x is then its dy (the conv's
 * source) and y its dx (the result). */
typedef struct RtCudaConv {
    bool skip; /* an empty result: nothing to compute */
    RtCudaConvGeom geom;
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    int algo;
    size_t algo_bytes;            /* the workspace the algorithm asked for */
    CUdeviceptr src, weight, raw; /* cuDNN's operands (raw: dst or the staging) */
    CUdeviceptr ws;               /* the workspace, in the arena after the staging */
    size_t ws_bytes;              /* the rest of the planned scratch */
    CUdeviceptr prepared, shift;  /* folded weights and shift (a constant batch norm), or 0 */
} RtCudaConv;

struct RtCudaCtx {
    const RtProgram *p;
    const CuDriver *cu;
    int ordinal; /* the GPU's index */
    CUdevice device;
    int sm; /* compute capability, major * 10 + minor */
    char name[128];
    CUcontext ctx; /* the device's primary context, retained (shared with cuBLAS) */
    CUmodule mod;
    CUmodule mm_mod; /* tg_matmul's, when the program has it apart and a product needs it */
    CUstream stream;
    CUfunction *fn;              /* per step: its kernel (tg_matmul for a MATMUL step off cuBLAS) */
    RtCudaMatmul *mm;            /* per step (MATMUL steps only) */
    int nbufs;                   /* 2 + inputs + params + outputs */
    CUdeviceptr *dev;            /* per slot of bufs: arena, inputs, params, outputs, error cell */
    size_t *bytes;               /* their sizes (unpadded) */
    CUdeviceptr bufs;            /* the device array of dev[], the kernels' argument */
    void **in_pin;               /* per input: pinned staging at the storage dtype */
    void **out_pin;              /* per output: likewise */
    unsigned long long *err_pin; /* the error cell, read back */
    CuBlas blas;
    cublasHandle_t blas_h; /* NULL: every product runs on tg_matmul */
    CUdeviceptr workspace; /* cuBLAS's, fixed so that graph capture allocates nothing */
    CUgraphExec graph;     /* cuda_graph: the steps, captured at the first run */
    RtCudaConv *cv;        /* per step (CONV steps only) */
    CuDnn dnn;
    cudnnHandle_t dnn_h; /* NULL: the program has no convolution to compute */
};

/* cuda_steps.c: checks the CUDA part of a program (images, steps, the
 * operands of every product within their buffers) before anything is
 * loaded: TGCRT_ERR_ARG naming the step, like program.c's checks. */
RtStatus rt_cuda_check_program(const RtProgram *p, RtError *err);
/* The byte size of each slot of bufs (the error cell's is 8). */
void rt_cuda_slot_sizes(const RtProgram *p, size_t *bytes);
/* cuda_steps.c: plans every product (cuBLAS, loading it if any product can
 * use it, else tg_matmul) and fetches tg_matmul when needed. */
RtStatus rt_cuda_plan_steps(RtCudaCtx *c, RtError *err);
/* cuda_module.c: picks the image for the GPU, loads the module and fetches
 * every LAUNCH step's kernel. */
RtStatus rt_cuda_load_module(RtCudaCtx *c, RtError *err);
/* cuda_module.c: the module tg_matmul is in (loading its own program's
 * images the first time, when the program has them apart) into *mod. */
RtStatus rt_cuda_matmul_module(RtCudaCtx *c, CUmodule *mod, RtError *err);

/* cuda_conv.c: the convolutions. rt_cuda_conv_load loads cuDNN when the
 * program has a convolution to compute (TGCRT_ERR_DEVICE saying what to
 * install when it cannot); rt_cuda_conv_setup (after the buffers exist and
 * the params are uploaded) makes the descriptors, folds constant batch
 * norms into the weights and picks each algorithm; rt_cuda_conv_run
 * enqueues step s; rt_cuda_conv_free releases what setup made. */
RtStatus rt_cuda_conv_load(RtCudaCtx *c, RtError *err);
RtStatus rt_cuda_conv_setup(RtCudaCtx *c, void *const *host_params, RtError *err);
RtStatus rt_cuda_conv_run(RtCudaCtx *c, int s, RtError *err);
void rt_cuda_conv_free(RtCudaCtx *c);
/* cuda_conv_plan.c: NULL when d is well formed for a context whose slots
 * have the given byte sizes (slot 0 the arena), else what is wrong. */
const char *rt_cuda_conv_check(const RtConvDesc *d, const size_t *bytes, int nslots);

/* A failed driver call as an RtError: TGCRT_ERR_NOMEM for
 * CUDA_ERROR_OUT_OF_MEMORY, else TGCRT_ERR_DEVICE; the message names the
 * call (and what), the error's name and its description. */
RtStatus rt_cuda_fail(const RtCudaCtx *c, RtError *err, CUresult r, const char *call,
                      const char *what);
#endif
