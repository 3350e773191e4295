/* CUDA contexts end to end against fake_cuda.c (a fake libcuda.so.1 whose
 * device memory is host memory and whose kernels are the host functions
 * below): ctest runs this with LD_LIBRARY_PATH set to the fake's
 * directory. It covers what no GPU-less machine could otherwise run:
 * creation (image choice, TGC_CUDA_DEVICE, params uploaded at their
 * storage dtype), runs with f16 storage converted both ways, tg_matmul's
 * launch (from the module, or from its own program), the error cell, CUDA graphs (captured once,
 * replayed), every failure path of creation and runs, and that destruction releases everything the
 * driver handed out. cuBLAS is kept out (TGC_CUDA_NO_CUBLAS=1): the real one cannot run on a fake
 * driver. */
#include <stdlib.h>

#include "fake_cuda.h"
#include "fake_prog.h"
#include "rt_test.h"
#include "tgcrt.h"

/* ---- the program: y = relu(x @ w), f16 storage of f32 tensors ---- */

static const RtTensorInfo IN[] = {FP_TENSOR("x", RT_F32, RT_F16, 2, 2, 4)};
static const RtTensorInfo PARAMS[] = {
    FP_PARAM("w", RT_F32, RT_F16, RT_INIT_ONES, 0, 0, 0, 2, 4, 3)};
static const RtTensorInfo OUT[] = {FP_TENSOR("y", RT_F32, RT_F16, 2, 2, 3),
                                   FP_TENSOR("e", RT_F32, RT_F32, 1, 0)};
static const RtMatmulDesc MM = FP_AFFINE_MM(RT_F16, 0);
/* The PTX without its final NUL: the runtime must terminate it. */
static RtCudaImage IMAGES[] = {{80, 0, "FAKECUBIN sm_80", 16},
                               {90, 0, "FAKECUBIN sm_90", 16},
                               {90, 1, "FAKEPTX compute_90", 18}};
/* slots: 0 arena, 1 x, 2 w, 3 y, 4 e, 5 the error cell */
static const RtCudaStep STEPS[] = {
    {RT_CUDA_MATMUL, NULL, 0, 0, 0, &MM, {1, 0}, {2, 0}, {3, 0}, NULL},
    {RT_CUDA_LAUNCH, "k_relu", 1, 32, 0, NULL, {0, 0}, {0, 0}, {0, 0}, NULL},
    {RT_CUDA_LAUNCH, "k_check", 1, 32, 0, NULL, {0, 0}, {0, 0}, {0, 0}, NULL},
    {RT_CUDA_LAUNCH, "k_empty", 0, 32, 0, NULL, {0, 0}, {0, 0}, {0, 0}, NULL}, /* grid 0: skipped */
};
static const char *const ERRS[] = {"idx"};
static RtCudaProgram CUDA = {IMAGES, 3, STEPS, 4, ERRS, 1, 0, NULL, 0};
static const RtProgram PROG = {"fake", 1,    1,    2,     IN,   PARAMS, OUT, 64,   1,
                               NULL,   NULL, 0,    &CUDA, NULL, 0,      0,   NULL, NULL,
                               NULL,   0,    NULL, 0,     NULL, 0,      NULL};

/* ---- the kernels, on the host ---- */

static void **table(void **params) {
    CUdeviceptr bufs;
    memcpy(&bufs, params[0], sizeof bufs);
    return (void **)(uintptr_t)bufs;
}

static void k_relu(void **params, unsigned grid[3], unsigned block[3]) {
    uint16_t *y = table(params)[3];
    CHECK(grid[0] == 1 && block[0] == 32);
    for (int i = 0; i < 6; i++)
        if (y[i] & 0x8000) y[i] = 0;
}

/* Sets the error cell (error_names[0]) when x[0] is above 100. */
static void k_check(void **params, unsigned grid[3], unsigned block[3]) {
    (void)grid, (void)block;
    void **t = table(params);
    if (rt_f16_to_f32(*(uint16_t *)t[1]) > 100) *(unsigned long long *)t[5] = 1;
}

