/* Contexts over hand-written programs (what tgc's generated C looks like):
 * weights from a file, from memory and embedded; zero copy and its
 * conditions; floating dtype conversion of weights, inputs and outputs
 * (--precision); every initialiser; every error naming its tensor; bad
 * descriptors and calls; and two contexts running at once on two threads
 * (run under ASan/UBSan by the sanitizer build). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "fake_prog.h"
#include "rt_test.h"
#include "tgcrt.h"

/* ---- an in-memory safetensors writer ---- */

typedef struct StEntry {
    const char *name, *dtype;
    int ndim;
    int64_t shape[4];
    const void *data;
    size_t nbytes;
} StEntry;

static unsigned char *st_build(const StEntry *e, int n, size_t *len) {
    char hdr[8192];
    size_t at = (size_t)snprintf(hdr, sizeof hdr, "{"), off = 0;
    for (int i = 0; i < n; i++) {
        at += (size_t)snprintf(hdr + at, sizeof hdr - at, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[",
                               i ? "," : "", e[i].name, e[i].dtype);
        for (int d = 0; d < e[i].ndim; d++)
            at += (size_t)snprintf(hdr + at, sizeof hdr - at, "%s%lld", d ? "," : "",
                                   (long long)e[i].shape[d]);
        at += (size_t)snprintf(hdr + at, sizeof hdr - at, "],\"data_offsets\":[%zu,%zu]}", off,
                               off + e[i].nbytes);
        off += e[i].nbytes;
    }
    at += (size_t)snprintf(hdr + at, sizeof hdr - at, "}");
    while (at % 8)
        hdr[at++] = ' ';
    *len = 8 + at + off;
    unsigned char *buf = malloc(*len);
    uint64_t h = at;
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)(h >> (8 * i));
    memcpy(buf + 8, hdr, at);
    off = 8 + at;
    for (int i = 0; i < n; i++) {
        if (e[i].nbytes) memcpy(buf + off, e[i].data, e[i].nbytes);
        off += e[i].nbytes;
    }
    return buf;
}

static char *write_temp(const unsigned char *buf, size_t len) {
    char *path = strdup("/tmp/tgcrt-test-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, buf, len) != (ssize_t)len) abort();
    close(fd);
    return path;
}

/* ---- program 1: y = x @ w + b (f32, or f16 storage under "--precision") ---- */

static void affine_forward(void **bufs, RtPool *pool) {
    fp_affine(RT_F32, bufs[1], bufs[2], bufs[3], bufs[4], pool);
}

static void affine_f16_forward(void **bufs, RtPool *pool) {
    fp_affine(RT_F16, bufs[1], bufs[2], bufs[3], bufs[4], pool);
}

static const void *seen_w; /* the w pointer the last probe run got (single-threaded tests) */
static void affine_probe_forward(void **bufs, RtPool *pool) {
    seen_w = bufs[2];
    affine_forward(bufs, pool);
}

#define T FP_TENSOR
#define P FP_PARAM

static const RtTensorInfo AFF_IN[] = {T("x", RT_F32, RT_F32, 2, 2, 4)};
static const RtTensorInfo AFF_PARAMS[] = {P("w", RT_F32, RT_F32, RT_INIT_NONE, 0, 0, 0, 2, 4, 3),
                                          P("b", RT_F32, RT_F32, RT_INIT_ZEROS, 0, 0, 0, 1, 3)};
static const RtTensorInfo AFF_OUT[] = {T("y", RT_F32, RT_F32, 2, 2, 3)};
static const RtProgram AFFINE = {
    "affine", 1, 2, 1,    AFF_IN, AFF_PARAMS, AFF_OUT, 100,  0, affine_forward, NULL, 0,   NULL,
    NULL,     0, 0, NULL, NULL,   NULL,       0,       NULL, 0, NULL,           0,    NULL};
static const RtProgram AFFINE_PROBE = {
    "affine", 1, 2,    1,    AFF_IN, AFF_PARAMS, AFF_OUT, 0,    1,    affine_probe_forward,
    NULL,     0, NULL, NULL, 0,      0,          NULL,    NULL, NULL, 0,
    NULL,     0, NULL, 0,    NULL};

static const RtTensorInfo H_IN[] = {T("x", RT_F32, RT_F16, 2, 2, 4)};
static const RtTensorInfo H_PARAMS[] = {P("w", RT_F32, RT_F16, RT_INIT_NONE, 0, 0, 0, 2, 4, 3),
                                        P("b", RT_F32, RT_F16, RT_INIT_FULL, 0.5, 0, 0, 1, 3)};
static const RtTensorInfo H_OUT[] = {T("y", RT_F32, RT_F16, 2, 2, 3)};
static const RtProgram AFFINE_F16 = {
    "affine16", 1, 2,    1,    H_IN, H_PARAMS, H_OUT, 64,   2,    affine_f16_forward,
    NULL,       0, NULL, NULL, 0,    0,        NULL,  NULL, NULL, 0,
    NULL,       0, NULL, 0,    NULL};

static float W[12], X[8], PAD[16];

static void reference(const float *x, const float *w, const float *b, float *y) {
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            double s = b ? b[j] : 0;
            for (int k = 0; k < 4; k++)
                s += (double)x[i * 4 + k] * w[k * 3 + j];
            y[i * 3 + j] = (float)s;
        }
}

