/* The toolchain `tgc build` drives: where the runtime library and header
 * are, and running the system C compiler. */
#include "driver/toolchain.h"

#include <errno.h>
#include <signal.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/atomic_file.h"

static bool is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

bool toolchain_find_runtime(char *lib, char *inc, size_t cap) {
    const char *env = getenv("TGC_RUNTIME_DIR");
    if (env && *env) {
        snprintf(lib, cap, "%s/libtgcrt.a", env);
        snprintf(inc, cap, "%s", env);
        char h[PATH_MAX];
        snprintf(h, sizeof h, "%s/tgcrt.h", env);
        if (is_file(lib) && is_file(h)) return true;
    }
    /* An installed tgc: PREFIX/bin/tgc with PREFIX/lib/tgc and
     * PREFIX/include/tgc beside it. */
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *dir = dirname(self);
        snprintf(lib, cap, "%s/../lib/tgc/libtgcrt.a", dir);
        snprintf(inc, cap, "%s/../include/tgc", dir);
        char h[PATH_MAX + 16];
        snprintf(h, sizeof h, "%s/tgcrt.h", inc);
        if (is_file(lib) && is_file(h)) return true;
    }
#ifdef TGC_BUILD_RUNTIME_LIB
    snprintf(lib, cap, "%s", TGC_BUILD_RUNTIME_LIB);
    snprintf(inc, cap, "%s", TGC_BUILD_RUNTIME_INCLUDE);
    if (is_file(lib)) return true;
#endif
    return false;
}

const char *toolchain_cc(void) {
    const char *cc = getenv("CC");
    if (cc && *cc) return cc;
#ifdef TGC_DEFAULT_CC
    /* The compiler that built the runtime, when it is still there. */
    if (access(TGC_DEFAULT_CC, X_OK) == 0) return TGC_DEFAULT_CC;
#endif
    return "cc";
}

/* Whether an executable named name is on PATH. */
static bool on_path(const char *name) {
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/bin:/bin";
    while (*path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        char p[PATH_MAX];
        if (len && len + strlen(name) + 2 < sizeof p) {
            snprintf(p, sizeof p, "%.*s/%s", (int)len, path, name);
            if (access(p, X_OK) == 0) return true;
        }
        path += len + (end ? 1 : 0);
    }
    return false;
}

/* GNU ld (bfd) takes about 230 ms of CPU to link a small program against
 * OpenBLAS and oneDNN, lld and gold about 63 ms (perf stat, 5 runs, this
 * project's runtime; with ASan 530 ms against lld's 116 ms): most of a
 * small `tgc build`. So programs link with lld, else gold, when the
 * machine has one; TGC_LD=bfd|gold|lld chooses,
 * TGC_LD=default leaves it to the compiler. */
const char *toolchain_linker_flag(void) {
    static const char *flag;
    static bool known;
    if (known) return flag;
    known = true;
    const char *env = getenv("TGC_LD");
    if (env && *env) {
        static char buf[64];
        if (strcmp(env, "default") != 0 && strlen(env) < 32 && !strchr(env, '/')) {
            snprintf(buf, sizeof buf, "-fuse-ld=%s", env);
            flag = buf;
        }
        return flag;
    }
    if (on_path("ld.lld")) flag = "-fuse-ld=lld";
#ifndef TGC_LINK_SANITIZE
    /* gold is binutils', so wherever GNU ld is; it warns on every one of
     * clang's ASan check thunks, so sanitized programs keep GNU ld. */
    else if (on_path("ld.gold"))
        flag = "-fuse-ld=gold";
#endif
    return flag;
}

const char *toolchain_sanitize_flag(void) {
#ifdef TGC_LINK_SANITIZE
    return "-fsanitize=address,undefined";
#else
    return NULL;
#endif
}

/* Runs argv and waits. stdout goes to /dev/null when quiet; stdout and
 * stderr both go to the file log when it is given.
 *
 * The child leads a process group of its own, so that stopping it on
 * SIGINT/SIGTERM (rt_tmp_install_signals) reaches what it starts too (the
 * C compiler's cc1, as, collect2 and ld), and the registry knows that
 * group while it runs. It gets SIGTERM when tgc dies without a handler
 * (SIGKILL): then the guardian (rt_tmp_start_guardian) stops the rest of
 * its group, so an orphaned linker never completes a temporary. Being
 * outside the terminal's foreground group, the child gets Ctrl-C through
 * tgc's handler; it must not read the terminal (compilers and compiled
 * programs do not). */
static int spawn(char *const *argv, bool quiet, const char *log) {
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        setpgid(0, 0);
        /* SIGTERM, not SIGKILL: the C compiler removes its temporaries. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(127); /* tgc died before prctl */
        /* An output written in place (a FIFO) blocks SIGPIPE in tgc
         * (rt_afile_begin); the child should not inherit that. */
        sigset_t pipe;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        sigprocmask(SIG_UNBLOCK, &pipe, NULL);
        if (log) {
            if (!freopen(log, "w", stdout) || dup2(fileno(stdout), 2) < 0) _exit(126);
        } else if (quiet) {
            FILE *f = freopen("/dev/null", "w", stdout);
            (void)f;
        }
        execvp(argv[0], argv);
        fprintf(stderr, "tgc: error: cannot run '%s': %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid); /* also here: whichever runs first */
    rt_tmp_set_child(pid);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            rt_tmp_set_child(0);
            return -1;
        }
    rt_tmp_set_child(0);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int toolchain_exec(char *const *argv, bool quiet) {
    return spawn(argv, quiet, NULL);
}

int toolchain_exec_log(char *const *argv, const char *log) {
    return spawn(argv, false, log);
}
