/* The temporaries a process removes when it is interrupted or killed (see
 * atomic_file.h).
 *
 * What is cleaned, and when:
 *  - SIGINT, SIGTERM, SIGHUP (rt_tmp_install_signals): the handler passes
 *    the signal to the running child's process group (compilers, linkers,
 *    the program of `tgc run`: each runs in a group of its own, so that its
 *    own children are reached too), waits up to 2 s for the group to end
 *    (the C compiler removes its own temporaries on SIGTERM/SIGINT), kills
 *    what is left, removes every registered temporary, then dies of the
 *    same signal.
 *  - SIGKILL or a crash (no handler runs): the guardian (a forked process
 *    started by rt_tmp_start_guardian) sees its socket close while
 *    temporaries are registered, stops the child group the same way and
 *    removes them. The direct child also gets SIGTERM from the kernel when
 *    its parent dies (PR_SET_PDEATHSIG, driver/toolchain.c).
 *  - The guardian killed as well (a whole process tree killed at once):
 *    the names carry the creating process id, and the next write of the
 *    same destination (rt_afile_begin), or the next temporary directory
 *    made in the same TMPDIR (rt_tmp_mkdtemp), removes those whose process
 *    no longer exists and whose owner is this user. A stale temporary is
 *    never reused: names are unique (mkstemp, mkdtemp).
 *  - Not cleaned: the C compiler's own temporaries when it was killed by
 *    SIGKILL itself, and files written outside these helpers.
 *
 * The registry is a fixed table of slots claimed with compare-and-swap:
 * the signal handler only reads it, and uses only async-signal-safe calls
 * (kill, waitpid, nanosleep, open, getdents64, unlinkat, rmdir). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/atomic_file.h"

enum { SLOTS = 64, FREE = 0, BUSY = 1, TFILE = 2, TDIR = 3 };
static char *slot_path[SLOTS];
static atomic_int slot_state[SLOTS];
static atomic_int child_pgid;
static int guard_fd = -1; /* the socket to the guardian, -1 when none */

/* ---- removing trees, async-signal-safe ---- */

struct dirent64_raw {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/* Empties the directory dfd; depth bounds the recursion (temporaries are
 * at most a few levels deep). Repeats until a pass finds nothing, as
 * entries removed while reading may shift the directory's offsets. */
static void empty_dir(int dfd, int depth) {
    char buf[2048] __attribute__((aligned(8)));
    for (int pass = 0; pass < 8; pass++) {
        bool any = false;
        if (lseek(dfd, 0, SEEK_SET) < 0) return;
        for (;;) {
            long n = syscall(SYS_getdents64, dfd, buf, sizeof buf);
            if (n <= 0) break;
            for (long off = 0; off < n;) {
                struct dirent64_raw *e = (struct dirent64_raw *)(buf + off);
                off += e->d_reclen;
                const char *nm = e->d_name;
                if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2]))) continue;
                any = true;
                if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN) {
                    int sub = depth < 6
                                  ? openat(dfd, nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                                  : -1;
                    if (sub >= 0) {
                        empty_dir(sub, depth + 1);
                        close(sub);
                        if (unlinkat(dfd, nm, AT_REMOVEDIR) == 0) continue;
                    }
                }
                unlinkat(dfd, nm, 0);
            }
        }
        if (!any) return;
    }
}

void rt_tmp_remove_tree(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        unlink(path); /* a file, or a symbolic link: removed, never followed */
        return;
    }
    empty_dir(fd, 0);
    close(fd);
    rmdir(path);
}

