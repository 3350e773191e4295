/* The C side of the compile suite (see run_compile.py, which writes the
 * graphs cmlp and multi, their weights and inputs, runs `tgc compile` and
 * builds this file against the two objects and headers).
 *
 * Usage: compile_main DIR ITERS SETS
 *
 * For each graph G:
 *   - context A from DIR/G.safetensors (a path), context B from the same
 *     file read into memory (G_create_from_memory);
 *   - two threads start together (a barrier) and run at the same time:
 *     thread 0 on context A, thread 1 on context B, ITERS iterations each,
 *     iteration i on input set i % SETS of that thread
 *     (DIR/G.inputs.tT.bin: SETS sets, each the inputs in declaration order,
 *     G_input_bytes(i) bytes each), alternately through G_run (typed) and
 *     G_run_buffers; output buffers are refilled with a changing byte pattern
 *     before every run, and every repeated result must be bitwise identical
 *     to the first result for that set;
 *   - the first result of every set is written to DIR/G.out.tT.bin (the
 *     outputs in declaration order), for run_compile.py to compare with
 *     PyTorch.
 * Then the API's error paths and queries, single-threaded. Lines printed:
 *   CHECK ok|FAIL what          a check decided here
 *   QUERY G key value           a query result (judged by run_compile.py)
 *   CASE G name rc msg          a create/run error case (judged there too)
 * Exit status 0 when every CHECK passed, 1 otherwise. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* pthread barriers */
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmlp.h"
#include "multi.h"

/* ---- one table of functions per graph, so the driver is generic ---- */

typedef struct Model {
    const char *name;
    int (*create)(void **out, const char *path, int threads);
    int (*create_mem)(void **out, const void *st, size_t len, int threads);
    int (*run_typed)(void *ctx, const void *const *in, void *const *out);
    int (*run_buffers)(void *ctx, const void *const *in, void *const *out);
    const char *(*error)(const void *ctx);
    void (*destroy)(void *ctx);
    size_t (*arena_bytes)(void);
    int (*num_inputs)(void);
    int (*num_outputs)(void);
    size_t (*input_bytes)(int i);
    size_t (*output_bytes)(int i);
    const char *(*input_name)(int i);
    const char *(*output_name)(int i);
} Model;

#define WRAP(G)                                                                                    \
    static int G##_w_create(void **out, const char *path, int threads) {                           \
        G##_ctx *c = NULL;                                                                         \
        int s = G##_create(&c, path, threads);                                                     \
        *out = c;                                                                                  \
        return s;                                                                                  \
    }                                                                                              \
    static int G##_w_create_mem(void **out, const void *st, size_t len, int threads) {             \
        G##_ctx *c = NULL;                                                                         \
        int s = G##_create_from_memory(&c, st, len, threads);                                      \
        *out = c;                                                                                  \
        return s;                                                                                  \
    }                                                                                              \
    static int G##_w_run_buffers(void *ctx, const void *const *in, void *const *out) {             \
        return G##_run_buffers((G##_ctx *)ctx, in, out);                                           \
    }                                                                                              \
    static const char *G##_w_error(const void *ctx) {                                              \
        return G##_error((const G##_ctx *)ctx);                                                    \
    }                                                                                              \
    static void G##_w_destroy(void *ctx) {                                                         \
        G##_destroy((G##_ctx *)ctx);                                                               \
    }

WRAP(cmlp)
WRAP(multi)

/* The typed entry points: the pointer types are those the header must
 * declare for the graphs' dtypes (-Werror turns a mismatch into a build
 * failure). */
static int cmlp_w_run_typed(void *ctx, const void *const *in, void *const *out) {
    return cmlp_run((cmlp_ctx *)ctx, (const float *)in[0], (float *)out[0]);
}
static int multi_w_run_typed(void *ctx, const void *const *in, void *const *out) {
    return multi_run((multi_ctx *)ctx, (const float *)in[0], (const int64_t *)in[1],
                     (const uint8_t *)in[2], (float *)out[0], (int64_t *)out[1], (float *)out[2],
                     (int32_t *)out[3], (uint8_t *)out[4]);
}

#define MODEL(G)                                                                                   \
    {                                                                                              \
#G, G##_w_create, G##_w_create_mem, G##_w_run_typed, G##_w_run_buffers, G##_w_error,       \
            G##_w_destroy, G##_arena_bytes, G##_num_inputs, G##_num_outputs, G##_input_bytes,      \
            G##_output_bytes, G##_input_name, G##_output_name                                      \
    }

