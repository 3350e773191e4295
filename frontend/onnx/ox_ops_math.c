/* ONNX operators on numbers that are one IR op or a short expression of
 * several: the trigonometric and hyperbolic functions, Softsign,
 * ThresholdedRelu, Shrink, Celu, Mean, IsInf, IsNaN, EyeLike, CumSum
 * (a masked sum, see cumsum()), LRN and MeanVarianceNormalization. Each follows ONNX's operator
 * specification, which wins where PyTorch's differs. */
#include <math.h>
#include <string.h>

#include "frontend/onnx/ox.h"

static bool math_nn(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out);

static void need_float(Ox *x, OxVal *v) {
    if (!dtype_is_float(v->dt))
        ox_fail(x, "the input is %s; %s takes floating-point tensors", dtype_name(v->dt),
                ox_cur(x)->op_type);
}

/* A number of v's dtype as a literal that keeps v's dtype in promotion. */
static const char *lit(Ox *x, OxVal *v, double f) {
    if (v->dt == DT_BOOL) return f != 0 ? "true" : "false";
    const char *s = ox_num(x, f, dtype_is_float(v->dt));
    return s[0] == '-' ? arena_printf(x->a, "(%s)", s) : s;
}

/* The elementwise ones: out[0] has in[0]'s shape, dtype dt. */
static bool unary(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    static const char *const fns[][2] = {
        {"Tan", "tan"},     {"Asin", "asin"},   {"Acos", "acos"},
        {"Atan", "atan"},   {"Sinh", "sinh"},   {"Cosh", "cosh"},
        {"Asinh", "asinh"}, {"Acosh", "acosh"}, {"Atanh", "atanh"}};
    int k = 0, nt = (int)(sizeof fns / sizeof *fns);
    while (k < nt && !ox_op_is(n, fns[k][0]))
        k++;
    bool other = ox_op_is(n, "Softsign") || ox_op_is(n, "ThresholdedRelu") ||
                 ox_op_is(n, "Shrink") || ox_op_is(n, "Celu") || ox_op_is(n, "IsInf") ||
                 ox_op_is(n, "IsNaN");
    if (k == nt && !other) return false;
    ox_need_inputs(x, in, nin, 1);
    OxVal *v = in[0];
    const char *r = ox_ref(x, v, false), *e;
    DType dt = v->dt;
    if (k < nt) {
        need_float(x, v);
        e = arena_printf(x->a, "%s(%s)", fns[k][1], r);
    } else if (ox_op_is(n, "Softsign")) {
        need_float(x, v);
        e = arena_printf(x->a, "%s / (1.0 + abs(%s))", r, r);
    } else if (ox_op_is(n, "ThresholdedRelu")) {
        need_float(x, v);
        e = arena_printf(x->a, "where(%s > %s, %s, 0.0)", r, lit(x, v, ox_attr_f(x, "alpha", 1)),
                         r);
    } else if (ox_op_is(n, "Shrink")) {
        /* x < -lambd: x + bias; x > lambd: x - bias; else 0 (any numeric type) */
        if (v->dt == DT_BOOL) ox_fail(x, "Shrink takes numbers, not bool");
        double l = ox_attr_f(x, "lambd", 0.5f), b = ox_attr_f(x, "bias", 0);
        bool fl = dtype_is_float(v->dt);
        if (!fl && (l != floor(l) || b != floor(b)))
            ox_fail(x, "lambd %g and bias %g must be integers for an integer input", l, b);
        e = arena_printf(x->a, "where(%s < %s, %s + %s, where(%s > %s, %s - %s, %s))", r,
                         lit(x, v, -l), r, lit(x, v, b), r, lit(x, v, l), r, lit(x, v, b),
                         lit(x, v, 0));
    } else if (ox_op_is(n, "Celu")) {
        /* max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) */
        need_float(x, v);
        double a = ox_attr_f(x, "alpha", 1);
        if (!(a != 0)) ox_fail(x, "alpha must not be 0");
        const char *al = lit(x, v, a);
        e = arena_printf(x->a, "relu(%s) + minimum(%s * expm1(%s / %s), 0.0)", r, al, r, al);
    } else if (ox_op_is(n, "IsInf")) {
        need_float(x, v);
        bool pos = ox_attr_i(x, "detect_positive", 1), neg = ox_attr_i(x, "detect_negative", 1);
        dt = DT_BOOL;
        if (pos && neg)
            e = arena_printf(x->a, "abs(%s) == %s", r, ox_num(x, INFINITY, true));
        else if (pos || neg)
            e = arena_printf(x->a, "%s == %s", r, lit(x, v, pos ? INFINITY : -INFINITY));
        else
            e = arena_printf(x->a, "full(%s, false, dtype=bool)", ox_dims_text(x, v->dim, v->ndim));
    } else {
        need_float(x, v);
        dt = DT_BOOL;
        e = arena_printf(x->a, "%s != %s", r, r);
    }
    return ox_bind_shaped(x, out[0], e, dt, v->ndim, v->dim);
}

