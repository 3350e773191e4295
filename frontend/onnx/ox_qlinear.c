/* The integer products: MatMulInteger, ConvInteger (int32 results) and
 * QLinearMatMul, QLinearConv (requantized to int8/uint8).
 * Each operand has its zero point subtracted and is widened to f64, and
 * the product is f64's matmul or conv: exact, because every term is an
 * integer of at most 255 * 255 and every partial sum, in whatever order
 * the kernel adds them, is an integer below 2^31 (the reduction length is
 * bounded below) that f64 holds exactly; the result is ONNX's int32
 * accumulation. (cuDNN's FFT and Winograd algorithms, which would not be
 * exact, are excluded unless TGC_CUDNN_ALL_ALGOS=1.) Padding a
 * convolution's input after the zero point is subtracted pads with the
 * zero point, as ONNX Runtime does.
 * QLinear*: y = saturate(round(acc * (a_scale * b_scale / y_scale)) + y_zp),
 * the multiplier computed in the scales' f32 as ONNX's reference does, the
 * product in f64, round half to even. */
#include <string.h>

#include "frontend/onnx/ox.h"

/* 255 * 255 * K < 2^31: no int32 accumulation overflows, every sum is exact. */
enum { K_MAX = 33025 };

static void need_int8(Ox *x, OxVal *v, const char *what) {
    if (v->dt != DT_U8 && v->dt != DT_I8)
        ox_fail(x, "%s is %s; int8 and uint8 are supported", what, dtype_name(v->dt));
}

/* A zero point or scale: a scalar (or one value), or per row/channel:
 * a 1-d of the data's dim `axis` reshaped to broadcast along it in a
 * rank-r result (axis -1: used as given, broadcasting on the last dim). */
static const char *per(Ox *x, OxVal *v, OxDim along, int axis, int r, const char *what) {
    const char *ref = ox_ref(x, v, false);
    int64_t n = 1;
    for (int k = 0; k < v->ndim; k++)
        n *= v->dim[k].v;
    if (n == 1 && v->ndim <= 1) return v->ndim ? arena_printf(x->a, "%s[0]", ref) : ref;
    if (axis < 0 || v->ndim >= 2) return ref; /* N-d: ONNX's [..., M, 1] broadcasts as given */
    if (v->ndim != 1 || v->dim[0].sym || v->dim[0].v != along.v)
        ox_fail(x, "%s must be a scalar or have %lld values (one per row or channel)", what,
                (long long)along.v);
    OxDim d[OX_MAX_DIMS];
    for (int k = 0; k < r; k++)
        d[k] = k == axis ? along : ox_dim_c(1);
    return arena_printf(x->a, "reshape(%s, %s)", ref, ox_dims_text(x, d, r));
}

/* v widened to f64 with its zero point (NULL or "" input: none) subtracted. */
static const char *centred(Ox *x, OxVal *v, OxVal *zp, const char *zexpr, const char *suffix) {
    need_int8(x, v, arena_printf(x->a, "input '%s'", v->name));
    const char *e = arena_printf(x->a, "%s.to(f64)", ox_ref(x, v, false));
    if (zp) {
        if (zp->dt != v->dt)
            ox_fail(x, "zero point '%s' is %s, its operand '%s' %s", zp->name, dtype_name(zp->dt),
                    v->name, dtype_name(v->dt));
        e = arena_printf(x->a, "%s - %s.to(f64)", e, zexpr);
    }
    return ox_tmp(x, ox_cur(x)->output[0], suffix, e);
}

static void bound_k(Ox *x, int64_t k) {
    if (k > K_MAX)
        ox_fail(x,
                "a reduction of %lld terms: at most %d are computed exactly (int32 "
                "accumulation of 8-bit products)",
                (long long)k, K_MAX);
}

/* The dims of a @ b (torch.matmul's rule, as ONNX's MatMul). */
static int matmul_dims(Ox *x, OxVal *a, OxVal *b, OxDim *d) {
    if (a->ndim < 1 || b->ndim < 1) ox_fail(x, "MatMul of a 0-d operand");
    OxDim ka = a->dim[a->ndim - 1], kb = b->dim[b->ndim >= 2 ? b->ndim - 2 : 0];
    if (ka.sym || kb.sym || ka.v != kb.v)
        ox_fail(x, "the inner dims differ or are not known (%s and %s)", ox_dim_text(x, ka),
                ox_dim_text(x, kb));
    bound_k(x, ka.v);
    int na = a->ndim >= 2 ? a->ndim - 2 : 0, nb = b->ndim >= 2 ? b->ndim - 2 : 0;
    int n = ox_broadcast(x, a->dim, na, b->dim, nb, d);
    if (a->ndim >= 2) d[n++] = a->dim[a->ndim - 2];
    if (b->ndim >= 2) d[n++] = b->dim[b->ndim - 1];
    return n;
}

/* QLinear's requantization of the exact f64 accumulator acc. */
static const char *requant(Ox *x, const char *acc, const char *sa, const char *sb, const char *sy,
                           OxVal *yzp, const char *zy) {
    DType dt = yzp ? yzp->dt : DT_U8;
    if (dt != DT_U8 && dt != DT_I8)
        ox_fail(x, "y_zero_point is %s; int8 and uint8 are supported", dtype_name(dt));
    const char *m = ox_tmp(x, ox_cur(x)->output[0], "_mult",
                           arena_printf(x->a, "(%s * %s / %s).to(f64)", sa, sb, sy));
    const char *e = arena_printf(x->a, "round(%s * %s)", acc, m);
    if (yzp) e = arena_printf(x->a, "%s + %s.to(f64)", e, zy);
    return arena_printf(x->a, "clamp(%s, %s, %s).to(%s)", e, dt == DT_U8 ? "0.0" : "-128.0",
                        dt == DT_U8 ? "255.0" : "127.0", dtype_name(dt));
}

