/* The machine's limits, for bench/run.py and bench/onnx.py: memory copy
 * bandwidth and f32 GEMM throughput (OpenBLAS's, and oneDNN's when built
 * with it), all with a given thread count.
 *
 *   cc -O2 -o limits bench/limits.c $(pkg-config --cflags --libs openblas) -lpthread
 *   cc -O2 -DLIMITS_DNNL -fopenmp -o limits bench/limits.c \
 *      $(pkg-config --cflags --libs openblas) -ldnnl -lpthread     # with oneDNN
 *   ./limits THREADS SECONDS WHAT...
 *
 * WHAT is `copy:MIB` (memcpy of a MIB MiB buffer), `read:MIB` (a sum of
 * every 8-byte word of a MIB MiB buffer: a read-only stream, what a
 * matrix-vector product does with its weights), `sgemm:N` (N x N x N),
 * `sgemm:MxKxN` (an [M, K] x [K, N] product), or, only with -DLIMITS_DNNL,
 * the same shapes as `dnnl_sgemm:` (oneDNN's dnnl_sgemm, which makes a
 * primitive per call), `dnnl_matmul:` (oneDNN's matmul primitive, made once
 * before the timed runs: how tgc's runtime runs f32 products) and
 * `sgemm_split:` (single-threaded OpenBLAS, C's rows split over T OpenMP
 * threads: how tgc's runtime runs the products it gives OpenBLAS).
 * Each measurement runs once as a warm-up, then about SECONDS worth of timed
 * runs (at least 5), and prints one line:
 *   copy: threads=T mib=M reps=R median_s=... rw_gbps=... best_rw_gbps=...
 *   read: threads=T mib=M reps=R median_s=... read_gbps=... best_read_gbps=...
 *   sgemm: threads=T n=N reps=R median_s=... gflops=... best_gflops=...
 *   sgemm: threads=T m=M k=K n=N reps=R ...      (when not square)
 *   dnnl_sgemm: ...                              (the same fields)
 *   dnnl_matmul: ... impl=NAME                   (and oneDNN's kernel)
 * rw_gbps counts bytes read + bytes written (2 x the buffer) per second of
 * the median run; best_* are the same of the fastest run. The copy splits the buffer into T
 * page-aligned slices, one memcpy per thread (glibc's memcpy: non-temporal stores at this size).
 * read_gbps counts the bytes read (1 x the buffer); the read splits the buffer the same way,
 * each thread summing its slice with SSE2 loads into four accumulators, so that the sum is
 * bound by the memory, not by the adds' latency.
 * sgemm is cblas_sgemm(RowMajor, NoTrans, NoTrans, alpha 1, beta 0) on f32
 * with openblas_set_num_threads(T); dnnl_sgemm is oneDNN's row-major
 * dnnl_sgemm('N', 'N', ...) with omp_set_num_threads(T) (Debian's oneDNN
 * runs on OpenMP). They are measured side by side because either library
 * can be the faster on a given CPU, and the fastest is the machine's GEMM
 * limit. */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#ifdef LIMITS_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#endif

void openblas_set_num_threads(int num_threads);

