/* ScatterElements (and opset 9's Scatter), ScatterND, GatherND and
 * MaxUnpool in the IR's ops.
 *
 * ScatterElements(data, idx, upd, axis a) writes upd[q] to data at q with
 * q[a] replaced by idx[q]. With D = data's length along a, the hits are
 * the comparison M[q, j] = (idx[q] == j), j < D, so that
 *   contrib[.., j, ..] = sum over q[a] of where(M, upd, 0)   (mul: prod,
 *   max / min: amax / amin), hit = any over q[a] of M
 * and the output is where(hit, contrib, data) (reduction none), data +
 * contrib (add), data * contrib (mul), where(hit, maximum(data, contrib),
 * data) (max; min alike); indices smaller than the data along the other
 * axes are padded with no hits. One fused masked reduction reading
 * numel(idx) * D terms: no scatter kernel, so it is refused past
 * MAX_TERMS. Duplicate indices with reduction none sum (ONNX leaves their
 * order undefined).
 *
 * ScatterND and GatherND address the data's leading k axes by the
 * index's last dim: the data is seen as [prod(leading), rest], each index
 * as one linear position into it, and they become ScatterElements along
 * axis 0 of that view, and an index_select. */
#include <math.h>
#include <string.h>

#include "frontend/onnx/ox.h"

enum { MAX_TERMS = 1 << 26 };

static void need_index(Ox *x, OxVal *v) {
    if (v->dt != DT_I32 && v->dt != DT_I64)
        ox_fail(x, "the indices are %s, expected int32 or int64", dtype_name(v->dt));
}

static void need_known(Ox *x, const OxDim *d, int n, const char *what) {
    for (int k = 0; k < n; k++)
        if (d[k].sym) ox_fail(x, "the %s's dims must be known (dim %d is %s)", what, k, d[k].sym);
}

/* "[1, 1, n, 1]": n at dim `at` of rank r. */
static const char *at_dims(Ox *x, int64_t n, int at, int r) {
    OxDim d[OX_MAX_DIMS + 1];
    for (int k = 0; k < r; k++)
        d[k] = ox_dim_c(k == at ? n : 1);
    return ox_dims_text(x, d, r);
}

/* "[0, 1, r-1, 2, ...]": the last of r dims moved to position a. */
static const char *last_to(Ox *x, int a, int r) {
    char *s = arena_strdup(x->a, "[");
    for (int k = 0, src = 0; k < r; k++)
        s = arena_printf(x->a, "%s%s%d", s, k ? ", " : "", k == a ? r - 1 : src++);
    return arena_printf(x->a, "%s]", s);
}

/* The least or greatest value of dt, as a literal. */
static const char *extreme(Ox *x, DType dt, bool least) {
    if (dtype_is_float(dt)) return least ? "(-inf)" : "inf";
    switch (dt) {
    case DT_U8: return least ? "0" : "255";
    case DT_I8: return least ? "(-128)" : "127";
    case DT_I16: return least ? "(-32768)" : "32767";
    case DT_I32: return least ? "(-2147483648)" : "2147483647";
    case DT_U16: return least ? "0" : "65535";
    case DT_U32: return least ? "0" : "4294967295";
    default: ox_fail(x, "max/min reductions of %s are not supported", dtype_name(dt));
    }
}

/* A pad of each dim k != a from ind[k] to dat[k] at the end, or "" when none. */
static const char *pad_list(Ox *x, const OxDim *dat, const OxDim *ind, int a, int r) {
    bool any = false;
    char *s = arena_strdup(x->a, "[");
    for (int k = r - 1; k >= 0; k--) {
        int64_t p = k == a ? 0 : dat[k].v - ind[k].v;
        if (p < 0) ox_fail(x, "the indices are larger than the data along dim %d", k);
        any |= p > 0;
        s = arena_printf(x->a, "%s%s0, %lld", s, k == r - 1 ? "" : ", ", (long long)p);
    }
    return any ? arena_printf(x->a, "%s]", s) : "";
}

/* The scatter of upd at idx (i64, in range once negatives are wrapped)
 * into data along axis a, as described at the top. */
