/* Parallel loops on OpenMP (libgomp): the one threading runtime of a
 * program. oneDNN (convolutions, f32 products) runs its own parallel
 * regions on libgomp too, and OpenBLAS is kept single-threaded
 * (rt_blas_set_threads), so every parallel loop of a process, whoever
 * starts it, runs on one team of threads and no second runtime's idle
 * workers spin beside it (docs/runtime.md "Threads").
 *
 * A loop is split into pieces of fixed boundaries which the team's threads
 * claim with an atomic counter, so a slow thread does not hold the others
 * up. The calling thread is thread 0 of the team, so it takes part.
 *
 * libgomp is called through GOMP_parallel, the entry point gcc's
 * `#pragma omp parallel` compiles to, rather than through the pragma:
 * clang's -fopenmp targets LLVM's libomp, a second runtime, and this file
 * must build the same with either compiler. */
#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_internal.h"

/* libgomp's ABI (stable since GCC 4.9) and the OpenMP API calls used. */
void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags);
int omp_get_thread_num(void);
int omp_in_parallel(void);

#define RT_PIECES_PER_THREAD 4 /* more pieces than threads: balance without much claiming */

struct RtPool {
    int nthreads;     /* the caller included */
    atomic_bool busy; /* a loop is running: nested or concurrent calls run serially */
    /* The context's f32 product primitives (matmul_dnnl.c), made on first
     * use and freed with the pool: the pool is the one per-context object
     * rt_matmul is handed. */
    pthread_mutex_t mm_mu;
    RtMmCache *mm;
    /* Its destructor, given by matmul_dnnl.c: a call here would pull
     * oneDNN into CUDA programs, which link none. */
    void (*mm_free)(RtMmCache *);
};

typedef struct Loop {
    RtRangeFn fn;
    void *ctx;
    int64_t begin, end, piece, npieces;
    atomic_int_fast64_t next;
} Loop;

static void run_pieces(void *arg) {
    Loop *l = arg;
    int thread = omp_get_thread_num();
    for (;;) {
        int64_t k = atomic_fetch_add(&l->next, 1);
        if (k >= l->npieces) return;
        int64_t b = l->begin + k * l->piece;
        int64_t e = k == l->npieces - 1 ? l->end : b + l->piece;
        l->fn(l->ctx, b, e, thread);
    }
}

static void blas_one_thread(void) {
    openblas_set_num_threads(1);
}

/* Here rather than in matmul.c: every program creates a pool, and a CUDA
 * program, which links no oneDNN, must not pull in matmul.c's oneDNN
 * calls with it. */
void rt_blas_single_thread(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, blas_one_thread);
}

/* Kept for callers of the API: OpenBLAS stays single-threaded whatever n
 * is; a context's products use its pool's threads instead. */
void rt_blas_set_threads(int n) {
    (void)n;
    rt_blas_single_thread();
}

static int online_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) return 1;
    return n > TGCRT_MAX_THREADS ? TGCRT_MAX_THREADS : (int)n;
}

RtStatus rt_pool_create(int n, RtPool **out, RtError *err) {
    *out = NULL;
    if (n < 0 || n > TGCRT_MAX_THREADS)
        return rt_error_set(err, TGCRT_ERR_ARG,
                            "thread count %d is out of range: expected 0 (all cores) to %d", n,
                            TGCRT_MAX_THREADS);
    if (n == 0) n = online_cores();
    RtPool *p = calloc(1, sizeof *p);
    if (!p) return rt_error_set(err, TGCRT_ERR_NOMEM, "out of memory creating a thread pool");
    if (pthread_mutex_init(&p->mm_mu, NULL)) {
        free(p);
        return rt_error_set(err, TGCRT_ERR_NOMEM, "cannot initialise the thread pool's mutex");
    }
    p->nthreads = n;
    atomic_init(&p->busy, false);
    rt_blas_single_thread();
    *out = p;
    return TGCRT_OK;
}

int rt_pool_threads(const RtPool *p) {
    return p ? p->nthreads : 1;
}

RtMmCache **rt_pool_mm_lock(RtPool *p, void (*free_fn)(RtMmCache *)) {
    pthread_mutex_lock(&p->mm_mu);
    p->mm_free = free_fn;
    return &p->mm;
}

void rt_pool_mm_unlock(RtPool *p) {
    pthread_mutex_unlock(&p->mm_mu);
}

void rt_pool_parallel_for(RtPool *p, int64_t begin, int64_t end, int64_t grain, RtRangeFn fn,
                          void *ctx) {
    if (end <= begin) return;
    if (grain < 1) grain = 1;
    /* end - begin may not fit in int64 (begin very negative): compute it
     * unsigned; such a range runs serially. */
    uint64_t len = (uint64_t)end - (uint64_t)begin;
    int n = rt_pool_threads(p);
    /* Inside another parallel region (this pool's, or oneDNN's) the loop
     * runs on the calling thread: every thread is busy already. */
    if (n == 1 || len > (uint64_t)INT64_MAX || len <= (uint64_t)grain || omp_in_parallel()) {
        fn(ctx, begin, end, 0);
        return;
    }
    bool was_busy = atomic_exchange(&p->busy, true);
    if (was_busy) {
        fn(ctx, begin, end, 0);
        return;
    }
    int64_t target = (int64_t)n * RT_PIECES_PER_THREAD;
    int64_t piece = (int64_t)((len + (uint64_t)target - 1) / (uint64_t)target);
    if (piece < grain) piece = grain;
    int64_t npieces = (int64_t)((len + (uint64_t)piece - 1) / (uint64_t)piece);
    Loop l = {fn, ctx, begin, end, piece, npieces, 0};
    atomic_init(&l.next, 0);
    /* No more threads than pieces: an extra one would only wake to find
     * nothing left. */
    GOMP_parallel(run_pieces, &l, (unsigned)(npieces < n ? npieces : n), 0);
    atomic_store(&p->busy, false);
}

void rt_pool_destroy(RtPool *p) {
    if (!p) return;
    if (p->mm) p->mm_free(p->mm);
    pthread_mutex_destroy(&p->mm_mu);
    free(p);
}
