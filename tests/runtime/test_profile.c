/* The profiler's runtime side (profile.c) over a hand-written program whose
 * forward marks its steps as generated code does: the descriptor checks,
 * recording on and off, medians, the table, the trace file (escaping,
 * one event per step per run), runs missing a mark, and every refusal. */
#include <stdlib.h>
#include <unistd.h>

#include "rt_test.h"
#include "tgcrt.h"

/* bufs: [0] arena, [1] x, [2] y, [3] error cell, [4] the profiler. */
enum { PROF_SLOT = 4, NSTEPS = 3 };
static int skip_end_mark; /* a forward without its last mark */

static void spin_us(int us) {
    int64_t end = rt_now_ns() + (int64_t)us * 1000;
    while (rt_now_ns() < end) {
    }
}

static void forward(void **bufs, RtPool *pool) {
    (void)pool;
    RtProfile *prof = bufs[PROF_SLOT];
    const float *x = bufs[1];
    float *y = bufs[2];
    if (prof) rt_prof_mark(prof, 0);
    for (int i = 0; i < 4; i++)
        y[i] = x[i];
    if (prof) rt_prof_mark(prof, 1);
    spin_us(300);
    if (prof) rt_prof_mark(prof, 2);
    for (int i = 0; i < 4; i++)
        y[i] *= 2;
    if (prof && !skip_end_mark) rt_prof_mark(prof, NSTEPS);
}

static const RtTensorInfo X = {"x", {RT_F32, 1, {4}}, RT_F32, RT_INIT_NONE, 0, 0, 0, false};
static const RtTensorInfo Y = {"y", {RT_F32, 1, {4}}, RT_F32, RT_INIT_NONE, 0, 0, 0, false};
static const RtStepInfo STEPS[NSTEPS] = {
    {"copy", "y0", "p.tg:3", "f32[4] <- f32[4]", "generated copy", -1, 0, 32},
    {"sp\"in\n", "%7", "", "f32[4]", "generated \\ loop", -1, 1e6, 0},
    {"mul", "y", "p.tg:5", "f32[4] <- f32[4]", "generated elementwise", -1, 4, 32},
};

static RtProgram program(void) {
    RtProgram p = {0};
    p.name = "prof";
    p.ninputs = 1, p.noutputs = 1;
    p.inputs = &X, p.outputs = &Y;
    p.arena_bytes = 64;
    p.forward = forward;
    p.nsteps = NSTEPS, p.steps = STEPS, p.prof_slot = PROF_SLOT;
    return p;
}

static char *slurp(FILE *f) {
    fflush(f);
    long n = ftell(f);
    char *s = calloc(1, (size_t)n + 1);
    rewind(f);
    if (fread(s, 1, (size_t)n, f) != (size_t)n) s[0] = 0;
    return s;
}

