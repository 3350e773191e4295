/* A stand-in for an executable built by tgc: an RtProgram filled by hand as
 * the generated C fills it, a hand-written forward, and main = rt_main.
 * run_program.py drives it through every flag and error of cli.md
 * "Compiled executables".
 *
 *   inputs:  x f32[2, 4], idx i64[3]
 *   params:  w f32[4, 3] (no initialiser: the weights must hold it),
 *            b f32[3] (zeros), emb f32[10, 2] (randn std 1, seed 3)
 *   outputs: y = x @ w + b           f32[2, 3]
 *            h = y                   bf16[2, 3]
 *            pos = y > 0             bool[2, 3]
 *            e = emb[idx]            f32[3, 2]  (rows of 0 for idx outside [0, 10))
 *            total = sum(idx)        i64[]
 *            embo = emb              f32[10, 2]
 *            idx_out = idx, x_out = x
 *            grid[i, j] = y[0, 0] * i - j / 7   f32[40, 50] (printing summarises it) */
#include <string.h>

#include "fake_prog.h"
#include "tgcrt.h"

enum { X, IDX, W, B, EMB, Y, H, POS, E, TOTAL, EMBO, IDX_OUT, X_OUT, GRID };

static void forward(void **bufs, RtPool *pool) {
    void **v = bufs + 1; /* bufs[0] is the arena */
    float *y = v[Y];
    const float *emb = v[EMB];
    const int64_t *idx = v[IDX];
    fp_affine(RT_F32, v[X], v[W], v[B], y, pool);
    uint16_t *h = v[H];
    uint8_t *pos = v[POS];
    for (int i = 0; i < 6; i++) {
        h[i] = rt_f32_to_bf16(y[i]);
        pos[i] = y[i] > 0;
    }
    float *e = v[E];
    int64_t total = 0;
    for (int i = 0; i < 3; i++) {
        bool ok = idx[i] >= 0 && idx[i] < 10;
        e[2 * i] = ok ? emb[2 * idx[i]] : 0;
        e[2 * i + 1] = ok ? emb[2 * idx[i] + 1] : 0;
        total += idx[i];
    }
    memcpy(v[TOTAL], &total, 8);
    memcpy(v[EMBO], emb, 20 * sizeof(float));
    memcpy(v[IDX_OUT], idx, 3 * sizeof(int64_t));
    memcpy(v[X_OUT], v[X], 8 * sizeof(float));
    float *grid = v[GRID];
    for (int i = 0; i < 40; i++)
        for (int j = 0; j < 50; j++)
            grid[i * 50 + j] = y[0] * (float)i - (float)j / 7.0f;
}

/* Every tensor is stored at its declared dtype. */
#define T(n, dt, nd, ...) FP_TENSOR(n, dt, dt, nd, __VA_ARGS__)

static const RtTensorInfo inputs[] = {T("x", RT_F32, 2, 2, 4), T("idx", RT_I64, 1, 3)};
static const RtTensorInfo params[] = {
    T("w", RT_F32, 2, 4, 3),
    FP_PARAM("b", RT_F32, RT_F32, RT_INIT_ZEROS, 0, 0, 0, 1, 3),
    FP_PARAM("emb", RT_F32, RT_F32, RT_INIT_RANDN, 1.0, 0, 3, 2, 10, 2),
};
static const RtTensorInfo outputs[] = {
    T("y", RT_F32, 2, 2, 3),    T("h", RT_BF16, 2, 2, 3),    T("pos", RT_BOOL, 2, 2, 3),
    T("e", RT_F32, 2, 3, 2),    T("total", RT_I64, 0, 0),    T("embo", RT_F32, 2, 10, 2),
    T("idx_out", RT_I64, 1, 3), T("x_out", RT_F32, 2, 2, 4), T("grid", RT_F32, 2, 40, 50),
};

static const RtProgram program = {
    .name = "fake",
    .ninputs = 2,
    .nparams = 3,
    .noutputs = 9,
    .inputs = inputs,
    .params = params,
    .outputs = outputs,
    .arena_bytes = 1024,
    .default_threads = 2,
    .forward = forward,
};

int main(int argc, char **argv) {
    return rt_main(&program, argc, argv);
}
