/* The import-time evaluator: nodes whose inputs are all known (constants,
 * initializers folded as data, shapes) are computed here, so the shape
 * arithmetic torch.onnx.export writes (Shape, Gather, Concat, Unsqueeze...)
 * never reaches the .tg. Integers carry their symbolic expression through
 * + - * / % and every data movement; a comparison or Range decided on a
 * symbolic value uses the defaults (x->used_defaults, said in the header).
 * Ops whose result's shape would depend on a symbolic value are not folded:
 * the caller writes them as .tg ops (full, expand, arange). */
#include <math.h>
#include <string.h>

#include "frontend/onnx/ox.h"

static OxConst *like(Ox *x, DType dt, int nd, const int64_t *shape) {
    OxConst *c = ox_const_new(x, dt, nd, shape);
    if (c->n > ((int64_t)1 << 28))
        ox_fail(x, "a folded constant of %lld elements: too large", (long long)c->n);
    ox_const_values(x, c);
    return c;
}

static void put(OxConst *d, int64_t dk, const OxConst *s, int64_t sk) {
    if (dtype_is_float(d->dt)) {
        d->f[dk] = dtype_is_float(s->dt) ? s->f[sk] : (double)s->i[sk];
        return;
    }
    d->i[dk] = dtype_is_float(s->dt) ? ox_f2i(NULL, s->f[sk]) : s->i[sk];
}

/* Element copies that keep symbolic expressions. */
static void copy_el(Ox *x, OxConst *d, int64_t dk, const OxConst *s, int64_t sk) {
    put(d, dk, s, sk);
    if (!dtype_is_float(d->dt) && !dtype_is_float(s->dt) && s->sym && s->sym[sk]) {
        if (!d->sym) d->sym = ARENA_ARRAY(x->a, const char *, d->n ? d->n : 1);
        d->sym[dk] = s->sym[sk];
    }
}

static void set_dim(Ox *x, OxConst *d, int64_t k, OxDim v) {
    d->i[k] = v.v;
    if (v.sym) {
        if (!d->sym) d->sym = ARENA_ARRAY(x->a, const char *, d->n ? d->n : 1);
        d->sym[k] = v.sym;
    }
}

static bool has_sym(const OxConst *c) {
    if (!c || !c->sym) return false;
    for (int64_t k = 0; k < c->n; k++)
        if (c->sym[k]) return true;
    return false;
}

/* Flat index into src (shape sn[0..snd)) of element k of the broadcast
 * shape dn[0..nd). */
static int64_t bidx(const int64_t *dn, int nd, int64_t k, const int64_t *sn, int snd) {
    int64_t idx = 0, stride = 1;
    for (int a = nd - 1; a >= 0; a--) {
        int64_t i = k % dn[a];
        k /= dn[a];
        int sa = a - (nd - snd);
        if (sa >= 0) {
            if (sn[sa] != 1) idx += i * stride;
            stride *= sn[sa];
        }
    }
    return idx;
}

static int bshape(Ox *x, OxConst **c, int n, int64_t *out) {
    int nd = 0;
    for (int k = 0; k < n; k++)
        nd = c[k]->ndim > nd ? c[k]->ndim : nd;
    for (int a = 0; a < nd; a++) {
        out[a] = 1;
        for (int k = 0; k < n; k++) {
            int sa = a - (nd - c[k]->ndim);
            if (sa < 0 || c[k]->shape[sa] == 1) continue;
            if (out[a] != 1 && out[a] != c[k]->shape[sa])
                ox_fail(x, "constant shapes do not broadcast at dimension %d", a);
            out[a] = c[k]->shape[sa];
        }
    }
    return nd;
}

static double round_to(DType dt, double v) {
    return dt == DT_F32 || dt == DT_F16 || dt == DT_BF16 ? (double)(float)v : v;
}

