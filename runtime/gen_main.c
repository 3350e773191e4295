/* rt_gen_main: the main() of a generating executable (tgc build
 * --generate; cli.md "Additions (round 3)"; docs/runtime.md "Generation").
 *
 *   ./GEN --prompt IDS.npy --max-new-tokens N [--temperature T] [--top-k K]
 *         [--top-p P] [--seed S] [--output-dir D] [--weights W]
 *         [--threads N] [--profile] [--help]
 *
 * It checks the command line, the prompt and the output file before
 * anything runs, generates through rt_gen (gen.c), writes D/tokens.npy
 * (i64[b, P + N]) whole or not at all and prints the prefill's and the
 * decode's tokens per second. Exit codes as rt_main's: 0 ok, 1 bad input
 * (a file, a prompt that does not fit), 2 a bad command line (unknown
 * flag, missing or malformed value, with the usage line), 3 a bug. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exe_internal.h"
#include "support/file_id.h"

static const char USAGE[] = "--prompt IDS.npy --max-new-tokens N [--temperature T] [--top-k K] "
                            "[--top-p P] [--seed S] [--output-dir DIR] [--weights W.safetensors] "
                            "[--threads N] [--profile] [--help]";

typedef struct GenArgs {
    RtExeArgs exe; /* prog, outdir, weights: what exe_main.c's helpers read */
    const char *prompt;
    bool new_set, temp_set, topk_set, topp_set, seed_set, threads_set, help, profile;
    long long max_new, top_k, threads;
    double temperature, top_p;
    uint64_t seed;
} GenArgs;

static int usage_error(const GenArgs *a, const char *fmt, const char *arg) {
    fprintf(stderr, "%s: error: ", a->exe.prog);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: %s %s\n", a->exe.prog, USAGE);
    return 2;
}

/* A finite decimal number, the whole string. */
static bool parse_real(const char *s, double *out) {
    if (!s || !*s || *s == ' ' || *s == '\t') return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || errno == ERANGE || !isfinite(v)) return false;
    *out = v;
    return true;
}

static const char *const VALUED[] = {"--prompt",     "--max-new-tokens", "--temperature",
                                     "--top-k",      "--top-p",          "--seed",
                                     "--output-dir", "--weights",        "--threads"};

/* Flag f's value v: 0, or the exit code (said). */
static int take(GenArgs *a, const char *f, const char *v) {
    unsigned long long n;
#define ONCE(flag_set)                                                                             \
    do {                                                                                           \
        if (flag_set) return usage_error(a, "%s is given twice", f);                               \
        flag_set = true;                                                                           \
    } while (0)
    if (!strcmp(f, "--prompt") || !strcmp(f, "--weights") || !strcmp(f, "--output-dir")) {
        const char **slot = !strcmp(f, "--prompt")    ? &a->prompt
                            : !strcmp(f, "--weights") ? &a->exe.weights
                                                      : &a->exe.outdir;
        bool set = !strcmp(f, "--output-dir") ? a->exe.outdir_set : *slot != NULL;
        if (set) return usage_error(a, "%s is given twice", f);
        if (!*v) return usage_error(a, "%s needs a path", f);
        *slot = v;
        if (!strcmp(f, "--output-dir")) a->exe.outdir_set = true;
    } else if (!strcmp(f, "--max-new-tokens")) {
        ONCE(a->new_set);
        if (!rt_exe_parse_count(v, INT64_MAX, &n))
            return usage_error(a, "--max-new-tokens %s: expected a token count (an integer >= 0)",
                               v);
        a->max_new = (long long)n;
    } else if (!strcmp(f, "--top-k")) {
        ONCE(a->topk_set);
        if (!rt_exe_parse_count(v, INT64_MAX, &n))
            return usage_error(
                a, "--top-k %s: expected a token count (an integer >= 0; 0: no limit)", v);
        a->top_k = (long long)n;
    } else if (!strcmp(f, "--seed")) {
        ONCE(a->seed_set);
        if (!rt_exe_parse_count(v, UINT64_MAX, &n))
            return usage_error(a, "--seed %s: expected a seed (an integer from 0 to 2^64 - 1)", v);
        a->seed = n;
    } else if (!strcmp(f, "--threads")) {
        ONCE(a->threads_set);
        if (!rt_exe_parse_count(v, TGCRT_MAX_THREADS, &n)) {
            char what[80];
            snprintf(what, sizeof what, "--threads %%s: expected a thread count from 0 to %d",
                     TGCRT_MAX_THREADS);
            return usage_error(a, what, v);
        }
        a->threads = (long long)n;
    } else if (!strcmp(f, "--temperature")) {
        ONCE(a->temp_set);
        if (!parse_real(v, &a->temperature) || a->temperature < 0)
            return usage_error(a, "--temperature %s: expected a number >= 0 (0: greedy)", v);
    } else {
        ONCE(a->topp_set);
        if (!parse_real(v, &a->top_p) || !(a->top_p > 0 && a->top_p <= 1))
            return usage_error(a, "--top-p %s: expected a probability in (0, 1] (1: no limit)", v);
    }
#undef ONCE
    return 0;
}

