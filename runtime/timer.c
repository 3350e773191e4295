/* Monotonic time and the summary --bench prints. */
#include "tgcrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int64_t rt_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t rt_now_us(void) {
    return rt_now_ns() / 1000;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

RtBenchStats rt_bench_stats(double *samples_us, size_t n) {
    RtBenchStats s = {n, 0, 0, 0};
    if (!n) return s;
    qsort(samples_us, n, sizeof *samples_us, cmp_double);
    s.min_us = samples_us[0];
    s.max_us = samples_us[n - 1];
    s.median_us = n % 2 ? samples_us[n / 2] : (samples_us[n / 2 - 1] + samples_us[n / 2]) / 2;
    return s;
}

char *rt_bench_format(const RtBenchStats *s, char *buf, size_t cap) {
    snprintf(buf, cap, "bench: runs=%zu median_us=%.1f min_us=%.1f max_us=%.1f", s->runs,
             s->median_us, s->min_us, s->max_us);
    return buf;
}
