/* rt_main: the main() of every executable tgc builds (cli.md, "Compiled
 * executables"). It parses the flags, creates a context (weights from
 * --weights or the embedded image, else initialisers), loads or generates
 * the inputs, runs the graph (once, or a warm-up and N timed runs for
 * --bench), writes every output to DIR/NAME.npy and prints what --print and
 * --bench ask for. It prints nothing else on success. Exit codes: 0 ok,
 * 1 the user's input is wrong, 2 the command line is wrong (with a usage
 * line), 3 a bug.
 *
 * A training program's main is rt_train_main (train_main.c), which shares
 * this file's command line, input, output-directory and same-file checks
 * and its output writing (exe_internal.h). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exe_internal.h"
#include "support/atomic_file.h"
#include "support/file_id.h"

#define MAX_BENCH 1000000000LL /* samples are kept in memory */

typedef RtExeArgs Args;

static const char USAGE[] = "[--weights W.safetensors] [--input NAME=FILE.npy]... "
                            "[--random-inputs SEED] [--output-dir DIR] [--print] [--bench N] "
                            "[--threads N] [--profile] [--profile-json FILE] [--help]";
static const char TRAIN_USAGE[] =
    "[--weights W.safetensors] --input NAME=FILE.npy... --steps N "
    "[--save-weights OUT.safetensors] [--save-state S] "
    "[--load-state S] [--output-dir DIR] [--log-every K] [--shuffle SEED] [--seed S] "
    "[--threads N] [--profile] [--profile-json FILE] [--help]";

const char *rt_exe_usage(const Args *a) {
    return a->train ? TRAIN_USAGE : USAGE;
}

int rt_exe_error(const Args *a, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", a->prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return code;
}

int rt_exe_usage_error(const Args *a, const char *fmt, const char *arg) {
    fprintf(stderr, "%s: error: ", a->prog);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: %s %s\n", a->prog, rt_exe_usage(a));
    return 2;
}