static int parse_args(GenArgs *a, int argc, char **argv) {
    for (int i = 1; i < argc && argv[i]; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            a->help = true;
            continue;
        }
        if (!strcmp(f, "--profile")) {
            if (a->profile) return usage_error(a, "%s is given twice", f);
            a->profile = true;
            continue;
        }
        bool known = false;
        for (size_t k = 0; !known && k < sizeof VALUED / sizeof VALUED[0]; k++)
            known = !strcmp(f, VALUED[k]);
        if (!known)
            return usage_error(a, f[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'",
                               f);
        if (i + 1 >= argc || !argv[i + 1]) return usage_error(a, "%s needs an argument", f);
        int rc = take(a, f, argv[++i]);
        if (rc) return rc;
    }
    return 0;
}

static void print_help(const RtGenProgram *g, const GenArgs *a) {
    printf("usage: %s %s\n\n", a->exe.prog, USAGE);
    printf("Generates tokens with the decoder '%s' (batch %lld, context %lld tokens, vocabulary\n"
           "%lld; the prompt runs in chunks of %lld tokens) and writes DIR/tokens.npy: i64[b, P + "
           "N],\n"
           "each prompt row followed by its N new tokens.\n",
           g->prefill && g->prefill->name ? g->prefill->name : "?", (long long)g->batch,
           (long long)g->max_seq, (long long)g->vocab, (long long)g->chunk);
    printf(
        "\noptions:\n"
        "  --prompt IDS.npy         the prompts: i64[b, P], 1 <= b <= %lld, P >= 1, P + N <= %lld\n"
        "  --max-new-tokens N       tokens to generate after each prompt (N >= 0)\n"
        "  --temperature T          sample at temperature T (default 0: greedy, the most likely)\n"
        "  --top-k K                sample among the K most likely tokens only (0: all)\n"
        "  --top-p P                sample among the smallest most likely set of mass >= P\n"
        "                           (0 < P <= 1; 1: all); applied after --top-k\n"
        "  --seed S                 the draws' seed (default 0): the same seed, the same tokens\n"
        "  --output-dir DIR         where tokens.npy goes (default: .)\n"
        "  --weights W.safetensors  load the params from W (default: the embedded weights,\n"
        "                           else the graph's initialisers)\n"
        "  --threads N              threads to use (0: the program's default)\n"
        "  --profile                after the tokens are written, print each program's steps\n"
        "                           (the prefill's runs, then the decode's) as the other\n"
        "                           executables' --profile does, beside its mean run time\n"
        "  --help                   this message\n"
        "\nIt prints the prefill's speed (the prompt's tokens per second) and the decode's\n"
        "(new tokens per second after the first, which the prefill gives). Both count the\n"
        "tokens of one sequence: a batch of b rows does b times the work at that rate.\n",
        (long long)g->batch, (long long)g->max_seq);
}

static char *tokens_path(const char *dir) {
    size_t n = strlen(dir) + 16;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s%stokens.npy", dir, dir[strlen(dir) - 1] == '/' ? "" : "/");
    return p;
}

/* D/tokens.npy is not the prompt or the weights file (cli.md: no command
 * writes over its own input). */
static int check_same(const GenArgs *a) {
    char *out = tokens_path(a->exe.outdir);
    if (!out) return rt_exe_error(&a->exe, 1, "out of memory");
    RtFileId w = rt_file_id(out, true);
    const char *in[2] = {a->prompt, a->exe.weights}, *what[2] = {"--prompt", "--weights"};
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++) {
        if (!in[k]) continue;
        RtFileId r = rt_file_id(in[k], false);
        if (rt_same_file(&w, &r))
            rc = rt_exe_error(&a->exe, 1,
                              "the tokens would be written to '%s', which is the %s file '%s'; "
                              "choose another --output-dir",
                              out, what[k], in[k]);
    }
    free(out);
    return rc;
}

/* The prompt: i64[b, P] with b and P in range and room for N more. */
static int load_prompt(const RtGenProgram *g, const GenArgs *a, RtArray *arr) {
    RtError err;
    rt_error_clear(&err);
    RtStatus s = rt_npy_read(a->prompt, arr, &err);
    if (s) return rt_exe_error(&a->exe, rt_status_exit_code(s), "--prompt: %s", err.msg);
    char f[RT_DESC_STR_MAX];
    const RtDesc *d = &arr->desc;
    if (d->dtype != RT_I64 || d->ndim != 2 || d->shape[0] < 1 || d->shape[0] > g->batch ||
        d->shape[1] < 1)
        return rt_exe_error(&a->exe, 1,
                            "--prompt %s: expected token ids i64[b, P] with 1 <= b <= %lld (the "
                            "batch it was built for) and P >= 1, found %s",
                            a->prompt, (long long)g->batch, rt_desc_format(d, f, sizeof f));
    if (d->shape[1] > g->max_seq || a->max_new > g->max_seq - d->shape[1])
        return rt_exe_error(&a->exe, 1,
                            "--prompt %s has %lld tokens and --max-new-tokens is %lld: %lld + "
                            "%lld is more than the %lld tokens of context the program was built "
                            "for (max_seq)",
                            a->prompt, (long long)d->shape[1], a->max_new, (long long)d->shape[1],
                            a->max_new, (long long)g->max_seq);
    return 0;
}

