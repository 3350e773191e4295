/* Resize as ONNX's reference computes it, for what torch's interpolate
 * does not do (nearest other than asymmetric + floor, cubic, linear with
 * other coordinate transformations, exclude_outside, resized batch or
 * channel axes): separable along each resized axis, every output index o
 * reads n taps (nearest 1, linear 2, cubic 4) of the input at indices
 * idx[t][o] with weights w[t][o], both known at import since the sizes
 * are:
 *   y = sum_t index_select(y, axis, idx[t]) * w[t]   (one axis at a time)
 * The coordinate transformations, the taps (the n nearest to the mapped
 * coordinate, the lower preferred, read with edge padding), the cubic
 * coefficients and exclude_outside's renormalisation follow
 * onnx/reference/ops/op_resize.py. tf_crop_and_resize maps the output
 * onto the roi's [start, end] of each axis (the roi known at import); an
 * output whose coordinate falls outside the input along any axis is
 * extrapolation_value, as the reference's per-axis interpolation gives
 * (an interpolation of extrapolated values is that value): one mask per
 * such axis, applied once at the end. */
#include <math.h>
#include <string.h>

#include "frontend/onnx/ox.h"

/* The input coordinate of output index o (ONNX's Resize formulas). */
static double source_coord(Ox *x, const char *ct, double o, double scale, int64_t in_len,
                           int64_t out_len, const double *roi) {
    double out_w = scale * (double)in_len; /* the reference's (float) output width */
    if (!strcmp(ct, "tf_crop_and_resize")) {
        double span = (roi[1] - roi[0]) * (double)(in_len - 1);
        if (out_len == 1) return 0.5 * (roi[0] + roi[1]) * (double)(in_len - 1);
        return roi[0] * (double)(in_len - 1) + o * span / (double)(out_len - 1);
    }
    if (!strcmp(ct, "half_pixel")) return (o + 0.5) / scale - 0.5;
    if (!strcmp(ct, "pytorch_half_pixel")) return out_w == 1 ? -0.5 : (o + 0.5) / scale - 0.5;
    if (!strcmp(ct, "align_corners"))
        return out_w == 1 ? 0 : o * (double)(in_len - 1) / (out_w - 1);
    if (!strcmp(ct, "asymmetric")) return o / scale;
    if (!strcmp(ct, "tf_half_pixel_for_nn")) return (o + 0.5) / scale;
    if (!strcmp(ct, "half_pixel_symmetric")) {
        double adj = (double)out_len / out_w, center = (double)in_len / 2;
        return center * (1 - adj) + (o + 0.5) / scale - 0.5;
    }
    ox_fail(x, "coordinate_transformation_mode '%s' is not supported", ct);
}

