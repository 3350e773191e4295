/* ONNX operators written as a few of the IR's ops each: GatherElements
 * (torch.gather), DepthToSpace/SpaceToDepth (reshape, permute, reshape),
 * OneHot and Hardmax (a comparison with arange along the axis),
 * ReverseSequence (a gather of computed indices), TopK (ranks). */
#include <string.h>

#include "frontend/onnx/ox.h"

static bool top_k(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out);

/* GatherElements as torch.gather, ONNX's negative indices counted from
 * the end of the axis. */
static bool gather_elements(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "GatherElements")) return false;
    ox_need_inputs(x, in, nin, 2);
    int r = in[0]->ndim, a = ox_axis(x, ox_attr_i(x, "axis", 0), r);
    if (in[1]->ndim != r) ox_fail(x, "indices must have the data's rank %d", r);
    if (dtype_is_float(in[1]->dt) || in[1]->dt == DT_BOOL) ox_fail(x, "indices must be integers");
    const char *i = ox_ref(x, in[1], false);
    if (in[1]->dt != DT_I64) i = arena_printf(x->a, "%s.to(i64)", i);
    const char *len = ox_dim_text(x, in[0]->dim[a]);
    ox_bind(x, out[0],
            arena_printf(x->a, "gather(%s, %d, where(%s < 0, %s + %s, %s))",
                         ox_ref(x, in[0], false), a, i, i, len, i));
    ox_set_shape(out[0], in[0]->dt, r, in[1]->dim);
    return true;
}

/* DepthToSpace and SpaceToDepth: a reshape, a permute and a reshape. */
static bool depth_space(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    bool d2s = ox_op_is(n, "DepthToSpace");
    if (!d2s && !ox_op_is(n, "SpaceToDepth")) return false;
    ox_need_inputs(x, in, nin, 1);
    if (in[0]->ndim != 4) ox_fail(x, "the input must be [N, C, H, W]");
    int64_t b = ox_attr_i(x, "blocksize", 0);
    OxDim N = in[0]->dim[0], C = in[0]->dim[1], H = in[0]->dim[2], W = in[0]->dim[3];
    OxDim B = ox_dim_c(b), BB = ox_dim_c(b * b);
    if (b < 1 || b > (1 << 20)) ox_fail(x, "blocksize %lld", (long long)b);
    OxDim t[6], o[4];
    const char *perm;
    if (d2s) {
        if (C.sym || C.v % (b * b))
            ox_fail(x, "channels %lld are not a multiple of %lld", (long long)C.v,
                    (long long)(b * b));
        OxDim c = ox_dim_op(x, '/', C, BB);
        bool crd = !strcmp(ox_attr_s(x, "mode", "DCR"), "CRD");
        if (!crd && strcmp(ox_attr_s(x, "mode", "DCR"), "DCR"))
            ox_fail(x, "mode '%s' (DCR and CRD are ONNX's)", ox_attr_s(x, "mode", ""));
        OxDim dcr[6] = {N, B, B, c, H, W}, crd6[6] = {N, c, B, B, H, W};
        memcpy(t, crd ? crd6 : dcr, sizeof t);
        perm = crd ? "[0, 1, 4, 2, 5, 3]" : "[0, 3, 4, 1, 5, 2]";
        o[0] = N, o[1] = c, o[2] = ox_dim_op(x, '*', H, B), o[3] = ox_dim_op(x, '*', W, B);
    } else {
        if (H.sym || W.sym || H.v % b || W.v % b)
            ox_fail(x, "height and width must be multiples of %lld", (long long)b);
        OxDim h = ox_dim_op(x, '/', H, B), w = ox_dim_op(x, '/', W, B);
        OxDim s6[6] = {N, C, h, B, w, B};
        memcpy(t, s6, sizeof t);
        perm = "[0, 3, 5, 1, 2, 4]";
        o[0] = N, o[1] = ox_dim_op(x, '*', C, BB), o[2] = h, o[3] = w;
    }
    ox_bind(x, out[0],
            arena_printf(x->a, "reshape(permute(reshape(%s, %s), %s), %s)", ox_ref(x, in[0], false),
                         ox_dims_text(x, t, 6), perm, ox_dims_text(x, o, 4)));
    ox_set_shape(out[0], in[0]->dt, 4, o);
    return true;
}

/* OneHot: indices (negative from the end) compared with arange(depth)
 * laid along the new axis; depth and [off, on] known at import. */
