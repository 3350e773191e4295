/* ONNX operators on tensors: elementwise arithmetic and activations,
 * views (Reshape, Transpose, Slice, Squeeze...), Gather, Concat, Split,
 * Expand, Where, Cast, Pad, Tile, Einsum: each one .tg statement with its
 * output's dtype and shape (the folding of later nodes needs them). */
#include <math.h>
#include <string.h>

#include "frontend/onnx/ox.h"

static void same_shape(OxVal *o, OxVal *i, DType dt) {
    ox_set_shape(o, dt, i->ndim, i->dim);
}

/* An operand of a binary op: a 1-element constant of no more dims than
 * the other side is a literal (it broadcasts the same), else a name. */
static const char *operand(Ox *x, OxVal *v, OxVal *other) {
    if (v->c && v->c->n == 1 && (!other || v->c->ndim <= other->ndim) && !v->tg) {
        const char *s = ox_scalar(x, v);
        return s[0] == '-' ? arena_printf(x->a, "(%s)", s) : s;
    }
    return ox_ref(x, v, false);
}

static const char *ints_text(Ox *x, const int64_t *v, int n) {
    OxDim d[OX_MAX_DIMS * 2];
    for (int k = 0; k < n; k++)
        d[k] = ox_dim_c(v[k]);
    return ox_dims_text(x, d, n);
}

static bool binary(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    static const struct {
        const char *onnx, *infix, *fn;
        bool cmp;
    } t[] = {{"Add", "+", NULL, false},
             {"Sub", "-", NULL, false},
             {"Mul", "*", NULL, false},
             {"Pow", "**", NULL, false},
             {"Equal", "==", NULL, true},
             {"Less", "<", NULL, true},
             {"Greater", ">", NULL, true},
             {"LessOrEqual", "<=", NULL, true},
             {"GreaterOrEqual", ">=", NULL, true},
             {"And", NULL, "logical_and", true},
             {"Or", NULL, "logical_or", true},
             {"Xor", "!=", NULL, true},
             {"Div", "/", NULL, false},
             {"Mod", NULL, "remainder", false}};
    int k = 0, nt = (int)(sizeof t / sizeof *t);
    while (k < nt && !ox_op_is(n, t[k].onnx))
        k++;
    if (k == nt) return false;
    ox_need_inputs(x, in, nin, 2);
    OxDim d[OX_MAX_DIMS];
    int nd = ox_broadcast(x, in[0]->dim, in[0]->ndim, in[1]->dim, in[1]->ndim, d);
    DType dt = t[k].cmp ? DT_BOOL : in[0]->dt;
    const char *a = operand(x, in[0], in[1]), *b = operand(x, in[1], in[0]);
    const char *e;
    bool integer = !dtype_is_float(in[0]->dt);
    bool fmod = ox_op_is(n, "Mod") && ox_attr_i(x, "fmod", 0);
    if (ox_op_is(n, "Div") && integer)
        e = arena_printf(x->a, "div(%s, %s, rounding_mode=\"trunc\")", a, b);
    else if (fmod && integer) /* C's %: the sign of the dividend */
        e = arena_printf(x->a, "%s - %s * div(%s, %s, rounding_mode=\"trunc\")", a, b, a, b);
    else if (fmod)
        e = arena_printf(x->a, "%s - %s * trunc(%s / %s)", a, b, a, b);
    else if (ox_op_is(n, "Mod") && !integer)
        ox_fail(x, "Mod of floats needs fmod=1 (ONNX's rule)");
    else if (ox_op_is(n, "Pow") && integer && dtype_is_float(in[1]->dt))
        /* ONNX's Pow has the base's type: the float power, truncated */
        e = arena_printf(x->a, "(%s ** %s).to(%s)", a, b, dtype_name(in[0]->dt));
    else if (t[k].infix)
        e = arena_printf(x->a, "%s %s %s", a, t[k].infix, b);
    else
        e = arena_printf(x->a, "%s(%s, %s)", t[k].fn, a, b);
    return ox_bind_shaped(x, out[0], e, dt, nd, d);
}