static OxConst *binary(Ox *x, const char *op, OxConst *a, OxConst *b) {
    OxConst *in[2] = {a, b};
    int64_t shape[OX_MAX_DIMS];
    int nd = bshape(x, in, 2, shape);
    bool cmp = !strcmp(op, "Equal") || !strcmp(op, "Less") || !strcmp(op, "Greater") ||
               !strcmp(op, "LessOrEqual") || !strcmp(op, "GreaterOrEqual");
    bool logic = !strcmp(op, "And") || !strcmp(op, "Or") || !strcmp(op, "Xor");
    DType dt = cmp || logic ? DT_BOOL : a->dt;
    bool fa = dtype_is_float(a->dt), fb = dtype_is_float(b->dt), fl = fa || fb;
    /* ONNX gives both inputs one type, except Pow's exponent */
    if (fa != fb && strcmp(op, "Pow"))
        ox_fail(x, "%s of %s and %s: the inputs must have one element type", op, dtype_name(a->dt),
                dtype_name(b->dt));
    OxConst *r = like(x, dt, nd, shape);
    for (int64_t k = 0; k < r->n; k++) {
        int64_t ia = bidx(shape, nd, k, a->shape, a->ndim),
                ib = bidx(shape, nd, k, b->shape, b->ndim);
        if (fl) {
            double p = fa ? a->f[ia] : (double)a->i[ia], q = fb ? b->f[ib] : (double)b->i[ib], v;
            if (cmp) {
                r->i[k] = op[0] == 'E'   ? p == q
                          : op[0] == 'L' ? (op[4] ? p <= q : p < q)
                                         : (op[7] ? p >= q : p > q);
                continue;
            }
            switch (op[0]) {
            case 'A': v = p + q; break;
            case 'S': v = p - q; break;
            case 'M':
                v = op[1] == 'u'   ? p * q
                    : op[1] == 'o' ? fmod(p, q)
                    : op[1] == 'a' ? fmax(p, q)
                                   : fmin(p, q);
                break;
            case 'D': v = p / q; break;
            default: v = pow(p, q); break;
            }
            if (fa)
                r->f[k] = round_to(dt, v);
            else
                r->i[k] = ox_f2i(x, trunc(v)); /* an integer base, a float exponent */
            continue;
        }
        OxDim p = {a->i[ia], a->sym ? a->sym[ia] : NULL};
        OxDim q = {b->i[ib], b->sym ? b->sym[ib] : NULL};
        if (cmp || logic) {
            if (p.sym || q.sym) x->used_defaults = true;
            int64_t v;
            if (logic)
                v = op[0] == 'A' ? (p.v && q.v) : op[0] == 'O' ? (p.v || q.v) : (!p.v != !q.v);
            else
                v = op[0] == 'E'   ? p.v == q.v
                    : op[0] == 'L' ? (op[4] ? p.v <= q.v : p.v < q.v)
                                   : (op[7] ? p.v >= q.v : p.v > q.v);
            r->i[k] = v;
            continue;
        }
        OxDim v;
        if (!strcmp(op, "Max") || !strcmp(op, "Min")) {
            if (p.sym || q.sym) x->used_defaults = true;
            v = (op[1] == 'a') == (p.v > q.v) ? p : q;
        } else if (!strcmp(op, "Div")) {
            /* ONNX integer division truncates; shapes are non-negative,
             * where floor (the .tg's //) is the same. */
            if (q.v == 0) ox_fail(x, "integer division by zero");
            if ((p.v < 0) != (q.v < 0) && p.v % q.v) {
                v = ox_dim_c(p.v / q.v);
                if (p.sym || q.sym) x->used_defaults = true;
            } else {
                v = ox_dim_op(x, '/', p, q);
            }
        } else if (!strcmp(op, "Pow")) {
            if (p.sym || q.sym) x->used_defaults = true;
            v = ox_dim_c(ox_f2i(x, pow((double)p.v, (double)q.v)));
        } else {
            char o = op[0] == 'A' ? '+' : op[0] == 'S' ? '-' : op[1] == 'u' ? '*' : '%';
            if (o == '%' && q.v == 0) ox_fail(x, "integer remainder by zero");
            v = ox_dim_op(x, o, p, q);
            if (o == '%' && ox_attr_i(x, "fmod", 0)) v = ox_dim_c(p.v % q.v);
        }
        set_dim(x, r, k, v);
    }
    return r;
}

static OxConst *transpose(Ox *x, OxConst *a, const int64_t *perm) {
    int64_t shape[OX_MAX_DIMS], st[OX_MAX_DIMS];
    for (int k = 0; k < a->ndim; k++)
        shape[k] = a->shape[perm[k]];
    OxConst *r = like(x, a->dt, a->ndim, shape);
    int64_t s = 1;
    for (int k = a->ndim - 1; k >= 0; k--)
        st[k] = s, s *= a->shape[k];
    for (int64_t k = 0; k < r->n; k++) {
        int64_t rem = k, src = 0;
        for (int d = a->ndim - 1; d >= 0; d--) {
            src += (rem % shape[d]) * st[perm[d]];
            rem /= shape[d];
        }
        copy_el(x, r, k, a, src);
    }
    return r;
}

static OxConst *reshaped(Ox *x, OxConst *a, int nd, const int64_t *shape) {
    OxConst *r = ARENA_NEW(x->a, OxConst);
    *r = *a;
    r->ndim = nd;
    for (int k = 0; k < nd; k++)
        r->shape[k] = shape[k];
    r->param = r->param_t = NULL;
    return r;
}

