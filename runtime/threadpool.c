/* A fixed pool of pthreads for parallel loops. The calling thread takes
 * part in every loop, so a pool of n threads starts n - 1 workers. Between
 * loops the workers sleep on a condition variable (no spinning). A loop is
 * split into pieces of fixed boundaries which the threads claim with an
 * atomic counter, so a slow thread does not hold the others up.
 *
 * Protocol: the caller publishes the loop under the mutex and bumps
 * `generation`; each worker runs pieces until none is left and counts
 * itself in `finished`; the caller returns once every worker has, so the
 * next loop cannot start while a worker still looks at this one. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tgcrt.h"

#define RT_PIECES_PER_THREAD 4 /* more pieces than threads: balance without much claiming */

typedef struct Worker {
    RtPool *pool;
    int index; /* 1..n-1 */
} Worker;

struct RtPool {
    int nthreads; /* the caller included */
    pthread_t *threads;
    Worker *workers;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    uint64_t generation; /* under mu */
    int finished;        /* workers done with this generation, under mu */
    bool shutdown;       /* under mu */
    atomic_bool busy;    /* a loop is running: nested or concurrent calls run serially */
    /* The current loop, written before generation is bumped. */
    RtRangeFn fn;
    void *ctx;
    int64_t begin, end, piece, npieces;
    atomic_int_fast64_t next;
};

static void run_pieces(RtPool *p, int thread) {
    for (;;) {
        int64_t k = atomic_fetch_add(&p->next, 1);
        if (k >= p->npieces) return;
        int64_t b = p->begin + k * p->piece;
        int64_t e = k == p->npieces - 1 ? p->end : b + p->piece;
        p->fn(p->ctx, b, e, thread);
    }
}

static void *worker_main(void *arg) {
    Worker *w = arg;
    RtPool *p = w->pool;
    /* Generation 0 is "no loop yet", not what p->generation is when this
     * thread gets to run: a loop may have been posted before it started. */
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->shutdown && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->shutdown) break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        run_pieces(p, w->index);
        pthread_mutex_lock(&p->mu);
        if (++p->finished == p->nthreads - 1) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static int online_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) return 1;
    return n > TGCRT_MAX_THREADS ? TGCRT_MAX_THREADS : (int)n;
}

static void stop_workers(RtPool *p, int started) {
    pthread_mutex_lock(&p->mu);
    p->shutdown = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < started; i++)
        pthread_join(p->threads[i], NULL);
}

static void free_pool(RtPool *p) {
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p->threads);
    free(p->workers);
    free(p);
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
    p->nthreads = n;
    p->threads = calloc((size_t)n, sizeof *p->threads);
    p->workers = calloc((size_t)n, sizeof *p->workers);
    atomic_init(&p->busy, false);
    atomic_init(&p->next, 0);
    if (!p->threads || !p->workers) {
        free(p->threads);
        free(p->workers);
        free(p);
        return rt_error_set(err, TGCRT_ERR_NOMEM, "out of memory creating a thread pool");
    }
    int inited = 0; /* how many of mu, wake, done were initialised */
    if (!pthread_mutex_init(&p->mu, NULL)) inited++;
    if (inited == 1 && !pthread_cond_init(&p->wake, NULL)) inited++;
    if (inited == 2 && !pthread_cond_init(&p->done, NULL)) inited++;
    if (inited < 3) {
        if (inited > 1) pthread_cond_destroy(&p->wake);
        if (inited > 0) pthread_mutex_destroy(&p->mu);
        free(p->threads);
        free(p->workers);
        free(p);
        return rt_error_set(err, TGCRT_ERR_NOMEM,
                            "cannot initialise the thread pool's mutex and condition variables");
    }
    for (int i = 0; i < n - 1; i++) {
        p->workers[i] = (Worker){p, i + 1};
        int rc = pthread_create(&p->threads[i], NULL, worker_main, &p->workers[i]);
        if (rc) {
            stop_workers(p, i);
            free_pool(p);
            return rt_error_set(err, TGCRT_ERR_NOMEM, "cannot start thread %d of %d: %s", i + 2, n,
                                strerror(rc));
        }
    }
    *out = p;
    return TGCRT_OK;
}

int rt_pool_threads(const RtPool *p) {
    return p ? p->nthreads : 1;
}

void rt_pool_parallel_for(RtPool *p, int64_t begin, int64_t end, int64_t grain, RtRangeFn fn,
                          void *ctx) {
    if (end <= begin) return;
    if (grain < 1) grain = 1;
    /* end - begin may not fit in int64 (begin very negative): compute it
     * unsigned; such a range runs serially. */
    uint64_t len = (uint64_t)end - (uint64_t)begin;
    int n = rt_pool_threads(p);
    if (n == 1 || len > (uint64_t)INT64_MAX || len <= (uint64_t)grain) {
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

    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->begin = begin;
    p->end = end;
    p->piece = piece;
    p->npieces = npieces;
    atomic_store(&p->next, 0);
    p->finished = 0;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    run_pieces(p, 0);

    pthread_mutex_lock(&p->mu);
    while (p->finished < p->nthreads - 1)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    atomic_store(&p->busy, false);
}

void rt_pool_destroy(RtPool *p) {
    if (!p) return;
    stop_workers(p, p->nthreads - 1);
    free_pool(p);
}
