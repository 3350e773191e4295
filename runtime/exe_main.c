/* rt_main: the main() of every executable tgc builds (cli.md, "Compiled
 * executables"). It parses the flags, creates a context (weights from
 * --weights or the embedded image, else initialisers), loads or generates
 * the inputs, runs the graph (once, or a warm-up and N timed runs for
 * --bench), writes every output to DIR/NAME.npy and prints what --print and
 * --bench ask for. It prints nothing else on success. Exit codes: 0 ok,
 * 1 the user's input is wrong, 2 the command line is wrong (with a usage
 * line), 3 a bug. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_atomic.h"
#include "rt_internal.h"

#define MAX_BENCH 1000000000LL /* samples are kept in memory */

static const char USAGE[] = "[--weights W.safetensors] [--input NAME=FILE.npy]... "
                            "[--random-inputs SEED] [--output-dir DIR] [--print] [--bench N] "
                            "[--threads N] [--help]";

typedef struct Args {
    const char *prog, *weights, *outdir;
    const char **in_name, **in_file; /* --input, in command-line order */
    int nin;
    bool random, print, help, bench_set, threads_set, outdir_set;
    uint64_t seed;
    long long bench, threads;
} Args;

static int error(const Args *a, int code, const char *fmt, ...) RT_PRINTF(3, 4);
static int error(const Args *a, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", a->prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return code;
}

static int usage_error(const Args *a, const char *fmt, const char *arg) {
    fprintf(stderr, "%s: error: ", a->prog);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: %s %s\n", a->prog, USAGE);
    return 2;
}

/* A decimal integer in [0, max]: digits only, no sign, no spaces. */
static bool parse_count(const char *s, unsigned long long max, unsigned long long *out) {
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

static void print_help(const RtProgram *p, const Args *a) {
    char s[RT_DESC_STR_MAX];
    printf("usage: %s %s\n\n", a->prog, USAGE);
    printf("Runs the graph '%s' and writes each output to DIR/NAME.npy.\n",
           p->name ? p->name : "?");
    printf("\ninputs (.npy files of exactly this dtype and shape; bf16 from float32):\n");
    for (int i = 0; i < p->ninputs; i++)
        printf("  %s: %s\n", p->inputs[i].name, rt_desc_format(&p->inputs[i].desc, s, sizeof s));
    printf("\noutputs:\n");
    for (int i = 0; i < p->noutputs; i++)
        printf("  %s: %s\n", p->outputs[i].name, rt_desc_format(&p->outputs[i].desc, s, sizeof s));
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
           "  --help                   this message\n",
           p->default_threads ? "" : ", one per core");
}

static int parse_args(Args *a, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!f) break;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            a->help = true;
            continue;
        }
        if (!strcmp(f, "--print")) {
            a->print = true;
            continue;
        }
        bool known = !strcmp(f, "--weights") || !strcmp(f, "--input") ||
                     !strcmp(f, "--random-inputs") || !strcmp(f, "--output-dir") ||
                     !strcmp(f, "--bench") || !strcmp(f, "--threads");
        if (!known) {
            if (f[0] == '-') return usage_error(a, "unknown option '%s'", f);
            return usage_error(a, "unexpected argument '%s'", f);
        }
        if (i + 1 >= argc || !argv[i + 1]) return usage_error(a, "%s needs an argument", f);
        const char *v = argv[++i];
        unsigned long long n;
        if (!strcmp(f, "--input")) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v || !eq[1])
                return usage_error(a, "--input %s: expected NAME=FILE.npy", v);
            a->in_name[a->nin] = v;
            a->in_file[a->nin++] = eq + 1;
            continue;
        }
        bool twice = false;
        if (!strcmp(f, "--weights")) {
            twice = a->weights != NULL;
            a->weights = v;
        } else if (!strcmp(f, "--output-dir")) {
            twice = a->outdir_set;
            a->outdir = v;
            a->outdir_set = true;
            if (!*v) return usage_error(a, "--output-dir needs a directory%s", "");
        } else if (!strcmp(f, "--random-inputs")) {
            twice = a->random;
            a->random = true;
            if (!parse_count(v, UINT64_MAX, &n))
                return usage_error(a, "--random-inputs %s: expected a non-negative integer seed",
                                   v);
            a->seed = n;
        } else if (!strcmp(f, "--bench")) {
            twice = a->bench_set;
            a->bench_set = true;
            if (!parse_count(v, MAX_BENCH, &n))
                return usage_error(a, "--bench %s: expected a run count from 0 to 1000000000", v);
            a->bench = (long long)n;
        } else {
            twice = a->threads_set;
            a->threads_set = true;
            if (!parse_count(v, TGCRT_MAX_THREADS, &n)) {
                /* The limit is rt_pool_create's, stated once in tgcrt.h. */
                char fmt[80];
                snprintf(fmt, sizeof fmt, "--threads %%s: expected a thread count from 0 to %d",
                         TGCRT_MAX_THREADS);
                return usage_error(a, fmt, v);
            }
            a->threads = (long long)n;
        }
        if (twice) return usage_error(a, "%s is given twice", f);
    }
    return 0;
}

