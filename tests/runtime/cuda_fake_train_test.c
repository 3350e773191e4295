/* CUDA training contexts end to end against fake_cuda.c (device memory is
 * host memory; the kernel below is a host function): the step's updates
 * become the params' values on the device (one written in place over its
 * param, whose slot then aliases the param's buffer; one copied over its
 * param after the steps), the host copies the API hands out are downloaded
 * when read and uploaded before the next step once written, a non-finite
 * loss changes nothing, saving and loading go through the device, every
 * copy's failure is reported, and destruction frees everything once.
 *
 *   input   x f32[4]
 *   params  w f32[4] ones (trained), v f32[4] zeros (state: momentum)
 *   outputs loss = sum((w - x)^2), w.new (in place), v.new (copied), pred = w (before)
 *   step    g = 2 (w - x); v = 0.9 v + g; w = w - 0.1 v (unchanged when loss is not finite) */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "fake_cuda.h"
#include "fake_prog.h"
#include "rt_test.h"
#include "tgcrt.h"

#define N 4
static const RtTensorInfo IN[] = {FP_TENSOR("x", RT_F32, RT_F32, 1, N)};
static const RtTensorInfo PARAMS[] = {FP_PARAM("w", RT_F32, RT_F32, RT_INIT_ONES, 0, 0, 0, 1, N),
                                      FP_PARAM("v", RT_F32, RT_F32, RT_INIT_ZEROS, 0, 0, 0, 1, N)};
static const RtTensorInfo OUT[] = {
    FP_TENSOR("loss", RT_F32, RT_F32, 0, 0), FP_TENSOR("w.new", RT_F32, RT_F32, 1, N),
    FP_TENSOR("v.new", RT_F32, RT_F32, 1, N), FP_TENSOR("pred", RT_F32, RT_F32, 1, N)};
static RtCudaImage IMAGES[] = {{90, 0, "FAKECUBIN sm_90", 16}};
/* slots: 0 arena, 1 x, 2 w, 3 v, 4 loss, 5 w.new, 6 v.new, 7 pred, 8 the error cell */
static const RtCudaStep STEPS[] = {
    {RT_CUDA_LAUNCH, "k_step", 1, 32, 0, NULL, {0, 0}, {0, 0}, {0, 0}, NULL},
};
static RtCudaProgram CUDA = {IMAGES, 1, STEPS, 1, NULL, 0, 0, NULL, 0};
static const int32_t UPDATE_OF[] = {-1, 0, 1, -1};
static const uint8_t ROLE[] = {RT_ROLE_WEIGHT, RT_ROLE_STATE};
static const uint8_t IN_PLACE[] = {0, 1, 0, 0};
static const RtTrainDesc TRAIN = {0, UPDATE_OF, ROLE, "sgd", IN_PLACE};
static const RtProgram PROG = {.name = "fake_train",
                               .ninputs = 1,
                               .nparams = 2,
                               .noutputs = 4,
                               .inputs = IN,
                               .params = PARAMS,
                               .outputs = OUT,
                               .arena_bytes = 64,
                               .default_threads = 1,
                               .cuda = &CUDA,
                               .train = &TRAIN};

/* ---- the kernel, on the host ---- */

static int writes_w_in_place; /* w.new's slot is w's buffer */

static void k_step(void **params, unsigned grid[3], unsigned block[3]) {
    (void)grid, (void)block;
    CUdeviceptr bufs;
    memcpy(&bufs, params[0], sizeof bufs);
    void **t = (void **)(uintptr_t)bufs;
    const float *x = t[1], *w = t[2], *v = t[3];
    float *loss = t[4], *wn = t[5], *vn = t[6], *pred = t[7];
    writes_w_in_place = t[5] == t[2];
    float l = 0;
    for (int i = 0; i < N; i++)
        l += (w[i] - x[i]) * (w[i] - x[i]);
    *loss = l;
    for (int i = 0; i < N; i++) {
        float g = 2 * (w[i] - x[i]), wi = w[i], vi = 0.9f * v[i] + g;
        pred[i] = wi;
        vn[i] = isfinite(l) ? vi : v[i];
        wn[i] = isfinite(l) ? wi - 0.1f * vi : wi;
    }
}

/* ---- the reference, on the host ---- */

typedef struct Ref {
    float w[N], v[N];
} Ref;

static float ref_step(Ref *r, const float *x) {
    float l = 0;
    for (int i = 0; i < N; i++)
        l += (r->w[i] - x[i]) * (r->w[i] - x[i]);
    for (int i = 0; i < N; i++) {
        float g = 2 * (r->w[i] - x[i]);
        r->v[i] = 0.9f * r->v[i] + g;
        r->w[i] = r->w[i] - 0.1f * r->v[i];
    }
    return l;
}

static void check_params(RtContext *c, const Ref *r) {
    const float *w = rt_context_param_data(c, 0), *v = rt_context_param_data(c, 1);
    CHECK(w && v);
    if (!w || !v) return;
    for (int i = 0; i < N; i++)
        CHECK(w[i] == r->w[i] && v[i] == r->v[i]);
}

static const float X[N] = {1, 2, 3, 4};

static RtContext *create(void) {
    RtContext *c = NULL;
    CHECK_INT(TGCRT_OK, rt_context_create_from_memory(&PROG, NULL, 0, 1, &c));
    CHECK_STR("", rt_context_error(c));
    return c;
}

/* ---- tests ---- */

