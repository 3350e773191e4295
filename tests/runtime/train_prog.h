/* A training program written by hand as `tgc build --train` emits one:
 * the forward computes, in one run, the loss, the gradients and SGD's
 * update, and every updated param is an output (RtTrainDesc.update_of).
 * Included by test_train.c (the C API) and rt_fake_train.c (main =
 * rt_main, driven by run_train.py).
 *
 *   inputs:  x f32[4, 3], t f32[4, 2]
 *   params:  w f32[3, 2]  randn (std 0.5, seed 1)       trained
 *            b f32[2]     zeros                         trained
 *            off f32[2]   full 0.25                     frozen
 *            w.momentum_buffer f32[3, 2], b.momentum_buffer f32[2]  (state, zeros)
 *            __step i64[]                                (state, zeros)
 *   outputs: loss = mean((y - t)^2)   f32[]   with y = x @ w + b + off
 *            y                        f32[4, 2]
 *            w.new, b.new, w.momentum_buffer.new, b.momentum_buffer.new, __step.new
 *
 * The update is torch.optim.SGD(lr=0.05, momentum=0.9) (dampening 0):
 *   g = dloss/dp;  buf = 0.9 * buf + g;  p = p - 0.05 * buf;  __step += 1
 * (torch's first step sets buf = g: the same, from buf = 0).
 *
 * x[0][0] == -999 makes the forward set the index-error cell, as a gather
 * kernel does on an index out of range. */
#ifndef TRAIN_PROG_H
#define TRAIN_PROG_H
#include <stdint.h>
#include <string.h>

#include "fake_prog.h"
#include "tgcrt.h"

#define TP_B 4 /* batch */
#define TP_K 3 /* features */
#define TP_N 2 /* targets */
#define TP_LR 0.05f
#define TP_MU 0.9f

/* bufs: [arena, x, t, w, b, off, wm, bm, step, loss, y, w.new, b.new, wm.new, bm.new,
 * step.new, index-error cell] */
enum {
    TP_X = 1,
    TP_T,
    TP_W,
    TP_BIAS,
    TP_OFF,
    TP_WM,
    TP_BM,
    TP_STEP,
    TP_LOSS,
    TP_Y,
    TP_WN,
    TP_BN,
    TP_WMN,
    TP_BMN,
    TP_STEPN,
    TP_ERR
};

static void tp_forward(void **bufs, RtPool *pool) {
    (void)pool;
    const float *x = bufs[TP_X], *t = bufs[TP_T], *w = bufs[TP_W], *b = bufs[TP_BIAS];
    const float *off = bufs[TP_OFF], *wm = bufs[TP_WM], *bm = bufs[TP_BM];
    float *loss = bufs[TP_LOSS], *y = bufs[TP_Y], *wn = bufs[TP_WN], *bn = bufs[TP_BN];
    float *wmn = bufs[TP_WMN], *bmn = bufs[TP_BMN];
    int64_t step, *cell = bufs[TP_ERR];
    if (x[0] == -999.0f) { /* an index out of range: claim the cell */
        cell[0] = (int64_t)(intptr_t) "idx";
        cell[1] = 12, cell[2] = 0;
    }
    float dy[TP_B * TP_N], l = 0;
    for (int i = 0; i < TP_B; i++)
        for (int j = 0; j < TP_N; j++) {
            float s = b[j] + off[j];
            for (int k = 0; k < TP_K; k++)
                s += x[i * TP_K + k] * w[k * TP_N + j];
            y[i * TP_N + j] = s;
            float d = s - t[i * TP_N + j];
            l += d * d;
            dy[i * TP_N + j] = 2.0f * d / (TP_B * TP_N);
        }
    *loss = l / (TP_B * TP_N);
    for (int k = 0; k < TP_K; k++)
        for (int j = 0; j < TP_N; j++) {
            float g = 0;
            for (int i = 0; i < TP_B; i++)
                g += x[i * TP_K + k] * dy[i * TP_N + j];
            wmn[k * TP_N + j] = TP_MU * wm[k * TP_N + j] + g;
            wn[k * TP_N + j] = w[k * TP_N + j] - TP_LR * wmn[k * TP_N + j];
        }
    for (int j = 0; j < TP_N; j++) {
        float g = 0;
        for (int i = 0; i < TP_B; i++)
            g += dy[i * TP_N + j];
        bmn[j] = TP_MU * bm[j] + g;
        bn[j] = b[j] - TP_LR * bmn[j];
    }
    memcpy(&step, bufs[TP_STEP], 8);
    step++;
    memcpy(bufs[TP_STEPN], &step, 8);
}

/* Every tensor is stored at its declared dtype. */
#define TP_T_(n, dt, nd, ...) FP_TENSOR(n, dt, dt, nd, __VA_ARGS__)
#define TP_P_(n, dt, init_, a, seed, nd, ...)                                                      \
    FP_PARAM(n, dt, dt, init_, a, 0, seed, nd, __VA_ARGS__)

static const RtTensorInfo TP_INPUTS[] = {TP_T_("x", RT_F32, 2, TP_B, TP_K),
                                         TP_T_("t", RT_F32, 2, TP_B, TP_N)};
static const RtTensorInfo TP_PARAMS[] = {
    TP_P_("w", RT_F32, RT_INIT_RANDN, 0.5, 1, 2, TP_K, TP_N),
    TP_P_("b", RT_F32, RT_INIT_ZEROS, 0, 0, 1, TP_N),
    TP_P_("off", RT_F32, RT_INIT_FULL, 0.25, 0, 1, TP_N),
    TP_P_("w.momentum_buffer", RT_F32, RT_INIT_ZEROS, 0, 0, 2, TP_K, TP_N),
    TP_P_("b.momentum_buffer", RT_F32, RT_INIT_ZEROS, 0, 0, 1, TP_N),
    TP_P_("__step", RT_I64, RT_INIT_ZEROS, 0, 0, 0, 0),
};
static const RtTensorInfo TP_OUTPUTS[] = {
    TP_T_("loss", RT_F32, 0, 0),
    TP_T_("y", RT_F32, 2, TP_B, TP_N),
    TP_T_("w.new", RT_F32, 2, TP_K, TP_N),
    TP_T_("b.new", RT_F32, 1, TP_N),
    TP_T_("w.momentum_buffer.new", RT_F32, 2, TP_K, TP_N),
    TP_T_("b.momentum_buffer.new", RT_F32, 1, TP_N),
    TP_T_("__step.new", RT_I64, 0, 0),
};
static const int32_t TP_UPDATE_OF[] = {-1, -1, 0, 1, 3, 4, 5};
static const uint8_t TP_ROLE[] = {RT_ROLE_WEIGHT, RT_ROLE_WEIGHT, RT_ROLE_WEIGHT,
                                  RT_ROLE_STATE,  RT_ROLE_STATE,  RT_ROLE_STATE};
static const RtTrainDesc TP_TRAIN = {
    .loss_output = 0, .update_of = TP_UPDATE_OF, .role = TP_ROLE, .optimizer = "sgd"};
static const RtProgram TP_PROGRAM = {
    .name = "linreg",
    .ninputs = 2,
    .nparams = 6,
    .noutputs = 7,
    .inputs = TP_INPUTS,
    .params = TP_PARAMS,
    .outputs = TP_OUTPUTS,
    .arena_bytes = 64,
    .default_threads = 1,
    .forward = tp_forward,
    .train = &TP_TRAIN,
};
#endif