/* The int64 values of an optional input (axes, steps...). */
static int ints_of(Ox *x, OxVal *v, int64_t *out, int max, const char *what) {
    OxConst *c = ox_need_const(x, v, what);
    if (c->n > max)
        ox_fail(x, "input '%s' (%s) has %lld values: too many", v->name, what, (long long)c->n);
    for (int64_t k = 0; k < c->n; k++)
        out[k] = ox_const_int(x, c, k);
    return (int)c->n;
}

static OxConst *slice(Ox *x, OxConst *a, OxVal **in, int nin) {
    int64_t st[OX_MAX_DIMS], en[OX_MAX_DIMS], ax[OX_MAX_DIMS], sp[OX_MAX_DIMS];
    int n = ints_of(x, in[1], st, OX_MAX_DIMS, "starts");
    if (ints_of(x, in[2], en, OX_MAX_DIMS, "ends") != n)
        ox_fail(x, "starts and ends differ in length");
    for (int k = 0; k < n; k++)
        ax[k] = k, sp[k] = 1;
    if (nin > 3 && in[3] && ints_of(x, in[3], ax, OX_MAX_DIMS, "axes") != n)
        ox_fail(x, "axes and starts differ in length");
    if (nin > 4 && in[4] && ints_of(x, in[4], sp, OX_MAX_DIMS, "steps") != n)
        ox_fail(x, "steps and starts differ in length");
    int64_t lo[OX_MAX_DIMS], step[OX_MAX_DIMS], shape[OX_MAX_DIMS];
    for (int d = 0; d < a->ndim; d++)
        lo[d] = 0, step[d] = 1, shape[d] = a->shape[d];
    for (int k = 0; k < n; k++) {
        int d = ox_axis(x, ax[k], a->ndim);
        const int64_t lim = (int64_t)1 << 50; /* INT64_MAX is "to the end" */
        int64_t dim = a->shape[d], s = st[k], e = en[k], p = sp[k];
        s = s > lim ? lim : s < -lim ? -lim : s;
        e = e > lim ? lim : e < -lim ? -lim : e;
        p = p > lim ? lim : p < -lim ? -lim : p;
        if (p == 0) ox_fail(x, "a slice step of 0");
        if (s < 0) s += dim;
        if (e < 0) e += dim;
        if (p > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
            shape[d] = e > s ? (e - s + p - 1) / p : 0;
        } else {
            s = s < 0 ? -1 : s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
            shape[d] = s > e ? (s - e - p - 1) / -p : 0;
        }
        lo[d] = s, step[d] = p;
    }
    OxConst *r = like(x, a->dt, a->ndim, shape);
    for (int64_t k = 0; k < r->n; k++) {
        int64_t rem = k, src = 0, stride = 1;
        for (int d = a->ndim - 1; d >= 0; d--) {
            src += (lo[d] + (rem % shape[d]) * step[d]) * stride;
            rem /= shape[d];
            stride *= a->shape[d];
        }
        copy_el(x, r, k, a, src);
    }
    return r;
}

static OxConst *gather(Ox *x, OxConst *a, OxConst *idx, int axis) {
    int64_t shape[OX_MAX_DIMS];
    int nd = 0;
    if (a->ndim + idx->ndim - 1 > OX_MAX_DIMS) ox_fail(x, "too many dimensions");
    for (int d = 0; d < axis; d++)
        shape[nd++] = a->shape[d];
    for (int d = 0; d < idx->ndim; d++)
        shape[nd++] = idx->shape[d];
    for (int d = axis + 1; d < a->ndim; d++)
        shape[nd++] = a->shape[d];
    OxConst *r = like(x, a->dt, nd, shape);
    int64_t outer = 1, inner = 1, dim = a->shape[axis];
    for (int d = 0; d < axis; d++)
        outer *= a->shape[d];
    for (int d = axis + 1; d < a->ndim; d++)
        inner *= a->shape[d];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < idx->n; j++) {
            int64_t i = idx->i[j] < 0 ? idx->i[j] + dim : idx->i[j];
            if (i < 0 || i >= dim)
                ox_fail(x, "index %lld is out of range for a dimension of size %lld",
                        (long long)idx->i[j], (long long)dim);
            for (int64_t q = 0; q < inner; q++)
                copy_el(x, r, (o * idx->n + j) * inner + q, a, (o * dim + i) * inner + q);
        }
    return r;
}