static bool unary(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    static const char *const t[][2] = {{"Relu", "relu"},
                                       {"Sigmoid", "sigmoid"},
                                       {"Tanh", "tanh"},
                                       {"Exp", "exp"},
                                       {"Log", "log"},
                                       {"Sqrt", "sqrt"},
                                       {"Neg", "neg"},
                                       {"Abs", "abs"},
                                       {"Reciprocal", "reciprocal"},
                                       {"Erf", "erf"},
                                       {"Floor", "floor"},
                                       {"Ceil", "ceil"},
                                       {"Sin", "sin"},
                                       {"Cos", "cos"},
                                       {"Not", "logical_not"},
                                       {"Sign", "sign"},
                                       {"HardSwish", "hardswish"},
                                       {"Softplus", "softplus"},
                                       {"Mish", "mish"},
                                       {"Round", "round"}};
    int k = 0, nt = (int)(sizeof t / sizeof *t);
    while (k < nt && !ox_op_is(n, t[k][0]))
        k++;
    const char *e = NULL;
    if (k < nt) {
        ox_need_inputs(x, in, nin, 1);
        e = arena_printf(x->a, "%s(%s)", t[k][1], ox_ref(x, in[0], false));
    } else if (ox_op_is(n, "LeakyRelu")) {
        ox_need_inputs(x, in, nin, 1);
        e = arena_printf(x->a, "leaky_relu(%s, %s)", ox_ref(x, in[0], false),
                         ox_num(x, ox_attr_f(x, "alpha", 0.01f), true));
    } else if (ox_op_is(n, "Elu")) {
        ox_need_inputs(x, in, nin, 1);
        e = arena_printf(x->a, "elu(%s, %s)", ox_ref(x, in[0], false),
                         ox_num(x, ox_attr_f(x, "alpha", 1.0f), true));
    } else if (ox_op_is(n, "Selu")) {
        ox_need_inputs(x, in, nin, 1);
        const char *r = ox_ref(x, in[0], false);
        e = arena_printf(x->a, "%s * where(%s > 0, %s, %s * (exp(%s) - 1.0))",
                         ox_num(x, ox_attr_f(x, "gamma", 1.05070102f), true), r, r,
                         ox_num(x, ox_attr_f(x, "alpha", 1.67326319f), true), r);
    } else if (ox_op_is(n, "HardSigmoid")) {
        ox_need_inputs(x, in, nin, 1);
        float al = ox_attr_f(x, "alpha", 0.2f), be = ox_attr_f(x, "beta", 0.5f);
        const char *r = ox_ref(x, in[0], false);
        if (fabsf(al - 1.0f / 6) < 1e-6f && be == 0.5f)
            e = arena_printf(x->a, "hardsigmoid(%s)", r); /* torch's */
        else
            e = arena_printf(x->a, "clamp(%s * %s + %s, 0.0, 1.0)", r, ox_num(x, al, true),
                             ox_num(x, be, true));
    } else if (ox_op_is(n, "Identity")) {
        ox_need_inputs(x, in, nin, 1);
        same_shape(out[0], in[0], in[0]->dt);
        if (!out[0]->is_output) {
            out[0]->tg = ox_ref(x, in[0], false); /* an alias: no statement */
            return true;
        }
        e = ox_ref(x, in[0], false);
    } else if (ox_op_is(n, "CastLike")) {
        ox_need_inputs(x, in, nin, 2);
        ox_bind(x, out[0],
                arena_printf(x->a, "%s.to(%s)", ox_ref(x, in[0], false), dtype_name(in[1]->dt)));
        same_shape(out[0], in[0], in[1]->dt);
        return true;
    } else if (ox_op_is(n, "Cast")) {
        ox_need_inputs(x, in, nin, 1);
        DType to = ox_dtype(x, (int)ox_attr_i(x, "to", 0), "Cast's 'to'");
        ox_bind(x, out[0],
                arena_printf(x->a, "%s.to(%s)", ox_ref(x, in[0], false), dtype_name(to)));
        same_shape(out[0], in[0], to);
        return true;
    } else {
        return false;
    }
    DType dt = ox_op_is(n, "Not") ? DT_BOOL : in[0]->dt;
    ox_bind(x, out[0], e);
    same_shape(out[0], in[0], dt);
    return true;
}

static bool variadic(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    const char *fn = ox_op_is(n, "Max")   ? "maximum"
                     : ox_op_is(n, "Min") ? "minimum"
                     : ox_op_is(n, "Sum") ? "+"
                                          : NULL;
    if (!fn) return false;
    ox_need_inputs(x, in, nin, 1);
    OxDim d[OX_MAX_DIMS];
    int nd = in[0]->ndim;
    memcpy(d, in[0]->dim, sizeof d);
    const char *e = ox_ref(x, in[0], false);
    for (int k = 1; k < nin; k++) {
        ox_need_inputs(x, in, k + 1, k + 1);
        OxDim t[OX_MAX_DIMS];
        memcpy(t, d, sizeof t);
        nd = ox_broadcast(x, t, nd, in[k]->dim, in[k]->ndim, d);
        const char *b = operand(x, in[k], in[0]);
        e = fn[0] == '+' ? arena_printf(x->a, "%s + %s", e, b)
                         : arena_printf(x->a, "%s(%s, %s)", fn, e, b);
    }
    return ox_bind_shaped(x, out[0], e, in[0]->dt, nd, d);
}

/* Reshape's target: 0 copies the input's dim, -1 stays -1 in the text
 * and is resolved for the shape kept here. */
