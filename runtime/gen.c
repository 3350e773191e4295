/* Generation over an RtGenProgram (tgcrt.h "generation"; docs/runtime.md
 * "Generation"): a decoder compiled twice over one set of params and
 * states, `prefill` over a chunk of tokens and `step` over one.
 *
 * The prompt runs in chunks at positions 0, chunk, 2 chunk...; the last
 * chunk is padded on the right with token 0. Padding is safe for a causal
 * decoder: a real token at position t attends only to positions <= t, so
 * the padding's outputs are never read, and the cache rows it writes (past
 * the prompt) are each overwritten by the step that feeds that position
 * before any run reads them (a step at position t writes row t, then
 * attends to rows <= t). When the padded chunk would run past max_seq, it
 * starts earlier instead (at max_seq - chunk), recomputing rows the
 * previous chunk wrote from the same tokens and the same cache before
 * them: the same values. The next token comes from the logits of the last
 * real prompt token; then each step feeds the token at position t with
 * pos = t and gives the token at t + 1. */
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"
#include "tgcrt.h"

typedef struct GenRun {
    RtContext *ctx;
    const RtProgram *p;
    int64_t seq;
    int64_t *ids; /* [batch, seq] */
    int64_t pos;
    int64_t row;            /* the prefill's gen_row, when it has one */
    int64_t lrows;          /* rows of the logits per batch row: seq, or 1 (gen_row) */
    void *mask, *positions; /* an ONNX decoder's attention_mask and position_ids, or NULL */
    const void **in;
    void **out;
} GenRun;

struct RtGen {
    RtGenProgram g;
    GenRun run[2]; /* prefill, step */
    int own;       /* which of them owns the params, states, arena and pool */
    bool ready;    /* created successfully */
    RtGenStats stats;
    RtError err;
};

static const char *pname(const RtProgram *p) {
    return p->name ? p->name : "?";
}

/* ---- checking the generating program (generated glue) ---- */

/* The optional inputs of an ONNX decoder: absent (-1) or in range and
 * distinct from every other input the run fills. */
static bool optional_ok(const RtGenProgram *g, const RtProgram *p, int k) {
    if (k == -1) return true;
    int n = (k == g->ids_input) + (k == g->pos_input) + (k == g->mask_input) +
            (k == g->positions_input);
    return k >= 0 && k < p->ninputs && n == 1;
}

static bool is_mask_dtype(RtDType t) {
    return t == RT_I64 || t == RT_I32 || t == RT_F32 || t == RT_BOOL;
}

/* attention_mask [batch, max_seq] and position_ids [batch, seq], when the
 * program has them (their indices checked). */
static RtStatus check_optional(RtGen *gen, const RtProgram *p, const char *which, int64_t seq) {
    const RtGenProgram *g = &gen->g;
    char f[RT_DESC_STR_MAX];
    if (g->mask_input >= 0) {
        const RtDesc *m = &p->inputs[g->mask_input].desc;
        if (!is_mask_dtype(m->dtype) || m->ndim != 2 || m->shape[0] != g->batch ||
            m->shape[1] != g->max_seq)
            return rt_error_set(&gen->err, TGCRT_ERR_ARG,
                                "generating program: %s '%s': the attention mask '%s' is %s, "
                                "expected i64, i32, f32 or bool [%lld, %lld]",
                                which, pname(p), p->inputs[g->mask_input].name,
                                rt_desc_format(m, f, sizeof f), (long long)g->batch,
                                (long long)g->max_seq);
    }
    if (g->positions_input >= 0) {
        const RtDesc *q = &p->inputs[g->positions_input].desc;
        if ((q->dtype != RT_I64 && q->dtype != RT_I32) || q->ndim != 2 || q->shape[0] != g->batch ||
            q->shape[1] != seq)
            return rt_error_set(&gen->err, TGCRT_ERR_ARG,
                                "generating program: %s '%s': the positions '%s' are %s, "
                                "expected i64 or i32 [%lld, %lld]",
                                which, pname(p), p->inputs[g->positions_input].name,
                                rt_desc_format(q, f, sizeof f), (long long)g->batch,
                                (long long)seq);
    }
    return TGCRT_OK;
}

