/* Training contexts over hand-written training programs (train_prog.h:
 * y = x @ w + b + off, MSE loss, SGD with momentum written in the forward):
 * steps against the same update computed here in double, the spare-buffer
 * swap, NaN/inf losses and index errors that change nothing, saving and
 * loading params and state bit for bit, descriptor checks, conversions
 * between storage and declared dtypes (a second program), rt_context_run
 * on a training context, and rt_main/rt_train_main in-process: data sets
 * cycled batch by batch, --log-every, --steps 0. run_train.py drives the
 * same program as an executable through its flags and errors. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* mkdtemp, dup */
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_test.h"
#include "tgcrt.h"
#include "train_prog.h"

/* The forward computes in f32, the reference in double: after 25 steps
 * they agree to well within this (relative to 1 + |value|). */
#define TOL 1e-5

static bool near(double got, double want) {
    return fabs(got - want) <= TOL * (1 + fabs(want));
}

/* ---- the reference: one SGD-with-momentum step in double ---- */

typedef struct Ref {
    double w[TP_K * TP_N], b[TP_N], off[TP_N], wm[TP_K * TP_N], bm[TP_N];
    int64_t step;
} Ref;

static double ref_step(Ref *r, const float *x, const float *t) {
    double dy[TP_B * TP_N], loss = 0;
    for (int i = 0; i < TP_B; i++)
        for (int j = 0; j < TP_N; j++) {
            double s = r->b[j] + r->off[j];
            for (int k = 0; k < TP_K; k++)
                s += (double)x[i * TP_K + k] * r->w[k * TP_N + j];
            double d = s - t[i * TP_N + j];
            loss += d * d;
            dy[i * TP_N + j] = 2 * d / (TP_B * TP_N);
        }
    for (int k = 0; k < TP_K; k++)
        for (int j = 0; j < TP_N; j++) {
            double g = 0;
            for (int i = 0; i < TP_B; i++)
                g += x[i * TP_K + k] * dy[i * TP_N + j];
            r->wm[k * TP_N + j] = TP_MU * r->wm[k * TP_N + j] + g;
            r->w[k * TP_N + j] -= TP_LR * r->wm[k * TP_N + j];
        }
    for (int j = 0; j < TP_N; j++) {
        double g = 0;
        for (int i = 0; i < TP_B; i++)
            g += dy[i * TP_N + j];
        r->bm[j] = TP_MU * r->bm[j] + g;
        r->b[j] -= TP_LR * r->bm[j];
    }
    r->step++;
    return loss / (TP_B * TP_N);
}

/* The reference starts from the context's initial params. */
static Ref ref_from(RtContext *c) {
    Ref r = {0};
    const float *w = rt_context_param_data(c, 0), *off = rt_context_param_data(c, 2);
    for (int i = 0; i < TP_K * TP_N; i++)
        r.w[i] = w[i];
    for (int j = 0; j < TP_N; j++)
        r.off[j] = off[j];
    return r;
}

static bool matches(RtContext *c, const Ref *r) {
    const float *w = rt_context_param_data(c, 0), *b = rt_context_param_data(c, 1);
    const float *wm = rt_context_param_data(c, 3), *bm = rt_context_param_data(c, 4);
    int64_t step;
    memcpy(&step, rt_context_param_data(c, 5), 8);
    bool ok = step == r->step;
    for (int i = 0; i < TP_K * TP_N; i++)
        ok = ok && near(w[i], r->w[i]) && near(wm[i], r->wm[i]);
    for (int j = 0; j < TP_N; j++)
        ok = ok && near(b[j], r->b[j]) && near(bm[j], r->bm[j]);
    if (!ok)
        printf("  w[0] %.9g (want %.9g), b[0] %.9g (want %.9g), step %lld (want %lld)\n", w[0],
               r->w[0], b[0], r->b[0], (long long)step, (long long)r->step);
    return ok;
}

/* Batch s of a data set of 3: inputs with targets from a fixed linear map
 * plus a wiggle, so the loss falls but never reaches 0. */