bool rt_exe_parse_count(const char *s, unsigned long long max, unsigned long long *out) {
    if (!s || !*s) return false;
    unsigned long long v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
        unsigned d = (unsigned)(*s - '0');
        if (v > (max - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* The CPU levels the kernels were compiled for, and the one this CPU
 * runs (cpu_features.c), for --help. */
static void print_cpu_levels(const RtProgram *p) {
    if (p->nlevels <= 0 || !p->levels) return;
    printf("\ncompiled for CPU levels (tgc build --cpu):");
    for (int i = 0; i < p->nlevels; i++)
        printf("%s %s", i ? "," : "", p->levels[i].name);
    int level = 0;
    RtError err;
    rt_error_clear(&err);
    if (rt_cpu_select(p, &level, &err))
        printf("\n  this CPU runs none of them: %s\n", err.msg);
    else
        printf("\n  this CPU runs: %s\n", p->levels[level].name);
}

static void print_help(const RtProgram *p, const Args *a) {
    char s[RT_DESC_STR_MAX];
    printf("usage: %s %s\n\n", a->prog, rt_exe_usage(a));
    printf("Runs the graph '%s' and writes each output to DIR/NAME.npy.\n",
           p->name ? p->name : "?");
    printf("\ninputs (.npy files of exactly this dtype and shape; bf16 from float32):\n");
    for (int i = 0; i < p->ninputs; i++)
        printf("  %s: %s\n", p->inputs[i].name, rt_desc_format(&p->inputs[i].desc, s, sizeof s));
    printf("\noutputs:\n");
    for (int i = 0; i < p->noutputs; i++)
        printf("  %s: %s\n", p->outputs[i].name, rt_desc_format(&p->outputs[i].desc, s, sizeof s));
    print_cpu_levels(p);
    printf("\noptions:\n"
           "  --weights W.safetensors  load the params from W (default: the embedded weights,\n"
           "                           else the graph's initialisers)\n"
           "  --input NAME=FILE.npy    the input NAME (repeat for each input)\n"
           "  --random-inputs SEED     generate every input not given by --input:\n"
           "                           floats standard normal, integers in [0, 10), bool 0/1\n"
           "  --output-dir DIR         where NAME.npy files go (default: .)\n"
           "  --print                  print each output's values, PyTorch-style\n"
           "  --bench N                time N runs after a warm-up and print a summary\n"
           "  --threads N              threads to use (0: the program's default%s)\n"
           "  --profile                after the runs (the N of --bench, else the one run),\n"
           "                           print the time of every step of the program\n"
           "  --profile-json FILE      write those runs' steps to FILE as Chrome trace events\n"
           "  --help                   this message\n",
           p->default_threads ? "" : ", one per core");
}

/* The flags taking a value, and the modes that have them (1 inference,
 * 2 training). */
static const struct {
    const char *flag;
    int modes;
} VALUED[] = {
    {"--weights", 3},       {"--input", 3},      {"--output-dir", 3}, {"--threads", 3},
    {"--random-inputs", 1}, {"--bench", 1},      {"--steps", 2},      {"--save-weights", 2},
    {"--save-state", 2},    {"--load-state", 2}, {"--log-every", 2},  {"--profile-json", 3},
    {"--shuffle", 2},       {"--seed", 2},
};

/* A single-valued flag's value: stored in *slot, "given twice" when set. */
static int set_once(Args *a, const char *f, const char *v, const char **slot) {
    if (*slot) return rt_exe_usage_error(a, "%s is given twice", f);
    if (!*v) return rt_exe_usage_error(a, "%s needs a file", f);
    *slot = v;
    return 0;
}

/* A count for f: the value in [lo, hi], else the usage error `what`. */
static int set_count(Args *a, const char *f, const char *v, bool *set, long long *out,
                     unsigned long long lo, unsigned long long hi, const char *what) {
    unsigned long long n;
    if (*set) return rt_exe_usage_error(a, "%s is given twice", f);
    *set = true;
    if (!rt_exe_parse_count(v, hi, &n) || n < lo) return rt_exe_usage_error(a, what, v);
    *out = (long long)n;
    return 0;
}

static int parse_args(Args *a, int argc, char **argv) {
    int mode = a->train ? 2 : 1;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!f) break;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            a->help = true;
            continue;
        }
        if (!strcmp(f, "--print") && !a->train) {
            a->print = true;
            continue;
        }
        if (!strcmp(f, "--profile")) {
            a->profile = true;
            continue;
        }
        bool known = false;
        for (size_t k = 0; !known && k < sizeof VALUED / sizeof VALUED[0]; k++)
            known = (VALUED[k].modes & mode) && !strcmp(f, VALUED[k].flag);
        if (!known) {
            if (f[0] == '-') return rt_exe_usage_error(a, "unknown option '%s'", f);
            return rt_exe_usage_error(a, "unexpected argument '%s'", f);
        }
        if (i + 1 >= argc || !argv[i + 1]) return rt_exe_usage_error(a, "%s needs an argument", f);
        const char *v = argv[++i];
        unsigned long long n;
        int rc = 0;
        if (!strcmp(f, "--input")) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v || !eq[1])
                return rt_exe_usage_error(a, "--input %s: expected NAME=FILE.npy", v);
            a->in_name[a->nin] = v;
            a->in_file[a->nin++] = eq + 1;
        } else if (!strcmp(f, "--weights")) {
            if (a->weights) return rt_exe_usage_error(a, "%s is given twice", f);
            a->weights = v;
        } else if (!strcmp(f, "--output-dir")) {
            if (a->outdir_set) return rt_exe_usage_error(a, "%s is given twice", f);
            a->outdir = v;
            a->outdir_set = true;
            if (!*v) return rt_exe_usage_error(a, "--output-dir needs a directory%s", "");
        } else if (!strcmp(f, "--random-inputs")) {
            if (a->random) return rt_exe_usage_error(a, "%s is given twice", f);
            a->random = true;
            if (!rt_exe_parse_count(v, UINT64_MAX, &n))
                return rt_exe_usage_error(
                    a, "--random-inputs %s: expected a non-negative integer seed", v);
            a->seed = n;
        } else if (!strcmp(f, "--bench")) {
            rc = set_count(a, f, v, &a->bench_set, &a->bench, 0, MAX_BENCH,
                           "--bench %s: expected a run count from 0 to 1000000000");
        } else if (!strcmp(f, "--threads")) {
            /* The limit is rt_pool_create's, stated once in tgcrt_abi.h. */
            char what[80];
            snprintf(what, sizeof what, "--threads %%s: expected a thread count from 0 to %d",
                     TGCRT_MAX_THREADS);
            rc = set_count(a, f, v, &a->threads_set, &a->threads, 0, TGCRT_MAX_THREADS, what);
        } else if (!strcmp(f, "--steps")) {
            rc = set_count(a, f, v, &a->steps_set, &a->steps, 0, LLONG_MAX,
                           "--steps %s: expected a step count (a non-negative integer)");
        } else if (!strcmp(f, "--log-every")) {
            rc = set_count(a, f, v, &a->log_set, &a->log_every, 1, LLONG_MAX,
                           "--log-every %s: expected a positive step count");
        } else if (!strcmp(f, "--save-weights")) {
            rc = set_once(a, f, v, &a->save_weights);
        } else if (!strcmp(f, "--save-state")) {
            rc = set_once(a, f, v, &a->save_state);
        } else if (!strcmp(f, "--shuffle")) {
            if (a->shuffle_set) return rt_exe_usage_error(a, "%s is given twice", f);
            a->shuffle_set = true;
            if (!rt_exe_parse_count(v, UINT64_MAX, &n))
                return rt_exe_usage_error(a, "--shuffle %s: expected a non-negative integer seed",
                                          v);
            a->shuffle_seed = n;
        } else if (!strcmp(f, "--seed")) {
            if (a->dropout_seed_set) return rt_exe_usage_error(a, "%s is given twice", f);
            a->dropout_seed_set = true;
            if (!rt_exe_parse_count(v, UINT64_MAX, &n))
                return rt_exe_usage_error(a, "--seed %s: expected a non-negative integer seed", v);
            a->dropout_seed = n;
        } else if (!strcmp(f, "--profile-json")) {
            rc = set_once(a, f, v, &a->profile_json);
        } else {
            rc = set_once(a, f, v, &a->load_state);
        }
        if (rc) return rc;
    }
    return 0;
}