static const Model MODELS[] = {MODEL(cmlp), MODEL(multi)};
#define NMODELS ((int)(sizeof MODELS / sizeof MODELS[0]))
#define MAXT 8

static int g_fail, g_pass;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...) {
    va_list ap;
    pthread_mutex_lock(&g_lock);
    printf("CHECK %s ", ok ? "ok" : "FAIL");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    if (ok)
        g_pass++;
    else
        g_fail++;
    pthread_mutex_unlock(&g_lock);
}

/* Prints msg on one line (newlines and tabs escaped). */
static void print_case(const char *g, const char *name, int rc, const char *msg) {
    printf("CASE %s %s %d ", g, name, rc);
    for (const char *c = msg ? msg : "(null)"; *c; c++) {
        if (*c == '\n')
            fputs("\\n", stdout);
        else if (*c == '\t')
            fputs("\\t", stdout);
        else
            putchar(*c);
    }
    putchar('\n');
    fflush(stdout);
}

static void *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = n > 0 ? (size_t)n : 0;
    return b;
}

static int write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

/* ---- the concurrent runs ---- */

typedef struct Worker {
    const Model *m;
    void *ctx;
    int thread; /* 0 or 1 */
    int iters, sets;
    size_t in_set, out_set; /* bytes of one set of inputs / outputs */
    unsigned char *inputs;  /* sets * in_set */
    unsigned char *first;   /* sets * out_set: the first result per set */
    pthread_barrier_t *start;
    int run_errors, mismatches;
    char first_error[512];
} Worker;

static void *work(void *arg) {
    Worker *w = arg;
    const Model *m = w->m;
    int ni = m->num_inputs(), no = m->num_outputs();
    const void *in[MAXT];
    void *out[MAXT];
    unsigned char *obuf = malloc(w->out_set ? w->out_set : 1);
    pthread_barrier_wait(w->start);
    for (int it = 0; it < w->iters && obuf; it++) {
        int k = it % w->sets;
        const unsigned char *src = w->inputs + (size_t)k * w->in_set;
        size_t off = 0;
        for (int i = 0; i < ni; i++) {
            in[i] = src + off;
            off += m->input_bytes(i);
        }
        /* Garbage that changes between iterations: an element left
         * unwritten shows up as a mismatch or as a wrong value. */
        memset(obuf, (it & 1) ? 0xA5 : 0x3C, w->out_set);
        off = 0;
        for (int o = 0; o < no; o++) {
            out[o] = obuf + off;
            off += m->output_bytes(o);
        }
        int typed = (it / w->sets) % 2 == 0;
        int rc = typed ? m->run_typed(w->ctx, in, out) : m->run_buffers(w->ctx, in, out);
        if (rc) {
            if (!w->run_errors++)
                snprintf(w->first_error, sizeof w->first_error, "iteration %d: rc %d: %s", it, rc,
                         m->error(w->ctx));
            continue;
        }
        unsigned char *ref = w->first + (size_t)k * w->out_set;
        if (it < w->sets)
            memcpy(ref, obuf, w->out_set);
        else if (memcmp(ref, obuf, w->out_set) != 0) {
            if (!w->mismatches++)
                snprintf(w->first_error, sizeof w->first_error,
                         "iteration %d (set %d, %s): result differs from the first run", it, k,
                         typed ? "G_run" : "G_run_buffers");
        }
    }
    free(obuf);
    return NULL;
}

static size_t sum_bytes(size_t (*f)(int), int n) {
    size_t s = 0;
    for (int i = 0; i < n; i++)
        s += f(i);
    return s;
}

