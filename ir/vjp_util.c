/* Helpers the vector-Jacobian products share (see vjp.h). */
#include <string.h>

#include "ir/infer.h"
#include "ir/vjp.h"

int vjp_in(const Value *v, int argpos) {
    if (argpos >= v->nargs || v->args[argpos].kind != ARG_TENSOR) return -1;
    int k = 0;
    for (int i = 0; i < argpos; i++) {
        if (v->args[i].kind == ARG_TENSOR) k++;
        if (v->args[i].kind == ARG_TENSORS) k += v->args[i].n;
    }
    return k;
}

bool vjp_needs(const VjpCtx *c, const Value *v, int argpos) {
    int k = vjp_in(v, argpos);
    return k >= 0 && c->needs[k];
}

void vjp_set(const VjpCtx *c, const Value *v, int argpos, Value **gx, Value *g) {
    int k = vjp_in(v, argpos);
    if (k >= 0 && c->needs[k]) gx[k] = g;
}

Value *vjp_sum_to(IrB *b, Value *g, const int64_t *shape, int ndim) {
    if (!g) return NULL;
    int lead = g->ndim - ndim;
    TGC_ASSERT(lead >= 0);
    int64_t dims[TG_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < g->ndim; i++)
        if (i < lead || (shape[i - lead] == 1 && g->shape[i] != 1)) dims[n++] = i;
    if (n) g = irb_reduce_keep(b, OP_SUM, g, dims, n, true);
    if (g && (g->ndim != ndim || memcmp(g->shape, shape, sizeof(int64_t) * (size_t)ndim)))
        g = irb_reshape(b, g, shape, ndim);
    return g;
}

Value *vjp_unreduce(IrB *b, Value *g, const Value *x, const bool *reduced, bool keepdim) {
    if (!g || keepdim) return g;
    int64_t shape[TG_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++)
        shape[i] = reduced[i] ? 1 : x->shape[i];
    return irb_reshape(b, g, shape, x->ndim);
}

bool vjp_reduced_dims(VjpCtx *c, const Value *v, int argpos, bool *reduced) {
    const Value *x = IN0(v);
    const Arg *dims = &v->args[argpos];
    memset(reduced, 0, sizeof(bool) * TG_MAX_DIMS);
    if (dims->kind == ARG_ABSENT || (dims->kind == ARG_INTS && dims->n == 0)) {
        for (int i = 0; i < x->ndim; i++)
            reduced[i] = true;
        return true;
    }
    int n = dims->kind == ARG_INT ? 1 : dims->n;
    for (int k = 0; k < n; k++) {
        int64_t d = dims->kind == ARG_INT ? dims->i : dims->ints[k];
        if (!norm_dim(c->b.c, dims->loc, &d, x->ndim)) return false;
        if (x->ndim) reduced[d] = true;
    }
    return true;
}

bool vjp_unsupported(VjpCtx *c, const Value *v, const char *why) {
    return infer_error(c->b.c, v->loc, "cannot differentiate %s: %s", op_display_name(v), why);
}

Value *vjp_zeros_like(IrB *b, const Value *x) {
    return irb_full(b, x->shape, x->ndim, 0.0, x->dtype);
}
