#include "codegen/write_file.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

bool cg_write_file(const char *path, const void *data, size_t n, char *err, size_t nerr) {
    FILE *f = fopen(path, "wb");
    int e = f ? 0 : errno;
    if (f) {
        if (n && fwrite(data, 1, n, f) != n) e = errno ? errno : EIO;
        if (fclose(f) != 0 && !e) e = errno ? errno : EIO;
    }
    if (e && nerr) snprintf(err, nerr, "error: cannot write '%s': %s", path, strerror(e));
    return !e;
}