static bool reshape(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "Reshape")) return false;
    ox_need_inputs(x, in, nin, 2);
    OxConst *s = ox_need_const(x, in[1], "shape");
    if (s->ndim != 1 || s->n > OX_MAX_DIMS)
        ox_fail(x, "the shape must be 1-d with at most %d values", OX_MAX_DIMS);
    bool allowzero = ox_attr_i(x, "allowzero", 0) != 0;
    OxDim d[OX_MAX_DIMS], txt[OX_MAX_DIMS];
    OxDim total = ox_dim_c(1), known = ox_dim_c(1);
    for (int k = 0; k < in[0]->ndim; k++)
        total = ox_dim_op(x, '*', total, in[0]->dim[k]);
    int neg = -1, nd = (int)s->n;
    for (int k = 0; k < nd; k++) {
        d[k] = ox_const_dim(x, s, k);
        if (!d[k].sym && d[k].v == 0 && !allowzero) {
            if (k >= in[0]->ndim) ox_fail(x, "shape value 0 at position %d copies no dimension", k);
            d[k] = in[0]->dim[k];
        }
        txt[k] = d[k];
        if (!d[k].sym && d[k].v == -1) {
            if (neg >= 0) ox_fail(x, "the shape has two -1 values");
            neg = k;
            continue;
        }
        if (d[k].v < 0) ox_fail(x, "shape value %lld", (long long)d[k].v);
        known = ox_dim_op(x, '*', known, d[k]);
    }
    if (neg >= 0) {
        if (known.v == 0 || total.v % known.v)
            ox_fail(x, "cannot reshape %lld elements into that shape", (long long)total.v);
        d[neg] = ox_dim_op(x, '/', total, known);
    } else if (known.v != total.v) {
        ox_fail(x, "cannot reshape %lld elements into %lld", (long long)total.v,
                (long long)known.v);
    }
    ox_bind(
        x, out[0],
        arena_printf(x->a, "reshape(%s, %s)", ox_ref(x, in[0], false), ox_dims_text(x, txt, nd)));
    ox_set_shape(out[0], in[0]->dt, nd, d);
    return true;
}

static bool transpose(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "Transpose")) return false;
    ox_need_inputs(x, in, nin, 1);
    int np, r = in[0]->ndim;
    const int64_t *p = ox_attr_ints(x, "perm", &np);
    if (p && np != r) ox_fail(x, "perm has %d values for a tensor of rank %d", np, r);
    int64_t perm[OX_MAX_DIMS];
    bool seen[OX_MAX_DIMS] = {0};
    OxDim d[OX_MAX_DIMS];
    int moved = 0, a = -1, b = -1;
    for (int k = 0; k < r; k++) {
        perm[k] = p ? p[k] : r - 1 - k;
        if (perm[k] < 0 || perm[k] >= r || seen[perm[k]]) ox_fail(x, "perm is not a permutation");
        seen[perm[k]] = true;
        d[k] = in[0]->dim[perm[k]];
        if (perm[k] != k) {
            moved++;
            if (a < 0)
                a = k;
            else
                b = k;
        }
    }
    const char *src = ox_ref(x, in[0], false), *e;
    if (moved == 0)
        e = src;
    else if (moved == 2)
        e = arena_printf(x->a, "%s.transpose(%d, %d)", src, a, b);
    else
        e = arena_printf(x->a, "%s.permute(%s)", src, ints_text(x, perm, r));
    return ox_bind_shaped(x, out[0], e, in[0]->dt, r, d);
}

static int axes_of(Ox *x, OxVal **in, int nin, int64_t *axes) {
    if (nin > 1 && in[1]) {
        OxConst *c = ox_need_const(x, in[1], "axes");
        if (c->n > OX_MAX_DIMS) ox_fail(x, "too many axes");
        for (int k = 0; k < c->n; k++)
            axes[k] = ox_const_int(x, c, k);
        return (int)c->n;
    }
    int na;
    const int64_t *a = ox_attr_ints(x, "axes", &na);
    if (na > OX_MAX_DIMS) ox_fail(x, "too many axes");
    for (int k = 0; k < na; k++)
        axes[k] = a[k];
    return na;
}

static bool squeeze(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    bool un = ox_op_is(n, "Unsqueeze");
    if (!un && !ox_op_is(n, "Squeeze")) return false;
    ox_need_inputs(x, in, nin, 1);
    int64_t axes[OX_MAX_DIMS];
    int na = axes_of(x, in, nin, axes), r = in[0]->ndim;
    OxDim d[OX_MAX_DIMS];
    int nd = 0;
    const char *e = ox_ref(x, in[0], false);
    if (un) {
        int rank = r + na;
        if (rank > OX_MAX_DIMS) ox_fail(x, "too many dimensions");
        bool ins[OX_MAX_DIMS] = {0};
        for (int k = 0; k < na; k++) {
            int ax = ox_axis(x, axes[k], rank);
            if (ins[ax]) ox_fail(x, "axis %d given twice", ax);
            ins[ax] = true;
        }
        for (int k = 0, s = 0; k < rank; k++) {
            d[nd++] = ins[k] ? ox_dim_c(1) : in[0]->dim[s++];
            if (ins[k]) e = arena_printf(x->a, "%s.unsqueeze(%d)", e, k);
        }
    } else {
        bool drop[OX_MAX_DIMS] = {0};
        for (int k = 0; k < na; k++)
            drop[ox_axis(x, axes[k], r)] = true;
        int64_t list[OX_MAX_DIMS];
        int nl = 0;
        for (int k = 0; k < r; k++) {
            bool dk = na ? drop[k] : (!in[0]->dim[k].sym && in[0]->dim[k].v == 1);
            if (dk && in[0]->dim[k].v != 1)
                ox_fail(x, "cannot squeeze dimension %d of size %lld", k,
                        (long long)in[0]->dim[k].v);
            if (dk)
                list[nl++] = k;
            else
                d[nd++] = in[0]->dim[k];
        }
        e = nl == 1 ? arena_printf(x->a, "%s.squeeze(%lld)", e, (long long)list[0])
            : nl    ? arena_printf(x->a, "%s.squeeze(%s)", e, ints_text(x, list, nl))
                    : e;
    }
    return ox_bind_shaped(x, out[0], e, in[0]->dt, nd, d);
}

