/* Constant tensors and dimension arithmetic. A dimension carries its value
 * under the defaults and, when it depends on a symbolic dim, the .tg
 * expression that computes it, so `Shape -> Gather -> Mul -> Reshape`
 * chains come out as `reshape(x, [batch * 10, 64])`, valid for any -D. */
#include <math.h>
#include <string.h>

#include "frontend/onnx/ox.h"

OxDim ox_dim_c(int64_t v) {
    return (OxDim){v, NULL};
}

bool ox_dim_eq(OxDim a, OxDim b) {
    if (a.sym || b.sym) return a.sym && b.sym && !strcmp(a.sym, b.sym);
    return a.v == b.v;
}

const char *ox_dim_text(Ox *x, OxDim d) {
    return d.sym ? d.sym : arena_printf(x->a, "%lld", (long long)d.v);
}

/* An operand inside a larger expression: compound ones in parentheses. */
static const char *operand(Ox *x, OxDim d) {
    const char *t = ox_dim_text(x, d);
    return strchr(t, ' ') ? arena_printf(x->a, "(%s)", t) : t;
}

static int64_t floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

OxDim ox_dim_op(Ox *x, char op, OxDim a, OxDim b) {
    int64_t v;
    switch (op) {
    case '+': v = (int64_t)((uint64_t)a.v + (uint64_t)b.v); break;
    case '-': v = (int64_t)((uint64_t)a.v - (uint64_t)b.v); break;
    case '*': v = (int64_t)((uint64_t)a.v * (uint64_t)b.v); break;
    case '/':
        if (b.v == 0) ox_fail(x, "integer division by zero in shape arithmetic");
        v = (a.v == INT64_MIN && b.v == -1) ? a.v : floordiv(a.v, b.v);
        break;
    default:
        if (b.v == 0) ox_fail(x, "integer remainder by zero in shape arithmetic");
        v = (a.v == INT64_MIN && b.v == -1) ? 0 : a.v - floordiv(a.v, b.v) * b.v;
        break;
    }
    if (!a.sym && !b.sym) return ox_dim_c(v);
    /* Identities keep the text short: x * 1, x + 0, x // 1. */
    if (!b.sym && ((op == '*' || op == '/') && b.v == 1)) return (OxDim){v, a.sym};
    if (!b.sym && (op == '+' || op == '-') && b.v == 0) return (OxDim){v, a.sym};
    if (!a.sym && op == '*' && a.v == 1) return (OxDim){v, b.sym};
    if (!a.sym && op == '+' && a.v == 0) return (OxDim){v, b.sym};
    const char *o = op == '/' ? "//" : op == '+' ? "+" : op == '-' ? "-" : op == '*' ? "*" : "%";
    return (OxDim){v, arena_printf(x->a, "%s %s %s", operand(x, a), o, operand(x, b))};
}

const char *ox_dims_text(Ox *x, const OxDim *d, int n) {
    size_t cap = 2;
    for (int k = 0; k < n; k++)
        cap += strlen(ox_dim_text(x, d[k])) + 2;
    char *s = arena_alloc(x->a, cap + 1);
    strcpy(s, "[");
    for (int k = 0; k < n; k++) {
        if (k) strcat(s, ", ");
        strcat(s, ox_dim_text(x, d[k]));
    }
    strcat(s, "]");
    return s;
}

int64_t ox_numel(const OxConst *c) {
    return c->n;
}

OxConst *ox_const_new(Ox *x, DType dt, int ndim, const int64_t *shape) {
    OxConst *c = ARENA_NEW(x->a, OxConst);
    c->dt = dt;
    c->ndim = ndim;
    c->n = 1;
    for (int k = 0; k < ndim; k++) {
        c->shape[k] = shape[k];
        /* Sizes are checked by the callers (at most 2^40 each); the
         * product saturates rather than overflowing. */
        if (c->n && shape[k] > ((int64_t)1 << 40) / c->n)
            c->n = (int64_t)1 << 41;
        else
            c->n *= shape[k];
    }
    return c;
}

static float half_to_float(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    float v = e == 0    ? ldexpf((float)m, -24)
              : e == 31 ? (m ? NAN : INFINITY)
                        : ldexpf((float)(m | 1024), e - 25);
    return (h & 0x8000) ? -v : v;
}