static bool one_hot(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "OneHot")) return false;
    ox_need_inputs(x, in, nin, 3);
    OxConst *dc = ox_need_const(x, in[1], "depth"), *vc = ox_need_const(x, in[2], "values");
    if (dc->n != 1 || vc->n != 2) ox_fail(x, "depth must be one value and values two");
    int64_t depth = ox_f2i(x, ox_const_get(x, dc, 0));
    if (depth < 1 || depth > ((int64_t)1 << 31)) ox_fail(x, "depth %lld", (long long)depth);
    int r = in[0]->ndim + 1;
    if (r > OX_MAX_DIMS) ox_fail(x, "too many dimensions");
    int a = ox_axis(x, ox_attr_i(x, "axis", -1), r);
    OxDim d[OX_MAX_DIMS], ad[OX_MAX_DIMS];
    for (int k = 0, s = 0; k < r; k++) {
        d[k] = k == a ? ox_dim_c(depth) : in[0]->dim[s++];
        ad[k] = ox_dim_c(k == a ? depth : 1);
    }
    const char *i = ox_ref(x, in[0], false);
    if (in[0]->dt != DT_I64) i = arena_printf(x->a, "%s.to(i64)", i);
    i = arena_printf(x->a, "where(%s < 0, %s + %lld, %s).unsqueeze(%d)", i, i, (long long)depth, i,
                     a);
    bool fl = dtype_is_float(vc->dt);
    const char *dt = dtype_name(vc->dt);
    ox_bind(x, out[0],
            arena_printf(x->a,
                         "where(%s == reshape(arange(0, %lld, 1), %s), full(%s, %s, dtype=%s), "
                         "full(%s, %s, dtype=%s))",
                         i, (long long)depth, ox_dims_text(x, ad, r), ox_dims_text(x, d, r),
                         ox_num(x, ox_const_get(x, vc, 1), fl), dt, ox_dims_text(x, d, r),
                         ox_num(x, ox_const_get(x, vc, 0), fl), dt));
    ox_set_shape(out[0], vc->dt, r, d);
    return true;
}

/* Hardmax: 1 where argmax along the axis is (the first of equal maxima),
 * 0 elsewhere; before opset 13 over the input flattened to 2-d at axis. */
static bool hardmax(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "Hardmax")) return false;
    ox_need_inputs(x, in, nin, 1);
    int r = in[0]->ndim;
    const char *src = ox_ref(x, in[0], false);
    OxDim two[2], ad[OX_MAX_DIMS];
    int a, rr = r;
    if (x->opset >= 13) {
        a = ox_axis(x, ox_attr_i(x, "axis", -1), r);
    } else {
        int fa = ox_axis(x, ox_attr_i(x, "axis", 1), r + 1);
        two[0] = two[1] = ox_dim_c(1);
        for (int k = 0; k < r; k++)
            two[k >= fa] = ox_dim_op(x, '*', two[k >= fa], in[0]->dim[k]);
        src = arena_printf(x->a, "reshape(%s, %s)", src, ox_dims_text(x, two, 2));
        a = 1, rr = 2;
    }
    OxDim len = x->opset >= 13 ? in[0]->dim[a] : two[1];
    for (int k = 0; k < rr; k++)
        ad[k] = k == a ? len : ox_dim_c(1);
    const char *e = arena_printf(
        x->a, "(argmax(%s, dim=%d, keepdim=true) == reshape(arange(0, %s, 1), %s)).to(%s)", src, a,
        ox_dim_text(x, len), ox_dims_text(x, ad, rr), dtype_name(in[0]->dt));
    if (rr != r) e = arena_printf(x->a, "reshape(%s, %s)", e, ox_dims_text(x, in[0]->dim, r));
    return ox_bind_shaped(x, out[0], e, in[0]->dt, r, in[0]->dim);
}

/* ReverseSequence: a gather along the time axis of the index
 * where(t < len[b], len[b] - 1 - t, t), t and len laid along their axes. */
static bool reverse_sequence(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "ReverseSequence")) return false;
    ox_need_inputs(x, in, nin, 2);
    OxVal *v = in[0], *len = in[1];
    int r = v->ndim;
    if (r < 2) ox_fail(x, "the input must have at least 2 dimensions");
    int ta = ox_axis(x, ox_attr_i(x, "time_axis", 0), r);
    int ba = ox_axis(x, ox_attr_i(x, "batch_axis", 1), r);
    if (ta == ba || ta > 1 || ba > 1) ox_fail(x, "time_axis and batch_axis must be 0 and 1");
    if (len->dt != DT_I64 && len->dt != DT_I32) ox_fail(x, "sequence_lens must be integers");
    if (len->ndim != 1 || (!ox_dim_eq(len->dim[0], v->dim[ba]) && len->dim[0].v != v->dim[ba].v))
        ox_fail(x, "sequence_lens must hold one length per batch entry");
    OxDim td[OX_MAX_DIMS], bd[OX_MAX_DIMS];
    for (int k = 0; k < r; k++) {
        td[k] = k == ta ? v->dim[ta] : ox_dim_c(1);
        bd[k] = k == ba ? v->dim[ba] : ox_dim_c(1);
    }
    const char *t = arena_printf(x->a, "reshape(arange(0, %s, 1), %s)", ox_dim_text(x, v->dim[ta]),
                                 ox_dims_text(x, td, r));
    const char *l = ox_ref(x, len, false);
    if (len->dt != DT_I64) l = arena_printf(x->a, "%s.to(i64)", l);
    l = arena_printf(x->a, "reshape(%s, %s)", l, ox_dims_text(x, bd, r));
    ox_bind(x, out[0],
            arena_printf(x->a, "gather(%s, %d, where(%s < %s, %s - 1 - %s, %s).expand(%s))",
                         ox_ref(x, v, false), ta, t, l, l, t, t, ox_dims_text(x, v->dim, r)));
    ox_set_shape(out[0], v->dt, r, v->dim);
    return true;
}