int rt_exe_args_parse(Args *a, const RtProgram *p, int argc, char **argv) {
    a->outdir = ".";
    a->prog = p && p->name ? p->name : "program";
    if (argc > 0 && argv && argv[0] && *argv[0]) {
        const char *sl = strrchr(argv[0], '/');
        a->prog = sl ? sl + 1 : argv[0];
    }
    if (!p) return rt_exe_error(a, 3, "no program");
    if (argc < 1 || !argv) argc = 1;
    a->in_name = calloc((size_t)argc, sizeof *a->in_name);
    a->in_file = calloc((size_t)argc, sizeof *a->in_file);
    if (!a->in_name || !a->in_file) return rt_exe_error(a, 1, "out of memory");
    return parse_args(a, argc, argv);
}

void rt_exe_args_free(Args *a) {
    free(a->in_name);
    free(a->in_file);
}

/* The value of --input for input i, NULL if none; duplicates and unknown
 * names are reported by check_inputs. */
const char *rt_exe_input_file(const Args *a, const char *name) {
    for (int j = 0; j < a->nin; j++) {
        size_t len = (size_t)(a->in_file[j] - 1 - a->in_name[j]);
        if (strlen(name) == len && !strncmp(a->in_name[j], name, len)) return a->in_file[j];
    }
    return NULL;
}