static int count(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void test_descriptor(void) {
    RtProgram p = program();
    RtContext *c = NULL;
    p.prof_slot = 3; /* not the last slot: the error cell's */
    CHECK_INT(TGCRT_ERR_ARG, rt_context_create(&p, NULL, 1, &c));
    CHECK_HAS(rt_context_error(c), "malformed step table");
    CHECK_INT(TGCRT_ERR_ARG, rt_context_profile(c, true)); /* not created */
    rt_context_destroy(c);
    p = program();
    p.steps = NULL;
    CHECK_INT(TGCRT_ERR_ARG, rt_context_create(&p, NULL, 1, &c));
    CHECK_HAS(rt_context_error(c), "malformed step table");
    rt_context_destroy(c);
    /* A program without the table (built by hand): runs, cannot profile. */
    p = program();
    p.nsteps = 0, p.steps = NULL, p.prof_slot = 0;
    CHECK_INT(TGCRT_OK, rt_context_create(&p, NULL, 1, &c));
    CHECK_INT(TGCRT_ERR_ARG, rt_context_profile(c, true));
    CHECK_HAS(rt_context_error(c), "no step table");
    rt_context_destroy(c);
    CHECK_INT(TGCRT_ERR_ARG, rt_context_profile(NULL, true));
}

static void test_runs(void) {
    RtProgram p = program();
    RtContext *c = NULL;
    CHECK_INT(TGCRT_OK, rt_context_create(&p, NULL, 1, &c));
    float x[4] = {1, 2, 3, 4}, y[4];
    const void *in[1] = {x};
    void *out[1] = {y};
    CHECK_INT(TGCRT_OK, rt_context_run(c, in, out)); /* not recorded */
    CHECK_INT(0, rt_context_profile_runs(c));
    FILE *f = tmpfile();
    CHECK_INT(TGCRT_OK, rt_context_profile_print(c, f, -1));
    char *s = slurp(f);
    CHECK_HAS(s, "no run was recorded");
    free(s);
    fclose(f);
    CHECK_INT(TGCRT_ERR_ARG, rt_context_profile_write_json(c, "/tmp/never-written.json"));
    CHECK_HAS(rt_context_error(c), "was not profiled");

    CHECK_INT(TGCRT_OK, rt_context_profile(c, true));
    for (int r = 0; r < 4; r++)
        CHECK_INT(TGCRT_OK, rt_context_run(c, in, out));
    CHECK(y[3] == 8);
    CHECK_INT(4, rt_context_profile_runs(c));
    CHECK(rt_context_profile_step_us(c, 1) >= 300);
    CHECK(rt_context_profile_step_us(c, 0) >= 0 && rt_context_profile_step_us(c, 0) < 300);
    CHECK(rt_context_profile_step_us(c, NSTEPS) == -1);
    CHECK(rt_context_profile_step_us(c, -1) == -1);
    /* A run whose forward misses a mark is left out, not invented. */
    skip_end_mark = 1;
    CHECK_INT(TGCRT_OK, rt_context_run(c, in, out));
    skip_end_mark = 0;
    CHECK_INT(4, rt_context_profile_runs(c));
    /* Stopped: later runs are not recorded, the recorded ones stay. */
    CHECK_INT(TGCRT_OK, rt_context_profile(c, false));
    CHECK_INT(TGCRT_OK, rt_context_run(c, in, out));
    CHECK_INT(4, rt_context_profile_runs(c));

    f = tmpfile();
    CHECK_INT(TGCRT_OK, rt_context_profile_print(c, f, 400));
    s = slurp(f);
    CHECK_HAS(s, "prof: 4 runs of 3 steps");
    CHECK_HAS(s, "profile: steps=3 runs=4 total_us=");
    CHECK_HAS(s, "measured_us=400.0");
    CHECK_HAS(s, "copy @ p.tg:3: y0  f32[4] <- f32[4]  [generated copy]");
    /* sorted: the spinning step first */
    const char *spin = strstr(s, "sp\"in"), *copy = strstr(s, "copy @"), *mul = strstr(s, "mul @");
    CHECK(spin && copy && mul && spin < copy && spin < mul);
    CHECK_INT(1 + 3, count(s, " @ ")); /* the header and a row per step */
    free(s);
    fclose(f);

    char path[] = "/tmp/tgcrt-prof-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK_INT(TGCRT_OK, rt_context_profile_write_json(c, path));
    f = fopen(path, "r");
    fseek(f, 0, SEEK_END);
    s = slurp(f);
    fclose(f);
    unlink(path);
    CHECK_HAS(s, "{\"displayTimeUnit\": \"ms\"");
    CHECK_HAS(s, "\"traceEvents\": [");
    CHECK_INT(4 * NSTEPS, count(s, "\"ph\": \"X\""));
    CHECK_HAS(s, "\"name\": \"sp\\\"in\\u000a\""); /* a quote and a newline, escaped */
    CHECK_HAS(s, "\"impl\": \"generated \\\\ loop\"");
    CHECK_HAS(s, "\"args\": {\"step\": 2, \"run\": 3,");
    CHECK_HAS(s, "\"flops\": 1000000,");
    free(s);
    CHECK_INT(TGCRT_ERR_IO, rt_context_profile_write_json(c, "/nonexistent-dir/t.json"));
    CHECK_HAS(rt_context_error(c), "cannot write '/nonexistent-dir/t.json'");

    /* On again: afresh. */
    CHECK_INT(TGCRT_OK, rt_context_profile(c, true));
    CHECK_INT(0, rt_context_profile_runs(c));
    CHECK_INT(TGCRT_OK, rt_context_run(c, in, out));
    CHECK_INT(1, rt_context_profile_runs(c));
    rt_context_destroy(c);
}

int main(void) {
    test_descriptor();
    test_runs();
    return rt_test_report();
}
