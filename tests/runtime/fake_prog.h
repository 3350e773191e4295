/* What the tests' hand-written programs are built from. Each stands in for
 * the C that tgc generates (an RtProgram, its tensor tables and its
 * forward), so that the runtime is tested without the compiler: the tensor
 * entries, and the product most of them compute, y[2, 3] (+)= x[2, 4] @
 * w[4, 3] (test_program.c, rt_fake_exe.c, cuda_fake_test.c,
 * test_cuda_program.c; train_prog.h and cuda_fake_train_test.c use the
 * entries). */
#ifndef FAKE_PROG_H
#define FAKE_PROG_H
#include <string.h>

#include "tgcrt.h"

/* An input or output: name, declared dtype, storage dtype (they differ
 * under --precision), ndim, then the sizes. */
#define FP_TENSOR(n, dt, st, nd, ...)                                                              \
    { .name = n, .desc = {dt, nd, {__VA_ARGS__}}, .storage = st }
/* A param: the same, with its initialiser (an RtInitKind) and that
 * initialiser's a, b and seed. */
#define FP_PARAM(n, dt, st, init_, a, b, seed, nd, ...)                                            \
    {                                                                                              \
        .name = n, .desc = {dt, nd, {__VA_ARGS__}}, .storage = st, .init = init_, .init_a = a,     \
        .init_b = b, .init_seed = seed                                                             \
    }

/* The affine product's sizes: x[FP_M, FP_K] @ w[FP_K, FP_N] -> y[FP_M, FP_N]. */
enum { FP_M = 2, FP_K = 4, FP_N = 3 };

/* That product as generated code describes it, all three operands dense in
 * C order. acc 1: y += x @ w (y holds a bias); 0: y = x @ w. */
#define FP_AFFINE_MM(dt, acc)                                                                      \
    {                                                                                              \
        .dtype = dt, .m = FP_M, .n = FP_N, .k = FP_K, .a_rs = FP_K, .a_cs = 1, .b_rs = FP_N,       \
        .b_cs = 1, .c_rs = FP_N, .c_cs = 1, .accumulate = acc                                      \
    }

/* The affine programs' forward at dtype dt (x, w, b and y all stored in
 * it): y = b + x @ w, b[FP_N] repeated over y's rows. */
static inline void fp_affine(RtDType dt, const void *x, const void *w, const void *b, void *y,
                             RtPool *pool) {
    size_t es = rt_dtype_size(dt);
    for (int i = 0; i < FP_M; i++)
        memcpy((char *)y + (size_t)i * FP_N * es, b, FP_N * es);
    RtMatmulDesc d = FP_AFFINE_MM(dt, 1);
    rt_matmul(&d, x, w, y, pool);
}
#endif
