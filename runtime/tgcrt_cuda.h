/* libtgcrt's CUDA ABI: the descriptor of a program built with --target
 * cuda (its kernels' images and the steps of one run), which the generated
 * glue fills, and the pure planning functions the compiler calls to lay out
 * a CUDA convolution's scratch (cuda_conv_plan.c: no GPU needed). The
 * CUDA runtime itself (cuda*.c) is internal: cuda_internal.h. */
#ifndef TGCRT_CUDA_H
#define TGCRT_CUDA_H
#include "tgcrt_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- CUDA programs (cuda*.c) ----
 *
 * tgc build --target cuda emits, instead of a forward function, the
 * kernels as CUDA C compiled by NVRTC (a CUBIN per chosen architecture and
 * one PTX) and the list of steps one run makes. The runtime loads the CUDA
 * driver with dlopen("libcuda.so.1") (and cuBLAS likewise) only when a
 * context is created, so such executables start anywhere and fail with
 * TGCRT_ERR_DEVICE where there is no driver or GPU.
 *
 * Every RT_CUDA_LAUNCH kernel is `extern "C" __global__ void NAME(char *const
 * *bufs)`: bufs is a device array of device pointers in the CPU forward's
 * order ([0] the arena, then each input, param and output in declaration
 * order, then the error cell, three unsigned long longs: a kernel claims
 * the first with atomicCAS(cell, 0, 1 + i) when index tensor error_names[i]
 * holds a value out of range, and the winner writes the value and its
 * element offset in the index tensor into the other two). */
typedef enum RtCudaStepKind {
    RT_CUDA_LAUNCH, /* kernel<<<grid, block, smem>>>(bufs) */
    RT_CUDA_MATMUL, /* C (+)= A @ B with RtMatmulDesc: cuBLAS, else the module's tg_matmul */
    RT_CUDA_CONV,   /* a convolution (RtConvDesc) through cuDNN, then its epilogue kernel */
} RtCudaStepKind;
/* A device address: bufs[slot] + offset bytes. */
typedef struct RtCudaRef {
    int32_t slot;
    int64_t offset;
} RtCudaRef;
typedef struct RtCudaStep {
    int32_t kind;           /* RtCudaStepKind */
    const char *kernel;     /* LAUNCH: the function's name in the module */
    uint32_t grid, block;   /* LAUNCH: 1-D grid of blocks, threads per block */
    uint32_t smem;          /* LAUNCH: dynamic shared memory, bytes */
    const RtMatmulDesc *mm; /* MATMUL: sizes and element strides, as on the CPU */
    RtCudaRef a, b, c;      /* MATMUL: element 0 of batch 0 of each operand */
    /* CONV: the descriptor (scratch_offset/bytes: rt_cuda_conv_scratch_bytes's
     * plan). kernel, when not NULL, is its epilogue, launched after cuDNN as
     * kernel<<<grid, block>>>(bufs, prepared): bias, batch norm, post-ops
     * and the staged result's window (RtCudaConvGeom); prepared is the
     * context's folded per-channel shift (rt_cuda_conv_prepared_bytes), or
     * NULL. */
    const struct RtConvDesc *conv;
} RtCudaStep;
/* One compiled image of the module: a CUBIN for sm (80 for sm_80...), or
 * PTX (ptx = 1) for compute capability sm and newer, JIT-compiled by the
 * driver when no CUBIN matches the device. */
typedef struct RtCudaImage {
    int32_t sm;
    int32_t ptx;
    const void *data;
    size_t size;
} RtCudaImage;
typedef struct RtCudaProgram {
    const RtCudaImage *images;
    int nimages;
    const RtCudaStep *steps;
    int nsteps;
    const char *const *error_names; /* index tensors' names, for the error cell */
    int nerror_names;
    int cuda_graph; /* tgc build --cuda-graph: the steps are captured once and replayed */
    /* tg_matmul's own program (the products cuBLAS does not take), loaded
     * only when a product needs it; none: tg_matmul is in images. */
    const RtCudaImage *mm_images;
    int nmm_images;
} RtCudaProgram;

/* ---- convolutions of CUDA programs (cuda_conv_plan.c: pure, no GPU) ----
 *
 * cuDNN's legacy API takes a symmetric padding and, for a transposed
 * convolution (cudnnConvolutionBackwardData), an output whose size the
 * forward convolution maps back onto the input. Geometries outside that
 * (a "same" padding with an odd total, an output_padding of at least the
 * stride) compute the raw result into a staging tensor at the scratch's
 * start and let the epilogue kernel copy the window dst needs: dst[h][w]
 * = raw[h + shift[0]][w + shift[1]], 0 where that is outside raw (a
 * transposed convolution's extra rows that no input reaches). */
typedef struct RtCudaConvGeom {
    int32_t staged;      /* 1: cuDNN writes a dense NCHW staging tensor, not dst */
    int64_t pad[2];      /* the symmetric padding cuDNN gets */
    int64_t raw[2];      /* the raw result's spatial size (out when not staged) */
    int64_t shift[2];    /* where dst's first row and column are in raw */
    int64_t stage_bytes; /* the staging tensor, a multiple of 256 (0: not staged) */
    int32_t epilogue;    /* 1: the result needs the epilogue kernel (bias, batch norm,
                          * post-ops or staged) */
} RtCudaConvGeom;
/* false, with why (one line) in why[cap], when cuDNN cannot compute d. */
bool rt_cuda_conv_geom(const RtConvDesc *d, RtCudaConvGeom *g, char *why, size_t cap);
/* The workspace a convolution's cuDNN algorithm may use (its "cap"):
 * src + dst bytes, at least 8 MiB and at most 256 MiB, a multiple of 256.
 * The context picks the fastest algorithm whose workspace fits. */
size_t rt_cuda_conv_workspace_cap(const RtConvDesc *d);
/* The arena scratch a convolution is planned with: its staging tensor (if
 * any) then its workspace cap; 0 for a descriptor cuDNN cannot take. Every
 * convolution gets the largest of these (the arena's shared tail), and its
 * algorithm may use all of it after its staging. */
size_t rt_cuda_conv_scratch_bytes(const RtConvDesc *d);
/* Device bytes a context keeps for a convolution outside the arena: with a
 * batch norm folded into constant weights, the folded weights and the
 * per-channel shift (f32, f64 for f64), each a multiple of 256; else 0. */
size_t rt_cuda_conv_prepared_bytes(const RtConvDesc *d);

#ifdef __cplusplus
}
#endif
#endif
