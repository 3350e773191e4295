/* cuDNN 9 for the convolutions of CUDA programs, loaded with
 * dlopen("libcudnn.so.9") like cuBLAS (cuda_blas.h): never linked, no
 * cudnn.h. The types, constants and signatures below are copied from
 * cuDNN 9's cudnn_graph.h, cudnn_ops.h and cudnn_cnn.h (the legacy
 * convolution API, deprecated but present in every cuDNN 9; stable ABI
 * values). Internal to the runtime. */
#ifndef TGCRT_CUDA_DNN_H
#define TGCRT_CUDA_DNN_H
#include "cuda_driver.h"

typedef struct cudnnContext *cudnnHandle_t;
typedef struct cudnnTensorStruct *cudnnTensorDescriptor_t;
typedef struct cudnnFilterStruct *cudnnFilterDescriptor_t;
typedef struct cudnnConvolutionStruct *cudnnConvolutionDescriptor_t;
typedef int cudnnStatus_t;

enum { CUDNN_STATUS_SUCCESS = 0, CUDNN_STATUS_NOT_SUPPORTED = 3000 };
enum { CUDNN_DATA_FLOAT = 0, CUDNN_DATA_DOUBLE = 1, CUDNN_DATA_HALF = 2, CUDNN_DATA_BFLOAT16 = 9 };
enum { CUDNN_TENSOR_NCHW = 0 };       /* cudnnTensorFormat_t */
enum { CUDNN_CROSS_CORRELATION = 1 }; /* cudnnConvolutionMode_t: PyTorch's convolution */
enum { CUDNN_DEFAULT_MATH = 0, CUDNN_TENSOR_OP_MATH = 1, CUDNN_FMA_MATH = 3 };
/* cudnnConvolutionFwdAlgo_t values that transform the data (FFT, Winograd):
 * their rounding differs from a sum of products. */
enum {
    CUDNN_CONVOLUTION_FWD_ALGO_FFT = 4,
    CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING = 5,
    CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD = 6,
    CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED = 7,
    CUDNN_CONVOLUTION_FWD_ALGO_COUNT = 8,
};
enum {
    CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT = 2,
    CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING = 3,
    CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD = 4,
    CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED = 5,
    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT = 6,
};

/* cudnnConvolutionFwdAlgoPerf_t and cudnnConvolutionBwdDataAlgoPerf_t:
 * the same layout. */
typedef struct CuDnnAlgoPerf {
    int algo;
    cudnnStatus_t status;
    float time;
    size_t memory;
    int determinism;
    int mathType;
    int reserved[3];
} CuDnnAlgoPerf;

/* The cuDNN functions used, named after their symbols; one table per
 * context (the library itself is loaded once: dlopen counts references). */