static bool close_to(const float *a, const float *b, int n, double tol) {
    for (int i = 0; i < n; i++)
        if (!(fabs((double)a[i] - b[i]) <= tol * (1 + fabs((double)b[i])))) return false;
    return true;
}

static RtStatus run_affine(RtContext *c, const float *x, float *y) {
    const void *in[1] = {x};
    void *out[1] = {y};
    return rt_context_run(c, in, out);
}

static void test_weights(void) {
    for (int i = 0; i < 12; i++)
        W[i] = (float)(i % 5) * 0.25f - 0.5f;
    for (int i = 0; i < 8; i++)
        X[i] = (float)i * 0.5f - 1.0f;
    float want[6], y[6];
    reference(X, W, NULL, want);

    /* From a file, f32 as declared. */
    StEntry e[] = {{"w", "F32", 2, {4, 3}, W, sizeof W},
                   {"extra", "I64", 1, {0}, NULL, 0},
                   {"pad", "F32", 1, {16}, PAD, sizeof PAD}};
    size_t len;
    unsigned char *img = st_build(e, 3, &len);
    char *path = write_temp(img, len);
    RtContext *c;
    CHECK_INT(TGCRT_OK, rt_context_create(&AFFINE, path, 1, &c));
    CHECK_STR("", rt_context_error(c));
    CHECK(rt_context_program(c) == &AFFINE);
    CHECK_INT(TGCRT_OK, run_affine(c, X, y));
    CHECK(close_to(y, want, 6, 1e-6));
    rt_context_destroy(c);

    /* From memory: w is aligned and not last, so used in place. */
    CHECK_INT(TGCRT_OK, rt_context_create_from_memory(&AFFINE_PROBE, img, len, 0, &c));
    CHECK_INT(TGCRT_OK, run_affine(c, X, y));
    CHECK(close_to(y, want, 6, 1e-6));
    CHECK((const unsigned char *)seen_w > img && (const unsigned char *)seen_w < img + len);
    rt_context_destroy(c);
    free(img);

    /* Misaligned (after a 2-byte tensor): copied, same result. */
    uint8_t two[2] = {1, 2};
    StEntry mis[] = {{"a", "U8", 1, {2}, two, 2},
                     {"w", "F32", 2, {4, 3}, W, sizeof W},
                     {"pad", "F32", 1, {16}, PAD, sizeof PAD}};
    img = st_build(mis, 3, &len);
    CHECK_INT(TGCRT_OK, rt_context_create_from_memory(&AFFINE_PROBE, img, len, 0, &c));
    CHECK_INT(TGCRT_OK, run_affine(c, X, y));
    CHECK(close_to(y, want, 6, 1e-6));
    CHECK((uintptr_t)seen_w % 64 == 0 &&
          !((const unsigned char *)seen_w >= img && (const unsigned char *)seen_w < img + len));
    rt_context_destroy(c);
    free(img);

    /* The last tensor of the file: a vector load past its end would leave
     * the data, so it is copied. */
    img = st_build(e, 1, &len);
    CHECK_INT(TGCRT_OK, rt_context_create_from_memory(&AFFINE_PROBE, img, len, 0, &c));
    CHECK_INT(TGCRT_OK, run_affine(c, X, y));
    CHECK(!((const unsigned char *)seen_w >= img && (const unsigned char *)seen_w < img + len));
    rt_context_destroy(c);
    free(img);

    /* Other floating dtypes in the file are converted: f64, bf16, f16. */
    double w64[12];
    uint16_t wbf[12], wh[12];
    float wbf_f[12], wh_f[12];
    for (int i = 0; i < 12; i++) {
        w64[i] = W[i];
        wbf[i] = rt_f32_to_bf16(W[i] + 0.001f);
        wbf_f[i] = rt_bf16_to_f32(wbf[i]);
        wh[i] = rt_f32_to_f16(W[i] + 0.001f);
        wh_f[i] = rt_f16_to_f32(wh[i]);
    }
    StEntry conv[][1] = {{{"w", "F64", 2, {4, 3}, w64, sizeof w64}},
                         {{"w", "BF16", 2, {4, 3}, wbf, sizeof wbf}},
                         {{"w", "F16", 2, {4, 3}, wh, sizeof wh}}};
    const float *conv_w[] = {W, wbf_f, wh_f};
    for (int k = 0; k < 3; k++) {
        img = st_build(conv[k], 1, &len);
        CHECK_INT(TGCRT_OK, rt_context_create_from_memory(&AFFINE, img, len, 1, &c));
        float wk[6];
        reference(X, conv_w[k], NULL, wk);
        CHECK_INT(TGCRT_OK, run_affine(c, X, y));
        CHECK(close_to(y, wk, 6, 1e-6));
        rt_context_destroy(c);
        free(img);
    }

    /* Errors, each naming the tensor, the context kept for the message. */
    int32_t wi[12] = {0};
    struct {
        StEntry e;
        RtStatus s;
        const char *needles[3];
    } errs[] = {
        {{"w", "F32", 2, {3, 4}, W, sizeof W},
         TGCRT_ERR_SHAPE,
         {"tensor 'w'", "expected f32[4, 3], found f32[3, 4]", NULL}},
        {{"w", "F32", 1, {12}, W, sizeof W},
         TGCRT_ERR_SHAPE,
         {"tensor 'w'", "expected f32[4, 3], found f32[12]", NULL}},
        {{"w", "I32", 2, {4, 3}, wi, sizeof wi},
         TGCRT_ERR_DTYPE,
         {"tensor 'w'", "expected f32[4, 3] (or another floating dtype), found i32[4, 3]", NULL}},
        {{"v", "F32", 2, {4, 3}, W, sizeof W},
         TGCRT_ERR_MISSING,
         {"missing tensor 'w' (expected f32[4, 3]) and the graph gives it no initialiser",
          "weights buffer", NULL}},
    };
    for (size_t k = 0; k < sizeof errs / sizeof errs[0]; k++) {
        img = st_build(&errs[k].e, 1, &len);
        RtStatus s = rt_context_create_from_memory(&AFFINE, img, len, 1, &c);
        CHECK_INT(errs[k].s, s);
        CHECK(c != NULL);
        for (int n = 0; n < 3 && errs[k].needles[n]; n++)
            CHECK_HAS(rt_context_error(c), errs[k].needles[n]);
        CHECK_INT(errs[k].s, run_affine(c, X, y)); /* a failed context does not run */
        rt_context_destroy(c);
        free(img);
    }
    /* The file's name is in the message. */
    img = st_build(&errs[0].e, 1, &len);
    char *p2 = write_temp(img, len);
    CHECK_INT(TGCRT_ERR_SHAPE, rt_context_create(&AFFINE, p2, 1, &c));
    CHECK_HAS(rt_context_error(c), p2);
    rt_context_destroy(c);
    /* A truncated file: format error, no crash. */
    FILE *f = fopen(p2, "wb");
    fwrite(img, 1, len / 2, f);
    fclose(f);
    CHECK_INT(TGCRT_ERR_FORMAT, rt_context_create(&AFFINE, p2, 1, &c));
    CHECK_HAS(rt_context_error(c), p2);
    rt_context_destroy(c);
    unlink(p2);
    free(p2);
    free(img);
    CHECK_INT(TGCRT_ERR_IO, rt_context_create(&AFFINE, "/nonexistent/w.safetensors", 1, &c));
    CHECK_HAS(rt_context_error(c), "cannot open");
    rt_context_destroy(c);
    /* No weights at all. */
    CHECK_INT(TGCRT_ERR_MISSING, rt_context_create(&AFFINE, NULL, 1, &c));
    CHECK_HAS(rt_context_error(c), "no weights given: missing tensor 'w' (expected f32[4, 3])");
    rt_context_destroy(c);
    CHECK_INT(TGCRT_ERR_MISSING, rt_context_create_from_memory(&AFFINE, NULL, 0, 1, &c));
    rt_context_destroy(c);

    /* Embedded weights, and --weights overriding them. */
    img = st_build(e, 3, &len);
    RtProgram emb = AFFINE;
    emb.embedded_weights = img, emb.embedded_weights_len = len;
    CHECK_INT(TGCRT_OK, rt_context_create(&emb, NULL, 1, &c));
    CHECK_INT(TGCRT_OK, run_affine(c, X, y));
    CHECK(close_to(y, want, 6, 1e-6));
    rt_context_destroy(c);
    StEntry e2[] = {{"w", "F32", 2, {4, 3}, conv_w[1], sizeof W}};
    unsigned char *img2 = st_build(e2, 1, &len);
    char *p3 = write_temp(img2, len);
    CHECK_INT(TGCRT_OK, rt_context_create(&emb, p3, 1, &c));
    CHECK_INT(TGCRT_OK, run_affine(c, X, y));
    float w1[6];
    reference(X, conv_w[1], NULL, w1);
    CHECK(close_to(y, w1, 6, 1e-6));
    rt_context_destroy(c);
    unlink(p3);
    free(p3);
    free(img2);
    free(img);
    unlink(path);
    free(path);
}