static void concurrent(const char *dir, int iters, int sets) {
    char path[4096];
    Worker w[NMODELS][2];
    void *mem[NMODELS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2 * NMODELS);
    memset(w, 0, sizeof w);
    int ready = 1;
    for (int mi = 0; mi < NMODELS; mi++) {
        const Model *m = &MODELS[mi];
        size_t in_set = sum_bytes(m->input_bytes, m->num_inputs());
        size_t out_set = sum_bytes(m->output_bytes, m->num_outputs());
        snprintf(path, sizeof path, "%s/%s.safetensors", dir, m->name);
        size_t len = 0;
        mem[mi] = read_file(path, &len);
        check(mem[mi] != NULL, "%s: read %s", m->name, path);
        for (int t = 0; t < 2; t++) {
            Worker *x = &w[mi][t];
            x->m = m, x->thread = t, x->iters = iters, x->sets = sets, x->start = &start;
            x->in_set = in_set, x->out_set = out_set;
            /* Context A: the path, 2 threads; context B: the image, 1 thread. */
            int rc = t == 0 ? m->create(&x->ctx, path, 2)
                            : m->create_mem(&x->ctx, mem[mi] ? mem[mi] : "", len, 1);
            check(rc == 0 && x->ctx, "%s: create context %c (%s): rc %d: %s", m->name,
                  t ? 'B' : 'A', t ? "from memory" : "from the path", rc,
                  x->ctx ? m->error(x->ctx) : "NULL context");
            check(x->ctx && !strcmp(m->error(x->ctx), ""),
                  "%s: error() is \"\" after a successful create (context %c)", m->name,
                  t ? 'B' : 'A');
            char ip[4200];
            snprintf(ip, sizeof ip, "%s/%s.inputs.t%d.bin", dir, m->name, t);
            size_t ilen = 0;
            x->inputs = read_file(ip, &ilen);
            check(x->inputs && ilen == in_set * (size_t)sets, "%s: %s holds %d sets of %zu bytes",
                  m->name, ip, sets, in_set);
            x->first = calloc((size_t)sets, out_set ? out_set : 1);
            ready &= rc == 0 && x->inputs && ilen == in_set * (size_t)sets && x->first;
        }
    }
    if (!ready) {
        check(0, "concurrent runs skipped: set-up failed");
    } else {
        pthread_t th[NMODELS][2];
        for (int mi = 0; mi < NMODELS; mi++)
            for (int t = 0; t < 2; t++)
                pthread_create(&th[mi][t], NULL, work, &w[mi][t]);
        for (int mi = 0; mi < NMODELS; mi++)
            for (int t = 0; t < 2; t++)
                pthread_join(th[mi][t], NULL);
        for (int mi = 0; mi < NMODELS; mi++)
            for (int t = 0; t < 2; t++) {
                Worker *x = &w[mi][t];
                check(x->run_errors == 0, "%s thread %d: %d runs, none failed%s%s", x->m->name, t,
                      iters, x->run_errors ? ": " : "", x->run_errors ? x->first_error : "");
                check(x->mismatches == 0,
                      "%s thread %d: repeated results bitwise identical (%d mismatching runs)%s%s",
                      x->m->name, t, x->mismatches, x->mismatches ? ": " : "",
                      x->mismatches ? x->first_error : "");
                check(!strcmp(x->m->error(x->ctx), ""), "%s thread %d: error() is \"\" after runs",
                      x->m->name, t);
                snprintf(path, sizeof path, "%s/%s.out.t%d.bin", dir, x->m->name, t);
                check(write_file(path, x->first, x->out_set * (size_t)sets), "%s: write %s",
                      x->m->name, path);
            }
    }
    for (int mi = 0; mi < NMODELS; mi++) {
        for (int t = 0; t < 2; t++) {
            MODELS[mi].destroy(w[mi][t].ctx);
            free(w[mi][t].inputs);
            free(w[mi][t].first);
        }
        free(mem[mi]); /* after destroy: the image must outlive context B */
    }
    pthread_barrier_destroy(&start);
}

/* ---- queries ---- */

static void queries(const Model *m) {
    int ni = m->num_inputs(), no = m->num_outputs();
    printf("QUERY %s arena_bytes %zu\n", m->name, m->arena_bytes());
    printf("QUERY %s num_inputs %d\nQUERY %s num_outputs %d\n", m->name, ni, m->name, no);
    for (int i = 0; i < ni; i++)
        printf("QUERY %s input %d %s %zu\n", m->name, i,
               m->input_name(i) ? m->input_name(i) : "(null)", m->input_bytes(i));
    for (int i = 0; i < no; i++)
        printf("QUERY %s output %d %s %zu\n", m->name, i,
               m->output_name(i) ? m->output_name(i) : "(null)", m->output_bytes(i));
    fflush(stdout);
    check(ni > 0 && ni <= MAXT && no > 0 && no <= MAXT, "%s: 1..%d inputs and outputs", m->name,
          MAXT);
    check(m->input_name(-1) == NULL && m->input_name(ni) == NULL && m->output_name(-1) == NULL &&
              m->output_name(no) == NULL,
          "%s: names out of range are NULL", m->name);
    check(m->input_bytes(-1) == 0 && m->input_bytes(ni) == 0 && m->output_bytes(-1) == 0 &&
              m->output_bytes(no) == 0,
          "%s: sizes out of range are 0", m->name);
}

