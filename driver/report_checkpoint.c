/* `tgc report --train --checkpoint auto`: which activations to recompute
 * in the backward pass so that the step's peak fits the budget. Greedy and
 * measured: the forward values the backward pass reads are tried largest
 * first, each kept only when the planned peak (a full compilation and
 * memory plan with that value recomputed, passes/checkpoint.c) goes down,
 * until the peak fits or no candidate is left. */
#include <stdlib.h>
#include <string.h>

#include "driver/report_checkpoint.h"
#include "passes/flops.h"
#include "passes/schedule.h"

#define CKPT_MAX_TRIES 64

typedef struct Cand {
    int id;
    int64_t bytes;
    const char *name;
} Cand;

static int by_bytes(const void *a, const void *b) {
    const Cand *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : x->id - y->id;
}

/* The peak and FLOPs with the given values recomputed; false when the
 * graph does not compile so. */
static bool measure(const CkptInput *in, const int *ids, int n, int64_t *peak, int64_t *flops) {
    Arena a = {0};
    Diag d;
    diag_init(&d, NULL);
    TrainSpec t = in->o->train;
    t.recompute = ids;
    t.nrecompute = n;
    PrecisionPolicy pol = options_policy(in->o);
    Graph *g = tgc_frontend_train(&a, &d, in->file, in->o->dims, in->o->ndims, &pol, &t);
    bool ok = g && !d.errors;
    if (ok) {
        Report *r = report_build(&a, g, in->prec, in->target);
        *peak = r->peak_bytes;
        *flops = r->flops;
    }
    arena_free(&a);
    return ok;
}

bool report_checkpoint_search(Arena *a, const CkptInput *in, const Report *r0, CkptResult *out) {
    memset(out, 0, sizeof *out);
    const Graph *g = r0->g;
    out->peak_before = out->peak_after = r0->peak_bytes;
    out->flops_before = r0->flops;
    if (r0->peak_bytes <= in->budget) {
        out->fits = true;
        return true;
    }
    bool *read = ARENA_ARRAY(a, bool, g->nvalues + 1);
    for (int i = 0; i < g->nvalues; i++) {
        const Value *u = g->values[i];
        if (u->dead || u->id < g->backward_id) continue;
        for (int k = 0; k < u->nin; k++)
            read[u->in[k]->order] = true;
    }
    Cand *c = ARENA_ARRAY(a, Cand, g->nvalues + 1);
    int nc = 0;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (!read[i] || v->dead || !checkpoint_candidate(g, v)) continue;
        c[nc++] = (Cand){v->id, schedule_value_bytes(v, r0->dt[i]), value_name(a, v)};
    }
    qsort(c, (size_t)nc, sizeof *c, by_bytes);
    int *ids = ARENA_ARRAY(a, int, nc + 1);
    const char **names = ARENA_ARRAY(a, const char *, nc + 1);
    int n = 0;
    int64_t best = r0->peak_bytes, flops = r0->flops;
    for (int k = 0; k < nc && k < CKPT_MAX_TRIES && best > in->budget; k++) {
        ids[n] = c[k].id;
        int64_t peak, f;
        out->evaluations++;
        if (measure(in, ids, n + 1, &peak, &f) && peak < best) {
            best = peak;
            flops = f;
            names[n++] = c[k].name;
        }
    }
    out->ids = ids;
    out->names = names;
    out->n = n;
    out->peak_after = best;
    out->extra_flops = flops - r0->flops;
    out->fits = best <= in->budget;
    return true;
}
