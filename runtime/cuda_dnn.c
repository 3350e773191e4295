/* cuDNN through dlopen: loading libcudnn.so.9 and naming its statuses.
 * What the convolutions do with it is cuda_conv.c. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_dnn.h"

#define SYM(name) RT_DL_SYM(CuDnn, name)
static const RtDlSym symbols[] = {
    SYM(cudnnGetVersion),
    SYM(cudnnGetErrorString),
    SYM(cudnnCreate),
    SYM(cudnnDestroy),
    SYM(cudnnSetStream),
    SYM(cudnnCreateTensorDescriptor),
    SYM(cudnnSetTensor4dDescriptorEx),
    SYM(cudnnDestroyTensorDescriptor),
    SYM(cudnnCreateFilterDescriptor),
    SYM(cudnnSetFilter4dDescriptor),
    SYM(cudnnDestroyFilterDescriptor),
    SYM(cudnnCreateConvolutionDescriptor),
    SYM(cudnnSetConvolution2dDescriptor),
    SYM(cudnnSetConvolutionGroupCount),
    SYM(cudnnSetConvolutionMathType),
    SYM(cudnnDestroyConvolutionDescriptor),
    SYM(cudnnGetConvolutionForwardAlgorithm_v7),
    SYM(cudnnFindConvolutionForwardAlgorithmEx),
    SYM(cudnnGetConvolutionForwardWorkspaceSize),
    SYM(cudnnConvolutionForward),
    SYM(cudnnGetConvolutionBackwardDataAlgorithm_v7),
    SYM(cudnnFindConvolutionBackwardDataAlgorithmEx),
    SYM(cudnnGetConvolutionBackwardDataWorkspaceSize),
    SYM(cudnnConvolutionBackwardData),
};
#undef SYM
#define NSYMBOLS (sizeof symbols / sizeof *symbols)
_Static_assert(NSYMBOLS * sizeof(void (*)(void)) == sizeof(CuDnn),
               "every CuDnn member is in the symbol table");

const char *const rt_cuda_dnn_symbols[] = {
    "cudnnGetVersion",
    "cudnnGetErrorString",
    "cudnnCreate",
    "cudnnDestroy",
    "cudnnSetStream",
    "cudnnCreateTensorDescriptor",
    "cudnnSetTensor4dDescriptorEx",
    "cudnnDestroyTensorDescriptor",
    "cudnnCreateFilterDescriptor",
    "cudnnSetFilter4dDescriptor",
    "cudnnDestroyFilterDescriptor",
    "cudnnCreateConvolutionDescriptor",
    "cudnnSetConvolution2dDescriptor",
    "cudnnSetConvolutionGroupCount",
    "cudnnSetConvolutionMathType",
    "cudnnDestroyConvolutionDescriptor",
    "cudnnGetConvolutionForwardAlgorithm_v7",
    "cudnnFindConvolutionForwardAlgorithmEx",
    "cudnnGetConvolutionForwardWorkspaceSize",
    "cudnnConvolutionForward",
    "cudnnGetConvolutionBackwardDataAlgorithm_v7",
    "cudnnFindConvolutionBackwardDataAlgorithmEx",
    "cudnnGetConvolutionBackwardDataWorkspaceSize",
    "cudnnConvolutionBackwardData",
    NULL,
};
_Static_assert(sizeof rt_cuda_dnn_symbols / sizeof *rt_cuda_dnn_symbols == NSYMBOLS + 1,
               "rt_cuda_dnn_symbols lists the table");

bool rt_cuda_dnn_load(CuDnn *d, char *why, size_t cap) {
    memset(d, 0, sizeof *d);
    /* Only cuDNN 9: its soname is the major version, and the legacy API's
     * signatures used here are 9's. TGC_CUDNN_LIBRARY names another file
     * (a cuDNN 9 outside the loader's path). */
    const char *name = getenv("TGC_CUDNN_LIBRARY");
    if (!name || !*name) name = RT_CUDNN_SONAME;
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, cap, "%s", e ? e : "cannot be loaded");
        return false;
    }
    const char *missing = rt_dl_resolve(h, symbols, NSYMBOLS, d);
    if (missing) {
        snprintf(why, cap, "%s has no function %s", name, missing);
        /* Not dlclose'd: like cuBLAS, cuDNN keeps CUDA runtime state that
         * must not be unloaded from a running process. */
        memset(d, 0, sizeof *d);
        return false;
    }
    size_t v = d->cudnnGetVersion();
    if (v < 90000 || v >= 100000) {
        snprintf(why, cap, "%s says it is cuDNN %zu, not 9.x", name, v);
        memset(d, 0, sizeof *d);
        return false;
    }
    return true;
}

const char *rt_cuda_dnn_status(const CuDnn *d, cudnnStatus_t s, char *buf, size_t cap) {
    const char *name = d && d->cudnnGetErrorString ? d->cudnnGetErrorString(s) : NULL;
    if (name)
        snprintf(buf, cap, "%s (%d)", name, (int)s);
    else
        snprintf(buf, cap, "cuDNN status %d", (int)s);
    return buf;
}
