/* Which params the CPU runtime releases after preparing convolutions, and
 * the load's peak (report_process.h). The rule is runtime/conv.c's: a
 * constant convolution oneDNN runs (not f64, which runs the direct loop on
 * the params as they are) folds its weight, bias and batch norm and then
 * hands those params' pages back. A param any other kernel reads comes
 * back on that kernel's first read, so it counts as resident. */
#include "driver/report_process.h"

#include <stdlib.h>
#include <string.h>

#include "passes/schedule.h"

/* Whether step s writes a convolution the runtime prepares once. */
static const RtConvDesc *prepared_conv(const CgProgram *cp, const SchedStep *s) {
    for (int w = 0; w < s->nwrites; w++)
        for (int k = 0; k < cp->nconvs; k++)
            if (cp->conv_values[k] == s->writes[w] && cp->convs[k].constant_weights &&
                cp->convs[k].dtype != RT_F64)
                return &cp->convs[k];
    return NULL;
}

void report_process_build(const CgProgram *cp, const DType *dt, bool cuda, ReportProcess *out) {
    memset(out, 0, sizeof *out);
    if (cuda || !cp->nconvs) return;
    const Graph *g = cp->g;
    const Schedule *sc = cp->sched;
    /* By Value.order: 1 read by a prepared conv, 2 read by anything else. */
    unsigned char *seen = calloc((size_t)g->nvalues, 1);
    if (!seen) return;
    for (int i = 0; i < sc->nsteps; i++) {
        const SchedStep *s = &sc->steps[i];
        const RtConvDesc *d = prepared_conv(cp, s);
        for (int j = 0; j < s->nreads; j++) {
            const Value *o = s->reads[j]->storage;
            if (o->op == OP_PARAM) seen[o->order] |= d ? 1 : 2;
        }
        if (d) {
            int64_t plain = d->cout * (d->cin / d->groups) * d->k[0] * d->k[1] * 4;
            if (plain > out->load_plain_bytes) out->load_plain_bytes = plain;
        }
    }
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (v->op != OP_PARAM || v->dead || seen[v->order] != 1 || v->is_output) continue;
        bool out_view = false; /* an output viewing the param copies it after the run */
        for (int k = 0; k < g->noutputs && !out_view; k++)
            out_view = g->outputs[k]->storage == v;
        if (out_view) continue;
        out->released_bytes += schedule_value_bytes(v, dt[v->order]);
        out->nreleased++;
    }
    free(seen);
}