static void remove_entry(int kind, const char *path) {
    if (kind == TDIR)
        rt_tmp_remove_tree(path);
    else
        unlink(path);
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Whether group g has a process that is not a zombie. kill(-g, 0) alone
 * is not enough: where PID 1 does not reap orphans (some containers), a
 * dead compiler stays a zombie in the group for good. Reads /proc with
 * raw system calls only (async-signal-safe); without /proc, kill. */
static bool group_alive(pid_t g) {
    if (kill(-g, 0) != 0 && errno == ESRCH) return false;
    int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (proc < 0) return true;
    char buf[4096] __attribute__((aligned(8)));
    bool alive = false, any = false;
    long n;
    while (!alive && (n = syscall(SYS_getdents64, proc, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n && !alive;) {
            struct dirent64_raw *e = (struct dirent64_raw *)(buf + off);
            off += e->d_reclen;
            if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
            char path[64] = "", stat[512];
            size_t len = strlen(e->d_name);
            if (len > 20) continue;
            memcpy(path, e->d_name, len);
            memcpy(path + len, "/stat", 6);
            int fd = openat(proc, path, O_RDONLY | O_CLOEXEC);
            if (fd < 0) continue;
            ssize_t r = read(fd, stat, sizeof stat - 1);
            close(fd);
            if (r <= 0) continue;
            stat[r] = 0;
            any = true;
            /* "pid (comm) S ppid pgrp ...": comm may hold anything, so
             * parse from the last ')'. */
            char *c = strrchr(stat, ')');
            if (!c || c[1] != ' ' || !c[2]) continue;
            char state = c[2];
            c += 3;
            while (*c == ' ')
                c++;
            while (*c >= '0' && *c <= '9') /* ppid */
                c++;
            long pgrp = 0;
            while (*c == ' ')
                c++;
            while (*c >= '0' && *c <= '9')
                pgrp = pgrp * 10 + (*c++ - '0');
            if (pgrp == (long)g && state != 'Z' && state != 'X') alive = true;
        }
    }
    close(proc);
    return alive || !any;
}

/* Sends sig to group g, waits up to ms for it to end (reaping the leader
 * when it is this process's child), then kills what is left. */
static void stop_group(pid_t g, int sig, long ms) {
    kill(-g, sig);
    for (long t = 0;; t += 10) {
        waitpid(g, NULL, WNOHANG);
        if (!group_alive(g)) return;
        if (t >= ms) break;
        sleep_ms(10);
    }
    kill(-g, SIGKILL);
    for (int t = 0; t < 100; t++) {
        waitpid(g, NULL, WNOHANG);
        if (!group_alive(g)) return;
        sleep_ms(10);
    }
}

/* ---- the registry ---- */

static bool send_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        /* MSG_NOSIGNAL: a guardian that is gone must not kill this process
         * with SIGPIPE (hence a socket pair rather than a pipe). */
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        c += w;
        n -= (size_t)w;
    }
    return true;
}

static void guard_send(char op, int slot, const char *path) {
    if (guard_fd < 0) return;
    size_t len = path ? strlen(path) : 0;
    unsigned char hdr[9] = {(unsigned char)op};
    uint32_t s = (uint32_t)slot, l = (uint32_t)len;
    memcpy(hdr + 1, &s, 4);
    memcpy(hdr + 5, &l, 4);
    /* One writer; a failed send only means the guardian is gone. */
    if (!send_all(guard_fd, hdr, sizeof hdr) || (len && !send_all(guard_fd, path, len))) {
        close(guard_fd);
        guard_fd = -1;
    }
}

int rt_tmp_add(const char *path, bool dir) {
    for (int i = 0; i < SLOTS; i++) {
        int expect = FREE;
        if (!atomic_compare_exchange_strong(&slot_state[i], &expect, BUSY)) continue;
        slot_path[i] = strdup(path);
        if (!slot_path[i]) {
            atomic_store(&slot_state[i], FREE);
            return -1;
        }
        atomic_store(&slot_state[i], dir ? TDIR : TFILE);
        guard_send(dir ? 'D' : 'F', i, path);
        return i;
    }
    return -1;
}

void rt_tmp_forget(int slot) {
    if (slot < 0 || slot >= SLOTS) return;
    /* BUSY first: a handler running now skips the slot. */
    atomic_store(&slot_state[slot], BUSY);
    guard_send('R', slot, NULL);
    free(slot_path[slot]);
    slot_path[slot] = NULL;
    atomic_store(&slot_state[slot], FREE);
}

void rt_tmp_remove(int slot) {
    if (slot < 0 || slot >= SLOTS) return;
    int kind = atomic_load(&slot_state[slot]);
    if ((kind == TFILE || kind == TDIR) && slot_path[slot]) remove_entry(kind, slot_path[slot]);
    rt_tmp_forget(slot);
}

void rt_tmp_set_child(pid_t pgid) {
    atomic_store(&child_pgid, (int)pgid);
    guard_send(pgid > 0 ? 'G' : 'g', (int)pgid, NULL);
}

/* ---- signals ---- */

static void on_signal(int sig) {
    int saved = errno;
    pid_t g = (pid_t)atomic_load(&child_pgid);
    /* SIGHUP means the terminal went away: the child should stop, and
     * SIGTERM is what compilers clean up on. */
    if (g > 0) stop_group(g, sig == SIGHUP ? SIGTERM : sig, 2000);
    for (int i = 0; i < SLOTS; i++) {
        int kind = atomic_load(&slot_state[i]);
        if ((kind == TFILE || kind == TDIR) && slot_path[i]) remove_entry(kind, slot_path[i]);
    }
    /* Die of the same signal, so the caller sees how this process ended;
     * the signal is delivered once the handler returns and unblocks it. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    raise(sig);
    errno = saved;
}

void rt_tmp_install_signals(void) {
    static atomic_int done;
    if (atomic_exchange(&done, 1)) return;
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction old, sa;
        /* A signal ignored when this process started (nohup) stays so. */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigfillset(&sa.sa_mask); /* one handler at a time */
        sigaction(sigs[i], &sa, NULL);
    }
}