static const char *scatter(Ox *x, const char *data, const OxDim *dd, DType dt, const char *idx,
                           const OxDim *id, const char *upd, int r, int a, const char *red) {
    int64_t D = dd[a].v, terms = D;
    for (int k = 0; k < r; k++)
        terms *= id[k].v;
    if (terms > MAX_TERMS)
        ox_fail(x, "%lld indices into a dim of %lld: more than 2^26 comparisons, not supported",
                (long long)(terms / D), (long long)D);
    idx = arena_printf(x->a, "where(%s < 0, %s + %lld, %s)", idx, idx, (long long)D, idx);
    const char *m = ox_ident(x, "scatter_hits", NULL);
    ox_emit(x, OX_BODY, "%s = %s.unsqueeze(%d) == reshape(arange(0, %lld, 1), %s)\n", m, idx, r,
            (long long)D, at_dims(x, D, r, r + 1));
    const char *u = arena_printf(x->a, "%s.unsqueeze(%d)", upd, r);
    bool mul = !strcmp(red, "mul"), mx = !strcmp(red, "max"), mn = !strcmp(red, "min");
    const char *fill = mul  ? (dt == DT_BOOL ? "true" : "1")
                       : mx ? extreme(x, dt, true)
                       : mn ? extreme(x, dt, false)
                            : (dt == DT_BOOL ? "false" : "0");
    const char *fn = mul ? "prod" : mx ? "amax" : mn ? "amin" : "sum";
    const char *c = arena_printf(x->a, "%s(where(%s, %s, %s), dim=%d)", fn, m, u, fill, a);
    if (!mx && !mn && !dtype_is_float(dt)) c = arena_printf(x->a, "%s.to(%s)", c, dtype_name(dt));
    const char *perm = last_to(x, a, r);
    c = arena_printf(x->a, "%s.permute(%s)", c, perm);
    const char *hit =
        arena_printf(x->a, "sum(%s.to(i32), dim=%d).permute(%s)", m, a, perm); /* hits per place */
    const char *pl = pad_list(x, dd, id, a, r);
    if (*pl) {
        c = arena_printf(x->a, "pad(%s, %s%s%s)", c, pl, mul ? ", value=" : "", mul ? "1" : "");
        hit = arena_printf(x->a, "pad(%s, %s)", hit, pl);
    }
    if (!strcmp(red, "add")) return arena_printf(x->a, "%s + %s", data, c);
    if (mul) return arena_printf(x->a, "%s * %s", data, c);
    if (mx || mn)
        return arena_printf(x->a, "where(%s > 0, %s(%s, %s), %s)", hit, mx ? "maximum" : "minimum",
                            data, c, data);
    return arena_printf(x->a, "where(%s > 0, %s, %s)", hit, c, data);
}

static const char *reduction(Ox *x) {
    const char *red = ox_attr_s(x, "reduction", "none");
    if (strcmp(red, "none") && strcmp(red, "add") && strcmp(red, "mul") && strcmp(red, "max") &&
        strcmp(red, "min"))
        ox_fail(x, "reduction '%s' (none, add, mul, max and min are ONNX's)", red);
    return red;
}

static bool scatter_elements(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "ScatterElements") && !ox_op_is(n, "Scatter")) return false;
    ox_need_inputs(x, in, nin, 3);
    OxVal *d = in[0], *i = in[1], *u = in[2];
    int r = d->ndim;
    if (r < 1) ox_fail(x, "the data must have at least one dimension");
    if (r + 1 > OX_MAX_DIMS) ox_fail(x, "too many dimensions");
    need_index(x, i);
    if (i->ndim != r || u->ndim != r)
        ox_fail(x, "indices and updates must have the data's rank %d", r);
    for (int k = 0; k < r; k++)
        if (i->dim[k].v != u->dim[k].v) ox_fail(x, "indices and updates differ along dim %d", k);
    if (u->dt != d->dt) ox_fail(x, "updates are %s, data %s", dtype_name(u->dt), dtype_name(d->dt));
    need_known(x, d->dim, r, "data");
    need_known(x, i->dim, r, "indices");
    int a = ox_axis(x, ox_attr_i(x, "axis", 0), r);
    const char *ir = ox_ref(x, i, false);
    if (i->dt != DT_I64) ir = arena_printf(x->a, "%s.to(i64)", ir);
    ox_bind(x, out[0],
            scatter(x, ox_ref(x, d, false), d->dim, d->dt, ir, i->dim, ox_ref(x, u, false), r, a,
                    reduction(x)));
    ox_set_shape(out[0], d->dt, r, d->dim);
    return true;
}

/* The linear position of each index of [Q..., k] into the data's axes
 * b..b+k (negatives wrapped per axis): sum(idx * strides, dim=-1), plus
 * the batch position times the block (GatherND's batch_dims). */
