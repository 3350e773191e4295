/* f16 overflow warnings (see f16_range.h): where an overflow starts, and
 * the warning that names it. Each value's range comes from its op's rule
 * (f16_range_rules.c); f16_range_impl.h says what a Range holds.
 * Requires: tgc_frontend's graph (final dtypes, casts and broadcasts
 * explicit, dead values marked). Invalidates nothing: it only reads. */
#include <stdlib.h>

#include "passes/f16_range_impl.h"

typedef enum {
    ORIGIN_NONE,
    ORIGIN_CONST,   /* a param or constant holds a value past F16_MAX */
    ORIGIN_EXP,     /* exp/expm1 of a value that can exceed log(F16_MAX) */
    ORIGIN_POW,     /* pow whose base is in range but whose result is not */
    ORIGIN_OP,      /* every operand in range, the result not */
    ORIGIN_CONVERT, /* a conversion into f16 of a value past F16_MAX */
} Origin;

static bool within(Range r) {
    return r.lo >= -F16_MAX && r.hi <= F16_MAX;
}
static bool exceeds(Range r) {
    return r.lo < -F16_MAX || r.hi > F16_MAX;
}
/* A finite bound past F16_MAX: a known value that f16 cannot hold (an
 * infinite bound is either unknown or a deliberate inf, like masks' -inf). */
static bool exceeds_finite(Range r) {
    return (isfinite(r.lo) && r.lo < -F16_MAX) || (isfinite(r.hi) && r.hi > F16_MAX);
}

/* The analysis of one value: its rule, then the facts no rule knows. */
static Range eval(const Analysis *A, const Value *v) {
    Range r = f16r_eval_op(A, v);
    if (isnan(r.lo) || isnan(r.hi) || r.lo > r.hi) r = unbounded();
    if (r.pole) r.vague = true;
    if (v->ntuple) return r;
    if (v->dtype == DT_BOOL) return rng(0, 1);
    if (dtype_is_int(v->dtype)) {
        /* Integers wrap: past the type's range they can be anything in it. */
        Range t = f16r_dtype_range(v->dtype);
        if (r.lo < t.lo || r.hi > t.hi) r = t, r.vague = true;
    }
    if (f16r_numel(v) == 0) return rng(0, 0);
    return r;
}

static bool is_constant(const Value *v) {
    return v->op == OP_PARAM || v->op == OP_SCALAR || (op_info(v->op)->flags & OPF_CREATION);
}

/* Arguments whose values a result's bound depends on (not masks, indices,
 * or the input of a norm, whose output is bounded whatever it is). */
static bool operand_counts(const Value *v, int arg) {
    switch (v->op) {
    case OP_LAYER_NORM:
    case OP_RMS_NORM:
    case OP_WHERE: return arg != 0;
    case OP_MASKED_FILL: return arg != 1;
    case OP_INDEX:
    case OP_GATHER:
    case OP_INDEX_SELECT: return arg == 0;
    case OP_EMBEDDING: return arg == 1;
    default: return true;
    }
}

static bool operands_within(const Analysis *A, const Value *v) {
    for (int i = 0; i < v->nargs; i++) {
        if (!operand_counts(v, i)) continue;
        const Arg *a = &v->args[i];
        if (a->kind == ARG_TENSOR && !within(f16r_get(A, a->t))) return false;
        if (a->kind == ARG_TENSORS)
            for (int k = 0; k < a->n; k++)
                if (!within(f16r_get(A, a->ts[k]))) return false;
    }
    return true;
}

