/* tgc report --cpu (report_cpu.h). The choice is the runtime's own
 * (rt_cpu_best, as rt_cpu_select): among the levels whose checked features
 * this CPU has, the one with the most features. */
#include "driver/report_cpu.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "tgcrt.h"

bool report_cpu_levels(const char *list, ReportCpu *out, char *err, size_t nerr) {
    CgCpuLevels lv;
    const char *checks[CG_MAX_CPU_LEVELS];
    memset(out, 0, sizeof *out);
    out->selected = -1;
    if (!cg_cpu_levels(list, &lv, err, nerr)) return false;
    out->n = lv.n;
    for (int i = 0; i < lv.n; i++) {
        ReportCpuLevel *l = &out->l[i];
        snprintf(l->name, sizeof l->name, "%s", lv.l[i].name);
        snprintf(l->cpu, sizeof l->cpu, "%s", lv.l[i].cpu);
        snprintf(l->checks, sizeof l->checks, "%s", lv.l[i].checks);
        l->runs_here = rt_cpu_has_all(l->checks, l->missing, sizeof l->missing);
        checks[i] = l->checks;
    }
    out->selected = rt_cpu_best(checks, lv.n);
    cg_cpu_levels_free(&lv);
    return true;
}

void report_cpu_text(FILE *out, const ReportCpu *c) {
    if (!c || !c->n) return;
    fprintf(out, "\ncpu levels (--cpu; the program checks them with CPUID before running)\n");
    for (int i = 0; i < c->n; i++) {
        const ReportCpuLevel *l = &c->l[i];
        char label[160];
        if (strcmp(l->name, l->cpu))
            snprintf(label, sizeof label, "%s (%s)", l->name, l->cpu);
        else
            snprintf(label, sizeof label, "%s", l->name);
        fprintf(out, "  %-20s %s\n", label,
                i == c->selected ? "runs on this CPU"
                : l->runs_here   ? "could run on this CPU (a level above is chosen)"
                                 : "not on this CPU");
        if (!l->runs_here) fprintf(out, "  %-20s this CPU lacks: %s\n", "", l->missing);
    }
    if (c->selected < 0)
        fprintf(out, "  this CPU runs none of them: the program would exit 1 naming the missing "
                     "features\n");
}

void report_cpu_json(cJSON *root, const ReportCpu *c) {
    if (!c || !c->n) return;
    cJSON *o = cJSON_AddObjectToObject(root, "cpu");
    cJSON *arr = cJSON_AddArrayToObject(o, "levels");
    for (int i = 0; i < c->n; i++) {
        const ReportCpuLevel *l = &c->l[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", l->name);
        cJSON_AddStringToObject(e, "cpu", l->cpu);
        cJSON_AddStringToObject(e, "features", l->checks);
        cJSON_AddBoolToObject(e, "runs_here", l->runs_here);
        cJSON_AddStringToObject(e, "missing", l->missing);
        cJSON_AddItemToArray(arr, e);
    }
    if (c->selected >= 0)
        cJSON_AddStringToObject(o, "selected", c->l[c->selected].name);
    else
        cJSON_AddNullToObject(o, "selected");
}