static OxConst *cast(Ox *x, OxConst *a, DType to) {
    OxConst *r = like(x, to, a->ndim, a->shape);
    for (int64_t k = 0; k < a->n; k++) {
        if (dtype_is_float(to)) {
            r->f[k] = round_to(to, dtype_is_float(a->dt) ? a->f[k] : (double)a->i[k]);
        } else if (to == DT_BOOL) {
            r->i[k] = dtype_is_float(a->dt) ? a->f[k] != 0 : a->i[k] != 0;
        } else if (dtype_is_float(a->dt)) {
            double v = a->f[k];
            r->i[k] = isnan(v)       ? 0
                      : v >= 9.2e18  ? INT64_MAX
                      : v <= -9.2e18 ? INT64_MIN
                                     : (int64_t)v;
        } else {
            copy_el(x, r, k, a, k);
        }
    }
    return r;
}

/* Target shape of Reshape: 0 copies the input's dim (allowzero=0), -1 is
 * inferred. */
static int reshape_dims(Ox *x, const OxDim *in, int nin, OxConst *s, OxDim *out) {
    if (s->ndim != 1 || s->n > OX_MAX_DIMS)
        ox_fail(x, "the shape input must be 1-d of at most %d values", OX_MAX_DIMS);
    int neg = -1;
    bool allowzero = ox_attr_i(x, "allowzero", 0) != 0;
    for (int k = 0; k < s->n; k++) {
        out[k] = ox_const_dim(x, s, k);
        if (out[k].v == 0 && !out[k].sym && !allowzero) {
            if (k >= nin) ox_fail(x, "shape value 0 at %d copies no input dimension", k);
            out[k] = in[k];
        } else if (out[k].v == -1 && !out[k].sym) {
            if (neg >= 0) ox_fail(x, "the shape has two -1 values");
            neg = k;
        } else if (out[k].v < 0) {
            ox_fail(x, "shape value %lld", (long long)out[k].v);
        }
    }
    return (int)s->n;
}

/* A shape of consts for the data: its values, -1 resolved. */
static void concrete(Ox *x, int64_t total, OxDim *d, int n, int64_t *shape) {
    int64_t known = 1;
    int neg = -1;
    for (int k = 0; k < n; k++)
        if (d[k].v == -1 && !d[k].sym)
            neg = k;
        else
            known *= d[k].v;
    for (int k = 0; k < n; k++)
        shape[k] = d[k].v;
    if (neg >= 0) {
        if (!known || total % known) ox_fail(x, "cannot reshape %lld elements", (long long)total);
        shape[neg] = total / known;
    } else if (known != total) {
        ox_fail(x, "cannot reshape %lld elements into that shape", (long long)total);
    }
}

/* ---- one function per op ------------------------------------------------ *
 * Each takes the node's inputs (in[0] present; its constant, `a`, known
 * unless the op folds from dims alone) and returns the folded constant, or
 * NULL to leave the node to its .tg mapping. */

typedef OxConst *(*FoldFn)(Ox *x, const char *op, OxVal **in, int nin);

static OxConst *fold_shape(Ox *x, const char *op, OxVal **in, int nin) {
    (void)op, (void)nin;
    int nd = in[0]->ndim;
    int64_t s = ox_attr_i(x, "start", 0), e = ox_attr_i(x, "end", nd);
    s = s < 0 ? s + nd : s, e = e < 0 ? e + nd : e;
    s = s < 0 ? 0 : s > nd ? nd : s, e = e < s ? s : e > nd ? nd : e;
    int64_t len = e - s;
    OxConst *r = like(x, DT_I64, 1, &len);
    for (int64_t k = 0; k < len; k++)
        set_dim(x, r, k, in[0]->dim[s + k]);
    return r;
}

static OxConst *fold_size(Ox *x, const char *op, OxVal **in, int nin) {
    (void)op, (void)nin;
    OxDim t = ox_dim_c(1);
    for (int k = 0; k < in[0]->ndim; k++)
        t = ox_dim_op(x, '*', t, in[0]->dim[k]);
    OxConst *r = like(x, DT_I64, 0, NULL);
    set_dim(x, r, 0, t);
    return r;
}

static OxConst *fold_identity(Ox *x, const char *op, OxVal **in, int nin) {
    (void)x, (void)op, (void)nin;
    return in[0]->c;
}

/* Dropout of a known input: only when nothing is dropped and no mask is
 * asked for; the mapping (ox_ops_train.c) refuses dropping at random. */
static OxConst *fold_dropout(Ox *x, const char *op, OxVal **in, int nin) {
    (void)op;
    if (ox_cur(x)->n_output > 1) return NULL;
    bool train = nin > 2 && in[2] && ox_const_int(x, in[2]->c, 0);
    double r = nin > 1 && in[1] ? ox_const_get(x, in[1]->c, 0) : 0.5;
    return !train || r == 0 ? in[0]->c : NULL;
}

