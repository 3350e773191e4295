/* `tgc report --train --checkpoint auto`: segments per repeated block.
 *
 * A segment is one call of a def that the graph calls more than once (a
 * transformer layer, a residual block): the outermost such call a value's
 * body sits in (Value.call, set by frontend/tg/build_module.c; a value a
 * later pass made, such as a batch norm's training form, belongs to its
 * operands' segment when they all agree).
 * Recomputing a segment keeps the values that leave it (those read in the
 * forward pass outside it, and outputs), in particular its output, the next
 * segment's input, and recomputes in the backward pass, from its own kept
 * input, the values inside it that the backward pass reads (and what they
 * are computed from).
 *
 * Choosing: each segment frees about the bytes of its values the backward
 * reads and costs the FLOPs of recomputing them. Segments are taken in the
 * order of the most bytes per FLOP, the forward's earliest first among
 * equals (identical blocks are equals; their activations live longest);
 * the estimate (the first k whose freed bytes cover the excess) is
 * measured, then a bisection over k finds the fewest that fit. A handful
 * of compilations, each measured as report_checkpoint_search's are. */
#include <stdlib.h>
#include <string.h>

#include "driver/report_checkpoint.h"
#include "driver/report_train.h"
#include "passes/flops.h"
#include "passes/schedule.h"
#include "passes/train.h"

typedef struct Seg {
    const DefCall *call;
    int first;            /* the position of its first value: the forward's order */
    int *ids, n;          /* the values recomputed */
    const char **names;   /* theirs */
    int64_t bytes, flops; /* the bytes of those the backward reads; the FLOPs of all */
} Seg;

static int by_pointer(const void *a, const void *b) {
    uintptr_t x = (uintptr_t) * (const DefCall *const *)a,
              y = (uintptr_t) * (const DefCall *const *)b;
    return (x > y) - (x < y);
}

static int by_def(const void *a, const void *b) {
    return strcmp((*(const DefCall *const *)a)->def, (*(const DefCall *const *)b)->def);
}

/* Most bytes per FLOP first (cross-multiplied in double: no overflow),
 * then the forward's earliest. */
static int by_worth(const void *a, const void *b) {
    const Seg *x = a, *y = b;
    double l = (double)x->bytes * (double)(y->flops + 1),
           r = (double)y->bytes * (double)(x->flops + 1);
    if (l != r) return l < r ? 1 : -1;
    return x->first - y->first;
}

/* The defs called more than once: *rep (sorted DefCall pointers of those
 * calls' defs, by name) holds one call of each; repeated() looks a def up. */
typedef struct Repeats {
    const DefCall **calls; /* every distinct call, sorted by def name */
    int n;
} Repeats;

static bool repeated(const Repeats *r, const char *def) {
    int lo = 0, hi = r->n, first = -1;
    while (lo < hi) { /* the first call of def */
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(r->calls[mid]->def, def);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    first = lo;
    return first + 1 < r->n && !strcmp(r->calls[first]->def, def) &&
           !strcmp(r->calls[first + 1]->def, def);
}

/* Every distinct call, its ancestors included. */
static void collect_calls(Arena *a, const Graph *g, Repeats *r) {
    int cap = 0, n = 0;
    for (int i = 0; i < g->nvalues; i++)
        for (const DefCall *c = g->values[i]->call; c && c->def; c = c->up)
            cap++;
    const DefCall **all = ARENA_ARRAY(a, const DefCall *, cap + 1);
    for (int i = 0; i < g->nvalues; i++)
        for (const DefCall *c = g->values[i]->call; c && c->def; c = c->up)
            all[n++] = c;
    qsort(all, (size_t)n, sizeof *all, by_pointer);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!m || all[m - 1] != all[i]) all[m++] = all[i];
    qsort(all, (size_t)m, sizeof *all, by_def);
    r->calls = all;
    r->n = m;
}

/* The segment of a call: its outermost ancestor (itself included) whose
 * def is called more than once; NULL when none is. */
