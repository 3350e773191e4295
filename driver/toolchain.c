/* The toolchain `tgc build` drives: where the runtime library and header
 * are, and running the system C compiler. */
#include "driver/toolchain.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

const char *toolchain_sanitize_flag(void) {
#ifdef TGC_LINK_SANITIZE
    return "-fsanitize=address,undefined";
#else
    return NULL;
#endif
}

/* Runs argv and waits. stdout goes to /dev/null when quiet; stdout and
 * stderr both go to the file log when it is given. */
static int spawn(char *const *argv, bool quiet, const char *log) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
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
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int toolchain_exec(char *const *argv, bool quiet) {
    return spawn(argv, quiet, NULL);
}

int toolchain_exec_log(char *const *argv, const char *log) {
    return spawn(argv, false, log);
}
