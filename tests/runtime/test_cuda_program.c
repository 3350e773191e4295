/* A CUDA program (RtProgram.cuda, as tgc build --target cuda fills it) on
 * a machine without a usable GPU: contexts fail with TGCRT_ERR_DEVICE and
 * a message saying what to do, rt_main exits 1, and malformed CUDA
 * descriptors are TGCRT_ERR_ARG before any driver is looked for.
 *
 * Where libcuda.so.1 does not load (this machine), the message must name
 * it and suggest --target cpu. With TGC_TEST_CUDA_STUB=1 (ctest's
 * runtime_cuda_stub: the CUDA Toolkit's stub libcuda as libcuda.so.1),
 * every driver function the runtime resolves must exist, and the failure
 * comes from cuInit. On a machine with a real GPU the program's images
 * (sm_10, PTX for compute_999) fit no GPU: still TGCRT_ERR_DEVICE. */
#include <dlfcn.h>
#include <stdlib.h>

#include "fake_prog.h"
#include "rt_test.h"
#include "tgcrt.h"

/* x f32[2, 4] @ w f32[4, 3] (ones) -> y f32[2, 3], then a kernel on y. */
static const RtTensorInfo IN[] = {FP_TENSOR("x", RT_F32, RT_F32, 2, 2, 4)};
static const RtTensorInfo PARAMS[] = {
    FP_PARAM("w", RT_F32, RT_F32, RT_INIT_ONES, 0, 0, 0, 2, 4, 3)};
static const RtTensorInfo OUT[] = {FP_TENSOR("y", RT_F32, RT_F32, 2, 2, 3)};

static const RtMatmulDesc MM = FP_AFFINE_MM(RT_F32, 0);
static RtMatmulDesc mm_bad;

static const char CUBIN[] = "not really an ELF image";
static const char PTX[] = "// not really PTX\n";
static RtCudaImage IMAGES[] = {{10, 0, CUBIN, sizeof CUBIN}, {999, 1, PTX, sizeof PTX}};
/* slots: 0 arena, 1 x, 2 w, 3 y, 4 the error cell */
static RtCudaStep STEPS[] = {
    {RT_CUDA_MATMUL, NULL, 0, 0, 0, &MM, {1, 0}, {2, 0}, {3, 0}, NULL},
    {RT_CUDA_LAUNCH, "k_relu", 1, 64, 0, NULL, {0, 0}, {0, 0}, {0, 0}, NULL},
};
static const char *const ERRS[] = {"idx"};
static RtCudaProgram CUDA = {IMAGES, 2, STEPS, 2, ERRS, 1, 1, NULL, 0};
static RtProgram PROG = {"gpu", 1, 1, 1,    IN,   PARAMS, OUT, 256,  0, NULL, NULL, 0,   &CUDA,
                         NULL,  0, 0, NULL, NULL, NULL,   0,   NULL, 0, NULL, 0,    NULL};

static void forward(void **bufs, RtPool *pool) {
    (void)bufs, (void)pool;
}

/* rt_context_create's status and message. */
static RtStatus create(const RtProgram *p, char *msg, size_t cap) {
    RtContext *c = NULL;
    RtStatus s = rt_context_create(p, NULL, 1, &c);
    snprintf(msg, cap, "%s", rt_context_error(c));
    if (s && c) {
        /* A failed context answers every run with the same status. */
        float x[8] = {0}, y[6];
        const void *in[] = {x};
        void *out[] = {y};
        CHECK_INT(s, rt_context_run(c, in, out));
    }
    rt_context_destroy(c);
    return s;
}

static void test_status(void) {
    CHECK_STR("device", rt_status_name(TGCRT_ERR_DEVICE));
    CHECK_INT(1, rt_status_exit_code(TGCRT_ERR_DEVICE));
}

/* Malformed descriptors: TGCRT_ERR_ARG whatever the machine. */
static void expect_arg(const char *needle) {
    char msg[RT_ERROR_MSG_MAX];
    CHECK_INT(TGCRT_ERR_ARG, create(&PROG, msg, sizeof msg));
    CHECK_HAS(msg, needle);
}

