/* rt_cuda_gemm_plan (how a matrix product maps onto cuBLAS), without a
 * GPU: expected plans for the layouts tgc emits (row-major, transposed
 * operands, linear's [n, k] weight, vectors, broadcast, folded and
 * host-looped batches) and the rejections (integers, bool, two non-unit
 * strides, k = 0...). Then the plan and rt_cuda_gemm_run end to end: a
 * fake cuBLAS whose gemms compute on host memory, with cuBLAS's argument
 * checks, must reproduce rt_matmul bit for bit on thousands of random
 * descriptors and leave every other element of C alone. */
#include <stdlib.h>

#include "cuda_blas.h"
#include "rt_internal.h"
#include "rt_test.h"

static RtMatmulDesc mm(RtDType t, int64_t m, int64_t n, int64_t k, int64_t a_rs, int64_t a_cs,
                       int64_t b_rs, int64_t b_cs, int64_t c_rs, int64_t c_cs) {
    RtMatmulDesc d = {.dtype = t, .m = m, .n = n, .k = k, .a_rs = a_rs, .a_cs = a_cs};
    d.b_rs = b_rs, d.b_cs = b_cs, d.c_rs = c_rs, d.c_cs = c_cs;
    return d;
}

/* swap transa transb m n k lda ldb ldc batch */
#define CHECK_PLAN(p, swap_, ta, tb, m_, n_, k_, lda_, ldb_, ldc_, batch_)                         \
    do {                                                                                           \
        CHECK_INT(swap_, (p).swap);                                                                \
        CHECK_INT(ta, (p).transa);                                                                 \
        CHECK_INT(tb, (p).transb);                                                                 \
        CHECK_INT(m_, (p).m);                                                                      \
        CHECK_INT(n_, (p).n);                                                                      \
        CHECK_INT(k_, (p).k);                                                                      \
        CHECK_INT(lda_, (p).lda);                                                                  \
        CHECK_INT(ldb_, (p).ldb);                                                                  \
        CHECK_INT(ldc_, (p).ldc);                                                                  \
        CHECK_INT(batch_, (p).batch);                                                              \
    } while (0)

enum { N = CUBLAS_OP_N, T = CUBLAS_OP_T };