static OxConst *fold_binary(Ox *x, const char *op, OxVal **in, int nin) {
    if (nin < 2 || !in[1]) return NULL;
    return binary(x, op, in[0]->c, in[1]->c);
}

/* Max and Min of any number of inputs. */
static OxConst *fold_extreme(Ox *x, const char *op, OxVal **in, int nin) {
    OxConst *r = in[0]->c;
    for (int k = 1; k < nin; k++)
        r = binary(x, op, r, in[k]->c);
    return r;
}

static OxConst *fold_unary(Ox *x, const char *op, OxVal **in, int nin) {
    (void)nin;
    OxConst *a = in[0]->c, *r = like(x, a->dt, a->ndim, a->shape);
    for (int64_t k = 0; k < a->n; k++) {
        if (dtype_is_float(a->dt)) {
            double v = a->f[k];
            v = op[0] == 'N'   ? -v
                : op[0] == 'A' ? fabs(v)
                : op[0] == 'S' ? sqrt(v)
                : op[0] == 'F' ? floor(v)
                : op[0] == 'C' ? ceil(v)
                : op[0] == 'R' ? 1 / v
                : op[0] == 'E' ? exp(v)
                               : log(v);
            r->f[k] = round_to(a->dt, v);
        } else if (op[0] == 'N' && op[1] == 'e') {
            set_dim(x, r, k,
                    ox_dim_op(x, '-', ox_dim_c(0), (OxDim){a->i[k], a->sym ? a->sym[k] : NULL}));
        } else if (op[0] == 'N') {
            r->i[k] = !a->i[k];
        } else if (op[0] == 'A') {
            r->i[k] = a->i[k] < 0 ? -a->i[k] : a->i[k];
        } else {
            return NULL;
        }
    }
    return r;
}

static OxConst *fold_cast(Ox *x, const char *op, OxVal **in, int nin) {
    (void)op, (void)nin;
    return cast(x, in[0]->c, ox_dtype(x, (int)ox_attr_i(x, "to", 0), "Cast's 'to'"));
}

static OxConst *fold_squeeze(Ox *x, const char *op, OxVal **in, int nin) {
    OxConst *a = in[0]->c;
    int64_t axes[OX_MAX_DIMS];
    int na = 0;
    if (nin > 1 && in[1]) {
        na = ints_of(x, in[1], axes, OX_MAX_DIMS, "axes");
    } else {
        const int64_t *at = ox_attr_ints(x, "axes", &na);
        if (na > OX_MAX_DIMS) ox_fail(x, "too many axes");
        for (int k = 0; k < na; k++)
            axes[k] = at[k];
    }
    int64_t shape[OX_MAX_DIMS];
    int nd = 0;
    if (op[0] == 'U') {
        int rank = a->ndim + na;
        if (rank > OX_MAX_DIMS) ox_fail(x, "too many dimensions");
        bool ins[OX_MAX_DIMS] = {0};
        for (int k = 0; k < na; k++)
            ins[ox_axis(x, axes[k], rank)] = true;
        for (int d = 0, s = 0; d < rank; d++)
            shape[nd++] = ins[d] ? 1 : a->shape[s++];
    } else {
        bool drop[OX_MAX_DIMS] = {0};
        for (int k = 0; k < na; k++)
            drop[ox_axis(x, axes[k], a->ndim)] = true;
        for (int d = 0; d < a->ndim; d++)
            if (!(na ? drop[d] : a->shape[d] == 1)) shape[nd++] = a->shape[d];
    }
    return reshaped(x, a, nd, shape);
}

static OxConst *fold_reshape(Ox *x, const char *op, OxVal **in, int nin) {
    (void)op;
    OxConst *a = in[0]->c;
    OxDim in_d[OX_MAX_DIMS], d[OX_MAX_DIMS];
    for (int k = 0; k < a->ndim; k++)
        in_d[k] = ox_dim_c(a->shape[k]);
    if (nin < 2 || !in[1]) return NULL;
    int nd = reshape_dims(x, in_d, a->ndim, in[1]->c, d);
    int64_t shape[OX_MAX_DIMS];
    concrete(x, a->n, d, nd, shape);
    return reshaped(x, a, nd, shape);
}

static OxConst *fold_flatten(Ox *x, const char *op, OxVal **in, int nin) {
    (void)op, (void)nin;
    OxConst *a = in[0]->c;
    int ax = (int)ox_attr_i(x, "axis", 1);
    ax = ax < 0 ? ax + a->ndim : ax;
    if (ax < 0 || ax > a->ndim) ox_fail(x, "axis %d is out of range", ax);
    int64_t s[2] = {1, 1};
    for (int k = 0; k < a->ndim; k++)
        s[k >= ax] *= a->shape[k];
    return reshaped(x, a, 2, s);
}

