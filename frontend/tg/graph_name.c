/* Graph names that would make `tgc compile`'s symbols someone else's.
 *
 * Every global symbol a compiled graph defines is NAME_ + a suffix
 * (codegen/glue.c: NAME_create, NAME_run, NAME_destroy, NAME_error...,
 * NAME__forward; its header also defines the macro NAME_OK and the type
 * NAME_ctx), and the program is linked with the C library, libpthread,
 * libm, OpenBLAS, oneDNN, libgomp, cJSON and the runtime (rt_*). A graph
 * named `pthread` would define pthread_create: the object interposes the C
 * library's, and OpenBLAS's start-up calls it before main. So a name is
 * refused when NAME_ starts with a prefix one of those owns: the
 * namespaces POSIX and C11 reserve for their headers, the libraries' own
 * prefixes, and the few unprefixed C library families that have a
 * NAME_create or NAME_destroy or NAME_error (found with `nm -D` over the
 * libraries above, against the suffixes glue.c generates). A name that
 * starts with '_' is the C implementation's at file scope (C11 7.1.3).
 *
 * The ONNX importer names its graph after the file: the same check runs on
 * what it writes, since every graph goes through build_graph. */
#include <stdbool.h>
#include <string.h>

#include "frontend/tg/graph_name.h"

typedef struct Reserved {
    const char *prefix; /* NAME_ starting with it is refused */
    const char *owner;
} Reserved;

static const Reserved reserved[] = {
    /* POSIX's reserved namespaces (XSH 2.2.2) and C11's <threads.h> and
     * <stdatomic.h>: pthread_create, sem_destroy, timer_create, tss_create... */
    {"pthread_", "POSIX threads"},
    {"sem_", "POSIX semaphores"},
    {"timer_", "POSIX timers"},
    {"clock_", "POSIX clocks"},
    {"mq_", "POSIX message queues"},
    {"aio_", "POSIX asynchronous I/O"},
    {"lio_", "POSIX asynchronous I/O"},
    {"posix_", "POSIX"},
    {"sched_", "the POSIX scheduler"},
    {"sigev_", "POSIX signals"},
    {"sival_", "POSIX signals"},
    {"thrd_", "C11 threads"},
    {"mtx_", "C11 threads"},
    {"cnd_", "C11 threads"},
    {"tss_", "C11 threads"},
    {"atomic_", "C11 atomics"},
    /* The C library's unprefixed families with a NAME_create/_destroy/_error. */
    {"epoll_", "the C library (epoll_create)"},
    {"memfd_", "the C library (memfd_create)"},
    {"timerfd_", "the C library (timerfd_create)"},
    {"argz_", "the C library (argz_create)"},
    {"argp_", "the C library (argp_error)"},
    {"gai_", "the C library (gai_error)"},
    {"clnt", "the C library's Sun RPC (clnt_create)"},
    {"svc", "the C library's Sun RPC (svc_run)"},
    {"xdr", "the C library's Sun RPC (xdrmem_create)"},
    {"authdes", "the C library's Sun RPC (authdes_create)"},
    {"authnone", "the C library's Sun RPC (authnone_create)"},
    {"authunix", "the C library's Sun RPC (authunix_create)"},
    /* The libraries a compiled program links. */
    {"cblas_", "OpenBLAS (CBLAS)"},
    {"openblas_", "OpenBLAS"},
    {"goto_", "OpenBLAS"},
    {"dnnl_", "oneDNN"},
    {"mkldnn_", "oneDNN"},
    {"omp_", "OpenMP (libgomp)"},
    {"GOMP_", "OpenMP (libgomp)"},
    {"acc_", "OpenACC (libgomp: acc_create)"},
    {"cJSON_", "cJSON"},
    {"rt_", "the tgc runtime (rt_context_create...)"},
    {"TGCRT_", "the tgc runtime (TGCRT_OK)"},
    {"_", "the C implementation (identifiers starting with '_')"},
};

/* Whole names: the header's NAME_OK would redefine <unistd.h>'s access
 * modes (F_OK, R_OK, W_OK, X_OK). */
static const char *const unistd_modes[] = {"F_OK", "R_OK", "W_OK", "X_OK"};

const char *graph_name_reserved(const char *name, const char **owner) {
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof unistd_modes / sizeof *unistd_modes; i++)
        if (n == 1 && name[0] == unistd_modes[i][0]) {
            if (owner) *owner = "<unistd.h>'s access modes";
            return unistd_modes[i];
        }
    for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++) {
        const char *p = reserved[i].prefix;
        size_t pl = strlen(p);
        /* NAME_ starts with p: NAME starts with it, or is it less its '_' */
        bool hit = !strncmp(name, p, pl < n ? pl : n) && (n + 1 == pl ? p[n] == '_' : n >= pl);
        if (hit) {
            if (owner) *owner = reserved[i].owner;
            return p;
        }
    }
    return NULL;
}
