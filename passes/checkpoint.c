/* Activation checkpointing (see train.h): forward values the backward pass
 * would read are recomputed there instead of kept. Each chosen value gets
 * a clone of its node, placed just before the first backward node that
 * reads it, and the backward nodes read the clone; the original then dies
 * at its last forward use and the memory planner reuses its space. A
 * chosen value that a chosen value's clone reads is cloned too (before
 * it): a run of chosen values, a segment, is recomputed from the kept
 * values before it. */
#include <stdlib.h>
#include <string.h>

#include "ir/infer.h"
#include "passes/train.h"

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* ids: t->recompute sorted (a segment may name thousands of values). */
static bool chosen(const int *ids, int n, int id) {
    return bsearch(&id, ids, (size_t)n, sizeof *ids, cmp_int) != NULL;
}

bool checkpoint_candidate(const Graph *g, const Value *v) {
    const OpInfo *info = op_info(v->op);
    return v->id < g->backward_id && !(info->flags & (OPF_LEAF | OPF_VIEW | OPF_MAYBE_VIEW)) &&
           !v->ntuple && v->op != OP_SCALAR && !(info->flags & OPF_CREATION);
}

bool checkpoint_recomputable(const Graph *g, const Value *v) {
    const OpInfo *info = op_info(v->op);
    return checkpoint_candidate(g, v) ||
           (v->id < g->backward_id && (info->flags & (OPF_VIEW | OPF_MAYBE_VIEW)) &&
            !(info->flags & OPF_LEAF) && !v->ntuple);
}

/* A tensor argument that names a chosen value with a clone reads the clone
 * instead; true when one did. */
static bool to_clones(Arg *args, int nargs, Value **clone_of, const Graph *g, int n) {
    bool changed = false;
    for (int k = 0; k < nargs; k++) {
        Arg *ar = &args[k];
        if (ar->kind == ARG_TENSOR && ar->t->order < n && clone_of[ar->t->order] &&
            ar->t == g->values[ar->t->order]) {
            ar->t = clone_of[ar->t->order];
            changed = true;
        }
        for (int j = 0; ar->kind == ARG_TENSORS && j < ar->n; j++)
            if (ar->ts[j]->order < n && clone_of[ar->ts[j]->order] &&
                ar->ts[j] == g->values[ar->ts[j]->order]) {
                ar->ts[j] = clone_of[ar->ts[j]->order];
                changed = true;
            }
    }
    return changed;
}

bool pass_checkpoint(Graph *g, Diag *d, const TrainSpec *t) {
    if (!t->nrecompute) return true;
    int n = g->nvalues;
    Arena *a = g->arena;
    InferCtx ic = {.g = g, .d = d};
    int *ids = arena_dup(a, t->recompute, sizeof(int) * (size_t)t->nrecompute);
    qsort(ids, (size_t)t->nrecompute, sizeof *ids, cmp_int);
    bool *pick = ARENA_ARRAY(a, bool, n);
    for (int i = 0; i < n; i++)
        pick[i] = chosen(ids, t->nrecompute, g->values[i]->id) &&
                  checkpoint_recomputable(g, g->values[i]);
    /* first[i]: the position before which value i's clone must exist: its
     * first backward reader, or the first place a clone that reads it is
     * made. A chosen value read by another chosen value's clone is cloned
     * too, so a chain of chosen values (a segment) is recomputed from the
     * kept values before it and the originals all die in the forward. */
    Value **clone_of = ARENA_ARRAY(a, Value *, n);
    int *first = ARENA_ARRAY(a, int, n);
    for (int i = 0; i < n; i++)
        first[i] = -1;
    for (int i = 0; i < n; i++) {
        Value *u = g->values[i];
        if (u->id < g->backward_id) continue;
        for (int k = 0; k < u->nin; k++) {
            Value *v = u->in[k];
            if (v->order < n && v == g->values[v->order] && first[v->order] < 0 && pick[v->order])
                first[v->order] = i;
        }
    }
    /* Readers come after their operands: going down, a clone's own place is
     * final before it is handed to its operands. */
    for (int j = n - 1; j >= 0; j--) {
        if (first[j] < 0) continue;
        Value *v = g->values[j];
        for (int k = 0; k < v->nin; k++) {
            Value *o = v->in[k];
            int i = o->order;
            if (i < n && o == g->values[i] && pick[i] && (first[i] < 0 || first[j] < first[i]))
                first[i] = first[j];
        }
    }
    int added = 0;
    for (int i = 0; i < n; i++) { /* operands' clones before their readers' */
        if (first[i] < 0) continue;
        Value *v = g->values[i];
        Arg *args = arena_dup(a, v->args, sizeof(Arg) * (size_t)v->nargs);
        for (int k = 0; k < v->nargs; k++)
            if (args[k].kind == ARG_TENSORS)
                args[k].ts = arena_dup(a, args[k].ts, sizeof(Value *) * (size_t)args[k].n);
        to_clones(args, v->nargs, clone_of, g, n);
        Value *c = value_make(&ic, v->op, v->loc, v->nargs, args);
        if (!c) return false;
        c->label = v->label ? v->label : op_info(v->op)->name;
        c->bn = v->bn;
        clone_of[i] = c;
        added++;
    }
    if (!added) return true;
    /* The backward nodes read the clones. */
    for (int i = 0; i < n; i++) {
        Value *u = g->values[i];
        if (u->id >= g->backward_id && to_clones(u->args, u->nargs, clone_of, g, n))
            value_collect_inputs(g, u);
    }
    /* Each clone just before its first reader: a new value order. */
    int total = g->nvalues + added;
    Value **vals = ARENA_ARRAY(a, Value *, total);
    /* head[i]: the clones due before position i, linked by next[] in the
     * originals' order (built going down, each pushed in front). */
    int *head = ARENA_ARRAY(a, int, n), *next = ARENA_ARRAY(a, int, n);
    for (int i = 0; i < n; i++)
        head[i] = -1;
    for (int j = n - 1; j >= 0; j--)
        if (first[j] >= 0) {
            next[j] = head[first[j]];
            head[first[j]] = j;
        }
    int m = 0;
    for (int i = 0; i < g->nvalues; i++) {
        for (int j = i < n ? head[i] : -1; j >= 0; j = next[j])
            vals[m++] = clone_of[j];
        vals[m++] = g->values[i];
    }
    TGC_ASSERT(m == total);
    g->values = vals;
    g->nvalues = g->cap_values = total;
    for (int i = 0; i < total; i++)
        g->values[i]->order = i;
    return true;
}
