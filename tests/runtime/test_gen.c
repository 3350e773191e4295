/* States, shared contexts and generation (runtime/state.c, gen.c) over the
 * hand-written decoder of gen_prog.h, whose greedy tokens gp_expect
 * computes independently: prompts across chunk boundaries and padding
 * (P = 1, chunk, chunk + 1, a last chunk that would pass max_seq), fewer
 * rows than the build's batch, N = 0, P + N = max_seq and one more; a
 * state zero at creation whatever the weights file holds, zeroed by
 * rt_context_reset_state, never saved; params, states, arena and pool
 * shared (their addresses, as the runs saw them); mismatched programs
 * refused, naming what differs. */
#include <stdlib.h>
#include <unistd.h>

#include "gen_prog.h"
#include "rt_test.h"

static char dir[] = "/tmp/tgc_test_gen_XXXXXX";

/* A fixed pseudo-random prompt of b rows of plen ids in [0, GP_V). */
static void make_prompt(int64_t *p, int64_t b, int64_t plen, uint64_t seed) {
    for (int64_t i = 0; i < b * plen; i++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        p[i] = (int64_t)((seed >> 33) % GP_V);
    }
}

static RtSampling greedy(void) {
    return (RtSampling){.temperature = 0, .top_k = 0, .top_p = 1, .seed = 0};
}

/* Generates and compares every row with gp_expect. */
static void check_greedy(RtGen *gen, int64_t b, int64_t plen, int64_t n) {
    int64_t prompt[GP_B * GP_S], tok[GP_B * GP_S], want[GP_S];
    make_prompt(prompt, b, plen, (uint64_t)(b * 100 + plen * 10 + n));
    RtSampling s = greedy();
    RtStatus st = rt_gen_generate(gen, prompt, b, plen, n, &s, tok);
    CHECK_INT(TGCRT_OK, st);
    if (st) {
        printf("  b=%lld P=%lld N=%lld: %s\n", (long long)b, (long long)plen, (long long)n,
               rt_gen_error(gen));
        return;
    }
    int bad = 0;
    for (int64_t r = 0; r < b; r++) {
        memcpy(want, prompt + r * plen, (size_t)plen * sizeof *want);
        gp_expect(want, plen, n);
        for (int64_t t = 0; t < plen + n; t++)
            bad += tok[r * (plen + n) + t] != want[t];
    }
    if (bad)
        printf("  b=%lld P=%lld N=%lld: %d tokens differ\n", (long long)b, (long long)plen,
               (long long)n, bad);
    CHECK_INT(0, bad);
    const RtGenStats *gs = rt_gen_stats(gen);
    CHECK_INT(plen, gs->prefill_tokens);
    CHECK_INT((plen + GP_C - 1) / GP_C, gs->prefill_runs);
    CHECK_INT(n > 1 ? n - 1 : 0, gs->decode_tokens);
}