static float X[3][TP_B * TP_K], T[3][TP_B * TP_N];

static void make_data(void) {
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < TP_B; i++) {
            for (int k = 0; k < TP_K; k++)
                X[s][i * TP_K + k] = (float)sin(1.3 * (s * 12 + i * 3 + k) + 0.2);
            for (int j = 0; j < TP_N; j++)
                T[s][i * TP_N + j] = X[s][i * TP_K] * (j ? -1.5f : 2.0f) + X[s][i * TP_K + 2] +
                                     0.1f * (float)cos(s + i + j);
        }
}

static RtStatus step(RtContext *c, int s, double *loss) {
    const void *in[2] = {X[s % 3], T[s % 3]};
    return rt_context_train_step(c, in, loss);
}

/* Every param's bytes, to check that a refused step changed nothing. */
static size_t snapshot(RtContext *c, unsigned char *buf) {
    static const size_t sizes[] = {24, 8, 8, 24, 8, 8};
    size_t at = 0;
    for (int i = 0; i < 6; i++) {
        memcpy(buf + at, rt_context_param_data(c, i), sizes[i]);
        at += sizes[i];
    }
    return at;
}

/* ---- steps, the swap, refused steps ---- */

static void test_steps(void) {
    RtContext *c;
    CHECK_INT(TGCRT_OK, rt_context_create(&TP_PROGRAM, NULL, 1, &c));
    Ref r = ref_from(c);
    CHECK(rt_context_output_data(c, 0) == NULL); /* no step yet */
    CHECK(r.w[0] != 0 && r.off[1] == 0.25);

    /* The swap: the param's buffer after a step is the spare; after two,
     * the original again (double buffering), with other values. */
    void *w0 = rt_context_param_data(c, 0);
    float after1[6];
    double loss, want;
    want = ref_step(&r, X[0], T[0]);
    CHECK_INT(TGCRT_OK, step(c, 0, &loss));
    CHECK(near(loss, want));
    void *w1 = rt_context_param_data(c, 0);
    CHECK(w1 != w0);
    memcpy(after1, w1, sizeof after1);
    want = ref_step(&r, X[1], T[1]);
    CHECK_INT(TGCRT_OK, step(c, 1, &loss));
    CHECK(near(loss, want));
    CHECK(rt_context_param_data(c, 0) == w0);
    CHECK(memcmp(after1, w0, sizeof after1) != 0);
    CHECK(matches(c, &r));

    /* 25 steps in all, each loss and the final params against double. */
    bool losses_ok = true;
    double first = loss;
    Ref prev = r; /* the params the last step starts from */
    for (int s = 2; s < 25; s++) {
        prev = r;
        want = ref_step(&r, X[s % 3], T[s % 3]);
        CHECK_INT(TGCRT_OK, step(c, s, &loss));
        losses_ok = losses_ok && near(loss, want);
    }
    CHECK(losses_ok);
    CHECK(loss < first); /* it learns */
    CHECK(matches(c, &r));

    /* The last step's outputs: the loss (as the step returned it), y, and
     * for an update output the param's current value. */
    float l;
    memcpy(&l, rt_context_output_data(c, 0), 4);
    CHECK(l == (float)loss);
    const float *y = rt_context_output_data(c, 1); /* of the params before the update */
    CHECK(y && near(y[0], prev.b[0] + prev.off[0] + X[0][0] * prev.w[0] + X[0][1] * prev.w[2] +
                              X[0][2] * prev.w[4])); /* step 24: batch 0 */
    CHECK(rt_context_output_data(c, 2) == rt_context_param_data(c, 0));
    CHECK(rt_context_output_data(c, 7) == NULL && rt_context_output_data(c, -1) == NULL);
    CHECK(rt_context_param_data(c, 6) == NULL && rt_context_param_data(c, -1) == NULL);

    /* NaN and inf losses: TGCRT_ERR_VALUE, nothing changes. */
    unsigned char before[96], after[96];
    size_t n = snapshot(c, before);
    void *wb = rt_context_param_data(c, 0);
    float tnan[TP_B * TP_N], tbig[TP_B * TP_N];
    memcpy(tnan, T[0], sizeof tnan);
    tnan[3] = NAN;
    for (int i = 0; i < TP_B * TP_N; i++)
        tbig[i] = 1e30f;
    const void *in_nan[2] = {X[0], tnan}, *in_inf[2] = {X[0], tbig};
    CHECK_INT(TGCRT_ERR_VALUE, rt_context_train_step(c, in_nan, &loss));
    CHECK(isnan(loss));
    CHECK_STR("the loss is nan", rt_context_error(c));
    CHECK_INT(TGCRT_ERR_VALUE, rt_context_train_step(c, in_inf, &loss));
    CHECK_STR("the loss is inf", rt_context_error(c));
    CHECK(rt_context_param_data(c, 0) == wb);
    CHECK(snapshot(c, after) == n && memcmp(before, after, n) == 0);

    /* An index out of range: reported as rt_context_run reports it. */
    float xbad[TP_B * TP_K];
    memcpy(xbad, X[0], sizeof xbad);
    xbad[0] = -999.0f;
    const void *in_bad[2] = {xbad, T[0]};
    CHECK_INT(TGCRT_ERR_VALUE, rt_context_train_step(c, in_bad, NULL));
    CHECK_HAS(rt_context_error(c), "idx holds a value out of range");
    CHECK(snapshot(c, after) == n && memcmp(before, after, n) == 0);

    /* And training goes on from where it was. */
    want = ref_step(&r, X[0], T[0]);
    CHECK_INT(TGCRT_OK, step(c, 0, &loss));
    CHECK(near(loss, want) && matches(c, &r));
    CHECK_STR("", rt_context_error(c));

    /* rt_context_run: the step's outputs into the caller's buffers, no
     * update. */
    float lo, yo[8], wn[6], bn[2], wmn[6], bmn[2];
    int64_t stn;
    void *outs[7] = {&lo, yo, wn, bn, wmn, bmn, &stn};
    const void *in[2] = {X[1], T[1]};
    n = snapshot(c, before);
    CHECK_INT(TGCRT_OK, rt_context_run(c, in, outs));
    Ref r2 = r;
    CHECK(near(lo, ref_step(&r2, X[1], T[1])) && near(wn[5], r2.w[5]) && stn == r2.step);
    CHECK(snapshot(c, after) == n && memcmp(before, after, n) == 0);
    CHECK(matches(c, &r));
    rt_context_destroy(c);
}