/* Where an overflow starts, whatever v's dtype. */
static Origin origin_of(const Analysis *A, const Value *v, Range r) {
    if (v->ntuple) return ORIGIN_NONE;
    if (v->op == OP_PARAM) return !r.vague && exceeds_finite(r) ? ORIGIN_CONST : ORIGIN_NONE;
    if (is_constant(v)) return f16r_const_finite_reach(v, r) > F16_MAX ? ORIGIN_CONST : ORIGIN_NONE;
    if (v->op == OP_CAST || v->op == OP_TO) {
        const Value *x = f16r_arg(v, 0);
        if (!x || x->dtype == v->dtype) return ORIGIN_NONE;
        Range a = f16r_get(A, x);
        if (a.src || (!a.vague && exceeds_finite(a))) return ORIGIN_CONVERT;
        return ORIGIN_NONE;
    }
    if (v->op == OP_EXP || v->op == OP_EXPM1) return r.hi > F16_MAX ? ORIGIN_EXP : ORIGIN_NONE;
    if (v->op == OP_POW) {
        if (within(f16r_arg_range(A, v, 0)) && exceeds(r) && !r.pole) return ORIGIN_POW;
        return ORIGIN_NONE;
    }
    if (exceeds(r) && !r.pole && !r.vague && operands_within(A, v)) return ORIGIN_OP;
    return ORIGIN_NONE;
}

/* Ops through which a non-f16 overflow travels on to a later cast: views,
 * identities, and these. */
static const bool carrying[OP_COUNT] = {
    [OP_CAT] = true,         [OP_CONCAT] = true,       [OP_STACK] = true,  [OP_WHERE] = true,
    [OP_MASKED_FILL] = true, [OP_AMAX] = true,         [OP_AMIN] = true,   [OP_TRIL] = true,
    [OP_TRIU] = true,        [OP_EMBEDDING] = true,    [OP_SLICE] = true,  [OP_INDEX] = true,
    [OP_GATHER] = true,      [OP_INDEX_SELECT] = true, [OP_REPEAT] = true, [OP_FLIP] = true,
    [OP_CAST] = true,        [OP_TO] = true,
};

static bool carries(const Value *v) {
    return (v->op >= 0 && v->op < OP_COUNT && carrying[v->op]) ||
           (op_info(v->op)->flags & (OPF_VIEW | OPF_MAYBE_VIEW)) || f16r_is_identity(v);
}

static const Value *carried_src(const Analysis *A, const Value *v) {
    if (!carries(v)) return NULL;
    for (int i = 0; i < v->nargs; i++) {
        if (!operand_counts(v, i)) continue;
        const Arg *a = &v->args[i];
        if (a->kind == ARG_TENSOR && f16r_get(A, a->t).src) return f16r_get(A, a->t).src;
        if (a->kind == ARG_TENSORS)
            for (int k = 0; k < a->n; k++)
                if (f16r_get(A, a->ts[k]).src) return f16r_get(A, a->ts[k]).src;
    }
    return NULL;
}

