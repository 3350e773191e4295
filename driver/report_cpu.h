/* tgc report --cpu: the CPU levels a CPU build's kernels are compiled for
 * (docs/codegen.md "CPU levels"), what each needs, and which one this
 * machine's CPU would run. */
#ifndef TGC_DRIVER_REPORT_CPU_H
#define TGC_DRIVER_REPORT_CPU_H

#include <stdbool.h>
#include <stdio.h>

#include "codegen/codegen.h"

struct cJSON;

typedef struct ReportCpuLevel {
    char name[64], cpu[64];
    char checks[1024];  /* the features the program checks for this level */
    char missing[1024]; /* those this CPU lacks ("" when it runs here) */
    bool runs_here;
} ReportCpuLevel;

typedef struct ReportCpu {
    int n;
    ReportCpuLevel l[CG_MAX_CPU_LEVELS];
    int selected; /* the level this CPU would run, -1: none (the program exits 1) */
} ReportCpu;

/* Parses --cpu's list (NULL: the host, as tgc build's default) into out.
 * False with the reason in err (a usage error, as tgc build's). */
bool report_cpu_levels(const char *list, ReportCpu *out, char *err, size_t nerr);
void report_cpu_text(FILE *out, const ReportCpu *c);
void report_cpu_json(struct cJSON *root, const ReportCpu *c);

#endif