/* Slice as Python indexing: x[:, 0:64, ::2]. */
static bool slice(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "Slice")) return false;
    ox_need_inputs(x, in, nin, 3);
    OxConst *st = ox_need_const(x, in[1], "starts"), *en = ox_need_const(x, in[2], "ends");
    OxConst *ax = nin > 3 && in[3] ? ox_need_const(x, in[3], "axes") : NULL;
    OxConst *sp = nin > 4 && in[4] ? ox_need_const(x, in[4], "steps") : NULL;
    int r = in[0]->ndim;
    if (st->n != en->n || (ax && ax->n != st->n) || (sp && sp->n != st->n) || st->n > r)
        ox_fail(x, "starts, ends, axes and steps must have one value per sliced axis");
    const char *idx[OX_MAX_DIMS];
    OxDim d[OX_MAX_DIMS];
    for (int k = 0; k < r; k++)
        idx[k] = ":", d[k] = in[0]->dim[k];
    int last = -1;
    for (int k = 0; k < st->n; k++) {
        int a = ox_axis(x, ax ? ox_const_int(x, ax, k) : k, r);
        int64_t step = sp ? ox_const_int(x, sp, k) : 1;
        if (step <= 0) ox_fail(x, "slice steps must be positive (step %lld)", (long long)step);
        if (step > ((int64_t)1 << 50)) step = (int64_t)1 << 50;
        OxDim s = ox_const_dim(x, st, k), e = ox_const_dim(x, en, k), dim = in[0]->dim[a];
        /* INT64_MAX means "to the end"; clamp so the arithmetic below cannot overflow */
        const int64_t lim = (int64_t)1 << 50;
        if (!s.sym) s.v = s.v > lim ? lim : s.v < -lim ? -lim : s.v;
        if (!e.sym) e.v = e.v > lim ? lim : e.v < -lim ? -lim : e.v;
        bool to_end =
            !e.sym && e.v >= dim.v && !dim.sym ? true : (!e.sym && e.v > ((int64_t)1 << 40));
        if (!e.sym && e.sym == NULL && dim.sym && e.v >= dim.v) to_end = true;
        bool from0 = !s.sym && (s.v == 0 || (s.v < 0 && -s.v >= dim.v && !dim.sym));
        if (from0 && to_end && step == 1) continue;
        /* the concrete result size, with Python's clamping */
        int64_t sv = s.v < 0 ? s.v + dim.v : s.v, ev = to_end ? dim.v : e.v < 0 ? e.v + dim.v : e.v;
        sv = sv < 0 ? 0 : sv > dim.v ? dim.v : sv;
        ev = ev < 0 ? 0 : ev > dim.v ? dim.v : ev;
        int64_t len = ev > sv ? (ev - sv + step - 1) / step : 0;
        OxDim L = ox_dim_c(len);
        if (step == 1 && (s.sym || e.sym || dim.sym) && s.v >= 0 && (to_end || e.v >= 0))
            L = ox_dim_op(x, '-', to_end ? dim : e, s);
        if (L.v != len) L = ox_dim_c(len);
        d[a] = L;
        const char *ts = from0 ? "" : ox_dim_text(x, s);
        const char *te = to_end ? "" : ox_dim_text(x, e);
        idx[a] = step == 1 ? arena_printf(x->a, "%s:%s", ts, te)
                           : arena_printf(x->a, "%s:%s:%lld", ts, te, (long long)step);
        last = a > last ? a : last;
    }
    const char *e = ox_ref(x, in[0], false);
    if (last < 0 && !out[0]->is_output) {
        /* the whole tensor (Swin's crop after unpadded windows): an alias */
        out[0]->tg = e;
        ox_set_shape(out[0], in[0]->dt, r, d);
        return true;
    }
    if (last >= 0) {
        char *s = arena_printf(x->a, "%s[", e);
        for (int k = 0; k <= last; k++)
            s = arena_printf(x->a, "%s%s%s", s, k ? ", " : "", idx[k]);
        e = arena_printf(x->a, "%s]", s);
    }
    return ox_bind_shaped(x, out[0], e, in[0]->dt, r, d);
}

/* Gather's indices, ONNX's negative ones counted from the end of the
 * axis (index_select and embedding take 0 to n - 1): a constant is
 * rewritten at import, a run-time index wrapped in a where(). */
static const char *gather_index(Ox *x, OxVal *iv, OxDim len) {
    if (!iv->c || iv->tg) {
        const char *i = ox_ref(x, iv, false);
        return arena_printf(x->a, "where(%s < 0, %s + %s, %s)", i, i, ox_dim_text(x, len), i);
    }
    bool neg = false;
    for (int64_t k = 0; k < iv->c->n && !neg; k++)
        neg = ox_const_int(x, iv->c, k) < 0;
    if (!neg || len.sym) return ox_ref(x, iv, false);
    OxConst *c = ox_const_new(x, DT_I64, iv->c->ndim, iv->c->shape);
    ox_const_values(x, c);
    for (int64_t k = 0; k < c->n; k++) {
        int64_t v = ox_const_int(x, iv->c, k);
        c->i[k] = v < 0 ? v + len.v : v;
    }
    c->hint = iv->name;
    return ox_param(x, c, false);
}