static void test_generate(void) {
    RtGen *gen = NULL;
    RtStatus s = rt_gen_create(&gp_gen, NULL, 1, &gen);
    CHECK_INT(TGCRT_OK, s);
    if (s) {
        printf("  %s\n", rt_gen_error(gen));
        rt_gen_destroy(gen);
        return;
    }
    /* P = 1, chunk - 1, chunk, chunk + 1, two chunks, a last chunk that
     * would pass max_seq (P = 9: it starts at 6), P = max_seq; N from 0 to
     * what fills max_seq; every batch up to the build's. */
    const int64_t plens[] = {1, 3, 4, 5, 8, 9, 10};
    for (size_t i = 0; i < sizeof plens / sizeof plens[0]; i++)
        for (int64_t b = 1; b <= GP_B; b++) {
            check_greedy(gen, b, plens[i], 0);
            if (plens[i] < GP_S) check_greedy(gen, b, plens[i], 1);
            check_greedy(gen, b, plens[i], GP_S - plens[i]);
        }
    check_greedy(gen, 2, 2, 5);

    /* One more than max_seq; rows, lengths and ids out of range. */
    int64_t prompt[GP_B * GP_S] = {0}, tok[(GP_B + 1) * (GP_S + 1)];
    RtSampling g = greedy();
    CHECK_INT(TGCRT_ERR_VALUE, rt_gen_generate(gen, prompt, 1, 4, GP_S - 3, &g, tok));
    CHECK_HAS(rt_gen_error(gen), "4 prompt tokens + 7 new tokens is more than max_seq 10");
    CHECK_INT(TGCRT_ERR_VALUE, rt_gen_generate(gen, prompt, 1, GP_S + 1, 0, &g, tok));
    CHECK_INT(TGCRT_ERR_SHAPE, rt_gen_generate(gen, prompt, GP_B + 1, 2, 1, &g, tok));
    CHECK_HAS(rt_gen_error(gen), "the prompt has 4 rows: expected 1 to 3");
    CHECK_INT(TGCRT_ERR_SHAPE, rt_gen_generate(gen, prompt, 0, 2, 1, &g, tok));
    CHECK_INT(TGCRT_ERR_SHAPE, rt_gen_generate(gen, prompt, 1, 0, 1, &g, tok));
    CHECK_INT(TGCRT_ERR_ARG, rt_gen_generate(gen, prompt, 1, 2, -1, &g, tok));
    prompt[3] = GP_V;
    CHECK_INT(TGCRT_ERR_VALUE, rt_gen_generate(gen, prompt, 2, 2, 1, &g, tok));
    CHECK_HAS(rt_gen_error(gen), "prompt token 11 at [1, 1] is outside the vocabulary [0, 11)");
    prompt[3] = 0;
    RtSampling bad = {.temperature = -1, .top_p = 1};
    CHECK_INT(TGCRT_ERR_ARG, rt_gen_generate(gen, prompt, 1, 2, 1, &bad, tok));
    CHECK_HAS(rt_gen_error(gen), "temperature -1");
    /* ... and it still generates after them. */
    check_greedy(gen, 3, 6, 4);
    rt_gen_destroy(gen);
}

/* The same generator with the step's arena the larger: the step owns. */
static void test_owner_choice(void) {
    RtProgram big = gp_step;
    big.arena_bytes = 8192;
    RtGenProgram g = gp_gen;
    g.step = &big;
    RtGen *gen = NULL;
    RtStatus s = rt_gen_create(&g, NULL, 1, &gen);
    CHECK_INT(TGCRT_OK, s);
    if (!s) check_greedy(gen, 2, 5, 4);
    rt_gen_destroy(gen);
}

/* The addresses a run saw: arena, w, cache, pool (gen_prog.h's ptrs). */
static bool run_ptrs(RtContext *c, int64_t seq, int64_t pos, int64_t ptrs[4]) {
    int64_t ids[GP_B * GP_C] = {0};
    for (int i = 0; i < GP_B * GP_C; i++)
        ids[i] = 1 + i % 5;
    uint16_t logits[GP_B * GP_C * GP_V * 2];
    const void *in[] = {ids, &pos};
    void *out[] = {logits, ptrs};
    (void)seq;
    RtStatus s = rt_context_run(c, in, out);
    if (s) printf("  run: %s\n", rt_context_error(c));
    return s == TGCRT_OK;
}

static bool all_zero(const float *x, int n) {
    for (int i = 0; i < n; i++)
        if (x[i] != 0) return false;
    return true;
}

