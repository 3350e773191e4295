/* f16 overflow warnings (see f16_range.h).
 * Requires: tgc_frontend's graph (final dtypes, casts and broadcasts
 * explicit, dead values marked). Invalidates nothing: it only reads.
 *
 * Each value gets a Range: an interval, and two facts that decide where a
 * warning belongs. `vague` marks an interval that says "unknown" rather than
 * "computed": inputs, random or unnamed params, i32/i64 declared ranges, and
 * poles (x / y with y possibly 0, which is inf in every dtype, so bf16 would
 * not help). `src` carries an overflow that started in a non-f16 value
 * through views and copies, so the cast that brings it into f16 warns. */
#include "passes/f16_range.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Range {
    double lo, hi;
    bool vague;
    bool pole;        /* unbounded because a divisor can be 0 */
    const Value *src; /* a non-f16 value where an overflow starts, carried to casts */
} Range;

typedef enum {
    ORIGIN_NONE,
    ORIGIN_CONST,   /* a param or constant holds a value past F16_MAX */
    ORIGIN_EXP,     /* exp/expm1 of a value that can exceed log(F16_MAX) */
    ORIGIN_POW,     /* pow whose base is in range but whose result is not */
    ORIGIN_OP,      /* every operand in range, the result not */
    ORIGIN_CONVERT, /* a conversion into f16 of a value past F16_MAX */
} Origin;

typedef struct Analysis {
    const Graph *g;
    Range *r; /* by Value.order */
    ParamRangeFn range;
    void *ctx;
} Analysis;

static Range rng(double lo, double hi) {
    return (Range){.lo = lo, .hi = hi};
}
static Range unbounded(void) {
    return (Range){.lo = -INFINITY, .hi = INFINITY, .vague = true};
}
static Range pole(void) {
    Range r = unbounded();
    r.pole = true;
    return r;
}

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
/* The magnitude to quote in a message. */
static double reach(Range r) {
    double a = fabs(r.lo), b = fabs(r.hi);
    return a > b ? a : b;
}

/* Products of bounds: 0 * inf is 0 here, since inf stands for "any finite
 * value" and 0 times any of them is 0. */
static double mulb(double a, double b) {
    return (a == 0 || b == 0) ? 0 : a * b;
}
static double min4(double a, double b, double c, double d) {
    return fmin(fmin(a, b), fmin(c, d));
}
static double max4(double a, double b, double c, double d) {
    return fmax(fmax(a, b), fmax(c, d));
}

static Range r_add(Range a, Range b) {
    Range r = rng(a.lo + b.lo, a.hi + b.hi);
    r.vague = a.vague || b.vague;
    return r;
}
static Range r_neg(Range a) {
    Range r = a;
    r.lo = -a.hi;
    r.hi = -a.lo;
    return r;
}
static Range r_mul(Range a, Range b) {
    double p[4] = {mulb(a.lo, b.lo), mulb(a.lo, b.hi), mulb(a.hi, b.lo), mulb(a.hi, b.hi)};
    Range r = rng(min4(p[0], p[1], p[2], p[3]), max4(p[0], p[1], p[2], p[3]));
    r.vague = a.vague || b.vague;
    return r;
}
static Range r_scale(double k, Range a) {
    if (k == 0) return rng(0, 0);
    Range r = rng(mulb(k, a.lo), mulb(k, a.hi));
    if (k < 0) r = rng(r.hi, r.lo);
    r.vague = a.vague;
    return r;
}
static Range r_hull(Range a, Range b) {
    Range r = rng(fmin(a.lo, b.lo), fmax(a.hi, b.hi));
    r.vague = a.vague || b.vague;
    return r;
}
/* f applied to the ends: for functions increasing over the whole line. */
static Range r_mono(Range a, double (*f)(double)) {
    Range r = rng(f(a.lo), f(a.hi));
    r.vague = a.vague;
    return r;
}
static Range r_recip(Range a) {
    if (a.lo > 0 || a.hi < 0) {
        Range r = rng(1 / a.hi, 1 / a.lo);
        r.vague = a.vague;
        return r;
    }
    return pole();
}
static Range r_div(Range a, Range b) {
    if (b.lo > 0 || b.hi < 0) return r_mul(a, r_recip(b));
    return pole();
}

/* x ** p for a constant p. */
static Range r_pow_const(Range a, double p) {
    Range r;
    if (p == 0) return rng(1, 1);
    if (p == floor(p) && fabs(p) < 9007199254740992.0) {
        bool even = fmod(p, 2) == 0;
        double x = pow(a.lo, p), y = pow(a.hi, p);
        bool has0 = a.lo <= 0 && a.hi >= 0;
        if (p < 0 && has0) return pole();
        r = rng(fmin(x, y), fmax(x, y));
        if (p > 0 && even && has0) r.lo = 0;
    } else {
        if (a.hi < 0) return unbounded(); /* NaN everywhere, no overflow */
        double lo = fmax(a.lo, 0);
        if (p > 0)
            r = rng(pow(lo, p), pow(a.hi, p));
        else if (lo == 0)
            return pole();
        else
            r = rng(pow(a.hi, p), pow(lo, p));
    }
    r.vague = a.vague;
    return r;
}