/* Declared f32, stored f16: inputs, params and outputs convert. */
static void test_precision(void) {
    float wf[12];
    for (int i = 0; i < 12; i++)
        wf[i] = W[i] + 0.01f * (float)i;
    StEntry e[] = {{"w", "F32", 2, {4, 3}, wf, sizeof wf}};
    size_t len;
    unsigned char *img = st_build(e, 1, &len);
    RtContext *c;
    CHECK_INT(TGCRT_OK, rt_context_create_from_memory(&AFFINE_F16, img, len, 0, &c));
    float y[6], want[6], b[3] = {0.5f, 0.5f, 0.5f}, wr[12], xr[8];
    for (int i = 0; i < 12; i++)
        wr[i] = rt_f16_to_f32(rt_f32_to_f16(wf[i]));
    for (int i = 0; i < 8; i++)
        xr[i] = rt_f16_to_f32(rt_f32_to_f16(X[i]));
    reference(xr, wr, b, want);
    for (int i = 0; i < 6; i++)
        want[i] = rt_f16_to_f32(rt_f32_to_f16(want[i]));
    CHECK_INT(TGCRT_OK, run_affine(c, X, y));
    CHECK(close_to(y, want, 6, 1e-3));
    rt_context_destroy(c);
    free(img);
}

/* ---- program 2: every initialiser, copied to the outputs ---- */