/* row_input: the index of p's gen_row input, or -1. */
static RtStatus check_io(RtGen *gen, const RtProgram *p, const char *which, int64_t seq,
                         int row_input) {
    const RtGenProgram *g = &gen->g;
    char f[RT_DESC_STR_MAX];
    if (g->ids_input < 0 || g->ids_input >= p->ninputs || g->pos_input < 0 ||
        g->pos_input >= p->ninputs || g->ids_input == g->pos_input || g->logits_output < 0 ||
        g->logits_output >= p->noutputs)
        return rt_error_set(&gen->err, TGCRT_ERR_ARG,
                            "generating program: %s '%s': input %d (ids), input %d (pos) or "
                            "output %d (logits) does not exist",
                            which, pname(p), g->ids_input, g->pos_input, g->logits_output);
    if (!optional_ok(g, p, g->mask_input) || !optional_ok(g, p, g->positions_input))
        return rt_error_set(&gen->err, TGCRT_ERR_ARG,
                            "generating program: %s '%s': input %d (attention mask) or input %d "
                            "(positions) does not exist or is another input's index",
                            which, pname(p), g->mask_input, g->positions_input);
    for (int i = 0; i < p->ninputs; i++)
        if (i != g->ids_input && i != g->pos_input && i != g->mask_input &&
            i != g->positions_input && i != row_input)
            return rt_error_set(&gen->err, TGCRT_ERR_ARG,
                                "generating program: %s '%s' has an input '%s' besides the "
                                "token ids and the position, which generation cannot give",
                                which, pname(p), p->inputs[i].name);
    const RtDesc *ids = &p->inputs[g->ids_input].desc, *pos = &p->inputs[g->pos_input].desc;
    const RtDesc *lg = &p->outputs[g->logits_output].desc;
    if (ids->dtype != RT_I64 || ids->ndim != 2 || ids->shape[0] != g->batch || ids->shape[1] != seq)
        return rt_error_set(&gen->err, TGCRT_ERR_ARG,
                            "generating program: %s '%s': the token ids '%s' are %s, expected "
                            "i64[%lld, %lld]",
                            which, pname(p), p->inputs[g->ids_input].name,
                            rt_desc_format(ids, f, sizeof f), (long long)g->batch, (long long)seq);
    if (pos->dtype != RT_I64 || pos->ndim != 0)
        return rt_error_set(&gen->err, TGCRT_ERR_ARG,
                            "generating program: %s '%s': the position '%s' is %s, expected i64[]",
                            which, pname(p), p->inputs[g->pos_input].name,
                            rt_desc_format(pos, f, sizeof f));
    if (row_input >= 0) {
        const RtDesc *r = &p->inputs[row_input].desc;
        if (row_input == g->ids_input || row_input == g->pos_input || r->dtype != RT_I64 ||
            r->ndim != 1 || r->shape[0] != 1)
            return rt_error_set(&gen->err, TGCRT_ERR_ARG,
                                "generating program: %s '%s': its last input '%s' is %s, "
                                "expected the logits' row gen_row i64[1]",
                                which, pname(p), p->inputs[row_input].name,
                                rt_desc_format(r, f, sizeof f));
    }
    int64_t lrows = row_input >= 0 ? 1 : seq;
    if (!rt_dtype_is_float(lg->dtype) || lg->ndim != 3 || lg->shape[0] != g->batch ||
        lg->shape[1] != lrows || lg->shape[2] != g->vocab)
        return rt_error_set(&gen->err, TGCRT_ERR_ARG,
                            "generating program: %s '%s': the logits '%s' are %s, expected a "
                            "floating [%lld, %lld, %lld]",
                            which, pname(p), p->outputs[g->logits_output].name,
                            rt_desc_format(lg, f, sizeof f), (long long)g->batch, (long long)lrows,
                            (long long)g->vocab);
    return check_optional(gen, p, which, seq);
}