static OxConst *fold_transpose(Ox *x, const char *op, OxVal **in, int nin) {
    (void)op, (void)nin;
    OxConst *a = in[0]->c;
    int np;
    const int64_t *p = ox_attr_ints(x, "perm", &np);
    int64_t perm[OX_MAX_DIMS];
    if (p && np != a->ndim) ox_fail(x, "perm has %d values for a tensor of rank %d", np, a->ndim);
    for (int k = 0; k < a->ndim; k++) {
        perm[k] = p ? p[k] : a->ndim - 1 - k;
        if (perm[k] < 0 || perm[k] >= a->ndim) ox_fail(x, "perm value out of range");
    }
    return transpose(x, a, perm);
}

static OxConst *fold_concat(Ox *x, const char *op, OxVal **in, int nin) {
    (void)op;
    OxConst *a = in[0]->c;
    int ax = ox_axis(x, ox_attr_i(x, "axis", 0), a->ndim);
    int64_t shape[OX_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    shape[ax] = 0;
    for (int k = 0; k < nin; k++) {
        if (!in[k] || in[k]->c->ndim != a->ndim) ox_fail(x, "Concat of tensors of different ranks");
        for (int d = 0; d < a->ndim; d++)
            if (d != ax && in[k]->c->shape[d] != a->shape[d])
                ox_fail(x, "Concat of mismatched shapes");
        shape[ax] += in[k]->c->shape[ax];
    }
    OxConst *r = like(x, a->dt, a->ndim, shape);
    int64_t outer = 1, inner = 1, off = 0;
    for (int d = 0; d < ax; d++)
        outer *= shape[d];
    for (int d = ax + 1; d < a->ndim; d++)
        inner *= shape[d];
    for (int k = 0; k < nin; k++) {
        OxConst *c = in[k]->c;
        int64_t len = c->shape[ax] * inner;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < len; j++)
                copy_el(x, r, o * shape[ax] * inner + off + j, c, o * len + j);
        off += len;
    }
    return r;
}

static OxConst *fold_gather(Ox *x, const char *op, OxVal **in, int nin) {
    (void)op;
    OxConst *a = in[0]->c;
    if (nin < 2 || !in[1] || dtype_is_float(in[1]->c->dt)) return NULL;
    return gather(x, a, in[1]->c, ox_axis(x, ox_attr_i(x, "axis", 0), a->ndim));
}

static OxConst *fold_slice(Ox *x, const char *op, OxVal **in, int nin) {
    (void)op;
    if (nin < 3) return NULL;
    return slice(x, in[0]->c, in, nin);
}

static OxConst *fold_where(Ox *x, const char *op, OxVal **in, int nin) {
    (void)op;
    if (nin < 3) return NULL;
    OxConst *a = in[0]->c, *cs[3] = {a, in[1]->c, in[2]->c};
    int64_t shape[OX_MAX_DIMS];
    int nd = bshape(x, cs, 3, shape);
    OxConst *r = like(x, cs[1]->dt, nd, shape);
    for (int64_t k = 0; k < r->n; k++) {
        bool c = a->i ? a->i[bidx(shape, nd, k, a->shape, a->ndim)]
                      : a->f[bidx(shape, nd, k, a->shape, a->ndim)] != 0;
        OxConst *s = cs[c ? 1 : 2];
        copy_el(x, r, k, s, bidx(shape, nd, k, s->shape, s->ndim));
    }
    return r;
}

static OxConst *fold_constant_of_shape(Ox *x, const char *op, OxVal **in, int nin) {
    (void)op, (void)nin;
    OxConst *a = in[0]->c;
    int64_t shape[OX_MAX_DIMS];
    if (a->ndim != 1 || a->n > OX_MAX_DIMS) ox_fail(x, "the shape input must be 1-d");
    for (int k = 0; k < a->n; k++)
        if ((shape[k] = a->i[k]) < 0) ox_fail(x, "a negative size in the shape input");
    const Onnx__AttributeProto *v = ox_attr(x, "value");
    OxConst *fill = v ? ox_tensor_const(x, v->t, "attribute 'value'") : NULL;
    if (fill && fill->n != 1) ox_fail(x, "attribute 'value' must hold one element");
    OxConst *r = like(x, fill ? fill->dt : DT_F32, (int)a->n, shape);
    double fv = fill ? ox_const_get(x, fill, 0) : 0;
    for (int64_t k = 0; k < r->n; k++)
        if (r->f)
            r->f[k] = fv;
        else
            r->i[k] = ox_f2i(x, fv);
    return r;
}