void ox_const_values(Ox *x, OxConst *c) {
    bool fl = dtype_is_float(c->dt);
    if (fl ? c->f != NULL : c->i != NULL) return;
    if (c->n > ((int64_t)1 << 28))
        ox_fail(x, "a constant of %lld elements is too large to evaluate at import",
                (long long)c->n);
    size_t n = (size_t)c->n;
    if (fl)
        c->f = ARENA_ARRAY(x->a, double, n ? n : 1);
    else
        c->i = ARENA_ARRAY(x->a, int64_t, n ? n : 1);
    if (!c->raw) return; /* zeros */
    for (size_t k = 0; k < n; k++) {
        const uint8_t *p = c->raw + k * dtype_size(c->dt);
        switch (c->dt) {
        case DT_F32: {
            float v;
            memcpy(&v, p, 4);
            c->f[k] = v;
            break;
        }
        case DT_F64: memcpy(&c->f[k], p, 8); break;
        case DT_F16: c->f[k] = half_to_float((uint16_t)(p[0] | p[1] << 8)); break;
        case DT_BF16: {
            uint32_t b = (uint32_t)(p[0] | p[1] << 8) << 16;
            float v;
            memcpy(&v, &b, 4);
            c->f[k] = v;
            break;
        }
        case DT_I64: memcpy(&c->i[k], p, 8); break;
        case DT_I32: {
            int32_t v;
            memcpy(&v, p, 4);
            c->i[k] = v;
            break;
        }
        case DT_I16: c->i[k] = (int16_t)(p[0] | p[1] << 8); break;
        case DT_U16: c->i[k] = (uint16_t)(p[0] | p[1] << 8); break;
        case DT_U32: {
            uint32_t v;
            memcpy(&v, p, 4);
            c->i[k] = v;
            break;
        }
        case DT_U64: memcpy(&c->i[k], p, 8); break; /* the u64's bits */
        case DT_I8: c->i[k] = (int8_t)p[0]; break;
        case DT_BOOL: c->i[k] = p[0] != 0; break;
        default: c->i[k] = p[0]; break;
        }
    }
}

double ox_const_get(Ox *x, OxConst *c, int64_t k) {
    ox_const_values(x, c);
    return dtype_is_float(c->dt) ? c->f[k] : (double)c->i[k];
}

int64_t ox_f2i(Ox *x, double v) {
    if (v >= -9.2e18 && v <= 9.2e18) return (int64_t)v;
    if (x) ox_fail(x, "the value %g does not fit a 64-bit integer", v);
    return 0;
}

int64_t ox_const_int(Ox *x, OxConst *c, int64_t k) {
    ox_const_values(x, c);
    return dtype_is_float(c->dt) ? ox_f2i(x, c->f[k]) : c->i[k];
}

OxDim ox_const_dim(Ox *x, OxConst *c, int64_t k) {
    ox_const_values(x, c);
    if (dtype_is_float(c->dt)) return ox_dim_c(ox_f2i(x, c->f[k]));
    return (OxDim){c->i[k], c->sym ? c->sym[k] : NULL};
}

void ox_need_inputs(Ox *x, OxVal **in, int nin, int k) {
    if (nin < k) ox_fail(x, "%d inputs, expected at least %d", nin, k);
    for (int i = 0; i < k; i++)
        if (!in[i]) ox_fail(x, "input %d is missing", i);
}

OxConst *ox_need_const(Ox *x, OxVal *v, const char *what) {
    if (!v || !v->c)
        ox_fail(x,
                "input '%s' (%s) must be known at import time (a constant, an initializer or "
                "computed from shapes); it is computed at run time",
                v ? v->name : "?", what);
    ox_const_values(x, v->c);
    return v->c;
}

int ox_axis(Ox *x, int64_t axis, int rank) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= (rank ? rank : 1))
        ox_fail(x, "axis %lld is out of range for a tensor of rank %d", (long long)axis, rank);
    return (int)a;
}

int ox_broadcast(Ox *x, const OxDim *a, int na, const OxDim *b, int nb, OxDim *out) {
    int n = na > nb ? na : nb;
    for (int k = 0; k < n; k++) {
        int ia = k - (n - na), ib = k - (n - nb);
        OxDim da = ia >= 0 ? a[ia] : ox_dim_c(1), db = ib >= 0 ? b[ib] : ox_dim_c(1);
        if (!da.sym && da.v == 1)
            out[k] = db;
        else if (!db.sym && db.v == 1)
            out[k] = da;
        else if (ox_dim_eq(da, db) || da.v == db.v)
            out[k] = da.sym ? da : db;
        else
            ox_fail(x, "shapes do not broadcast: size %s against %s at dimension %d",
                    ox_dim_text(x, da), ox_dim_text(x, db), k);
    }
    return n;
}
