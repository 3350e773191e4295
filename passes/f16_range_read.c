/* Facts the f16 range analysis reads off the graph: operands, sizes,
 * reduction and product depths (see f16_range_impl.h). */
#include <string.h>

#include "ir/einsum_eq.h"
#include "passes/f16_range_impl.h"

Range f16r_dtype_range(DType t) {
    switch (t) {
    case DT_BOOL: return rng(0, 1);
    case DT_U8: return rng(0, 255);
    case DT_I8: return rng(-128, 127);
    case DT_I16: return rng(-32768, 32767);
    case DT_U16: return rng(0, 65535);
    /* Declared ranges wider than f16's say nothing about the data. */
    case DT_I32: {
        Range r = rng(-2147483648.0, 2147483647.0);
        r.vague = true;
        return r;
    }
    case DT_U32: {
        Range r = rng(0, 4294967295.0);
        r.vague = true;
        return r;
    }
    case DT_U64: {
        Range r = rng(0, 0x1p64);
        r.vague = true;
        return r;
    }
    case DT_I64: {
        Range r = rng(-0x1p63, 0x1p63);
        r.vague = true;
        return r;
    }
    default: return unbounded();
    }
}

const Value *f16r_arg(const Value *v, int i) {
    if (i < 0 || i >= v->nargs || v->args[i].kind != ARG_TENSOR) return NULL;
    return v->args[i].t;
}

Range f16r_get(const Analysis *A, const Value *t) {
    if (!t || t->order < 0 || t->order >= A->g->nvalues || A->g->values[t->order] != t)
        return unbounded();
    return A->r[t->order];
}

Range f16r_arg_range(const Analysis *A, const Value *v, int i) {
    return f16r_get(A, f16r_arg(v, i));
}

double f16r_numel(const Value *v) {
    double n = 1;
    for (int i = 0; i < v->ndim && i < TG_MAX_DIMS; i++)
        n *= (double)v->shape[i];
    return n;
}

/* Elements one reduction output combines. */
double f16r_reduced_count(const Value *v) {
    const Value *x = f16r_arg(v, 0);
    if (!x) return INFINITY;
    double in = f16r_numel(x), out = f16r_numel(v);
    if (in == 0 || out == 0) return 0;
    return in / out;
}

/* The depth of a matrix product: the input's last dimension. */
double f16r_last_dim(const Value *x) {
    if (!x || x->ndim <= 0 || x->ndim > TG_MAX_DIMS) return INFINITY;
    return (double)x->shape[x->ndim - 1];
}

/* Terms summed into one einsum output element: the sizes of the letters
 * (and of "...", when the output drops it) that the output lacks. */
double f16r_einsum_depth(const Value *v) {
    if (v->nargs < 2 || v->args[0].kind != ARG_STR || !v->args[0].s ||
        v->args[1].kind != ARG_TENSORS || v->args[1].n > TG_EINSUM_MAX_OPERANDS)
        return INFINITY;
    const Arg *ops = &v->args[1];
    int ranks[TG_EINSUM_MAX_OPERANDS];
    for (int k = 0; k < ops->n; k++)
        ranks[k] = ops->ts[k]->ndim;
    EinsumEq eq;
    char err[200];
    if (!einsum_eq_read(v->args[0].s, ops->n, ranks, &eq, err, sizeof err)) return INFINITY;
    double size[128];
    for (int i = 0; i < 128; i++)
        size[i] = 0;
    double ell = 1;
    for (int k = 0; k < ops->n; k++) {
        const Value *t = ops->ts[k];
        double e = 1;
        for (int d = 0; d < t->ndim; d++) {
            int c = eq.code[k][d];
            if (c >= 128)
                e *= (double)t->shape[d];
            else
                size[c] = fmax(size[c], (double)t->shape[d]);
        }
        if (eq.has_ell[k]) ell = fmax(ell, e);
    }
    bool in_out[128] = {0};
    for (int i = 0; i < eq.nout; i++)
        if (eq.out[i] < 128) in_out[eq.out[i]] = true;
    double depth = 1;
    for (int l = 0; l < 128; l++)
        if (eq.count[l] && !in_out[l]) depth *= size[l];
    if (eq.any_ell && !eq.out_ell) depth *= ell;
    return depth;
}

/* Ops that give their operand's values unchanged (same numbers, another
 * place or layout). */
bool f16r_is_identity(const Value *v) {
    if (v->op == OP_CAST || v->op == OP_TO) return dtype_is_float(v->dtype);
    return v->op == OP_ALIAS || v->op == OP_COPY || v->op == OP_CONTIGUOUS || v->op == OP_DETACH ||
           v->op == OP_DROPOUT || v->op == OP_CLONE;
}

double f16r_data_count(const Arg *d) {
    double n = 1;
    for (int i = 0; i < d->data_ndim && i < TG_MAX_DIMS; i++)
        n *= (double)d->data_shape[i];
    return n;
}

/* The largest finite magnitude a constant holds (tensor data may mix
 * deliberate infs with large finite values). */
double f16r_const_finite_reach(const Value *v, Range r) {
    double m = 0;
    if (isfinite(r.lo)) m = fmax(m, fabs(r.lo));
    if (isfinite(r.hi)) m = fmax(m, fabs(r.hi));
    if (v->op == OP_TENSOR && v->nargs > 0 && v->args[0].kind == ARG_ANY_LIST && v->args[0].data) {
        const Arg *d = &v->args[0];
        double n = f16r_data_count(d);
        for (int64_t i = 0; i < (int64_t)n; i++)
            if (isfinite(d->data[i])) m = fmax(m, fabs(d->data[i]));
    }
    return m;
}
