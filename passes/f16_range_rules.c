/* The range rule of each op for the f16 range analysis (see
 * f16_range_impl.h): interval arithmetic, then one rule per op or family
 * of ops, and the table that maps ops to them. docs/precision.md states
 * the rules. */
#include <string.h>

#include "passes/f16_range_impl.h"

/* ---- interval arithmetic ----------------------------------------------- */

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

/* ---- reading arguments ------------------------------------------------- */

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

static const Value *strip_identity(const Value *v) {
    for (int guard = 0; v && guard < 64 && f16r_is_identity(v); guard++)
        v = f16r_arg(v, 0);
    return v;
}

/* Also through the broadcast that lines a keepdim reduction up with its input. */
static const Value *strip_broadcast(const Value *v) {
    for (int guard = 0; v && guard < 64; guard++) {
        if (v->op == OP_EXPAND || v->op == OP_EXPAND_AS || f16r_is_identity(v))
            v = f16r_arg(v, 0);
        else
            break;
    }
    return v;
}

/* r is op(x) over some dims, broadcast back so that each element meets the
 * reduction of its own row: keepdim, or everything reduced. */
static bool reduces_own_rows(const Value *r, OpCode op, const Value *x) {
    if (!r || !x || r->op != op) return false;
    if (strip_identity(f16r_arg(r, 0)) != strip_identity(x)) return false;
    return r->ndim == 0 || arg_flag(r, 2);
}

/* ---- the range rules --------------------------------------------------- *
 * One function per op (or per family of ops with one rule); `a` is the
 * range of v's first tensor operand. rules[] below maps ops to them. */

typedef Range (*RangeRule)(const Analysis *A, const Value *v, Range a);

/* Sources and constants. */
static Range range_input(const Analysis *A, const Value *v, Range a) {
    (void)A, (void)a;
    return dtype_is_float(v->dtype) ? unbounded() : f16r_dtype_range(v->dtype);
}
static Range range_param(const Analysis *A, const Value *v, Range a) {
    (void)a;
    double lo, hi;
    if (A->range && A->range(A->ctx, v, &lo, &hi) && lo <= hi) return rng(lo, hi);
    const ParamInit *in = &v->init;
    switch (in->kind) {
    case INIT_ZEROS: return rng(0, 0);
    case INIT_ONES: return rng(1, 1);
    case INIT_FULL: return rng(in->a, in->a);
    case INIT_UNIFORM: return rng(fmin(in->a, in->b), fmax(in->a, in->b));
    case INIT_ARANGE: {
        double n = f16r_numel(v);
        return rng(0, n > 0 ? n - 1 : 0);
    }
    case INIT_RANDN:
        if (in->a == 0) return rng(0, 0);
        return unbounded();
    default: return dtype_is_float(v->dtype) ? unbounded() : f16r_dtype_range(v->dtype);
    }
}
static Range range_scalar(const Analysis *A, const Value *v, Range a) {
    (void)A, (void)a;
    return rng(v->scalar, v->scalar);
}
static Range range_zeros(const Analysis *A, const Value *v, Range a) {
    (void)A, (void)v, (void)a;
    return rng(0, 0);
}
static Range range_ones(const Analysis *A, const Value *v, Range a) {
    (void)A, (void)v, (void)a;
    return rng(1, 1);
}
static Range range_full(const Analysis *A, const Value *v, Range a) {
    (void)A, (void)a;
    double f;
    if (arg_num(v, 1, &f)) return rng(f, f);
    return unbounded();
}
static Range range_arange(const Analysis *A, const Value *v, Range a) {
    (void)A, (void)a;
    double s, e, st;
    if (!arg_num(v, 0, &s) || !arg_num(v, 1, &e) || !arg_num(v, 2, &st) || v->ndim != 1)
        return unbounded();
    double n = (double)v->shape[0];
    if (n <= 0) return rng(0, 0);
    double last = s + (n - 1) * st;
    return rng(fmin(s, last), fmax(s, last));
}
static Range range_tensor(const Analysis *A, const Value *v, Range a) {
    (void)A, (void)a;
    const Arg *d = v->nargs > 0 ? &v->args[0] : NULL;
    if (!d || d->kind != ARG_ANY_LIST || !d->data) return unbounded();
    double n = f16r_data_count(d);
    Range r = rng(INFINITY, -INFINITY);
    for (int64_t i = 0; i < (int64_t)n; i++) {
        r.lo = fmin(r.lo, d->data[i]);
        r.hi = fmax(r.hi, d->data[i]);
    }
    return n > 0 ? r : rng(0, 0);
}