static void test_layouts(void) {
    RtCudaGemmPlan p;
    /* Row-major [3, 4] @ [4, 5]: C^T = B^T A^T, both as stored. */
    RtMatmulDesc d = mm(RT_F32, 3, 5, 4, 4, 1, 5, 1, 5, 1);
    CHECK(rt_cuda_gemm_plan(&d, &p));
    CHECK_PLAN(p, 1, N, N, 5, 3, 4, 5, 4, 5, 1);
    CHECK_INT(CUDA_R_32F, p.dtype);
    CHECK_INT(CUBLAS_COMPUTE_32F, p.compute);
    CHECK_INT(4, p.elem);
    CHECK_INT(0, p.nouter);
    CHECK(!p.beta_one);
    /* Padded rows: the row strides are the leading dimensions. */
    d = mm(RT_F32, 3, 5, 4, 8, 1, 7, 1, 9, 1);
    CHECK(rt_cuda_gemm_plan(&d, &p));
    CHECK_PLAN(p, 1, N, N, 5, 3, 4, 7, 8, 9, 1);
    /* A transposed (stored [k, m]): cuBLAS's B with op T. */
    d = mm(RT_F32, 3, 5, 4, 1, 3, 5, 1, 5, 1);
    CHECK(rt_cuda_gemm_plan(&d, &p));
    CHECK_PLAN(p, 1, N, T, 5, 3, 4, 5, 3, 5, 1);
    /* linear: x [3, 4] @ W^T with W [5, 4] row-major (b_rs 1, b_cs 4):
     * gemm(T, N, n, m, k, W, k, x, k, y, n), as torch calls it. */
    d = mm(RT_F32, 3, 5, 4, 4, 1, 1, 4, 5, 1);
    d.accumulate = 1;
    CHECK(rt_cuda_gemm_plan(&d, &p));
    CHECK_PLAN(p, 1, T, N, 5, 3, 4, 4, 4, 5, 1);
    CHECK(p.beta_one);
    /* Both transposed. */
    d = mm(RT_F64, 3, 5, 4, 1, 3, 1, 4, 5, 1);
    CHECK(rt_cuda_gemm_plan(&d, &p));
    CHECK_PLAN(p, 1, T, T, 5, 3, 4, 4, 3, 5, 1);
    CHECK_INT(CUDA_R_64F, p.dtype);
    CHECK_INT(CUBLAS_COMPUTE_64F, p.compute);
    CHECK_INT(8, p.elem);
    /* Column-major C: computed directly, C = A B. */
    d = mm(RT_F32, 3, 5, 4, 4, 1, 5, 1, 1, 3);
    CHECK(rt_cuda_gemm_plan(&d, &p));
    CHECK_PLAN(p, 0, T, T, 3, 5, 4, 4, 5, 3, 1);
    d = mm(RT_F32, 3, 5, 4, 1, 3, 1, 4, 1, 3);
    CHECK(rt_cuda_gemm_plan(&d, &p));
    CHECK_PLAN(p, 0, N, N, 3, 5, 4, 3, 4, 3, 1);
    /* Vectors: a size-1 dimension's stride is irrelevant (0 here), and a
     * legal leading dimension is given. */
    d = mm(RT_BF16, 1, 5, 4, 0, 1, 5, 1, 0, 1);
    CHECK(rt_cuda_gemm_plan(&d, &p));
    CHECK_PLAN(p, 1, N, N, 5, 1, 4, 5, 4, 5, 1);
    CHECK_INT(CUDA_R_16BF, p.dtype);
    CHECK_INT(CUBLAS_COMPUTE_32F, p.compute);
    CHECK_INT(2, p.elem);
    d = mm(RT_F16, 3, 1, 4, 4, 1, 1, 0, 1, 0);
    CHECK(rt_cuda_gemm_plan(&d, &p));
    CHECK_PLAN(p, 1, N, N, 1, 3, 4, 1, 4, 1, 1);
    CHECK_INT(CUDA_R_16F, p.dtype);
    d = mm(RT_F32, 1, 1, 4, 0, 1, 1, 0, 0, 0); /* a dot product */
    CHECK(rt_cuda_gemm_plan(&d, &p));
    CHECK_PLAN(p, 1, N, N, 1, 1, 4, 1, 4, 1, 1);
}