static RtStatus check_gen(RtGen *gen) {
    const RtGenProgram *g = &gen->g;
    if (!g->prefill || !g->step)
        return rt_error_set(&gen->err, TGCRT_ERR_ARG, "generating program: no %s program",
                            g->prefill ? "step" : "prefill");
    if (g->batch < 1 || g->chunk < 1 || g->vocab < 1 || g->max_seq < g->chunk)
        return rt_error_set(&gen->err, TGCRT_ERR_ARG,
                            "generating program: batch %lld, chunk %lld, max_seq %lld, vocab "
                            "%lld: expected each >= 1 and chunk <= max_seq",
                            (long long)g->batch, (long long)g->chunk, (long long)g->max_seq,
                            (long long)g->vocab);
    /* Check the descriptors' counts before indexing their tables. */
    for (int k = 0; k < 2; k++) {
        const RtProgram *p = k ? g->step : g->prefill;
        if (p->ninputs < 0 || p->noutputs < 0 || (p->ninputs && !p->inputs) ||
            (p->noutputs && !p->outputs))
            return rt_error_set(&gen->err, TGCRT_ERR_ARG, "program '%s': malformed descriptor",
                                pname(p));
    }
    if (g->prefill_keys_last && g->mask_input < 0)
        return rt_error_set(&gen->err, TGCRT_ERR_ARG,
                            "generating program: the prefill attends to its chunk as the "
                            "cache's last rows but has no attention mask to hide the rows "
                            "between");
    if (g->prefill_logits_row && g->prefill->ninputs < 1)
        return rt_error_set(&gen->err, TGCRT_ERR_ARG,
                            "generating program: prefill '%s' has no gen_row input",
                            pname(g->prefill));
    RtStatus s = check_io(gen, g->prefill, "prefill", g->chunk,
                          g->prefill_logits_row ? g->prefill->ninputs - 1 : -1);
    return s ? s : check_io(gen, g->step, "step", 1, -1);
}

/* ---- creation ---- */

static RtStatus run_buffers(RtGen *gen, GenRun *r) {
    const RtProgram *p = r->p;
    r->ids = calloc((size_t)(gen->g.batch * r->seq), sizeof *r->ids);
    r->in = calloc((size_t)p->ninputs, sizeof *r->in);
    r->out = calloc((size_t)p->noutputs, sizeof *r->out);
    if (!r->ids || !r->in || !r->out)
        return rt_error_set(&gen->err, TGCRT_ERR_NOMEM, "out of memory for the generation");
    r->in[gen->g.ids_input] = r->ids;
    r->in[gen->g.pos_input] = &r->pos;
    r->lrows = r->seq;
    if (r->p == gen->g.prefill && gen->g.prefill_logits_row) {
        r->in[p->ninputs - 1] = &r->row;
        r->lrows = 1;
    }
    /* Zeroed: a mask of 0 everywhere, filled per run. */
    const int opt[2] = {gen->g.mask_input, gen->g.positions_input};
    void **buf[2] = {&r->mask, &r->positions};
    for (int k = 0; k < 2; k++) {
        if (opt[k] < 0) continue;
        size_t nb = 0;
        rt_desc_nbytes(&p->inputs[opt[k]].desc, &nb); /* checked by check_io */
        if (!(*buf[k] = calloc(nb ? nb : 1, 1)))
            return rt_error_set(&gen->err, TGCRT_ERR_NOMEM, "out of memory for the generation");
        r->in[opt[k]] = *buf[k];
    }
    /* Every output has a buffer (the logits are read, the rest dropped). */
    for (int i = 0; i < p->noutputs; i++) {
        size_t nb = 0;
        rt_desc_nbytes(&p->outputs[i].desc, &nb); /* checked by the context */
        if (!(r->out[i] = rt_aligned_alloc(nb)))
            return rt_error_set(&gen->err, TGCRT_ERR_NOMEM,
                                "out of memory for output '%s' of '%s' (%zu bytes)",
                                p->outputs[i].name, pname(p), nb);
    }
    return TGCRT_OK;
}

static RtStatus ctx_failed(RtGen *gen, RtStatus s, RtContext *c) {
    return rt_error_set(&gen->err, s, "%s", c ? rt_context_error(c) : "out of memory");
}

