/* Opening a file the caller will read whole: inputs, weights, the graph.
 * A plain open(O_RDONLY) of a FIFO blocks until some process opens it for
 * writing, so `--input x=pipe.npy` would hang forever; and a directory or a
 * device is no file of data either. The file is therefore opened without
 * blocking, checked with fstat on the descriptor itself (no window between
 * a stat and the open in which the path could change), and refused unless
 * it is a regular file. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tgcrt.h"

static const char *kind(mode_t m) {
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISDIR(m)) return "a directory";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return NULL;
}

static int refuse(const char *path, mode_t m, RtError *err) {
    const char *k = kind(m);
    if (k)
        rt_error_set(err, TGCRT_ERR_IO, "%s: is %s, not a regular file", path, k);
    else
        rt_error_set(err, TGCRT_ERR_IO, "%s: not a regular file", path);
    return -1;
}

int rt_open_regular(const char *path, uint64_t *size, RtError *err) {
    /* O_NOCTTY: a terminal named by mistake must not become ours. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        struct stat st;
        /* open() of a socket fails (ENXIO): say what it is rather than
         * "No such device or address". */
        if (e == ENXIO && !stat(path, &st) && !S_ISREG(st.st_mode))
            return refuse(path, st.st_mode, err);
        rt_error_set(err, TGCRT_ERR_IO, "%s: cannot open: %s", path, strerror(e));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st)) {
        rt_error_set(err, TGCRT_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return refuse(path, st.st_mode, err);
    }
    /* Reads of a regular file never block anyway; clear the flag so the
     * descriptor behaves like one from a plain open(). */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        rt_error_set(err, TGCRT_ERR_IO, "%s: cannot set file flags: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (size) *size = (uint64_t)st.st_size;
    return fd;
}