/* Mean: the broadcast sum of the inputs over their count. */
static bool mean(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "Mean")) return false;
    ox_need_inputs(x, in, nin, nin > 0 ? nin : 1);
    OxDim d[OX_MAX_DIMS];
    int nd = in[0]->ndim;
    memcpy(d, in[0]->dim, sizeof d);
    need_float(x, in[0]);
    char *e = arena_printf(x->a, "(%s", ox_ref(x, in[0], false));
    for (int k = 1; k < nin; k++) {
        if (in[k]->dt != in[0]->dt)
            ox_fail(x, "input %d is %s, input 0 %s (Mean's inputs share one type)", k,
                    dtype_name(in[k]->dt), dtype_name(in[0]->dt));
        OxDim t[OX_MAX_DIMS];
        nd = ox_broadcast(x, d, nd, in[k]->dim, in[k]->ndim, t);
        memcpy(d, t, sizeof d);
        e = arena_printf(x->a, "%s + %s", e, ox_ref(x, in[k], false));
    }
    const char *s = nin == 1 ? arena_printf(x->a, "%s)", e)
                             : arena_printf(x->a, "%s) / %s", e, ox_num(x, nin, true));
    if (nin == 1 && !out[0]->is_output) {
        ox_set_shape(out[0], in[0]->dt, nd, d);
        out[0]->tg = ox_ref(x, in[0], false); /* an alias: no statement */
        return true;
    }
    return ox_bind_shaped(x, out[0], s, in[0]->dt, nd, d);
}

/* An [n] arange laid along dim `at` of a rank-r tensor (1 elsewhere). */
static const char *arange_at(Ox *x, OxDim len, int at, int r) {
    OxDim s[OX_MAX_DIMS + 1];
    for (int k = 0; k < r; k++)
        s[k] = k == at ? len : ox_dim_c(1);
    return arena_printf(x->a, "reshape(arange(0, %s, 1), %s)", ox_dim_text(x, len),
                        ox_dims_text(x, s, r));
}

/* EyeLike: ones where column - row == k, of the input's 2-d shape. */
static bool eye_like(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "EyeLike")) return false;
    ox_need_inputs(x, in, nin, 1);
    if (in[0]->ndim != 2) ox_fail(x, "the input has rank %d, EyeLike's is 2", in[0]->ndim);
    DType dt = ox_attr(x, "dtype") ? ox_dtype(x, (int)ox_attr_i(x, "dtype", 0), "EyeLike's 'dtype'")
                                   : in[0]->dt;
    int64_t k = ox_attr_i(x, "k", 0);
    if (k < -INT32_MAX || k > INT32_MAX) ox_fail(x, "k %lld is out of range", (long long)k);
    ox_bind(x, out[0],
            arena_printf(x->a, "(%s - %s == %lld).to(%s)", arange_at(x, in[0]->dim[1], 1, 2),
                         arange_at(x, in[0]->dim[0], 0, 2), (long long)k, dtype_name(dt)));
    ox_set_shape(out[0], dt, 2, in[0]->dim);
    return true;
}

/* CumSum along axis a of length L: out[i] = the sum of x[j] over the j
 * that the mask j <= i (exclusive: j < i; reverse: j >= i, j > i) keeps,
 * written as sum(where(mask, x.unsqueeze(a + 1), 0), dim=a) with the mask
 * [L, L] at dims a, a + 1: one fused masked reduction of L * L terms per
 * output line, no [L, L] tensor stored. Integer sums are exact in any
 * order; torch's sum widens them to i64, so the result is cast back. */