static bool gather(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "Gather")) return false;
    ox_need_inputs(x, in, nin, 2);
    int r = in[0]->ndim, a = ox_axis(x, ox_attr_i(x, "axis", 0), r);
    OxVal *iv = in[1];
    if (dtype_is_float(iv->dt) || iv->dt == DT_BOOL) ox_fail(x, "indices must be integers");
    OxDim d[OX_MAX_DIMS];
    int nd = 0;
    if (r + iv->ndim - 1 > OX_MAX_DIMS) ox_fail(x, "too many dimensions");
    for (int k = 0; k < a; k++)
        d[nd++] = in[0]->dim[k];
    for (int k = 0; k < iv->ndim; k++)
        d[nd++] = iv->dim[k];
    for (int k = a + 1; k < r; k++)
        d[nd++] = in[0]->dim[k];
    const char *e;
    if (iv->c && iv->ndim == 0) {
        int64_t i = ox_const_int(x, iv->c, 0);
        if (i < -in[0]->dim[a].v || i >= in[0]->dim[a].v)
            ox_fail(x, "index %lld is out of range", (long long)i);
        e = arena_printf(x->a, "%s.select(%d, %lld)", ox_ref(x, in[0], false), a, (long long)i);
    } else if (!iv->tg && iv->c && iv->ndim == 1) {
        const char *data = ox_ref(x, in[0], false);
        e = arena_printf(x->a, "index_select(%s, %d, %s)", data, a,
                         gather_index(x, iv, in[0]->dim[a]));
    } else if (a == 0 && r == 2 && in[0]->c) {
        e = arena_printf(x->a, "embedding(%s, %s)", gather_index(x, iv, in[0]->dim[a]),
                         ox_ref(x, in[0], false));
    } else if (iv->ndim == 1) {
        e = arena_printf(x->a, "index_select(%s, %d, %s)", ox_ref(x, in[0], false), a,
                         gather_index(x, iv, in[0]->dim[a]));
    } else if (a == 0) {
        e = arena_printf(x->a, "%s[%s]", ox_ref(x, in[0], false),
                         gather_index(x, iv, in[0]->dim[a]));
    } else {
        /* any other index along a later axis: flattened, selected, and its
         * dims put back in the axis's place */
        e = arena_printf(x->a, "reshape(index_select(%s, %d, reshape(%s, [-1])), %s)",
                         ox_ref(x, in[0], false), a, gather_index(x, iv, in[0]->dim[a]),
                         ox_dims_text(x, d, nd));
    }
    return ox_bind_shaped(x, out[0], e, in[0]->dt, nd, d);
}

static bool concat(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "Concat")) return false;
    ox_need_inputs(x, in, nin, 1);
    int r = in[0]->ndim, a = ox_axis(x, ox_attr_i(x, "axis", 0), r);
    OxDim d[OX_MAX_DIMS];
    memcpy(d, in[0]->dim, sizeof d);
    char *e = arena_printf(x->a, "cat([%s", ox_ref(x, in[0], false));
    for (int k = 1; k < nin; k++) {
        ox_need_inputs(x, in, k + 1, k + 1);
        if (in[k]->ndim != r) ox_fail(x, "Concat of tensors of ranks %d and %d", r, in[k]->ndim);
        d[a] = ox_dim_op(x, '+', d[a], in[k]->dim[a]);
        e = arena_printf(x->a, "%s, %s", e, ox_ref(x, in[k], false));
    }
    return ox_bind_shaped(x, out[0], arena_printf(x->a, "%s], dim=%d)", e, a), in[0]->dt, r, d);
}

static bool split(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "Split")) return false;
    ox_need_inputs(x, in, nin, 1);
    int r = in[0]->ndim, a = ox_axis(x, ox_attr_i(x, "axis", 0), r), no = (int)n->n_output;
    int64_t sz[64];
    if (nin > 1 && in[1]) {
        OxConst *c = ox_need_const(x, in[1], "split");
        if (c->n != no) ox_fail(x, "%lld split sizes for %d outputs", (long long)c->n, no);
        for (int k = 0; k < no; k++)
            sz[k] = ox_const_int(x, c, k);
    } else {
        int ns;
        const int64_t *s = ox_attr_ints(x, "split", &ns);
        if (s && ns != no) ox_fail(x, "%d split sizes for %d outputs", ns, no);
        int64_t dim = in[0]->dim[a].v, each = (dim + no - 1) / no;
        for (int k = 0; k < no; k++)
            sz[k] = s ? s[k] : (k < no - 1 ? each : dim - each * (no - 1));
    }
    int64_t tot = 0;
    for (int k = 0; k < no; k++) {
        if (sz[k] < 0) ox_fail(x, "a negative split size");
        if (sz[k] > INT64_MAX - tot)
            ox_fail(x, "split sizes add up past 2^63, the dimension is %lld",
                    (long long)in[0]->dim[a].v);
        tot += sz[k];
    }
    if (tot != in[0]->dim[a].v)
        ox_fail(x, "split sizes add up to %lld, the dimension is %lld", (long long)tot,
                (long long)in[0]->dim[a].v);
    Onnx__NodeProto *node = ox_cur(x);
    char *lhs = arena_strdup(x->a, "");
    for (int k = 0; k < no; k++) {
        if (!out[k]) ox_fail(x, "an unnamed Split output");
        out[k]->tg = ox_ident(x, out[k]->name, NULL);
        lhs = arena_printf(x->a, "%s%s%s", lhs, k ? ", " : "", out[k]->tg);
        OxDim d[OX_MAX_DIMS];
        memcpy(d, in[0]->dim, sizeof d);
        d[a] = ox_dim_c(sz[k]);
        ox_set_shape(out[k], in[0]->dt, r, d);
    }
    ox_emit(x, OX_BODY, "%s = split(%s, %s, dim=%d)  # Split %s\n", lhs, ox_ref(x, in[0], false),
            ints_text(x, sz, no), a, node->name ? node->name : "");
    for (int k = 0; k < no; k++)
        if (out[k]->is_output) {
            const char *id = ox_ident(x, out[k]->name, NULL);
            ox_emit(x, OX_BODY, "output %s = %s", id, out[k]->tg);
            if (strcmp(id, out[k]->name)) ox_emit(x, OX_BODY, "  # output '%s'", out[k]->name);
            ox_emit(x, OX_BODY, "\n");
            out[k]->out_written = true;
        }
    return true;
}

