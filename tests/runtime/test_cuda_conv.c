/* Convolutions of CUDA programs without a GPU (runtime/cuda_conv_plan.c,
 * cuda_dnn.c, cuda_steps.c):
 *  - libcudnn.so.9, where it is installed, loads and exports every function
 *    the runtime resolves (rt_cuda_dnn_load and a dlsym of each name);
 *    elsewhere that part is skipped, saying so;
 *  - the staging plan (rt_cuda_conv_geom) computes what the descriptor asks
 *    for: an asymmetric "same" padding as a symmetric convolution whose
 *    window is shifted, a transposed convolution whose output_padding is at
 *    least its stride as a smaller one with zero rows added. Each is
 *    checked in f64 against the direct loop on the original descriptor
 *    (runtime/conv_ref.c), bit for bit: the same terms in the same order;
 *  - the workspace cap, scratch and prepared sizes follow their formulas;
 *  - a program's conv step is checked against its buffers (TGCRT_ERR_ARG
 *    naming what is wrong) before any driver is looked for; a well-formed
 *    one gets as far as the driver (TGCRT_ERR_DEVICE here);
 *  - with TGC_TEST_CUDA_STUB=1 (ctest's runtime_cuda_conv_stub: the
 *    toolkit's stub libcuda, whose cuInit fails) cuDNN is loaded before the
 *    GPU is touched: TGC_CUDNN_LIBRARY naming a missing file gives the
 *    "install cuDNN 9" message, the real library gets as far as cuInit. */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>

#include "conv_internal.h"
#include "cuda_dnn.h"
#include "rt_test.h"
#include "tgcrt.h"

static void test_load(void) {
    void *h = dlopen(RT_CUDNN_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        printf("skip: %s cannot be loaded here (%s): its symbols are not checked\n",
               RT_CUDNN_SONAME, e ? e : "?");
        return;
    }
    int n = 0;
    for (const char *const *s = rt_cuda_dnn_symbols; *s; s++, n++) {
        bool found = dlsym(h, *s) != NULL;
        if (!found) printf("%s has no %s\n", RT_CUDNN_SONAME, *s);
        CHECK(found);
    }
    CuDnn d;
    char why[512] = "";
    bool ok = rt_cuda_dnn_load(&d, why, sizeof why);
    if (!ok) printf("rt_cuda_dnn_load: %s\n", why);
    CHECK(ok);
    if (ok) {
        printf("%s: cuDNN %zu, %d functions resolved\n", RT_CUDNN_SONAME, d.cudnnGetVersion(), n);
        char st[160];
        CHECK_HAS(rt_cuda_dnn_status(&d, CUDNN_STATUS_NOT_SUPPORTED, st, sizeof st), "3000");
    }
}

/* ---- the staging plan against the direct loop ---- */

static double *filled(int64_t n, unsigned seed) {
    double *p = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (double)((seed >> 8) % 2001) / 1000.0 - 1.0;
    }
    return p;
}

static void dense(int64_t h, int64_t w, int64_t c, int64_t s[4]) {
    s[3] = 1, s[2] = w, s[1] = h * w, s[0] = c * h * w;
}

/* d (f64, dense, slots 0 src, 1 weight, 2 dst): the direct loop on d, and
 * on the plan's symmetric descriptor into raw plus the window copy. */
