/* The profiler: the time of every step of every run of a context, the
 * table EXE --profile prints and the Chrome trace EXE --profile-json
 * writes (docs/runtime.md "Profiling").
 *
 * The compiler emits a step table (RtProgram.steps: one row per kernel of
 * the plan, in run order) and, in the forward, before each step and after
 * the last, `if (prof) rt_prof_mark(prof, i)` with prof read from
 * bufs[prof_slot]. A run's row of timestamps is therefore nsteps + 1 marks,
 * and step i took t[i + 1] - t[i]: the steps tile the forward, so their sum
 * is the forward's time (what a run costs but staging its inputs and
 * outputs). Rows are kept for every run (8 bytes per step per run), for
 * the medians and for the trace's one event per step per run. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "context_internal.h"
#include "profile_internal.h"
#include "support/atomic_file.h"

struct RtProfile {
    int nsteps;
    int64_t *t;       /* nruns rows of nsteps + 1 timestamps, ns (rt_now_ns) */
    size_t nruns;     /* complete rows */
    size_t cap;       /* rows allocated */
    int64_t *cur;     /* the row being recorded, or NULL (no room: the run is not kept) */
    bool dropped;     /* some run was not kept (out of memory) */
    char **conv_impl; /* per convolution: its implementation's name (conv.c), or NULL */
    int nconvs;
};

void rt_prof_mark(RtProfile *prof, int64_t step) {
    if (prof->cur && step >= 0 && step <= prof->nsteps) prof->cur[step] = rt_now_ns();
}

RtProfile *rt_prof_new(int nsteps) {
    RtProfile *p = calloc(1, sizeof *p);
    if (p) p->nsteps = nsteps > 0 ? nsteps : 0;
    return p;
}

void rt_prof_free(RtProfile *p) {
    if (!p) return;
    for (int i = 0; i < p->nconvs; i++)
        free(p->conv_impl[i]);
    free(p->conv_impl);
    free(p->t);
    free(p);
}

void rt_prof_run_begin(RtProfile *p) {
    size_t row = (size_t)p->nsteps + 1;
    if (p->nruns == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        int64_t *t = cap < SIZE_MAX / sizeof *t / row ? realloc(p->t, cap * row * sizeof *t) : NULL;
        if (!t) {
            p->cur = NULL;
            p->dropped = true;
            return;
        }
        p->t = t;
        p->cap = cap;
    }
    p->cur = p->t + p->nruns * row;
    for (size_t i = 0; i < row; i++)
        p->cur[i] = -1;
}

void rt_prof_run_end(RtProfile *p) {
    if (!p->cur) return;
    /* A mark the forward did not make (a forward without hooks) leaves
     * the run out rather than inventing a time. */
    bool whole = true;
    for (int i = 0; i <= p->nsteps; i++)
        whole &= p->cur[i] >= 0;
    if (whole) p->nruns++;
    p->cur = NULL;
}

void rt_prof_set_conv_impl(RtProfile *p, int i, const char *name) {
    if (i < 0 || !name) return;
    if (i >= p->nconvs) {
        char **n = realloc(p->conv_impl, ((size_t)i + 1) * sizeof *n);
        if (!n) return;
        for (int j = p->nconvs; j <= i; j++)
            n[j] = NULL;
        p->conv_impl = n;
        p->nconvs = i + 1;
    }
    free(p->conv_impl[i]);
    p->conv_impl[i] = strdup(name);
}

/* ---- statistics ---- */