static void k_empty(void **params, unsigned grid[3], unsigned block[3]) {
    (void)params, (void)grid, (void)block;
    CHECK(!"a grid of 0 blocks was launched");
}

static void tg_matmul(void **params, unsigned grid[3], unsigned block[3]) {
    RtMatmulDesc d;
    CUdeviceptr a, b, c;
    memcpy(&d, params[0], sizeof d);
    memcpy(&a, params[1], 8), memcpy(&b, params[2], 8), memcpy(&c, params[3], 8);
    /* The launch configuration cu_matmul_src.c documents. */
    CHECK(grid[0] == 1 && grid[1] == 1 && grid[2] == 1);
    CHECK(block[0] == 16 && block[1] == 16 && block[2] == 1);
    rt_matmul(&d, (void *)(uintptr_t)a, (void *)(uintptr_t)b, (void *)(uintptr_t)c, NULL);
}

/* ---- helpers ---- */

static RtStatus create(RtContext **c, char *msg, size_t cap) {
    RtStatus s = rt_context_create(&PROG, NULL, 1, c);
    snprintf(msg, cap, "%s", rt_context_error(*c));
    return s;
}

/* x's rows sum to 10 and -2: y = relu(row sums) = [[10]*3, [0]*3]. */
static RtStatus run(RtContext *c, float x0, float y[6]) {
    float x[8] = {x0, 2, 3, 4 - x0 + 1, -1, -2, 0.5f, 0.5f}, e[1];
    const void *in[] = {x};
    void *out[] = {y, e};
    for (int i = 0; i < 6; i++)
        y[i] = -99;
    return rt_context_run(c, in, out);
}

static void check_y(const float y[6]) {
    for (int i = 0; i < 6; i++)
        CHECK(y[i] == (i < 3 ? 10.0f : 0.0f));
}

/* ---- tests ---- */

static void test_runs(int graph) {
    CUDA.cuda_graph = graph;
    char msg[RT_ERROR_MSG_MAX];
    RtContext *c;
    int caps = fake_captures(), launches = fake_launches();
    CHECK_INT(TGCRT_OK, create(&c, msg, sizeof msg));
    CHECK_STR("FAKECUBIN sm_90", fake_loaded());
    float y[6];
    for (int r = 0; r < 3; r++) {
        CHECK_INT(TGCRT_OK, run(c, 1, y));
        check_y(y);
    }
    /* An index out of range: the error cell names the tensor; the next
     * run starts from a clear cell. */
    CHECK_INT(TGCRT_ERR_VALUE, run(c, 1000, y));
    CHECK_STR("idx holds a value out of range for the dimension it indexes", rt_context_error(c));
    CHECK_INT(TGCRT_OK, run(c, 1, y));
    check_y(y);
    CHECK_STR("", rt_context_error(c));
    CHECK_INT(graph ? 1 : 0, fake_captures() - caps);
    CHECK_INT(5 * 3, fake_launches() - launches); /* 3 launches a run, grid 0 skipped */
    rt_context_destroy(c);
    CHECK_INT(0, fake_alive());
}

static void expect_image(int sm, const char *image) {
    char msg[RT_ERROR_MSG_MAX];
    RtContext *c;
    fake_config(1, sm, 1 << 30);
    CHECK_INT(TGCRT_OK, create(&c, msg, sizeof msg));
    CHECK_STR(image, fake_loaded());
    rt_context_destroy(c);
}

static void test_images(void) {
    expect_image(90, "FAKECUBIN sm_90");
    expect_image(86, "FAKECUBIN sm_80");
    expect_image(89, "FAKECUBIN sm_80");
    expect_image(100, "FAKEPTX compute_90");
    expect_image(120, "FAKEPTX compute_90");
    char msg[RT_ERROR_MSG_MAX];
    RtContext *c;
    fake_config(1, 75, 1 << 30);
    CHECK_INT(TGCRT_ERR_DEVICE, create(&c, msg, sizeof msg));
    CHECK_STR("the program has code for sm_80, sm_90 and PTX for compute_90, but GPU 0 (Fake GPU) "
              "is sm_75: rebuild it with --gpu-arch sm_75",
              msg);
    rt_context_destroy(c);
    /* An image the driver rejects: the next candidate is tried. */
    IMAGES[1].data = "not an image";
    expect_image(90, "FAKEPTX compute_90");
    IMAGES[1].data = "FAKECUBIN sm_90";
    fake_config(1, 90, 1 << 30);
    CHECK_INT(0, fake_alive());
}