static void warn(const Analysis *A, Diag *d, const Value *v, Origin o, Range r) {
    Arena *ar = A->g->arena;
    const char *op = op_display_name(v);
    double m = reach(r);
    switch (o) {
    case ORIGIN_CONST:
        if (v->op == OP_PARAM)
            diag_warning(d, v->loc,
                         "f16 overflow: param '%s' holds values up to %g in magnitude, above "
                         "65504 (the largest f16)",
                         value_name(ar, v), m);
        else if (v->op == OP_SCALAR)
            diag_warning(d, v->loc,
                         "f16 overflow: the constant %g is above 65504 (the largest f16) and "
                         "becomes inf",
                         v->scalar);
        else
            diag_warning(d, v->loc,
                         "f16 overflow: %s holds values up to %g in magnitude, above 65504 (the "
                         "largest f16)",
                         op, f16r_const_finite_reach(v, r));
        break;
    case ORIGIN_EXP: {
        Range a = f16r_arg_range(A, v, 0);
        if (isinf(a.hi))
            diag_warning(d, v->loc,
                         "f16 overflow: %s of an unbounded value can exceed 65504 (the largest "
                         "f16)",
                         op);
        else
            diag_warning(d, v->loc,
                         "f16 overflow: %s of a value up to %g can reach %g, above 65504 (the "
                         "largest f16)",
                         op, a.hi, r.hi);
        break;
    }
    case ORIGIN_POW:
        if (isinf(m))
            diag_warning(d, v->loc,
                         "f16 overflow: pow of a base within range can exceed 65504 (the largest "
                         "f16) through its exponent");
        else
            diag_warning(d, v->loc,
                         "f16 overflow: pow can reach %g in magnitude, above 65504 (the largest "
                         "f16)",
                         m);
        break;
    case ORIGIN_OP: {
        double n = 0;
        const char *what = NULL;
        if (v->op == OP_SUM || v->op == OP_PROD) n = f16r_reduced_count(v), what = "elements";
        if (op_info(v->op)->flags & OPF_MATMUL) {
            n = v->op == OP_EINSUM ? f16r_einsum_depth(v) : f16r_last_dim(f16r_arg(v, 0));
            what = "terms per dot product";
        }
        if (what && n > 1 && !(v->op == OP_OUTER))
            diag_warning(d, v->loc,
                         "f16 overflow: %s of %.0f %s can reach %g in magnitude, above 65504 "
                         "(the largest f16), though each stays within it",
                         op, n, what, m);
        else
            diag_warning(d, v->loc,
                         "f16 overflow: %s can reach %g in magnitude, above 65504 (the largest "
                         "f16), though its operands stay within it",
                         op, m);
        break;
    }
    case ORIGIN_CONVERT: {
        Range a = f16r_arg_range(A, v, 0);
        const Value *src = a.src;
        if (!a.vague && exceeds_finite(a))
            diag_warning(d, v->loc,
                         "f16 overflow: converting a value that can reach %g in magnitude to "
                         "f16, whose largest value is 65504",
                         reach(a));
        else if (src && src->loc.line &&
                 (src->loc.line != v->loc.line || src->loc.col != v->loc.col))
            diag_warning(d, v->loc,
                         "f16 overflow: converting to f16 the result of %s (line %d:%d), which "
                         "can exceed 65504 (the largest f16)",
                         op_display_name(src), src->loc.line, src->loc.col);
        else
            diag_warning(d, v->loc,
                         "f16 overflow: converting to f16 the result of %s, which can exceed "
                         "65504 (the largest f16)",
                         src ? op_display_name(src) : "an op");
        break;
    }
    case ORIGIN_NONE: return;
    }
    diag_note(d, v->loc,
              "--precision bf16 keeps f32's range (up to 3.4e38); so does declaring this value "
              "bf16");
}

/* Runs the analysis; with d, warns. Returns the warnings given. */
static int analyse(Analysis *A, Diag *d) {
    const Graph *g = A->g;
    int warnings = 0;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        A->r[i] = unbounded();
        if (!v || v->dead) continue;
        Range r = eval(A, v);
        Origin o = origin_of(A, v, r);
        if (o != ORIGIN_NONE && v->dtype == DT_F16) {
            if (d) warn(A, d, v, o, r);
            warnings++;
        } else if (o != ORIGIN_NONE && v->dtype != DT_F16) {
            r.src = v;
        } else if (v->dtype != DT_F16) {
            r.src = carried_src(A, v);
        }
        A->r[i] = r;
    }
    return warnings;
}

int f16_overflow_warn(const Graph *g, Diag *d, ParamRangeFn range, void *ctx) {
    if (!g || g->nvalues <= 0) return 0;
    /* Only f16 values warn: without one, skip the analysis (and the scan of
     * the weights file that `range` would make). */
    bool any_f16 = false;
    for (int i = 0; i < g->nvalues && !any_f16; i++)
        any_f16 = !g->values[i]->dead && g->values[i]->dtype == DT_F16;
    if (!any_f16) return 0;
    Analysis A = {.g = g, .range = range, .ctx = ctx};
    A.r = malloc(sizeof(Range) * (size_t)g->nvalues);
    if (!A.r) return 0;
    int n = analyse(&A, d);
    free(A.r);
    return n;
}

bool f16_value_range(const Graph *g, const Value *v, ParamRangeFn range, void *ctx, double *lo,
                     double *hi) {
    if (!g || !v || g->nvalues <= 0 || v->order < 0 || v->order >= g->nvalues ||
        g->values[v->order] != v || v->dead)
        return false;
    Analysis A = {.g = g, .range = range, .ctx = ctx};
    A.r = malloc(sizeof(Range) * (size_t)g->nvalues);
    if (!A.r) return false;
    analyse(&A, NULL);
    *lo = A.r[v->order].lo;
    *hi = A.r[v->order].hi;
    free(A.r);
    return true;
}