static void check_plan(const char *what, RtConvDesc d, bool want_staged) {
    d.dtype = RT_F64;
    d.bias.slot = -1;
    dense(d.in[0], d.in[1], d.cin, d.src_strides);
    dense(d.out[0], d.out[1], d.cout, d.dst_strides);
    RtCudaConvGeom g;
    char why[200] = "";
    bool ok = rt_cuda_conv_geom(&d, &g, why, sizeof why);
    if (!ok) printf("%s: %s\n", what, why);
    CHECK(ok);
    if (!ok) return;
    CHECK_INT(want_staged, g.staged);
    CHECK_INT(g.staged, g.epilogue); /* no bias, batch norm or post-op here */
    int64_t xn = d.n * d.cin * d.in[0] * d.in[1], yn = d.n * d.cout * d.out[0] * d.out[1];
    int64_t wn = d.cout * (d.cin / d.groups) * d.k[0] * d.k[1];
    int64_t rn = d.n * d.cout * g.raw[0] * g.raw[1];
    CHECK_INT(g.staged ? (rn * 8 + 255) / 256 * 256 : 0, g.stage_bytes);
    double *x = filled(xn, 1), *w = filled(wn, 2), *want = calloc((size_t)yn, 8);
    double *raw = calloc((size_t)rn, 8), *got = calloc((size_t)yn, 8);
    double *scale = malloc(8 * (size_t)d.cout), *shift = calloc((size_t)d.cout, 8);
    for (int64_t o = 0; o < d.cout; o++)
        scale[o] = 1;
    void *bufs[3] = {x, w, want};
    d.src = (RtConvRef){0, 0}, d.weight = (RtConvRef){1, 0}, d.dst = (RtConvRef){2, 0};
    rt_conv_direct(&d, bufs, scale, shift);
    /* What cuDNN computes: the symmetric padding, the raw size. */
    RtConvDesc s = d;
    for (int i = 0; i < 2; i++)
        s.pad_l[i] = s.pad_r[i] = g.pad[i], s.out[i] = g.raw[i];
    dense(g.raw[0], g.raw[1], s.cout, s.dst_strides);
    bufs[2] = raw;
    rt_conv_direct(&s, bufs, scale, shift);
    /* What the epilogue copies. */
    int64_t bad = 0;
    for (int64_t n = 0; n < d.n; n++)
        for (int64_t c = 0; c < d.cout; c++)
            for (int64_t h = 0; h < d.out[0]; h++)
                for (int64_t ww = 0; ww < d.out[1]; ww++) {
                    int64_t rh = h + g.shift[0], rw = ww + g.shift[1];
                    double v = rh < g.raw[0] && rw < g.raw[1]
                                   ? raw[((n * d.cout + c) * g.raw[0] + rh) * g.raw[1] + rw]
                                   : 0.0;
                    int64_t i = ((n * d.cout + c) * d.out[0] + h) * d.out[1] + ww;
                    got[i] = v;
                    bad += memcmp(&v, &want[i], 8) != 0;
                }
    if (bad) printf("%s: %lld of %lld elements differ\n", what, (long long)bad, (long long)yn);
    CHECK_INT(0, bad);
    free(x), free(w), free(want), free(raw), free(got), free(scale), free(shift);
}

static RtConvDesc conv(int64_t cin, int64_t cout, int64_t groups, int64_t h, int64_t w, int64_t kh,
                       int64_t kw) {
    RtConvDesc d;
    memset(&d, 0, sizeof d);
    d.dtype = RT_F32;
    d.n = 2, d.cin = cin, d.cout = cout, d.groups = groups;
    d.in[0] = h, d.in[1] = w, d.k[0] = kh, d.k[1] = kw;
    for (int i = 0; i < 2; i++)
        d.stride[i] = d.dilation[i] = 1;
    return d;
}

/* out of a convolution (transposed: with output padding op). */
static void finish(RtConvDesc *d, const int64_t op[2]) {
    for (int i = 0; i < 2; i++) {
        int64_t eff = d->dilation[i] * (d->k[i] - 1) + 1;
        d->out[i] = d->transposed
                        ? (d->in[i] - 1) * d->stride[i] - d->pad_l[i] - d->pad_r[i] + eff + op[i]
                        : (d->in[i] + d->pad_l[i] + d->pad_r[i] - eff) / d->stride[i] + 1;
    }
}