static void test_steps(void) {
    RtContext *c = create();
    Ref r = {{1, 1, 1, 1}, {0}};
    const void *in[] = {X};
    for (int s = 0; s < 3; s++) {
        double loss = 0;
        CHECK_INT(TGCRT_OK, rt_context_train_step(c, in, &loss));
        CHECK(loss == ref_step(&r, X));
    }
    CHECK(writes_w_in_place);
    /* Read through the device: the outputs that update params are their
     * values; pred is the last step's, of w before it. */
    const float *wn = rt_context_output_data(c, 1), *vn = rt_context_output_data(c, 2);
    CHECK(wn && vn && !memcmp(wn, r.w, sizeof r.w) && !memcmp(vn, r.v, sizeof r.v));
    check_params(c, &r);

    /* Writing a param's host copy sets it: uploaded before the next step. */
    float *w = rt_context_param_data(c, 0);
    for (int i = 0; i < N; i++)
        w[i] = r.w[i] = 0;
    double loss = 0;
    CHECK_INT(TGCRT_OK, rt_context_train_step(c, in, &loss));
    CHECK(loss == 30.0 && loss == ref_step(&r, X));
    check_params(c, &r);

    /* A NaN loss: refused, nothing changes. */
    float bad[N] = {NAN, 0, 0, 0};
    const void *bin[] = {bad};
    CHECK_INT(TGCRT_ERR_VALUE, rt_context_train_step(c, bin, &loss));
    CHECK_STR("the loss is nan", rt_context_error(c));
    check_params(c, &r);

    /* rt_context_run would apply the in-place update: refused. */
    float l1, o[3][N];
    void *out[] = {&l1, o[0], o[1], o[2]};
    CHECK_INT(TGCRT_ERR_ARG, rt_context_run(c, in, out));
    CHECK_HAS(rt_context_error(c), "CUDA training program: run it with rt_context_train_step");

    /* Saved from the device, loaded into a fresh context, uploaded at its
     * first step: both go on alike. */
    char wpath[] = "/tmp/tgc_cuda_train_w_XXXXXX", spath[] = "/tmp/tgc_cuda_train_s_XXXXXX";
    int fw = mkstemp(wpath), fs = mkstemp(spath);
    CHECK(fw >= 0 && fs >= 0);
    close(fw), close(fs);
    CHECK_INT(TGCRT_OK, rt_context_train_step(c, in, &loss));
    ref_step(&r, X);
    CHECK_INT(TGCRT_OK, rt_context_save_params(c, wpath, RT_ROLE_WEIGHT));
    CHECK_INT(TGCRT_OK, rt_context_save_params(c, spath, RT_ROLE_STATE));
    RtContext *d = create();
    CHECK_INT(TGCRT_OK, rt_context_load_params(d, wpath, RT_ROLE_WEIGHT));
    CHECK_INT(TGCRT_OK, rt_context_load_params(d, spath, RT_ROLE_STATE));
    check_params(d, &r);
    double l2 = 0;
    CHECK_INT(TGCRT_OK, rt_context_train_step(c, in, &loss));
    CHECK_INT(TGCRT_OK, rt_context_train_step(d, in, &l2));
    CHECK(loss == l2 && loss == ref_step(&r, X));
    check_params(c, &r);
    check_params(d, &r);
    unlink(wpath), unlink(spath);
    rt_context_destroy(d);
    rt_context_destroy(c);
    CHECK_INT(0, fake_alive()); /* w.new's alias freed once, with w */
}

/* Each copy the training path makes fails once: the error names it, and
 * the context goes on afterwards. */
static void test_copy_failures(void) {
    RtContext *c = create();
    const void *in[] = {X};
    double loss = 0;
    CHECK_INT(TGCRT_OK, rt_context_train_step(c, in, &loss));

    fake_fail("cuMemcpyDtoH_v2", 1, 719);
    CHECK(rt_context_param_data(c, 0) == NULL);
    CHECK_HAS(rt_context_error(c), "cuMemcpyDtoH_v2 (param 'w') failed");
    fake_fail(NULL, 0, 0);
    CHECK(rt_context_param_data(c, 0) != NULL); /* now lent: uploaded next */

    fake_fail("cuMemcpyHtoD_v2", 1, 719);
    CHECK_INT(TGCRT_ERR_DEVICE, rt_context_train_step(c, in, &loss));
    CHECK_HAS(rt_context_error(c), "cuMemcpyHtoD_v2 (param 'w') failed");
    fake_fail(NULL, 0, 0);

    fake_fail("cuMemcpyDtoDAsync_v2", 1, 719);
    CHECK_INT(TGCRT_ERR_DEVICE, rt_context_train_step(c, in, &loss));
    CHECK_HAS(rt_context_error(c), "cuMemcpyDtoDAsync_v2 (output 'v.new') failed");
    fake_fail(NULL, 0, 0);

    fake_fail("cuMemcpyDtoH_v2", 1, 719);
    CHECK_INT(TGCRT_ERR_DEVICE,
              rt_context_save_params(c, "/tmp/tgc_never_written.safetensors", RT_ROLE_WEIGHT));
    CHECK(access("/tmp/tgc_never_written.safetensors", F_OK) != 0);
    fake_fail(NULL, 0, 0);
    CHECK_INT(TGCRT_OK, rt_context_train_step(c, in, &loss));
    CHECK(isfinite(loss));
    rt_context_destroy(c);
    CHECK_INT(0, fake_alive());
}

int main(void) {
    if (!fake_cuda_load()) return 1;
    size_t one[] = {8};
    fake_kernel("k_step", k_step, 1, one);
    test_steps();
    test_copy_failures();
    return rt_test_report();
}
