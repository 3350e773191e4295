/* User-facing diagnostics in the style of a C compiler:
 *   file:line:col: error: message
 *     source line
 *     ^~~~
 * Every token and IR node carries a SrcLoc so late passes report precisely. */
#ifndef TGC_DIAG_H
#define TGC_DIAG_H
#include <stdbool.h>
#include <stdio.h>

typedef struct SrcFile {
    const char *path;
    const char *text;
    int len;
} SrcFile;

typedef struct SrcLoc {
    const SrcFile *file;
    int line, col; /* 1-based; 0 when unknown */
    int off, len;  /* byte offset and length of the culprit */
} SrcLoc;

/* A call of a def being lowered: errors inside its body end with a note
 * naming each call site they were reached from, innermost first. */
typedef struct DiagFrame {
    const struct DiagFrame *up;
    SrcLoc loc;       /* the call */
    const char *what; /* "Block" */
} DiagFrame;

typedef struct Diag {
    FILE *out; /* NULL: count but print nothing (fuzzing) */
    int errors, warnings;
    int max_errors;
    const DiagFrame *frame; /* innermost def call being lowered, or NULL */
} Diag;

void diag_init(Diag *d, FILE *out);
void diag_error(Diag *d, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_warning(Diag *d, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_note(Diag *d, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An error not tied to a source position (command line, files). */
void diag_plain_error(Diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool diag_too_many(const Diag *d);
/* Joins two locations into one spanning both (same file). */
SrcLoc loc_span(SrcLoc a, SrcLoc b);

/* Internal invariant: a compiler bug, never the user's fault. Exit 3. */
#define TGC_ASSERT(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) tgc_internal_error(__FILE__, __LINE__, #cond);                                \
    } while (0)
_Noreturn void tgc_internal_error(const char *file, int line, const char *what);
#endif
