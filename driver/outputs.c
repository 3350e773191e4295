/* The same-file check of outputs.h. Identity is (device, inode) from
 * stat(), which follows symbolic links, so a link to the input is the
 * input. An output that does not exist yet is identified by its
 * directory's (device, inode) and its last name, so `-o x.o --header x.o`
 * and `-o x.o --header ./x.o` are caught before either exists. */
#define _XOPEN_SOURCE 700
#include "driver/outputs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct Ident {
    bool known;  /* false: nothing to compare (absent input, unreadable directory) */
    bool exists; /* the file itself; else dir + name */
    bool chardev;
    dev_t dev;
    ino_t ino;
    const char *name; /* the last component, for a file not there yet */
    size_t name_len;
} Ident;

static Ident identify(const char *path, bool output) {
    Ident id = {0};
    struct stat st;
    if (!path) return id;
    if (stat(path, &st) == 0) {
        id.known = id.exists = true;
        id.chardev = S_ISCHR(st.st_mode);
        id.dev = st.st_dev;
        id.ino = st.st_ino;
        return id;
    }
    if (!output) return id;
    /* Not there yet: its directory and name. A trailing slash or "."
     * names a directory, which the write itself will refuse. */
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    char *dir = slash ? strndup(path, (size_t)(slash - path) + 1) : strdup(".");
    if (dir && *name && stat(dir, &st) == 0) {
        id.known = true;
        id.dev = st.st_dev;
        id.ino = st.st_ino;
        id.name = name;
        id.name_len = strlen(name);
    }
    free(dir);
    return id;
}

static bool same(const Ident *a, const Ident *b) {
    if (!a->known || !b->known || a->exists != b->exists || a->dev != b->dev || a->ino != b->ino)
        return false;
    if (a->exists) return !a->chardev;
    return a->name_len == b->name_len && !memcmp(a->name, b->name, a->name_len);
}

bool outputs_distinct(const char *cmd, const IoPath *inputs, int nin, const IoPath *outputs,
                      int nout) {
    Ident in[8], out[8];
    if (nin > 8 || nout > 8) return true; /* callers name a handful */
    for (int i = 0; i < nin; i++)
        in[i] = identify(inputs[i].path, false);
    for (int i = 0; i < nout; i++)
        out[i] = identify(outputs[i].path, true);
    for (int i = 0; i < nout; i++) {
        for (int j = 0; j < nin; j++)
            if (same(&out[i], &in[j])) {
                fprintf(stderr, "tgc %s: error: output '%s' (%s) is the same file as %s '%s'\n",
                        cmd, outputs[i].path, outputs[i].what, inputs[j].what, inputs[j].path);
                return false;
            }
        for (int j = 0; j < i; j++)
            if (same(&out[i], &out[j])) {
                fprintf(stderr,
                        "tgc %s: error: output '%s' (%s) is the same file as output '%s' (%s)\n",
                        cmd, outputs[i].path, outputs[i].what, outputs[j].path, outputs[j].what);
                return false;
            }
    }
    return true;
}