static RtStatus setup(RtGen *gen, const char *path, const void *mem, size_t len, bool from_memory,
                      int threads) {
    RtStatus s = check_gen(gen);
    if (s) return s;
    const RtGenProgram *g = &gen->g;
    gen->run[0].p = g->prefill, gen->run[0].seq = g->chunk;
    gen->run[1].p = g->step, gen->run[1].seq = 1;
    /* The larger arena owns: the other's fits in it. */
    int own = gen->own = g->step->arena_bytes > g->prefill->arena_bytes;
    GenRun *o = &gen->run[own], *sh = &gen->run[!own];
    if (from_memory) {
        s = rt_context_create_from_memory(o->p, mem, len, threads, &o->ctx);
    } else if (path) {
        s = rt_context_create(o->p, path, threads, &o->ctx);
    } else {
        /* The embedded image, whichever program carries it. */
        const RtProgram *e = o->p->embedded_weights ? o->p : sh->p;
        s = rt_context_create_from_memory(o->p, e->embedded_weights,
                                          e->embedded_weights ? e->embedded_weights_len : 0,
                                          threads, &o->ctx);
    }
    if (s) return ctx_failed(gen, s, o->ctx);
    if ((s = rt_context_create_shared(sh->p, o->ctx, &sh->ctx))) return ctx_failed(gen, s, sh->ctx);
    for (int k = 0; k < 2 && !s; k++)
        s = run_buffers(gen, &gen->run[k]);
    return s;
}

static RtStatus create(const RtGenProgram *g, const char *path, const void *mem, size_t len,
                       bool from_memory, int threads, RtGen **out) {
    if (!out) return TGCRT_ERR_ARG;
    RtGen *gen = *out = calloc(1, sizeof *gen);
    if (!gen) return TGCRT_ERR_NOMEM;
    rt_error_clear(&gen->err);
    if (!g) return rt_error_set(&gen->err, TGCRT_ERR_ARG, "no generating program given");
    gen->g = *g;
    RtStatus s = setup(gen, path, mem, len, from_memory, threads);
    gen->ready = s == TGCRT_OK;
    return s;
}

RtStatus rt_gen_create(const RtGenProgram *g, const char *weights_path, int threads, RtGen **out) {
    return create(g, weights_path, NULL, 0, false, threads, out);
}

RtStatus rt_gen_create_from_memory(const RtGenProgram *g, const void *st, size_t len, int threads,
                                   RtGen **out) {
    return create(g, NULL, st, st ? len : 0, true, threads, out);
}

void rt_gen_destroy(RtGen *gen) {
    if (!gen) return;
    /* The shared context first: it uses the owner's. */
    rt_context_destroy(gen->run[!gen->own].ctx);
    rt_context_destroy(gen->run[gen->own].ctx);
    for (int k = 0; k < 2; k++) {
        GenRun *r = &gen->run[k];
        for (int i = 0; r->out && i < r->p->noutputs; i++)
            rt_aligned_free(r->out[i]);
        free(r->ids);
        free(r->mask);
        free(r->positions);
        free(r->in);
        free(r->out);
    }
    free(gen);
}

const char *rt_gen_error(const RtGen *gen) {
    return gen ? gen->err.msg : "no generator (out of memory)";
}

const RtGenStats *rt_gen_stats(const RtGen *gen) {
    return gen ? &gen->stats : NULL;
}

RtContext *rt_gen_context(RtGen *gen, int which) {
    return gen && (which == 0 || which == 1) ? gen->run[which].ctx : NULL;
}

/* ---- generating ---- */

