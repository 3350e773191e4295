/* bf16 matrix products: rt_matmul's bf16 path (the AVX-512 BF16 kernel of
 * runtime/matmul_bf16.c where the CPU has it) against the path it
 * replaces, widen A and B to f32, cblas_sgemm, round C to bf16 (what
 * matmul.c did for every bf16 product), and against cblas_sgemm alone on
 * data already in f32 (the f32 build's cost). Each time is the fastest of
 * a block of runs of that method alone, after a pause: OpenBLAS's workers
 * spin (sched_yield) for a while after each call and would otherwise take
 * the cores from the kernel's pool threads.
 *
 *   cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -Iruntime bench/bf16_gemm.c \
 *      $(build/tgc compile --print-link-line) -o bf16_gemm
 *   ./bf16_gemm [threads] [MxNxK ...]     # default: 2 threads, the shapes below
 *
 * "B^T" is B read as a transposed [n, k] matrix (x @ W.T of nn.Linear). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tgcrt.h"

typedef struct Problem {
    int64_t m, n, k;
    uint16_t *a, *b, *c;
    float *af, *bf, *cf;
    RtPool *pool;
    bool bt; /* B stored as [n, k] */
} Problem;

static void run_kernel(Problem *p) {
    RtMatmulDesc d = {.dtype = RT_BF16,
                      .m = p->m,
                      .n = p->n,
                      .k = p->k,
                      .a_rs = p->k,
                      .a_cs = 1,
                      .b_rs = p->bt ? 1 : p->n,
                      .b_cs = p->bt ? p->k : 1,
                      .c_rs = p->n,
                      .c_cs = 1};
    rt_matmul(&d, p->a, p->b, p->c, p->pool);
}

/* The old path, as matmul.c's matmul_half did it. */
static void run_convert(Problem *p) {
    rt_bf16_to_f32_n(p->a, p->af, (size_t)(p->m * p->k));
    rt_bf16_to_f32_n(p->b, p->bf, (size_t)(p->k * p->n));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, p->bt ? CblasTrans : CblasNoTrans, (int)p->m,
                (int)p->n, (int)p->k, 1.0f, p->af, (int)p->k, p->bf, p->bt ? (int)p->k : (int)p->n,
                0.0f, p->cf, (int)p->n);
    rt_f32_to_bf16_n(p->cf, p->c, (size_t)(p->m * p->n));
}

static void run_sgemm(Problem *p) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, p->bt ? CblasTrans : CblasNoTrans, (int)p->m,
                (int)p->n, (int)p->k, 1.0f, p->af, (int)p->k, p->bf, p->bt ? (int)p->k : (int)p->n,
                0.0f, p->cf, (int)p->n);
}

static double time_ms(void (*f)(Problem *), Problem *p) {
    int64_t t0 = rt_now_ns();
    f(p);
    return (double)(rt_now_ns() - t0) / 1e6;
}

static double best_ms(void (*f)(Problem *), Problem *p, int reps) {
    struct timespec pause = {0, 300000000};
    nanosleep(&pause, NULL);
    f(p); /* warm-up */
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t = time_ms(f, p);
        best = t < best ? t : best;
    }
    return best;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    int64_t shapes[16][3] = {
        {1, 4096, 4096}, {64, 768, 768}, {512, 1024, 1024}, {2048, 2048, 2048}};
    int nshapes = 4;
    if (argc > 2) {
        nshapes = 0;
        for (int i = 2; i < argc && nshapes < 16; i++, nshapes++)
            if (sscanf(argv[i], "%ldx%ldx%ld", &shapes[nshapes][0], &shapes[nshapes][1],
                       &shapes[nshapes][2]) != 3)
                return fprintf(stderr, "usage: bf16_gemm [threads] [MxNxK ...]\n"), 2;
    }
    RtPool *pool;
    RtError err;
    if (rt_pool_create(threads, &pool, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    rt_blas_set_threads(threads);
    printf("threads=%d; ms, fastest of a block of runs; GFLOP/s = 2mnk / time\n", threads);
    printf("| m x n x k | B | bf16 kernel ms | convert+sgemm ms | speedup | f32 sgemm ms | kernel "
           "GFLOP/s |\n|---|---|---|---|---|---|---|\n");
    for (int s = 0; s < nshapes; s++)
        for (int bt = 0; bt < 2; bt++) {
            Problem p = {.m = shapes[s][0], .n = shapes[s][1], .k = shapes[s][2]};
            p.pool = pool, p.bt = bt;
            size_t na = (size_t)(p.m * p.k), nb = (size_t)(p.k * p.n), nc = (size_t)(p.m * p.n);
            p.a = malloc(2 * na), p.b = malloc(2 * nb), p.c = malloc(2 * nc);
            p.af = malloc(4 * na), p.bf = malloc(4 * nb), p.cf = malloc(4 * nc);
            if (!p.a || !p.b || !p.c || !p.af || !p.bf || !p.cf) return fprintf(stderr, "oom\n"), 1;
            for (size_t i = 0; i < na; i++)
                p.a[i] = rt_f32_to_bf16((float)(i % 13) / 13.0f - 0.5f);
            for (size_t i = 0; i < nb; i++)
                p.b[i] = rt_f32_to_bf16((float)(i % 7) / 7.0f - 0.5f);
            rt_bf16_to_f32_n(p.a, p.af, na);
            rt_bf16_to_f32_n(p.b, p.bf, nb);
            double flop = 2.0 * (double)p.m * (double)p.n * (double)p.k;
            int reps = flop > 4e9 ? 4 : flop > 1e8 ? 10 : 40;
            double tk = best_ms(run_kernel, &p, reps), tc = best_ms(run_convert, &p, reps);
            double ts = best_ms(run_sgemm, &p, reps);
            printf("| %ldx%ldx%ld | %s | %.3f | %.3f | %.2fx | %.3f | %.0f |\n", (long)p.m,
                   (long)p.n, (long)p.k, bt ? "B^T" : "B", tk, tc, tc / tk, ts, flop / tk / 1e6);
            free(p.a), free(p.b), free(p.c), free(p.af), free(p.bf), free(p.cf);
        }
    rt_pool_destroy(pool);
    return 0;
}