/* The value of --input for input i, NULL if none; duplicates and unknown
 * names are reported by check_inputs. */
static const char *input_file(const Args *a, const char *name) {
    for (int j = 0; j < a->nin; j++) {
        size_t len = (size_t)(a->in_file[j] - 1 - a->in_name[j]);
        if (strlen(name) == len && !strncmp(a->in_name[j], name, len)) return a->in_file[j];
    }
    return NULL;
}

static int check_inputs(const RtProgram *p, const Args *a) {
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
                return error(a, 1, "input '%.*s' is given twice (--input %s and --input %s)", len,
                             a->in_name[j], a->in_name[k], a->in_name[j]);
    }
    if (!a->random)
        for (int i = 0; i < p->ninputs; i++)
            if (!input_file(a, p->inputs[i].name))
                return error(a, 1,
                             "missing input '%s' (expected %s): pass --input %s=FILE.npy or "
                             "--random-inputs SEED",
                             p->inputs[i].name, rt_desc_format(&p->inputs[i].desc, s, sizeof s),
                             p->inputs[i].name);
    return 0;
}

/* --output-dir is created when missing, with its parents (mkdir -p; mode
 * 0777 less the umask). A component that exists and is not a directory is
 * an error naming it. */
static int make_outdir(const Args *a) {
    size_t n = strlen(a->outdir);
    char *path = malloc(n + 1);
    if (!path) return error(a, 1, "out of memory");
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
                rc = error(a, 1, "output directory '%s': '%s' exists and is not a directory",
                           a->outdir, path);
        } else if (errno != ENOENT) {
            rc = error(a, 1, "output directory '%s': '%s': %s", a->outdir, path, strerror(errno));
        } else if (mkdir(path, 0777) && errno != EEXIST) {
            rc = error(a, 1, "output directory '%s': cannot create '%s': %s", a->outdir, path,
                       strerror(errno));
        }
        path[i] = c;
    }
    free(path);
    return rc;
}