static const char *cumsum_at(Ox *x, OxVal *v, int a, bool excl, bool rev) {
    int r = v->ndim;
    OxDim L = v->dim[a];
    const char *cmp = rev ? (excl ? ">" : ">=") : (excl ? "<" : "<=");
    const char *mask = arena_printf(x->a, "%s %s %s", arange_at(x, L, a, r + 1), cmp,
                                    arange_at(x, L, a + 1, r + 1));
    const char *e = arena_printf(x->a, "sum(where(%s, %s.unsqueeze(%d), %s), dim=%d)", mask,
                                 ox_ref(x, v, false), a + 1, lit(x, v, 0), a);
    if (!dtype_is_float(v->dt)) e = arena_printf(x->a, "%s.to(%s)", e, dtype_name(v->dt));
    return e;
}

/* The axis is an input: known at import, one sum; known only at run time
 * (the output's shape is the input's either way), the sums along every
 * axis, the one the axis names picked with where() (rank times the work,
 * and negative axes counted from the end as ONNX's). */
static bool cumsum(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "CumSum")) return false;
    ox_need_inputs(x, in, nin, 2);
    OxVal *v = in[0], *av = in[1];
    int r = v->ndim;
    if (r < 1) ox_fail(x, "the input must have at least one dimension");
    if (r + 1 > OX_MAX_DIMS) ox_fail(x, "too many dimensions");
    if (v->dt == DT_BOOL) ox_fail(x, "CumSum takes numbers, not bool");
    if (av->ndim > 1 || (av->ndim == 1 && (av->dim[0].sym || av->dim[0].v != 1)))
        ox_fail(x, "axis must be a scalar");
    if (av->dt != DT_I32 && av->dt != DT_I64)
        ox_fail(x, "axis is %s, expected int32 or int64", dtype_name(av->dt));
    bool excl = ox_attr_i(x, "exclusive", 0), rev = ox_attr_i(x, "reverse", 0);
    const char *e;
    if (av->c) {
        e = cumsum_at(x, v, ox_axis(x, ox_const_int(x, av->c, 0), r), excl, rev);
    } else {
        const char *ar = ox_ref(x, av, false);
        if (av->ndim) ar = arena_printf(x->a, "reshape(%s, [])", ar);
        e = cumsum_at(x, v, r - 1, excl, rev);
        for (int a = r - 2; a >= 0; a--)
            e = arena_printf(x->a, "where((%s == %d) | (%s == %d), %s, %s)", ar, a, ar, a - r,
                             cumsum_at(x, v, a, excl, rev), e);
    }
    return ox_bind_shaped(x, out[0], e, v->dt, r, v->dim);
}

bool ox_op_math(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    return unary(x, n, in, nin, out) || mean(x, n, in, nin, out) || eye_like(x, n, in, nin, out) ||
           cumsum(x, n, in, nin, out) || math_nn(x, n, in, nin, out);
}

/* LRN: x / (bias + alpha / size * the sum of squares over the channel
 * window [c - (size - 1) / 2, c + ceil((size - 1) / 2)])^beta, the window's
 * channels as slices of the padded squares. */
