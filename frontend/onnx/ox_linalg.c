/* Det and DFT, written in the language's ops:
 *   Det  LU elimination with partial pivoting, unrolled over the (known)
 *        matrix size: each step picks the largest entry of the first
 *        column, multiplies the determinant by it (negated when rows were
 *        swapped), and continues on the Schur complement, one size smaller.
 *   DFT  products with cos/sin matrices built at import time (params),
 *        in f64 so that the sums of an f32 signal keep f32's precision. */
#include <math.h>
#include <string.h>

#include "frontend/onnx/ox.h"

/* The unrolled elimination writes about eight statements per column. */
enum { DET_MAX = 64 };
/* Each DFT matrix is n_in x n_out f64s: 1024 x 1024 is 8 MiB. */
enum { DFT_MAX = 1024 };
static const double PI = 3.14159265358979323846;

static const char *det(Ox *x, OxVal *v) {
    int r = v->ndim;
    if (r < 2) ox_fail(x, "the input has rank %d, expected [..., M, M]", r);
    if (!dtype_is_float(v->dt))
        ox_fail(x, "the input is %s, expected a float type", dtype_name(v->dt));
    OxDim m0 = v->dim[r - 2], m1 = v->dim[r - 1];
    if (m0.sym || m1.sym || m0.v != m1.v)
        ox_fail(x, "the input's last two dims (%s, %s) must be equal and known at import",
                ox_dim_text(x, m0), ox_dim_text(x, m1));
    if (m0.v < 1 || m0.v > DET_MAX)
        ox_fail(x, "matrices of %lld x %lld: 1 to %d rows are supported", (long long)m0.v,
                (long long)m0.v, DET_MAX);
    const char *base = ox_cur(x)->output[0];
    const char *s = ox_ref(x, v, false), *acc = NULL;
    for (int64_t m = m0.v; m > 1; m--) {
        /* the pivot: the first largest |entry| of column 0 (numpy's getrf) */
        const char *p =
            ox_tmp(x, base, "_piv_row",
                   arena_printf(x->a, "argmax(abs(%s[..., :, 0]), dim=-1, keepdim=true)", s));
        const char *hit = ox_tmp(x, base, "_piv_hit",
                                 arena_printf(x->a, "arange(0, %lld, 1) == %s", (long long)m, p));
        const char *row =
            ox_tmp(x, base, "_piv_vals",
                   arena_printf(x->a, "sum(where(%s.unsqueeze(-1), %s, 0.0), dim=-2, keepdim=true)",
                                hit, s));
        const char *piv = ox_tmp(x, base, "_pivot", arena_printf(x->a, "%s[..., 0]", row));
        /* rows 1..m-1 once row 0 and the pivot's are swapped */
        const char *rest = ox_tmp(
            x, base, "_rows",
            arena_printf(x->a, "where(%s[..., 1:].unsqueeze(-1), %s[..., 0:1, :], %s[..., 1:, :])",
                         hit, s, s));
        /* a zero pivot: the column is all zeros, the determinant 0 */
        const char *f =
            ox_tmp(x, base, "_factor",
                   arena_printf(x->a, "where(%s == 0.0, 0.0, %s[..., :, 0] / %s)", piv, rest, piv));
        const char *term = arena_printf(x->a, "where(%s == 0, %s, 0.0 - %s)", p, piv, piv);
        acc = ox_tmp(x, base, "_det", acc ? arena_printf(x->a, "%s * %s", acc, term) : term);
        s = ox_tmp(
            x, base, "_schur",
            arena_printf(x->a, "%s[..., :, 1:] - %s.unsqueeze(-1) * %s[..., :, 1:]", rest, f, row));
    }
    const char *last = arena_printf(x->a, "%s[..., :, 0]", s);
    return arena_printf(x->a, "(%s).squeeze(-1)",
                        acc ? arena_printf(x->a, "%s * %s", acc, last) : last);
}

/* An n x k f64 param of cos (sine: sin) of 2 pi i j / len, times sign / len
 * for the inverse. */
static const char *dft_matrix(Ox *x, int64_t n, int64_t k, int64_t len, bool sine, double sign,
                              double scale, const char *hint) {
    int64_t shape[2] = {n, k};
    OxConst *c = ox_const_new(x, DT_F64, 2, shape);
    ox_const_values(x, c);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < k; j++) {
            /* the angle reduced mod len first: exact for every i * j */
            double t = 2.0 * PI * (double)((i * j) % len) / (double)len;
            c->f[i * k + j] = (sine ? sign * sin(t) : cos(t)) * scale;
        }
    c->hint = hint;
    return ox_param(x, c, false);
}

