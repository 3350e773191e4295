/* The arena planner (see memplan.h for what it requires, gives, and how). */
#include "passes/memplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t memplan_align(int64_t bytes) {
    return sat_mul((sat_add(bytes, MEMPLAN_ALIGN - 1)) / MEMPLAN_ALIGN, MEMPLAN_ALIGN);
}

#define PERTURB_WORK 5e7 /* slot comparisons the perturbed orders may spend */
#define PERTURB_MAX 32

/* A slot: one region of the arena, held by one buffer or by a chain of
 * buffers that take it over in place. */
typedef struct Slot {
    int64_t size, offset;
    int first, last;
    int64_t key; /* ordering key of the current strategy */
} Slot;

static int find(int *parent, int x) {
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

/* In-place reuse: output w of an elementwise kernel at step i may take the
 * slot of operand r when r is an intermediate owner read directly (not
 * through a view: a transposed or broadcast read would be overwritten
 * before it is read), dies at i, has w's size and element count, is read
 * by no view in this kernel, and has not already been taken over. */
static void plan_inplace(const Schedule *s, MemPlan *p, int *parent) {
    bool *taken = calloc((size_t)s->nbufs + 1, 1);
    for (int i = 0; i < s->nsteps; i++) {
        const SchedStep *st = &s->steps[i];
        if (!st->elementwise) continue;
        for (int k = 0; k < st->nwrites; k++) {
            const Value *w = st->writes[k];
            int bw = s->buf_of[w->order];
            if (s->bufs[bw].kind != BUF_INTERMEDIATE || p->inplace_of[bw] >= 0) continue;
            for (int j = 0; j < st->nreads; j++) {
                const Value *r = st->reads[j];
                if (r->is_view || r->storage != r) continue;
                int br = s->buf_of[r->order];
                const SchedBuffer *b = &s->bufs[br];
                if (b->kind != BUF_INTERMEDIATE || b->last != i || taken[br] || br == bw) continue;
                if (b->bytes != s->bufs[bw].bytes || value_numel(r) != value_numel(w)) continue;
                /* Same index, same address: both dense in one order (the
                 * layout pass makes some channels-last). */
                if (!(layout_is_contiguous(r) && layout_is_contiguous(w)) &&
                    (!value_same_shape(r, w) ||
                     memcmp(r->strides, w->strides, sizeof(int64_t) * (size_t)r->ndim)))
                    continue;
                bool viewed = false;
                for (int m = 0; m < st->nreads; m++)
                    if (st->reads[m] != r && st->reads[m]->storage == r) viewed = true;
                if (viewed) continue;
                taken[br] = true;
                p->inplace_of[bw] = br;
                parent[bw] = find(parent, br);
                p->ninplace++;
                break;
            }
        }
    }
    free(taken);
}

static const Slot *sort_slots;
static int cmp_slot(const void *a, const void *b) {
    const Slot *x = &sort_slots[*(const int *)a], *y = &sort_slots[*(const int *)b];
    if (x->key != y->key) return x->key > y->key ? -1 : 1;
    if (x->size != y->size) return x->size > y->size ? -1 : 1;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

/* Places the slots in the order of their keys (largest first): each goes
 * in the smallest gap, between placed slots whose lifetimes overlap it,
 * that holds it; or above all of them. Returns the arena size. */
static int64_t place(Slot *slots, int n, int *order, int *placed) {
    for (int i = 0; i < n; i++)
        order[i] = i;
    sort_slots = slots;
    qsort(order, (size_t)n, sizeof *order, cmp_slot);
    int nplaced = 0;
    int64_t arena = 0;
    for (int oi = 0; oi < n; oi++) {
        Slot *s = &slots[order[oi]];
        s->offset = 0;
        if (s->size == 0) continue;
        int64_t prev_end = 0, best = -1, best_gap = INT64_MAX;
        int at = nplaced; /* insertion index, by offset */
        for (int k = 0; k < nplaced; k++) {
            const Slot *q = &slots[placed[k]];
            if (q->last < s->first || q->first > s->last) continue;
            int64_t gap = q->offset - prev_end;
            if (gap >= s->size && gap < best_gap) best = prev_end, best_gap = gap;
            if (q->offset + q->size > prev_end) prev_end = q->offset + q->size;
        }
        s->offset = best >= 0 ? best : prev_end;
        for (int k = 0; k < nplaced; k++)
            if (slots[placed[k]].offset > s->offset) {
                at = k;
                break;
            }
        memmove(placed + at + 1, placed + at, sizeof *placed * (size_t)(nplaced - at));
        placed[at] = order[oi];
        nplaced++;
        if (s->offset + s->size > arena) arena = s->offset + s->size;
    }
    return arena;
}

/* Range maximum over step_live by a sparse table: the breadth order's key
 * is the largest live total during a slot's lifetime. */
static void breadth_keys(Slot *slots, int n, const int64_t *live, int nsteps) {
    int levels = 1;
    while ((1 << levels) <= nsteps)
        levels++;
    int64_t *t = malloc(sizeof *t * (size_t)levels * (size_t)(nsteps > 0 ? nsteps : 1));
    for (int i = 0; i < nsteps; i++)
        t[i] = live[i];
    for (int l = 1; l < levels; l++)
        for (int i = 0; i + (1 << l) <= nsteps; i++) {
            int64_t a = t[(size_t)(l - 1) * nsteps + i],
                    b = t[(size_t)(l - 1) * nsteps + i + (1 << (l - 1))];
            t[(size_t)l * nsteps + i] = a > b ? a : b;
        }
    for (int i = 0; i < n; i++) {
        int lo = slots[i].first, hi = slots[i].last, len = hi - lo + 1, l = 0;
        while ((2 << l) <= len)
            l++;
        int64_t a = t[(size_t)l * nsteps + lo], b = t[(size_t)l * nsteps + hi - (1 << l) + 1];
        slots[i].key = a > b ? a : b;
    }
    free(t);
}

MemPlan *memplan_plan(Arena *a, const Schedule *s) {
    MemPlan *p = ARENA_NEW(a, MemPlan);
    int nb = s->nbufs, nbx = nb > 0 ? nb : 1;
    p->nbufs = nb;
    p->nsteps = s->nsteps;
    p->offset = ARENA_ARRAY(a, int64_t, nbx);
    p->size = ARENA_ARRAY(a, int64_t, nbx);
    p->inplace_of = ARENA_ARRAY(a, int, nbx);
    p->slot = ARENA_ARRAY(a, int, nbx);
    p->step_live = ARENA_ARRAY(a, int64_t, s->nsteps > 0 ? s->nsteps : 1);
    p->peak_step = -1;
    p->strategy = "greedy by size";
    int *parent = malloc(sizeof *parent * (size_t)nbx);
    for (int i = 0; i < nb; i++) {
        parent[i] = i;
        p->inplace_of[i] = -1;
        p->offset[i] = -1;
        p->slot[i] = -1;
    }
    plan_inplace(s, p, parent);

    /* Slots: one per chain of in-place buffers; the lifetime is the union. */
    int nslots = 0;
    int *slot_of_root = malloc(sizeof(int) * (size_t)nbx);
    for (int i = 0; i < nb; i++)
        slot_of_root[i] = -1;
    Slot *slots = calloc((size_t)nbx, sizeof *slots);
    for (int i = 0; i < nb; i++) {
        const SchedBuffer *b = &s->bufs[i];
        if (b->kind != BUF_INTERMEDIATE) continue;
        p->size[i] = memplan_align(b->bytes);
        p->unplanned_bytes = sat_add(p->unplanned_bytes, p->size[i]);
        int r = find(parent, i);
        if (slot_of_root[r] < 0) {
            slot_of_root[r] = nslots;
            slots[nslots++] = (Slot){.size = 0, .first = b->first, .last = b->last};
        }
        Slot *sl = &slots[slot_of_root[r]];
        p->slot[i] = slot_of_root[r];
        if (p->size[i] > sl->size) sl->size = p->size[i];
        if (b->first < sl->first) sl->first = b->first;
        if (b->last > sl->last) sl->last = b->last;
    }

    /* Live bytes per step (a difference array over the slots' lifetimes),
     * and the lower bound: their maximum. */
    int64_t *diff = calloc((size_t)s->nsteps + 1, sizeof *diff);
    for (int i = 0; i < nslots; i++) {
        diff[slots[i].first] += slots[i].size;
        diff[slots[i].last + 1] -= slots[i].size;
    }
    int64_t run = 0;
    for (int i = 0; i < s->nsteps; i++) {
        run += diff[i];
        p->step_live[i] = run;
        if (p->peak_step < 0 || run > p->lower_bound_bytes)
            p->lower_bound_bytes = run, p->peak_step = i;
    }
    free(diff);

    /* Orders: by size, by breadth, then sizes perturbed at random (a fixed
     * seed, so plans are reproducible) while the work stays under about
     * PERTURB_WORK slot comparisons; the smallest arena wins, the first on
     * a tie. Each stops as soon as an order reaches the lower bound. */
    int *order = malloc(sizeof(int) * (size_t)(nslots + 1));
    int *placed = malloc(sizeof(int) * (size_t)(nslots + 1));
    int64_t *best = malloc(sizeof(int64_t) * (size_t)(nslots + 1));
    for (int i = 0; i < nslots; i++)
        slots[i].key = slots[i].size;
    p->arena_bytes = place(slots, nslots, order, placed);
    for (int i = 0; i < nslots; i++)
        best[i] = slots[i].offset;
    double n2 = (double)nslots * (double)nslots;
    int restarts = n2 > 0 ? (int)(PERTURB_WORK / n2) : 0;
    if (restarts > PERTURB_MAX) restarts = PERTURB_MAX;
    uint64_t rng = 0x9E3779B97F4A7C15ULL;
    for (int k = -1; k < restarts && nslots > 1 && p->arena_bytes > p->lower_bound_bytes; k++) {
        if (k < 0) {
            breadth_keys(slots, nslots, p->step_live, s->nsteps);
        } else {
            for (int i = 0; i < nslots; i++) {
                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                slots[i].key = (int64_t)((double)slots[i].size *
                                         (0.5 + (double)(rng >> 11) / 9007199254740992.0));
            }
        }
        int64_t arena = place(slots, nslots, order, placed);
        if (arena < p->arena_bytes) {
            p->arena_bytes = arena;
            p->strategy = k < 0 ? "greedy by breadth" : "greedy by size, perturbed";
            for (int i = 0; i < nslots; i++)
                best[i] = slots[i].offset;
        }
    }
    for (int i = 0; i < nb; i++)
        if (p->slot[i] >= 0) p->offset[i] = best[p->slot[i]];
    free(best);
    free(order);
    free(placed);
    free(slots);
    free(slot_of_root);
    free(parent);
    return p;
}

static bool fail(char *why, size_t n, const char *fmt, long long a, long long b) {
    if (why && n) snprintf(why, n, fmt, a, b);
    return false;
}

bool memplan_verify(const MemPlan *p, const Schedule *s, char *why, size_t nwhy) {
    int nb = s->nbufs;
    int64_t *live = calloc((size_t)s->nsteps + 1, sizeof *live);
    bool ok = true;
    for (int i = 0; i < nb && ok; i++) {
        const SchedBuffer *b = &s->bufs[i];
        if (b->kind != BUF_INTERMEDIATE) {
            if (p->offset[i] != -1)
                ok = fail(why, nwhy, "buffer %lld is not an intermediate but has offset %lld", i,
                          p->offset[i]);
            continue;
        }
        if (p->offset[i] < 0 || p->offset[i] % MEMPLAN_ALIGN || p->size[i] < b->bytes ||
            p->offset[i] + p->size[i] > p->arena_bytes)
            ok = fail(why, nwhy,
                      "buffer %lld at offset %lld lies outside the arena or is misaligned", i,
                      p->offset[i]);
        if (b->first < 0 || b->last < b->first || b->last >= s->nsteps)
            ok = fail(why, nwhy, "buffer %lld has no valid live range (first %lld)", i, b->first);
    }
    /* Pairwise: live at one step and overlapping bytes is allowed only for
     * an in-place hand-over, which shares exactly one step. */
    for (int i = 0; i < nb && ok; i++) {
        const SchedBuffer *x = &s->bufs[i];
        if (x->kind != BUF_INTERMEDIATE || !p->size[i]) continue;
        for (int j = i + 1; j < nb && ok; j++) {
            const SchedBuffer *y = &s->bufs[j];
            if (y->kind != BUF_INTERMEDIATE || !p->size[j]) continue;
            if (x->last < y->first || y->last < x->first) continue;
            if (p->offset[i] + p->size[i] <= p->offset[j] ||
                p->offset[j] + p->size[j] <= p->offset[i])
                continue;
            bool handover = (p->inplace_of[j] == i && x->last == y->first) ||
                            (p->inplace_of[i] == j && y->last == x->first);
            if (!handover)
                ok = fail(why, nwhy, "buffers %lld and %lld are live together and overlap", i, j);
        }
    }
    /* The live totals and the lower bound, recomputed from the buffers:
     * a hand-over step counts the shared slot once. */
    for (int i = 0; i < nb && ok; i++) {
        const SchedBuffer *b = &s->bufs[i];
        if (b->kind != BUF_INTERMEDIATE) continue;
        for (int t = b->first; t <= b->last; t++)
            if (!(t == b->first && p->inplace_of[i] >= 0)) live[t] += p->size[i];
    }
    int64_t lb = 0;
    for (int t = 0; t < s->nsteps && ok; t++) {
        if (live[t] != p->step_live[t])
            ok = fail(why, nwhy, "step %lld: live bytes %lld disagree with the plan", t, live[t]);
        if (live[t] > lb) lb = live[t];
    }
    if (ok && lb != p->lower_bound_bytes)
        ok = fail(why, nwhy, "lower bound %lld, recomputed %lld", p->lower_bound_bytes, lb);
    if (ok && p->arena_bytes < p->lower_bound_bytes)
        ok = fail(why, nwhy, "arena %lld below the lower bound %lld", p->arena_bytes,
                  p->lower_bound_bytes);
    free(live);
    return ok;
}