int rt_exe_check_inputs(const RtProgram *p, const Args *a) {
    char s[RT_DESC_STR_MAX];
    for (int j = 0; j < a->nin; j++) {
        int len = (int)(a->in_file[j] - 1 - a->in_name[j]);
        bool found = false;
        for (int i = 0; i < p->ninputs && !found; i++)
            found = strlen(p->inputs[i].name) == (size_t)len &&
                    !strncmp(p->inputs[i].name, a->in_name[j], (size_t)len);
        if (!found) {
            fprintf(stderr, "%s: error: unknown input '%.*s' (the graph's inputs:", a->prog, len,
                    a->in_name[j]);
            for (int i = 0; i < p->ninputs; i++)
                fprintf(stderr, "%s %s", i ? "," : "", p->inputs[i].name);
            fprintf(stderr, "%s)\n", p->ninputs ? "" : " none");
            return 1;
        }
        for (int k = 0; k < j; k++)
            if ((int)(a->in_file[k] - 1 - a->in_name[k]) == len &&
                !strncmp(a->in_name[k], a->in_name[j], (size_t)len))
                return rt_exe_error(a, 1, "input '%.*s' is given twice (--input %s and --input %s)",
                                    len, a->in_name[j], a->in_name[k], a->in_name[j]);
    }
    if (!a->random)
        for (int i = 0; i < p->ninputs; i++)
            if (!rt_exe_input_file(a, p->inputs[i].name))
                return rt_exe_error(
                    a, 1, "missing input '%s' (expected %s): pass --input %s=FILE.npy%s",
                    p->inputs[i].name, rt_desc_format(&p->inputs[i].desc, s, sizeof s),
                    p->inputs[i].name, a->train ? "" : " or --random-inputs SEED");
    return 0;
}

/* --output-dir is created when missing, with its parents (mkdir -p; mode
 * 0777 less the umask). A component that exists and is not a directory is
 * an error naming it. */
static int make_outdir(const Args *a) {
    size_t n = strlen(a->outdir);
    char *path = malloc(n + 1);
    if (!path) return rt_exe_error(a, 1, "out of memory");
    memcpy(path, a->outdir, n + 1);
    int rc = 0;
    for (size_t i = 1; i <= n && !rc; i++) {
        if (path[i] != '/' && path[i] != 0) continue;
        if (path[i - 1] == '/') continue; /* "a//b", a trailing '/' */
        char c = path[i];
        path[i] = 0;
        struct stat st;
        if (stat(path, &st) == 0) {
            if (!S_ISDIR(st.st_mode))
                rc = rt_exe_error(a, 1, "output directory '%s': '%s' exists and is not a directory",
                                  a->outdir, path);
        } else if (errno != ENOENT) {
            rc = rt_exe_error(a, 1, "output directory '%s': '%s': %s", a->outdir, path,
                              strerror(errno));
        } else if (mkdir(path, 0777) && errno != EEXIST) {
            rc = rt_exe_error(a, 1, "output directory '%s': cannot create '%s': %s", a->outdir,
                              path, strerror(errno));
        }
        path[i] = c;
    }
    free(path);
    return rc;
}