static double step_us(const RtProfile *p, size_t run, int i) {
    const int64_t *r = p->t + run * ((size_t)p->nsteps + 1);
    return (double)(r[i + 1] - r[i]) / 1000.0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of step i over the runs; scratch holds nruns doubles. */
static double median_us(const RtProfile *p, int i, double *scratch) {
    for (size_t r = 0; r < p->nruns; r++)
        scratch[r] = step_us(p, r, i);
    qsort(scratch, p->nruns, sizeof *scratch, cmp_double);
    size_t n = p->nruns;
    return n % 2 ? scratch[n / 2] : (scratch[n / 2 - 1] + scratch[n / 2]) / 2;
}

static const RtProfile *recorded(const RtContext *c) {
    return c && c->prof && c->prof->nruns ? c->prof : NULL;
}

size_t rt_context_profile_runs(const RtContext *c) {
    return c && c->prof ? c->prof->nruns : 0;
}

double rt_context_profile_step_us(const RtContext *c, int i) {
    const RtProfile *p = recorded(c);
    if (!p || i < 0 || i >= p->nsteps) return -1;
    double *s = malloc(p->nruns * sizeof *s);
    if (!s) return -1;
    double m = median_us(p, i, s);
    free(s);
    return m;
}

static const char *impl_of(const RtProfile *p, const RtStepInfo *s) {
    if (s->conv >= 0 && s->conv < p->nconvs && p->conv_impl[s->conv]) return p->conv_impl[s->conv];
    return s->impl ? s->impl : "?";
}

/* ---- the table ---- */

typedef struct Row {
    int step;
    double us;
} Row;

static int cmp_row(const void *a, const void *b) {
    const Row *x = a, *y = b;
    if (x->us != y->us) return x->us < y->us ? 1 : -1;
    return x->step - y->step;
}

static void rate(FILE *f, double amount, double us) {
    if (amount > 0 && us > 0)
        fprintf(f, " %9.2f", amount / (us * 1000.0));
    else
        fprintf(f, " %9s", "-");
}

RtStatus rt_context_profile_print(const RtContext *c, FILE *f, double measured_us) {
    if (!c || !f) return TGCRT_ERR_ARG;
    const RtProfile *p = recorded(c);
    const RtProgram *prog = c->p;
    const char *name = prog && prog->name ? prog->name : "?";
    if (!p) {
        fprintf(f, "profile: %s: no run was recorded\n", name);
        return TGCRT_OK;
    }
    Row *rows = malloc(((size_t)p->nsteps + 1) * sizeof *rows);
    double *scratch = malloc(p->nruns * sizeof *scratch);
    if (!rows || !scratch) {
        free(rows);
        free(scratch);
        return TGCRT_ERR_NOMEM;
    }
    double total = 0;
    for (int i = 0; i < p->nsteps; i++) {
        rows[i].step = i;
        rows[i].us = median_us(p, i, scratch);
        total += rows[i].us;
    }
    qsort(rows, (size_t)p->nsteps, sizeof *rows, cmp_row);
    fprintf(f,
            "profile: %s: %zu run%s of %d steps; time: the median over the runs, sorted%s\n"
            "  rank  step    time_us   share   GFLOP/s      GB/s  op @ place: value  shapes  "
            "[implementation]\n",
            name, p->nruns, p->nruns == 1 ? "" : "s", p->nsteps,
            p->dropped ? " (some runs were not kept: out of memory)" : "");
    for (int k = 0; k < p->nsteps; k++) {
        const RtStepInfo *s = &prog->steps[rows[k].step];
        double us = rows[k].us;
        fprintf(f, "  %4d  %4d %10.1f  %5.1f%%", k + 1, rows[k].step, us,
                total > 0 ? 100.0 * us / total : 0.0);
        rate(f, s->flops, us);
        rate(f, s->bytes, us);
        fprintf(f, "  %s @ %s: %s  %s  [%s]\n", s->op ? s->op : "?",
                s->where && *s->where ? s->where : "?", s->value ? s->value : "?",
                s->shapes ? s->shapes : "", impl_of(p, s));
    }
    fprintf(f, "profile: steps=%d runs=%zu total_us=%.1f", p->nsteps, p->nruns, total);
    if (measured_us >= 0)
        fprintf(f, " measured_us=%.1f (the steps cover %.1f%% of a run)", measured_us,
                measured_us > 0 ? 100.0 * total / measured_us : 0.0);
    fputc('\n', f);
    free(rows);
    free(scratch);
    return ferror(f) ? TGCRT_ERR_IO : TGCRT_OK;
}

/* ---- Chrome trace events ---- */

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f); /* UTF-8 passes through; names come from the .tg file */
    }
    fputc('"', f);
}

static void json_num(FILE *f, double x) {
    if (isfinite(x))
        fprintf(f, "%.17g", x);
    else
        fputs("null", f);
}