static void test_rejected(void) {
    RtCudaGemmPlan p;
    RtDType ints[] = {RT_BOOL, RT_U8, RT_I8, RT_I16, RT_I32, RT_I64};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        RtMatmulDesc d = mm(ints[i], 3, 5, 4, 4, 1, 5, 1, 5, 1);
        CHECK(!rt_cuda_gemm_plan(&d, &p));
    }
    RtMatmulDesc d = mm(RT_F32, 3, 5, 4, 8, 2, 5, 1, 5, 1); /* A: two non-unit strides */
    CHECK(!rt_cuda_gemm_plan(&d, &p));
    d = mm(RT_F32, 3, 5, 4, 4, 1, 10, 2, 5, 1); /* B likewise */
    CHECK(!rt_cuda_gemm_plan(&d, &p));
    d = mm(RT_F32, 3, 5, 4, 4, 1, 5, 1, 10, 2); /* C likewise */
    CHECK(!rt_cuda_gemm_plan(&d, &p));
    d = mm(RT_F32, 3, 5, 4, 4, 1, 0, 1, 5, 1); /* B broadcast along k */
    CHECK(!rt_cuda_gemm_plan(&d, &p));
    d = mm(RT_F32, 3, 5, 4, -4, 1, 5, 1, 5, 1); /* negative stride */
    CHECK(!rt_cuda_gemm_plan(&d, &p));
    d = mm(RT_F32, 3, 5, 4, 2, 1, 5, 1, 5, 1); /* rows overlap (ld < k) */
    CHECK(!rt_cuda_gemm_plan(&d, &p));
    d = mm(RT_F32, 3, 5, 4, 4, 1, 5, 1, 1LL << 32, 1); /* ld above INT_MAX */
    CHECK(!rt_cuda_gemm_plan(&d, &p));
    d = mm(RT_F32, 3, 5, 0, 4, 1, 5, 1, 5, 1); /* k = 0: tg_matmul */
    CHECK(!rt_cuda_gemm_plan(&d, &p));
    d = mm(RT_F32, 0, 5, 4, 4, 1, 5, 1, 5, 1);
    CHECK(!rt_cuda_gemm_plan(&d, &p));
    d = mm(RT_F32, 3, 5, 4, 4, 1, 5, 1, 5, 1);
    d.nbatch = 1, d.batch[0] = 0; /* empty batch */
    CHECK(!rt_cuda_gemm_plan(&d, &p));
    d.nbatch = 11;
    CHECK(!rt_cuda_gemm_plan(&d, &p));
    d = mm(RT_DTYPE_COUNT, 3, 5, 4, 4, 1, 5, 1, 5, 1);
    CHECK(!rt_cuda_gemm_plan(&d, &p));
    CHECK(!rt_cuda_gemm_plan(NULL, &p));
}

static void test_batches(void) {
    RtCudaGemmPlan p;
    /* [2, 3, 4] @ [4, 5]: B broadcast, rows continue: one [6, 4] gemm. */
    RtMatmulDesc d = mm(RT_F32, 3, 5, 4, 4, 1, 5, 1, 5, 1);
    d.nbatch = 1, d.batch[0] = 2, d.a_bs[0] = 12, d.b_bs[0] = 0, d.c_bs[0] = 15;
    CHECK(rt_cuda_gemm_plan(&d, &p));
    CHECK_PLAN(p, 1, N, N, 5, 6, 4, 5, 4, 5, 1);
    CHECK_INT(0, p.nouter);
    /* A broadcast, B batched: a strided batch with A's stride 0. */
    d.a_bs[0] = 0, d.b_bs[0] = 20;
    CHECK(rt_cuda_gemm_plan(&d, &p));
    CHECK_PLAN(p, 1, N, N, 5, 3, 4, 5, 4, 5, 2);
    CHECK_INT(20, p.stride_a); /* cuBLAS's A is our B */
    CHECK_INT(0, p.stride_b);
    CHECK_INT(15, p.stride_c);
    /* [2, 3] batch, evenly strided (a size-1 dim between, any stride):
     * one strided batch of 6. */
    d = mm(RT_F16, 3, 5, 4, 4, 1, 5, 1, 5, 1);
    d.nbatch = 3;
    int64_t b[3] = {2, 1, 3}, as[3] = {36, 999, 12}, bs[3] = {60, -7, 20}, cs[3] = {45, 0, 15};
    for (int i = 0; i < 3; i++)
        d.batch[i] = b[i], d.a_bs[i] = as[i], d.b_bs[i] = bs[i], d.c_bs[i] = cs[i];
    CHECK(rt_cuda_gemm_plan(&d, &p));
    CHECK_PLAN(p, 1, N, N, 5, 3, 4, 5, 4, 5, 6);
    CHECK_INT(20, p.stride_a);
    CHECK_INT(12, p.stride_b);
    CHECK_INT(15, p.stride_c);
    CHECK_INT(0, p.nouter);
    /* The outer dimension padded: the inner one is the strided batch,
     * the outer one a host loop. */
    d.a_bs[0] = 100, d.b_bs[0] = 200;
    CHECK(rt_cuda_gemm_plan(&d, &p));
    CHECK_PLAN(p, 1, N, N, 5, 3, 4, 5, 4, 5, 3);
    CHECK_INT(1, p.nouter);
    CHECK_INT(2, p.outer[0]);
    CHECK_INT(100, p.outer_a[0]);
    CHECK_INT(200, p.outer_b[0]);
    CHECK_INT(45, p.outer_c[0]);
    /* [2, 3, m, k] @ [k, n] with a padded outer dim: the inner batch
     * folds into m, the outer one becomes the strided batch. */
    d.b_bs[0] = 0, d.b_bs[2] = 0;
    CHECK(rt_cuda_gemm_plan(&d, &p));
    CHECK_PLAN(p, 1, N, N, 5, 9, 4, 5, 4, 5, 2);
    CHECK_INT(0, p.stride_a);
    CHECK_INT(100, p.stride_b);
    CHECK_INT(45, p.stride_c);
    CHECK_INT(0, p.nouter);
    /* B broadcast but A's batch padded: no folding into m; a batch. */
    d = mm(RT_F32, 3, 5, 4, 4, 1, 5, 1, 5, 1);
    d.nbatch = 1, d.batch[0] = 2, d.a_bs[0] = 100, d.b_bs[0] = 0, d.c_bs[0] = 15;
    CHECK(rt_cuda_gemm_plan(&d, &p));
    CHECK_PLAN(p, 1, N, N, 5, 3, 4, 5, 4, 5, 2);
    CHECK_INT(0, p.stride_a);
    CHECK_INT(100, p.stride_b);
    /* Every batch entry writing the same C, or a negative stride: a host
     * loop (sequential, as on the CPU). */
    d.c_bs[0] = 0;
    CHECK(rt_cuda_gemm_plan(&d, &p));
    CHECK_INT(1, p.batch);
    CHECK_INT(1, p.nouter);
    d.c_bs[0] = -15;
    CHECK(rt_cuda_gemm_plan(&d, &p));
    CHECK_INT(1, p.batch);
    CHECK_INT(1, p.nouter);
    CHECK_INT(-15, p.outer_c[0]);
}