/* ---- saving and loading ---- */

static char *tmp_path(const char *dir, const char *name) {
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

static void test_save_load(const char *dir) {
    char *wp = tmp_path(dir, "w.safetensors"), *sp = tmp_path(dir, "s.safetensors");
    RtContext *c, *d;
    CHECK_INT(TGCRT_OK, rt_context_create(&TP_PROGRAM, NULL, 2, &c));
    for (int s = 0; s < 5; s++)
        CHECK_INT(TGCRT_OK, step(c, s, NULL));
    CHECK_INT(TGCRT_OK, rt_context_save_params(c, wp, RT_ROLE_WEIGHT));
    CHECK_INT(TGCRT_OK, rt_context_save_params(c, sp, RT_ROLE_STATE));

    /* The files: every param of the role under its name, nothing else. */
    RtSafetensors *st;
    RtError err;
    CHECK_INT(TGCRT_OK, rt_st_open(wp, &st, &err));
    CHECK_INT(3, rt_st_count(st));
    const RtStTensor *t = rt_st_find(st, "w");
    CHECK(t && t->desc.dtype == RT_F32 && t->desc.ndim == 2 && t->desc.shape[0] == 3 &&
          !memcmp(t->data, rt_context_param_data(c, 0), 24));
    CHECK(rt_st_find(st, "off") && !rt_st_find(st, "__step"));
    rt_st_close(st);
    CHECK_INT(TGCRT_OK, rt_st_open(sp, &st, &err));
    CHECK_INT(3, rt_st_count(st));
    t = rt_st_find(st, "__step");
    CHECK(t && t->desc.dtype == RT_I64 && t->desc.ndim == 0 && *(const int64_t *)t->data == 5);
    rt_st_close(st);

    /* Loaded into a fresh context: the same bits, and the same next step. */
    CHECK_INT(TGCRT_OK, rt_context_create(&TP_PROGRAM, wp, 1, &d));
    CHECK_INT(TGCRT_OK, rt_context_load_params(d, sp, RT_ROLE_STATE));
    unsigned char a[96], b[96];
    size_t n = snapshot(c, a);
    CHECK(snapshot(d, b) == n && !memcmp(a, b, n));
    double lc, ld;
    CHECK_INT(TGCRT_OK, step(c, 5, &lc));
    CHECK_INT(TGCRT_OK, step(d, 5, &ld));
    CHECK(lc == ld);
    snapshot(c, a);
    snapshot(d, b);
    CHECK(!memcmp(a, b, n));

    /* Errors name the file and the tensor, and change nothing. */
    snapshot(d, a);
    CHECK_INT(TGCRT_ERR_MISSING, rt_context_load_params(d, wp, RT_ROLE_STATE));
    CHECK_HAS(rt_context_error(d), "w.safetensors: missing tensor 'w.momentum_buffer'");
    CHECK_HAS(rt_context_error(d), "f32[3, 2]");
    float wv[6] = {1, 2, 3, 4, 5, 6}, bv[3] = {7, 8, 9};
    RtStTensorOut bad[] = {{"w", {RT_F32, 2, {3, 2}}, wv, 24}, {"b", {RT_F32, 1, {3}}, bv, 12}};
    char *bp = tmp_path(dir, "bad.safetensors");
    CHECK_INT(TGCRT_OK, rt_st_write(bp, bad, 2, &err));
    CHECK_INT(TGCRT_ERR_SHAPE, rt_context_load_params(d, bp, RT_ROLE_WEIGHT));
    CHECK_HAS(rt_context_error(d), "bad.safetensors: tensor 'b': expected f32[2], found f32[3]");
    CHECK_INT(TGCRT_OK, rt_st_write(bp, bad, 1, &err)); /* w only: b and off missing */
    CHECK_INT(TGCRT_ERR_MISSING, rt_context_load_params(d, bp, RT_ROLE_WEIGHT));
    CHECK_HAS(rt_context_error(d), "missing tensor 'b'");
    snapshot(d, b);
    CHECK(!memcmp(a, b, n)); /* w was not loaded either */
    CHECK_INT(TGCRT_ERR_IO, rt_context_load_params(d, "/nonexistent/s.safetensors", 1));
    CHECK_INT(TGCRT_ERR_IO, rt_context_save_params(d, "/nonexistent/dir/s.safetensors", 1));
    CHECK_HAS(rt_context_error(d), "cannot write '/nonexistent/dir/s.safetensors'");
    CHECK_INT(TGCRT_ERR_ARG, rt_context_save_params(d, wp, 2));
    CHECK_INT(TGCRT_ERR_ARG, rt_context_load_params(d, NULL, 0));
    /* rt_st_write refuses data that is not its type's size. */
    bad[1].nbytes = 8;
    CHECK_INT(TGCRT_ERR_ARG, rt_st_write(bp, bad, 2, &err));
    CHECK_HAS(err.msg, "tensor 'b'");
    /* ... and names that a reader would refuse. */
    bad[1] = bad[0];
    CHECK_INT(TGCRT_ERR_ARG, rt_st_write(bp, bad, 2, &err));
    CHECK_HAS(err.msg, "tensor name 'w' is given twice");
    bad[1].name = "__metadata__";
    CHECK_INT(TGCRT_ERR_ARG, rt_st_write(bp, bad, 2, &err));
    CHECK_HAS(err.msg, "'__metadata__' is reserved");

    rt_context_destroy(c);
    rt_context_destroy(d);
    unlink(wp), unlink(sp), unlink(bp);
    free(wp), free(sp), free(bp);
}

/* Params are the context's own memory, never the weights image. */
static void test_owned(void) {
    float w[6] = {0.5f, -1, 2, 0, 1, 3}, pad[32] = {0};
    RtStTensorOut t[] = {{"w", {RT_F32, 2, {3, 2}}, w, 24}, {"pad", {RT_F32, 1, {32}}, pad, 128}};
    char dir[] = "/tmp/tgcrt-owned-XXXXXX";
    if (!mkdtemp(dir)) abort();
    char *p = tmp_path(dir, "w.safetensors");
    RtError err;
    CHECK_INT(TGCRT_OK, rt_st_write(p, t, 2, &err));
    FILE *f = fopen(p, "rb");
    static unsigned char img[4096];
    size_t len = fread(img, 1, sizeof img, f);
    fclose(f);
    RtContext *c;
    CHECK_INT(TGCRT_OK, rt_context_create_from_memory(&TP_PROGRAM, img, len, 1, &c));
    const unsigned char *w0 = rt_context_param_data(c, 0);
    CHECK(!(w0 >= img && w0 < img + len) && !memcmp(w0, w, 24));
    CHECK_INT(TGCRT_OK, step(c, 0, NULL)); /* writes the params: no fault */
    rt_context_destroy(c);
    unlink(p);
    rmdir(dir);
    free(p);
}

/* ---- a second program: storage dtypes other than the declared ones ----
 * h: declared f32, stored f64 (trained: h += 0.5 per step); bf: bf16
 * (frozen); loss = sum(h), stored f64, declared f32. */

static void conv_forward(void **bufs, RtPool *pool) {
    (void)pool;
    const double *h = bufs[1];
    double *loss = bufs[3], *hn = bufs[4];
    *loss = h[0] + h[1] + h[2];
    for (int i = 0; i < 3; i++)
        hn[i] = h[i] + 0.5;
}
static const RtTensorInfo CV_PARAMS[] = {
    FP_PARAM("h", RT_F32, RT_F64, RT_INIT_ARANGE, 0, 0, 0, 1, 3),
    FP_PARAM("bf", RT_BF16, RT_BF16, RT_INIT_FULL, 1.5, 0, 0, 1, 2)};
static const RtTensorInfo CV_OUTPUTS[] = {FP_TENSOR("loss", RT_F32, RT_F64, 0, 0),
                                          FP_TENSOR("h.new", RT_F32, RT_F64, 1, 3)};
static const int32_t CV_UPDATE[] = {-1, 0};
static const uint8_t CV_ROLE[] = {RT_ROLE_WEIGHT, RT_ROLE_WEIGHT};
static const RtTrainDesc CV_TRAIN = {0, CV_UPDATE, CV_ROLE, "sgd", NULL};
static const RtProgram CV_PROGRAM = {.name = "conv",
                                     .nparams = 2,
                                     .noutputs = 2,
                                     .params = CV_PARAMS,
                                     .outputs = CV_OUTPUTS,
                                     .forward = conv_forward,
                                     .train = &CV_TRAIN};

static void test_conversions(const char *dir) {
    RtContext *c;
    double loss;
    CHECK_INT(TGCRT_OK, rt_context_create(&CV_PROGRAM, NULL, 1, &c));
    CHECK_INT(TGCRT_OK, rt_context_train_step(c, NULL, &loss));
    CHECK(loss == 3.0); /* 0 + 1 + 2 */
    CHECK_INT(TGCRT_OK, rt_context_train_step(c, NULL, &loss));
    CHECK(loss == 4.5);
    const double *h = rt_context_param_data(c, 0);
    CHECK(h[0] == 1.0 && h[2] == 3.0);
    /* rt_context_run converts the update output to its declared f32. */
    float lo, hn[3];
    void *outs[2] = {&lo, hn};
    CHECK_INT(TGCRT_OK, rt_context_run(c, NULL, outs));
    CHECK(lo == 6.0f && hn[0] == 1.5f && hn[2] == 3.5f && h[0] == 1.0);

    /* Saved at the declared dtypes: h as F32, bf as BF16. */
    char *p = tmp_path(dir, "conv.safetensors");
    CHECK_INT(TGCRT_OK, rt_context_save_params(c, p, RT_ROLE_WEIGHT));
    RtSafetensors *st;
    RtError err;
    CHECK_INT(TGCRT_OK, rt_st_open(p, &st, &err));
    const RtStTensor *t = rt_st_find(st, "h"), *b = rt_st_find(st, "bf");
    float hf[3];
    uint16_t bb[2];
    if (t) memcpy(hf, t->data, 12);
    if (b) memcpy(bb, b->data, 4);
    CHECK(t && t->desc.dtype == RT_F32 && hf[0] == 1.0f && hf[2] == 3.0f);
    CHECK(b && b->desc.dtype == RT_BF16 && bb[0] == 0x3fc0 && bb[1] == 0x3fc0);
    rt_st_close(st);
    /* Loaded from another floating dtype (f16): converted. */
    uint16_t h16[3] = {rt_f32_to_f16(5), rt_f32_to_f16(6), rt_f32_to_f16(-7)};
    RtStTensorOut in[] = {{"h", {RT_F16, 1, {3}}, h16, 6}, {"bf", {RT_BF16, 1, {2}}, bb, 4}};
    CHECK_INT(TGCRT_OK, rt_st_write(p, in, 2, &err));
    CHECK_INT(TGCRT_OK, rt_context_load_params(c, p, RT_ROLE_WEIGHT));
    h = rt_context_param_data(c, 0);
    CHECK(h[0] == 5.0 && h[2] == -7.0);
    rt_context_destroy(c);
    unlink(p);
    free(p);
}

/* ---- descriptor checks ---- */

static void expect_bad(const RtProgram *p, const char *needle) {
    RtContext *c;
    CHECK_INT(TGCRT_ERR_ARG, rt_context_create(p, NULL, 1, &c));
    CHECK_HAS(rt_context_error(c), needle);
    rt_context_destroy(c);
}

static void test_descriptor(void) {
    RtProgram p = TP_PROGRAM;
    RtTrainDesc tr = TP_TRAIN;
    int32_t up[7];
    uint8_t role[6];
    memcpy(up, TP_UPDATE_OF, sizeof up);
    memcpy(role, TP_ROLE, sizeof role);
    tr.update_of = up, tr.role = role, p.train = &tr;

    tr.loss_output = 1; /* y: not 0-d */
    expect_bad(&p, "the loss 'y' must be a 0-d floating output");
    tr.loss_output = 7;
    expect_bad(&p, "malformed train descriptor");
    tr.loss_output = 0;
    up[0] = 0; /* the loss updating a param */
    expect_bad(&p, "the loss 'loss' must be");
    up[0] = -1;
    up[2] = 6;
    expect_bad(&p, "output 'w.new': updates param 6, which does not exist");
    up[2] = 1; /* w.new (f32[3, 2]) updating b (f32[2]) */
    expect_bad(&p, "output 'w.new' updates param 'b' but is stored as f32[3, 2], not f32[2]");
    up[2] = 0, up[3] = 0;
    expect_bad(&p, "param 'w' is updated by two outputs ('w.new' and 'b.new')");
    up[3] = 1, role[2] = 7;
    expect_bad(&p, "param 'off': unknown role 7");
    role[2] = RT_ROLE_WEIGHT;
    tr.optimizer = NULL;
    expect_bad(&p, "malformed train descriptor");
    /* A CUDA program's descriptor is checked alike (before any driver is
     * loaded); its updates are device outputs: no host spares. */
    RtCudaProgram cuda = {0};
    p.cuda = &cuda, p.forward = NULL;
    expect_bad(&p, "malformed train descriptor");
    tr.optimizer = "sgd";
    CHECK_INT(0, rt_context_train_extra_bytes(&p));

    /* The spare buffers: one per updated param, each padded to 64 bytes. */
    CHECK_INT(5 * 64, rt_context_train_extra_bytes(&TP_PROGRAM));
    CHECK_INT(64, rt_context_train_extra_bytes(&CV_PROGRAM));
    p = TP_PROGRAM;
    p.train = NULL;
    CHECK_INT(0, rt_context_train_extra_bytes(&p));
    CHECK_INT(0, rt_context_train_extra_bytes(NULL));

    /* Training calls on an inference context. */
    RtContext *c;
    CHECK_INT(TGCRT_OK, rt_context_create(&p, NULL, 1, &c));
    CHECK_INT(TGCRT_ERR_ARG, step(c, 0, NULL));
    CHECK_HAS(rt_context_error(c), "not a training program");
    CHECK(rt_context_param_data(c, 0) == NULL && rt_context_output_data(c, 0) == NULL);
    CHECK_INT(TGCRT_ERR_ARG, rt_context_load_params(c, "x", RT_ROLE_WEIGHT));
    rt_context_destroy(c);
    CHECK_INT(TGCRT_ERR_ARG, rt_context_train_step(NULL, NULL, NULL));
    CHECK_INT(TGCRT_OK, rt_context_create(&TP_PROGRAM, NULL, 1, &c));
    CHECK_INT(TGCRT_ERR_ARG, rt_context_train_step(c, NULL, NULL));
    CHECK_HAS(rt_context_error(c), "rt_context_train_step: the inputs array is NULL");
    rt_context_destroy(c);
}

/* ---- rt_main in-process: data sets, --log-every, --steps 0 ---- */

static int run_main(char *out, size_t cap, int argc, char **argv) {
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    FILE *f = tmpfile();
    dup2(fileno(f), 1);
    dup2(fileno(f), 2);
    int rc = rt_main(&TP_PROGRAM, argc, argv); /* hands over to rt_train_main */
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1), dup2(se, 2);
    close(so), close(se);
    rewind(f);
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = 0;
    fclose(f);
    return rc;
}