/* ---- error paths ---- */

static void run_set0(const Model *m, void *ctx, const char *dir, const char *case_name,
                     const char *out_path) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.inputs.t0.bin", dir, m->name);
    size_t len = 0;
    unsigned char *inputs = read_file(path, &len);
    int ni = m->num_inputs(), no = m->num_outputs();
    size_t out_set = sum_bytes(m->output_bytes, no);
    unsigned char *obuf = calloc(1, out_set ? out_set : 1);
    const void *in[MAXT];
    void *out[MAXT];
    size_t off = 0;
    for (int i = 0; i < ni; i++) {
        in[i] = inputs ? inputs + off : NULL;
        off += m->input_bytes(i);
    }
    off = 0;
    for (int o = 0; o < no; o++) {
        out[o] = obuf + off;
        off += m->output_bytes(o);
    }
    int rc = inputs && obuf ? m->run_typed(ctx, in, out) : -1;
    print_case(m->name, case_name, rc, rc == -1 ? "no inputs" : m->error(ctx));
    if (out_path && rc == 0)
        check(write_file(out_path, obuf, out_set), "%s: write %s", m->name, out_path);
    free(inputs);
    free(obuf);
}

/* A create that is expected to fail: prints the case, checks the
 * context is usable for error() and that running it fails cleanly. */
static void failed_create(const Model *m, const char *case_name, int rc, void *ctx,
                          const char *dir) {
    print_case(m->name, case_name, rc, ctx ? m->error(ctx) : "(NULL context)");
    check(ctx != NULL, "%s %s: *out is set even though create failed", m->name, case_name);
    if (ctx && rc) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.inputs.t0.bin", dir, m->name);
        size_t len = 0, out_set = sum_bytes(m->output_bytes, m->num_outputs());
        unsigned char *inputs = read_file(path, &len);
        unsigned char *obuf = calloc(1, out_set ? out_set : 1);
        const void *in[MAXT];
        void *out[MAXT];
        size_t off = 0;
        for (int i = 0; i < m->num_inputs(); i++) {
            in[i] = inputs ? inputs + off : NULL;
            off += m->input_bytes(i);
        }
        off = 0;
        for (int o = 0; o < m->num_outputs(); o++) {
            out[o] = obuf + off;
            off += m->output_bytes(o);
        }
        int r2 = m->run_buffers(ctx, in, out);
        check(r2 != 0, "%s %s: running a context whose create failed returns nonzero (%d)", m->name,
              case_name, r2);
        free(inputs);
        free(obuf);
    }
    m->destroy(ctx);
}