static void test_shared_and_state(void) {
    /* A weights file with w = 7 and a "cache" of 5s: the state ignores it. */
    char path[64];
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    float w[GP_V], cache[GP_B * GP_S];
    for (int i = 0; i < GP_V; i++)
        w[i] = 7;
    for (int i = 0; i < GP_B * GP_S; i++)
        cache[i] = 5;
    RtStTensorOut t[] = {{"w", {RT_F32, 1, {GP_V}}, w, sizeof w},
                         {"cache", {RT_F32, 2, {GP_B, GP_S}}, cache, sizeof cache}};
    RtError err;
    rt_error_clear(&err);
    CHECK_INT(TGCRT_OK, rt_st_write(path, t, 2, &err));

    RtContext *owner = NULL, *sh = NULL;
    CHECK_INT(TGCRT_OK, rt_context_create(&gp_prefill, path, 1, &owner));
    CHECK_INT(TGCRT_OK, rt_context_create_shared(&gp_step, owner, &sh));
    int64_t a[4] = {0}, b[4] = {0};
    if (!owner || !sh || !rt_context_program(sh) || !run_ptrs(sh, 1, 0, b)) {
        CHECK(false);
        rt_context_destroy(sh);
        rt_context_destroy(owner);
        return;
    }
    /* Before any prefill: the state the step saw was zero past row 0. */
    const float *st = (const float *)(intptr_t)b[2];
    CHECK(all_zero(st + 1, GP_S - 1));
    CHECK(run_ptrs(owner, GP_C, 0, a));
    for (int i = 0; i < 4; i++)
        CHECK_INT(a[i], b[i]);                      /* arena, w, cache, pool */
    CHECK(((const float *)(intptr_t)a[1])[3] == 7); /* w from the file */
    CHECK(st[2] == 3);                              /* ids 1 + i % 5 at row 0, position 2 */
    CHECK_INT(TGCRT_OK, rt_context_reset_state(sh));
    CHECK(all_zero(st, GP_B * GP_S));
    CHECK(((const float *)(intptr_t)a[1])[3] == 7); /* params untouched */

    /* slice_scatter's run-time start out of range: the run fails (exit 1). */
    int64_t ids[GP_B * GP_C] = {0}, pos = GP_S - GP_C + 1, p4[4];
    float lg[GP_B * GP_C * GP_V];
    const void *in[] = {ids, &pos};
    void *out[] = {lg, p4};
    CHECK_INT(TGCRT_ERR_VALUE, rt_context_run(owner, in, out));
    CHECK_HAS(rt_context_error(owner), "slice_scatter: start 7 is out of range for the cache");

    /* Saving the weights leaves the state out. */
    char saved[64];
    snprintf(saved, sizeof saved, "%s/saved.safetensors", dir);
    CHECK_INT(TGCRT_OK, rt_context_save_params(owner, saved, RT_ROLE_WEIGHT));
    RtSafetensors *sf = NULL;
    CHECK_INT(TGCRT_OK, rt_st_open(saved, &sf, &err));
    if (sf) {
        CHECK(rt_st_find(sf, "w") != NULL);
        CHECK(rt_st_find(sf, "cache") == NULL);
    }
    rt_st_close(sf);

    /* Shared over a shared context: over its owner. */
    RtContext *sh2 = NULL;
    int64_t c[4] = {0};
    CHECK_INT(TGCRT_OK, rt_context_create_shared(&gp_step, sh, &sh2));
    CHECK(sh2 && run_ptrs(sh2, 1, 0, c) && c[0] == a[0] && c[2] == a[2] && c[3] == a[3]);
    rt_context_destroy(sh2);
    rt_context_destroy(sh);

    /* Mismatches, each named. */
    RtTensorInfo wide[2] = {gp_params[0], gp_params[1]}, plain[2] = {gp_params[0], gp_params[1]};
    RtTensorInfo other[2] = {gp_params[0], gp_params[1]}, half[2] = {gp_params[0], gp_params[1]};
    wide[0].desc.shape[0] = GP_V + 1;
    plain[1].state = false;
    other[1].name = "v_cache";
    half[0].storage = RT_BF16;
    struct {
        const RtTensorInfo *params;
        size_t arena;
        const char *needle;
    } bad[] = {
        {wide, 1024, "param 'w' is f32[12] stored as f32 in 'gen_step' but f32[11] stored as f32"},
        {plain, 1024, "param 'cache' is f32[3, 10] stored as f32 in 'gen_step' but a state f32"},
        {other, 1024, "state 'v_cache' is not one of 'gen_prefill''s params"},
        {half, 1024, "param 'w' is f32[11] stored as bf16 in 'gen_step'"},
        {gp_params, 4097, "its arena (4097 bytes) is larger than 'gen_prefill''s (4096 bytes)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        RtProgram q = gp_step;
        q.params = bad[i].params;
        q.arena_bytes = bad[i].arena;
        RtContext *x = NULL;
        CHECK_INT(TGCRT_ERR_ARG, rt_context_create_shared(&q, owner, &x));
        CHECK_HAS(rt_context_error(x), bad[i].needle);
        rt_context_destroy(x);
    }
    RtContext *x = NULL;
    CHECK_INT(TGCRT_ERR_ARG, rt_context_create_shared(&gp_step, NULL, &x));
    rt_context_destroy(x);
    rt_context_destroy(owner);
    unlink(path);
    unlink(saved);
}

/* A state is zeroed at creation even from a file; reset on a context
 * whose creation failed says why. */
static void test_reset_errors(void) {
    CHECK_INT(TGCRT_ERR_ARG, rt_context_reset_state(NULL));
    RtContext *c = NULL;
    CHECK_INT(TGCRT_ERR_IO, rt_context_create(&gp_prefill, "/nonexistent/w.safetensors", 1, &c));
    CHECK_INT(TGCRT_ERR_IO, rt_context_reset_state(c));
    RtContext *x = NULL;
    CHECK_INT(TGCRT_ERR_ARG, rt_context_create_shared(&gp_step, c, &x));
    CHECK_HAS(rt_context_error(x), "over a context that was not created");
    rt_context_destroy(x);
    rt_context_destroy(c);
    /* A generating program whose ids are not [batch, chunk]. */
    RtGenProgram g = gp_gen;
    g.chunk = 3;
    RtGen *gen = NULL;
    CHECK_INT(TGCRT_ERR_ARG, rt_gen_create(&g, NULL, 1, &gen));
    CHECK_HAS(rt_gen_error(gen), "the token ids 'ids' are i64[3, 4], expected i64[3, 3]");
    /* Generating with it gives that error again, never a crash. */
    int64_t prompt[2] = {1, 2}, tok[4];
    RtSampling s = greedy();
    CHECK_INT(TGCRT_ERR_ARG, rt_gen_generate(gen, prompt, 1, 2, 2, &s, tok));
    CHECK_HAS(rt_gen_error(gen), "the token ids 'ids' are i64[3, 4], expected i64[3, 3]");
    rt_gen_destroy(gen);
    /* One whose step cannot share the prefill's params: the shared
     * context exists but was not created; generating says so. */
    RtTensorInfo half[2] = {gp_params[0], gp_params[1]};
    half[0].storage = RT_BF16;
    RtProgram q = gp_step;
    q.params = half;
    g = gp_gen;
    g.step = &q;
    CHECK_INT(TGCRT_ERR_ARG, rt_gen_create(&g, NULL, 1, &gen));
    CHECK_INT(TGCRT_ERR_ARG, rt_gen_generate(gen, prompt, 1, 2, 2, &s, tok));
    CHECK_HAS(rt_gen_error(gen), "cannot share program 'gen_step' over program 'gen_prefill'");
    rt_gen_destroy(gen);
    g = gp_gen;
    g.logits_output = 1;
    CHECK_INT(TGCRT_ERR_ARG, rt_gen_create(&g, NULL, 1, &gen));
    CHECK_HAS(rt_gen_error(gen), "the logits 'ptrs' are i64[4], expected a floating [3, 4, 11]");
    rt_gen_destroy(gen);
    /* An ONNX decoder's mask or positions at the ids' index, or past the
     * inputs: refused before any buffer is filled through it. */
    const int bad[3][2] = {{0, -1}, {-1, 1}, {2, -1}};
    for (int k = 0; k < 3; k++) {
        g = gp_gen;
        g.mask_input = bad[k][0];
        g.positions_input = bad[k][1];
        CHECK_INT(TGCRT_ERR_ARG, rt_gen_create(&g, NULL, 1, &gen));
        CHECK_HAS(rt_gen_error(gen), "does not exist or is another input's index");
        rt_gen_destroy(gen);
    }
    /* A prefill that attends to its chunk as the last rows needs the mask
     * that hides the rows between (else it would read stale rows). */
    g = gp_gen;
    g.prefill_keys_last = 1;
    CHECK_INT(TGCRT_ERR_ARG, rt_gen_create(&g, NULL, 1, &gen));
    CHECK_HAS(rt_gen_error(gen), "has no attention mask to hide the rows between");
    rt_gen_destroy(gen);
}

int main(void) {
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_generate();
    test_owner_choice();
    test_shared_and_state();
    test_reset_errors();
    rmdir(dir);
    return rt_test_report();
}