#define NINIT 13
static const RtTensorInfo INIT_PARAMS[NINIT] = {
    P("zeros", RT_F32, RT_F32, RT_INIT_ZEROS, 0, 0, 0, 1, 5),
    P("ones", RT_BF16, RT_BF16, RT_INIT_ONES, 0, 0, 0, 1, 5),
    P("full", RT_F16, RT_F16, RT_INIT_FULL, -2.5, 0, 0, 1, 5),
    P("fulli", RT_I32, RT_I32, RT_INIT_FULL, 7, 0, 0, 1, 5),
    P("randn", RT_F32, RT_F32, RT_INIT_RANDN, 2.0, 0, 7, 1, 20000),
    P("randn2", RT_F32, RT_F32, RT_INIT_RANDN, 2.0, 0, 7, 1, 20000),
    P("randn_s8", RT_F32, RT_F32, RT_INIT_RANDN, 2.0, 0, 8, 1, 20000),
    P("uniform", RT_F64, RT_F64, RT_INIT_UNIFORM, -1.0, 0.5, 3, 1, 20000),
    P("uniform_bf", RT_BF16, RT_BF16, RT_INIT_UNIFORM, 0.0, 1.0, 3, 1, 20000),
    P("uniform_i", RT_I32, RT_I32, RT_INIT_UNIFORM, 0.0, 5.0, 3, 1, 1000),
    P("arange", RT_I64, RT_I64, RT_INIT_ARANGE, 0, 0, 0, 2, 2, 3),
    P("arange_h", RT_F32, RT_F16, RT_INIT_ARANGE, 0, 0, 0, 1, 3000),
    P("flags", RT_BOOL, RT_BOOL, RT_INIT_ONES, 0, 0, 0, 1, 4),
};
static RtTensorInfo INIT_OUTS[NINIT];