static int check_outdir(const Args *a) {
    struct stat st;
    if (stat(a->outdir, &st) && (errno == ENOENT || errno == ENOTDIR)) {
        int rc = make_outdir(a);
        if (rc) return rc;
    }
    if (stat(a->outdir, &st))
        return error(a, 1, "output directory '%s': %s", a->outdir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return error(a, 1, "output directory '%s' is not a directory", a->outdir);
    if (access(a->outdir, W_OK | X_OK))
        return error(a, 1, "output directory '%s' is not writable: %s", a->outdir, strerror(errno));
    return 0;
}

static char *output_path(const char *dir, const char *name) {
    size_t dl = strlen(dir), nl = strlen(name);
    bool slash = dl && dir[dl - 1] == '/';
    char *path = malloc(dl + nl + 6);
    if (path) snprintf(path, dl + nl + 6, "%s%s%s.npy", dir, slash ? "" : "/", name);
    return path;
}

/* No output may be written over a file the run reads (cli.md): an output
 * NAME.npy that is, by device and inode, one of the --input files or the
 * --weights file is refused before anything runs. */
static int check_outputs_not_inputs(const RtProgram *p, const Args *a) {
    for (int i = 0; i < p->noutputs; i++) {
        char *path = output_path(a->outdir, p->outputs[i].name);
        if (!path) return error(a, 1, "out of memory");
        struct stat out;
        int rc = 0;
        if (stat(path, &out) == 0 && S_ISREG(out.st_mode)) {
            for (int k = 0; k <= a->nin && !rc; k++) {
                const char *in = k < a->nin ? a->in_file[k] : a->weights;
                struct stat st;
                if (!in || stat(in, &st) || st.st_dev != out.st_dev || st.st_ino != out.st_ino)
                    continue;
                if (k < a->nin)
                    rc = error(a, 1,
                               "output '%s' would be written to '%s', which is the file of input "
                               "'%.*s' ('%s'); choose another --output-dir",
                               p->outputs[i].name, path, (int)(in - 1 - a->in_name[k]),
                               a->in_name[k], in);
                else
                    rc = error(a, 1,
                               "output '%s' would be written to '%s', which is the weights file "
                               "'%s'; choose another --output-dir",
                               p->outputs[i].name, path, in);
            }
        }
        free(path);
        if (rc) return rc;
    }
    return 0;
}

typedef struct Run {
    RtContext *ctx;
    void **in, **out;
    double *samples;
} Run;

static int run_main(const RtProgram *p, Args *a, Run *r) {
    int rc = check_inputs(p, a);
    if (!rc) rc = check_outdir(a);
    if (!rc) rc = check_outputs_not_inputs(p, a);
    if (rc) return rc;

    RtStatus s = rt_context_create(p, a->weights, (int)a->threads, &r->ctx);
    if (s) {
        int code = rt_status_exit_code(s);
        return error(a, code, "%s", r->ctx ? rt_context_error(r->ctx) : "out of memory");
    }

    /* Inputs at their declared dtypes. */
    r->in = calloc((size_t)p->ninputs + 1, sizeof *r->in);
    r->out = calloc((size_t)p->noutputs + 1, sizeof *r->out);
    if (!r->in || !r->out) return error(a, 1, "out of memory");
    for (int i = 0; i < p->ninputs; i++) {
        const RtTensorInfo *t = &p->inputs[i];
        size_t nb;
        int64_t numel;
        rt_desc_nbytes(&t->desc, &nb); /* checked by rt_context_create */
        rt_desc_numel(&t->desc, &numel);
        if (!(r->in[i] = rt_aligned_alloc(nb)))
            return error(a, 1, "out of memory for input '%s' (%zu bytes)", t->name, nb);
        const char *file = input_file(a, t->name);
        if (file) {
            RtError err;
            rt_error_clear(&err);
            if ((s = rt_npy_load_input(file, t->name, &t->desc, r->in[i], &err)))
                return error(a, rt_status_exit_code(s), "%s", err.msg);
        } else {
            rt_fill(NULL, RT_FILL_RANDOM_INPUT, 0, 0, a->seed, t->name, t->desc.dtype, r->in[i],
                    numel);
        }
    }
    for (int i = 0; i < p->noutputs; i++) {
        size_t nb;
        rt_desc_nbytes(&p->outputs[i].desc, &nb);
        if (!(r->out[i] = rt_aligned_alloc(nb)))
            return error(a, 1, "out of memory for output '%s' (%zu bytes)", p->outputs[i].name, nb);
    }

    /* Run: once, or a warm-up and N timed runs. */
    const void *const *in = (const void *const *)r->in;
    if (a->bench_set) {
        if (!(r->samples = malloc(((size_t)a->bench + 1) * sizeof *r->samples)))
            return error(a, 1, "out of memory for %lld bench samples", a->bench);
        if ((s = rt_context_run(r->ctx, in, r->out)))
            return error(a, rt_status_exit_code(s), "%s", rt_context_error(r->ctx));
        for (long long i = 0; i < a->bench; i++) {
            int64_t t0 = rt_now_ns();
            s = rt_context_run(r->ctx, in, r->out);
            r->samples[i] = (double)(rt_now_ns() - t0) / 1000.0;
            if (s) return error(a, rt_status_exit_code(s), "%s", rt_context_error(r->ctx));
        }
    } else if ((s = rt_context_run(r->ctx, in, r->out))) {
        return error(a, rt_status_exit_code(s), "%s", rt_context_error(r->ctx));
    }

    /* Outputs: written once, after the runs. Interrupted, the program
     * removes the temporary it was writing (rt_atomic.h). */
    rt_tmp_install_signals();
    for (int i = 0; i < p->noutputs; i++) {
        char *path = output_path(a->outdir, p->outputs[i].name);
        if (!path) return error(a, 1, "out of memory");
        RtError err;
        rt_error_clear(&err);
        s = rt_npy_write(path, &p->outputs[i].desc, r->out[i], &err);
        free(path);
        if (s) return error(a, rt_status_exit_code(s), "%s", err.msg);
    }
    if (a->print) {
        for (int i = 0; i < p->noutputs; i++) {
            char d[RT_DESC_STR_MAX];
            char *str = rt_tensor_str(&p->outputs[i].desc, r->out[i]);
            if (!str) return error(a, 1, "out of memory printing output '%s'", p->outputs[i].name);
            printf("%s: %s\n%s\n", p->outputs[i].name,
                   rt_desc_format(&p->outputs[i].desc, d, sizeof d), str);
            free(str);
        }
    }
    if (a->bench_set) {
        char line[256];
        RtBenchStats st = rt_bench_stats(r->samples, (size_t)a->bench);
        printf("%s\n", rt_bench_format(&st, line, sizeof line));
    }
    if (fflush(stdout) || ferror(stdout)) return error(a, 1, "cannot write to standard output");
    return 0;
}

int rt_main(const RtProgram *p, int argc, char **argv) {
    Args a = {0};
    a.outdir = ".";
    a.prog = p && p->name ? p->name : "program";
    if (argc > 0 && argv && argv[0] && *argv[0]) {
        const char *sl = strrchr(argv[0], '/');
        a.prog = sl ? sl + 1 : argv[0];
    }
    if (!p) return error(&a, 3, "no program");
    if (argc < 1 || !argv) argc = 1;
    a.in_name = calloc((size_t)argc, sizeof *a.in_name);
    a.in_file = calloc((size_t)argc, sizeof *a.in_file);
    int rc;
    if (!a.in_name || !a.in_file) {
        rc = error(&a, 1, "out of memory");
    } else if ((rc = parse_args(&a, argc, argv)) == 0) {
        if (a.help) {
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
    }
    free(a.in_name);
    free(a.in_file);
    return rc;
}
