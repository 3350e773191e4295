/* The thread pool: every index of a range is visited exactly once, sums
 * computed in parallel are right for any thread count and grain, nested
 * and concurrent loops are safe, and idle workers sleep (no CPU used). */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "rt_test.h"
#include "tgcrt.h"

#define MAX_THREADS 64

static int bad_thread_seen; /* a thread index outside [0, MAX_THREADS) */

typedef struct Sum {
    int64_t partial[MAX_THREADS]; /* one slot per thread index */
    int bad_thread;
} Sum;

static void sum_range(void *ctx, int64_t b, int64_t e, int thread) {
    Sum *s = ctx;
    if (thread < 0 || thread >= MAX_THREADS) {
        s->bad_thread = 1;
        return;
    }
    int64_t acc = 0;
    for (int64_t i = b; i < e; i++)
        acc += i;
    s->partial[thread] += acc;
}

static int64_t parallel_sum(RtPool *p, int64_t b, int64_t e, int64_t grain) {
    Sum s = {{0}, 0};
    rt_pool_parallel_for(p, b, e, grain, sum_range, &s);
    int64_t t = 0;
    for (int i = 0; i < MAX_THREADS; i++)
        t += s.partial[i];
    if (s.bad_thread) bad_thread_seen = 1;
    return t;
}

static int64_t serial_sum(int64_t b, int64_t e) {
    int64_t t = 0;
    for (int64_t i = b; i < e; i++)
        t += i;
    return t;
}

typedef struct Visit {
    unsigned char *count;
    int64_t base;
    int64_t short_pieces; /* shorter than the grain, other than the last */
    int64_t grain, total;
} Visit;

static void visit(void *ctx, int64_t b, int64_t e, int thread) {
    (void)thread;
    Visit *v = ctx;
    for (int64_t i = b; i < e; i++)
        v->count[i - v->base]++;
    if (e - b < v->grain && e != v->base + v->total) v->short_pieces++;
}

static void test_sums(void) {
    int sizes[] = {1, 2, 3, 8, 0};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        RtPool *p;
        RtError err;
        CHECK_INT(TGCRT_OK, rt_pool_create(sizes[k], &p, &err));
        if (sizes[k])
            CHECK_INT(sizes[k], rt_pool_threads(p));
        else
            CHECK(rt_pool_threads(p) >= 1);
        int64_t n = 3000001;
        CHECK_INT(serial_sum(0, n), parallel_sum(p, 0, n, 1));
        CHECK_INT(serial_sum(0, n), parallel_sum(p, 0, n, 1000));
        CHECK_INT(serial_sum(0, n), parallel_sum(p, 0, n, n * 2));
        CHECK_INT(serial_sum(-500, 777), parallel_sum(p, -500, 777, 7));
        CHECK_INT(0, parallel_sum(p, 5, 5, 1));                    /* empty */
        CHECK_INT(0, parallel_sum(p, 9, 2, 1));                    /* reversed: nothing */
        CHECK_INT(serial_sum(10, 13), parallel_sum(p, 10, 13, 0)); /* grain 0 means 1 */

        /* Every index exactly once, pieces no shorter than the grain. */
        int64_t grains[] = {1, 3, 64, 1000};
        for (size_t g = 0; g < sizeof grains / sizeof *grains; g++) {
            int64_t len = 10007;
            Visit v = {calloc((size_t)len, 1), 100, 0, grains[g], len};
            rt_pool_parallel_for(p, 100, 100 + len, grains[g], visit, &v);
            int64_t wrong = 0;
            for (int64_t i = 0; i < len; i++)
                wrong += v.count[i] != 1;
            CHECK_INT(0, wrong);
            CHECK_INT(0, v.short_pieces);
            free(v.count);
        }
        rt_pool_destroy(p);
    }
}

/* Many small loops in a row: a lost wake-up would hang (ctest's timeout). */
static void test_many_loops(void) {
    RtPool *p;
    CHECK_INT(TGCRT_OK, rt_pool_create(4, &p, NULL));
    int64_t wrong = 0;
    for (int i = 0; i < 20000; i++)
        wrong += parallel_sum(p, 0, 64 + i % 64, 1) != serial_sum(0, 64 + i % 64);
    CHECK_INT(0, wrong);
    rt_pool_destroy(p);
}

