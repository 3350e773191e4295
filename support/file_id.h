/* File identity (file_id.c): whether two paths name the same file, for the
 * rule that no command writes over one of its own inputs (cli.md). Used by
 * the compiled executables (exe_main.c) and by tgc itself
 * (driver/outputs.c). Shared by tgc and libtgcrt, like
 * support/atomic_file.h. */
#ifndef TGC_SUPPORT_FILE_ID_H
#define TGC_SUPPORT_FILE_ID_H
#include <stdbool.h>
#include <sys/types.h>

typedef struct RtFileId {
    bool known;  /* false: nothing to compare (absent, unreadable directory) */
    bool exists; /* the file itself; else dir + name */
    bool chardev;
    dev_t dev;
    ino_t ino;
    const char *name; /* the last component (into the path), for a file not there yet */
} RtFileId;

/* The file path names. A path that does not exist is known only when it
 * is to be written: then by its directory and last component (a trailing
 * slash or "." names a directory, which the write itself refuses). */
RtFileId rt_file_id(const char *path, bool written);
/* The same device and inode, however spelled (links included), or the
 * same directory and name for files not there yet; character devices
 * (/dev/null) are never the same: writing one never destroys it. */
bool rt_same_file(const RtFileId *a, const RtFileId *b);
#endif