static void need_f32(Ox *x, OxVal *v, const char *what) {
    if (v->dt != DT_F32) ox_fail(x, "%s is %s, expected float", what, dtype_name(v->dt));
}

static bool matmul(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal *out) {
    bool q = ox_op_is(n, "QLinearMatMul");
    ox_need_inputs(x, in, nin, q ? 8 : 2);
    OxVal *a = in[0], *b = in[q ? 3 : 1];
    OxVal *za = q ? in[2] : nin > 2 ? in[2] : NULL, *zb = q ? in[5] : nin > 3 ? in[3] : NULL;
    OxDim d[OX_MAX_DIMS];
    int r = matmul_dims(x, a, b, d);
    /* a's per-row values broadcast along its rows, b's along its columns */
    OxDim rows = a->ndim >= 2 ? a->dim[a->ndim - 2] : ox_dim_c(1);
    int ra = a->ndim >= 2 ? 2 : 1;
    const char *ca = centred(x, a, za, za ? per(x, za, rows, 0, ra, "a_zero_point") : NULL, "_a");
    const char *cb = centred(x, b, zb, zb ? per(x, zb, rows, -1, 0, "b_zero_point") : NULL, "_b");
    const char *acc = arena_printf(x->a, "%s @ %s", ca, cb);
    if (!q) return ox_bind_shaped(x, out, arena_printf(x->a, "(%s).to(i32)", acc), DT_I32, r, d);
    need_f32(x, in[1], "a_scale"), need_f32(x, in[4], "b_scale"), need_f32(x, in[6], "y_scale");
    acc = ox_tmp(x, n->output[0], "_acc", acc);
    const char *e = requant(
        x, acc, per(x, in[1], rows, 0, ra, "a_scale"), per(x, in[4], rows, -1, 0, "b_scale"),
        per(x, in[6], rows, -1, 0, "y_scale"), in[7], per(x, in[7], rows, -1, 0, "y_zero_point"));
    return ox_bind_shaped(x, out, e, in[7]->dt, r, d);
}

static bool conv(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal *out) {
    bool q = ox_op_is(n, "QLinearConv");
    ox_need_inputs(x, in, nin, q ? 8 : 2);
    OxVal *v = in[0], *w = in[q ? 3 : 1];
    OxVal *zx = q ? in[2] : nin > 2 ? in[2] : NULL, *zw = q ? in[5] : nin > 3 ? in[3] : NULL;
    if (w->ndim < 3 || v->ndim != w->ndim)
        ox_fail(x,
                "the input has rank %d and the weight %d, expected [N, C, ...] and "
                "[M, C/group, ...]",
                v->ndim, w->ndim);
    int r = w->ndim;
    int64_t k = 1;
    for (int i = 1; i < r; i++)
        k *= w->dim[i].v;
    bound_k(x, k);
    OxDim m = w->dim[0];
    const char *cx = centred(x, v, zx, zx ? per(x, zx, m, -1, 0, "x_zero_point") : NULL, "_x");
    if (zx && (zx->ndim > 1 || (zx->ndim == 1 && zx->dim[0].v != 1)))
        ox_fail(x, "x_zero_point must be a scalar (per-tensor)");
    const char *cw = centred(x, w, zw, zw ? per(x, zw, m, 0, r, "w_zero_point") : NULL, "_w");
    /* the f64 operands as values of their own, convolved by Conv's mapping */
    OxVal fx = *v, fw = *w, acc = {0};
    fx.tg = cx, fx.dt = DT_F64, fx.c = NULL;
    fw.tg = cw, fw.dt = DT_F64, fw.c = NULL;
    acc.name = arena_printf(x->a, "%s_acc", out->name);
    OxVal *cin[2] = {&fx, &fw};
    ox_conv(x, cin, 2, &acc, false);
    if (!q)
        return ox_bind_shaped(x, out, arena_printf(x->a, "%s.to(i32)", acc.tg), DT_I32, acc.ndim,
                              acc.dim);
    need_f32(x, in[1], "x_scale"), need_f32(x, in[4], "w_scale"), need_f32(x, in[6], "y_scale");
    const char *sum = acc.tg;
    if (nin > 8 && in[8]) {
        if (in[8]->dt != DT_I32)
            ox_fail(x, "the bias B is %s, expected int32", dtype_name(in[8]->dt));
        sum = ox_tmp(
            x, n->output[0], "_biased",
            arena_printf(x->a, "%s + %s.to(f64)", sum, per(x, in[8], m, 1, r, "the bias B")));
    }
    if (in[1]->ndim > 1 || (in[1]->ndim == 1 && in[1]->dim[0].v != 1))
        ox_fail(x, "x_scale must be a scalar (per-tensor)");
    const char *e =
        requant(x, sum, per(x, in[1], m, -1, 0, "x_scale"), per(x, in[4], m, 1, r, "w_scale"),
                per(x, in[6], m, 1, r, "y_scale"), in[7], per(x, in[7], m, 1, r, "y_zero_point"));
    return ox_bind_shaped(x, out, e, in[7]->dt, acc.ndim, acc.dim);
}

bool ox_op_qlinear(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (ox_op_is(n, "MatMulInteger") || ox_op_is(n, "QLinearMatMul"))
        return matmul(x, n, in, nin, out[0]);
    if (ox_op_is(n, "ConvInteger") || ox_op_is(n, "QLinearConv"))
        return conv(x, n, in, nin, out[0]);
    return false;
}