static const char *linear_index(Ox *x, OxVal *d, OxVal *i, int b, int k) {
    char *dims = arena_strdup(x->a, "tensor(["), *strides = arena_strdup(x->a, "tensor([");
    int64_t s = 1, st[OX_MAX_DIMS];
    for (int t = k - 1; t >= 0; t--)
        st[t] = s, s *= d->dim[b + t].v;
    for (int t = 0; t < k; t++) {
        dims = arena_printf(x->a, "%s%s%lld", dims, t ? ", " : "", (long long)d->dim[b + t].v);
        strides = arena_printf(x->a, "%s%s%lld", strides, t ? ", " : "", (long long)st[t]);
    }
    const char *ir = ox_ref(x, i, false);
    if (i->dt != DT_I64) ir = arena_printf(x->a, "%s.to(i64)", ir);
    const char *e = arena_printf(x->a, "sum(where(%s < 0, %s + %s]), %s) * %s]), dim=-1)", ir, ir,
                                 dims, ir, strides);
    if (b > 0) {
        /* the batch's flat position, laid along the index's batch dims */
        int64_t nb = 1;
        OxDim bd[OX_MAX_DIMS];
        for (int t = 0; t < i->ndim - 1; t++)
            bd[t] = ox_dim_c(t < b ? i->dim[t].v : 1);
        for (int t = 0; t < b; t++)
            nb *= d->dim[t].v;
        e = arena_printf(x->a, "%s + reshape(arange(0, %lld, 1), %s) * %lld", e, (long long)nb,
                         ox_dims_text(x, bd, i->ndim - 1), (long long)s);
    }
    return e;
}

static bool scatter_gather_nd(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    bool sc = ox_op_is(n, "ScatterND");
    if (!sc && !ox_op_is(n, "GatherND")) return false;
    ox_need_inputs(x, in, nin, sc ? 3 : 2);
    OxVal *d = in[0], *i = in[1];
    need_index(x, i);
    int r = d->ndim, q = i->ndim, b = sc ? 0 : (int)ox_attr_i(x, "batch_dims", 0);
    if (q < 1) ox_fail(x, "the indices must have at least one dimension");
    if (i->dim[q - 1].sym) ox_fail(x, "the indices' last dim must be known");
    int k = (int)i->dim[q - 1].v;
    if (b < 0 || b >= q || b > r) ox_fail(x, "batch_dims %d for indices of rank %d", b, q);
    if (k < 1 || b + k > r)
        ox_fail(x, "index tuples of %d for data of rank %d (batch_dims %d)", k, r, b);
    need_known(x, d->dim, r, "data");
    need_known(x, i->dim, q, "indices");
    for (int t = 0; t < b; t++)
        if (d->dim[t].v != i->dim[t].v) ox_fail(x, "batch dim %d differs: data and indices", t);
    int64_t blocks = 1, rest = 1, nq = 1;
    for (int t = 0; t < b + k; t++)
        blocks *= d->dim[t].v;
    for (int t = b + k; t < r; t++)
        rest *= d->dim[t].v;
    for (int t = 0; t < q - 1; t++)
        nq *= i->dim[t].v;
    /* the data as [blocks, rest...] */
    OxDim flat[OX_MAX_DIMS], o[OX_MAX_DIMS];
    int nf = 0, no = 0;
    flat[nf++] = ox_dim_c(blocks);
    for (int t = b + k; t < r; t++)
        flat[nf++] = d->dim[t];
    const char *lin = linear_index(x, d, i, b, k);
    const char *view =
        arena_printf(x->a, "reshape(%s, %s)", ox_ref(x, d, false), ox_dims_text(x, flat, nf));
    if (!sc) {
        for (int t = 0; t < q - 1; t++)
            o[no++] = i->dim[t];
        for (int t = b + k; t < r; t++)
            o[no++] = d->dim[t];
        if (no > OX_MAX_DIMS) ox_fail(x, "too many dimensions");
        ox_bind(x, out[0],
                arena_printf(x->a, "reshape(index_select(%s, 0, reshape(%s, [%lld])), %s)", view,
                             lin, (long long)nq, ox_dims_text(x, o, no)));
        ox_set_shape(out[0], d->dt, no, o);
        return true;
    }
    /* ScatterND: updates [Q..., rest...] as [nq, rest], the index
     * expanded along rest */
    OxVal *u = in[2];
    if (u->dt != d->dt) ox_fail(x, "updates are %s, data %s", dtype_name(u->dt), dtype_name(d->dt));
    if (u->ndim != q - 1 + r - k)
        ox_fail(x, "updates of rank %d, expected %d", u->ndim, q - 1 + r - k);
    OxDim dd[2] = {ox_dim_c(blocks), ox_dim_c(rest)}, id[2] = {ox_dim_c(nq), ox_dim_c(rest)};
    const char *i2 = arena_printf(x->a, "reshape(%s, [%lld, 1]).expand([%lld, %lld])", lin,
                                  (long long)nq, (long long)nq, (long long)rest);
    const char *u2 = arena_printf(x->a, "reshape(%s, [%lld, %lld])", ox_ref(x, u, false),
                                  (long long)nq, (long long)rest);
    const char *d2 = arena_printf(x->a, "reshape(%s, [%lld, %lld])", ox_ref(x, d, false),
                                  (long long)blocks, (long long)rest);
    const char *e = scatter(x, d2, dd, d->dt, i2, id, u2, 2, 0, reduction(x));
    return ox_bind_shaped(x, out[0],
                          arena_printf(x->a, "reshape(%s, %s)", e, ox_dims_text(x, d->dim, r)),
                          d->dt, r, d->dim);
}

