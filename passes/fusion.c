/* Fusion (see fusion.h for what it requires and gives). */
#include "passes/fusion.h"

#include <string.h>

#include "ir/state.h"

bool fusion_is_expression(const Value *v) {
    if (v->is_view || v->storage != v || v->ntuple) return false;
    unsigned f = op_info(v->op)->flags;
    if (f & (OPF_ELEMENTWISE | OPF_CREATION)) return true;
    switch (v->op) {
    case OP_CLONE:
    case OP_COPY:
    case OP_CONTIGUOUS:
    case OP_TO:
    case OP_TRIL:
    case OP_TRIU: return v->nin >= 1 ? v->in[0]->ndim == v->ndim : true;
    default: return false;
    }
}

/* A state's update is a view of the state (its result) and yet a kernel:
 * the write into the state's storage. */
static bool materialises(const Value *v) {
    if (!v->dead && ir_is_state_update(v)) return true;
    return !v->dead && !v->is_view && v->storage == v && !v->ntuple &&
           !(op_info(v->op)->flags & OPF_LEAF);
}

/* Whether consumer c reads its operand #arg element by element, so that an
 * inlined expression can stand in for a load. */
static bool absorbs(const Value *c, int arg) {
    if (fusion_is_expression(c)) return true;
    if (op_info(c->op)->flags & OPF_REDUCTION) return arg == 0;
    switch (c->op) {
    case OP_SOFTMAX:
    case OP_LOG_SOFTMAX:
    case OP_LAYER_NORM:
    case OP_RMS_NORM: return arg == 0;
    default: return false;
    }
}

KernelPlan *fusion_plan(Arena *a, const Graph *g) {
    int nv = g->nvalues > 0 ? g->nvalues : 1;
    KernelPlan *kp = ARENA_NEW(a, KernelPlan);
    kp->inlined = ARENA_ARRAY(a, bool, nv);
    int *uses = ARENA_ARRAY(a, int, nv);
    Value **consumer = ARENA_ARRAY(a, Value *, nv);
    int *consumer_arg = ARENA_ARRAY(a, int, nv);
    int *size = ARENA_ARRAY(a, int, nv);

    /* Every read of a storage owner counts as a use: a direct operand once
     * per tensor argument, a view of it as a use that blocks inlining. */
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        if (v->dead || (v->is_view && !ir_is_state_update(v))) continue;
        for (int k = 0; k < v->nin; k++) {
            Value *u = v->in[k], *o = u->storage;
            if (!o) continue;
            uses[o->order] += 1;
            if (u == o && (!consumer[o->order] || consumer[o->order] == v)) {
                consumer[o->order] = v;
                consumer_arg[o->order] = k;
            } else {
                uses[o->order] += 2; /* through a view, or two consumers */
            }
        }
    }
    /* A view is not a reader itself, but its readers read the owner: those
     * were counted above through u->storage. Outputs pin their storage. */
    for (int i = 0; i < g->noutputs; i++)
        uses[g->outputs[i]->storage->order] += 2;

    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        if (!materialises(v)) continue;
        size[i] = 1;
        for (int k = 0; k < v->nin; k++) {
            Value *p = v->in[k];
            if (p->storage != p || !materialises(p) || !fusion_is_expression(p)) continue;
            if (kp->inlined[p->order]) continue; /* the same operand twice: x * x */
            bool single = consumer[p->order] == v;
            int nuses = uses[p->order];
            /* x * x: two direct arguments of the one consumer. */
            int direct_args = 0;
            for (int j = 0; j < v->nin; j++)
                direct_args += v->in[j] == p;
            if (!single || nuses != direct_args || p->is_output) continue;
            bool all_absorb = true;
            for (int j = 0; j < v->nin; j++)
                if (v->in[j] == p && !absorbs(v, j)) all_absorb = false;
            if (!all_absorb) continue;
            if (size[i] + size[p->order] * direct_args > FUSION_MAX_NODES) continue;
            kp->inlined[p->order] = true;
            size[i] += size[p->order] * direct_args;
        }
    }

    int n = 0;
    for (int i = 0; i < g->nvalues; i++)
        n += materialises(g->values[i]) && !kp->inlined[i];
    kp->kernels = ARENA_ARRAY(a, Kernel, n + g->noutputs + 1);
    kp->steps = ARENA_ARRAY(a, SchedStep, n + 1);
    Value **reads = ARENA_ARRAY(a, Value *, nv);
    Value **stack = ARENA_ARRAY(a, Value *, nv);
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        if (!materialises(v) || kp->inlined[i]) continue;
        /* Leaves of the inlined tree are what the kernel reads. */
        int nr = 0, sp = 0;
        bool elementwise = (op_info(v->op)->flags & OPF_ELEMENTWISE) || fusion_is_expression(v);
        stack[sp++] = v;
        while (sp) {
            Value *x = stack[--sp];
            for (int k = 0; k < x->nin; k++) {
                Value *u = x->in[k];
                if (u->storage == u && kp->inlined[u->order]) {
                    stack[sp++] = u;
                    continue;
                }
                bool seen = false;
                for (int j = 0; j < nr; j++)
                    seen |= reads[j] == u;
                if (!seen) reads[nr++] = u;
            }
        }
        Kernel *kn = &kp->kernels[kp->nkernels++];
        kn->root = v;
        kn->out_copy = -1;
        SchedStep *s = &kn->step;
        s->writes = ARENA_ARRAY(a, Value *, 1);
        s->writes[0] = v->storage; /* v, or the state an update writes */
        s->nwrites = 1;
        s->reads = ARENA_ARRAY(a, Value *, nr > 0 ? nr : 1);
        memcpy(s->reads, reads, sizeof(Value *) * (size_t)nr);
        s->nreads = nr;
        s->elementwise = elementwise;
        s->op = op_display_name(v);
        kp->steps[kp->ncompute++] = *s;
    }
    /* Outputs whose value no kernel writes into the caller's buffer: views,
     * inputs, params, literals. */
    bool *is_earlier_output = ARENA_ARRAY(a, bool, nv); /* by order; no scan per output */
    for (int i = 0; i < g->noutputs; i++) {
        Value *o = g->outputs[i];
        bool written = materialises(o) && !kp->inlined[o->order] && o->storage == o;
        bool first = !is_earlier_output[o->order];
        is_earlier_output[o->order] = true;
        if (written && first) continue;
        Kernel *kn = &kp->kernels[kp->nkernels++];
        kn->root = o;
        kn->out_copy = i;
    }
    return kp;
}

Schedule *fusion_schedule(Arena *a, const Graph *g, const KernelPlan *kp,
                          const DType *storage_dtype) {
    return schedule_build(a, g, kp->steps, kp->ncompute, storage_dtype);
}