static void test_malformed(void) {
    RtProgram both = PROG;
    both.forward = forward; /* a forward and CUDA steps */
    char msg[RT_ERROR_MSG_MAX];
    CHECK_INT(TGCRT_ERR_ARG, create(&both, msg, sizeof msg));
    CHECK_HAS(msg, "malformed descriptor");
    RtProgram neither = PROG;
    neither.cuda = NULL;
    CHECK_INT(TGCRT_ERR_ARG, create(&neither, msg, sizeof msg));
    CHECK_HAS(msg, "malformed descriptor");

    CUDA.nimages = 0;
    expect_arg("malformed CUDA descriptor");
    CUDA.nimages = 2;
    IMAGES[1].size = 0;
    expect_arg("CUDA image 1 is malformed");
    IMAGES[1].size = sizeof PTX;

    STEPS[1].kernel = NULL;
    expect_arg("CUDA step 1: malformed kernel launch");
    STEPS[1].kernel = "k_relu";
    STEPS[1].block = 2048;
    expect_arg("CUDA step 1: malformed kernel launch");
    STEPS[1].block = 64;
    STEPS[1].kind = 7;
    expect_arg("CUDA step 1: unknown step kind");
    STEPS[1].kind = RT_CUDA_LAUNCH;

    STEPS[0].c.slot = 4; /* the error cell is no operand */
    expect_arg("CUDA step 0: operand c: slot 4 is not a buffer");
    STEPS[0].c.slot = 3;
    STEPS[0].c.offset = 2; /* not a multiple of 4 */
    expect_arg("operand c: offset 2 is not an element of slot 3");
    STEPS[0].c.offset = 4; /* y is 24 bytes: one element too far */
    expect_arg("operand c reaches outside slot 3 (24 bytes)");
    STEPS[0].c.offset = 0;
    STEPS[0].a.slot = 0, STEPS[0].a.offset = 240; /* the arena is 256 bytes */
    expect_arg("operand a reaches outside slot 0");
    STEPS[0].a.slot = 1, STEPS[0].a.offset = 0;

    mm_bad = MM;
    STEPS[0].mm = &mm_bad;
    mm_bad.b_rs = 4; /* B: [4, 3] read with row stride 4 runs past w */
    expect_arg("operand b reaches outside slot 2");
    mm_bad = MM;
    mm_bad.b_rs = -3; /* negative stride from element 0 */
    expect_arg("operand b reaches outside slot 2");
    mm_bad = MM;
    mm_bad.nbatch = 1, mm_bad.batch[0] = 2, mm_bad.c_bs[0] = 6; /* two batches of y */
    expect_arg("operand c reaches outside slot 3");
    mm_bad.batch[0] = 0; /* an empty batch checks nothing */
    mm_bad.c_bs[0] = 1000;
    char m2[RT_ERROR_MSG_MAX];
    CHECK_INT(TGCRT_ERR_DEVICE, create(&PROG, m2, sizeof m2));
    mm_bad = MM;
    mm_bad.dtype = 42;
    expect_arg("CUDA step 0: malformed matrix product");
    mm_bad = MM;
    mm_bad.k = -1;
    expect_arg("CUDA step 0: malformed matrix product");
    STEPS[0].mm = NULL;
    expect_arg("CUDA step 0: malformed matrix product");
    STEPS[0].mm = &MM;
}

static void test_no_device(void) {
    char msg[RT_ERROR_MSG_MAX];
    bool stub = getenv("TGC_TEST_CUDA_STUB") != NULL;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    /* The driver stays loaded either way (the runtime never unloads it). */
    CHECK_INT(TGCRT_ERR_DEVICE, create(&PROG, msg, sizeof msg));
    printf("message: %s\n", msg);
    if (stub) {
        CHECK(h != NULL);
        CHECK_HAS(msg, "cuInit");
        CHECK_HAS(msg, "--target cpu");
    } else if (!h) {
        CHECK_HAS(msg, "this program was built with --target cuda");
        CHECK_HAS(msg, "libcuda.so.1");
        CHECK_HAS(msg, "--target cpu");
        /* No driver: the device error comes before any weight is read. */
        RtContext *c = NULL;
        CHECK_INT(TGCRT_ERR_DEVICE, rt_context_create(&PROG, "/nonexistent/w.safetensors", 1, &c));
        rt_context_destroy(c);
        CHECK_INT(TGCRT_ERR_DEVICE, rt_context_create_from_memory(&PROG, NULL, 0, 1, &c));
        rt_context_destroy(c);
    } else {
        printf("skip: libcuda.so.1 loads on this machine; only the status is checked\n");
    }

    /* The executable's main: exit 1, one error line. */
    char *argv[] = {"gpu", "--random-inputs", "0", "--output-dir", "/tmp", NULL};
    CHECK_INT(1, rt_main(&PROG, 5, argv));
}

int main(void) {
    test_status();
    test_malformed();
    test_no_device();
    return rt_test_report();
}