/* b ** e for an exponent that varies: for b >= 0, b ** e is monotonic in b
 * for each e and in e for each b, so the corners bound it. */
static Range r_pow(Range b, Range e) {
    if (e.lo == e.hi && isfinite(e.lo)) return r_pow_const(b, e.lo);
    if (b.lo < 0) {
        /* Negative bases: signs alternate, and negative exponents reach
         * the pole at 0; only |b| ** e bounds it, for e >= 0. */
        if (e.lo < 0) return pole();
        double m = reach(b), big = fmax(pow(m, e.lo), pow(m, e.hi));
        Range r = rng(-big, big);
        r.vague = b.vague || e.vague;
        return r;
    }
    if (b.lo == 0 && e.lo < 0) return pole();
    double p[4] = {pow(b.lo, e.lo), pow(b.lo, e.hi), pow(b.hi, e.lo), pow(b.hi, e.hi)};
    Range r = rng(min4(p[0], p[1], p[2], p[3]), max4(p[0], p[1], p[2], p[3]));
    r.vague = b.vague || e.vague;
    return r;
}

static double sigmoid_d(double x) {
    return 1 / (1 + exp(-x));
}
static double gelu_d(double x) {
    if (x == -INFINITY) return 0;
    return 0.5 * x * (1 + erf(x / sqrt(2.0)));
}
static double silu_d(double x) {
    if (x == -INFINITY) return 0;
    return x * sigmoid_d(x);
}
/* -inf stands for "any finite value" here, so the activations whose
 * formula gives -inf * 0 (NaN) at -inf take their limit, 0. */
static double hardswish_d(double x) {
    if (x == -INFINITY) return 0;
    return x * fmin(fmax(x + 3, 0), 6) / 6;
}
static double hardsigmoid_d(double x) {
    return fmin(fmax(x + 3, 0), 6) / 6;
}
static double mish_d(double x) {
    if (x == -INFINITY) return 0;
    return x * tanh(log1p(exp(x)));
}
/* f falls to its minimum fmin_v at xmin, then rises: gelu, silu. */
static Range r_dip(Range a, double (*f)(double), double xmin, double fmin_v) {
    double x = f(a.lo), y = f(a.hi);
    Range r = rng(fmin(x, y), fmax(x, y));
    if (a.lo < xmin && a.hi > xmin) r.lo = fmin(r.lo, fmin_v);
    r.vague = a.vague;
    return r;
}

/* A function that is monotonic between its kinks (leaky_relu, elu,
 * softplus): the hull of its values at the ends and at the kinks inside;
 * left[i] and right[i] are its one-sided limits at kink[i] (equal where it
 * is continuous). */
static Range r_kinked(Range a, double flo, double fhi, const double *kink, const double *left,
                      const double *right, int n) {
    Range r = rng(fmin(flo, fhi), fmax(flo, fhi));
    for (int i = 0; i < n; i++) {
        if (!(a.lo < kink[i] && kink[i] < a.hi)) continue;
        r.lo = fmin(r.lo, fmin(left[i], right[i]));
        r.hi = fmax(r.hi, fmax(left[i], right[i]));
    }
    r.vague = a.vague;
    return r;
}
static double leaky_relu_d(double x, double slope) {
    return x > 0 ? x : mulb(x, slope);
}
static double elu_d(double x, double alpha) {
    return x > 0 ? x : mulb(expm1(x), alpha);
}
static double softplus_d(double x, double beta, double threshold) {
    double xb = mulb(x, beta);
    return xb > threshold ? x : log1p(exp(xb)) / beta;
}

