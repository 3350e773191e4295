/* cuBLAS for the matrix products of CUDA programs, loaded with dlopen like
 * the driver (cuda_driver.h): never linked, no cublas_api.h. The types and
 * constants below are copied from CUDA 13's cublas_api.h and
 * library_types.h (stable ABI values). Internal to the runtime. */
#ifndef TGCRT_CUDA_BLAS_H
#define TGCRT_CUDA_BLAS_H
#include "cuda_driver.h"

typedef struct cublasContext *cublasHandle_t;
typedef int cublasStatus_t;

enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_ALLOC_FAILED = 3 };
enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };                                 /* cublasOperation_t */
enum { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_16BF = 14 }; /* cudaDataType */
enum { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_64F = 70 };                 /* cublasComputeType_t */
enum { CUBLAS_GEMM_DEFAULT = -1 };                                         /* cublasGemmAlgo_t */
enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16 };

/* The cuBLAS functions used, named after their symbols; one table per
 * context (the library itself is loaded once: dlopen counts references). */
typedef struct CuBlas {
    const char *soname; /* the library that was loaded */
    cublasStatus_t (*cublasCreate_v2)(cublasHandle_t *);
    cublasStatus_t (*cublasDestroy_v2)(cublasHandle_t);
    cublasStatus_t (*cublasSetStream_v2)(cublasHandle_t, CUstream);
    cublasStatus_t (*cublasSetMathMode)(cublasHandle_t, int);
    cublasStatus_t (*cublasGemmEx)(cublasHandle_t, int, int, int, int, int, const void *,
                                   const void *, int, int, const void *, int, int, const void *,
                                   void *, int, int, int, int);
    cublasStatus_t (*cublasGemmStridedBatchedEx)(cublasHandle_t, int, int, int, int, int,
                                                 const void *, const void *, int, int, long long,
                                                 const void *, int, int, long long, const void *,
                                                 void *, int, int, long long, int, int, int);
    /* Optional (NULL when absent): cuBLAS 11.2+ and 11.4.2+. */
    cublasStatus_t (*cublasSetWorkspace_v2)(cublasHandle_t, void *, size_t);
    const char *(*cublasGetStatusName)(cublasStatus_t);
} CuBlas;

/* Loads cuBLAS: libcublas.so.13, .so.12, .so.11, then libcublas.so (a
 * PyTorch install may bring only one of them). false with a one-line
 * reason in why when none loads or one lacks a required function. */
bool rt_cuda_blas_load(CuBlas *b, char *why, size_t cap);

/* How one RtMatmulDesc maps onto cuBLAS (column-major). tgc's operands are
 * row-major with element strides; cuBLAS's "A", "B", "C" are either ours
 * (swap = false: C = A B, C with unit row stride) or, usually, swapped
 * (swap = true: C^T = B^T A^T, so cuBLAS's A is our B and its B our A).
 * Batch dimensions over which B is broadcast and A's and C's rows continue
 * are folded into m (one large gemm, as on the CPU); of the rest, the
 * innermost evenly strided ones become one strided batch, and the others
 * are looped over on the host (outer, outermost first). */
typedef struct RtCudaGemmPlan {
    int dtype;          /* cudaDataType of A, B and C */
    int compute;        /* cublasComputeType_t */
    int elem;           /* bytes per element */
    bool swap;          /* cuBLAS's A is our b, its B our a */
    bool beta_one;      /* accumulate: C += A B */
    int transa, transb; /* cublasOperation_t of cuBLAS's A and B */
    int m, n, k;        /* cuBLAS's: op(A) m x k, op(B) k x n, C m x n */
    int lda, ldb, ldc;
    int batch;                              /* batchCount: 1 means cublasGemmEx */
    long long stride_a, stride_b, stride_c; /* elements between batch entries of cuBLAS's A, B, C */
    int nouter;                             /* batch dimensions looped on the host */
    int64_t outer[RT_MATMUL_MAX_BATCH];     /* their sizes, outermost first */
    int64_t outer_a[RT_MATMUL_MAX_BATCH];   /* their element strides in OUR a, b, c */
    int64_t outer_b[RT_MATMUL_MAX_BATCH];
    int64_t outer_c[RT_MATMUL_MAX_BATCH];
} RtCudaGemmPlan;

/* Pure: whether cuBLAS can compute d, and how. false for integer and bool
 * dtypes, a dimension (m, n, k, ld, batch count) above INT_MAX, k = 0,
 * an empty product, an operand with no unit stride (on a dimension of size
 * above 1), or a C that cuBLAS cannot write as a column-major matrix (its
 * rows nor its columns contiguous). f16/bf16 compute in f32 (tensor
 * cores, one rounding), f32 in f32 (no TF32), f64 in f64. */
bool rt_cuda_gemm_plan(const RtMatmulDesc *d, RtCudaGemmPlan *p);

/* Enqueues the plan's gemms on the handle's stream: a, b, c are the device
 * addresses of element 0 of batch 0 of our A, B, C. */
RtStatus rt_cuda_gemm_run(const CuBlas *bl, cublasHandle_t h, const RtCudaGemmPlan *p,
                          CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, RtError *err);
#endif