static bool dft(Ox *x, OxVal **in, int nin, OxVal *out) {
    OxVal *v = in[0];
    int r = v->ndim;
    if (r < 2 || v->dim[r - 1].sym || (v->dim[r - 1].v != 1 && v->dim[r - 1].v != 2))
        ox_fail(x, "the input must be [..., N, 1] (real) or [..., N, 2] (complex)");
    if (!dtype_is_float(v->dt))
        ox_fail(x, "the input is %s, expected a float type", dtype_name(v->dt));
    bool cplx = v->dim[r - 1].v == 2;
    bool inv = ox_attr_i(x, "inverse", 0) != 0, one = ox_attr_i(x, "onesided", 0) != 0;
    /* opset 20 moved axis to an input (default -2: the last signal dim) */
    int64_t axis = ox_attr_i(x, "axis", 1);
    if (x->opset >= 20) {
        if (ox_attr(x, "axis")) ox_fail(x, "attribute 'axis' is an input from opset 20");
        axis = nin > 2 && in[2] ? ox_const_int(x, ox_need_const(x, in[2], "axis"), 0) : -2;
    }
    if (axis < 0) axis += r;
    if (axis < 0 || axis > r - 2)
        ox_fail(x, "axis %lld is out of range for a rank-%d input (a signal dim, not the last)",
                (long long)axis, r);
    OxDim nd = v->dim[axis];
    if (nd.sym)
        ox_fail(x, "the signal's length along axis %lld must be known at import", (long long)axis);
    int64_t len = nd.v;
    if (nin > 1 && in[1]) {
        OxConst *c = ox_need_const(x, in[1], "dft_length");
        if (c->n != 1) ox_fail(x, "dft_length has %lld values, expected one", (long long)c->n);
        len = ox_const_int(x, c, 0);
    }
    if (len < 1 || len > DFT_MAX)
        ox_fail(x, "a DFT of length %lld: 1 to %d are supported (the cos/sin matrices are params)",
                (long long)len, DFT_MAX);
    if (one && (cplx || inv)) ox_fail(x, "onesided=1 is defined for a real input's forward DFT");
    int64_t n_use = nd.v < len ? nd.v : len, k = one ? len / 2 + 1 : len;
    /* X[k] = sum_n x[n] e^(-+2 pi i n k / len): forward sin negated */
    double sc = inv ? 1.0 / (double)len : 1.0, sign = inv ? 1.0 : -1.0;
    const char *base = out->name, *src = ox_ref(x, v, false);
    const char *cm =
        dft_matrix(x, n_use, k, len, false, sign, sc, arena_printf(x->a, "%s_cos", base));
    const char *sm =
        dft_matrix(x, n_use, k, len, true, sign, sc, arena_printf(x->a, "%s_sin", base));
    int sr = r - 1; /* the signal's rank */
    const char *parts[2];
    for (int p = 0; p < (cplx ? 2 : 1); p++) {
        const char *e = arena_printf(x->a, "%s[..., %d]", src, p);
        if (axis != sr - 1)
            e = arena_printf(x->a, "%s.transpose(%lld, %d)", e, (long long)axis, sr - 1);
        if (n_use < nd.v) e = arena_printf(x->a, "%s[..., :%lld]", e, (long long)n_use);
        parts[p] = ox_tmp(x, base, p ? "_im" : "_re", arena_printf(x->a, "%s.to(f64)", e));
    }
    /* (a + ib)(c + is) = ac - bs + i(as + bc), s carrying the sign */
    const char *re = arena_printf(x->a, "%s @ %s", parts[0], cm);
    const char *im = arena_printf(x->a, "%s @ %s", parts[0], sm);
    if (cplx) {
        re = arena_printf(x->a, "%s - %s @ %s", re, parts[1], sm);
        im = arena_printf(x->a, "%s + %s @ %s", im, parts[1], cm);
    }
    const char *dt = dtype_name(v->dt);
    const char *outs[2];
    for (int p = 0; p < 2; p++) {
        const char *e = arena_printf(x->a, "(%s).to(%s)", p ? im : re, dt);
        if (axis != sr - 1)
            e = arena_printf(x->a, "%s.transpose(%lld, %d)", e, (long long)axis, sr - 1);
        outs[p] = ox_tmp(x, base, p ? "_imag" : "_real", e);
    }
    OxDim d[OX_MAX_DIMS];
    memcpy(d, v->dim, sizeof d);
    d[axis] = ox_dim_c(k);
    d[r - 1] = ox_dim_c(2);
    return ox_bind_shaped(x, out, arena_printf(x->a, "stack([%s, %s], dim=-1)", outs[0], outs[1]),
                          v->dt, r, d);
}

bool ox_op_linalg(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (ox_op_is(n, "Det")) {
        ox_need_inputs(x, in, nin, 1);
        OxVal *v = in[0];
        return ox_bind_shaped(x, out[0], det(x, v), v->dt, v->ndim - 2, v->dim);
    }
    if (ox_op_is(n, "DFT")) {
        ox_need_inputs(x, in, nin, 1);
        return dft(x, in, nin, out[0]);
    }
    return false;
}