static void test_plans(void) {
    static const int64_t none[2] = {0, 0};
    RtConvDesc d = conv(3, 4, 1, 7, 9, 3, 3);
    d.pad_l[0] = d.pad_r[0] = d.pad_l[1] = d.pad_r[1] = 1;
    finish(&d, none);
    check_plan("conv2d 3x3 padding 1", d, false);

    /* padding="same", kernel 4: total 3, (1, 2) */
    d = conv(3, 4, 1, 7, 9, 4, 4);
    d.pad_l[0] = d.pad_l[1] = 1, d.pad_r[0] = d.pad_r[1] = 2;
    finish(&d, none);
    check_plan("conv2d same, kernel 4", d, true);

    /* padding="same", kernel (2, 5) dilation (3, 1): totals 3 and 4 */
    d = conv(4, 6, 2, 6, 8, 2, 5);
    d.dilation[0] = 3;
    d.pad_l[0] = 1, d.pad_r[0] = 2, d.pad_l[1] = d.pad_r[1] = 2;
    finish(&d, none);
    check_plan("conv2d same, dilated, grouped", d, true);

    /* conv1d same, kernel 2, depthwise: height 1 */
    d = conv(5, 5, 5, 1, 11, 1, 2);
    d.pad_l[1] = 0, d.pad_r[1] = 1;
    finish(&d, none);
    check_plan("conv1d same, depthwise", d, true);

    /* conv_transpose2d stride 2 padding 1, output_padding 1 < stride */
    d = conv(4, 6, 2, 5, 4, 3, 3);
    d.transposed = 1;
    d.stride[0] = d.stride[1] = 2;
    d.pad_l[0] = d.pad_r[0] = d.pad_l[1] = d.pad_r[1] = 1;
    finish(&d, (int64_t[2]){1, 1});
    check_plan("conv_transpose2d output_padding 1", d, false);

    /* output_padding 2 >= stride 2 (allowed: below dilation 3) */
    d = conv(3, 2, 1, 4, 5, 3, 2);
    d.transposed = 1;
    d.stride[0] = d.stride[1] = 2;
    d.dilation[0] = d.dilation[1] = 3;
    finish(&d, (int64_t[2]){2, 1});
    check_plan("conv_transpose2d output_padding 2, dilation 3", d, true);

    /* what cuDNN cannot take */
    RtCudaConvGeom g;
    char why[200];
    d = conv(3, 4, 1, 7, 9, 3, 3);
    d.transposed = 1;
    d.pad_l[0] = 1, d.pad_r[0] = 0;
    finish(&d, none);
    CHECK(!rt_cuda_conv_geom(&d, &g, why, sizeof why));
    CHECK_HAS(why, "asymmetric padding");
    d = conv(3, 4, 1, 7, 9, 3, 3);
    d.dtype = RT_I32;
    finish(&d, none);
    CHECK(!rt_cuda_conv_geom(&d, &g, why, sizeof why));
    CHECK_HAS(why, "f32, f64, f16 and bf16");
    d.dtype = RT_F32;
    d.n = 0; /* empty: nothing to compute, nothing planned */
    CHECK(rt_cuda_conv_geom(&d, &g, why, sizeof why));
    CHECK_INT(0, g.epilogue);
    CHECK_INT(0, rt_cuda_conv_scratch_bytes(&d));
}