static void init_forward(void **bufs, RtPool *pool) {
    (void)pool;
    for (int i = 0; i < NINIT; i++) {
        size_t nb;
        RtDesc d = INIT_PARAMS[i].desc;
        d.dtype = INIT_PARAMS[i].storage;
        rt_desc_nbytes(&d, &nb);
        memcpy(bufs[1 + NINIT + i], bufs[1 + i], nb);
    }
}

static RtProgram INIT_PROG = {
    "inits", 0, NINIT, NINIT, NULL, INIT_PARAMS, INIT_OUTS, 0,    0, init_forward, NULL, 0,   NULL,
    NULL,    0, 0,     NULL,  NULL, NULL,        0,         NULL, 0, NULL,         0,    NULL};

static void *outs[NINIT];

static void run_inits(RtContext **c, int threads) {
    CHECK_INT(TGCRT_OK, rt_context_create(&INIT_PROG, NULL, threads, c));
    CHECK_INT(TGCRT_OK, rt_context_run(*c, NULL, outs));
}

static void stats(const float *v, int n, double *mean, double *sd) {
    double s = 0, q = 0;
    for (int i = 0; i < n; i++)
        s += v[i], q += (double)v[i] * v[i];
    *mean = s / n;
    *sd = sqrt(q / n - *mean * *mean);
}