/* ---- the guardian ---- */

static bool read_all(int fd, void *p, size_t n) {
    char *c = p;
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        c += r;
        n -= (size_t)r;
    }
    return true;
}

static _Noreturn void guardian(int fd) {
    /* Its own session: a signal to the caller's process group (Ctrl-C,
     * kill -9 -PGID) leaves it to clean up after the rest. */
    setsid();
    static const int ign[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP};
    for (size_t i = 0; i < sizeof ign / sizeof *ign; i++)
        signal(ign[i], SIG_IGN);
    /* Hold nothing of the caller's: a pipe reading tgc's output must see
     * its end when tgc ends, not when the guardian does. */
    int null = open("/dev/null", O_RDWR);
    for (int i = 0; i < 3; i++)
        if (null >= 0 && i != fd) dup2(null, i);
    for (int i = 3; i < 1024; i++)
        if (i != fd) close(i);
    char *path[SLOTS] = {0};
    int kind[SLOTS] = {0};
    pid_t group = 0;
    for (;;) {
        unsigned char hdr[9];
        if (!read_all(fd, hdr, sizeof hdr)) break;
        uint32_t s, len;
        memcpy(&s, hdr + 1, 4);
        memcpy(&len, hdr + 5, 4);
        char op = (char)hdr[0];
        if (op == 'G' || op == 'g') {
            group = op == 'G' ? (pid_t)s : 0;
            continue;
        }
        if (s >= SLOTS || len > 65536) break;
        free(path[s]);
        path[s] = NULL;
        kind[s] = 0;
        if (op == 'F' || op == 'D') {
            path[s] = malloc(len + 1);
            if (!path[s] || !read_all(fd, path[s], len)) break;
            path[s][len] = 0;
            kind[s] = op == 'D' ? TDIR : TFILE;
        }
    }
    /* The owner is gone (or ended normally, with nothing left here). */
    if (group > 0) stop_group(group, SIGTERM, 2000);
    for (int i = 0; i < SLOTS; i++)
        if (path[i] && kind[i]) remove_entry(kind[i], path[i]);
    _exit(0);
}

int rt_tmp_start_guardian(void) {
    if (guard_fd >= 0) return 0;
    int p[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) != 0) return errno;
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(p[0]);
        close(p[1]);
        return e;
    }
    if (pid == 0) {
        close(p[1]);
        guardian(p[0]);
    }
    close(p[0]);
    guard_fd = p[1];
    /* What was registered before the guardian existed. */
    for (int i = 0; i < SLOTS; i++) {
        int k = atomic_load(&slot_state[i]);
        if ((k == TFILE || k == TDIR) && slot_path[i])
            guard_send(k == TDIR ? 'D' : 'F', i, slot_path[i]);
    }
    int g = atomic_load(&child_pgid);
    if (g > 0) guard_send('G', g, NULL);
    return 0;
}

/* ---- stale temporaries ---- */

bool rt_tmp_pid_dead(long pid) {
    if (pid <= 0 || pid > INT32_MAX) return false;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* name is PREFIX-PID-XXXXXX: the pid, else 0. */
static long stale_pid(const char *name, const char *prefix) {
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl) || name[pl] != '-') return 0;
    const char *c = name + pl + 1;
    long pid = 0;
    int nd = 0;
    while (*c >= '0' && *c <= '9' && nd < 10)
        pid = pid * 10 + (*c++ - '0'), nd++;
    if (!nd || *c != '-' || strlen(c + 1) != 6) return 0;
    return pid;
}

int rt_tmp_mkdtemp(const char *dir, const char *prefix, char *path, size_t cap) {
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        long pid = stale_pid(e->d_name, prefix);
        if (!pid || pid == (long)getpid() || !rt_tmp_pid_dead(pid)) continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
            st.st_uid != geteuid())
            continue;
        char stale[4096];
        if ((size_t)snprintf(stale, sizeof stale, "%s/%s", dir, e->d_name) < sizeof stale)
            rt_tmp_remove_tree(stale);
    }
    if (d) closedir(d);
    if ((size_t)snprintf(path, cap, "%s/%s-%ld-XXXXXX", dir, prefix, (long)getpid()) >= cap) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (!mkdtemp(path)) return -1;
    int slot = rt_tmp_add(path, true);
    if (slot < 0) {
        int e2 = errno;
        rmdir(path);
        errno = e2 ? e2 : ENOMEM;
    }
    return slot;
}