enum { MAX_THREADS = 256, MAX_REPS = 2000 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int reps_for(double one_s, double seconds) {
    double r = seconds / (one_s > 1e-9 ? one_s : 1e-9);
    return r < 5 ? 5 : r > MAX_REPS ? MAX_REPS : (int)r;
}

static void *xmalloc(size_t bytes) {
    void *p = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
    if (!p) {
        fprintf(stderr, "limits: out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

/* ---- copy and read ---- */

typedef struct {
    char *dst; /* NULL: read only */
    const char *src;
    size_t bytes;
    pthread_barrier_t *start, *end;
    int rounds;
    uint64_t sum; /* the read's result, kept so that the loads are not dropped */
} Slice;

/* The sum of the 8-byte words of p[0, bytes) (bytes a multiple of 64, p
 * 16-byte aligned: the slices are page-aligned). Four independent
 * accumulators of two words each: two 16-byte loads per cycle keep up with
 * any memory, where one scalar accumulator would be bound by the adds. */
static uint64_t read_sum(const char *p, size_t bytes) {
#ifdef __SSE2__
    __m128i a0 = _mm_setzero_si128(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i + 64 <= bytes; i += 64) {
        a0 = _mm_add_epi64(a0, _mm_load_si128((const __m128i *)(p + i)));
        a1 = _mm_add_epi64(a1, _mm_load_si128((const __m128i *)(p + i + 16)));
        a2 = _mm_add_epi64(a2, _mm_load_si128((const __m128i *)(p + i + 32)));
        a3 = _mm_add_epi64(a3, _mm_load_si128((const __m128i *)(p + i + 48)));
    }
    uint64_t w[2];
    _mm_storeu_si128((__m128i *)w, _mm_add_epi64(_mm_add_epi64(a0, a1), _mm_add_epi64(a2, a3)));
    return w[0] + w[1];
#else
    const uint64_t *q = (const uint64_t *)p;
    uint64_t a[4] = {0, 0, 0, 0};
    for (size_t i = 0; i + 4 <= bytes / 8; i += 4)
        for (int j = 0; j < 4; j++)
            a[j] += q[i + j];
    return a[0] + a[1] + a[2] + a[3];
#endif
}

static void slice_once(Slice *s) {
    if (s->dst)
        memcpy(s->dst, s->src, s->bytes);
    else
        s->sum += read_sum(s->src, s->bytes);
}

/* A worker thread: one memcpy (or read) of its slice per round, between
 * barriers. */
static void *stream_worker(void *p) {
    Slice *s = p;
    for (int r = 0; r < s->rounds; r++) {
        pthread_barrier_wait(s->start);
        slice_once(s);
        pthread_barrier_wait(s->end);
    }
    return NULL;
}

/* copy:MIB (read_only 0) or read:MIB (1) with t threads. */
static void bench_stream(int t, size_t mib, double seconds, int read_only) {
    size_t bytes = mib << 20;
    char *src = xmalloc(bytes), *dst = read_only ? NULL : xmalloc(bytes);
    memset(src, 1, bytes);
    if (dst) memset(dst, 2, bytes);
    /* Estimate one pass (single thread, pages already touched). */
    double t0 = now();
    if (dst)
        memcpy(dst, src, bytes);
    else if (read_sum(src, bytes) == 42)
        fputc(' ', stderr); /* uses the sum */
    int reps = reps_for((now() - t0) / t, seconds);
    int rounds = reps + 1; /* + the warm-up */

    pthread_t th[MAX_THREADS];
    Slice sl[MAX_THREADS];
    pthread_barrier_t start, end;
    pthread_barrier_init(&start, NULL, (unsigned)t);
    pthread_barrier_init(&end, NULL, (unsigned)t);
    size_t per = (bytes / (size_t)t) & ~(size_t)4095;
    for (int i = 0; i < t; i++) {
        size_t off = per * (size_t)i;
        sl[i] = (Slice){dst ? dst + off : NULL,
                        src + off,
                        i == t - 1 ? bytes - off : per,
                        &start,
                        &end,
                        rounds,
                        0};
    }
    for (int i = 1; i < t; i++)
        pthread_create(&th[i], NULL, stream_worker, &sl[i]);
    double *v = malloc(sizeof *v * (size_t)rounds);
    for (int r = 0; r < rounds; r++) {
        pthread_barrier_wait(&start);
        double a = now();
        slice_once(&sl[0]);
        pthread_barrier_wait(&end);
        v[r] = now() - a;
    }
    uint64_t sum = sl[0].sum;
    for (int i = 1; i < t; i++) {
        pthread_join(th[i], NULL);
        sum += sl[i].sum;
    }
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&end);
    double m = median(v + 1, reps), best = v[1]; /* sorted by median() */
    double moved = read_only ? (double)bytes : 2.0 * (double)bytes;
    const char *unit = read_only ? "read_gbps" : "rw_gbps";
    printf("%s: threads=%d mib=%zu reps=%d median_s=%.6f %s=%.2f best_%s=%.2f",
           read_only ? "read" : "copy", t, mib, reps, m, unit, moved / m / 1e9, unit,
           moved / best / 1e9);
    /* Every byte is 1: the sum of the words tells that every load ran. */
    if (read_only && sum != (uint64_t)rounds * (bytes / 8) * 0x0101010101010101ull)
        printf(" BAD_SUM");
    printf("\n");
    free(v);
    free(src);
    free(dst);
}

/* ---- sgemm ---- */

typedef enum { LIB_OPENBLAS, LIB_DNNL, LIB_DNNL_MATMUL, LIB_OPENBLAS_SPLIT } GemmLib;

#ifdef LIMITS_DNNL
/* oneDNN's matmul primitive for one shape, made once (as the runtime keeps
 * one per product of a context: runtime/matmul_dnnl.c), outside the timed
 * runs. */
typedef struct Matmul {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_primitive_t prim;
    dnnl_memory_t mem[3];
    const char *impl;
} Matmul;
static Matmul mm;

static void mm_check(dnnl_status_t st, const char *what) {
    if (st != dnnl_success) {
        fprintf(stderr, "limits: oneDNN matmul: %s failed (status %d)\n", what, (int)st);
        exit(1);
    }
}

static void mm_make(int m, int k, int n) {
    dnnl_dims_t d[3] = {{m, k}, {k, n}, {m, n}}, str[3] = {{k, 1}, {n, 1}, {n, 1}};
    dnnl_memory_desc_t md[3];
    for (int i = 0; i < 3; i++)
        mm_check(dnnl_memory_desc_init_by_strides(&md[i], 2, d[i], dnnl_f32, str[i]),
                 "memory desc");
    dnnl_matmul_desc_t desc;
    mm_check(dnnl_matmul_desc_init(&desc, &md[0], &md[1], NULL, &md[2]), "matmul desc");
    mm_check(dnnl_engine_create(&mm.eng, dnnl_cpu, 0), "engine");
    mm_check(dnnl_stream_create(&mm.stream, mm.eng, dnnl_stream_default_flags), "stream");
    dnnl_primitive_desc_t pd;
    mm_check(dnnl_primitive_desc_create(&pd, &desc, NULL, mm.eng, NULL), "primitive desc");
    const char *impl = "?";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    mm.impl = strdup(impl);
    mm_check(dnnl_primitive_create(&mm.prim, pd), "primitive");
    dnnl_primitive_desc_destroy(pd);
    for (int i = 0; i < 3; i++)
        mm_check(dnnl_memory_create(&mm.mem[i], &md[i], mm.eng, DNNL_MEMORY_NONE), "memory");
}

static void mm_free(void) {
    for (int i = 0; i < 3; i++)
        dnnl_memory_destroy(mm.mem[i]);
    dnnl_primitive_destroy(mm.prim);
    dnnl_stream_destroy(mm.stream);
    dnnl_engine_destroy(mm.eng);
    free((void *)mm.impl);
    memset(&mm, 0, sizeof mm);
}

static void mm_run(const float *a, const float *b, float *c) {
    const void *p[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        mm_check(dnnl_memory_set_data_handle(mm.mem[i], (void *)p[i]), "set data handle");
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, mm.mem[0]}, {DNNL_ARG_WEIGHTS, mm.mem[1]}, {DNNL_ARG_DST, mm.mem[2]}};
    mm_check(dnnl_primitive_execute(mm.prim, mm.stream, 3, args), "execute");
    mm_check(dnnl_stream_wait(mm.stream), "stream wait");
}
#endif

/* One C = A B, [m, k] x [k, n], row-major, through lib. */
static void gemm(GemmLib lib, int m, int k, int n, const float *a, const float *b, float *c) {
#ifdef LIMITS_DNNL
    if (lib == LIB_DNNL_MATMUL) {
        mm_run(a, b, c);
        return;
    }
    if (lib == LIB_OPENBLAS_SPLIT) {
        /* Single-threaded OpenBLAS, C's rows (or, with fewer rows than
         * threads, columns) split over the OpenMP threads: what the runtime
         * does with a product it gives OpenBLAS (runtime/matmul.c). */
        int t = omp_get_max_threads();
        int by_rows = m >= n || m >= 16 * t;
#pragma omp parallel num_threads(t)
        {
            int i = omp_get_thread_num(), nt = omp_get_num_threads();
            int len = by_rows ? m : n, per = (len + nt - 1) / nt;
            int b0 = i * per, b1 = b0 + per < len ? b0 + per : len;
            if (b1 > b0 && by_rows)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, b1 - b0, n, k, 1.0f,
                            a + (size_t)b0 * k, k, b, n, 0.0f, c + (size_t)b0 * n, n);
            else if (b1 > b0)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, b1 - b0, k, 1.0f, a, k,
                            b + b0, n, 0.0f, c + b0, n);
        }
        return;
    }
    if (lib == LIB_DNNL) {
        if (dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, k, b, n, 0.0f, c, n) != dnnl_success) {
            fprintf(stderr, "limits: dnnl_sgemm failed (m=%d k=%d n=%d)\n", m, k, n);
            exit(1);
        }
        return;
    }