/* Same values, other layout or place. */
static Range range_same(const Analysis *A, const Value *v, Range a) {
    (void)A, (void)v;
    return a;
}
static Range range_cast(const Analysis *A, const Value *v, Range a) {
    (void)A;
    /* Float -> int truncates toward zero; ends stay ends. */
    if (dtype_is_int(v->dtype)) return r_mono(a, trunc);
    return a;
}
static Range range_embedding(const Analysis *A, const Value *v, Range a) {
    (void)a;
    return f16r_arg_range(A, v, 1);
}
static Range range_tri(const Analysis *A, const Value *v, Range a) {
    (void)A, (void)v;
    return r_hull(a, rng(0, 0));
}
/* The ranges of v's tensor list argument i combined by f, left to right,
 * into *out; false when v has no list there or an empty one. */
static bool fold_list(const Analysis *A, const Value *v, int i, Range (*f)(Range, Range),
                      Range *out) {
    if (v->nargs <= i || v->args[i].kind != ARG_TENSORS || v->args[i].n < 1) return false;
    *out = f16r_get(A, v->args[i].ts[0]);
    for (int k = 1; k < v->args[i].n; k++)
        *out = f(*out, f16r_get(A, v->args[i].ts[k]));
    return true;
}
static Range range_cat(const Analysis *A, const Value *v, Range a) {
    (void)a;
    Range r;
    return fold_list(A, v, 0, r_hull, &r) ? r : unbounded();
}