/* MaxUnpool: zeros of the output's shape with X written at I, the
 * positions into the whole output flattened (MaxPool's indices): the
 * scatter along axis 1 of [1, numel(out)]. The size per spatial dim:
 * output_shape (known at import), else (in - 1) * stride + kernel - pads. */
static bool max_unpool(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "MaxUnpool")) return false;
    ox_need_inputs(x, in, nin, 2);
    OxVal *v = in[0], *i = in[1];
    int r = v->ndim, ns = r - 2, nk, np, nst;
    need_index(x, i);
    if (ns < 1) ox_fail(x, "the input must be [N, C, ...]");
    if (i->ndim != r) ox_fail(x, "the indices must have the input's shape");
    need_known(x, v->dim, r, "input");
    const int64_t *k = ox_attr_ints(x, "kernel_shape", &nk), *p = ox_attr_ints(x, "pads", &np),
                  *st = ox_attr_ints(x, "strides", &nst);
    if (!k || nk != ns) ox_fail(x, "kernel_shape must have %d values", ns);
    if ((p && np != 2 * ns) || (st && nst != ns)) ox_fail(x, "pads or strides of a wrong length");
    /* d: the unpooled shape the indices address; o: the output's, which
     * output_shape may make larger (padded at the end, as ONNX's tests) */
    OxDim d[OX_MAX_DIMS], o[OX_MAX_DIMS];
    d[0] = o[0] = v->dim[0], d[1] = o[1] = v->dim[1];
    OxConst *os = nin > 2 && in[2] ? ox_need_const(x, in[2], "output_shape") : NULL;
    if (os && os->n != r)
        ox_fail(x, "output_shape has %lld values for rank %d", (long long)os->n, r);
    char *pads = arena_strdup(x->a, "[");
    bool padded = false;
    for (int t = 0; t < ns; t++) {
        int64_t s = st ? st[t] : 1, sz = (v->dim[2 + t].v - 1) * s + k[t];
        if (p) sz -= p[t] + p[t + ns];
        int64_t osz = os ? ox_const_int(x, os, 2 + t) : sz;
        if (sz < 1 || sz > ((int64_t)1 << 31) || osz < sz || osz > ((int64_t)1 << 31))
            ox_fail(x, "output size %lld along spatial dim %d (at least %lld)", (long long)osz, t,
                    (long long)sz);
        d[2 + t] = ox_dim_c(sz), o[2 + t] = ox_dim_c(osz);
        padded |= osz > sz;
    }
    for (int t = ns - 1; t >= 0; t--)
        pads = arena_printf(x->a, "%s%s0, %lld", pads, t == ns - 1 ? "" : ", ",
                            (long long)(o[2 + t].v - d[2 + t].v));
    int64_t total = 1, q = 1;
    for (int t = 0; t < r; t++)
        total *= d[t].v, q *= v->dim[t].v;
    OxDim dd[2] = {ox_dim_c(1), ox_dim_c(total)}, id[2] = {ox_dim_c(1), ox_dim_c(q)};
    const char *ir = ox_ref(x, i, false);
    if (i->dt != DT_I64) ir = arena_printf(x->a, "%s.to(i64)", ir);
    const char *e = scatter(
        x, arena_printf(x->a, "zeros(1, %lld, dtype=%s)", (long long)total, dtype_name(v->dt)), dd,
        v->dt, arena_printf(x->a, "reshape(%s, [1, %lld])", ir, (long long)q), id,
        arena_printf(x->a, "reshape(%s, [1, %lld])", ox_ref(x, v, false), (long long)q), 2, 1,
        "none");
    e = arena_printf(x->a, "reshape(%s, %s)", e, ox_dims_text(x, d, r));
    if (padded) e = arena_printf(x->a, "pad(%s, %s])", e, pads);
    return ox_bind_shaped(x, out[0], e, v->dt, r, o);
}

bool ox_op_scatter(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    return scatter_elements(x, n, in, nin, out) || scatter_gather_nd(x, n, in, nin, out) ||
           max_unpool(x, n, in, nin, out);
}
