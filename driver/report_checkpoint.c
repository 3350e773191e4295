/* `tgc report --train --checkpoint auto`: which activations to recompute
 * in the backward pass so that the step's peak fits the budget. Measured:
 * each try builds the graph from the source, parsed once, and runs every
 * pass and the memory plan with those values recomputed
 * (passes/checkpoint.c).
 *
 * First single values, the least recomputation: the forward values the
 * backward pass reads, largest first, each kept only when the peak goes
 * down, until it fits or no candidate is left. When that does not fit,
 * segments, the sqrt(n) rule (Chen et al. 2016): the forward's n
 * recomputable values in graph order are cut into segments of about
 * sqrt(n); the last value of each is kept and the others are recomputed,
 * a segment at a time, from the kept value before it. When that fits, a
 * bisection finds the fewest segments, from the start of the forward
 * (whose activations live longest), that still fit: the least
 * recomputation of that family. */
#include <stdlib.h>
#include <string.h>

#include "driver/report_checkpoint.h"
#include "driver/report_train.h"
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
 * graph does not compile so. Each try builds the parsed program prog
 * afresh: the passes rewrite the graph they are given. */
bool report_checkpoint_measure(const CkptInput *in, const Program *prog, const int *ids, int n,
                               int64_t *peak, int64_t *flops) {
    Arena a = {0};
    Diag d;
    diag_init(&d, NULL);
    TrainSpec t = in->o->train;
    t.recompute = ids;
    t.nrecompute = n;
    PrecisionPolicy pol = options_policy(in->o);
    Graph *g = prog ? tgc_frontend_graph(&a, &d, prog, in->o->dims, in->o->ndims) : NULL;
    bool ok = g && pipeline_prepare(g, &d, &pol, &t) && !d.errors;
    if (ok) {
        Report *r = report_build(&a, g, in->prec, in->target);
        report_train_build(r, in->shard, in->zero);
        *peak = report_fit_bytes(r);
        *flops = r->flops;
    }
    arena_free(&a);
    return ok;
}

/* The ids of the first k segments' recomputed values (all but each
 * segment's last), of f[0..m) cut every len; returns how many. */
static int segment_ids(const Cand *f, int m, int len, int k, int *ids, const char **names) {
    int n = 0;
    for (int i = 0; i < m && i < k * len; i++)
        if ((i + 1) % len != 0) {
            ids[n] = f[i].id;
            names[n++] = f[i].name;
        }
    return n;
}

/* The sqrt(n) segments: true (out filled) when they fit the budget. */
static bool segments(Arena *a, const CkptInput *in, const Program *prog, const Report *r0,
                     CkptResult *out) {
    const Graph *g = r0->g;
    Cand *f = ARENA_ARRAY(a, Cand, g->nvalues + 1);
    int m = 0;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (!v->dead && checkpoint_candidate(g, v)) f[m++] = (Cand){v->id, 0, value_name(a, v)};
    }
    int len = 2;
    while ((int64_t)len * len < m)
        len++;
    int nseg = (m + len - 1) / len;
    int *ids = ARENA_ARRAY(a, int, m + 1);
    const char **names = ARENA_ARRAY(a, const char *, m + 1);
    int64_t peak, flops;
    int n = segment_ids(f, m, len, nseg, ids, names);
    out->evaluations++;
    if (!n || !report_checkpoint_measure(in, prog, ids, n, &peak, &flops) || peak > in->budget)
        return false;
    int lo = 0, hi = nseg; /* hi segments fit; lo do not (0: the plain step) */
    int64_t hi_peak = peak, hi_flops = flops;
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        int k = segment_ids(f, m, len, mid, ids, names);
        out->evaluations++;
        if (report_checkpoint_measure(in, prog, ids, k, &peak, &flops) && peak <= in->budget)
            hi = mid, hi_peak = peak, hi_flops = flops;
        else
            lo = mid;
    }
    out->n = segment_ids(f, m, len, hi, ids, names);
    out->ids = ids;
    out->names = names;
    out->peak_after = hi_peak;
    out->extra_flops = hi_flops - r0->flops;
    out->fits = true;
    out->segment_len = len;
    out->segments = hi;
    return true;
}

bool report_checkpoint_search(Arena *a, const CkptInput *in, const Report *r0, CkptResult *out) {
    memset(out, 0, sizeof *out);
    const Graph *g = r0->g;
    out->peak_before = out->peak_after = report_fit_bytes(r0);
    out->flops_before = r0->flops;
    if (out->peak_before <= in->budget) {
        out->fits = true;
        return true;
    }
    /* Parsed once; every try builds its graph from it. */
    Diag quiet;
    diag_init(&quiet, NULL);
    const Program *prog = tgc_frontend_parse(a, &quiet, in->file);
    if (quiet.errors) prog = NULL;
    /* Segments per repeated block first: a few compilations, where the
     * single values' greedy below takes one per value tried. */
    if (prog && report_checkpoint_blocks(a, in, prog, r0, out)) return true;
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
    int64_t best = out->peak_before, flops = r0->flops;
    for (int k = 0; k < nc && k < CKPT_MAX_TRIES && best > in->budget; k++) {
        ids[n] = c[k].id;
        int64_t peak, f;
        out->evaluations++;
        if (report_checkpoint_measure(in, prog, ids, n + 1, &peak, &f) && peak < best) {
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
    CkptResult seg = *out;
    seg.evaluations = 0;
    if (!out->fits && segments(a, in, prog, r0, &seg)) {
        seg.evaluations += out->evaluations;
        *out = seg;
    } else {
        out->evaluations += seg.evaluations;
    }
    return true;
}