/* Binary elementwise. */
static Range range_add_sub(const Analysis *A, const Value *v, Range a) {
    double alpha = 1;
    arg_num(v, 2, &alpha);
    Range b = f16r_arg_range(A, v, 1);
    /* x - amax(x) <= 0 and x - logsumexp(x) <= 0 over the same rows:
     * the stable softmax, which intervals alone cannot see. */
    if (v->op == OP_SUB && alpha > 0) {
        const Value *m = strip_broadcast(f16r_arg(v, 1));
        if (reduces_own_rows(m, OP_AMAX, f16r_arg(v, 0)) ||
            reduces_own_rows(m, OP_LOGSUMEXP, f16r_arg(v, 0))) {
            Range r = rng(a.lo - a.hi, 0);
            if (isnan(r.lo)) r.lo = -INFINITY;
            r.vague = a.vague;
            return r;
        }
    }
    b = r_scale(alpha, b);
    return r_add(a, v->op == OP_SUB ? r_neg(b) : b);
}
static Range range_mul(const Analysis *A, const Value *v, Range a) {
    /* x * x >= 0 and -x * x <= 0 (as in exp(-x * x)): one value met
     * twice, which separate intervals would treat as independent. */
    const Value *x = strip_broadcast(f16r_arg(v, 0)), *y = strip_broadcast(f16r_arg(v, 1));
    if (x && x == y) return r_pow_const(a, 2);
    if (x && y && x->op == OP_NEG && strip_broadcast(f16r_arg(x, 0)) == y)
        return r_neg(r_pow_const(f16r_arg_range(A, v, 1), 2));
    if (x && y && y->op == OP_NEG && strip_broadcast(f16r_arg(y, 0)) == x)
        return r_neg(r_pow_const(a, 2));
    return r_mul(a, f16r_arg_range(A, v, 1));
}
static Range range_div(const Analysis *A, const Value *v, Range a) {
    Range b = f16r_arg_range(A, v, 1);
    /* x / sum(x) over x's own rows, x >= 0: a normalisation into [0, 1]. */
    const Value *s = strip_broadcast(f16r_arg(v, 1));
    if (a.lo >= 0 && reduces_own_rows(s, OP_SUM, f16r_arg(v, 0))) return rng(0, 1);
    Range r = r_div(a, b);
    if (!r.pole && v->nargs > 2 && v->args[2].kind == ARG_STR && v->args[2].s) {
        if (!strcmp(v->args[2].s, "floor")) r = r_mono(r, floor);
        if (!strcmp(v->args[2].s, "trunc")) r = r_mono(r, trunc);
    }
    return r;
}
static Range range_floor_divide(const Analysis *A, const Value *v, Range a) {
    Range r = r_div(a, f16r_arg_range(A, v, 1));
    if (r.pole) return r;
    return r_mono(r, floor);
}
static Range range_remainder(const Analysis *A, const Value *v, Range a) {
    (void)a;
    /* The result takes the divisor's sign and is smaller than it. */
    Range b = f16r_arg_range(A, v, 1), r;
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
static Range range_pow(const Analysis *A, const Value *v, Range a) {
    return r_pow(a, f16r_arg_range(A, v, 1));
}
static Range range_min_max(const Analysis *A, const Value *v, Range a) {
    Range b = f16r_arg_range(A, v, 1);
    Range r = v->op == OP_MINIMUM ? rng(fmin(a.lo, b.lo), fmin(a.hi, b.hi))
                                  : rng(fmax(a.lo, b.lo), fmax(a.hi, b.hi));
    r.vague = a.vague || b.vague;
    return r;
}
/* Comparisons, logic, eye, softmax: within [0, 1]. */
static Range range_0_1(const Analysis *A, const Value *v, Range a) {
    (void)A, (void)v, (void)a;
    return rng(0, 1);
}
static Range range_bitwise(const Analysis *A, const Value *v, Range a) {
    if (v->dtype == DT_BOOL) return rng(0, 1);
    Range r = f16r_dtype_range(v->dtype);
    r.vague = r.vague || a.vague || f16r_arg_range(A, v, 1).vague;
    return r;
}
static Range range_bitwise_not(const Analysis *A, const Value *v, Range a) {
    (void)A;
    if (v->dtype == DT_BOOL) return rng(0, 1);
    Range r = rng(-a.hi - 1, -a.lo - 1);
    r.vague = a.vague;
    return r;
}
static Range range_where(const Analysis *A, const Value *v, Range a) {
    (void)a;
    return r_hull(f16r_arg_range(A, v, 1), f16r_arg_range(A, v, 2));
}
static Range range_masked_fill(const Analysis *A, const Value *v, Range a) {
    return r_hull(a, f16r_arg_range(A, v, 2));
}
static Range range_clamp(const Analysis *A, const Value *v, Range a) {
    (void)A;
    double mn, mx;
    bool has_mn = arg_num(v, 1, &mn), has_mx = arg_num(v, 2, &mx);
    Range r = a;
    if (has_mn) r.lo = fmax(r.lo, mn), r.hi = fmax(r.hi, mn);
    if (has_mx) r.lo = fmin(r.lo, mx), r.hi = fmin(r.hi, mx);
    if (has_mn && has_mx) r.vague = false;
    return r;
}

/* Unary elementwise: rules of `a` alone. */
#define UNARY_RULE(name, expr)                                                                     \
    static Range name(const Analysis *A, const Value *v, Range a) {                                \
        (void)A, (void)v, (void)a;                                                                 \
        return expr;                                                                               \
    }
UNARY_RULE(range_neg, r_neg(a))
UNARY_RULE(range_sign, rng(a.lo > 0 ? 1 : a.lo < 0 ? -1 : 0, a.hi > 0 ? 1 : a.hi < 0 ? -1 : 0))
UNARY_RULE(range_floor, r_mono(a, floor))
UNARY_RULE(range_ceil, r_mono(a, ceil))
UNARY_RULE(range_round, r_mono(a, nearbyint))
UNARY_RULE(range_trunc, r_mono(a, trunc))
UNARY_RULE(range_square, r_pow_const(a, 2))
UNARY_RULE(range_exp, r_mono(a, exp))
UNARY_RULE(range_expm1, r_mono(a, expm1))
UNARY_RULE(range_recip, r_recip(a))
UNARY_RULE(range_sin_cos, rng(-1, 1))
UNARY_RULE(range_tanh, rng(tanh(a.lo), tanh(a.hi)))
UNARY_RULE(range_sigmoid, rng(sigmoid_d(a.lo), sigmoid_d(a.hi)))
UNARY_RULE(range_erf, rng(erf(a.lo), erf(a.hi)))
/* Minima of x * Phi(x) and x * sigmoid(x), rounded down (the tanh
 * approximation of gelu differs in the fourth digit). */
UNARY_RULE(range_gelu, r_dip(a, gelu_d, -0.7518, -0.1702))
UNARY_RULE(range_silu, r_dip(a, silu_d, -1.2785, -0.2785))
/* Minima of x * relu6(x + 3) / 6 and x * tanh(softplus(x)), the
 * latter rounded down. */
UNARY_RULE(range_hardswish, r_dip(a, hardswish_d, -1.5, -0.375))
UNARY_RULE(range_mish, r_dip(a, mish_d, -1.1924, -0.3089))
UNARY_RULE(range_hardsigmoid, rng(hardsigmoid_d(a.lo), hardsigmoid_d(a.hi)))
/* Mean, amax, amin stay within their input's range. */
UNARY_RULE(range_within, a)
#undef UNARY_RULE

static Range range_abs(const Analysis *A, const Value *v, Range a) {
    (void)A, (void)v;
    Range r = a.lo >= 0 ? a : a.hi <= 0 ? r_neg(a) : rng(0, reach(a));
    r.vague = a.vague;
    return r;
}
static Range range_relu(const Analysis *A, const Value *v, Range a) {
    (void)A, (void)v;
    Range r = rng(fmax(a.lo, 0), fmax(a.hi, 0));
    r.vague = a.vague;
    return r;
}
static Range range_log(const Analysis *A, const Value *v, Range a) {
    (void)A;
    double edge = v->op == OP_LOG ? 0 : -1;
    if (a.hi < edge) return unbounded(); /* NaN, not an overflow */
    Range r = rng(fmax(a.lo, edge), a.hi);
    r = r_mono(r, v->op == OP_LOG ? log : log1p);
    r.vague = a.vague;
    if (a.lo <= edge) r.pole = r.vague = true; /* log(0) is -inf in every dtype */
    return r;
}
static Range range_sqrt(const Analysis *A, const Value *v, Range a) {
    (void)A, (void)v;
    Range r = rng(sqrt(fmax(a.lo, 0)), sqrt(fmax(a.hi, 0)));
    r.vague = a.vague;
    return r;
}
static Range range_rsqrt(const Analysis *A, const Value *v, Range a) {
    (void)A, (void)v;
    if (a.hi < 0) return unbounded();
    if (a.lo <= 0) return pole();
    Range r = rng(1 / sqrt(a.hi), 1 / sqrt(a.lo));
    r.vague = a.vague;
    return r;
}
static Range range_leaky_relu(const Analysis *A, const Value *v, Range a) {
    (void)A;
    double slope = 0.01, k0 = 0, f0 = 0;
    arg_num(v, 1, &slope);
    return r_kinked(a, leaky_relu_d(a.lo, slope), leaky_relu_d(a.hi, slope), &k0, &f0, &f0, 1);
}
static Range range_elu(const Analysis *A, const Value *v, Range a) {
    (void)A;
    /* alpha * (exp(x) - 1) below 0: from -alpha (at -inf) to 0. */
    double alpha = 1, k0 = 0, f0 = 0;
    arg_num(v, 1, &alpha);
    return r_kinked(a, elu_d(a.lo, alpha), elu_d(a.hi, alpha), &k0, &f0, &f0, 1);
}
static Range range_softplus(const Analysis *A, const Value *v, Range a) {
    (void)A;
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
static Range range_hardtanh(const Analysis *A, const Value *v, Range a) {
    (void)A;
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
static Range range_sum(const Analysis *A, const Value *v, Range a) {
    (void)A;
    return r_scale(f16r_reduced_count(v), a);
}
static Range range_prod(const Analysis *A, const Value *v, Range a) {
    (void)A;
    double n = f16r_reduced_count(v);
    if (n == 0) return rng(1, 1);
    Range r;
    if (a.lo >= 0)
        r = rng(pow(a.lo, n), pow(a.hi, n));
    else
        r = rng(-pow(reach(a), n), pow(reach(a), n));
    r.vague = a.vague;
    return r;
}
static Range range_arg_extreme(const Analysis *A, const Value *v, Range a) {
    (void)A, (void)a;
    double n = f16r_reduced_count(v);
    return rng(0, n > 0 ? n - 1 : 0);
}
static Range range_var_std(const Analysis *A, const Value *v, Range a) {
    (void)A;
    /* A sample's population variance is at most (hi - lo)^2 / 4. */
    double n = f16r_reduced_count(v), c = 1;
    arg_num(v, 2, &c);
    if (n - c <= 0) return pole();
    double w = a.hi - a.lo, var = mulb(w, w) / 4 * (n / (n - c));
    if (isnan(var)) var = INFINITY;
    Range r = rng(0, v->op == OP_VAR ? var : sqrt(var));
    r.vague = a.vague;
    return r;
}
static Range range_logsumexp(const Analysis *A, const Value *v, Range a) {
    (void)A;
    double n = f16r_reduced_count(v);
    if (n == 0) return rng(-INFINITY, -INFINITY);
    Range r = rng(a.lo + log(n), a.hi + log(n));
    r.vague = a.vague;
    return r;
}

/* Neural-network functions. */
static Range range_log_softmax(const Analysis *A, const Value *v, Range a) {
    (void)A;
    /* x_i - logsumexp(x) >= lo - hi - log(n). */
    const Value *x = f16r_arg(v, 0);
    double n = INFINITY;
    if (x && v->nargs > 1 && v->args[1].kind == ARG_INT && v->args[1].i >= 0 &&
        v->args[1].i < x->ndim)
        n = (double)x->shape[v->args[1].i];
    Range r = rng(a.lo - a.hi - log(n), 0);
    if (isnan(r.lo)) r.lo = -INFINITY;
    return r;
}
static Range range_norm(const Analysis *A, const Value *v, Range a) {
    (void)a;
    /* |x_i - mean| <= sqrt(n - 1) * std and |x_i| <= sqrt(n) * rms, for
     * n normalised elements: the input's own range does not matter. */
    double n = 1;
    int wi = v->op == OP_LAYER_NORM ? 2 : 1;
    if (v->op == OP_LAYER_NORM) {
        if (v->nargs < 2 || v->args[1].kind != ARG_INTS) return unbounded();
        for (int i = 0; i < v->args[1].n; i++)
            n *= (double)v->args[1].ints[i];
    } else if (f16r_arg(v, 1)) {
        n = f16r_numel(f16r_arg(v, 1));
    } else {
        n = f16r_last_dim(f16r_arg(v, 0));
    }
    double z = sqrt(fmax(v->op == OP_LAYER_NORM ? n - 1 : n, 0));
    Range r = rng(-z, z);
    if (f16r_arg(v, wi)) r = r_mul(r, f16r_arg_range(A, v, wi));
    if (v->op == OP_LAYER_NORM && f16r_arg(v, 3)) r = r_add(r, f16r_arg_range(A, v, 3));
    return r;
}

/* Matrix products: depth k times the range of one term. */
static Range range_matmul(const Analysis *A, const Value *v, Range a) {
    return r_scale(f16r_last_dim(f16r_arg(v, 0)), r_mul(a, f16r_arg_range(A, v, 1)));
}
static Range range_linear(const Analysis *A, const Value *v, Range a) {
    Range r = range_matmul(A, v, a);
    if (f16r_arg(v, 2)) r = r_add(r, f16r_arg_range(A, v, 2));
    return r;
}
static Range range_outer(const Analysis *A, const Value *v, Range a) {
    return r_mul(a, f16r_arg_range(A, v, 1));
}
static Range range_einsum(const Analysis *A, const Value *v, Range a) {
    (void)a;
    Range r;
    if (!fold_list(A, v, 1, r_mul, &r)) return unbounded();
    return r_scale(f16r_einsum_depth(v), r);
}

/* Each op's rule; ops without one (not known to this analysis yet) are
 * unknown, never a warning. */
static const RangeRule rules[OP_COUNT] = {
    [OP_INPUT] = range_input,
    [OP_PARAM] = range_param,
    [OP_SCALAR] = range_scalar,
    [OP_ZEROS] = range_zeros,
    [OP_ZEROS_LIKE] = range_zeros,
    [OP_ONES] = range_ones,
    [OP_ONES_LIKE] = range_ones,
    [OP_EYE] = range_0_1,
    [OP_FULL] = range_full,
    [OP_FULL_LIKE] = range_full,
    [OP_ARANGE] = range_arange,
    [OP_TENSOR] = range_tensor,

    [OP_ALIAS] = range_same,
    [OP_COPY] = range_same,
    [OP_SLICE] = range_same,
    [OP_INDEX] = range_same,
    [OP_VIEW] = range_same,
    [OP_RESHAPE] = range_same,
    [OP_FLATTEN] = range_same,
    [OP_UNFLATTEN] = range_same,
    [OP_TRANSPOSE] = range_same,
    [OP_SWAPAXES] = range_same,
    [OP_PERMUTE] = range_same,
    [OP_SQUEEZE] = range_same,
    [OP_UNSQUEEZE] = range_same,
    [OP_EXPAND] = range_same,
    [OP_EXPAND_AS] = range_same,
    [OP_NARROW] = range_same,
    [OP_SELECT] = range_same,
    [OP_CHUNK] = range_same,
    [OP_SPLIT] = range_same,
    [OP_DIAGONAL] = range_same,
    [OP_CONTIGUOUS] = range_same,
    [OP_DETACH] = range_same,
    [OP_DROPOUT] = range_same,
    [OP_CLONE] = range_same,
    [OP_GATHER] = range_same,
    [OP_INDEX_SELECT] = range_same,
    [OP_REPEAT] = range_same,
    [OP_FLIP] = range_same,
    /* the tuple of (values, indices); its parts are values of their own */
    [OP_MAX] = range_same,
    [OP_MIN] = range_same,
    [OP_CAST] = range_cast,
    [OP_TO] = range_cast,
    [OP_EMBEDDING] = range_embedding,
    [OP_TRIL] = range_tri,
    [OP_TRIU] = range_tri,
    [OP_CAT] = range_cat,
    [OP_CONCAT] = range_cat,
    [OP_STACK] = range_cat,

    [OP_ADD] = range_add_sub,
    [OP_SUB] = range_add_sub,
    [OP_MUL] = range_mul,
    [OP_DIV] = range_div,
    [OP_FLOOR_DIVIDE] = range_floor_divide,
    [OP_REMAINDER] = range_remainder,
    [OP_POW] = range_pow,
    [OP_MINIMUM] = range_min_max,
    [OP_MAXIMUM] = range_min_max,
    [OP_EQ] = range_0_1,
    [OP_NE] = range_0_1,
    [OP_LT] = range_0_1,
    [OP_LE] = range_0_1,
    [OP_GT] = range_0_1,
    [OP_GE] = range_0_1,
    [OP_LOGICAL_AND] = range_0_1,
    [OP_LOGICAL_OR] = range_0_1,
    [OP_LOGICAL_NOT] = range_0_1,
    [OP_ALL] = range_0_1,
    [OP_ANY] = range_0_1,
    [OP_BITWISE_AND] = range_bitwise,
    [OP_BITWISE_OR] = range_bitwise,
    [OP_BITWISE_NOT] = range_bitwise_not,
    [OP_WHERE] = range_where,
    [OP_MASKED_FILL] = range_masked_fill,
    [OP_CLAMP] = range_clamp,
    [OP_CLIP] = range_clamp,

    [OP_NEG] = range_neg,
    [OP_ABS] = range_abs,
    [OP_SIGN] = range_sign,
    [OP_RELU] = range_relu,
    [OP_FLOOR] = range_floor,
    [OP_CEIL] = range_ceil,
    [OP_ROUND] = range_round,
    [OP_TRUNC] = range_trunc,
    [OP_SQUARE] = range_square,
    [OP_EXP] = range_exp,
    [OP_EXPM1] = range_expm1,
    [OP_LOG] = range_log,
    [OP_LOG1P] = range_log,
    [OP_SQRT] = range_sqrt,
    [OP_RSQRT] = range_rsqrt,
    [OP_RECIPROCAL] = range_recip,
    [OP_SIN] = range_sin_cos,
    [OP_COS] = range_sin_cos,
    [OP_TANH] = range_tanh,
    [OP_SIGMOID] = range_sigmoid,
    [OP_ERF] = range_erf,
    [OP_GELU] = range_gelu,
    [OP_SILU] = range_silu,
    [OP_HARDSWISH] = range_hardswish,
    [OP_MISH] = range_mish,
    [OP_HARDSIGMOID] = range_hardsigmoid,
    [OP_LEAKY_RELU] = range_leaky_relu,
    [OP_ELU] = range_elu,
    [OP_SOFTPLUS] = range_softplus,
    [OP_HARDTANH] = range_hardtanh,
    [OP_RELU6] = range_hardtanh,

    [OP_SUM] = range_sum,
    [OP_MEAN] = range_within,
    [OP_AMAX] = range_within,
    [OP_AMIN] = range_within,
    [OP_PROD] = range_prod,
    [OP_ARGMAX] = range_arg_extreme,
    [OP_ARGMIN] = range_arg_extreme,
    [OP_VAR] = range_var_std,
    [OP_STD] = range_var_std,
    [OP_LOGSUMEXP] = range_logsumexp,

    [OP_SOFTMAX] = range_0_1,
    [OP_LOG_SOFTMAX] = range_log_softmax,
    [OP_LAYER_NORM] = range_norm,
    [OP_RMS_NORM] = range_norm,

    [OP_LINEAR] = range_linear,
    [OP_MATMUL] = range_matmul,
    [OP_MM] = range_matmul,
    [OP_BMM] = range_matmul,
    [OP_MV] = range_matmul,
    [OP_OUTER] = range_outer,
    [OP_EINSUM] = range_einsum,
};

Range f16r_eval_op(const Analysis *A, const Value *v) {
    if (v->op < 0 || v->op >= OP_COUNT || !rules[v->op]) return unbounded();
    return rules[v->op](A, v, f16r_arg_range(A, v, 0));
}