bool ox_op_index(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    return gather_elements(x, n, in, nin, out) || depth_space(x, n, in, nin, out) ||
           one_hot(x, n, in, nin, out) || hardmax(x, n, in, nin, out) ||
           reverse_sequence(x, n, in, nin, out) || top_k(x, n, in, nin, out);
}

/* TopK with k known at import: each element's rank along the axis (the
 * count of elements ahead of it: greater, or equal at a lower index, for
 * largest; smaller for smallest), then output r is the element of rank
 * r. Two fused masked sums, L * L and k * L terms per line: no sort, so
 * refused past 2^26 comparisons. ONNX's order: sorted, the lower index
 * first among equal values. */
static bool top_k(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "TopK")) return false;
    ox_need_inputs(x, in, nin, 2);
    OxVal *v = in[0];
    int r = v->ndim;
    if (r < 1 || r + 1 > OX_MAX_DIMS) ox_fail(x, "the input has rank %d", r);
    if (v->dt == DT_BOOL) ox_fail(x, "TopK takes numbers, not bool");
    int a = ox_axis(x, ox_attr_i(x, "axis", -1), r);
    OxConst *kc = ox_need_const(x, in[1], "K");
    if (kc->n != 1) ox_fail(x, "K must be one value");
    int64_t k = ox_const_int(x, kc, 0), L = v->dim[a].v;
    if (v->dim[a].sym) ox_fail(x, "the axis's length must be known");
    if (k < 0 || k > L) ox_fail(x, "K %lld for an axis of %lld", (long long)k, (long long)L);
    /* sorted=0 lets any order be ONNX's: the sorted one is */
    int64_t rows = 1;
    for (int i = 0; i < r; i++)
        rows *= i == a ? 1 : v->dim[i].v;
    if (rows * L * L > ((int64_t)1 << 26))
        ox_fail(x, "%lld lines of %lld: more than 2^26 comparisons, not supported", (long long)rows,
                (long long)L);
    bool largest = ox_attr_i(x, "largest", 1);
    const char *src = ox_ref(x, v, false);
    OxDim ad[OX_MAX_DIMS + 1];
    for (int i = 0; i <= r; i++)
        ad[i] = ox_dim_c(1);
    /* j (the other element) at dim a + 1, i at dim a */
    ad[a + 1] = ox_dim_c(L);
    const char *jr = arena_printf(x->a, "reshape(arange(0, %lld, 1), %s)", (long long)L,
                                  ox_dims_text(x, ad, r + 1));
    ad[a + 1] = ox_dim_c(1), ad[a] = ox_dim_c(L);
    const char *ir = arena_printf(x->a, "reshape(arange(0, %lld, 1), %s)", (long long)L,
                                  ox_dims_text(x, ad, r + 1));
    const char *xi = arena_printf(x->a, "%s.unsqueeze(%d)", src, a + 1);
    const char *xj = arena_printf(x->a, "%s.unsqueeze(%d)", src, a);
    const char *rank = ox_ident(x, out[0]->name, "_rank");
    ox_emit(x, OX_BODY, "%s = sum(((%s %s %s) | ((%s == %s) & (%s < %s))).to(i64), dim=%d)\n", rank,
            xj, largest ? ">" : "<", xi, xj, xi, jr, ir, a + 1);
    /* output position p at dim a, element i at dim a + 1 */
    ad[a] = ox_dim_c(k);
    const char *sel = ox_ident(x, out[0]->name, "_sel");
    ox_emit(x, OX_BODY, "%s = %s.unsqueeze(%d) == reshape(arange(0, %lld, 1), %s)\n", sel, rank, a,
            (long long)k, ox_dims_text(x, ad, r + 1));
    OxDim d[OX_MAX_DIMS];
    memcpy(d, v->dim, sizeof d);
    d[a] = ox_dim_c(k);
    const char *zero = dtype_is_float(v->dt) ? "0.0" : "0";
    const char *val = arena_printf(x->a, "sum(where(%s, %s.unsqueeze(%d), %s), dim=%d)", sel, src,
                                   a, zero, a + 1);
    if (!dtype_is_float(v->dt)) val = arena_printf(x->a, "%s.to(%s)", val, dtype_name(v->dt));
    ox_bind(x, out[0], val);
    ox_set_shape(out[0], v->dt, r, d);
    if (n->n_output > 1 && out[1]) {
        ox_bind(x, out[1], arena_printf(x->a, "sum(where(%s, %s, 0), dim=%d)", sel, jr, a + 1));
        ox_set_shape(out[1], DT_I64, r, d);
    }
    return true;
}