static void test_sizes(void) {
    const size_t MiB = (size_t)1 << 20;
    RtConvDesc d = conv(3, 8, 1, 9, 10, 3, 3);
    d.dtype = RT_F32;
    d.pad_l[0] = d.pad_r[0] = d.pad_l[1] = d.pad_r[1] = 1;
    finish(&d, (int64_t[2]){0, 0});
    CHECK_INT(8 * MiB, rt_cuda_conv_workspace_cap(&d)); /* the floor */
    CHECK_INT(8 * MiB, rt_cuda_conv_scratch_bytes(&d));
    CHECK_INT(0, rt_cuda_conv_prepared_bytes(&d));
    d.has_bn = 1;
    CHECK_INT(0, rt_cuda_conv_prepared_bytes(&d)); /* weights computed by the graph */
    d.constant_weights = 1;
    /* 8 * 3 * 9 f32 weights = 864 -> 1024; 8 f32 shifts -> 256 */
    CHECK_INT(1024 + 256, rt_cuda_conv_prepared_bytes(&d));
    d.dtype = RT_F64; /* 1728 -> 1792; 8 f64 shifts -> 256 */
    CHECK_INT(1792 + 256, rt_cuda_conv_prepared_bytes(&d));
    /* ResNet-50's stem at batch 64: src 38.5 MB + dst 205.5 MB, f32 */
    d = conv(3, 64, 1, 224, 224, 7, 7);
    d.n = 64, d.dtype = RT_F32;
    d.stride[0] = d.stride[1] = 2;
    d.pad_l[0] = d.pad_r[0] = d.pad_l[1] = d.pad_r[1] = 3;
    finish(&d, (int64_t[2]){0, 0});
    CHECK_INT(112, d.out[0]);
    CHECK_INT(((size_t)(64 * 3 * 224 * 224 + 64 * 64 * 112 * 112) * 4 + 255) / 256 * 256,
              rt_cuda_conv_workspace_cap(&d));
    d.n = 128; /* past the ceiling */
    CHECK_INT(256 * MiB, rt_cuda_conv_workspace_cap(&d));
    /* staging adds to the cap: same padding, kernel 4, f16 */
    d = conv(3, 4, 1, 7, 9, 4, 4);
    d.dtype = RT_F16;
    d.pad_l[0] = d.pad_l[1] = 1, d.pad_r[0] = d.pad_r[1] = 2;
    finish(&d, (int64_t[2]){0, 0});
    /* raw 8 x 10 per channel: 2 * 4 * 80 * 2 = 1280 bytes */
    CHECK_INT(1280 + 8 * MiB, rt_cuda_conv_scratch_bytes(&d));
}

/* ---- a program with a conv step ---- */

/* x f32[1, 2, 5, 5] (*) w f32[3, 2, 3, 3] + b -> y f32[1, 3, 5, 5] */
static const RtTensorInfo IN[] = {
    {"x", {RT_F32, 4, {1, 2, 5, 5}}, RT_F32, RT_INIT_NONE, 0, 0, 0, false}};
static const RtTensorInfo PARAMS[] = {
    {"w", {RT_F32, 4, {3, 2, 3, 3}}, RT_F32, RT_INIT_ONES, 0, 0, 0, false},
    {"b", {RT_F32, 1, {3}}, RT_F32, RT_INIT_ONES, 0, 0, 0, false}};
static const RtTensorInfo OUT[] = {
    {"y", {RT_F32, 4, {1, 3, 5, 5}}, RT_F32, RT_INIT_NONE, 0, 0, 0, false}};
#define ARENA (8 << 20)
static RtConvDesc CONV = {.dtype = RT_F32,
                          .n = 1,
                          .cin = 2,
                          .cout = 3,
                          .groups = 1,
                          .in = {5, 5},
                          .out = {5, 5},
                          .k = {3, 3},
                          .stride = {1, 1},
                          .dilation = {1, 1},
                          .pad_l = {1, 1},
                          .pad_r = {1, 1},
                          .src = {1, 0},
                          .weight = {2, 0},
                          .bias = {3, 0},
                          .dst = {4, 0},
                          .src_strides = {50, 25, 5, 1},
                          .dst_strides = {75, 25, 5, 1},
                          .constant_weights = 1,
                          .scratch_offset = 0,
                          .scratch_bytes = ARENA};
