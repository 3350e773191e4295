/* States and their in-place updates (see state.h). */
#include "ir/state.h"

bool ir_is_state(const Value *v) {
    return v && v->op == OP_PARAM && v->state;
}

bool ir_is_state_update(const Value *v) {
    return v->op == OP_SLICE_SCATTER && v->nargs > 0 && v->args[0].kind == ARG_TENSOR &&
           ir_is_state(v->args[0].t);
}

/* The rule keeps the in-place write safe without ordering analysis: the
 * update is the state's only reader, so nothing can read the old
 * contents after the write, and every later read goes through the
 * update's result, which the schedule orders after it. */
bool ir_check_states(const Graph *g, Diag *d) {
    int n = g->nvalues > 0 ? g->nvalues : 1;
    const Value **update = ARENA_ARRAY(g->arena, const Value *, n);
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (ir_is_state_update(v) && !update[v->args[0].t->order]) update[v->args[0].t->order] = v;
    }
    bool ok = true;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        for (int k = 0; k < v->nargs; k++) {
            const Arg *a = &v->args[k];
            int nt = a->kind == ARG_TENSOR ? 1 : a->kind == ARG_TENSORS ? a->n : 0;
            for (int j = 0; j < nt; j++) {
                const Value *s = a->kind == ARG_TENSOR ? a->t : a->ts[j];
                if (!ir_is_state(s)) continue;
                const Value *u = update[s->order];
                if (!u || (v == u && k == 0)) continue;
                if (ir_is_state_update(v) && k == 0)
                    diag_error(d, v->loc,
                               "state '%s' is updated twice: a state takes one slice_scatter "
                               "per run; update the first update's result instead",
                               s->name);
                else
                    diag_error(d, a->loc,
                               "state '%s' is read besides its update (slice_scatter writes "
                               "it in place): read it through the update's result",
                               s->name);
                diag_note(d, u->loc, "'%s' is updated here", s->name);
                ok = false;
            }
        }
    }
    for (int i = 0; i < g->noutputs; i++) {
        const Value *o = g->outputs[i];
        if (ir_is_state(o) && update[o->order]) {
            diag_error(d, o->loc,
                       "state '%s' is an output besides its update (slice_scatter writes it in "
                       "place): output the update's result",
                       o->name);
            diag_note(d, update[o->order]->loc, "'%s' is updated here", o->name);
            ok = false;
        }
    }
    return ok;
}
