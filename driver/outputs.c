/* The same-file check of outputs.h. Identity is (device, inode) from
 * stat(), which follows symbolic links, so a link to the input is the
 * input. An output that does not exist yet is identified by its
 * directory's (device, inode) and its last name, so `-o x.o --header x.o`
 * and `-o x.o --header ./x.o` are caught before either exists
 * (runtime/file_id.c, shared with the compiled executables). */
#define _XOPEN_SOURCE 700 /* strdup */
#include "driver/outputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/file_id.h"

void ioset_init(IoSet *s, const char *cmd) {
    memset(s, 0, sizeof *s);
    s->cmd = cmd;
}

static void add(IoSet *s, const char *what, const char *path, bool written) {
    if (!path || s->oom) return;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 8;
        IoEntry *e = realloc(s->e, sizeof *e * (size_t)cap);
        if (!e) {
            s->oom = true;
            return;
        }
        s->e = e;
        s->cap = cap;
    }
    IoEntry *e = &s->e[s->n];
    e->what = strdup(what);
    e->path = strdup(path);
    e->written = written;
    s->n++;
    if (!e->what || !e->path) s->oom = true;
}

void ioset_read(IoSet *s, const char *what, const char *path) {
    add(s, what, path, false);
}

void ioset_write(IoSet *s, const char *what, const char *path) {
    add(s, what, path, true);
}

void ioset_read_all(IoSet *s, const char *what, const char *const *paths, int n) {
    for (int i = 0; i < n; i++)
        add(s, what, paths[i], false);
}

bool ioset_check(const IoSet *s) {
    if (s->oom) {
        fprintf(stderr, "tgc %s: error: out of memory\n", s->cmd);
        return false;
    }
    RtFileId *id = calloc((size_t)s->n + 1, sizeof *id);
    if (!id) {
        fprintf(stderr, "tgc %s: error: out of memory\n", s->cmd);
        return false;
    }
    for (int i = 0; i < s->n; i++)
        id[i] = rt_file_id(s->e[i].path, s->e[i].written);
    bool ok = true;
    /* Each output against every input first (the loss that matters),
     * then against the outputs named before it. */
    for (int i = 0; i < s->n && ok; i++) {
        const IoEntry *w = &s->e[i];
        if (!w->written) continue;
        for (int j = 0; j < s->n && ok; j++) {
            const IoEntry *r = &s->e[j];
            if (r->written || !rt_same_file(&id[i], &id[j])) continue;
            fprintf(stderr, "tgc %s: error: output '%s' (%s) is the same file as %s '%s'\n", s->cmd,
                    w->path, w->what, r->what, r->path);
            ok = false;
        }
        for (int j = 0; j < i && ok; j++) {
            const IoEntry *o = &s->e[j];
            if (!o->written || !rt_same_file(&id[i], &id[j])) continue;
            fprintf(stderr,
                    "tgc %s: error: output '%s' (%s) is the same file as output '%s' (%s)\n",
                    s->cmd, w->path, w->what, o->path, o->what);
            ok = false;
        }
    }
    free(id);
    return ok;
}

void ioset_free(IoSet *s) {
    for (int i = 0; i < s->n; i++) {
        free(s->e[i].what);
        free(s->e[i].path);
    }
    free(s->e);
    memset(s, 0, sizeof *s);
}