static void test_initialisers(void) {
    for (int i = 0; i < NINIT; i++) {
        INIT_OUTS[i] = INIT_PARAMS[i];
        INIT_OUTS[i].init = RT_INIT_NONE;
        size_t nb;
        rt_desc_nbytes(&INIT_OUTS[i].desc, &nb);
        outs[i] = calloc(1, nb);
    }
    RtContext *c;
    run_inits(&c, 3);
    const float *zeros = outs[0];
    CHECK(zeros[0] == 0 && zeros[4] == 0);
    const uint16_t *ones = outs[1], *full = outs[2];
    CHECK(ones[0] == 0x3f80 && ones[4] == 0x3f80);
    CHECK(rt_f16_to_f32(full[0]) == -2.5f && rt_f16_to_f32(full[4]) == -2.5f);
    const int32_t *fulli = outs[3];
    CHECK(fulli[0] == 7 && fulli[4] == 7);
    double mean, sd;
    stats(outs[4], 20000, &mean, &sd);
    CHECK(fabs(mean) < 0.06 && fabs(sd - 2.0) < 0.06);
    /* Same seed, other name: other values; other seed: other values. */
    CHECK(memcmp(outs[4], outs[5], 20000 * 4) != 0);
    CHECK(memcmp(outs[4], outs[6], 20000 * 4) != 0);
    stats(outs[6], 20000, &mean, &sd);
    CHECK(fabs(mean) < 0.06 && fabs(sd - 2.0) < 0.06);
    const double *u = outs[7];
    double lo = 1, hi = -2, s = 0;
    for (int i = 0; i < 20000; i++) {
        lo = u[i] < lo ? u[i] : lo, hi = u[i] > hi ? u[i] : hi;
        s += u[i];
    }
    CHECK(lo >= -1.0 && hi < 0.5 && lo < -0.99 && hi > 0.49);
    CHECK(fabs(s / 20000 + 0.25) < 0.02);
    const uint16_t *ub = outs[8];
    float bmax = 0;
    for (int i = 0; i < 20000; i++)
        bmax = rt_bf16_to_f32(ub[i]) > bmax ? rt_bf16_to_f32(ub[i]) : bmax;
    CHECK(bmax < 1.0f && bmax > 0.99f); /* rounding up to 1.0 is stepped back below */
    const int32_t *ui = outs[9];
    int seen[5] = {0}, out_of_range = 0;
    for (int i = 0; i < 1000; i++) {
        if (ui[i] < 0 || ui[i] > 4)
            out_of_range++;
        else
            seen[ui[i]]++;
    }
    CHECK_INT(0, out_of_range);
    CHECK(seen[0] > 150 && seen[4] > 150);
    const int64_t *ar = outs[10];
    CHECK(ar[0] == 0 && ar[1] == 1 && ar[5] == 5);
    const float *ah = outs[11]; /* stored f16, declared f32 */
    CHECK(ah[0] == 0 && ah[1] == 1 && ah[2048] == 2048 && ah[2049] == 2048 && ah[2999] == 3000);
    const uint8_t *fl = outs[12];
    CHECK(fl[0] == 1 && fl[3] == 1);

    /* Deterministic: same bits with another context and thread count. */
    void *first = malloc(20000 * 4);
    memcpy(first, outs[4], 20000 * 4);
    rt_context_destroy(c);
    run_inits(&c, 1);
    CHECK(memcmp(first, outs[4], 20000 * 4) == 0);
    rt_context_destroy(c);
    free(first);
    for (int i = 0; i < NINIT; i++)
        free(outs[i]);
}

/* ---- bad descriptors and calls ---- */