static bool lrn(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "LRN")) return false;
    ox_need_inputs(x, in, nin, 1);
    OxVal *v = in[0];
    need_float(x, v);
    int r = v->ndim;
    if (r < 3) ox_fail(x, "the input must be [N, C, ...]");
    int64_t size = ox_attr_i(x, "size", 0);
    if (size < 1 || size > 4096) ox_fail(x, "size %lld (1 to 4096)", (long long)size);
    double alpha = ox_attr_f(x, "alpha", 1e-4f), beta = ox_attr_f(x, "beta", 0.75f),
           bias = ox_attr_f(x, "bias", 1.0f);
    int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    const char *src = ox_ref(x, v, false);
    char *pads = arena_strdup(x->a, "[");
    for (int k = r - 1; k >= 1; k--)
        pads = arena_printf(x->a, "%s%s%lld, %lld", pads, k == r - 1 ? "" : ", ",
                            (long long)(k == 1 ? lo : 0), (long long)(k == 1 ? hi : 0));
    const char *sq = ox_ident(x, out[0]->name, "_sq");
    ox_emit(x, OX_BODY, "%s = pad(square(%s), %s])\n", sq, src, pads);
    const char *C = ox_dim_text(x, v->dim[1]);
    const char *sum = NULL;
    for (int64_t j = 0; j < size; j++) {
        const char *t =
            arena_printf(x->a, "%s[:, %lld:%lld + %s]", sq, (long long)j, (long long)j, C);
        sum = sum ? arena_printf(x->a, "%s + %s", sum, t) : t;
    }
    ox_bind(x, out[0],
            arena_printf(x->a, "%s / (%s + %s * (%s)) ** %s", src, ox_num(x, bias, true),
                         ox_num(x, alpha / (double)size, true), sum, ox_num(x, beta, true)));
    ox_set_shape(out[0], v->dt, r, v->dim);
    return true;
}

/* MeanVarianceNormalization, as ONNX's function body: (x - E[x]) /
 * (sqrt(E[x^2] - E[x]^2) + 1e-9) over axes (default [0, 2, 3]). */
static bool mvn(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "MeanVarianceNormalization")) return false;
    ox_need_inputs(x, in, nin, 1);
    OxVal *v = in[0];
    need_float(x, v);
    int na, r = v->ndim;
    const int64_t *ax = ox_attr_ints(x, "axes", &na);
    static const int64_t def[3] = {0, 2, 3};
    if (!ax) ax = def, na = 3;
    if (na < 1 || na > r) ox_fail(x, "%d axes for a tensor of rank %d", na, r);
    char *dims = arena_strdup(x->a, "[");
    for (int k = 0; k < na; k++)
        dims = arena_printf(x->a, "%s%s%d", dims, k ? ", " : "", ox_axis(x, ax[k], r));
    const char *src = ox_ref(x, v, false);
    const char *m = ox_ident(x, out[0]->name, "_mean");
    ox_emit(x, OX_BODY, "%s = mean(%s, dim=%s], keepdim=true)\n", m, src, dims);
    ox_bind(x, out[0],
            arena_printf(x->a,
                         "(%s - %s) / (sqrt(mean(square(%s), dim=%s], keepdim=true) - square(%s)) "
                         "+ 1e-09)",
                         src, m, src, dims, m));
    ox_set_shape(out[0], v->dt, r, v->dim);
    return true;
}

/* BitShift of an unsigned type (ONNX's only ones): x * 2^y and
 * floor_divide(x, 2^y), 2^y in the type's arithmetic, so that shifts of
 * its width or more give 0 both ways (the power wraps to 0, and integer
 * division by 0 is 0 in compiled code), as the shifted value truncated to
 * the width; the division is unsigned, so the right shift is logical. */
static bool bitshift(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "BitShift")) return false;
    ox_need_inputs(x, in, nin, 2);
    if (!dtype_is_unsigned(in[0]->dt) || in[1]->dt != in[0]->dt)
        ox_fail(x, "BitShift of %s by %s: one unsigned type (u8, u16, u32, u64) is supported",
                dtype_name(in[0]->dt), dtype_name(in[1]->dt));
    const char *dir = ox_attr_s(x, "direction", "");
    bool left = !strcmp(dir, "LEFT");
    if (!left && strcmp(dir, "RIGHT")) ox_fail(x, "direction '%s' (LEFT or RIGHT)", dir);
    OxDim d[OX_MAX_DIMS];
    int nd = ox_broadcast(x, in[0]->dim, in[0]->ndim, in[1]->dim, in[1]->ndim, d);
    const char *a = ox_ref(x, in[0], false), *b = ox_ref(x, in[1], false);
    ox_bind(x, out[0],
            left ? arena_printf(x->a, "%s * (2 ** %s)", a, b)
                 : arena_printf(x->a, "floor_divide(%s, 2 ** %s)", a, b));
    ox_set_shape(out[0], in[0]->dt, nd, d);
    return true;
}

static bool math_nn(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    return lrn(x, n, in, nin, out) || mvn(x, n, in, nin, out) || bitshift(x, n, in, nin, out);
}