static void cubic_coeffs(double r, double A, double *c) {
    double s = 1 - r;
    c[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
    c[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
    c[2] = ((A + 2) * s - (A + 3)) * s * s + 1;
    c[3] = ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A;
}

void ox_resize_taps(Ox *x, OxVal *in, OxVal *out, const OxDim *d, const double *scale,
                    const char *mode, const char *ct, const char *nm, double cubic_a,
                    bool exclude_outside, const double *roi, double extrap) {
    bool nearest = !strcmp(mode, "nearest"), cubic = !strcmp(mode, "cubic");
    if (!nearest && !cubic && strcmp(mode, "linear"))
        ox_fail(x, "Resize mode '%s' (nearest, linear and cubic are ONNX's)", mode);
    if (!nearest && !dtype_is_float(in->dt))
        ox_fail(x, "%s resizing of %s is not supported (floating-point is)", mode,
                dtype_name(in->dt));
    if (nearest && strcmp(nm, "round_prefer_floor") && strcmp(nm, "round_prefer_ceil") &&
        strcmp(nm, "floor") && strcmp(nm, "ceil"))
        ox_fail(x, "nearest_mode '%s' is not one of ONNX's", nm);
    int n = nearest ? 1 : cubic ? 4 : 2, r = in->ndim;
    const char *e = ox_ref(x, in, false);
    const char *base = out->name; /* the params' names: made unique by ox_param */
    const char *inside = NULL;    /* tf_crop_and_resize: where no axis extrapolates */
    bool crop = !strcmp(ct, "tf_crop_and_resize");
    if (crop && !roi) ox_fail(x, "tf_crop_and_resize needs the roi input");
    for (int a = 0; a < r; a++) {
        double ra[2] = {crop ? roi[a] : 0, crop ? roi[r + a] : 1};
        int64_t L = in->dim[a].v, O = d[a].v;
        if (in->dim[a].sym || d[a].sym) {
            if (ox_dim_eq(in->dim[a], d[a]) && scale[a] == 1 && ra[0] == 0 && ra[1] == 1) continue;
            ox_fail(x, "a resized axis must have a known size (axis %d)", a);
        }
        if (O < 1 || O > ((int64_t)1 << 31)) ox_fail(x, "axis %d resized to %lld", a, (long long)O);
        int64_t *idx = arena_alloc(x->a, sizeof *idx * (size_t)(n * O));
        double *w = arena_alloc(x->a, sizeof *w * (size_t)(n * O));
        bool identity = O == L;
        int64_t *in_range = crop ? arena_alloc(x->a, sizeof *in_range * (size_t)O) : NULL;
        bool all_in = true;
        for (int64_t o = 0; o < O; o++) {
            double xo = source_coord(x, ct, (double)o, scale[a], L, O, ra);
            if (!isfinite(xo))
                ox_fail(x, "axis %d: the scale %g maps outside the input", a, scale[a]);
            if (crop) {
                in_range[o] = xo >= 0 && xo <= (double)(L - 1);
                all_in &= in_range[o] != 0;
            }
            double fl = floor(xo);
            bool integral = xo == fl;
            double ratio = integral ? 1 : xo - fl;
            int64_t i0 = (int64_t)fl - (integral ? 1 : 0); /* the lower neighbour */
            double c[4];
            if (nearest) {
                bool up = integral || !strcmp(nm, "ceil") ||
                          (!strcmp(nm, "round_prefer_floor") && ratio > 0.5) ||
                          (!strcmp(nm, "round_prefer_ceil") && ratio >= 0.5);
                if (!strcmp(nm, "floor") && !integral) up = false;
                c[0] = 1;
                i0 += up;
            } else if (cubic) {
                cubic_coeffs(ratio, cubic_a, c);
                i0 -= 1;
            } else {
                c[0] = 1 - ratio, c[1] = ratio;
            }
            double sum = 0;
            for (int t = 0; t < n; t++) {
                int64_t i = i0 + t;
                if (exclude_outside && (i < 0 || i >= L)) c[t] = 0;
                sum += c[t];
                idx[t * O + o] = i < 0 ? 0 : i >= L ? L - 1 : i; /* edge padding */
            }
            for (int t = 0; t < n; t++) {
                w[t * O + o] = exclude_outside && sum != 0 ? c[t] / sum : c[t];
                identity &= w[t * O + o] == 0 || (idx[t * O + o] == o && w[t * O + o] == 1);
            }
        }
        OxDim wshape[OX_MAX_DIMS];
        for (int k = 0; k < r; k++)
            wshape[k] = k == a ? ox_dim_c(O) : ox_dim_c(1);
        if (!all_in) {
            const char *mp = ox_param_of(x, DT_I64, 1, &O, in_range, NULL,
                                         arena_printf(x->a, "%s_inside%d", base, a));
            const char *m =
                arena_printf(x->a, "reshape(%s, %s) != 0", mp, ox_dims_text(x, wshape, r));
            inside = inside ? arena_printf(x->a, "logical_and(%s, %s)", inside, m) : m;
        }
        if (identity) continue; /* this axis is not resized */
        const char *sum = NULL;
        for (int t = 0; t < n; t++) {
            const char *ip = ox_param_of(x, DT_I64, 1, &O, idx + t * O, NULL,
                                         arena_printf(x->a, "%s_idx%d_%d", base, a, t));
            const char *g = arena_printf(x->a, "index_select(%s, %d, %s)", e, a, ip);
            if (!nearest) {
                const char *wp = ox_param_of(x, in->dt, 1, &O, NULL, w + t * O,
                                             arena_printf(x->a, "%s_w%d_%d", base, a, t));
                g = arena_printf(x->a, "%s * reshape(%s, %s)", g, wp, ox_dims_text(x, wshape, r));
            }
            sum = sum ? arena_printf(x->a, "%s + %s", sum, g) : g;
        }
        /* one axis at a time: the next reads this one's result */
        const char *t = ox_ident(x, out->name, arena_printf(x->a, "_axis%d", a));
        ox_emit(x, OX_BODY, "%s = %s\n", t, sum);
        e = t;
    }
    if (inside)
        e = arena_printf(x->a, "where(%s, %s, %s)", inside, e,
                         ox_num(x, extrap, dtype_is_float(in->dt)));
    ox_bind(x, out, e);
    ox_set_shape(out, in->dt, r, d);
}
