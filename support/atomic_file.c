/* Writing a file whole or not at all (see atomic_file.h): a unique temporary
 * beside the destination, renamed over it when complete; a destination
 * that is a device or a FIFO is opened and written in place instead. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "support/atomic_file.h"

void rt_afile_init(RtAtomicFile *f) {
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->slot = -1;
}

/* The directory part of dest ("" for none, with its trailing slash) and
 * the temporary's prefix ".BASE.tgc-": the base is cut so the whole name
 * stays within NAME_MAX (a long but valid destination must still work). */
static void split(const char *dest, size_t *dlen, const char **base, size_t *blen) {
    const char *slash = strrchr(dest, '/');
    *dlen = slash ? (size_t)(slash - dest + 1) : 0;
    *base = dest + *dlen;
    *blen = strlen(*base);
    if (*blen > NAME_MAX - 40) *blen = NAME_MAX - 40;
}

/* Removes `.BASE.tgc-PID-XXXXXX` files of dest whose process is gone
 * (a build killed together with its guardian). */
static void remove_stale(const char *dest) {
    size_t dlen, blen;
    const char *base;
    split(dest, &dlen, &base, &blen);
    char *dir = dlen ? strndup(dest, dlen) : strdup(".");
    DIR *d = dir ? opendir(dir) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        const char *n = e->d_name;
        if (n[0] != '.' || strncmp(n + 1, base, blen) || strncmp(n + 1 + blen, ".tgc-", 5))
            continue;
        const char *c = n + 1 + blen + 5;
        long pid = 0;
        int nd = 0;
        while (*c >= '0' && *c <= '9' && nd < 10)
            pid = pid * 10 + (*c++ - '0'), nd++;
        if (!nd || *c != '-' || strlen(c + 1) != 6 || pid == (long)getpid() ||
            !rt_tmp_pid_dead(pid))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            st.st_uid == geteuid())
            unlinkat(dirfd(d), n, 0);
    }
    if (d) closedir(d);
    free(dir);
}

int rt_afile_begin(RtAtomicFile *f, const char *dest) {
    rt_afile_init(f);
    struct stat st;
    if (stat(dest, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return EISDIR;
        if (!S_ISREG(st.st_mode)) {
            /* A device or a FIFO: written through, never replaced. A FIFO
             * whose reader goes away must be an error, not SIGPIPE. */
            sigset_t pipe;
            sigemptyset(&pipe);
            sigaddset(&pipe, SIGPIPE);
            if (pthread_sigmask(SIG_BLOCK, &pipe, &f->oldmask) == 0)
                f->sigpipe = !sigismember(&f->oldmask, SIGPIPE);
            f->fd = open(dest, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_TRUNC);
            int e = errno;
            if (f->fd < 0 && e == EINVAL) /* O_TRUNC on some devices */
                f->fd = open(dest, O_WRONLY | O_NOCTTY | O_CLOEXEC), e = errno;
            if (f->fd < 0) {
                rt_afile_abort(f);
                return e;
            }
            f->dest = strdup(dest);
            return f->dest ? 0 : ENOMEM;
        }
    } else if (errno != ENOENT) {
        return errno; /* ENAMETOOLONG, ENOTDIR, EACCES, ELOOP... */
    }
    size_t dlen, blen;
    const char *base;
    split(dest, &dlen, &base, &blen);
    if (!*base) return EISDIR; /* "dir/" */
    remove_stale(dest);
    size_t cap = dlen + blen + 64;
    f->tmp = malloc(cap);
    f->dest = strdup(dest);
    if (!f->tmp || !f->dest) {
        rt_afile_abort(f);
        return ENOMEM;
    }
    snprintf(f->tmp, cap, "%.*s.%.*s.tgc-%ld-XXXXXX", (int)dlen, dest, (int)blen, base,
             (long)getpid());
    f->fd = mkostemp(f->tmp, O_CLOEXEC);
    if (f->fd < 0) {
        int e = errno;
        free(f->tmp);
        f->tmp = NULL;
        rt_afile_abort(f);
        return e;
    }
    f->slot = rt_tmp_add(f->tmp, false);
    return 0;
}

const char *rt_afile_path(const RtAtomicFile *f) {
    return f->tmp;
}

FILE *rt_afile_stream(RtAtomicFile *f) {
    if (!f->fp && f->fd >= 0) {
        f->fp = fdopen(f->fd, "w");
        if (!f->fp) return NULL;
    }
    return f->fp;
}

int rt_afile_write(RtAtomicFile *f, const void *p, size_t n) {
    const char *c = p;
    if (f->fp) {
        if (fwrite(p, 1, n, f->fp) != n) return errno ? errno : EIO;
        return 0;
    }
    while (n) {
        ssize_t w = write(f->fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 ? errno : EIO;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

int rt_afile_copy_from(RtAtomicFile *f, const char *src) {
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) return errno;
    char buf[1 << 16];
    int e = 0;
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) e = errno;
        if (r <= 0) break;
        if ((e = rt_afile_write(f, buf, (size_t)r))) break;
    }
    close(in);
    return e;
}

/* Closes the descriptor (or the stream over it): its error, or 0. */
static int close_file(RtAtomicFile *f) {
    int e = 0;
    if (f->fp) {
        if (fflush(f->fp) != 0 || ferror(f->fp)) e = errno ? errno : EIO;
        if (fclose(f->fp) != 0 && !e) e = errno ? errno : EIO;
    } else if (f->fd >= 0 && close(f->fd) != 0) {
        e = errno;
    }
    f->fp = NULL;
    f->fd = -1;
    return e == EINTR ? 0 : e;
}

/* Undoes begin's SIGPIPE block, discarding one the writes raised. */
static void restore_sigpipe(RtAtomicFile *f) {
    if (!f->sigpipe) return;
    sigset_t pipe, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    struct timespec zero = {0, 0};
    while (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) &&
           sigtimedwait(&pipe, NULL, &zero) == SIGPIPE) {
    }
    pthread_sigmask(SIG_SETMASK, &f->oldmask, NULL);
    f->sigpipe = false;
}

static void release(RtAtomicFile *f) {
    free(f->tmp);
    free(f->dest);
    f->tmp = f->dest = NULL;
}

int rt_afile_commit(RtAtomicFile *f, mode_t mode) {
    int e = close_file(f);
    if (!f->tmp) { /* in place */
        restore_sigpipe(f);
        release(f);
        return e;
    }
    if (!e) {
        /* mkstemp makes files for their owner only: give the one a plain
         * fopen (or the linker) would have made. umask has no reader that
         * leaves it alone; nothing else here creates files meanwhile. */
        mode_t mask = umask(0);
        umask(mask);
        if (chmod(f->tmp, mode & ~mask) != 0) e = errno;
    }
    if (!e && rename(f->tmp, f->dest) != 0) e = errno;
    if (e) unlink(f->tmp);
    rt_tmp_forget(f->slot);
    f->slot = -1;
    release(f);
    return e;
}

void rt_afile_abort(RtAtomicFile *f) {
    close_file(f);
    restore_sigpipe(f);
    if (f->tmp) unlink(f->tmp);
    rt_tmp_forget(f->slot);
    f->slot = -1;
    release(f);
}

int rt_afile_copy(const char *src, const char *dest, mode_t mode) {
    RtAtomicFile f;
    rt_afile_init(&f);
    int e = rt_afile_begin(&f, dest);
    if (!e) e = rt_afile_copy_from(&f, src);
    if (!e) e = rt_afile_commit(&f, mode);
    rt_afile_abort(&f);
    return e;
}
