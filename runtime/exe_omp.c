/* The threading settings of tgc's executables, made before any library
 * starts (docs/runtime.md "Threads").
 *
 *  - GOMP_SPINCOUNT=0: a libgomp thread waiting for work or at a barrier
 *    sleeps at once instead of spinning up to about 3 ms (libgomp's default
 *    when OMP_WAIT_POLICY is unset). With as many threads as cores, a
 *    spinning thread that shares a core with the one it waits for costs a
 *    scheduler slice per barrier: on the loaded 2-core machine measured, an
 *    MLP ran at a median of 16-20 ms in some runs against 0.31-0.45 ms
 *    without spinning. It also makes OMP_WAIT_POLICY irrelevant: libgomp
 *    takes an explicit spin count over the policy. A user's own
 *    GOMP_SPINCOUNT is kept (then nothing here changes anything).
 *  - OPENBLAS_NUM_THREADS=1: OpenBLAS is always called single-threaded
 *    (rt_blas_single_thread); set before it starts, it starts no threads
 *    of its own either.
 *
 * Both libraries read the environment once, in their ELF constructors,
 * which run before main: a setenv in main comes too late, and so does one
 * in .preinit_array (which runs before them, but glibc's own start-up then
 * resets environ to the array the kernel passed). libgomp has no call that
 * sets its spin count. So a function in the executable's .preinit_array,
 * which runs before any shared library's constructor, re-executes the
 * program once (/proc/self/exe, the same argv) with the two variables
 * added: about a millisecond at start, before any library has made a
 * thread. If the exec fails the program goes on as it is. rt_main calls
 * rt_exe_omp_preinit so that this object is linked into every executable
 * and into nothing else (a shared object may not have a .preinit_array). */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <unistd.h>

#include "rt_internal.h"

static const char SPIN[] = "GOMP_SPINCOUNT=", BLAS[] = "OPENBLAS_NUM_THREADS=";

static bool has(char **envp, const char *prefix) {
    size_t n = strlen(prefix);
    for (char **e = envp; e && *e; e++)
        if (!strncmp(*e, prefix, n)) return true;
    return false;
}

void rt_exe_omp_preinit(int argc, char **argv, char **envp) {
    (void)argc;
    /* Set already (by the user, or by the exec below): nothing to do. */
    if (!argv || !envp || has(envp, SPIN)) return;
    size_t n = 0;
    while (envp[n])
        n++;
    if (n > 100000) return; /* a VLA of that many pointers may not fit the stack */
    char *env[n + 3];
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(envp[i], BLAS, sizeof BLAS - 1)) env[k++] = envp[i];
    env[k++] = (char *)"GOMP_SPINCOUNT=0";
    env[k++] = (char *)"OPENBLAS_NUM_THREADS=1";
    env[k] = NULL;
    execve("/proc/self/exe", argv, env);
    /* Still here: no /proc, say. The program runs with libgomp's and
     * OpenBLAS's defaults. */
}

__attribute__((section(".preinit_array"),
               used)) static void (*const preinit)(int, char **, char **) = rt_exe_omp_preinit;
