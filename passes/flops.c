/* FLOP counts (the convention is in flops.h). */
#include "passes/flops.h"

#include "ir/conv.h"

#include <string.h>

#include "passes/schedule.h"

static bool touches_float(const Value *v) {
    if (dtype_is_float(v->dtype)) return true;
    for (int i = 0; i < v->nin; i++)
        if (dtype_is_float(v->in[i]->dtype)) return true;
    return false;
}

static int64_t last_dim(const Value *t) {
    return t->ndim ? t->shape[t->ndim - 1] : 1;
}

/* Iteration space of an einsum: the output's elements times the sizes of
 * the letters summed away (those missing from the output). */
static int64_t einsum_points(const Value *v) {
    const char *eq = v->nargs > 0 ? v->args[0].s : NULL;
    if (!eq) return value_numel(v);
    int64_t size[128];
    int count[128] = {0};
    for (int i = 0; i < 128; i++)
        size[i] = 1;
    const char *arrow = strstr(eq, "->");
    const char *p = eq;
    for (int k = 0; k < v->nin && *p && (!arrow || p < arrow); k++) {
        const Value *t = v->in[k];
        /* Letters before an ellipsis count from the front, after it from the back. */
        char letters[TG_MAX_DIMS * 2];
        int nl = 0, ell_at = -1;
        for (; *p && *p != ',' && (!arrow || p < arrow); p++) {
            if (!strncmp(p, "...", 3)) {
                ell_at = nl;
                p += 2;
            } else if (((*p | 32) >= 'a' && (*p | 32) <= 'z') && nl < TG_MAX_DIMS * 2) {
                letters[nl++] = *p;
            }
        }
        if (*p == ',') p++;
        for (int i = 0; i < nl; i++) {
            int dim = ell_at < 0 || i < ell_at ? i : t->ndim - (nl - i);
            unsigned char l = (unsigned char)letters[i];
            if (dim < 0 || dim >= t->ndim) continue;
            count[l]++;
            if (t->shape[dim] != 1) size[l] = t->shape[dim];
        }
    }
    int64_t points = value_numel(v);
    for (int l = 0; l < 128; l++) {
        if (!count[l]) continue;
        bool kept = arrow ? strchr(arrow + 2, l) != NULL : count[l] == 1;
        if (!kept) points = sat_mul(points, size[l]);
    }
    return points;
}

/* Per output element of an op that elementwise kernels compute: the
 * flops column of ir/emit.def (copies, conversions and creation ops,
 * which share those kernels, count 0 there). */
static const struct {
    bool listed;
    unsigned char per_element;
} expr_flops[OP_COUNT] = {
#define EXPR(op, builder, round, flops) [OP_##op] = {true, flops},
#include "ir/emit.def"
};

int64_t flops_value(const Value *v) {
    if (v->dead || v->is_view || (op_info(v->op)->flags & OPF_LEAF) || !touches_float(v)) return 0;
    int64_t out = value_numel(v);
    const Value *x = v->nin ? v->in[0] : NULL;
    switch (v->op) {
    case OP_MATMUL:
    case OP_MM:
    case OP_BMM:
    case OP_MV: return sat_mul(sat_mul(2, out), last_dim(x));
    case OP_LINEAR:
    case OP_QMATMUL: {
        int64_t f = sat_mul(sat_mul(2, out), last_dim(x));
        return v->nargs > 2 && v->args[2].kind == ARG_TENSOR ? sat_add(f, out) : f;
    }
    case OP_OUTER: return out;
    case OP_CONV1D:
    case OP_CONV2D:
    case OP_CONV_TRANSPOSE1D:
    case OP_CONV_TRANSPOSE2D: {
        /* 2 * N * Cout * Hout * Wout * Cin / groups * kh * kw; a transposed
         * conv does the same products over its input's positions. */
        ConvGeom g;
        conv_geometry(v, &g);
        int64_t pos = g.transposed ? sat_mul(g.in[0], g.in[1]) : sat_mul(g.out[0], g.out[1]);
        int64_t f = sat_mul(sat_mul(sat_mul(2, g.n), sat_mul(g.cout, pos)),
                            sat_mul(g.cin / g.groups, sat_mul(g.k[0], g.k[1])));
        return g.has_bias ? sat_add(f, out) : f;
    }
    case OP_SDPA:
    case OP_SDPA_DROP: {
        /* the two products and the softmax over [..., L, S] */
        const Value *k = v->in[1];
        int64_t ls = sat_mul(out / (v->shape[v->ndim - 1] ? v->shape[v->ndim - 1] : 1),
                             k->shape[k->ndim - 2]);
        return sat_mul(ls, sat_add(sat_mul(2, sat_add(last_dim(x), v->shape[v->ndim - 1])), 5));
    }
    case OP_SDPA_BWD: {
        /* per (query, key) pair: the scores twice (log-sum-exp sweep and
         * recompute), dP, dv, dq, dk products and the softmax terms */
        const Value *q = v->in[0], *k = v->in[1], *val = v->in[2];
        int64_t e = q->shape[q->ndim - 1], ev = val->shape[val->ndim - 1];
        int64_t batch = value_numel(v) / (v->shape[v->ndim - 1] ? v->shape[v->ndim - 1] : 1) /
                        (v->shape[v->ndim - 2] ? v->shape[v->ndim - 2] : 1);
        int64_t ls = sat_mul(sat_mul(batch, q->shape[q->ndim - 2]), k->shape[k->ndim - 2]);
        return sat_mul(ls, sat_add(sat_mul(2, sat_add(sat_mul(4, e), sat_mul(2, ev))), 10));
    }
    case OP_EINSUM: return sat_mul(einsum_points(v), v->nin > 1 ? 2 * (v->nin - 1) : 1);
    case OP_SOFTMAX:
    case OP_LOG_SOFTMAX: return sat_mul(out, 5);
    case OP_LAYER_NORM: return sat_mul(out, 8);
    case OP_RMS_NORM: return sat_mul(out, 5);
    case OP_VAR:
    case OP_STD:
    case OP_LOGSUMEXP: return x ? sat_mul(value_numel(x), 3) : 0;
    default: break;
    }
    if (expr_flops[v->op].listed) return sat_mul(out, expr_flops[v->op].per_element);
    if (op_info(v->op)->flags & OPF_REDUCTION) return x ? value_numel(x) : 0;
    return 0;
}

int64_t flops_graph(const Graph *g) {
    int64_t total = 0;
    for (int i = 0; i < g->nvalues; i++)
        total = sat_add(total, flops_value(g->values[i]));
    return total;
}