static void write_events(FILE *f, const RtContext *c, const RtProfile *p) {
    const RtProgram *prog = c->p;
    int64_t t0 = p->nruns ? p->t[0] : 0;
    fputs("{\"displayTimeUnit\": \"ms\", \"otherData\": {\"program\": ", f);
    json_str(f, prog->name);
    fprintf(f, ", \"runs\": %zu, \"steps\": %d},\n\"traceEvents\": [", p->nruns, p->nsteps);
    const char *sep = "\n";
    for (size_t r = 0; r < p->nruns; r++) {
        const int64_t *row = p->t + r * ((size_t)p->nsteps + 1);
        for (int i = 0; i < p->nsteps; i++) {
            const RtStepInfo *s = &prog->steps[i];
            fputs(sep, f);
            sep = ",\n";
            fputs("{\"name\": ", f);
            json_str(f, s->op);
            fputs(", \"cat\": \"step\", \"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": ", f);
            fprintf(f, "%.3f, \"dur\": %.3f, \"args\": {\"step\": %d, \"run\": %zu, \"value\": ",
                    (double)(row[i] - t0) / 1000.0, (double)(row[i + 1] - row[i]) / 1000.0, i, r);
            json_str(f, s->value);
            fputs(", \"where\": ", f);
            json_str(f, s->where);
            fputs(", \"shapes\": ", f);
            json_str(f, s->shapes);
            fputs(", \"impl\": ", f);
            json_str(f, impl_of(p, s));
            fputs(", \"flops\": ", f);
            json_num(f, s->flops);
            fputs(", \"bytes\": ", f);
            json_num(f, s->bytes);
            fputs("}}", f);
        }
    }
    fputs("\n]}\n", f);
}

RtStatus rt_context_profile_write_json(RtContext *c, const char *path) {
    if (!c) return TGCRT_ERR_ARG;
    if (!path || !*path) return rt_error_set(&c->err, TGCRT_ERR_ARG, "no trace file given");
    const RtProfile *p = c->prof;
    if (!p)
        return rt_error_set(&c->err, TGCRT_ERR_ARG,
                            "cannot write the trace '%s': the context was not profiled", path);
    RtAtomicFile af;
    rt_afile_init(&af);
    int e = rt_afile_begin(&af, path);
    FILE *f = e ? NULL : rt_afile_stream(&af);
    if (!e && !f) e = errno ? errno : ENOMEM;
    if (!e) {
        write_events(f, c, p);
        if (fflush(f) || ferror(f)) e = errno ? errno : EIO;
    }
    if (!e) e = rt_afile_commit(&af, 0666);
    if (e) {
        rt_afile_abort(&af);
        return rt_error_set(&c->err, TGCRT_ERR_IO, "cannot write '%s': %s", path, strerror(e));
    }
    return TGCRT_OK;
}

/* ---- switching it on and off ---- */

RtStatus rt_context_profile(RtContext *c, bool on) {
    if (!c) return TGCRT_ERR_ARG;
    const RtProgram *p = c->p;
    if (!c->ready)
        return c->err.status ? c->err.status
                             : rt_error_set(&c->err, TGCRT_ERR_ARG, "the context was not created");
    if (p->cuda)
        return rt_error_set(&c->err, TGCRT_ERR_ARG,
                            "profiling is not yet supported for CUDA programs (--target cuda)");
    if (p->prof_slot <= 0 || !p->steps)
        return rt_error_set(&c->err, TGCRT_ERR_ARG,
                            "program '%s' has no step table to profile (not built by tgc)",
                            p->name ? p->name : "?");
    if (!on) {
        c->bufs[p->prof_slot] = NULL;
        return TGCRT_OK;
    }
    RtProfile *np = rt_prof_new(p->nsteps);
    if (!np) return rt_error_set(&c->err, TGCRT_ERR_NOMEM, "out of memory for the profiler");
    /* "rt_conv: oneDNN jit:avx2" rather than the table's plain "rt_conv:
     * oneDNN": which kernel oneDNN picked is known only now. */
    if (p->nconvs > 0 && c->conv_state && p->conv_impl)
        for (int i = 0; i < p->nconvs; i++) {
            const char *impl = p->conv_impl(c->conv_state, (int64_t)i);
            char name[256];
            snprintf(name, sizeof name, "rt_conv: %s%s",
                     strncmp(impl, "direct", 6) ? "oneDNN " : "", impl);
            rt_prof_set_conv_impl(np, i, name);
        }
    rt_prof_free(c->prof);
    c->prof = np;
    c->bufs[p->prof_slot] = np;
    return TGCRT_OK;
}