static const DefCall *segment_of(const Repeats *r, const DefCall *c) {
    const DefCall *s = NULL;
    for (; c && c->def; c = c->up)
        if (repeated(r, c->def)) s = c;
    return s;
}

/* The segments of r0's graph, in the forward's order; returns how many. */
static int find_segments(Arena *a, const Report *r0, Seg **out) {
    const Graph *g = r0->g;
    int n = g->nvalues;
    Repeats rep;
    collect_calls(a, g, &rep);
    const DefCall **key = ARENA_ARRAY(a, const DefCall *, n + 1);
    bool *fwd = ARENA_ARRAY(a, bool, n + 1);
    for (int i = 0; i < n; i++) {
        const Value *v = g->values[i];
        fwd[i] = !v->dead && v->id < g->backward_id;
        if (!fwd[i]) continue;
        if (v->call) {
            key[i] = segment_of(&rep, v->call);
            continue;
        }
        /* made by a pass: its operands' segment when they agree */
        const DefCall *k = NULL;
        bool agree = v->nin > 0;
        for (int j = 0; j < v->nin && agree; j++) {
            const Value *o = v->in[j];
            const DefCall *ko = o->order < n && g->values[o->order] == o ? key[o->order] : NULL;
            if (!ko || (k && ko != k)) agree = false;
            k = ko;
        }
        key[i] = agree ? k : NULL;
    }
    /* leaves: read outside its segment in the forward, or an output (a
     * view read outside makes what it views leave too: going down, a
     * view's operands are reached after it). */
    bool *leaves = ARENA_ARRAY(a, bool, n + 1), *bwd = ARENA_ARRAY(a, bool, n + 1);
    for (int i = 0; i < n; i++) {
        const Value *u = g->values[i];
        if (u->dead) continue;
        if (u->is_output) leaves[i] = true;
        for (int j = 0; j < u->nin; j++) {
            int o = u->in[j]->order;
            if (o >= n || g->values[o] != u->in[j]) continue;
            if (!fwd[i])
                bwd[o] = true;
            else if (key[o] != key[i])
                leaves[o] = true;
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        const Value *v = g->values[i];
        if (!leaves[i] || !(op_info(v->op)->flags & (OPF_VIEW | OPF_MAYBE_VIEW))) continue;
        for (int j = 0; j < v->nin; j++)
            if (v->in[j]->order < n && g->values[v->in[j]->order] == v->in[j])
                leaves[v->in[j]->order] = true;
    }
    /* need: recomputed, read by the backward or by a needed value */
    bool *need = ARENA_ARRAY(a, bool, n + 1);
    for (int i = n - 1; i >= 0; i--) {
        const Value *v = g->values[i];
        if (!fwd[i] || !key[i] || leaves[i] || !checkpoint_recomputable(g, v)) continue;
        need[i] = need[i] || bwd[i];
        if (!need[i]) continue;
        for (int j = 0; j < v->nin; j++) {
            int o = v->in[j]->order;
            if (o < n && g->values[o] == v->in[j] && key[o] == key[i]) need[o] = true;
        }
    }
    /* one Seg per key, in the order of their first values */
    Seg *s = ARENA_ARRAY(a, Seg, rep.n + 1);
    int ns = 0;
    const DefCall **seen = ARENA_ARRAY(a, const DefCall *, rep.n + 1);
    for (int i = 0; i < n; i++) {
        if (!fwd[i] || !key[i]) continue;
        int k = 0;
        while (k < ns && seen[k] != key[i]) /* few segments: a scan */
            k++;
        if (k == ns) {
            seen[ns] = key[i];
            s[ns++] = (Seg){.call = key[i], .first = i};
        }
        if (!need[i] || leaves[i] || !checkpoint_recomputable(g, g->values[i])) continue;
        if (!s[k].ids) {
            s[k].ids = ARENA_ARRAY(a, int, n - i);
            s[k].names = ARENA_ARRAY(a, const char *, n - i);
        }
        s[k].names[s[k].n] = value_name(a, g->values[i]);
        s[k].ids[s[k].n++] = g->values[i]->id;
        if (bwd[i]) s[k].bytes += schedule_value_bytes(g->values[i], r0->dt[i]);
        s[k].flops += flops_value(g->values[i]);
    }
    int m = 0;
    for (int k = 0; k < ns; k++)
        if (s[k].n && s[k].bytes) s[m++] = s[k];
    *out = s;
    return m;
}

/* The first k segments' values (and their names when names). */
static int take(const Seg *s, int k, int *ids, const char **names) {
    int n = 0;
    for (int i = 0; i < k; i++) {
        memcpy(ids + n, s[i].ids, sizeof(int) * (size_t)s[i].n);
        if (names) memcpy(names + n, s[i].names, sizeof(char *) * (size_t)s[i].n);
        n += s[i].n;
    }
    return n;
}

/* lo + ceil(excess / per), at most cap. */
static int secant(int lo, int64_t excess, int64_t per, int cap) {
    int64_t k = (excess + per - 1) / per;
    return k >= cap - lo ? cap : lo + (int)k;
}

bool report_checkpoint_blocks(Arena *a, const CkptInput *in, const Program *prog, const Report *r0,
                              CkptResult *out) {
    Seg *s;
    int ns = find_segments(a, r0, &s);
    if (ns < 2) return false;
    qsort(s, (size_t)ns, sizeof *s, by_worth);
    int total = 0;
    for (int i = 0; i < ns; i++)
        total += s[i].n;
    int *ids = ARENA_ARRAY(a, int, total + 1);
    int64_t excess = report_fit_bytes(r0) - in->budget, freed = 0;
    int est = 0;
    while (est < ns && freed < excess)
        freed += s[est++].bytes;
    /* lo segments do not fit (0: the plain step), hi fit (-1: none yet).
     * The peak falls about linearly in k (identical blocks): each next
     * probe is the secant's k through the last miss and the last fit (or
     * the plain step), inside (lo, hi); after three, bisection. */
    int lo = 0, hi = -1, probe = est < 1 ? 1 : est > ns ? ns : est, tries = 0;
    int64_t lo_peak = report_fit_bytes(r0), hi_peak = 0, hi_flops = 0;
    for (;;) {
        int64_t peak = 0, flops = 0;
        out->evaluations++;
        tries++;
        int n = take(s, probe, ids, NULL);
        bool ok = report_checkpoint_measure(in, prog, ids, n, &peak, &flops);
        if (ok && peak <= in->budget) {
            hi = probe, hi_peak = peak, hi_flops = flops;
        } else {
            int64_t drop = lo_peak - (ok ? peak : lo_peak);
            int64_t at = lo;
            lo = probe;
            if (ok) lo_peak = peak;
            if (hi < 0) { /* extrapolate from (at, before) through (lo, lo_peak) */
                if (lo >= ns) break;
                int64_t per = drop > 0 ? drop / (lo - at) : 0;
                probe = per > 0 && tries <= 3 ? secant(lo, lo_peak - in->budget, per, ns)
                                              : lo + 1 + (ns - lo) / 4;
                if (probe > ns) probe = ns;
                continue;
            }
        }
        if (hi - lo <= 1) break;
        int64_t per = (lo_peak - hi_peak) / (hi - lo);
        probe = per > 0 && tries <= 3 ? secant(lo, lo_peak - in->budget, per, hi - 1)
                                      : lo + (hi - lo) / 2;
        if (probe <= lo) probe = lo + 1;
        if (probe >= hi) probe = hi - 1;
    }
    if (hi < 0) return false;
    out->names = ARENA_ARRAY(a, const char *, total + 1);
    out->n = take(s, hi, ids, out->names);
    out->ids = ids;
    out->peak_after = hi_peak;
    out->extra_flops = hi_flops - r0->flops;
    out->fits = true;
    out->segments = out->segment_len = 0;
    out->nblocks = hi;
    out->blocks = ARENA_ARRAY(a, CkptBlock, hi + 1);
    for (int i = 0; i < hi; i++)
        out->blocks[i] = (CkptBlock){
            .path = s[i].call->path, .def = s[i].call->def, .values = s[i].n, .flops = s[i].flops};
    return true;
}