#endif
    (void)lib;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}

static void fill(float *x, size_t e, unsigned *s) {
    for (size_t i = 0; i < e; i++) {
        *s = *s * 1103515245u + 12345u;
        x[i] = (float)((*s >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
}

static void bench_sgemm(GemmLib lib, int t, int m, int k, int n, double seconds) {
    size_t ea = (size_t)m * (size_t)k, eb = (size_t)k * (size_t)n, ec = (size_t)m * (size_t)n;
    float *a = xmalloc(ea * 4), *b = xmalloc(eb * 4), *c = xmalloc(ec * 4);
    unsigned s = 12345;
    fill(a, ea, &s);
    fill(b, eb, &s);
    memset(c, 0, ec * 4);
    if (lib == LIB_OPENBLAS) openblas_set_num_threads(t);
#ifdef LIMITS_DNNL
    else
        omp_set_num_threads(t);
    if (lib == LIB_OPENBLAS_SPLIT) openblas_set_num_threads(1);
    if (lib == LIB_DNNL_MATMUL) mm_make(m, k, n);
#endif
    double flop = 2.0 * (double)m * (double)k * (double)n;
    double t0 = now();
    gemm(lib, m, k, n, a, b, c);
    int reps = reps_for(now() - t0, seconds);
    double *v = malloc((size_t)reps * sizeof *v);
    for (int r = 0; r < reps; r++) {
        t0 = now();
        gemm(lib, m, k, n, a, b, c);
        v[r] = now() - t0;
    }
    double md = median(v, reps), best = v[0]; /* sorted by median() */
    const char *name = lib == LIB_DNNL             ? "dnnl_sgemm"
                       : lib == LIB_DNNL_MATMUL    ? "dnnl_matmul"
                       : lib == LIB_OPENBLAS_SPLIT ? "sgemm_split"
                                                   : "sgemm";
    if (m == k && k == n)
        printf("%s: threads=%d n=%d", name, t, n);
    else
        printf("%s: threads=%d m=%d k=%d n=%d", name, t, m, k, n);
    printf(" reps=%d median_s=%.6f gflops=%.2f best_gflops=%.2f", reps, md, flop / md / 1e9,
           flop / best / 1e9);
#ifdef LIMITS_DNNL
    if (lib == LIB_DNNL_MATMUL) {
        printf(" impl=%s", mm.impl);
        mm_free();
    }
#endif
    printf("\n");
    free(v);
    free(a);
    free(b);
    free(c);
}

/* "N" or "MxKxN" with every size in 1..65536 -> m, k, n; 0 when malformed. */
static int parse_shape(const char *p, int *m, int *k, int *n) {
    long x, y, z;
    char end;
    if (sscanf(p, "%ldx%ldx%ld%c", &x, &y, &z, &end) == 3)
        ;
    else if (sscanf(p, "%ld%c", &x, &end) == 1)
        y = z = x;
    else
        return 0;
    if (x < 1 || y < 1 || z < 1 || x > 65536 || y > 65536 || z > 65536) return 0;
    *m = (int)x, *k = (int)y, *n = (int)z;
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: limits THREADS SECONDS copy:MIB|read:MIB|sgemm:N|sgemm:MxKxN|"
                        "dnnl_sgemm:N|dnnl_sgemm:MxKxN...\n");
        return 2;
    }
    int t = atoi(argv[1]);
    double seconds = atof(argv[2]);
    if (t < 1 || t > MAX_THREADS || !(seconds > 0)) {
        fprintf(stderr, "limits: THREADS must be 1..%d and SECONDS > 0\n", MAX_THREADS);
        return 2;
    }
    for (int i = 3; i < argc; i++) {
        long v;
        int m, k, n;
        if (sscanf(argv[i], "copy:%ld", &v) == 1 && v > 0)
            bench_stream(t, (size_t)v, seconds, 0);
        else if (sscanf(argv[i], "read:%ld", &v) == 1 && v > 0)
            bench_stream(t, (size_t)v, seconds, 1);
        else if (!strncmp(argv[i], "sgemm:", 6) && parse_shape(argv[i] + 6, &m, &k, &n))
            bench_sgemm(LIB_OPENBLAS, t, m, k, n, seconds);
#ifdef LIMITS_DNNL
        else if (!strncmp(argv[i], "dnnl_sgemm:", 11) && parse_shape(argv[i] + 11, &m, &k, &n))
            bench_sgemm(LIB_DNNL, t, m, k, n, seconds);
        else if (!strncmp(argv[i], "dnnl_matmul:", 12) && parse_shape(argv[i] + 12, &m, &k, &n))
            bench_sgemm(LIB_DNNL_MATMUL, t, m, k, n, seconds);
        else if (!strncmp(argv[i], "sgemm_split:", 12) && parse_shape(argv[i] + 12, &m, &k, &n))
            bench_sgemm(LIB_OPENBLAS_SPLIT, t, m, k, n, seconds);
#endif
        else {
            fprintf(stderr,
                    "limits: expected copy:MIB, read:MIB, sgemm:N or sgemm:MxKxN%s, got '%s'\n",
#ifdef LIMITS_DNNL
                    " (or dnnl_sgemm:, dnnl_matmul:, sgemm_split: the same)",
#else
                    " (dnnl_sgemm:, dnnl_matmul:, sgemm_split: need a build with -DLIMITS_DNNL "
                    "-ldnnl)",
#endif
                    argv[i]);
            return 2;
        }
        fflush(stdout);
    }
    return 0;
}