static OxConst *fold_range(Ox *x, const char *op, OxVal **in, int nin) {
    (void)op;
    if (nin < 3) return NULL;
    OxConst *a = in[0]->c;
    double s = ox_const_get(x, a, 0), l = ox_const_get(x, in[1]->c, 0),
           dl = ox_const_get(x, in[2]->c, 0);
    if (dl == 0) ox_fail(x, "Range with a delta of 0");
    double cnt = ceil((l - s) / dl);
    if (cnt > (double)((int64_t)1 << 28)) ox_fail(x, "Range of %g elements: too large", cnt);
    int64_t len = cnt > 0 ? (int64_t)cnt : 0;
    OxConst *r = like(x, a->dt, 1, &len);
    for (int64_t k = 0; k < len; k++)
        if (r->f)
            r->f[k] = round_to(a->dt, s + (double)k * dl);
        else
            r->i[k] = (int64_t)((uint64_t)ox_f2i(x, s) + (uint64_t)k * (uint64_t)ox_f2i(x, dl));
    return r;
}

static OxConst *fold_expand(Ox *x, const char *op, OxVal **in, int nin) {
    (void)op;
    OxConst *a = in[0]->c;
    if (nin < 2 || in[1]->c->ndim != 1 || in[1]->c->n > OX_MAX_DIMS) return NULL;
    OxConst *tc = in[1]->c;
    OxConst t = {.dt = DT_I64, .ndim = (int)tc->n, .n = 1};
    for (int k = 0; k < tc->n; k++)
        t.shape[k] = tc->i[k];
    OxConst *cs[2] = {a, &t};
    int64_t shape[OX_MAX_DIMS];
    int nd = bshape(x, cs, 2, shape);
    OxConst *r = like(x, a->dt, nd, shape);
    for (int64_t k = 0; k < r->n; k++)
        copy_el(x, r, k, a, bidx(shape, nd, k, a->shape, a->ndim));
    return r;
}

static OxConst *fold_scatter_nd(Ox *x, const char *op, OxVal **in, int nin) {
    (void)op;
    if (nin < 3 || ox_attr_s(x, "reduction", "none")[0] != 'n') return NULL;
    OxConst *a = in[0]->c, *idx = in[1]->c, *upd = in[2]->c;
    OxConst *r = like(x, a->dt, a->ndim, a->shape);
    for (int64_t k = 0; k < a->n; k++)
        copy_el(x, r, k, a, k);
    int q = idx->ndim, kd = q ? (int)idx->shape[q - 1] : 0;
    if (q < 1 || kd > a->ndim) ox_fail(x, "ScatterND indices of a wrong shape");
    int64_t cnt = kd ? idx->n / kd : 0, inner = 1;
    for (int d = kd; d < a->ndim; d++)
        inner *= a->shape[d];
    if (upd->n != cnt * inner) ox_fail(x, "ScatterND updates of a wrong size");
    for (int64_t j = 0; j < cnt; j++) {
        int64_t off = 0;
        for (int d = 0; d < kd; d++) {
            int64_t i = idx->i[j * kd + d];
            i = i < 0 ? i + a->shape[d] : i;
            if (i < 0 || i >= a->shape[d]) ox_fail(x, "ScatterND index out of range");
            off = off * a->shape[d] + i;
        }
        for (int64_t q2 = 0; q2 < inner; q2++)
            copy_el(x, r, off * inner + q2, upd, j * inner + q2);
    }
    return r;
}

/* ---- the table ---------------------------------------------------------- */

enum {
    /* Folded from the input's dims alone: needs the input, not its data. */
    FOLD_DIMS = 1,
    /* A symbolic value in any input decides the result's shape, which would
     * follow -D: the node stays an op. */
    FOLD_SYM_SHAPE = 2,
    /* The same for symbolic bounds or shapes in the inputs after the data
     * (the data then becomes a param). */
    FOLD_SYM_BOUNDS = 4,
};

