/* The CUDA driver API, loaded at run time with dlopen("libcuda.so.1").
 *
 * The runtime never links libcuda and never includes cuda.h: a program
 * built with --target cuda must start (and fail with a clear message) on
 * a machine without an NVIDIA driver, and libtgcrt must build where no
 * CUDA toolkit is installed. So the few types, constants and function
 * signatures the runtime uses are declared here, copied from the CUDA 13
 * cuda.h (their values are part of the driver's stable ABI). Where cuda.h
 * maps a name to a versioned symbol (cuMemAlloc -> cuMemAlloc_v2), the
 * versioned symbol is the one resolved: the unversioned ones are the old
 * ABIs kept for old binaries. Internal to the runtime. */
#ifndef TGCRT_CUDA_DRIVER_H
#define TGCRT_CUDA_DRIVER_H
#include <stddef.h>

#include "tgcrt.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr; /* CUdeviceptr_v2 on 64-bit hosts */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    CUDA_ERROR_NOT_FOUND = 500,
};

/* CUdevice_attribute */
enum {
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};
/* CUjit_option */
enum {
    CU_JIT_INFO_LOG_BUFFER = 3,
    CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
    CU_JIT_ERROR_LOG_BUFFER = 5,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};
enum { CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8 }; /* CUfunction_attribute */
enum { CU_STREAM_NON_BLOCKING = 1 };                          /* cuStreamCreate flags */
enum { CU_STREAM_CAPTURE_MODE_RELAXED = 2 };                  /* CUstreamCaptureMode */

/* The functions the runtime calls; each member is named after the symbol
 * it is resolved from. */
typedef struct CuDriver {
    CUresult (*cuGetErrorName)(CUresult, const char **);
    CUresult (*cuGetErrorString)(CUresult, const char **);
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDriverGetVersion)(int *);
    CUresult (*cuDeviceGetCount)(int *);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetName)(char *, int, CUdevice);
    CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice);
    CUresult (*cuCtxPushCurrent_v2)(CUcontext);
    CUresult (*cuCtxPopCurrent_v2)(CUcontext *);
    CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
    CUresult (*cuModuleUnload)(CUmodule);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamDestroy_v2)(CUstream);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuMemGetInfo_v2)(size_t *, size_t *);
    CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree_v2)(CUdeviceptr);
    CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
    CUresult (*cuMemFreeHost)(void *);
    CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void *, size_t);
    CUresult (*cuMemcpyHtoDAsync_v2)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*cuMemcpyDtoHAsync_v2)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*cuMemcpyDtoH_v2)(void *, CUdeviceptr, size_t);
    CUresult (*cuMemcpyDtoDAsync_v2)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void **, void **);
    CUresult (*cuStreamBeginCapture_v2)(CUstream, int);
    CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
    CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
    CUresult (*cuGraphExecDestroy)(CUgraphExec);
    CUresult (*cuGraphDestroy)(CUgraph);
} CuDriver;

/* The driver's function table, loaded on the first call in the process
 * (thread-safe) and kept for the life of the process. NULL when
 * libcuda.so.1 cannot be loaded or lacks one of the functions: then the
 * error is TGCRT_ERR_DEVICE with a message saying why and what to do. */
const CuDriver *rt_cuda_driver(RtError *err);

/* A table of functions loaded with dlsym (CuDriver here, CuDnn in
 * cuda_dnn.h): each symbol's name and its member's offset in the table. */
typedef struct RtDlSym {
    const char *name;
    size_t offset;
} RtDlSym;
#define RT_DL_SYM(table, name)                                                                     \
    { #name, offsetof(table, name) }
/* Resolves the n symbols of syms in the dlopen'd h into table: NULL, or
 * the name of the first one h lacks (the members before it are set). */
const char *rt_dl_resolve(void *h, const RtDlSym *syms, size_t n, void *table);

/* r as "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" (cuGetErrorName and
 * cuGetErrorString), into buf; returns buf. cu may be NULL. */
const char *rt_cuda_result_str(const CuDriver *cu, CUresult r, char *buf, size_t cap);
#define RT_CUDA_RESULT_STR_MAX 256
#endif
