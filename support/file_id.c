/* File identity (see file_id.h). */
#define _XOPEN_SOURCE 700 /* strndup */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "support/file_id.h"

RtFileId rt_file_id(const char *path, bool written) {
    RtFileId id = {0};
    struct stat st;
    if (!path) return id;
    if (stat(path, &st) == 0) {
        id.known = id.exists = true;
        id.chardev = S_ISCHR(st.st_mode);
        id.dev = st.st_dev;
        id.ino = st.st_ino;
        return id;
    }
    if (!written) return id;
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    char *dir = slash ? strndup(path, (size_t)(slash - path) + 1) : strdup(".");
    if (dir && *name && stat(dir, &st) == 0) {
        id.known = true;
        id.dev = st.st_dev;
        id.ino = st.st_ino;
        id.name = name;
    }
    free(dir);
    return id;
}

bool rt_same_file(const RtFileId *a, const RtFileId *b) {
    if (!a->known || !b->known || a->exists != b->exists || a->dev != b->dev || a->ino != b->ino)
        return false;
    return a->exists ? !a->chardev : !strcmp(a->name, b->name);
}