static RtStatus check_prompt(RtGen *gen, const int64_t *prompt, int64_t b, int64_t plen,
                             int64_t max_new, const RtSampling *s, const int64_t *tokens) {
    const RtGenProgram *g = &gen->g;
    if (!gen->ready) /* not created: its error stands */
        return gen->err.status ? gen->err.status
                               : rt_error_set(&gen->err, TGCRT_ERR_ARG, "not created");
    if (!prompt || !tokens)
        return rt_error_set(&gen->err, TGCRT_ERR_ARG, "rt_gen_generate: the %s is NULL",
                            prompt ? "tokens buffer" : "prompt");
    RtStatus st = rt_sampling_check(s, &gen->err);
    if (st) return st;
    if (b < 1 || b > g->batch)
        return rt_error_set(&gen->err, TGCRT_ERR_SHAPE,
                            "the prompt has %lld rows: expected 1 to %lld (the batch it was "
                            "built for)",
                            (long long)b, (long long)g->batch);
    if (plen < 1)
        return rt_error_set(&gen->err, TGCRT_ERR_SHAPE,
                            "the prompt has %lld tokens: expected at least 1", (long long)plen);
    if (max_new < 0)
        return rt_error_set(&gen->err, TGCRT_ERR_ARG, "%lld new tokens: expected >= 0",
                            (long long)max_new);
    if (plen > g->max_seq || max_new > g->max_seq - plen)
        return rt_error_set(&gen->err, TGCRT_ERR_VALUE,
                            "%lld prompt tokens + %lld new tokens is more than max_seq %lld "
                            "(the context the program was built for)",
                            (long long)plen, (long long)max_new, (long long)g->max_seq);
    for (int64_t i = 0; i < b * plen; i++)
        if (prompt[i] < 0 || prompt[i] >= g->vocab)
            return rt_error_set(&gen->err, TGCRT_ERR_VALUE,
                                "prompt token %lld at [%lld, %lld] is outside the vocabulary "
                                "[0, %lld)",
                                (long long)prompt[i], (long long)(i / plen), (long long)(i % plen),
                                (long long)g->vocab);
    return TGCRT_OK;
}

/* Element i of an integer, f32 or bool buffer of dtype t set to v. */
static void put(void *buf, RtDType t, int64_t i, int64_t v) {
    switch (t) {
    case RT_I64: ((int64_t *)buf)[i] = v; break;
    case RT_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case RT_F32: ((float *)buf)[i] = (float)v; break;
    default: ((uint8_t *)buf)[i] = (uint8_t)(v != 0); break; /* bool */
    }
}

/* An ONNX decoder's mask and positions for a run at pos: the run's
 * tokens see the cache up to the last of them (pos + seq - 1), the rows
 * past it hold zeros or an earlier generation's keys; token j is at
 * position pos + j. A prefill whose chunk is attended to as the last rows
 * (prefill_keys_last) sees the cache before pos and those rows; the rows
 * between are hidden (the model's causal mask orders the chunk's own). */
static void fill_optional(const RtGen *gen, GenRun *r, int64_t pos) {
    const RtGenProgram *g = &gen->g;
    if (r->mask) {
        RtDType t = r->p->inputs[g->mask_input].desc.dtype;
        bool last = g->prefill_keys_last && r == &gen->run[0];
        for (int64_t b = 0; b < g->batch; b++)
            for (int64_t j = 0; j < g->max_seq; j++)
                put(r->mask, t, b * g->max_seq + j,
                    last ? j < pos || j >= g->max_seq - r->seq : j <= pos + r->seq - 1);
    }
    if (r->positions) {
        RtDType t = r->p->inputs[g->positions_input].desc.dtype;
        for (int64_t b = 0; b < g->batch; b++)
            for (int64_t j = 0; j < r->seq; j++)
                put(r->positions, t, b * r->seq + j, pos + j);
    }
}

/* Runs r at position pos (its ids filled). */
static RtStatus run_once(RtGen *gen, GenRun *r, int64_t pos) {
    r->pos = pos;
    fill_optional(gen, r, pos);
    RtStatus s = rt_context_run(r->ctx, r->in, r->out);
    return s ? ctx_failed(gen, s, r->ctx) : TGCRT_OK;
}

/* The next token of every real row from r's logits at sequence index j. */
static RtStatus pick(RtGen *gen, GenRun *r, int64_t j, int64_t b, RtSampler *sm, int64_t *next) {
    const RtTensorInfo *t = &r->p->outputs[gen->g.logits_output];
    size_t es = rt_dtype_size(t->desc.dtype);
    for (int64_t row = 0; row < b; row++) {
        const char *lg = (const char *)r->out[gen->g.logits_output] +
                         (size_t)((row * r->lrows + j) * gen->g.vocab) * es;
        RtStatus s = rt_sampler_next(sm, row, lg, t->desc.dtype, &next[row], &gen->err);
        if (s) return s;
    }
    return TGCRT_OK;
}

static double ms_since(int64_t t0) {
    return (double)(rt_now_ns() - t0) / 1e6;
}