int rt_exe_check_outdir(const Args *a) {
    struct stat st;
    if (stat(a->outdir, &st) && (errno == ENOENT || errno == ENOTDIR)) {
        int rc = make_outdir(a);
        if (rc) return rc;
    }
    if (stat(a->outdir, &st))
        return rt_exe_error(a, 1, "output directory '%s': %s", a->outdir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return rt_exe_error(a, 1, "output directory '%s' is not a directory", a->outdir);
    if (access(a->outdir, W_OK | X_OK))
        return rt_exe_error(a, 1, "output directory '%s' is not writable: %s", a->outdir,
                            strerror(errno));
    return 0;
}

static char *output_path(const char *dir, const char *name) {
    size_t dl = strlen(dir), nl = strlen(name);
    bool slash = dl && dir[dl - 1] == '/';
    char *path = malloc(dl + nl + 6);
    if (path) snprintf(path, dl + nl + 6, "%s%s%s.npy", dir, slash ? "" : "/", name);
    return path;
}

/* ---- nothing written is a file read, or another file written (cli.md) ----
 *
 * Identity is (device, inode) from stat(), which follows symbolic links.
 * A file not there yet is identified by its directory's (device, inode)
 * and its last name, so that `--save-weights a.st --save-state ./a.st` is
 * caught before either exists. Character devices (/dev/null) are never
 * the same file: writing one twice loses nothing. */

/* A file the run reads or writes. */
typedef enum IoKind {
    IO_INPUT,
    IO_WEIGHTS,
    IO_LOAD_STATE,
    IO_OUTPUT,
    IO_SAVE_WEIGHTS,
    IO_SAVE_STATE,
    IO_PROFILE_JSON
} IoKind;
typedef struct IoFile {
    IoKind kind;
    const char *path;
    char *owned;      /* path, when it was made here */
    const char *name; /* input or output name, len bytes */
    int len;
    RtFileId id;
} IoFile;

/* How messages call f. */
static void describe(FILE *to, const IoFile *f) {
    switch (f->kind) {
    case IO_INPUT: fprintf(to, "the file of input '%.*s' ('%s')", f->len, f->name, f->path); break;
    case IO_WEIGHTS: fprintf(to, "the weights file '%s'", f->path); break;
    case IO_LOAD_STATE: fprintf(to, "the --load-state file '%s'", f->path); break;
    case IO_OUTPUT: fprintf(to, "output '%.*s'", f->len, f->name); break;
    case IO_SAVE_WEIGHTS: fputs("the weights (--save-weights)", to); break;
    case IO_SAVE_STATE: fputs("the optimizer state (--save-state)", to); break;
    case IO_PROFILE_JSON: fputs("the profile's trace (--profile-json)", to); break;
    }
}

static const char *flag_of(IoKind k) {
    return k == IO_OUTPUT         ? "--output-dir"
           : k == IO_SAVE_WEIGHTS ? "--save-weights"
           : k == IO_SAVE_STATE   ? "--save-state"
                                  : "--profile-json";
}

static IoFile io_file(IoKind kind, const char *path, const char *name, int len) {
    IoFile f = {.kind = kind, .path = path, .name = name, .len = len};
    f.id = rt_file_id(path, kind >= IO_OUTPUT);
    return f;
}

static char *output_path(const char *dir, const char *name);

static int same_file_error(const Args *a, const IoFile *w, const IoFile *other, bool read) {
    fprintf(stderr, "%s: error: ", a->prog);
    describe(stderr, w);
    fprintf(stderr, " would be written to '%s', which is %s", w->path, read ? "" : "also where ");
    describe(stderr, other);
    fprintf(stderr, "%s; choose another %s\n", read ? "" : " would be written", flag_of(w->kind));
    return 1;
}

static int check_files(const RtProgram *p, const Args *a, IoFile *in, IoFile *out, int *nout) {
    int nin = 0;
    for (int k = 0; k < a->nin; k++)
        in[nin++] = io_file(IO_INPUT, a->in_file[k], a->in_name[k],
                            (int)(a->in_file[k] - 1 - a->in_name[k]));
    if (a->weights) in[nin++] = io_file(IO_WEIGHTS, a->weights, NULL, 0);
    if (a->load_state) in[nin++] = io_file(IO_LOAD_STATE, a->load_state, NULL, 0);
    if (a->save_weights) out[(*nout)++] = io_file(IO_SAVE_WEIGHTS, a->save_weights, NULL, 0);
    if (a->save_state) out[(*nout)++] = io_file(IO_SAVE_STATE, a->save_state, NULL, 0);
    if (a->profile_json) out[(*nout)++] = io_file(IO_PROFILE_JSON, a->profile_json, NULL, 0);
    /* A training executable writes its user outputs, and only with --output-dir. */
    for (int i = 0; i < p->noutputs && (!a->train || a->outdir_set); i++) {
        if (a->train && p->train->update_of[i] >= 0) continue;
        char *path = output_path(a->outdir, p->outputs[i].name);
        if (!path) return rt_exe_error(a, 1, "out of memory");
        out[*nout] = io_file(IO_OUTPUT, path, p->outputs[i].name, (int)strlen(p->outputs[i].name));
        out[(*nout)++].owned = path;
    }
    for (int i = 0; i < *nout; i++) {
        for (int k = 0; k < nin; k++)
            if (rt_same_file(&out[i].id, &in[k].id))
                return same_file_error(a, &out[i], &in[k], true);
        for (int k = 0; k < i; k++)
            if (rt_same_file(&out[i].id, &out[k].id))
                return same_file_error(a, &out[i], &out[k], false);
    }
    return 0;
}

int rt_exe_check_files(const RtProgram *p, const Args *a) {
    IoFile *in = calloc((size_t)a->nin + 2, sizeof *in);
    IoFile *out = calloc((size_t)p->noutputs + 3, sizeof *out);
    int nout = 0;
    int rc = in && out ? check_files(p, a, in, out, &nout) : rt_exe_error(a, 1, "out of memory");
    for (int i = 0; i < nout; i++)
        free(out[i].owned);
    free(in);
    free(out);
    return rc;
}

int rt_exe_write_output(const Args *a, const RtTensorInfo *t, const void *data) {
    /* Interrupted, the program removes the temporary it was writing
     * (rt_atomic.h). */
    rt_tmp_install_signals();
    char *path = output_path(a->outdir, t->name);
    if (!path) return rt_exe_error(a, 1, "out of memory");
    RtError err;
    rt_error_clear(&err);
    RtStatus s = rt_npy_write(path, &t->desc, data, &err);
    free(path);
    return s ? rt_exe_error(a, rt_status_exit_code(s), "%s", err.msg) : 0;
}

typedef struct Run {
    RtContext *ctx;
    void **in, **out;
    double *samples;
} Run;

static int run_main(const RtProgram *p, Args *a, Run *r) {
    int rc = rt_exe_check_inputs(p, a);
    if (!rc) rc = rt_exe_check_outdir(a);
    if (!rc) rc = rt_exe_check_files(p, a);
    if (!rc) rc = rt_exe_profile_check(a, p);
    if (rc) return rc;

    RtStatus s = rt_context_create(p, a->weights, (int)a->threads, &r->ctx);
    if (s) {
        int code = rt_status_exit_code(s);
        return rt_exe_error(a, code, "%s", r->ctx ? rt_context_error(r->ctx) : "out of memory");
    }

    /* Inputs at their declared dtypes. */
    r->in = calloc((size_t)p->ninputs + 1, sizeof *r->in);
    r->out = calloc((size_t)p->noutputs + 1, sizeof *r->out);
    if (!r->in || !r->out) return rt_exe_error(a, 1, "out of memory");
    for (int i = 0; i < p->ninputs; i++) {
        const RtTensorInfo *t = &p->inputs[i];
        size_t nb;
        int64_t numel;
        rt_desc_nbytes(&t->desc, &nb); /* checked by rt_context_create */
        rt_desc_numel(&t->desc, &numel);
        if (!(r->in[i] = rt_aligned_alloc(nb)))
            return rt_exe_error(a, 1, "out of memory for input '%s' (%zu bytes)", t->name, nb);
        const char *file = rt_exe_input_file(a, t->name);
        if (file) {
            RtError err;
            rt_error_clear(&err);
            if ((s = rt_npy_load_input(file, t->name, &t->desc, r->in[i], &err)))
                return rt_exe_error(a, rt_status_exit_code(s), "%s", err.msg);
        } else {
            rt_fill(NULL, RT_FILL_RANDOM_INPUT, 0, 0, a->seed, t->name, t->desc.dtype, r->in[i],
                    numel);
        }
    }
    for (int i = 0; i < p->noutputs; i++) {
        size_t nb;
        rt_desc_nbytes(&p->outputs[i].desc, &nb);
        if (!(r->out[i] = rt_aligned_alloc(nb)))
            return rt_exe_error(a, 1, "out of memory for output '%s' (%zu bytes)",
                                p->outputs[i].name, nb);
    }

    /* Run: once, or a warm-up and N timed runs. */
    const void *const *in = (const void *const *)r->in;
    double once_us = 0;
    if (a->bench_set) {
        if (!(r->samples = malloc(((size_t)a->bench + 1) * sizeof *r->samples)))
            return rt_exe_error(a, 1, "out of memory for %lld bench samples", a->bench);
        if ((s = rt_context_run(r->ctx, in, r->out)))
            return rt_exe_error(a, rt_status_exit_code(s), "%s", rt_context_error(r->ctx));
        if ((rc = rt_exe_profile_start(a, r->ctx))) return rc; /* the timed runs only */
        for (long long i = 0; i < a->bench; i++) {
            int64_t t0 = rt_now_ns();
            s = rt_context_run(r->ctx, in, r->out);
            r->samples[i] = (double)(rt_now_ns() - t0) / 1000.0;
            if (s) return rt_exe_error(a, rt_status_exit_code(s), "%s", rt_context_error(r->ctx));
        }
    } else {
        if ((rc = rt_exe_profile_start(a, r->ctx))) return rc;
        int64_t t0 = rt_now_ns();
        if ((s = rt_context_run(r->ctx, in, r->out)))
            return rt_exe_error(a, rt_status_exit_code(s), "%s", rt_context_error(r->ctx));
        once_us = (double)(rt_now_ns() - t0) / 1000.0;
    }

    /* Outputs: written once, after the runs. */
    for (int i = 0; i < p->noutputs; i++)
        if ((rc = rt_exe_write_output(a, &p->outputs[i], r->out[i]))) return rc;
    if (a->print) {
        for (int i = 0; i < p->noutputs; i++) {
            char d[RT_DESC_STR_MAX];
            char *str = rt_tensor_str(&p->outputs[i].desc, r->out[i]);
            if (!str)
                return rt_exe_error(a, 1, "out of memory printing output '%s'", p->outputs[i].name);
            printf("%s: %s\n%s\n", p->outputs[i].name,
                   rt_desc_format(&p->outputs[i].desc, d, sizeof d), str);
            free(str);
        }
    }
    double measured_us = once_us;
    if (a->bench_set) {
        char line[256];
        RtBenchStats st = rt_bench_stats(r->samples, (size_t)a->bench);
        printf("%s\n", rt_bench_format(&st, line, sizeof line));
        measured_us = st.median_us;
    }
    /* Which of the program's CPU levels ran (tgc build --cpu A,B,...). */
    if (a->profile && *rt_context_cpu_level(r->ctx))
        printf("cpu level: %s\n", rt_context_cpu_level(r->ctx));
    if ((rc = rt_exe_profile_finish(a, r->ctx, measured_us))) return rc;
    if (fflush(stdout) || ferror(stdout))
        return rt_exe_error(a, 1, "cannot write to standard output");
    return 0;
}

int rt_main(const RtProgram *p, int argc, char **argv) {
    rt_exe_omp_preinit(argc, argv, NULL); /* links exe_omp.c in; does nothing here */
    if (p && p->train) return rt_train_main(p, argc, argv);
    Args a = {0};
    int rc = rt_exe_args_parse(&a, p, argc, argv);
    if (rc) {
        /* said */
    } else if (a.help) {
        print_help(p, &a);
        rc = fflush(stdout) ? 1 : 0;
    } else {
        Run r = {0};
        rc = run_main(p, &a, &r);
        if (r.in)
            for (int i = 0; i < p->ninputs; i++)
                rt_aligned_free(r.in[i]);
        if (r.out)
            for (int i = 0; i < p->noutputs; i++)
                rt_aligned_free(r.out[i]);
        free(r.in);
        free(r.out);
        free(r.samples);
        rt_context_destroy(r.ctx);
    }
    rt_exe_args_free(&a);
    return rc;
}
