/* Activation checkpointing (see train.h): forward values the backward pass
 * would read are recomputed there instead of kept. Each chosen value gets
 * a clone of its node, placed just before the first backward node that
 * reads it, and the backward nodes read the clone; the original then dies
 * at its last forward use and the memory planner reuses its space. */
#include <string.h>

#include "ir/infer.h"
#include "passes/train.h"

static bool chosen(const TrainSpec *t, int id) {
    for (int i = 0; i < t->nrecompute; i++)
        if (t->recompute[i] == id) return true;
    return false;
}

bool checkpoint_candidate(const Graph *g, const Value *v) {
    const OpInfo *info = op_info(v->op);
    return v->id < g->backward_id && !(info->flags & (OPF_LEAF | OPF_VIEW | OPF_MAYBE_VIEW)) &&
           !v->ntuple && v->op != OP_SCALAR && !(info->flags & OPF_CREATION);
}

bool pass_checkpoint(Graph *g, Diag *d, const TrainSpec *t) {
    if (!t->nrecompute) return true;
    int n = g->nvalues;
    Arena *a = g->arena;
    InferCtx ic = {.g = g, .d = d};
    /* clone_at[i]: the clones to insert before position i */
    Value **clone_of = ARENA_ARRAY(a, Value *, n);
    int *first = ARENA_ARRAY(a, int, n);
    for (int i = 0; i < n; i++)
        first[i] = -1;
    for (int i = 0; i < n; i++) {
        Value *u = g->values[i];
        if (u->id < g->backward_id) continue;
        for (int k = 0; k < u->nin; k++) {
            Value *v = u->in[k];
            if (v->order < n && first[v->order] < 0 && chosen(t, v->id) &&
                checkpoint_candidate(g, v))
                first[v->order] = i;
        }
    }
    int added = 0;
    for (int i = 0; i < n; i++) {
        if (first[i] < 0) continue;
        Value *v = g->values[i];
        Arg *args = arena_dup(a, v->args, sizeof(Arg) * (size_t)v->nargs);
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
        if (u->id < g->backward_id) continue;
        bool changed = false;
        for (int k = 0; k < u->nargs; k++) {
            Arg *ar = &u->args[k];
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
        if (changed) value_collect_inputs(g, u);
    }
    /* Each clone just before its first reader: a new value order. */
    int total = g->nvalues + added;
    Value **vals = ARENA_ARRAY(a, Value *, total);
    int m = 0;
    for (int i = 0; i < g->nvalues; i++) {
        for (int j = 0; i < n && j < n; j++)
            if (first[j] == i) vals[m++] = clone_of[j];
        vals[m++] = g->values[i];
    }
    TGC_ASSERT(m == total);
    g->values = vals;
    g->nvalues = g->cap_values = total;
    for (int i = 0; i < total; i++)
        g->values[i]->order = i;
    return true;
}