static void test_device_env(void) {
    char msg[RT_ERROR_MSG_MAX];
    RtContext *c;
    fake_config(2, 90, 1 << 30);
    setenv("TGC_CUDA_DEVICE", "1", 1);
    CHECK_INT(TGCRT_OK, create(&c, msg, sizeof msg));
    CHECK_INT(1, fake_ordinal());
    rt_context_destroy(c);
    setenv("TGC_CUDA_DEVICE", "2", 1);
    CHECK_INT(TGCRT_ERR_DEVICE, create(&c, msg, sizeof msg));
    CHECK_STR(
        "TGC_CUDA_DEVICE=2: expected a GPU index from 0 to 1 (this machine has 2 NVIDIA GPUs)",
        msg);
    rt_context_destroy(c);
    setenv("TGC_CUDA_DEVICE", "1x", 1);
    CHECK_INT(TGCRT_ERR_DEVICE, create(&c, msg, sizeof msg));
    rt_context_destroy(c);
    unsetenv("TGC_CUDA_DEVICE");
    fake_config(1, 90, 1 << 30);
    CHECK_INT(0, fake_alive());
}

/* The n-th call of `fn` fails with `result`, for every n until creation
 * gets through: each failure has `status` and a message with `needle`,
 * and leaves nothing alive. Returns how many calls failed creation. */
static int fail_create(const char *fn, int result, RtStatus status, const char *needle) {
    int n = 1;
    for (;; n++) {
        char msg[RT_ERROR_MSG_MAX];
        RtContext *c;
        fake_fail(fn, n, result);
        RtStatus s = create(&c, msg, sizeof msg);
        rt_context_destroy(c);
        CHECK_INT(0, fake_alive());
        if (!s) break;
        CHECK_INT(status, s);
        CHECK_HAS(msg, needle);
    }
    fake_fail(NULL, 0, 0);
    return n - 1;
}

static void test_create_failures(void) {
    /* arena, x, w, y, e, error cell, the table */
    CHECK_INT(7, fail_create("cuMemAlloc_v2", 2, TGCRT_ERR_NOMEM, "out of GPU memory for "));
    CHECK_INT(4, fail_create("cuMemHostAlloc", 2, TGCRT_ERR_NOMEM, "out of pinned host memory"));
    CHECK_INT(1, fail_create("cuModuleLoadDataEx", 218, TGCRT_ERR_DEVICE,
                             "cuModuleLoadDataEx (the sm_90 CUBIN image) failed"));
    CHECK_INT(
        4, fail_create("cuModuleGetFunction", 500, TGCRT_ERR_INTERNAL, "the module has no kernel"));
    CHECK_INT(1, fail_create("cuStreamCreate", 1, TGCRT_ERR_DEVICE, "cuStreamCreate failed"));
    CHECK_INT(1, fail_create("cuDevicePrimaryCtxRetain", 1, TGCRT_ERR_DEVICE,
                             "cuDevicePrimaryCtxRetain failed"));
    CHECK_INT(1, fail_create("cuInit", 100, TGCRT_ERR_DEVICE, "found none (cuInit"));
    CHECK_INT(1, fail_create("cuInit", 999, TGCRT_ERR_DEVICE, "could not be initialised"));
    /* A device too small for the arena (padded to 256 bytes). */
    char msg[RT_ERROR_MSG_MAX];
    RtContext *c;
    fake_config(1, 90, 200);
    CHECK_INT(TGCRT_ERR_NOMEM, create(&c, msg, sizeof msg));
    CHECK_STR("out of GPU memory for the arena (64 bytes): GPU 0 (Fake GPU) has 200 of 200 bytes "
              "free",
              msg);
    rt_context_destroy(c);
    fake_config(1, 90, 1 << 30);
    CHECK_INT(0, fake_alive());
}