static void test_bad_calls(void) {
    RtContext *c;
    CHECK_INT(TGCRT_ERR_ARG, rt_context_create(NULL, NULL, 0, &c));
    CHECK_HAS(rt_context_error(c), "no program");
    rt_context_destroy(c);
    CHECK_INT(TGCRT_ERR_ARG, rt_context_create(&AFFINE, NULL, 0, NULL));
    RtTensorInfo bad_in[] = {T("x", RT_F32, RT_I32, 2, 2, 4)};
    RtProgram p = AFFINE;
    p.inputs = bad_in;
    CHECK_INT(TGCRT_ERR_ARG, rt_context_create(&p, NULL, 0, &c));
    CHECK_HAS(rt_context_error(c), "input 'x': storage dtype i32 cannot hold declared dtype f32");
    CHECK_INT(3, rt_status_exit_code(TGCRT_ERR_ARG));
    rt_context_destroy(c);
    RtTensorInfo neg[] = {T("x", RT_F32, RT_F32, 2, -2, 4)};
    p.inputs = neg;
    CHECK_INT(TGCRT_ERR_ARG, rt_context_create(&p, NULL, 0, &c));
    CHECK_HAS(rt_context_error(c), "input 'x': invalid declared type");
    rt_context_destroy(c);
    p = AFFINE;
    p.forward = NULL;
    CHECK_INT(TGCRT_ERR_ARG, rt_context_create(&p, NULL, 0, &c));
    rt_context_destroy(c);
    p = AFFINE;
    p.nparams = -1;
    CHECK_INT(TGCRT_ERR_ARG, rt_context_create(&p, NULL, 0, &c));
    rt_context_destroy(c);
    CHECK_INT(TGCRT_ERR_ARG, rt_context_create(&INIT_PROG, NULL, -3, &c));
    CHECK_HAS(rt_context_error(c), "negative");
    rt_context_destroy(c);
    CHECK_INT(TGCRT_ERR_ARG, rt_context_create(&INIT_PROG, NULL, 5000, &c));
    rt_context_destroy(c);

    size_t len;
    StEntry e[] = {{"w", "F32", 2, {4, 3}, W, sizeof W}};
    unsigned char *img = st_build(e, 1, &len);
    CHECK_INT(TGCRT_OK, rt_context_create_from_memory(&AFFINE, img, len, 1, &c));
    float y[6];
    void *out[1] = {y};
    CHECK_INT(TGCRT_ERR_ARG, rt_context_run(c, NULL, out));
    CHECK_HAS(rt_context_error(c), "inputs");
    const void *in[1] = {NULL};
    CHECK_INT(TGCRT_ERR_ARG, rt_context_run(c, in, out));
    CHECK_HAS(rt_context_error(c), "input 'x' is NULL");
    in[0] = X;
    CHECK_INT(TGCRT_ERR_ARG, rt_context_run(c, in, NULL));
    CHECK_INT(TGCRT_OK, rt_context_run(c, in, out));
    CHECK_STR("", rt_context_error(c));
    rt_context_destroy(c);
    free(img);
    CHECK_INT(TGCRT_ERR_ARG, rt_context_run(NULL, in, out));
    rt_context_destroy(NULL);
    CHECK(rt_context_program(NULL) == NULL);
}

/* ---- two contexts at once ---- */

typedef struct Worker {
    const unsigned char *img;
    size_t len;
    int threads, bad, seed;
} Worker;

static void *worker(void *arg) {
    Worker *w = arg;
    RtContext *c;
    if (rt_context_create_from_memory(&AFFINE, w->img, w->len, w->threads, &c)) {
        w->bad = 1000;
        rt_context_destroy(c);
        return NULL;
    }
    unsigned s = (unsigned)w->seed;
    for (int it = 0; it < 300; it++) {
        float x[8], y[6], want[6];
        for (int i = 0; i < 8; i++) {
            s = s * 1103515245u + 12345u;
            x[i] = (float)((s >> 16) % 100) / 10.0f - 5.0f;
        }
        reference(x, W, NULL, want);
        if (run_affine(c, x, y) || !close_to(y, want, 6, 1e-5)) w->bad++;
    }
    rt_context_destroy(c);
    return NULL;
}

static void test_threads(void) {
    size_t len;
    StEntry e[] = {{"w", "F32", 2, {4, 3}, W, sizeof W}, {"pad", "F32", 1, {16}, PAD, sizeof PAD}};
    unsigned char *img = st_build(e, 2, &len);
    Worker w[2] = {{img, len, 2, 0, 1}, {img, len, 1, 0, 2}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, &w[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CHECK_INT(0, w[0].bad);
    CHECK_INT(0, w[1].bad);
    free(img);
}

int main(void) {
    test_weights();
    test_precision();
    test_initialisers();
    test_bad_calls();
    test_threads();
    return rt_test_report();
}