static RtStatus generate(RtGen *gen, const int64_t *prompt, int64_t b, int64_t plen,
                         int64_t max_new, RtSampler *sm, int64_t *tok, int64_t *next) {
    const RtGenProgram *g = &gen->g;
    GenRun *pre = &gen->run[0], *step = &gen->run[1];
    int64_t total = plen + max_new, B = g->batch, C = g->chunk;
    for (int64_t row = 0; row < b; row++)
        memcpy(tok + row * total, prompt + row * plen, (size_t)plen * sizeof *tok);
    RtStatus s = rt_context_reset_state(pre->ctx);
    if (s) return ctx_failed(gen, s, pre->ctx);

    int64_t t0 = rt_now_ns(), start = 0;
    /* A short tail (the whole of a short prompt) runs one step a token
     * instead of as a padded chunk: a step costs about what a few rows of
     * a chunk do (the weights streamed once either way), so r steps beat
     * a chunk of mostly padding when r <= chunk / 32. A fixed rule, not a
     * timed one: the same prompt always takes the same path (the two
     * round differently). */
    int64_t tail = plen % C, by_chunks = tail && tail <= C / 32 ? plen - tail : plen;
    for (int64_t c0 = 0; c0 < by_chunks; c0 += C) {
        start = c0 + C <= g->max_seq ? c0 : g->max_seq - C;
        /* Rows past b are row 0's copies; positions past the prompt are
         * padding (token 0). */
        for (int64_t row = 0; row < B; row++)
            for (int64_t j = 0; j < C; j++)
                pre->ids[row * C + j] =
                    start + j < plen ? prompt[(row < b ? row : 0) * plen + start + j] : 0;
        /* The prompt's last token's row; only the last chunk's is read
         * (the others' logits are dropped), any row in range will do. */
        pre->row = plen - 1 - start < C ? plen - 1 - start : C - 1;
        if ((s = run_once(gen, pre, start))) return s;
        gen->stats.prefill_runs++;
    }
    for (int64_t t = by_chunks; t < plen; t++) {
        for (int64_t row = 0; row < B; row++)
            step->ids[row] = prompt[(row < b ? row : 0) * plen + t];
        if ((s = run_once(gen, step, t))) return s;
        gen->stats.prefill_runs++;
    }
    gen->stats.prefill_ms = ms_since(t0);
    gen->stats.prefill_tokens = plen;
    if (max_new == 0) return TGCRT_OK;
    if (by_chunks < plen)
        s = pick(gen, step, 0, b, sm, next);
    else
        s = pick(gen, pre, pre->lrows == 1 ? 0 : plen - 1 - start, b, sm, next);
    if (s) return s;
    for (int64_t row = 0; row < b; row++)
        tok[row * total + plen] = next[row];

    t0 = rt_now_ns();
    for (int64_t t = plen; t < total - 1; t++) {
        for (int64_t row = 0; row < B; row++)
            step->ids[row] = next[row < b ? row : 0];
        if ((s = run_once(gen, step, t)) || (s = pick(gen, step, 0, b, sm, next))) return s;
        for (int64_t row = 0; row < b; row++)
            tok[row * total + t + 1] = next[row];
        gen->stats.decode_tokens++;
    }
    gen->stats.decode_ms = ms_since(t0);
    return TGCRT_OK;
}

RtStatus rt_gen_generate(RtGen *gen, const int64_t *prompt, int64_t batch, int64_t prompt_len,
                         int64_t max_new, const RtSampling *s, int64_t *tokens_out) {
    if (!gen) return TGCRT_ERR_ARG;
    memset(&gen->stats, 0, sizeof gen->stats);
    RtStatus st = check_prompt(gen, prompt, batch, prompt_len, max_new, s, tokens_out);
    if (st) return st;
    RtSampler *sm = NULL;
    int64_t *next = calloc((size_t)batch, sizeof *next);
    if (!next) return rt_error_set(&gen->err, TGCRT_ERR_NOMEM, "out of memory for the generation");
    if (!(st = rt_sampler_create(s, gen->g.vocab, batch, &sm, &gen->err)))
        st = generate(gen, prompt, batch, prompt_len, max_new, sm, tokens_out, next);
    rt_sampler_destroy(sm);
    free(next);
    if (!st) rt_error_clear(&gen->err);
    return st;
}