/* A run whose n-th call of fn fails, then a good run on the same context. */
static void fail_run(int graph, const char *fn, int nth, int result, const char *needle) {
    CUDA.cuda_graph = graph;
    char msg[RT_ERROR_MSG_MAX];
    RtContext *c;
    float y[6];
    CHECK_INT(TGCRT_OK, create(&c, msg, sizeof msg));
    fake_fail(fn, nth, result);
    CHECK_INT(TGCRT_ERR_DEVICE, run(c, 1, y));
    CHECK_HAS(rt_context_error(c), needle);
    fake_fail(NULL, 0, 0);
    CHECK_INT(TGCRT_OK, run(c, 1, y));
    check_y(y);
    rt_context_destroy(c);
    CHECK_INT(0, fake_alive());
}

/* tg_matmul as a program of its own (what tgc build emits where a graph
 * has products): loaded after the module, its best image for the GPU,
 * released with the context; its failures name it. */
static RtCudaImage MM_IMAGES[] = {
    {80, 0, "FAKEMM sm_80", 13}, {90, 0, "FAKEMM sm_90", 13}, {90, 1, "FAKEMMPTX compute_90", 20}};

static void test_matmul_program(void) {
    CUDA.cuda_graph = 0;
    CUDA.mm_images = MM_IMAGES;
    CUDA.nmm_images = 3;
    char msg[RT_ERROR_MSG_MAX];
    RtContext *c;
    float y[6];
    CHECK_INT(TGCRT_OK, create(&c, msg, sizeof msg));
    CHECK_STR("FAKEMM sm_90", fake_loaded());
    CHECK_INT(TGCRT_OK, run(c, 1, y));
    check_y(y);
    rt_context_destroy(c);
    CHECK_INT(0, fake_alive());
    expect_image(86, "FAKEMM sm_80");
    expect_image(100, "FAKEMMPTX compute_90");
    fake_config(1, 90, 1 << 30);
    CHECK_INT(2, fail_create("cuModuleLoadDataEx", 218, TGCRT_ERR_DEVICE, "cuModuleLoadDataEx ("));
    fake_fail("cuModuleLoadDataEx", 2, 218);
    CHECK_INT(TGCRT_ERR_DEVICE, create(&c, msg, sizeof msg));
    CHECK_HAS(msg, "cuModuleLoadDataEx (tg_matmul's sm_90 CUBIN image) failed");
    rt_context_destroy(c);
    fake_fail(NULL, 0, 0);
    CHECK_INT(0, fake_alive());
    /* No image of tg_matmul's for the GPU (a malformed build): said so. */
    MM_IMAGES[2].sm = 100;
    MM_IMAGES[1].sm = 100;
    CHECK_INT(TGCRT_ERR_DEVICE, create(&c, msg, sizeof msg));
    CHECK_HAS(msg, "the program has tg_matmul's code for sm_80, sm_100 and PTX for compute_100");
    rt_context_destroy(c);
    MM_IMAGES[1].sm = 90;
    MM_IMAGES[2].sm = 90;
    CHECK_INT(0, fake_alive());
    CUDA.mm_images = NULL;
    CUDA.nmm_images = 0;
}

static void test_run_failures(void) {
    for (int graph = 0; graph < 2; graph++) {
        fail_run(graph, "cuLaunchKernel", 2, 719,
                 "GPU 0 (Fake GPU): cuLaunchKernel (step 1, kernel 'k_relu') failed: "
                 "CUDA_ERROR_LAUNCH_FAILED (fake error)");
        fail_run(graph, "cuLaunchKernel", 1, 719, "(step 0, kernel 'tg_matmul') failed");
        fail_run(graph, "cuStreamSynchronize", 1, 719,
                 "cuStreamSynchronize (running the program) failed");
    }
    fail_run(1, "cuStreamBeginCapture_v2", 1, 1, "cuStreamBeginCapture_v2 failed");
    fail_run(1, "cuStreamEndCapture", 1, 1, "cuStreamEndCapture failed");
    fail_run(1, "cuGraphInstantiateWithFlags", 1, 1, "cuGraphInstantiateWithFlags failed");
    fail_run(1, "cuGraphLaunch", 1, 1, "cuGraphLaunch failed");
}