static const struct {
    const char *op;
    FoldFn fn;
    unsigned flags;
    int optional; /* the first input that may be missing; 0: none may */
} folds[] = {
    {"Shape", fold_shape, FOLD_DIMS, 0},
    {"Size", fold_size, FOLD_DIMS, 0},
    {"Identity", fold_identity, 0, 0},
    {"Dropout", fold_dropout, 0, 0},
    {"Add", fold_binary, 0, 0},
    {"Sub", fold_binary, 0, 0},
    {"Mul", fold_binary, 0, 0},
    {"Div", fold_binary, 0, 0},
    {"Mod", fold_binary, 0, 0},
    {"Pow", fold_binary, 0, 0},
    {"Equal", fold_binary, 0, 0},
    {"Less", fold_binary, 0, 0},
    {"Greater", fold_binary, 0, 0},
    {"LessOrEqual", fold_binary, 0, 0},
    {"GreaterOrEqual", fold_binary, 0, 0},
    {"And", fold_binary, 0, 0},
    {"Or", fold_binary, 0, 0},
    {"Xor", fold_binary, 0, 0},
    {"Max", fold_extreme, 0, 0},
    {"Min", fold_extreme, 0, 0},
    {"Neg", fold_unary, 0, 0},
    {"Abs", fold_unary, 0, 0},
    {"Sqrt", fold_unary, 0, 0},
    {"Not", fold_unary, 0, 0},
    {"Floor", fold_unary, 0, 0},
    {"Ceil", fold_unary, 0, 0},
    {"Reciprocal", fold_unary, 0, 0},
    {"Exp", fold_unary, 0, 0},
    {"Log", fold_unary, 0, 0},
    {"Cast", fold_cast, 0, 0},
    {"Unsqueeze", fold_squeeze, 0, 1},
    {"Squeeze", fold_squeeze, 0, 1},
    {"Reshape", fold_reshape, FOLD_SYM_BOUNDS, 0},
    {"Flatten", fold_flatten, 0, 0},
    {"Transpose", fold_transpose, 0, 0},
    {"Concat", fold_concat, 0, 0},
    {"Gather", fold_gather, 0, 0},
    {"Slice", fold_slice, FOLD_SYM_BOUNDS, 3},
    {"Where", fold_where, 0, 0},
    {"Expand", fold_expand, FOLD_SYM_SHAPE, 0},
    {"ConstantOfShape", fold_constant_of_shape, FOLD_SYM_SHAPE, 0},
    {"Range", fold_range, FOLD_SYM_SHAPE, 0},
    {"ScatterND", fold_scatter_nd, 0, 0},
};

static bool wide_unsigned(DType t) {
    return t == DT_U16 || t == DT_U32 || t == DT_U64;
}
static bool wide_unsigned_onnx(int64_t t) {
    return t == ONNX__TENSOR_PROTO__DATA_TYPE__UINT16 ||
           t == ONNX__TENSOR_PROTO__DATA_TYPE__UINT32 || t == ONNX__TENSOR_PROTO__DATA_TYPE__UINT64;
}

bool ox_fold(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin) {
    const char *op = n->op_type;
    OxVal *out = ox_val(x, n->output[0]);
    int f = -1;
    for (int k = 0; k < (int)(sizeof folds / sizeof folds[0]) && f < 0; k++)
        if (!strcmp(op, folds[k].op)) f = k;
    unsigned flags = f >= 0 ? folds[f].flags : 0;
    int optional = f >= 0 && folds[f].optional ? folds[f].optional : nin;
    if ((flags & FOLD_DIMS) && (nin < 1 || !in[0])) ox_fail(x, "%s needs an input", op);
    /* Missing inputs: only those the table marks optional; anything else
     * is left to the op's mapping to report. */
    for (int k = 0; k < nin; k++)
        if (!in[k] && k < optional) return false;
    OxConst *r = NULL;
    if (flags & FOLD_DIMS) {
        r = folds[f].fn(x, op, in, nin);
    } else {
        /* Folding computes integers in int64 without wrapping to the
         * dtype (u64 above 2^63 is negative there): u16/u32/u64 values,
         * and casts to them, are left to the compiled code, which computes
         * them unsigned and wrapping. */
        if (!strcmp(op, "Cast") && wide_unsigned_onnx(ox_attr_i(x, "to", 0))) return false;
        for (int k = 0; k < nin; k++) {
            if (in[k] && !in[k]->c) return false;
            if (in[k] && wide_unsigned(in[k]->c->dt)) return false;
            if (in[k]) ox_const_values(x, in[k]->c);
        }
        if (nin < 1 || !in[0]) return false;
        for (int k = (flags & FOLD_SYM_SHAPE) ? 0 : 1; k < nin; k++)
            if ((flags & (FOLD_SYM_SHAPE | FOLD_SYM_BOUNDS)) && in[k] && has_sym(in[k]->c))
                return false;
        if (f < 0 || !(r = folds[f].fn(x, op, in, nin))) return false;
    }
    out->c = r;
    out->dt = r->dt;
    out->ndim = r->ndim;
    for (int k = 0; k < r->ndim; k++)
        out->dim[k] = ox_dim_c(r->shape[k]);
    return true;
}