static const char CUBIN[] = "not really an ELF image";
static RtCudaImage IMAGES[] = {{80, 0, CUBIN, sizeof CUBIN}};
/* slots: 0 arena, 1 x, 2 w, 3 b, 4 y, 5 the error cell */
static RtCudaStep STEPS[] = {
    {RT_CUDA_CONV, "k0_conv0_epilogue", 1, 256, 0, NULL, {0, 0}, {0, 0}, {0, 0}, &CONV},
};
static RtCudaProgram CUDA = {IMAGES, 1, STEPS, 1, NULL, 0, 0, NULL, 0};
static RtProgram PROG = {"convgpu", 1, 2, 1,    IN,   PARAMS, OUT, ARENA, 0, NULL, NULL, 0,   &CUDA,
                         NULL,      0, 0, NULL, NULL, NULL,   0,   NULL,  0, NULL, 0,    NULL};

static RtStatus create(char *msg, size_t cap) {
    RtContext *c = NULL;
    RtStatus s = rt_context_create(&PROG, NULL, 1, &c);
    snprintf(msg, cap, "%s", rt_context_error(c));
    rt_context_destroy(c);
    return s;
}

static void expect_arg(const char *needle) {
    char msg[RT_ERROR_MSG_MAX];
    CHECK_INT(TGCRT_ERR_ARG, create(msg, sizeof msg));
    CHECK_HAS(msg, needle);
}

static void test_program(void) {
    char msg[RT_ERROR_MSG_MAX];
    bool stub = getenv("TGC_TEST_CUDA_STUB") != NULL;
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    RtStatus s = create(msg, sizeof msg);
    printf("message: %s\n", msg);
    CHECK_INT(TGCRT_ERR_DEVICE, s); /* well formed: as far as the device */
    if (!drv) {
        CHECK_HAS(msg, "libcuda.so.1");
    } else if (stub) {
        void *dnn = dlopen(RT_CUDNN_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (dnn)
            CHECK_HAS(msg, "cuInit"); /* cuDNN loaded first, then the GPU */
        else
            CHECK_HAS(msg, "cuDNN 9");
        setenv("TGC_CUDNN_LIBRARY", "/nonexistent/libcudnn.so.9", 1);
        CHECK_INT(TGCRT_ERR_DEVICE, create(msg, sizeof msg));
        printf("message: %s\n", msg);
        CHECK_HAS(msg, "this program has convolutions, which run on the GPU through cuDNN 9");
        CHECK_HAS(msg, "/nonexistent/libcudnn.so.9");
        CHECK_HAS(msg, "install cuDNN 9");
        CHECK_HAS(msg, "--target cpu");
        unsetenv("TGC_CUDNN_LIBRARY");
    }

    CONV.dst.offset = 4; /* y is 300 bytes: one element too far */
    expect_arg("CUDA step 0: convolution result outside its buffer");
    CONV.dst.offset = 0;
    CONV.src_strides[1] = 26; /* channel 1 ends one element past x */
    expect_arg("convolution source outside its buffer");
    CONV.src_strides[1] = 25;
    CONV.bias.slot = 1; /* x as the bias: 3 elements fit, so accepted... */
    CHECK_INT(TGCRT_ERR_DEVICE, create(msg, sizeof msg));
    CONV.bias.offset = 196; /* ... but not from its last element on */
    expect_arg("convolution bias outside its buffer");
    CONV.bias = (RtConvRef){3, 0};
    CONV.scratch_bytes = ARENA / 2; /* below the workspace cap (8 MiB) */
    expect_arg("convolution scratch not planned in the arena");
    CONV.scratch_bytes = ARENA, CONV.scratch_offset = 64;
    expect_arg("convolution scratch not planned in the arena");
    CONV.scratch_offset = 0;
    CONV.groups = 4; /* 2 channels in 4 groups */
    expect_arg("malformed convolution");
    CONV.groups = 1;
    STEPS[0].block = 0;
    expect_arg("malformed convolution epilogue launch");
    STEPS[0].block = 256;
    STEPS[0].conv = NULL;
    expect_arg("malformed convolution");
    STEPS[0].conv = &CONV;
    CHECK_INT(TGCRT_ERR_DEVICE, create(msg, sizeof msg));
}

int main(void) {
    test_load();
    test_plans();
    test_sizes();
    test_program();
    return rt_test_report();
}