/* ---- a fake cuBLAS on host memory ---- */

static int gemm_calls;

static double ld_el(const void *base, int t, int64_t i) {
    RtDType dt = t == CUDA_R_64F   ? RT_F64
                 : t == CUDA_R_32F ? RT_F32
                 : t == CUDA_R_16F ? RT_F16
                                   : RT_BF16;
    return rt_load_float(base, dt, (size_t)i);
}

/* Column-major C = alpha op(A) op(B) + beta C, with cuBLAS's checks. The
 * sum is formed in float for f32/f16/bf16 (one rounding into C). */
static cublasStatus_t fake_strided(cublasHandle_t h, int ta, int tb, int m, int n, int k,
                                   const void *alpha, const void *A, int at, int lda, long long sa,
                                   const void *B, int bt, int ldb, long long sb, const void *beta,
                                   void *C, int ct, int ldc, long long sc, int batch, int compute,
                                   int algo) {
    (void)h;
    gemm_calls++;
    bool dbl = compute == CUBLAS_COMPUTE_64F;
    if (at != bt || at != ct ||
        compute != (at == CUDA_R_64F ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F) ||
        algo != CUBLAS_GEMM_DEFAULT || m < 0 || n < 0 || k < 0 || batch < 1 ||
        lda < (ta == CUBLAS_OP_N ? (m > 1 ? m : 1) : (k > 1 ? k : 1)) ||
        ldb < (tb == CUBLAS_OP_N ? (k > 1 ? k : 1) : (n > 1 ? n : 1)) || ldc < (m > 1 ? m : 1))
        return 7; /* CUBLAS_STATUS_INVALID_VALUE */
    double al = dbl ? *(const double *)alpha : *(const float *)alpha;
    double be = dbl ? *(const double *)beta : *(const float *)beta;
    RtDType dt = ct == CUDA_R_64F   ? RT_F64
                 : ct == CUDA_R_32F ? RT_F32
                 : ct == CUDA_R_16F ? RT_F16
                                    : RT_BF16;
    size_t es = rt_dtype_size(dt);
    for (int q = 0; q < batch; q++)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double s = 0;
                float sf = 0;
                for (int l = 0; l < k; l++) {
                    int64_t ia = ta == CUBLAS_OP_N ? i + (int64_t)l * lda : l + (int64_t)i * lda;
                    int64_t ib = tb == CUBLAS_OP_N ? l + (int64_t)j * ldb : j + (int64_t)l * ldb;
                    double x = ld_el(A, at, q * sa + ia), y = ld_el(B, bt, q * sb + ib);
                    s += x * y;
                    sf += (float)x * (float)y;
                }
                int64_t ic = q * sc + i + (int64_t)j * ldc;
                double v = dbl ? al * s : (double)((float)al * sf);
                if (be != 0)
                    v = dbl ? v + be * ld_el(C, ct, ic)
                            : (double)((float)v + (float)(be * ld_el(C, ct, ic)));
                rt_store_float((char *)C, dt, (size_t)ic, v);
                (void)es;
            }
    return 0;
}