static void test_main(const char *dir) {
    char *xp = tmp_path(dir, "x.npy"), *tp = tmp_path(dir, "t.npy");
    char *wp = tmp_path(dir, "w.safetensors"), *sp = tmp_path(dir, "s.safetensors");
    char *od = tmp_path(dir, "out"), *yp = tmp_path(od, "y.npy"), *lp = tmp_path(od, "loss.npy");
    RtError err;
    /* Three batches stacked: x f32[12, 3], t f32[12, 2]. */
    RtDesc xd = {RT_F32, 2, {3 * TP_B, TP_K}}, td = {RT_F32, 2, {3 * TP_B, TP_N}};
    CHECK_INT(TGCRT_OK, rt_npy_write(xp, &xd, X, &err));
    CHECK_INT(TGCRT_OK, rt_npy_write(tp, &td, T, &err));
    char xa[300], ta[300], out[4096];
    snprintf(xa, sizeof xa, "x=%s", xp);
    snprintf(ta, sizeof ta, "t=%s", tp);

    RtContext *c;
    CHECK_INT(TGCRT_OK, rt_context_create(&TP_PROGRAM, NULL, 1, &c));
    Ref r = ref_from(c);
    rt_context_destroy(c);
    double loss[8];
    for (int s = 0; s < 7; s++) /* batches 0 1 2 0 1 2 0 */
        loss[s + 1] = ref_step(&r, X[s % 3], T[s % 3]);

    char *argv[] = {"trainer", "--input",        xa, "--input",      ta, "--steps",
                    "7",       "--save-weights", wp, "--save-state", sp, "--output-dir",
                    od,        "--log-every",    "3"};
    CHECK_INT(0, run_main(out, sizeof out, 15, argv));
    /* "step 3 loss L", 6, and the last (7). */
    int at = 0, got = 0;
    for (int want = 3; want <= 9; want += 3) {
        int s = want > 7 ? 7 : want, n = 0;
        long long sn = 0;
        double l = 0;
        if (sscanf(out + at, "step %lld loss %lf\n%n", &sn, &l, &n) == 2 && sn == s &&
            near(l, loss[s]))
            got++;
        at += n;
    }
    CHECK_INT(3, got);
    CHECK_INT(0, out[at]); /* nothing else */
    if (got != 3) printf("  output: %s\n", out);
    RtSafetensors *st;
    CHECK_INT(TGCRT_OK, rt_st_open(wp, &st, &err));
    const RtStTensor *t = rt_st_find(st, "w");
    float w[6];
    if (t) memcpy(w, t->data, 24);
    bool ok = t != NULL;
    for (int i = 0; ok && i < 6; i++)
        ok = near(w[i], r.w[i]);
    CHECK(ok);
    rt_st_close(st);
    CHECK_INT(TGCRT_OK, rt_st_open(sp, &st, &err));
    t = rt_st_find(st, "__step");
    CHECK(t && *(const int64_t *)t->data == 7);
    rt_st_close(st);
    RtArray y;
    CHECK_INT(TGCRT_OK, rt_npy_read(yp, &y, &err));
    CHECK(y.desc.ndim == 2 && y.desc.shape[0] == TP_B);
    rt_array_free(&y);
    char *wn = tmp_path(od, "w.new.npy");
    CHECK(access(wn, F_OK) != 0); /* updates are saved as params, not outputs */

    /* --steps 0: the params saved as they start, no outputs written. */
    unlink(yp), unlink(lp);
    argv[6] = "0";
    CHECK_INT(0, run_main(out, sizeof out, 15, argv));
    CHECK_STR("", out);
    CHECK(access(yp, F_OK) != 0);
    CHECK_INT(TGCRT_OK, rt_context_create(&TP_PROGRAM, NULL, 1, &c));
    CHECK_INT(TGCRT_OK, rt_st_open(wp, &st, &err));
    t = rt_st_find(st, "w");
    CHECK(t && !memcmp(t->data, rt_context_param_data(c, 0), 24));
    rt_st_close(st);
    rt_context_destroy(c);

    /* A data set whose batches do not divide: exit 1 naming the input. */
    RtDesc x5 = {RT_F32, 2, {5, TP_K}};
    CHECK_INT(TGCRT_OK, rt_npy_write(xp, &x5, X, &err));
    argv[6] = "2";
    CHECK_INT(1, run_main(out, sizeof out, 15, argv));
    CHECK_HAS(out, "input 'x'");
    CHECK_HAS(out, "expected f32[4, 3], or a data set f32[k*4, 3] of k batches, found f32[5, 3]");
    /* A NaN loss at step 2 of a data set: exit 1, nothing written. */
    float tn[2][TP_B * TP_N];
    memcpy(tn, T, sizeof tn);
    tn[1][0] = NAN;
    RtDesc t2 = {RT_F32, 2, {2 * TP_B, TP_N}};
    CHECK_INT(TGCRT_OK, rt_npy_write(xp, &xd, X, &err));
    CHECK_INT(TGCRT_OK, rt_npy_write(tp, &t2, tn, &err));
    unlink(wp), unlink(sp);
    CHECK_INT(1, run_main(out, sizeof out, 15, argv));
    CHECK_HAS(out, "trainer: error: step 2: the loss is nan");
    CHECK(access(wp, F_OK) != 0 && access(sp, F_OK) != 0 && access(yp, F_OK) != 0);
    /* Usage: --steps is required (exit 2). */
    CHECK_INT(2, run_main(out, sizeof out, 5, argv));
    CHECK_HAS(out, "--steps N is required");

    unlink(xp), unlink(tp), unlink(wp), unlink(sp), unlink(yp), unlink(lp);
    rmdir(od);
    free(xp), free(tp), free(wp), free(sp), free(od), free(yp), free(lp), free(wn);
}

int main(void) {
    char dir[] = "/tmp/tgcrt-train-XXXXXX";
    if (!mkdtemp(dir)) abort();
    make_data();
    test_steps();
    test_save_load(dir);
    test_owned();
    test_conversions(dir);
    test_descriptor();
    test_main(dir);
    rmdir(dir);
    return rt_test_report();
}