static void error_paths(const Model *m, const char *dir) {
    char path[4096];
    void *ctx = NULL;
    int rc;

    /* A weights file that does not exist. */
    snprintf(path, sizeof path, "%s/no_such_dir/%s_absent.safetensors", dir, m->name);
    rc = m->create(&ctx, path, 1);
    failed_create(m, "missing_file", rc, ctx, dir);

    /* Files written by run_compile.py: a tensor missing, a wrong shape, a
     * wrong dtype; through the path and through memory. */
    static const char *const cases[] = {"missing", "shape", "dtype"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64];
        snprintf(path, sizeof path, "%s/%s.%s.safetensors", dir, m->name, cases[i]);
        ctx = NULL;
        rc = m->create(&ctx, path, 1);
        failed_create(m, cases[i], rc, ctx, dir);
        size_t len = 0;
        void *img = read_file(path, &len);
        check(img != NULL, "%s: read %s", m->name, path);
        if (img) {
            ctx = NULL;
            rc = m->create_mem(&ctx, img, len, 1);
            snprintf(name, sizeof name, "%s_mem", cases[i]);
            failed_create(m, name, rc, ctx, dir);
            free(img);
        }
    }

    /* A truncated image in memory, and a header length beyond the end. */
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, m->name);
    size_t len = 0;
    unsigned char *img = read_file(path, &len);
    check(img != NULL && len > 64, "%s: read %s", m->name, path);
    if (img && len > 64) {
        unsigned char *cut = malloc(len / 2);
        memcpy(cut, img, len / 2);
        ctx = NULL;
        rc = m->create_mem(&ctx, cut, len / 2, 1);
        failed_create(m, "truncated_mem", rc, ctx, dir);
        free(cut);
        unsigned char *bad = malloc(len);
        memcpy(bad, img, len);
        for (int b = 0; b < 8; b++) /* a header as long as the whole image */
            bad[b] = (unsigned char)(((uint64_t)len >> (8 * b)) & 0xFF);
        ctx = NULL;
        rc = m->create_mem(&ctx, bad, len, 1);
        failed_create(m, "bad_header_mem", rc, ctx, dir);
        free(bad);

        /* A NULL input buffer on a good context: an error naming the
         * input, after which the context still runs. */
        ctx = NULL;
        rc = m->create_mem(&ctx, img, len, 1);
        check(rc == 0, "%s: create from memory: rc %d: %s", m->name, rc, ctx ? m->error(ctx) : "");
        if (rc == 0) {
            size_t out_set = sum_bytes(m->output_bytes, m->num_outputs());
            unsigned char *obuf = calloc(1, out_set);
            size_t in_set = sum_bytes(m->input_bytes, m->num_inputs());
            unsigned char *ibuf = calloc(1, in_set);
            const void *in[MAXT];
            void *out[MAXT];
            size_t off = 0;
            for (int i = 0; i < m->num_inputs(); i++) {
                in[i] = ibuf + off;
                off += m->input_bytes(i);
            }
            off = 0;
            for (int o = 0; o < m->num_outputs(); o++) {
                out[o] = obuf + off;
                off += m->output_bytes(o);
            }
            int last = m->num_inputs() - 1;
            in[last] = NULL;
            rc = m->run_buffers(ctx, in, out);
            print_case(m->name, "null_input", rc, m->error(ctx));
            out[0] = NULL;
            in[last] = ibuf;
            rc = m->run_buffers(ctx, in, out);
            print_case(m->name, "null_output", rc, m->error(ctx));
            rc = m->run_buffers(ctx, NULL, NULL);
            print_case(m->name, "null_arrays", rc, m->error(ctx));
            free(obuf);
            free(ibuf);
            /* The same context still runs after the errors, and error()
             * is "" again. */
            snprintf(path, sizeof path, "%s/%s.recover.out.bin", dir, m->name);
            run_set0(m, ctx, dir, "recover_run", path);
            check(!strcmp(m->error(ctx), ""), "%s: error() is \"\" again after a good run (\"%s\")",
                  m->name, m->error(ctx));
        }
        m->destroy(ctx);
        free(img);
    }

    /* A param with an initialiser that the file lacks: created from the
     * initialiser (only multi has one: bias = zeros). */
    snprintf(path, sizeof path, "%s/%s.noinit.safetensors", dir, m->name);
    FILE *f = fopen(path, "rb");
    if (f) {
        fclose(f);
        ctx = NULL;
        rc = m->create(&ctx, path, 1);
        print_case(m->name, "noinit_create", rc, ctx ? m->error(ctx) : "(NULL context)");
        if (rc == 0) {
            char op[4200];
            snprintf(op, sizeof op, "%s/%s.noinit.out.bin", dir, m->name);
            run_set0(m, ctx, dir, "noinit_run", op);
        }
        m->destroy(ctx);
    }

    m->destroy(NULL);
    check(1, "%s: destroy(NULL) returns", m->name);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: compile_main DIR ITERS SETS\n");
        return 2;
    }
    const char *dir = argv[1];
    int iters = atoi(argv[2]), sets = atoi(argv[3]);
    if (iters < 1 || sets < 1 || sets > iters) {
        fprintf(stderr, "compile_main: need 1 <= SETS <= ITERS\n");
        return 2;
    }
    for (int mi = 0; mi < NMODELS; mi++)
        queries(&MODELS[mi]);
    concurrent(dir, iters, sets);
    for (int mi = 0; mi < NMODELS; mi++)
        error_paths(&MODELS[mi], dir);
    printf("compile_main: %d checks passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
