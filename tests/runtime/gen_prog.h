/* A hand-written generating program (what tgc build --generate's glue
 * fills, without the compiler): a "decoder" compiled twice, prefill over
 * GP_C tokens and step over one, over one weight and one state, so that
 * its greedy tokens are computable independently (gp_expect).
 *
 *   inputs:  ids i64[GP_B, seq], pos i64[]
 *   params:  w f32[GP_V] (arange), cache f32[GP_B, GP_S] (a state)
 *   outputs: logits [GP_B, seq, GP_V] (prefill f32, step f16), the
 *            one-hot of next(t) at row (b, j), t = pos + j;
 *            ptrs i64[4]: the addresses of the arena, w, cache and the
 *            pool the run saw (shared contexts share them).
 *
 * A run writes ids[b, j] into cache[b, pos + j] (slice_scatter at a run-time
 * start: out of range sets the index-error cell, as a compiled one does),
 * then next(t) = (sum over i <= t of (cache[b, i] + 1) (i + 1)) mod GP_V:
 * every cached token at its own position counts, so a token written at
 * the wrong place, or padding read, changes the result. */
#ifndef GEN_PROG_H
#define GEN_PROG_H
#include <stdint.h>
#include <string.h>

#include "fake_prog.h"
#include "tgcrt.h"

enum { GP_B = 3, GP_C = 4, GP_S = 10, GP_V = 11 };

static const char GP_POS_ERR[] = "@;;slice_scatter: start {value} is out of range for the cache";

static void gp_forward(void **bufs, int64_t seq, bool half) {
    void **v = bufs + 1;
    const int64_t *ids = v[0];
    int64_t pos = *(const int64_t *)v[1];
    float *cache = v[3];
    int64_t *cell = bufs[1 + 2 + 2 + 2];
    if (pos < 0 || pos + seq > GP_S) {
        int64_t zero = 0;
        if (__atomic_compare_exchange_n(&cell[0], &zero, (int64_t)(intptr_t)GP_POS_ERR, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            cell[1] = pos;
            cell[2] = 0;
        }
        return;
    }
    for (int64_t b = 0; b < GP_B; b++)
        for (int64_t j = 0; j < seq; j++)
            cache[b * GP_S + pos + j] = (float)ids[b * seq + j];
    for (int64_t b = 0; b < GP_B; b++)
        for (int64_t j = 0; j < seq; j++) {
            int64_t acc = 0;
            for (int64_t i = 0; i <= pos + j; i++)
                acc += ((int64_t)cache[b * GP_S + i] + 1) * (i + 1);
            for (int64_t k = 0; k < GP_V; k++) {
                float x = k == acc % GP_V ? 1.0f : 0.0f;
                size_t at = (size_t)((b * seq + j) * GP_V + k);
                if (half)
                    ((uint16_t *)v[4])[at] = rt_f32_to_f16(x);
                else
                    ((float *)v[4])[at] = x;
            }
        }
    int64_t *ptrs = v[5];
    ptrs[0] = (int64_t)(intptr_t)bufs[0];
    ptrs[1] = (int64_t)(intptr_t)v[2];
    ptrs[2] = (int64_t)(intptr_t)v[3];
    ptrs[3] = 0; /* the pool: set by the forward's caller below */
}

static void gp_prefill_fwd(void **bufs, RtPool *pool) {
    gp_forward(bufs, GP_C, false);
    ((int64_t *)bufs[1 + 5])[3] = (int64_t)(intptr_t)pool;
}
static void gp_step_fwd(void **bufs, RtPool *pool) {
    gp_forward(bufs, 1, true);
    ((int64_t *)bufs[1 + 5])[3] = (int64_t)(intptr_t)pool;
}

#define GP_CACHE(state_)                                                                           \
    {                                                                                              \
        .name = "cache", .desc = {RT_F32, 2, {GP_B, GP_S}}, .storage = RT_F32,                     \
        .init = RT_INIT_NONE, .state = state_                                                      \
    }

static const RtTensorInfo gp_pre_in[] = {FP_TENSOR("ids", RT_I64, RT_I64, 2, GP_B, GP_C),
                                         FP_TENSOR("pos", RT_I64, RT_I64, 0, 0)};
static const RtTensorInfo gp_step_in[] = {FP_TENSOR("ids", RT_I64, RT_I64, 2, GP_B, 1),
                                          FP_TENSOR("pos", RT_I64, RT_I64, 0, 0)};
static const RtTensorInfo gp_params[] = {
    FP_PARAM("w", RT_F32, RT_F32, RT_INIT_ARANGE, 0, 0, 0, 1, GP_V), GP_CACHE(true)};
static const RtTensorInfo gp_pre_out[] = {FP_TENSOR("logits", RT_F32, RT_F32, 3, GP_B, GP_C, GP_V),
                                          FP_TENSOR("ptrs", RT_I64, RT_I64, 1, 4)};
static const RtTensorInfo gp_step_out[] = {FP_TENSOR("logits", RT_F16, RT_F16, 3, GP_B, 1, GP_V),
                                           FP_TENSOR("ptrs", RT_I64, RT_I64, 1, 4)};

#define GP_PROGRAM(name_, in_, params_, out_, arena_, fwd_)                                        \
    {                                                                                              \
        .name = name_, .ninputs = 2, .nparams = 2, .noutputs = 2, .inputs = in_,                   \
        .params = params_, .outputs = out_, .arena_bytes = arena_, .default_threads = 2,           \
        .forward = fwd_                                                                            \
    }

static const RtProgram gp_prefill =
    GP_PROGRAM("gen_prefill", gp_pre_in, gp_params, gp_pre_out, 4096, gp_prefill_fwd);
static const RtProgram gp_step =
    GP_PROGRAM("gen_step", gp_step_in, gp_params, gp_step_out, 1024, gp_step_fwd);

static const RtGenProgram gp_gen = {.prefill = &gp_prefill,
                                    .step = &gp_step,
                                    .batch = GP_B,
                                    .chunk = GP_C,
                                    .max_seq = GP_S,
                                    .vocab = GP_V,
                                    .ids_input = 0,
                                    .pos_input = 1,
                                    .logits_output = 0,
                                    .mask_input = -1,
                                    .positions_input = -1};

/* The greedy continuation of one prompt row: seq[0..plen) is the prompt;
 * fills seq[plen..plen + n). */
static inline void gp_expect(int64_t *seq, int64_t plen, int64_t n) {
    for (int64_t t = plen - 1; t < plen + n - 1; t++) {
        int64_t acc = 0;
        for (int64_t i = 0; i <= t; i++)
            acc += (seq[i] + 1) * (i + 1);
        seq[t + 1] = acc % GP_V;
    }
}
#endif