/* ---- a state on the GPU: kept between runs, zeroed by reset ---- */

/* slots: 0 arena, 1 x, 2 w, 3 s (a state), 4 y, 5 the error cell */
static const RtTensorInfo ST_PARAMS[] = {
    FP_PARAM("w", RT_F32, RT_F16, RT_INIT_ONES, 0, 0, 0, 2, 4, 3),
    {.name = "s", .desc = {RT_F32, 1, {4}}, .storage = RT_F32, .state = true}};
static const RtTensorInfo ST_OUT[] = {FP_TENSOR("y", RT_F32, RT_F32, 1, 4)};
static const RtCudaStep ST_STEPS[] = {
    {RT_CUDA_LAUNCH, "k_acc", 1, 32, 0, NULL, {0, 0}, {0, 0}, {0, 0}, NULL}};
static RtCudaProgram ST_CUDA = {IMAGES, 3, ST_STEPS, 1, NULL, 0, 0, NULL, 0};

/* s += 1 (in place, on the "device"); y = s. */
static void k_acc(void **params, unsigned grid[3], unsigned block[3]) {
    (void)grid, (void)block;
    float *st = table(params)[3], *y = table(params)[4];
    for (int i = 0; i < 4; i++)
        y[i] = st[i] += 1;
}

static void test_state(void) {
    RtProgram p = {.name = "stateful",
                   .ninputs = 1,
                   .nparams = 2,
                   .noutputs = 1,
                   .inputs = IN,
                   .params = ST_PARAMS,
                   .outputs = ST_OUT,
                   .arena_bytes = 64,
                   .default_threads = 1,
                   .cuda = &ST_CUDA};
    fake_config(1, 90, 1 << 30);
    RtContext *c = NULL;
    CHECK_INT(TGCRT_OK, rt_context_create(&p, NULL, 1, &c));
    float x[8] = {0}, y[4];
    const void *in[] = {x};
    void *out[] = {y};
    for (int r = 1; r <= 3; r++) { /* zero at creation, kept between runs */
        CHECK_INT(TGCRT_OK, rt_context_run(c, in, out));
        CHECK(y[0] == (float)r && y[3] == (float)r);
    }
    CHECK_INT(TGCRT_OK, rt_context_reset_state(c));
    CHECK_INT(TGCRT_OK, rt_context_run(c, in, out));
    CHECK(y[0] == 1 && y[3] == 1);
    /* Shared contexts are CPU only: said so. */
    RtContext *sh = NULL;
    CHECK_INT(TGCRT_ERR_ARG, rt_context_create_shared(&p, c, &sh));
    CHECK_HAS(rt_context_error(sh), "shared contexts of CUDA programs are not supported yet");
    rt_context_destroy(sh);
    rt_context_destroy(c);
    CHECK_INT(0, fake_alive());
}

int main(void) {
    if (!fake_cuda_load()) return 1;
    size_t one[] = {8}, mm[] = {sizeof(RtMatmulDesc), 8, 8, 8};
    fake_kernel("k_relu", k_relu, 1, one);
    fake_kernel("k_check", k_check, 1, one);
    fake_kernel("k_empty", k_empty, 1, one);
    fake_kernel("tg_matmul", tg_matmul, 4, mm);
    fake_kernel("k_acc", k_acc, 1, one);

    test_runs(0);
    test_runs(1);
    test_images();
    test_device_env();
    test_create_failures();
    test_run_failures();
    test_matmul_program();
    test_state();
    return rt_test_report();
}
