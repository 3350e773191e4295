/* ONNX's linear quantization as float arithmetic and a saturating cast:
 *   QuantizeLinear      y = clamp(round(x / scale) + zero_point) to int8/uint8
 *   DequantizeLinear    y = (x - zero_point) * scale
 *   DynamicQuantizeLinear  uint8 with scale and zero point from x's range
 * round() is half to even, as ONNX's. Per-axis scales (1-d, along axis)
 * broadcast by a reshape. */
#include <string.h>

#include "frontend/onnx/ox.h"

/* A scale or zero point: a scalar, or 1-d along axis a of a rank-r input. */
static const char *per_axis(Ox *x, OxVal *v, OxVal *data, int a, const char *what) {
    const char *ref = ox_ref(x, v, false);
    if (v->ndim == 0 || (v->ndim == 1 && !v->dim[0].sym && v->dim[0].v == 1)) return ref;
    if (v->ndim != 1) ox_fail(x, "%s has rank %d, expected a scalar or 1-d", what, v->ndim);
    if (!ox_dim_eq(v->dim[0], data->dim[a]) && v->dim[0].v != data->dim[a].v)
        ox_fail(x, "%s has %lld values for an axis of %lld", what, (long long)v->dim[0].v,
                (long long)data->dim[a].v);
    OxDim d[OX_MAX_DIMS];
    for (int k = 0; k < data->ndim; k++)
        d[k] = k == a ? data->dim[a] : ox_dim_c(1);
    return arena_printf(x->a, "reshape(%s, %s)", ref, ox_dims_text(x, d, data->ndim));
}

static void need_quant_type(Ox *x, DType dt, const char *what) {
    if (dt != DT_U8 && dt != DT_I8)
        ox_fail(x, "%s is %s; int8 and uint8 are supported", what, dtype_name(dt));
}

bool ox_op_quant(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    bool q = ox_op_is(n, "QuantizeLinear"), dq = ox_op_is(n, "DequantizeLinear");
    bool dyn = ox_op_is(n, "DynamicQuantizeLinear");
    if (!q && !dq && !dyn) return false;
    if (nin < 1 || !in[0] || ((q || dq) && (nin < 2 || !in[1])))
        ox_fail(x, "the input and the scale are required");
    OxVal *v = in[0], *zp = nin > 2 ? in[2] : NULL;
    int r = v->ndim;
    if (ox_attr(x, "block_size") && ox_attr_i(x, "block_size", 0))
        ox_fail(x, "blocked quantization (block_size) is not supported");
    const char *src = ox_ref(x, v, false);
    if (dyn) {
        if (v->dt != DT_F32) ox_fail(x, "the input is %s, expected float", dtype_name(v->dt));
        const char *lo = ox_ident(x, out[0]->name, "_lo");
        const char *sc = ox_ident(x, out[0]->name, "_scale");
        const char *zp0 = ox_ident(x, out[0]->name, "_zp");
        /* the range always holds 0: scale = (max - min) / 255 */
        ox_emit(x, OX_BODY, "%s = minimum(amin(%s), 0.0)\n", lo, src);
        ox_emit(x, OX_BODY, "%s = (maximum(amax(%s), 0.0) - %s) / 255.0\n", sc, src, lo);
        ox_emit(x, OX_BODY, "%s = clamp(round(0.0 - %s / %s), 0.0, 255.0)\n", zp0, lo, sc);
        ox_bind(x, out[0],
                arena_printf(x->a, "clamp(round(%s / %s) + %s, 0.0, 255.0).to(u8)", src, sc, zp0));
        ox_set_shape(out[0], DT_U8, r, v->dim);
        if (n->n_output > 1 && out[1]) {
            ox_bind(x, out[1], arena_printf(x->a, "%s.clone()", sc));
            ox_set_shape(out[1], DT_F32, 0, NULL);
        }
        if (n->n_output > 2 && out[2]) {
            ox_bind(x, out[2], arena_printf(x->a, "%s.to(u8)", zp0));
            ox_set_shape(out[2], DT_U8, 0, NULL);
        }
        return true;
    }
    OxVal *sc = in[1];
    if (!dtype_is_float(sc->dt))
        ox_fail(x, "the scale is %s, expected a float", dtype_name(sc->dt));
    /* the axis matters only to 1-d scales of more than one value */
    bool per = sc->ndim == 1 && (sc->dim[0].sym || sc->dim[0].v != 1);
    int a = per ? ox_axis(x, ox_attr_i(x, "axis", 1), r) : 0;
    const char *s = per_axis(x, sc, v, a, "the scale");
    const char *z = zp ? per_axis(x, zp, v, a, "the zero point") : NULL;
    if (q) {
        if (!dtype_is_float(v->dt))
            ox_fail(x, "the input is %s, expected a float", dtype_name(v->dt));
        if (ox_attr(x, "saturate") && !ox_attr_i(x, "saturate", 1))
            ox_fail(x, "saturate=0 only concerns float8, not supported");
        DType dt = zp ? zp->dt : DT_U8;
        need_quant_type(x, dt, "the zero point");
        const char *e = arena_printf(x->a, "round(%s / %s)", src, s);
        if (z) e = arena_printf(x->a, "%s + %s.to(%s)", e, z, dtype_name(v->dt));
        ox_bind(x, out[0],
                arena_printf(x->a, "clamp(%s, %s, %s).to(%s)", e, dt == DT_U8 ? "0.0" : "-128.0",
                             dt == DT_U8 ? "255.0" : "127.0", dtype_name(dt)));
        ox_set_shape(out[0], dt, r, v->dim);
        return true;
    }
    if (v->dt != DT_U8 && v->dt != DT_I8 && v->dt != DT_I32)
        ox_fail(x, "the input is %s; int8, uint8 and int32 are supported", dtype_name(v->dt));
    if (zp && zp->dt != v->dt)
        ox_fail(x, "the zero point is %s, the input %s", dtype_name(zp->dt), dtype_name(v->dt));
    const char *fx = arena_printf(x->a, "%s.to(%s)", src, dtype_name(sc->dt));
    if (z) fx = arena_printf(x->a, "(%s - %s.to(%s))", fx, z, dtype_name(sc->dt));
    return ox_bind_shaped(x, out[0], arena_printf(x->a, "%s * %s", fx, s), sc->dt, r, v->dim);
}
