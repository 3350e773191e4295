#include "support/diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void diag_init(Diag *d, FILE *out) {
    memset(d, 0, sizeof *d);
    d->out = out;
    d->max_errors = 20;
}

bool diag_too_many(const Diag *d) {
    return d->errors >= d->max_errors;
}

SrcLoc loc_span(SrcLoc a, SrcLoc b) {
    if (!a.file || !a.line) return b;
    if (!b.file || !b.line || a.file != b.file) return a;
    SrcLoc r = a.off <= b.off ? a : b;
    int end_a = a.off + a.len, end_b = b.off + b.len;
    int end = end_a > end_b ? end_a : end_b;
    r.len = end - r.off;
    return r;
}

/* Prints the line holding loc and a caret with tildes under the culprit. */
static void show_source(FILE *out, SrcLoc loc) {
    const SrcFile *f = loc.file;
    if (!f || !f->text || loc.line <= 0 || loc.off < 0 || loc.off > f->len) return;
    int start = loc.off;
    while (start > 0 && f->text[start - 1] != '\n')
        start--;
    int end = loc.off;
    while (end < f->len && f->text[end] != '\n')
        end++;
    int n = loc.len;
    if (loc.off + n > end) n = end - loc.off; /* a multi-line culprit: underline its first line */
    /* Long lines are shown as a window around the culprit. */
    enum { CONTEXT = 60, MAX_UNDERLINE = 80 };
    const char *lead = "", *trail = "";
    if (loc.off - start > CONTEXT) {
        start = loc.off - CONTEXT;
        lead = "...";
    }
    if (n > MAX_UNDERLINE) n = MAX_UNDERLINE;
    if (end - (loc.off + n) > CONTEXT) {
        end = loc.off + n + CONTEXT;
        trail = "...";
    }
    fprintf(out, "  %s%.*s%s\n  %*s", lead, end - start, f->text + start, trail, (int)strlen(lead),
            "");
    for (int i = start; i < loc.off; i++)
        fputc(f->text[i] == '\t' ? '\t' : ' ', out);
    fputc('^', out);
    for (int i = 1; i < n; i++)
        fputc('~', out);
    fputc('\n', out);
}

static void vreport(Diag *d, SrcLoc loc, const char *kind, const char *fmt, va_list ap) {
    if (!d->out) return;
    if (loc.file && loc.line > 0)
        fprintf(d->out, "%s:%d:%d: %s: ", loc.file->path, loc.line, loc.col, kind);
    else if (loc.file)
        fprintf(d->out, "%s: %s: ", loc.file->path, kind);
    else
        fprintf(d->out, "tgc: %s: ", kind);
    vfprintf(d->out, fmt, ap);
    fputc('\n', d->out);
    show_source(d->out, loc);
}

static void report_frames(Diag *d) {
    for (const DiagFrame *f = d->frame; f; f = f->up) {
        if (!d->out) return;
        fprintf(d->out, "%s:%d:%d: note: in the call of %s here\n",
                f->loc.file ? f->loc.file->path : "?", f->loc.line, f->loc.col, f->what);
        show_source(d->out, f->loc);
    }
}

void diag_error(Diag *d, SrcLoc loc, const char *fmt, ...) {
    d->errors++;
    if (d->errors > d->max_errors) return;
    va_list ap;
    va_start(ap, fmt);
    vreport(d, loc, "error", fmt, ap);
    va_end(ap);
    report_frames(d);
    if (d->errors == d->max_errors && d->out) fprintf(d->out, "tgc: too many errors, stopping\n");
}

void diag_warning(Diag *d, SrcLoc loc, const char *fmt, ...) {
    d->warnings++;
    va_list ap;
    va_start(ap, fmt);
    vreport(d, loc, "warning", fmt, ap);
    va_end(ap);
    report_frames(d);
}

void diag_note(Diag *d, SrcLoc loc, const char *fmt, ...) {
    if (d->errors > d->max_errors) return;
    va_list ap;
    va_start(ap, fmt);
    vreport(d, loc, "note", fmt, ap);
    va_end(ap);
}

void diag_plain_error(Diag *d, const char *fmt, ...) {
    d->errors++;
    if (!d->out) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("tgc: error: ", d->out);
    vfprintf(d->out, fmt, ap);
    fputc('\n', d->out);
    va_end(ap);
}

_Noreturn void tgc_internal_error(const char *file, int line, const char *what) {
    fprintf(stderr, "tgc: internal error at %s:%d: %s\nThis is a bug in tgc; please report it.\n",
            file, line, what);
    exit(3);
}