/* Expand, ConstantOfShape and Range whose sizes are symbolic (the folder
 * left them), Where, Tile, Pad, Einsum, Trilu. */
static bool shaped(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    OxDim d[OX_MAX_DIMS];
    int nd;
    const char *e;
    DType dt;
    if (ox_op_is(n, "Expand") || ox_op_is(n, "ConstantOfShape")) {
        ox_need_inputs(x, in, nin, ox_op_is(n, "Expand") ? 2 : 1);
        OxConst *s = ox_need_const(x, in[ox_op_is(n, "Expand")], "shape");
        if (s->ndim != 1 || s->n > OX_MAX_DIMS) ox_fail(x, "the shape must be 1-d");
        OxDim t[OX_MAX_DIMS];
        for (int k = 0; k < s->n; k++)
            t[k] = ox_const_dim(x, s, k);
        if (ox_op_is(n, "ConstantOfShape")) {
            const Onnx__AttributeProto *v = ox_attr(x, "value");
            OxConst *fill = v ? ox_tensor_const(x, v->t, "attribute 'value'") : NULL;
            dt = fill ? fill->dt : DT_F32;
            nd = (int)s->n;
            memcpy(d, t, sizeof(OxDim) * (size_t)nd);
            e = arena_printf(x->a, "full(%s, %s, dtype=%s)", ox_dims_text(x, d, nd),
                             ox_num(x, fill ? ox_const_get(x, fill, 0) : 0, dtype_is_float(dt)),
                             dtype_name(dt));
        } else {
            nd = ox_broadcast(x, in[0]->dim, in[0]->ndim, t, (int)s->n, d);
            dt = in[0]->dt;
            const char *sc =
                in[0]->c && in[0]->c->n == 1 && !in[0]->tg ? ox_scalar(x, in[0]) : NULL;
            e = sc ? arena_printf(x->a, "full(%s, %s, dtype=%s)", ox_dims_text(x, d, nd), sc,
                                  dtype_name(dt))
                   : arena_printf(x->a, "%s.expand(%s)", ox_ref(x, in[0], false),
                                  ox_dims_text(x, d, nd));
        }
    } else if (ox_op_is(n, "Range")) {
        ox_need_inputs(x, in, nin, 3);
        dt = in[0]->dt;
        OxConst *cs[3];
        for (int k = 0; k < 3; k++)
            cs[k] = ox_need_const(x, in[k], "Range bound");
        OxDim s = ox_const_dim(x, cs[0], 0), l = ox_const_dim(x, cs[1], 0),
              st = ox_const_dim(x, cs[2], 0);
        if (dtype_is_float(dt) || st.sym || st.v <= 0)
            ox_fail(x, "Range is supported for integers with a positive constant step");
        nd = 1;
        d[0] =
            ox_dim_op(x, '/', ox_dim_op(x, '+', ox_dim_op(x, '-', l, s), ox_dim_c(st.v - 1)), st);
        e = arena_printf(x->a, "arange(%s, %s, %lld, dtype=%s)", ox_dim_text(x, s),
                         ox_dim_text(x, l), (long long)st.v, dtype_name(dt));
    } else if (ox_op_is(n, "Where")) {
        ox_need_inputs(x, in, nin, 3);
        OxDim t[OX_MAX_DIMS];
        nd = ox_broadcast(x, in[0]->dim, in[0]->ndim, in[1]->dim, in[1]->ndim, t);
        nd = ox_broadcast(x, t, nd, in[2]->dim, in[2]->ndim, d);
        dt = in[1]->dt;
        e = arena_printf(x->a, "where(%s, %s, %s)", ox_ref(x, in[0], false),
                         operand(x, in[1], in[0]), operand(x, in[2], in[0]));
    } else if (ox_op_is(n, "Tile")) {
        ox_need_inputs(x, in, nin, 2);
        OxConst *rp = ox_need_const(x, in[1], "repeats");
        if (rp->n != in[0]->ndim)
            ox_fail(x, "%lld repeats for a tensor of rank %d", (long long)rp->n, in[0]->ndim);
        nd = in[0]->ndim;
        dt = in[0]->dt;
        int64_t r[OX_MAX_DIMS];
        for (int k = 0; k < nd; k++) {
            r[k] = ox_const_int(x, rp, k);
            d[k] = ox_dim_op(x, '*', in[0]->dim[k], ox_dim_c(r[k]));
        }
        e = arena_printf(x->a, "%s.repeat(%s)", ox_ref(x, in[0], false), ints_text(x, r, nd));
    } else if (ox_op_is(n, "Pad")) {
        ox_need_inputs(x, in, nin, 2);
        OxConst *p = ox_need_const(x, in[1], "pads");
        nd = in[0]->ndim;
        dt = in[0]->dt;
        if (p->n != 2 * nd) ox_fail(x, "%lld pads for a tensor of rank %d", (long long)p->n, nd);
        if (nin > 3 && in[3]) ox_fail(x, "Pad with an axes input is not supported");
        const char *mode = ox_attr_s(x, "mode", "constant");
        const char *tm = !strcmp(mode, "constant")  ? "constant"
                         : !strcmp(mode, "reflect") ? "reflect"
                         : !strcmp(mode, "edge")    ? "replicate"
                         : !strcmp(mode, "wrap")    ? "circular"
                                                    : NULL;
        if (!tm)
            ox_fail(x, "Pad mode '%s' is not supported (constant, reflect, edge, wrap are)", mode);
        if (!strcmp(mode, "wrap") && x->opset < 19)
            ox_fail(x,
                    "Pad mode 'wrap' is opset 19's, not opset %d's (constant, reflect, edge are)",
                    x->opset);
        int64_t tp[OX_MAX_DIMS * 2];
        int first = nd; /* outermost padded dim */
        for (int k = 0; k < nd; k++) {
            int64_t b = ox_const_int(x, p, k), en = ox_const_int(x, p, k + nd);
            /* Bounded first: their sum must not overflow (fuzzed pads of
             * 7e18 did), and no tensor has a dim near 2^31 anyway. */
            if (b < -INT32_MAX || b > INT32_MAX || en < -INT32_MAX || en > INT32_MAX)
                ox_fail(x, "pads of dim %d (%lld, %lld) are out of range", k, (long long)b,
                        (long long)en);
            d[k] = ox_dim_op(x, '+', in[0]->dim[k], ox_dim_c(b + en));
            tp[2 * (nd - 1 - k)] = b, tp[2 * (nd - 1 - k) + 1] = en;
            if ((b || en) && k < first) first = k;
        }
        if (first == nd && strcmp(tm, "constant") == 0) {
            /* no padding at all (torch writes one before some pools) */
            same_shape(out[0], in[0], dt);
            if (!out[0]->is_output) {
                out[0]->tg = ox_ref(x, in[0], false);
                return true;
            }
        }
        int np = 2 * (nd - (first == nd ? nd - 1 : first));
        const char *val = nin > 2 && in[2] ? ox_scalar(x, in[2]) : NULL;
        if (nin > 2 && in[2] && !val) ox_fail(x, "Pad's constant_value must be a known scalar");
        e = arena_printf(x->a, "pad(%s, %s%s%s%s%s)", ox_ref(x, in[0], false), ints_text(x, tp, np),
                         strcmp(tm, "constant") ? ", mode=\"" : "",
                         strcmp(tm, "constant") ? tm : "", strcmp(tm, "constant") ? "\"" : "",
                         val && strcmp(val, "0.0") && strcmp(val, "0")
                             ? arena_printf(x->a, ", value=%s", val)
                             : "");
    } else if (ox_op_is(n, "Einsum")) {
        ox_need_inputs(x, in, nin, 1);
        const char *eq = ox_attr_s(x, "equation", NULL);
        if (!eq || strchr(eq, '"') || strchr(eq, '\\')) ox_fail(x, "Einsum needs an equation");
        if (!strstr(eq, "->")) {
            /* implicit output (numpy's): the letters written once, in
             * alphabetical order */
            if (strstr(eq, "...")) ox_fail(x, "Einsum with '...' needs an explicit '->'");
            char out_l[64] = "";
            for (int c = 'A'; c <= 'z'; c++) {
                int seen = 0;
                for (const char *q = eq; *q; q++)
                    seen += *q == c;
                if (seen == 1 && ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')))
                    out_l[strlen(out_l)] = (char)c;
            }
            eq = arena_printf(x->a, "%s->%s", eq, out_l);
        }
        char *s = arena_printf(x->a, "einsum(\"%s\"", eq);
        for (int k = 0; k < nin; k++) {
            ox_need_inputs(x, in, k + 1, k + 1);
            s = arena_printf(x->a, "%s, %s", s, ox_ref(x, in[k], false));
        }
        e = arena_printf(x->a, "%s)", s);
        /* the result's shape: letters after "->" */
        const char *arrow = strstr(eq, "->");
        nd = 0;
        dt = in[0]->dt;
        /* "..." in an operand stands for its dims the letters leave */
        int ell[OX_MAX_DIMS * 2] = {0}, ell_at[OX_MAX_DIMS * 2] = {0}, letters = 0, op = 0;
        for (const char *q = eq;; q++) {
            if (q == arrow || *q == ',') {
                if (op < nin && op < OX_MAX_DIMS * 2) ell[op] = in[op]->ndim - letters;
                if (q == arrow || ++op >= nin) break;
                letters = 0;
            } else if (!strncmp(q, "...", 3)) {
                if (op < OX_MAX_DIMS * 2) ell_at[op] = letters + 1; /* 1 + its position */
                q += 2;
            } else if (*q != ' ') {
                letters++;
            }
        }
        for (const char *c = arrow + 2; *c; c++) {
            if (*c == ' ') continue;
            if (!strncmp(c, "...", 3)) {
                /* the operands' ellipsis dims, broadcast */
                OxDim b[OX_MAX_DIMS];
                int nb = 0;
                for (int k = 0; k < nin && k < OX_MAX_DIMS * 2; k++)
                    if (ell_at[k]) {
                        if (ell[k] < 0) ox_fail(x, "Einsum operand %d has too few dims", k);
                        OxDim t[OX_MAX_DIMS];
                        nb = ox_broadcast(x, b, nb, in[k]->dim + ell_at[k] - 1, ell[k], t);
                        memcpy(b, t, sizeof b);
                    }
                if (nd + nb > OX_MAX_DIMS) ox_fail(x, "Einsum equation '%s' is not supported", eq);
                memcpy(d + nd, b, sizeof(OxDim) * (size_t)nb);
                nd += nb;
                c += 2;
                continue;
            }
            bool found = false;
            int pos = 0;
            op = 0;
            for (const char *q = eq; q < arrow && !found; q++) {
                if (*q == ',')
                    op++, pos = 0;
                else if (!strncmp(q, "...", 3))
                    pos += op < nin && op < OX_MAX_DIMS * 2 && ell[op] > 0 ? ell[op] : 0, q += 2;
                else if (*q == *c && op < nin)
                    found = true, d[nd] = in[op]->dim[pos < in[op]->ndim ? pos : 0];
                else if (*q != ' ')
                    pos++;
            }
            if (!found || nd >= OX_MAX_DIMS)
                ox_fail(x, "Einsum equation '%s' is not supported", eq);
            nd++;
        }
    } else if (ox_op_is(n, "Trilu")) {
        ox_need_inputs(x, in, nin, 1);
        nd = in[0]->ndim, dt = in[0]->dt;
        if (nd < 2) ox_fail(x, "the input has rank %d, Trilu's is at least 2", nd);
        bool up = ox_attr_i(x, "upper", 1);
        OxVal *kv = nin > 1 ? in[1] : NULL;
        if (kv && (kv->ndim > 1 || (kv->ndim == 1 && (kv->dim[0].sym || kv->dim[0].v != 1))))
            ox_fail(x, "k must be a scalar");
        if (kv && (dtype_is_float(kv->dt) || kv->dt == DT_BOOL)) ox_fail(x, "k must be an integer");
        if (!kv || kv->c) {
            int64_t k = kv ? ox_const_int(x, ox_need_const(x, kv, "k"), 0) : 0;
            e = arena_printf(x->a, "%s(%s, %lld)", up ? "triu" : "tril", ox_ref(x, in[0], false),
                             (long long)k);
        } else {
            /* k known only at run time: keep column - row <= k (tril) or
             * >= k (triu), the rows and columns as aranges */
            OxDim rs[2] = {in[0]->dim[nd - 2], ox_dim_c(1)},
                  cs[2] = {ox_dim_c(1), in[0]->dim[nd - 1]};
            const char *kr = ox_ref(x, kv, false);
            if (kv->dt != DT_I64) kr = arena_printf(x->a, "%s.to(i64)", kr);
            e = arena_printf(x->a,
                             "where(reshape(arange(0, %s, 1), %s) - reshape(arange(0, %s, 1), %s) "
                             "%s %s, %s, %s)",
                             ox_dim_text(x, cs[1]), ox_dims_text(x, cs, 2), ox_dim_text(x, rs[0]),
                             ox_dims_text(x, rs, 2), up ? ">=" : "<=", kr, ox_ref(x, in[0], false),
                             dt == DT_BOOL        ? "false"
                             : dtype_is_float(dt) ? "0.0"
                                                  : "0");
        }
        memcpy(d, in[0]->dim, sizeof d);
    } else {
        return false;
    }
    return ox_bind_shaped(x, out[0], e, dt, nd, d);
}

bool ox_op_tensor(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    return ox_op_index(x, n, in, nin, out) || ox_op_math(x, n, in, nin, out) ||
           ox_op_scatter(x, n, in, nin, out) || ox_op_quant(x, n, in, nin, out) ||
           ox_op_linalg(x, n, in, nin, out) || ox_op_qlinear(x, n, in, nin, out) ||
           ox_op_train(x, n, in, nin, out) || binary(x, n, in, nin, out) ||
           unary(x, n, in, nin, out) || variadic(x, n, in, nin, out) ||
           reshape(x, n, in, nin, out) || transpose(x, n, in, nin, out) ||
           squeeze(x, n, in, nin, out) || slice(x, n, in, nin, out) || gather(x, n, in, nin, out) ||
           concat(x, n, in, nin, out) || split(x, n, in, nin, out) || shaped(x, n, in, nin, out);
}
