/* A tiny assertion framework for the C unit tests. Every check prints
 * file:line, the expression, and the expected and found values when it
 * fails; main() returns unit_report(), non-zero when any check failed.
 * unit_isolated() runs a group of checks in a child process so that a
 * compiler crash (an internal-error exit or a signal) fails that group
 * only, and is reported, instead of ending the whole test. */
#ifndef TGC_UNIT_H
#define TGC_UNIT_H
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int unit_checks, unit_failures;
static const char *unit_context; /* printed with each failure when set */

static inline bool unit_fail_header(const char *file, int line) {
    unit_failures++;
    fprintf(stdout, "%s:%d: FAIL", file, line);
    if (unit_context) fprintf(stdout, " [%s]", unit_context);
    fputs(": ", stdout);
    return false;
}

static inline bool unit_check(bool ok, const char *file, int line, const char *expr) {
    unit_checks++;
    if (ok) return true;
    unit_fail_header(file, line);
    fprintf(stdout, "%s is false\n", expr);
    return false;
}

static inline bool unit_check_int(int64_t expected, int64_t found, const char *file, int line,
                                  const char *expr) {
    unit_checks++;
    if (expected == found) return true;
    unit_fail_header(file, line);
    fprintf(stdout, "%s: expected %" PRId64 ", found %" PRId64 "\n", expr, expected, found);
    return false;
}

static inline bool unit_check_str(const char *expected, const char *found, const char *file,
                                  int line, const char *expr) {
    unit_checks++;
    if (expected && found && !strcmp(expected, found)) return true;
    if (!expected && !found) return true;
    unit_fail_header(file, line);
    fprintf(stdout, "%s: expected \"%s\", found \"%s\"\n", expr, expected ? expected : "(null)",
            found ? found : "(null)");
    return false;
}

static inline bool unit_check_dbl(double expected, double found, const char *file, int line,
                                  const char *expr) {
    unit_checks++;
    bool ok = expected == found || (isnan(expected) && isnan(found)) ||
              fabs(expected - found) <= 1e-12 * fabs(expected);
    if (ok) return true;
    unit_fail_header(file, line);
    fprintf(stdout, "%s: expected %.17g, found %.17g\n", expr, expected, found);
    return false;
}

/* Compares int64 arrays of length n, printing both as lists on failure. */
static inline bool unit_check_ints(const int64_t *expected, int n_expected, const int64_t *found,
                                   int n_found, const char *file, int line, const char *expr) {
    unit_checks++;
    bool ok = n_expected == n_found;
    for (int i = 0; ok && i < n_expected; i++)
        ok = expected[i] == found[i];
    if (ok) return true;
    unit_fail_header(file, line);
    fprintf(stdout, "%s: expected [", expr);
    for (int i = 0; i < n_expected; i++)
        fprintf(stdout, "%s%" PRId64, i ? ", " : "", expected[i]);
    fputs("], found [", stdout);
    for (int i = 0; i < n_found; i++)
        fprintf(stdout, "%s%" PRId64, i ? ", " : "", found[i]);
    fputs("]\n", stdout);
    return false;
}

#define CHECK(cond) unit_check((cond), __FILE__, __LINE__, #cond)
#define CHECK_INT(expected, found)                                                                 \
    unit_check_int((int64_t)(expected), (int64_t)(found), __FILE__, __LINE__, #found)
#define CHECK_STR(expected, found) unit_check_str((expected), (found), __FILE__, __LINE__, #found)
#define CHECK_DBL(expected, found) unit_check_dbl((expected), (found), __FILE__, __LINE__, #found)
/* CHECK_INTS(found, found_n, e0, e1, ...): an int64 array against a literal list. */
#define CHECK_INTS(found, found_n, ...)                                                            \
    unit_check_ints((const int64_t[]){__VA_ARGS__},                                                \
                    (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (found),      \
                    (found_n), __FILE__, __LINE__, #found)
/* CHECK_INTS0: against the empty list. */
#define CHECK_INTS0(found, found_n)                                                                \
    unit_check_ints(NULL, 0, (found), (found_n), __FILE__, __LINE__, #found)

/* Runs fn(arg) in a child process. The child's check counts come back
 * through a pipe; a child that dies (signal, exit without reporting,
 * tgc_internal_error's exit 3) counts as one failure, reported with name. */
static inline void unit_isolated(const char *name, void (*fn)(void *), void *arg) {
    int fds[2];
    fflush(stdout);
    fflush(stderr);
    if (pipe(fds) != 0) {
        fn(arg); /* no pipe: run in-process */
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        fn(arg);
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        unit_checks = unit_failures = 0;
        fn(arg);
        fflush(stdout);
        int counts[2] = {unit_checks, unit_failures};
        ssize_t w = write(fds[1], counts, sizeof counts);
        (void)w;
        close(fds[1]);
        _exit(0);
    }
    close(fds[1]);
    int counts[2] = {0, 0};
    ssize_t got = 0;
    while (got < (ssize_t)sizeof counts) {
        ssize_t r = read(fds[0], (char *)counts + got, sizeof counts - (size_t)got);
        if (r <= 0) break;
        got += r;
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got == (ssize_t)sizeof counts) {
        unit_checks += counts[0];
        unit_failures += counts[1];
        return;
    }
    unit_checks++;
    unit_failures++;
    if (WIFSIGNALED(status))
        fprintf(stdout, "FAIL [%s]: the compiler crashed with signal %d\n", name, WTERMSIG(status));
    else
        fprintf(stdout,
                "FAIL [%s]: the compiler exited with status %d (3: internal error) before the "
                "checks ended\n",
                name, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* ---- compiling .tg sources through the front end ---------------------- */
#ifdef UNIT_COMPILE
#include "frontend/frontend.h"
#include "passes/pipeline.h"

typedef struct Compiled {
    Arena arena;
    SrcFile file;
    Diag diag;
    char *msgs; /* the diagnostics as printed */
    size_t msgs_len;
    FILE *msgs_out;
    Graph *g; /* NULL when the source has errors */
} Compiled;

/* Runs tgc_frontend() on src (copied) under pol (NULL: declared dtypes);
 * diagnostics go to c->msgs. */
static inline Graph *compile_src_policy(Compiled *c, const char *src, const PrecisionPolicy *pol) {
    memset(c, 0, sizeof *c);
    char *text = arena_strdup(&c->arena, src);
    c->file = (SrcFile){.path = "u.tg", .text = text, .len = (int)strlen(text)};
    c->msgs_out = open_memstream(&c->msgs, &c->msgs_len);
    diag_init(&c->diag, c->msgs_out);
    c->g = tgc_frontend(&c->arena, &c->diag, &c->file, NULL, 0, pol);
    fflush(c->msgs_out);
    return c->g;
}

static inline Graph *compile_src(Compiled *c, const char *src) {
    return compile_src_policy(c, src, NULL);
}

static inline void compiled_free(Compiled *c) {
    fclose(c->msgs_out);
    free(c->msgs);
    arena_free(&c->arena);
}

/* The value bound to name, or NULL. */
static inline Value *find_value(Graph *g, const char *name) {
    if (!g) return NULL;
    for (int i = 0; i < g->nvalues; i++)
        if (g->values[i]->name && !strcmp(g->values[i]->name, name)) return g->values[i];
    return NULL;
}
#endif

static inline int unit_report(const char *test) {
    if (unit_failures)
        fprintf(stdout, "%s: %d of %d checks FAILED\n", test, unit_failures, unit_checks);
    else
        fprintf(stdout, "%s: all %d checks passed\n", test, unit_checks);
    return unit_failures ? 1 : 0;
}
#endif