typedef struct CuDnn {
    size_t (*cudnnGetVersion)(void);
    const char *(*cudnnGetErrorString)(cudnnStatus_t);
    cudnnStatus_t (*cudnnCreate)(cudnnHandle_t *);
    cudnnStatus_t (*cudnnDestroy)(cudnnHandle_t);
    cudnnStatus_t (*cudnnSetStream)(cudnnHandle_t, CUstream);
    cudnnStatus_t (*cudnnCreateTensorDescriptor)(cudnnTensorDescriptor_t *);
    cudnnStatus_t (*cudnnSetTensor4dDescriptorEx)(cudnnTensorDescriptor_t, int, int, int, int, int,
                                                  int, int, int, int);
    cudnnStatus_t (*cudnnDestroyTensorDescriptor)(cudnnTensorDescriptor_t);
    cudnnStatus_t (*cudnnCreateFilterDescriptor)(cudnnFilterDescriptor_t *);
    cudnnStatus_t (*cudnnSetFilter4dDescriptor)(cudnnFilterDescriptor_t, int, int, int, int, int,
                                                int);
    cudnnStatus_t (*cudnnDestroyFilterDescriptor)(cudnnFilterDescriptor_t);
    cudnnStatus_t (*cudnnCreateConvolutionDescriptor)(cudnnConvolutionDescriptor_t *);
    cudnnStatus_t (*cudnnSetConvolution2dDescriptor)(cudnnConvolutionDescriptor_t, int, int, int,
                                                     int, int, int, int, int);
    cudnnStatus_t (*cudnnSetConvolutionGroupCount)(cudnnConvolutionDescriptor_t, int);
    cudnnStatus_t (*cudnnSetConvolutionMathType)(cudnnConvolutionDescriptor_t, int);
    cudnnStatus_t (*cudnnDestroyConvolutionDescriptor)(cudnnConvolutionDescriptor_t);
    cudnnStatus_t (*cudnnGetConvolutionForwardAlgorithm_v7)(cudnnHandle_t, cudnnTensorDescriptor_t,
                                                            cudnnFilterDescriptor_t,
                                                            cudnnConvolutionDescriptor_t,
                                                            cudnnTensorDescriptor_t, int, int *,
                                                            CuDnnAlgoPerf *);
    cudnnStatus_t (*cudnnFindConvolutionForwardAlgorithmEx)(cudnnHandle_t, cudnnTensorDescriptor_t,
                                                            const void *, cudnnFilterDescriptor_t,
                                                            const void *,
                                                            cudnnConvolutionDescriptor_t,
                                                            cudnnTensorDescriptor_t, void *, int,
                                                            int *, CuDnnAlgoPerf *, void *, size_t);
    cudnnStatus_t (*cudnnGetConvolutionForwardWorkspaceSize)(cudnnHandle_t, cudnnTensorDescriptor_t,
                                                             cudnnFilterDescriptor_t,
                                                             cudnnConvolutionDescriptor_t,
                                                             cudnnTensorDescriptor_t, int,
                                                             size_t *);
    cudnnStatus_t (*cudnnConvolutionForward)(cudnnHandle_t, const void *, cudnnTensorDescriptor_t,
                                             const void *, cudnnFilterDescriptor_t, const void *,
                                             cudnnConvolutionDescriptor_t, int, void *, size_t,
                                             const void *, cudnnTensorDescriptor_t, void *);
    cudnnStatus_t (*cudnnGetConvolutionBackwardDataAlgorithm_v7)(
        cudnnHandle_t, cudnnFilterDescriptor_t, cudnnTensorDescriptor_t,
        cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, int, int *, CuDnnAlgoPerf *);
    cudnnStatus_t (*cudnnFindConvolutionBackwardDataAlgorithmEx)(
        cudnnHandle_t, cudnnFilterDescriptor_t, const void *, cudnnTensorDescriptor_t, const void *,
        cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, void *, int, int *, CuDnnAlgoPerf *,
        void *, size_t);
    cudnnStatus_t (*cudnnGetConvolutionBackwardDataWorkspaceSize)(
        cudnnHandle_t, cudnnFilterDescriptor_t, cudnnTensorDescriptor_t,
        cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, int, size_t *);
    cudnnStatus_t (*cudnnConvolutionBackwardData)(cudnnHandle_t, const void *,
                                                  cudnnFilterDescriptor_t, const void *,
                                                  cudnnTensorDescriptor_t, const void *,
                                                  cudnnConvolutionDescriptor_t, int, void *, size_t,
                                                  const void *, cudnnTensorDescriptor_t, void *);
} CuDnn;

#define RT_CUDNN_SONAME "libcudnn.so.9"
/* The symbols CuDnn holds, in its order (NULL-terminated): for tests that
 * check a library exports them all. */
extern const char *const rt_cuda_dnn_symbols[];

/* Loads libcudnn.so.9 (or the file TGC_CUDNN_LIBRARY names) and resolves
 * every function. false with a one-line reason in why (what dlopen said,
 * the missing function, a version other than 9) otherwise. */
bool rt_cuda_dnn_load(CuDnn *d, char *why, size_t cap);
/* "CUDNN_STATUS_NOT_SUPPORTED (3000)": cudnnGetErrorString's name, or the
 * number alone when d is NULL; into buf. */
const char *rt_cuda_dnn_status(const CuDnn *d, cudnnStatus_t s, char *buf, size_t cap);
#endif
