/* cuBLAS through dlopen: loading the library and enqueuing a planned
 * product (the plan is cuda_gemm_plan.c). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda_blas.h"
#include "rt_internal.h"

#define SYM(name, required)                                                                        \
    { #name, offsetof(CuBlas, name), required }
static const struct {
    const char *name;
    size_t offset;
    bool required;
} symbols[] = {
    SYM(cublasCreate_v2, true),        SYM(cublasDestroy_v2, true),
    SYM(cublasSetStream_v2, true),     SYM(cublasSetMathMode, true),
    SYM(cublasGemmEx, true),           SYM(cublasGemmStridedBatchedEx, true),
    SYM(cublasSetWorkspace_v2, false), SYM(cublasGetStatusName, false),
};
#undef SYM

bool rt_cuda_blas_load(CuBlas *b, char *why, size_t cap) {
    /* Newest first: each major version is a different soname, and the
     * machine may have any one of them (the toolkit's, or PyTorch's). */
    static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11",
                                        "libcublas.so"};
    memset(b, 0, sizeof *b);
    void *h = NULL;
    const char *last = "";
    for (size_t i = 0; !h && i < sizeof names / sizeof *names; i++) {
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            b->soname = names[i];
        } else {
            const char *e = dlerror();
            last = e ? e : "";
        }
    }
    if (!h) {
        snprintf(why, cap,
                 "no cuBLAS library could be loaded (libcublas.so.13, .so.12, .so.11, "
                 ".so; the last said: %s)",
                 last);
        return false;
    }
    for (size_t i = 0; i < sizeof symbols / sizeof *symbols; i++) {
        void *f = dlsym(h, symbols[i].name);
        if (!f && symbols[i].required) {
            snprintf(why, cap, "%s has no function %s", b->soname, symbols[i].name);
            /* Not dlclose'd: cuBLAS's static CUDA runtime must not be
             * unloaded from a running process; dlopen counts references. */
            memset(b, 0, sizeof *b);
            return false;
        }
        memcpy((char *)b + symbols[i].offset, &f, sizeof f); /* POSIX: same representation */
    }
    return true;
}

static RtStatus blas_error(const CuBlas *bl, const char *call, cublasStatus_t s, RtError *err) {
    const char *name = bl->cublasGetStatusName ? bl->cublasGetStatusName(s) : NULL;
    return rt_error_set(err, s == CUBLAS_STATUS_ALLOC_FAILED ? TGCRT_ERR_NOMEM : TGCRT_ERR_DEVICE,
                        "%s failed: %s (%d)", call, name ? name : "cuBLAS error", (int)s);
}

/* Device address base + off elements (off may be negative: unsigned
 * arithmetic wraps to the right address). */
static void *at(CUdeviceptr base, int64_t off, int elem) {
    return (void *)(uintptr_t)(base + (CUdeviceptr)(off * (int64_t)elem));
}

RtStatus rt_cuda_gemm_run(const CuBlas *bl, cublasHandle_t h, const RtCudaGemmPlan *p,
                          CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, RtError *err) {
    /* alpha and beta have the compute type's C type, in host memory (the
     * default pointer mode): read at the call, so a captured graph holds
     * their values. */
    static const float f[2] = {0.0f, 1.0f};
    static const double d[2] = {0.0, 1.0};
    bool dbl = p->compute == CUBLAS_COMPUTE_64F;
    const void *alpha = dbl ? (const void *)&d[1] : (const void *)&f[1];
    const void *beta = dbl ? (const void *)&d[p->beta_one] : (const void *)&f[p->beta_one];

    int64_t idx[RT_MATMUL_MAX_BATCH] = {0}, off[3] = {0, 0, 0};
    const int64_t *const ostrides[3] = {p->outer_a, p->outer_b, p->outer_c};
    do {
        void *pa = at(a, off[0], p->elem), *pb = at(b, off[1], p->elem);
        void *pc = at(c, off[2], p->elem);
        const void *A = p->swap ? pb : pa, *B = p->swap ? pa : pb;
        cublasStatus_t s;
        if (p->batch > 1) {
            s = bl->cublasGemmStridedBatchedEx(h, p->transa, p->transb, p->m, p->n, p->k, alpha, A,
                                               p->dtype, p->lda, p->stride_a, B, p->dtype, p->ldb,
                                               p->stride_b, beta, pc, p->dtype, p->ldc, p->stride_c,
                                               p->batch, p->compute, CUBLAS_GEMM_DEFAULT);
            if (s) return blas_error(bl, "cublasGemmStridedBatchedEx", s, err);
        } else {
            s = bl->cublasGemmEx(h, p->transa, p->transb, p->m, p->n, p->k, alpha, A, p->dtype,
                                 p->lda, B, p->dtype, p->ldb, beta, pc, p->dtype, p->ldc,
                                 p->compute, CUBLAS_GEMM_DEFAULT);
            if (s) return blas_error(bl, "cublasGemmEx", s, err);
        }
    } while (rt_batch_next(p->nouter, p->outer, ostrides, idx, off));
    return TGCRT_OK;
}