static void print_rate(const char *what, int64_t tokens, double ms) {
    double rate = tokens > 0 && ms > 0 ? (double)tokens / (ms / 1000.0) : 0;
    printf("%s: %lld tokens in %.2f ms (%.1f tokens/s)\n", what, (long long)tokens, ms, rate);
}

/* --profile: the prefill's table, then the step's, each beside the mean
 * time of its runs (the step's includes choosing the next token, which is
 * no step of the program). A program that did not run says so. */
static int print_profiles(RtGen *gen, const RtGenStats *st) {
    double runs[2] = {(double)st->prefill_runs, (double)st->decode_tokens};
    double ms[2] = {st->prefill_ms, st->decode_ms};
    for (int w = 0; w < 2; w++) {
        RtContext *c = rt_gen_context(gen, w);
        if (!c) continue;
        rt_context_profile(c, false);
        printf("%s:\n", w ? "decode step" : "prefill");
        double mean_us = runs[w] > 0 ? ms[w] * 1000.0 / runs[w] : -1;
        /* A prompt's short tail runs through the step: then the prefill's
         * time is not its own program's alone. */
        if (w == 0 && (double)rt_context_profile_runs(c) != runs[0]) mean_us = -1;
        if (rt_context_profile_print(c, stdout, mean_us)) return 1;
    }
    return 0;
}

static int run(const RtGenProgram *g, GenArgs *a, RtGen **gen, RtArray *prompt, int64_t **tok) {
    if (!a->prompt)
        return rt_exe_error(&a->exe, 1, "missing --prompt IDS.npy (the prompts' token ids)");
    if (!a->new_set)
        return rt_exe_error(&a->exe, 1, "missing --max-new-tokens N (how many tokens to generate)");
    int rc = load_prompt(g, a, prompt);
    if (!rc) rc = rt_exe_check_outdir(&a->exe);
    if (!rc) rc = check_same(a);
    if (rc) return rc;
    int64_t b = prompt->desc.shape[0], plen = prompt->desc.shape[1];

    RtStatus s = rt_gen_create(g, a->exe.weights, (int)a->threads, gen);
    if (s) return rt_exe_error(&a->exe, rt_status_exit_code(s), "%s", rt_gen_error(*gen));
    size_t n = (size_t)(b * (plen + a->max_new));
    if (!(*tok = malloc((n ? n : 1) * sizeof **tok)))
        return rt_exe_error(&a->exe, 1, "out of memory for %zu tokens", n);
    for (int w = 0; a->profile && w < 2; w++) {
        RtContext *c = rt_gen_context(*gen, w);
        if (c && (s = rt_context_profile(c, true)))
            return rt_exe_error(&a->exe, rt_status_exit_code(s), "%s", rt_context_error(c));
    }
    RtSampling sm = {.temperature = a->temperature,
                     .top_k = a->top_k,
                     .top_p = a->topp_set ? a->top_p : 1.0,
                     .seed = a->seed};
    if ((s = rt_gen_generate(*gen, prompt->data, b, plen, a->max_new, &sm, *tok)))
        return rt_exe_error(&a->exe, rt_status_exit_code(s), "%s", rt_gen_error(*gen));

    RtTensorInfo t = {.name = "tokens", .desc = {RT_I64, 2, {b, plen + a->max_new}}};
    t.storage = RT_I64;
    if ((rc = rt_exe_write_output(&a->exe, &t, *tok))) return rc;
    const RtGenStats *st = rt_gen_stats(*gen);
    print_rate("prefill", st->prefill_tokens, st->prefill_ms);
    print_rate("decode", st->decode_tokens, st->decode_ms);
    if (a->profile && (rc = print_profiles(*gen, st))) return rc;
    if (fflush(stdout) || ferror(stdout))
        return rt_exe_error(&a->exe, 1, "cannot write to standard output");
    return 0;
}

int rt_gen_main(const RtGenProgram *g, int argc, char **argv) {
    GenArgs a = {.exe = {.outdir = ".", .prog = "generate"}};
    if (argc > 0 && argv && argv[0] && *argv[0]) {
        const char *sl = strrchr(argv[0], '/');
        a.exe.prog = sl ? sl + 1 : argv[0];
    }
    if (!g) return rt_exe_error(&a.exe, 3, "no program");
    int rc = parse_args(&a, argc, argv);
    if (rc) return rc;
    if (a.help) {
        print_help(g, &a);
        return fflush(stdout) ? 1 : 0;
    }
    RtGen *gen = NULL;
    RtArray prompt = {0};
    int64_t *tok = NULL;
    rc = run(g, &a, &gen, &prompt, &tok);
    free(tok);
    rt_array_free(&prompt);
    rt_gen_destroy(gen);
    return rc;
}