typedef struct Nested {
    RtPool *p;
    int64_t inner[MAX_THREADS];
} Nested;

static void outer(void *ctx, int64_t b, int64_t e, int thread) {
    Nested *n = ctx;
    for (int64_t i = b; i < e; i++)
        n->inner[thread] += parallel_sum(n->p, 0, 100, 1); /* runs serially */
}

static void test_nested(void) {
    Nested n = {NULL, {0}};
    CHECK_INT(TGCRT_OK, rt_pool_create(3, &n.p, NULL));
    rt_pool_parallel_for(n.p, 0, 50, 1, outer, &n);
    int64_t t = 0;
    for (int i = 0; i < MAX_THREADS; i++)
        t += n.inner[i];
    CHECK_INT(50 * serial_sum(0, 100), t);
    rt_pool_destroy(n.p);
}

typedef struct Shared {
    RtPool *p;
    int64_t wrong;
} Shared;

static void *hammer(void *arg) {
    Shared *s = arg;
    for (int i = 0; i < 2000; i++)
        s->wrong += parallel_sum(s->p, 0, 1000 + i, 10) != serial_sum(0, 1000 + i);
    return NULL;
}

/* Two threads using one pool at once: one runs in parallel, the other
 * serially while the pool is busy; both get right answers. */
static void test_concurrent_callers(void) {
    RtPool *p;
    CHECK_INT(TGCRT_OK, rt_pool_create(3, &p, NULL));
    Shared a = {p, 0}, b = {p, 0};
    pthread_t ta, tb;
    CHECK_INT(0, pthread_create(&ta, NULL, hammer, &a));
    CHECK_INT(0, pthread_create(&tb, NULL, hammer, &b));
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK_INT(0, a.wrong);
    CHECK_INT(0, b.wrong);
    rt_pool_destroy(p);
}

typedef struct Extremes {
    int64_t b, e;
    int calls;
} Extremes;

static void record(void *ctx, int64_t b, int64_t e, int thread) {
    (void)thread;
    Extremes *x = ctx;
    x->b = b;
    x->e = e;
    x->calls++;
}

static void test_edges(void) {
    RtPool *p;
    RtError err;
    CHECK_INT(TGCRT_ERR_ARG, rt_pool_create(-1, &p, &err));
    CHECK(p == NULL);
    CHECK_HAS(err.msg, "thread count -1");
    CHECK_INT(TGCRT_OK, rt_pool_create(2, &p, &err));
    /* A range longer than INT64_MAX runs once, serially, whole. */
    Extremes x = {0, 0, 0};
    rt_pool_parallel_for(p, INT64_MIN, INT64_MAX, 1, record, &x);
    CHECK_INT(1, x.calls);
    CHECK(x.b == INT64_MIN && x.e == INT64_MAX);
    rt_pool_destroy(p);
    /* NULL pool: serial. */
    CHECK_INT(1, rt_pool_threads(NULL));
    CHECK_INT(serial_sum(0, 1000), parallel_sum(NULL, 0, 1000, 1));
    rt_pool_destroy(NULL);
}

/* Idle workers sleep: a pool of 4 doing nothing for 300 ms uses almost no
 * CPU time (busy-waiting workers would use about a second). */
static void test_idle(void) {
    RtPool *p;
    CHECK_INT(TGCRT_OK, rt_pool_create(4, &p, NULL));
    parallel_sum(p, 0, 100000, 1);
    clock_t c0 = clock();
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    double cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
    if (cpu >= 0.1) printf("idle pool used %.3f s of CPU in 0.3 s\n", cpu);
    CHECK(cpu < 0.1);
    rt_pool_destroy(p);
}

int main(void) {
    test_sums();
    test_many_loops();
    test_nested();
    test_concurrent_callers();
    test_edges();
    test_idle();
    CHECK(!bad_thread_seen);
    return rt_test_report();
}