static cublasStatus_t fake_gemm(cublasHandle_t h, int ta, int tb, int m, int n, int k,
                                const void *alpha, const void *A, int at, int lda, const void *B,
                                int bt, int ldb, const void *beta, void *C, int ct, int ldc,
                                int compute, int algo) {
    return fake_strided(h, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct, ldc,
                        0, 1, compute, algo);
}

static uint64_t rng = 12345;
static int64_t rnd(int64_t n) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (int64_t)((rng >> 33) % (uint64_t)n);
}

/* A random operand layout for r x c (row-major, column-major, padded,
 * both strides > 1, a broadcast row); returns the element count it spans. */
static int64_t layout(int64_t r, int64_t c, int64_t *rs, int64_t *cs) {
    switch (rnd(6)) {
    case 0: *rs = c, *cs = 1; break;
    case 1: *rs = 1, *cs = r; break;
    case 2: *rs = c + 3, *cs = 1; break;
    case 3: *rs = 1, *cs = r + 2; break;
    case 4: *rs = 2 * c, *cs = 2; break;
    default: *rs = 0, *cs = 1; break;
    }
    return (r - 1) * *rs + (c - 1) * *cs + 1;
}

static void test_end_to_end(void) {
    CuBlas bl = {0};
    bl.cublasGemmEx = fake_gemm;
    bl.cublasGemmStridedBatchedEx = fake_strided;
    RtDType types[] = {RT_F32, RT_F64, RT_F16, RT_BF16};
    int planned = 0, runs = 3000, bad = 0;
    for (int it = 0; it < runs; it++) {
        RtDType t = types[rnd(4)];
        RtMatmulDesc d = {.dtype = t, .m = 1 + rnd(5), .n = 1 + rnd(5), .k = 1 + rnd(5)};
        d.accumulate = rnd(2);
        int64_t ea = layout(d.m, d.k, &d.a_rs, &d.a_cs), eb = layout(d.k, d.n, &d.b_rs, &d.b_cs);
        int64_t ec;
        do /* C never aliases itself */
            ec = layout(d.m, d.n, &d.c_rs, &d.c_cs);
        while ((d.m > 1 && d.c_rs == 0) || (d.m > 1 && d.n > 1 && d.c_rs == d.c_cs));
        /* Batches: none, [2] or [2, 3], each operand contiguous over them,
         * padded, broadcast (stride 0) or (for A, C) continuing m. */
        d.nbatch = rnd(3);
        int64_t na = ea, nbb = eb, nc = ec;
        for (int i = (int)d.nbatch - 1; i >= 0; i--) {
            d.batch[i] = 2 + i;
            int64_t pa = rnd(3), pb = rnd(3);
            d.a_bs[i] = pa == 0 ? 0 : pa == 1 ? na : na + 5;
            d.b_bs[i] = pb == 0 ? 0 : pb == 1 ? nbb : nbb + 3;
            d.c_bs[i] = rnd(2) ? nc : nc + 7;
            if (d.nbatch == 1 && rnd(2) && d.a_rs && d.c_cs == 1 && d.c_rs >= d.n) /* into m */
                d.a_bs[i] = d.m * d.a_rs, d.c_bs[i] = d.m * d.c_rs, d.b_bs[i] = 0;
            na = d.a_bs[i] ? d.a_bs[i] * d.batch[i] + na : na;
            nbb = d.b_bs[i] ? d.b_bs[i] * d.batch[i] + nbb : nbb;
            nc = d.c_bs[i] * d.batch[i] + nc;
        }
        RtCudaGemmPlan p;
        if (!rt_cuda_gemm_plan(&d, &p)) continue;
        planned++;
        size_t es = rt_dtype_size(t);
        char *A = malloc((size_t)na * es), *B = malloc((size_t)nbb * es);
        char *C1 = malloc((size_t)nc * es), *C2 = malloc((size_t)nc * es);
        for (int64_t i = 0; i < na; i++)
            rt_store_float(A, t, (size_t)i, (double)(rnd(17) - 8));
        for (int64_t i = 0; i < nbb; i++)
            rt_store_float(B, t, (size_t)i, (double)(rnd(17) - 8) / 4);
        for (int64_t i = 0; i < nc; i++)
            rt_store_float(C1, t, (size_t)i, (double)(rnd(9) - 4));
        memcpy(C2, C1, (size_t)nc * es);
        rt_matmul(&d, A, B, C1, NULL);
        gemm_calls = 0;
        RtStatus s = rt_cuda_gemm_run(&bl, NULL, &p, (CUdeviceptr)(uintptr_t)A,
                                      (CUdeviceptr)(uintptr_t)B, (CUdeviceptr)(uintptr_t)C2, NULL);
        if (s || memcmp(C1, C2, (size_t)nc * es)) {
            if (bad++ < 5)
                printf("end to end: dtype %d m %lld n %lld k %lld strides a (%lld, %lld) b (%lld, "
                       "%lld) c (%lld, %lld) nbatch %lld: status %d, C %s\n",
                       (int)t, (long long)d.m, (long long)d.n, (long long)d.k, (long long)d.a_rs,
                       (long long)d.a_cs, (long long)d.b_rs, (long long)d.b_cs, (long long)d.c_rs,
                       (long long)d.c_cs, (long long)d.nbatch, s,
                       memcmp(C1, C2, (size_t)nc * es) ? "differs" : "same");
        }
        free(A), free(B), free(C1), free(C2);
    }
    CHECK_INT(0, bad);
    /* Most random layouts are plannable: a sanity bound on the generator. */
    CHECK(planned > runs / 4);
    printf("end to end: %d of %d random products planned for cuBLAS, %d differ from rt_matmul\n",
           planned, runs, bad);
}

/* cuBLAS itself, where the machine has it (no GPU needed to load it). */
static void test_load(void) {
    CuBlas b;
    char why[512];
    if (!rt_cuda_blas_load(&b, why, sizeof why)) {
        printf("skip: cuBLAS not loaded here (%s)\n", why);
        CHECK(strstr(why, "libcublas") != NULL);
        return;
    }
    printf("loaded %s\n", b.soname);
    CHECK(b.cublasCreate_v2 && b.cublasDestroy_v2 && b.cublasSetStream_v2 && b.cublasSetMathMode &&
          b.cublasGemmEx && b.cublasGemmStridedBatchedEx);
}

int main(void) {
    test_layouts();
    test_rejected();
    test_batches();
    test_end_to_end();
    test_load();
    return rt_test_report();
}
