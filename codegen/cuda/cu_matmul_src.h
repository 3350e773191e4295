/* The CUDA C source of the generic matrix product kernel tg_matmul
 * (cu_matmul_src.c), compiled by NVRTC as part of every CUDA module:
 *
 *   extern "C" __global__ void tg_matmul(TgMatmulDesc d, const char *a,
 *                                        const char *b, char *c)
 *
 * TgMatmulDesc is RtMatmulDesc (runtime/tgcrt.h) with long long fields, in
 * the same order. It includes no header, so it can be compiled with no
 * include path. The runtime launches it by name; it must not include
 * this file (runtime/ never includes codegen/). */
#ifndef TGC_CODEGEN_CUDA_CU_MATMUL_SRC_H
#define TGC_CODEGEN_CUDA_CU_MATMUL_SRC_H
extern const char cu_matmul_src[];
#endif
