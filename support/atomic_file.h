/* Writing files whole or not at all (atomic_file.c), and the temporaries a
 * process removes when it is interrupted or killed (tmp_registry.c).
 *
 * Every file tgc or a compiled executable writes goes through RtAtomicFile:
 * a regular (or not yet existing) destination is written to a unique
 * temporary `.NAME.tgc-PID-XXXXXX` in its own directory and renamed over it
 * only when complete, so readers see the old file or the new one, never a
 * mix, and concurrent writers never share a temporary. A destination that
 * exists and is not a regular file (a device such as /dev/null, a FIFO) is
 * opened and written in place: renaming over it would replace the node.
 *
 * Shared by tgc (driver/) and libtgcrt: it lives in support/ because the
 * driver may include no runtime internals, and it needs nothing but libc,
 * so runtime/CMakeLists.txt compiles it into libtgcrt (the compiler gets
 * it from there; never installed, never included by generated code). The
 * registry of temporaries is the runtime's one piece of process-wide
 * state: lock-free, safe from any thread and from signal handlers, and it
 * holds nothing but paths to remove. */
#ifndef TGC_SUPPORT_ATOMIC_FILE_H
#define TGC_SUPPORT_ATOMIC_FILE_H
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

typedef struct RtAtomicFile {
    char *dest;   /* a copy of the destination path */
    char *tmp;    /* the temporary beside it; NULL when dest is written in place */
    int fd;       /* open for writing (the temporary or dest); -1 once closed */
    FILE *fp;     /* rt_afile_stream's stream over fd, when asked for */
    int slot;     /* the registry slot of tmp, or -1 */
    bool sigpipe; /* SIGPIPE was blocked for an in-place write (a FIFO) */
    sigset_t oldmask;
} RtAtomicFile;

/* Starts writing dest: 0, or the errno value that says why it cannot be
 * written (ENAMETOOLONG, ENOENT or ENOTDIR for its directory, EACCES,
 * EISDIR...). Also removes stale temporaries of the same destination left
 * by processes that no longer exist. */
int rt_afile_begin(RtAtomicFile *f, const char *dest);
/* The path another process (a linker) may write the content to: the
 * temporary; NULL when dest is written in place (then write the content
 * elsewhere and rt_afile_copy_from it). The descriptor is not needed for
 * that: the writer may replace the temporary's inode. */
const char *rt_afile_path(const RtAtomicFile *f);
/* A stdio stream over the file (owned by f). NULL with errno on failure. */
FILE *rt_afile_stream(RtAtomicFile *f);
/* Writes n bytes; 0 or an errno value. */
int rt_afile_write(RtAtomicFile *f, const void *p, size_t n);
/* Appends the whole content of the file src; 0 or an errno value. */
int rt_afile_copy_from(RtAtomicFile *f, const char *src);
/* The whole of begin(dest), copy_from(src), commit(mode): 0 or an errno
 * value (dest unchanged). */
int rt_afile_copy(const char *src, const char *dest, mode_t mode);
/* Finishes: closes, gives a new file mode & ~umask and renames it over
 * dest. 0, or an errno value after which nothing was changed at dest (the
 * temporary is removed). */
int rt_afile_commit(RtAtomicFile *f, mode_t mode);
/* Gives up: closes and removes the temporary (dest is untouched). Safe to
 * call after commit or on a zeroed struct from rt_afile_init. */
void rt_afile_abort(RtAtomicFile *f);
/* A state that rt_afile_abort accepts before rt_afile_begin ran. */
void rt_afile_init(RtAtomicFile *f);

/* ---- temporaries (tmp_registry.c) ---- */

/* Registers a temporary file (dir false) or directory (dir true, removed
 * with everything in it) to remove if the process is interrupted; the
 * slot to forget it by, or -1 when the table is full (it is then only not
 * cleaned up on a signal). */
int rt_tmp_add(const char *path, bool dir);
/* Forgets slot (the temporary was renamed away or removed). */
void rt_tmp_forget(int slot);
/* Removes what slot names (recursively for a directory) and forgets it. */
void rt_tmp_remove(int slot);
/* Removes path and everything under it (a few levels deep), without
 * following symbolic links. */
void rt_tmp_remove_tree(const char *path);
/* The process group of the child running now (0: none): interrupting this
 * process stops it, and its descendants, before the temporaries go. */
void rt_tmp_set_child(pid_t pgid);
/* Installs SIGINT, SIGTERM and SIGHUP handlers that stop the child
 * group, remove every registered temporary and then die of the same
 * signal. Idempotent. */
void rt_tmp_install_signals(void);
/* Starts a guardian process that does the same when this process dies
 * without running a handler (SIGKILL, a crash): it reads the registry's
 * changes from a socket and acts when the socket closes with temporaries
 * still registered. 0 or an errno value (then there is no guardian). */
int rt_tmp_start_guardian(void);
/* Creates a unique directory `DIR/PREFIX-PID-XXXXXX` (path receives it),
 * after removing such directories of processes that no longer exist;
 * registers it. The slot, or -1 with errno set. */
int rt_tmp_mkdtemp(const char *dir, const char *prefix, char *path, size_t cap);
/* True when pid names no live process (ESRCH). */
bool rt_tmp_pid_dead(long pid);
#endif
