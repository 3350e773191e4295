/* Schedule and liveness (see schedule.h for what it requires and gives). */
#include "passes/schedule.h"

#include <string.h>

#define SAT_MAX (INT64_MAX / 4)

int64_t sat_add(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r) || r > SAT_MAX) return SAT_MAX;
    return r;
}

int64_t sat_mul(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r) || r > SAT_MAX) return SAT_MAX;
    return r;
}

int64_t schedule_value_bytes(const Value *v, DType t) {
    if (v->is_view || v->storage != v || v->op == OP_SCALAR) return 0;
    int64_t n = 1;
    for (int i = 0; i < v->ndim; i++)
        n = sat_mul(n, v->shape[i]);
    return sat_mul(n, (int64_t)dtype_size(t));
}

static bool materialises(const Value *v) {
    return !v->dead && !v->is_view && v->storage == v && !(op_info(v->op)->flags & OPF_LEAF);
}

Schedule *schedule_from_graph(Arena *a, const Graph *g, const DType *storage_dtype) {
    int n = 0;
    for (int i = 0; i < g->nvalues; i++)
        n += materialises(g->values[i]);
    SchedStep *steps = ARENA_ARRAY(a, SchedStep, n > 0 ? n : 1);
    int k = 0;
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        if (!materialises(v)) continue;
        SchedStep *s = &steps[k++];
        s->writes = ARENA_ARRAY(a, Value *, 1);
        s->writes[0] = v;
        s->nwrites = 1;
        s->reads = v->in;
        s->nreads = v->nin;
        s->elementwise = (op_info(v->op)->flags & OPF_ELEMENTWISE) != 0;
        s->op = op_display_name(v);
    }
    return schedule_build(a, g, steps, n, storage_dtype);
}

static BufKind kind_of(const Value *owner) {
    if (owner->op == OP_INPUT) return BUF_INPUT;
    if (owner->op == OP_PARAM) return BUF_PARAM;
    if (owner->op == OP_SCALAR) return BUF_CONST;
    if (owner->is_output) return BUF_OUTPUT;
    return BUF_INTERMEDIATE;
}

Schedule *schedule_build(Arena *a, const Graph *g, SchedStep *steps, int nsteps,
                         const DType *storage_dtype) {
    Schedule *s = ARENA_NEW(a, Schedule);
    s->g = g;
    s->steps = steps;
    s->nsteps = nsteps;
    int nv = g->nvalues > 0 ? g->nvalues : 1;
    s->buf_of = ARENA_ARRAY(a, int, nv);
    bool *written = ARENA_ARRAY(a, bool, nv);
    for (int i = 0; i < nsteps; i++)
        for (int k = 0; k < steps[i].nwrites; k++) {
            Value *w = steps[i].writes[k];
            TGC_ASSERT(w->storage == w && !w->is_view);
            written[w->order] = true;
        }

    /* One buffer per storage owner that a kernel writes or that is a live
     * leaf, in graph order. */
    int nb = 0;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        bool leaf = (op_info(v->op)->flags & OPF_LEAF) != 0;
        nb += written[i] || (leaf && !v->dead);
    }
    s->bufs = ARENA_ARRAY(a, SchedBuffer, nb > 0 ? nb : 1);
    int *buf_of_owner = ARENA_ARRAY(a, int, nv);
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        buf_of_owner[i] = -1;
        bool leaf = (op_info(v->op)->flags & OPF_LEAF) != 0;
        if (!(written[i] || (leaf && !v->dead))) continue;
        SchedBuffer *b = &s->bufs[s->nbufs];
        b->owner = v;
        b->kind = kind_of(v);
        b->bytes = schedule_value_bytes(v, storage_dtype ? storage_dtype[i] : v->dtype);
        b->first = b->last = -1;
        buf_of_owner[i] = s->nbufs++;
    }
    for (int i = 0; i < g->nvalues; i++)
        s->buf_of[i] = buf_of_owner[g->values[i]->storage->order];

    /* Live ranges: born at the first write, dead after the last read of the
     * owner or of any view of it. */
    for (int i = 0; i < nsteps; i++) {
        for (int k = 0; k < steps[i].nwrites; k++) {
            SchedBuffer *b = &s->bufs[s->buf_of[steps[i].writes[k]->order]];
            if (b->first < 0) b->first = b->last = i;
        }
        for (int k = 0; k < steps[i].nreads; k++) {
            int bi = s->buf_of[steps[i].reads[k]->order];
            TGC_ASSERT(bi >= 0); /* read before any kernel writes it */
            SchedBuffer *b = &s->bufs[bi];
            if (b->kind != BUF_INTERMEDIATE) continue;
            TGC_ASSERT(b->first >= 0 && b->first <= i);
            if (i > b->last) b->last = i;
        }
    }
    /* An output that is a view of an intermediate is copied into the
     * caller's buffer after the last kernel: its storage lives to the end. */
    for (int i = 0; i < g->noutputs; i++) {
        int bi = s->buf_of[g->outputs[i]->order];
        if (bi >= 0 && s->bufs[bi].kind == BUF_INTERMEDIATE && nsteps > 0)
            s->bufs[bi].last = nsteps - 1;
    }
    for (int i = 0; i < s->nbufs; i++)
        if (s->bufs[i].kind != BUF_INTERMEDIATE) s->bufs[i].first = s->bufs[i].last = -1;
    return s;
}