static Range dtype_range(DType t) {
    switch (t) {
    case DT_BOOL: return rng(0, 1);
    case DT_U8: return rng(0, 255);
    case DT_I8: return rng(-128, 127);
    case DT_I16: return rng(-32768, 32767);
    /* Declared ranges wider than f16's say nothing about the data. */
    case DT_I32: {
        Range r = rng(-2147483648.0, 2147483647.0);
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

/* ---- reading the graph ------------------------------------------------- */

static const Value *arg_t(const Value *v, int i) {
    if (i < 0 || i >= v->nargs || v->args[i].kind != ARG_TENSOR) return NULL;
    return v->args[i].t;
}

static Range get(const Analysis *A, const Value *t) {
    if (!t || t->order < 0 || t->order >= A->g->nvalues || A->g->values[t->order] != t)
        return unbounded();
    return A->r[t->order];
}

static Range arg_r(const Analysis *A, const Value *v, int i) {
    return get(A, arg_t(v, i));
}

static bool arg_num(const Value *v, int i, double *out) {
    if (i < 0 || i >= v->nargs) return false;
    const Arg *a = &v->args[i];
    if (a->kind == ARG_NUM || a->kind == ARG_BOOL) {
        *out = a->kind == ARG_NUM ? a->f : (double)a->i;
        return true;
    }
    if (a->kind == ARG_INT) {
        *out = (double)a->i;
        return true;
    }
    return false;
}

static bool arg_flag(const Value *v, int i) {
    return i >= 0 && i < v->nargs && v->args[i].kind == ARG_BOOL && v->args[i].i;
}

static double numel_d(const Value *v) {
    double n = 1;
    for (int i = 0; i < v->ndim && i < TG_MAX_DIMS; i++)
        n *= (double)v->shape[i];
    return n;
}

/* Elements one reduction output combines. */
static double reduced_count(const Value *v) {
    const Value *x = arg_t(v, 0);
    if (!x) return INFINITY;
    double in = numel_d(x), out = numel_d(v);
    if (in == 0 || out == 0) return 0;
    return in / out;
}

/* The depth of a matrix product: the input's last dimension. */
static double last_dim(const Value *x) {
    if (!x || x->ndim <= 0 || x->ndim > TG_MAX_DIMS) return INFINITY;
    return (double)x->shape[x->ndim - 1];
}

/* Terms summed into one einsum output element: the sizes of the letters
 * (and of "...", when the output drops it) that the output lacks. */
static double einsum_depth(const Value *v) {
    if (v->nargs < 2 || v->args[0].kind != ARG_STR || !v->args[0].s ||
        v->args[1].kind != ARG_TENSORS)
        return INFINITY;
    const char *eq = v->args[0].s, *arrow = strstr(eq, "->");
    const Arg *ops = &v->args[1];
    double size[128];
    int count[128] = {0};
    for (int i = 0; i < 128; i++)
        size[i] = 0;
    double ell = 1;
    bool any_ell = false;
    const char *p = eq;
    for (int k = 0; k < ops->n; k++) {
        const Value *t = ops->ts[k];
        char letters[TG_MAX_DIMS];
        int nl = 0, ell_at = -1;
        while (*p && *p != ',' && (!arrow || p < arrow)) {
            if (*p == ' ') {
                p++;
            } else if (!strncmp(p, "...", 3)) {
                ell_at = nl;
                p += 3;
            } else {
                if (nl >= TG_MAX_DIMS || (unsigned char)*p >= 128) return INFINITY;
                letters[nl++] = *p++;
            }
        }
        if (*p == ',') p++;
        int n_ell = t->ndim - nl;
        if (n_ell < 0 || (ell_at < 0 && n_ell != 0) || t->ndim > TG_MAX_DIMS) return INFINITY;
        double e = 1;
        for (int i = 0; i < n_ell; i++)
            e *= (double)t->shape[ell_at + i];
        if (ell_at >= 0) {
            any_ell = true;
            ell = fmax(ell, e);
        }
        for (int i = 0; i < nl; i++) {
            int dim = ell_at >= 0 && i >= ell_at ? i + n_ell : i;
            int l = (unsigned char)letters[i];
            size[l] = fmax(size[l], (double)t->shape[dim]);
            count[l]++;
        }
    }
    bool in_out[128] = {0}, out_ell = true;
    if (arrow) {
        out_ell = strstr(arrow + 2, "...") != NULL;
        for (const char *q = arrow + 2; *q; q++)
            if ((unsigned char)*q < 128) in_out[(unsigned char)*q] = true;
    } else {
        for (int l = 0; l < 128; l++)
            in_out[l] = count[l] == 1;
    }
    double depth = 1;
    for (int l = 0; l < 128; l++)
        if (count[l] && !in_out[l]) depth *= size[l];
    if (any_ell && !out_ell) depth *= ell;
    return depth;
}

/* Ops that give their operand's values unchanged (same numbers, another
 * place or layout). */
static bool is_identity(const Value *v) {
    switch (v->op) {
    case OP_ALIAS:
    case OP_COPY:
    case OP_CONTIGUOUS:
    case OP_DETACH:
    case OP_DROPOUT:
    case OP_CLONE: return true;
    case OP_CAST:
    case OP_TO: return dtype_is_float(v->dtype);
    default: return false;
    }
}

static const Value *strip_identity(const Value *v) {
    for (int guard = 0; v && guard < 64 && is_identity(v); guard++)
        v = arg_t(v, 0);
    return v;
}

/* Also through the broadcast that lines a keepdim reduction up with its input. */
static const Value *strip_broadcast(const Value *v) {
    for (int guard = 0; v && guard < 64; guard++) {
        if (v->op == OP_EXPAND || v->op == OP_EXPAND_AS || is_identity(v))
            v = arg_t(v, 0);
        else
            break;
    }
    return v;
}

/* r is op(x) over some dims, broadcast back so that each element meets the
 * reduction of its own row: keepdim, or everything reduced. */
static bool reduces_own_rows(const Value *r, OpCode op, const Value *x) {
    if (!r || !x || r->op != op) return false;
    if (strip_identity(arg_t(r, 0)) != strip_identity(x)) return false;
    return r->ndim == 0 || arg_flag(r, 2);
}

/* ---- the transfer function --------------------------------------------- */

static Range eval_param(const Analysis *A, const Value *v) {
    double lo, hi;
    if (A->range && A->range(A->ctx, v, &lo, &hi) && lo <= hi) return rng(lo, hi);
    const ParamInit *in = &v->init;
    switch (in->kind) {
    case INIT_ZEROS: return rng(0, 0);
    case INIT_ONES: return rng(1, 1);
    case INIT_FULL: return rng(in->a, in->a);
    case INIT_UNIFORM: return rng(fmin(in->a, in->b), fmax(in->a, in->b));
    case INIT_ARANGE: {
        double n = numel_d(v);
        return rng(0, n > 0 ? n - 1 : 0);
    }
    case INIT_RANDN:
        if (in->a == 0) return rng(0, 0);
        return unbounded();
    default: return dtype_is_float(v->dtype) ? unbounded() : dtype_range(v->dtype);
    }
}

static Range eval_creation(const Value *v) {
    double f;
    switch (v->op) {
    case OP_ZEROS:
    case OP_ZEROS_LIKE: return rng(0, 0);
    case OP_ONES:
    case OP_ONES_LIKE: return rng(1, 1);
    case OP_EYE: return rng(0, 1);
    case OP_FULL:
        if (arg_num(v, 1, &f)) return rng(f, f);
        return unbounded();
    case OP_FULL_LIKE:
        if (arg_num(v, 1, &f)) return rng(f, f);
        return unbounded();
    case OP_ARANGE: {
        double s, e, st;
        if (!arg_num(v, 0, &s) || !arg_num(v, 1, &e) || !arg_num(v, 2, &st) || v->ndim != 1)
            return unbounded();
        double n = (double)v->shape[0];
        if (n <= 0) return rng(0, 0);
        double last = s + (n - 1) * st;
        return rng(fmin(s, last), fmax(s, last));
    }
    case OP_TENSOR: {
        const Arg *d = v->nargs > 0 ? &v->args[0] : NULL;
        if (!d || d->kind != ARG_ANY_LIST || !d->data) return unbounded();
        double n = 1;
        for (int i = 0; i < d->data_ndim && i < TG_MAX_DIMS; i++)
            n *= (double)d->data_shape[i];
        Range r = rng(INFINITY, -INFINITY);
        for (int64_t i = 0; i < (int64_t)n; i++) {
            r.lo = fmin(r.lo, d->data[i]);
            r.hi = fmax(r.hi, d->data[i]);
        }
        return n > 0 ? r : rng(0, 0);
    }
    default: return unbounded();
    }
}

/* The largest finite magnitude a constant holds (tensor data may mix
 * deliberate infs with large finite values). */
static double const_finite_reach(const Value *v, Range r) {
    double m = 0;
    if (isfinite(r.lo)) m = fmax(m, fabs(r.lo));
    if (isfinite(r.hi)) m = fmax(m, fabs(r.hi));
    if (v->op == OP_TENSOR && v->nargs > 0 && v->args[0].kind == ARG_ANY_LIST && v->args[0].data) {
        const Arg *d = &v->args[0];
        double n = 1;
        for (int i = 0; i < d->data_ndim && i < TG_MAX_DIMS; i++)
            n *= (double)d->data_shape[i];
        for (int64_t i = 0; i < (int64_t)n; i++)
            if (isfinite(d->data[i])) m = fmax(m, fabs(d->data[i]));
    }
    return m;
}

static Range eval_op(const Analysis *A, const Value *v) {
    Range a = arg_r(A, v, 0), r;
    switch (v->op) {
    case OP_INPUT: return dtype_is_float(v->dtype) ? unbounded() : dtype_range(v->dtype);
    case OP_PARAM: return eval_param(A, v);
    case OP_SCALAR: return rng(v->scalar, v->scalar);

    /* Same values, other layout or place. */
    case OP_ALIAS:
    case OP_COPY:
    case OP_SLICE:
    case OP_INDEX:
    case OP_VIEW:
    case OP_RESHAPE:
    case OP_FLATTEN:
    case OP_UNFLATTEN:
    case OP_TRANSPOSE:
    case OP_SWAPAXES:
    case OP_PERMUTE:
    case OP_SQUEEZE:
    case OP_UNSQUEEZE:
    case OP_EXPAND:
    case OP_EXPAND_AS:
    case OP_NARROW:
    case OP_SELECT:
    case OP_CHUNK:
    case OP_SPLIT:
    case OP_DIAGONAL:
    case OP_CONTIGUOUS:
    case OP_DETACH:
    case OP_DROPOUT:
    case OP_CLONE:
    case OP_GATHER:
    case OP_INDEX_SELECT:
    case OP_REPEAT:
    case OP_FLIP:
    case OP_MAX: /* the tuple of (values, indices); its parts are values of their own */
    case OP_MIN: return a;
    case OP_CAST:
    case OP_TO:
        /* Float -> int truncates toward zero; ends stay ends. */
        if (dtype_is_int(v->dtype)) return r_mono(a, trunc);
        return a;
    case OP_EMBEDDING: return arg_r(A, v, 1);
    case OP_TRIL:
    case OP_TRIU: return r_hull(a, rng(0, 0));
    case OP_CAT:
    case OP_CONCAT:
    case OP_STACK: {
        if (v->nargs < 1 || v->args[0].kind != ARG_TENSORS || v->args[0].n < 1) return unbounded();
        r = get(A, v->args[0].ts[0]);
        for (int i = 1; i < v->args[0].n; i++)
            r = r_hull(r, get(A, v->args[0].ts[i]));
        return r;
    }

    /* Binary elementwise. */
    case OP_ADD:
    case OP_SUB: {
        double alpha = 1;
        arg_num(v, 2, &alpha);
        Range b = arg_r(A, v, 1);
        /* x - amax(x) <= 0 and x - logsumexp(x) <= 0 over the same rows:
         * the stable softmax, which intervals alone cannot see. */
        if (v->op == OP_SUB && alpha > 0) {
            const Value *m = strip_broadcast(arg_t(v, 1));
            if (reduces_own_rows(m, OP_AMAX, arg_t(v, 0)) ||
                reduces_own_rows(m, OP_LOGSUMEXP, arg_t(v, 0))) {
                r = rng(a.lo - a.hi, 0);
                if (isnan(r.lo)) r.lo = -INFINITY;
                r.vague = a.vague;
                return r;
            }
        }
        b = r_scale(alpha, b);
        return r_add(a, v->op == OP_SUB ? r_neg(b) : b);
    }
    case OP_MUL: {
        /* x * x >= 0 and -x * x <= 0 (as in exp(-x * x)): one value met
         * twice, which separate intervals would treat as independent. */
        const Value *x = strip_broadcast(arg_t(v, 0)), *y = strip_broadcast(arg_t(v, 1));
        if (x && x == y) return r_pow_const(a, 2);
        if (x && y && x->op == OP_NEG && strip_broadcast(arg_t(x, 0)) == y)
            return r_neg(r_pow_const(arg_r(A, v, 1), 2));
        if (x && y && y->op == OP_NEG && strip_broadcast(arg_t(y, 0)) == x)
            return r_neg(r_pow_const(a, 2));
        return r_mul(a, arg_r(A, v, 1));
    }
    case OP_DIV: {
        Range b = arg_r(A, v, 1);
        /* x / sum(x) over x's own rows, x >= 0: a normalisation into [0, 1]. */
        const Value *s = strip_broadcast(arg_t(v, 1));
        if (a.lo >= 0 && reduces_own_rows(s, OP_SUM, arg_t(v, 0))) return rng(0, 1);
        r = r_div(a, b);
        if (!r.pole && v->nargs > 2 && v->args[2].kind == ARG_STR && v->args[2].s) {
            if (!strcmp(v->args[2].s, "floor")) r = r_mono(r, floor);
            if (!strcmp(v->args[2].s, "trunc")) r = r_mono(r, trunc);
        }
        return r;
    }
    case OP_FLOOR_DIVIDE: {
        Range b = arg_r(A, v, 1);
        r = r_div(a, b);
        if (r.pole) return r;
        return r_mono(r, floor);
    }
    case OP_REMAINDER: {
        /* The result takes the divisor's sign and is smaller than it. */
        Range b = arg_r(A, v, 1);
        if (b.lo > 0)
            r = rng(0, b.hi);
        else if (b.hi < 0)
            r = rng(b.lo, 0);
        else if (b.lo == 0 && b.hi == 0)
            return pole();
        else
            r = rng(-reach(b), reach(b));
        r.vague = b.vague;
        return r;
    }
    case OP_POW: return r_pow(a, arg_r(A, v, 1));
    case OP_MINIMUM:
    case OP_MAXIMUM: {
        Range b = arg_r(A, v, 1);
        r = v->op == OP_MINIMUM ? rng(fmin(a.lo, b.lo), fmin(a.hi, b.hi))
                                : rng(fmax(a.lo, b.lo), fmax(a.hi, b.hi));
        r.vague = a.vague || b.vague;
        return r;
    }
    case OP_EQ:
    case OP_NE:
    case OP_LT:
    case OP_LE:
    case OP_GT:
    case OP_GE:
    case OP_LOGICAL_AND:
    case OP_LOGICAL_OR:
    case OP_LOGICAL_NOT:
    case OP_ALL:
    case OP_ANY: return rng(0, 1);
    case OP_BITWISE_AND:
    case OP_BITWISE_OR:
        if (v->dtype == DT_BOOL) return rng(0, 1);
        r = dtype_range(v->dtype);
        r.vague = r.vague || a.vague || arg_r(A, v, 1).vague;
        return r;
    case OP_BITWISE_NOT:
        if (v->dtype == DT_BOOL) return rng(0, 1);
        r = rng(-a.hi - 1, -a.lo - 1);
        r.vague = a.vague;
        return r;
    case OP_WHERE: return r_hull(arg_r(A, v, 1), arg_r(A, v, 2));
    case OP_MASKED_FILL: return r_hull(a, arg_r(A, v, 2));
    case OP_CLAMP:
    case OP_CLIP: {
        double mn, mx;
        bool has_mn = arg_num(v, 1, &mn), has_mx = arg_num(v, 2, &mx);
        r = a;
        if (has_mn) r.lo = fmax(r.lo, mn), r.hi = fmax(r.hi, mn);
        if (has_mx) r.lo = fmin(r.lo, mx), r.hi = fmin(r.hi, mx);
        if (has_mn && has_mx) r.vague = false;
        return r;
    }

    /* Unary elementwise. */
    case OP_NEG: return r_neg(a);
    case OP_ABS:
        r = a.lo >= 0 ? a : a.hi <= 0 ? r_neg(a) : rng(0, reach(a));
        r.vague = a.vague;
        return r;
    case OP_SIGN: return rng(a.lo > 0 ? 1 : a.lo < 0 ? -1 : 0, a.hi > 0 ? 1 : a.hi < 0 ? -1 : 0);
    case OP_RELU:
        r = rng(fmax(a.lo, 0), fmax(a.hi, 0));
        r.vague = a.vague;
        return r;
    case OP_FLOOR: return r_mono(a, floor);
    case OP_CEIL: return r_mono(a, ceil);
    case OP_ROUND: return r_mono(a, nearbyint);
    case OP_TRUNC: return r_mono(a, trunc);
    case OP_SQUARE: return r_pow_const(a, 2);
    case OP_EXP: return r_mono(a, exp);
    case OP_EXPM1: return r_mono(a, expm1);
    case OP_LOG:
    case OP_LOG1P: {
        double edge = v->op == OP_LOG ? 0 : -1;
        if (a.hi < edge) return unbounded(); /* NaN, not an overflow */
        r = rng(fmax(a.lo, edge), a.hi);
        r = r_mono(r, v->op == OP_LOG ? log : log1p);
        r.vague = a.vague;
        if (a.lo <= edge) r.pole = r.vague = true; /* log(0) is -inf in every dtype */
        return r;
    }
    case OP_SQRT:
        r = rng(sqrt(fmax(a.lo, 0)), sqrt(fmax(a.hi, 0)));
        r.vague = a.vague;
        return r;
    case OP_RSQRT: {
        if (a.hi < 0) return unbounded();
        if (a.lo <= 0) return pole();
        r = rng(1 / sqrt(a.hi), 1 / sqrt(a.lo));
        r.vague = a.vague;
        return r;
    }
    case OP_RECIPROCAL: return r_recip(a);
    case OP_SIN:
    case OP_COS: return rng(-1, 1);
    case OP_TANH: return rng(tanh(a.lo), tanh(a.hi));
    case OP_SIGMOID: return rng(sigmoid_d(a.lo), sigmoid_d(a.hi));
    case OP_ERF: return rng(erf(a.lo), erf(a.hi));
    /* Minima of x * Phi(x) and x * sigmoid(x), rounded down (the tanh
     * approximation of gelu differs in the fourth digit). */
    case OP_GELU: return r_dip(a, gelu_d, -0.7518, -0.1702);
    case OP_SILU: return r_dip(a, silu_d, -1.2785, -0.2785);
    /* Minima of x * relu6(x + 3) / 6 and x * tanh(softplus(x)), the
     * latter rounded down. */
    case OP_HARDSWISH: return r_dip(a, hardswish_d, -1.5, -0.375);
    case OP_MISH: return r_dip(a, mish_d, -1.1924, -0.3089);
    case OP_HARDSIGMOID: return rng(hardsigmoid_d(a.lo), hardsigmoid_d(a.hi));
    case OP_LEAKY_RELU: {
        double slope = 0.01, k0 = 0, f0 = 0;
        arg_num(v, 1, &slope);
        return r_kinked(a, leaky_relu_d(a.lo, slope), leaky_relu_d(a.hi, slope), &k0, &f0, &f0, 1);
    }
    case OP_ELU: {
        /* alpha * (exp(x) - 1) below 0: from -alpha (at -inf) to 0. */
        double alpha = 1, k0 = 0, f0 = 0;
        arg_num(v, 1, &alpha);
        return r_kinked(a, elu_d(a.lo, alpha), elu_d(a.hi, alpha), &k0, &f0, &f0, 1);
    }
    case OP_SOFTPLUS: {
        /* Increasing on either side of x * beta = threshold, where it
         * jumps between x and log1p(exp(threshold)) / beta. */
        double beta = 1, th = 20;
        arg_num(v, 1, &beta);
        arg_num(v, 2, &th);
        if (beta == 0 || isnan(beta) || isnan(th)) return unbounded();
        double k0 = th / beta, sides[2] = {k0, log1p(exp(th)) / beta};
        return r_kinked(a, softplus_d(a.lo, beta, th), softplus_d(a.hi, beta, th), &k0, &sides[0],
                        &sides[1], 1);
    }
    case OP_HARDTANH:
    case OP_RELU6: {
        double mn = 0, mx = 6;
        if (v->op == OP_HARDTANH) {
            mn = -1, mx = 1;
            arg_num(v, 1, &mn);
            arg_num(v, 2, &mx);
        }
        /* clamp with both bounds: max(x, mn) then min(., mx). */
        return rng(fmin(fmax(a.lo, mn), mx), fmin(fmax(a.hi, mn), mx));
    }

    /* Reductions. */
    case OP_SUM: return r_scale(reduced_count(v), a);
    case OP_MEAN:
    case OP_AMAX:
    case OP_AMIN: return a;
    case OP_PROD: {
        double n = reduced_count(v);
        if (n == 0) return rng(1, 1);
        if (a.lo >= 0)
            r = rng(pow(a.lo, n), pow(a.hi, n));
        else
            r = rng(-pow(reach(a), n), pow(reach(a), n));
        r.vague = a.vague;
        return r;
    }
    case OP_ARGMAX:
    case OP_ARGMIN: {
        double n = reduced_count(v);
        return rng(0, n > 0 ? n - 1 : 0);
    }
    case OP_VAR:
    case OP_STD: {
        /* A sample's population variance is at most (hi - lo)^2 / 4. */
        double n = reduced_count(v), c = 1;
        arg_num(v, 2, &c);
        if (n - c <= 0) return pole();
        double w = a.hi - a.lo, var = mulb(w, w) / 4 * (n / (n - c));
        if (isnan(var)) var = INFINITY;
        r = rng(0, v->op == OP_VAR ? var : sqrt(var));
        r.vague = a.vague;
        return r;
    }
    case OP_LOGSUMEXP: {
        double n = reduced_count(v);
        if (n == 0) return rng(-INFINITY, -INFINITY);
        r = rng(a.lo + log(n), a.hi + log(n));
        r.vague = a.vague;
        return r;
    }

    /* Neural-network functions. */
    case OP_SOFTMAX: return rng(0, 1);
    case OP_LOG_SOFTMAX: {
        /* x_i - logsumexp(x) >= lo - hi - log(n). */
        const Value *x = arg_t(v, 0);
        double n = INFINITY;
        if (x && v->nargs > 1 && v->args[1].kind == ARG_INT && v->args[1].i >= 0 &&
            v->args[1].i < x->ndim)
            n = (double)x->shape[v->args[1].i];
        r = rng(a.lo - a.hi - log(n), 0);
        if (isnan(r.lo)) r.lo = -INFINITY;
        return r;
    }
    case OP_LAYER_NORM:
    case OP_RMS_NORM: {
        /* |x_i - mean| <= sqrt(n - 1) * std and |x_i| <= sqrt(n) * rms, for
         * n normalised elements: the input's own range does not matter. */
        double n = 1;
        int wi = v->op == OP_LAYER_NORM ? 2 : 1;
        if (v->op == OP_LAYER_NORM) {
            if (v->nargs < 2 || v->args[1].kind != ARG_INTS) return unbounded();
            for (int i = 0; i < v->args[1].n; i++)
                n *= (double)v->args[1].ints[i];
        } else if (arg_t(v, 1)) {
            n = numel_d(arg_t(v, 1));
        } else {
            n = last_dim(arg_t(v, 0));
        }
        double z = sqrt(fmax(v->op == OP_LAYER_NORM ? n - 1 : n, 0));
        r = rng(-z, z);
        if (arg_t(v, wi)) r = r_mul(r, arg_r(A, v, wi));
        if (v->op == OP_LAYER_NORM && arg_t(v, 3)) r = r_add(r, arg_r(A, v, 3));
        return r;
    }

    /* Matrix products: depth k times the range of one term. */
    case OP_LINEAR:
        r = r_scale(last_dim(arg_t(v, 0)), r_mul(a, arg_r(A, v, 1)));
        if (arg_t(v, 2)) r = r_add(r, arg_r(A, v, 2));
        return r;
    case OP_MATMUL:
    case OP_MM:
    case OP_BMM:
    case OP_MV: return r_scale(last_dim(arg_t(v, 0)), r_mul(a, arg_r(A, v, 1)));
    case OP_OUTER: return r_mul(a, arg_r(A, v, 1));
    case OP_EINSUM: {
        if (v->nargs < 2 || v->args[1].kind != ARG_TENSORS || v->args[1].n < 1) return unbounded();
        r = get(A, v->args[1].ts[0]);
        for (int i = 1; i < v->args[1].n; i++)
            r = r_mul(r, get(A, v->args[1].ts[i]));
        return r_scale(einsum_depth(v), r);
    }

    case OP_ZEROS:
    case OP_ONES:
    case OP_FULL:
    case OP_ARANGE:
    case OP_EYE:
    case OP_TENSOR:
    case OP_ZEROS_LIKE:
    case OP_ONES_LIKE:
    case OP_FULL_LIKE: return eval_creation(v);

    /* Ops this analysis does not know yet: unknown, never a warning. */
    default: return unbounded();
    }
}

/* The analysis of one value, with the facts eval_op cannot know. */
static Range eval(const Analysis *A, const Value *v) {
    Range r = eval_op(A, v);
    if (isnan(r.lo) || isnan(r.hi) || r.lo > r.hi) r = unbounded();
    if (r.pole) r.vague = true;
    if (v->ntuple) return r;
    if (v->dtype == DT_BOOL) return rng(0, 1);
    if (dtype_is_int(v->dtype)) {
        /* Integers wrap: past the type's range they can be anything in it. */
        Range t = dtype_range(v->dtype);
        if (r.lo < t.lo || r.hi > t.hi) r = t, r.vague = true;
    }
    if (numel_d(v) == 0) return rng(0, 0);
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
        if (a->kind == ARG_TENSOR && !within(get(A, a->t))) return false;
        if (a->kind == ARG_TENSORS)
            for (int k = 0; k < a->n; k++)
                if (!within(get(A, a->ts[k]))) return false;
    }
    return true;
}

/* Where an overflow starts, whatever v's dtype. */
static Origin origin_of(const Analysis *A, const Value *v, Range r) {
    if (v->ntuple) return ORIGIN_NONE;
    if (v->op == OP_PARAM) return !r.vague && exceeds_finite(r) ? ORIGIN_CONST : ORIGIN_NONE;
    if (is_constant(v)) return const_finite_reach(v, r) > F16_MAX ? ORIGIN_CONST : ORIGIN_NONE;
    if (v->op == OP_CAST || v->op == OP_TO) {
        const Value *x = arg_t(v, 0);
        if (!x || x->dtype == v->dtype) return ORIGIN_NONE;
        Range a = get(A, x);
        if (a.src || (!a.vague && exceeds_finite(a))) return ORIGIN_CONVERT;
        return ORIGIN_NONE;
    }
    if (v->op == OP_EXP || v->op == OP_EXPM1) return r.hi > F16_MAX ? ORIGIN_EXP : ORIGIN_NONE;
    if (v->op == OP_POW) {
        if (within(arg_r(A, v, 0)) && exceeds(r) && !r.pole) return ORIGIN_POW;
        return ORIGIN_NONE;
    }
    if (exceeds(r) && !r.pole && !r.vague && operands_within(A, v)) return ORIGIN_OP;
    return ORIGIN_NONE;
}

/* Ops through which a non-f16 overflow travels on to a later cast. */
static bool carries(const Value *v) {
    switch (v->op) {
    case OP_CAT:
    case OP_CONCAT:
    case OP_STACK:
    case OP_WHERE:
    case OP_MASKED_FILL:
    case OP_AMAX:
    case OP_AMIN:
    case OP_TRIL:
    case OP_TRIU:
    case OP_EMBEDDING: return true;
    default:
        return (op_info(v->op)->flags & (OPF_VIEW | OPF_MAYBE_VIEW)) || is_identity(v) ||
               v->op == OP_SLICE || v->op == OP_INDEX || v->op == OP_GATHER ||
               v->op == OP_INDEX_SELECT || v->op == OP_REPEAT || v->op == OP_FLIP ||
               v->op == OP_CAST || v->op == OP_TO;
    }
}

static const Value *carried_src(const Analysis *A, const Value *v) {
    if (!carries(v)) return NULL;
    for (int i = 0; i < v->nargs; i++) {
        if (!operand_counts(v, i)) continue;
        const Arg *a = &v->args[i];
        if (a->kind == ARG_TENSOR && get(A, a->t).src) return get(A, a->t).src;
        if (a->kind == ARG_TENSORS)
            for (int k = 0; k < a->n; k++)
                if (get(A, a->ts[k]).src) return get(A, a->ts[k]).src;
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
                         op, const_finite_reach(v, r));
        break;
    case ORIGIN_EXP: {
        Range a = arg_r(A, v, 0);
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
        if (v->op == OP_SUM || v->op == OP_PROD) n = reduced_count(v), what = "elements";
        if (op_info(v->op)->flags & OPF_MATMUL) {
            n = v->op == OP_EINSUM ? einsum_depth(v) : last_dim(arg_t(v, 0));
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
        Range a = arg_r(A, v, 0);
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
