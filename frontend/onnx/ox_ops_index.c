/* ONNX operators written as a few of the IR's ops each: GatherElements
 * (torch.gather), DepthToSpace/SpaceToDepth (reshape, permute, reshape),
 * OneHot and Hardmax (a comparison with arange along the axis),
 * ReverseSequence (a gather of computed indices). */
#include <string.h>

#include "frontend/onnx/ox.h"

static bool is(const Onnx__NodeProto *n, const char *op) {
    return !strcmp(n->op_type, op);
}

static void need_inputs(Ox *x, OxVal **in, int nin, int k) {
    if (nin < k) ox_fail(x, "%d inputs, expected at least %d", nin, k);
    for (int i = 0; i < k; i++)
        if (!in[i]) ox_fail(x, "input %d is missing", i);
}

/* GatherElements as torch.gather, ONNX's negative indices counted from
 * the end of the axis. */
static bool gather_elements(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!is(n, "GatherElements")) return false;
    need_inputs(x, in, nin, 2);
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
    bool d2s = is(n, "DepthToSpace");
    if (!d2s && !is(n, "SpaceToDepth")) return false;
    need_inputs(x, in, nin, 1);
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
    if (!is(n, "OneHot")) return false;
    need_inputs(x, in, nin, 3);
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
    if (!is(n, "Hardmax")) return false;
    need_inputs(x, in, nin, 1);
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
    ox_bind(x, out[0], e);
    ox_set_shape(out[0], in[0]->dt, r, in[0]->dim);
    return true;
}

/* ReverseSequence: a gather along the time axis of the index
 * where(t < len[b], len[b] - 1 - t, t), t and len laid along their axes. */
static bool reverse_sequence(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!is(n, "ReverseSequence")) return false;
    need_inputs(x, in, nin, 2);
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
           reverse_sequence(x, n, in, nin, out);
}
