/* RoiAlign (opsets 10 and 16): X [N, C, H, W], rois [R, 4] (x1, y1, x2,
 * y2), batch_indices [R] -> Y [R, C, output_height, output_width], the
 * rois and indices read at run time, as gathers. Each output bin averages
 * (mode avg) or takes the maximum (mode max) of a grid of G_h x G_w
 * samples, each sample bilinear in the 4 pixels around it; the sample
 * coordinates, their clamping and the weights follow ONNX's operator
 * (onnx/reference/ops/op_roi_align.py, ONNX Runtime's roi_align.cc):
 *   start = roi * spatial_scale - offset  (offset 0.5 for half_pixel)
 *   size  = end - start (output_half_pixel: at least 1), bin = size / out
 *   y = start_h + ph * bin_h + (iy + 0.5) * bin_h / G_h
 *   a sample with y < -1 or y > H (likewise x) has weight 0; otherwise
 *   y is clamped into [0, H - 1], low = floor(y), high = min(low + 1, H-1)
 *   avg: sum of w * v over samples and taps / (G_h * G_w)
 *   max: max over samples of max over the 4 taps of w * v.
 * Both separable factors (rows [R, oh, G], columns [R, ow, G]) are
 * computed once; each tap is one index_select of X's pixels, laid out
 * [N * H * W, C], at [R, oh, G, ow, G] run-time indices.
 * sampling_ratio 0 makes G = ceil(bin) per roi, known only at run time:
 * the grid is then the largest a roi inside the image can need
 * (ceil(H / oh) by ceil(W / ow)), the samples past a roi's own G masked,
 * and a roi needing more exits the program with a message naming the
 * check. */
#include <math.h>
#include <string.h>

#include "frontend/onnx/ox.h"

typedef struct Ra {
    Ox *x;
    const char *base;
    const char *r_txt; /* the number of rois */
    int64_t H, W, oh, ow;
    bool adaptive;
    int64_t gh, gw; /* the grid (adaptive: its bound) */
    const char *dt; /* X's dtype, which the coordinates are computed in */
} Ra;

static const char *tmp(Ra *r, const char *suffix, const char *expr) {
    return ox_tmp(r->x, r->base, suffix, expr);
}

static const char *num(Ra *r, double v) {
    const char *s = ox_num(r->x, v, true);
    return s[0] == '-' ? arena_printf(r->x->a, "(%s)", s) : s;
}

/* One axis's factors, [R, out, G] each: the low and high pixel indices
 * (i64) and their weights (0 for a sample outside [-1, size], or past the
 * roi's grid). start, bin: [R, 1]; grid: the roi's G as [R, 1, 1] or a
 * number. */
static void axis(Ra *r, const char *sfx, const char *start, const char *bin, const char *grid,
                 int64_t out, int64_t g, int64_t size, const char **lo, const char **hi,
                 const char **wlo, const char **whi) {
    Arena *a = r->x->a;
    const char *p = arena_printf(a, "arange(0, %lld, 1).to(%s).reshape([1, %lld, 1])",
                                 (long long)out, r->dt, (long long)out);
    const char *i = arena_printf(a, "arange(0, %lld, 1).to(%s).reshape([1, 1, %lld])", (long long)g,
                                 r->dt, (long long)g);
    /* an adaptive grid of 0 samples divides by 1: its samples are masked */
    const char *div = r->adaptive ? arena_printf(a, "clamp(%s, 1.0, 1e9)", grid) : grid;
    const char *s3 = arena_printf(a, "unsqueeze(%s, 2)", start);
    const char *b3 = arena_printf(a, "unsqueeze(%s, 2)", bin);
    const char *c =
        tmp(r, arena_printf(a, "_%s", sfx),
            arena_printf(a, "%s + %s * %s + (%s + 0.5) * %s / %s", s3, p, b3, i, b3, div));
    const char *valid =
        arena_printf(a, "logical_and(%s >= -1.0, %s <= %s)", c, c, num(r, (double)size));
    if (r->adaptive) valid = arena_printf(a, "logical_and(%s, %s < %s)", valid, i, grid);
    valid = tmp(r, arena_printf(a, "_%s_valid", sfx), valid);
    const char *cl = tmp(r, arena_printf(a, "_%s_clamped", sfx),
                         arena_printf(a, "clamp(%s, 0.0, %s)", c, num(r, (double)(size - 1))));
    const char *l = tmp(r, arena_printf(a, "_%s_low", sfx), arena_printf(a, "floor(%s)", cl));
    const char *frac = tmp(r, arena_printf(a, "_%s_frac", sfx), arena_printf(a, "%s - %s", cl, l));
    *lo = tmp(r, arena_printf(a, "_%s_lo", sfx), arena_printf(a, "%s.to(i64)", l));
    *hi = tmp(r, arena_printf(a, "_%s_hi", sfx),
              arena_printf(a, "clamp(%s + 1.0, 0.0, %s).to(i64)", l, num(r, (double)(size - 1))));
    *wlo = tmp(r, arena_printf(a, "_%s_wlo", sfx),
               arena_printf(a, "where(%s, 1.0 - %s, 0.0)", valid, frac));
    *whi =
        tmp(r, arena_printf(a, "_%s_whi", sfx), arena_printf(a, "where(%s, %s, 0.0)", valid, frac));
}

bool ox_op_roialign(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "RoiAlign")) return false;
    ox_need_inputs(x, in, nin, 3);
    OxVal *X = in[0], *R = in[1], *B = in[2];
    if (X->ndim != 4)
        ox_fail(x, "X has shape %s; expected [N, C, H, W]", ox_dims_text(x, X->dim, X->ndim));
    if (!dtype_is_float(X->dt) || !dtype_is_float(R->dt))
        ox_fail(x, "X and rois must be floating tensors (found %s and %s)", dtype_name(X->dt),
                dtype_name(R->dt));
    if (R->ndim != 2 || R->dim[1].sym || R->dim[1].v != 4)
        ox_fail(x, "rois has shape %s; expected [num_rois, 4]", ox_dims_text(x, R->dim, R->ndim));
    if (B->ndim != 1 || !ox_dim_eq(B->dim[0], R->dim[0]))
        ox_fail(x, "batch_indices has shape %s; expected [%s] (one per roi)",
                ox_dims_text(x, B->dim, B->ndim), ox_dim_text(x, R->dim[0]));
    if (dtype_is_float(B->dt) || B->dt == DT_BOOL)
        ox_fail(x, "batch_indices is %s; expected an integer tensor", dtype_name(B->dt));
    if (X->dim[2].sym || X->dim[3].sym)
        ox_fail(x, "X's height and width must be known when the graph is built");
    Ra r = {.x = x, .base = out[0]->name, .H = X->dim[2].v, .W = X->dim[3].v};
    if (r.H < 1 || r.W < 1)
        ox_fail(x, "X is an empty image (%lldx%lld)", (long long)r.H, (long long)r.W);
    r.oh = ox_attr_i(x, "output_height", 1);
    r.ow = ox_attr_i(x, "output_width", 1);
    if (r.oh < 1 || r.ow < 1 || r.oh > 4096 || r.ow > 4096)
        ox_fail(x, "output_height %lld and output_width %lld must be in 1..4096", (long long)r.oh,
                (long long)r.ow);
    int64_t sr = ox_attr_i(x, "sampling_ratio", 0);
    if (sr < 0 || sr > 64) ox_fail(x, "sampling_ratio %lld must be in 0..64", (long long)sr);
    double ss = ox_attr_f(x, "spatial_scale", 1.0f);
    if (!isfinite(ss)) ox_fail(x, "spatial_scale %g is not finite", ss);
    const char *mode = ox_attr_s(x, "mode", "avg");
    bool mx = !strcmp(mode, "max");
    if (!mx && strcmp(mode, "avg")) ox_fail(x, "mode '%s' (avg or max)", mode);
    /* opset 10 has no coordinate_transformation_mode: its rois are what
     * opset 16 calls output_half_pixel */
    const char *ct = ox_attr_s(x, "coordinate_transformation_mode",
                               x->opset >= 16 ? "half_pixel" : "output_half_pixel");
    bool half = !strcmp(ct, "half_pixel");
    if (!half && strcmp(ct, "output_half_pixel"))
        ox_fail(x, "coordinate_transformation_mode '%s' (half_pixel or output_half_pixel)", ct);
    r.adaptive = sr == 0;
    r.gh = r.adaptive ? (r.H + r.oh - 1) / r.oh : sr;
    r.gw = r.adaptive ? (r.W + r.ow - 1) / r.ow : sr;
    Arena *a = x->a;
    r.r_txt = ox_dim_text(x, R->dim[0]);
    const char *n_txt = ox_dim_text(x, X->dim[0]), *c_txt = ox_dim_text(x, X->dim[1]);
    const char *dt = dtype_name(X->dt);
    r.dt = dt;
    const char *rois = ox_ref(x, R, false);
    if (R->dt != X->dt) rois = arena_printf(a, "to(%s, %s)", rois, dt);
    const char *off = half ? " - 0.5" : "";
    const char *c4[4];
    static const char *const cn[4] = {"_x1", "_y1", "_x2", "_y2"};
    for (int k = 0; k < 4; k++)
        c4[k] = tmp(&r, cn[k],
                    arena_printf(a, "%s[:, %d:%d] * %s%s", rois, k, k + 1, num(&r, ss), off));
    const char *rw = arena_printf(a, "%s - %s", c4[2], c4[0]);
    const char *rh = arena_printf(a, "%s - %s", c4[3], c4[1]);
    if (!half) {
        rw = arena_printf(a, "where(%s > 1.0, %s, 1.0)", rw, rw);
        rh = arena_printf(a, "where(%s > 1.0, %s, 1.0)", rh, rh);
    }
    const char *bw = tmp(&r, "_bin_w", arena_printf(a, "(%s) / %s", rw, num(&r, (double)r.ow)));
    const char *bh = tmp(&r, "_bin_h", arena_printf(a, "(%s) / %s", rh, num(&r, (double)r.oh)));
    const char *gy, *gx, *count, *check = NULL;
    if (r.adaptive) {
        /* ceil(bin), at least 0, as [R, 1, 1] of X's dtype */
        gy = tmp(&r, "_grid_h", arena_printf(a, "unsqueeze(clamp(ceil(%s), 0.0, 1e9), 2)", bh));
        gx = tmp(&r, "_grid_w", arena_printf(a, "unsqueeze(clamp(ceil(%s), 0.0, 1e9), 2)", bw));
        count =
            tmp(&r, "_count",
                arena_printf(a, "clamp(%s * %s, 1.0, 1e18).reshape([%s, 1, 1])", gy, gx, r.r_txt));
        /* a roi larger than the image needs more samples than the grid
         * holds: index 1 of a 1-element tensor makes the program exit 1
         * naming this value */
        const char *over =
            arena_printf(a, "reshape(logical_or(any(%s > %s), any(%s > %s)).to(i64), [1])", gy,
                         num(&r, (double)r.gh), gx, num(&r, (double)r.gw));
        const char *idx = tmp(&r, "_roi_larger_than_the_image_with_sampling_ratio_0", over);
        check = tmp(&r, "_check",
                    arena_printf(a, "index_select(ones([1], dtype=%s), 0, %s)[0]", dt, idx));
    } else {
        gy = num(&r, (double)sr);
        gx = gy;
        count = num(&r, (double)(sr * sr));
    }
    const char *ylo, *yhi, *wylo, *wyhi, *xlo, *xhi, *wxlo, *wxhi;
    axis(&r, "y", c4[1], bh, gy, r.oh, r.gh, r.H, &ylo, &yhi, &wylo, &wyhi);
    axis(&r, "x", c4[0], bw, gx, r.ow, r.gw, r.W, &xlo, &xhi, &wxlo, &wxhi);
    /* X's pixels as rows: [N * H * W, C] */
    const char *pix = tmp(&r, "_pixels",
                          arena_printf(a, "reshape(permute(%s, [0, 2, 3, 1]), [%s * %lld, %s])",
                                       ox_ref(x, X, false), n_txt, (long long)(r.H * r.W), c_txt));
    const char *boff = tmp(&r, "_batch_offset",
                           arena_printf(a, "(%s.to(i64) * %lld).reshape([%s, 1, 1, 1, 1])",
                                        ox_ref(x, B, false), (long long)(r.H * r.W), r.r_txt));
    const char *s5y =
        arena_printf(a, "[%s, %lld, %lld, 1, 1]", r.r_txt, (long long)r.oh, (long long)r.gh);
    const char *s5x =
        arena_printf(a, "[%s, 1, 1, %lld, %lld]", r.r_txt, (long long)r.ow, (long long)r.gw);
    const char *flat =
        arena_printf(a, "[%s * %lld]", r.r_txt, (long long)(r.oh * r.gh * r.ow * r.gw));
    const char *s6 = arena_printf(a, "[%s, %lld, %lld, %lld, %lld, %s]", r.r_txt, (long long)r.oh,
                                  (long long)r.gh, (long long)r.ow, (long long)r.gw, c_txt);
    const char *ys[2] = {ylo, yhi}, *wys[2] = {wylo, wyhi}, *xs[2] = {xlo, xhi},
               *wxs[2] = {wxlo, wxhi};
    const char *acc = NULL;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            const char *idx =
                tmp(&r, "_idx",
                    arena_printf(a, "reshape(%s + (%s * %lld).reshape(%s) + %s.reshape(%s), %s)",
                                 boff, ys[i], (long long)r.W, s5y, xs[j], s5x, flat));
            const char *w = arena_printf(a, "unsqueeze(%s.reshape(%s) * %s.reshape(%s), 5)", wys[i],
                                         s5y, wxs[j], s5x);
            const char *t =
                tmp(&r, "_tap",
                    arena_printf(a, "index_select(%s, 0, %s).reshape(%s) * %s", pix, idx, s6, w));
            acc = !acc ? t
                  : mx ? tmp(&r, "_max", arena_printf(a, "maximum(%s, %s)", acc, t))
                       : tmp(&r, "_sum", arena_printf(a, "%s + %s", acc, t));
        }
    const char *y;
    if (mx) {
        if (r.adaptive) {
            /* the samples past a roi's grid take no part in its maximum */
            const char *in_grid = arena_printf(
                a,
                "logical_and(arange(0, %lld, 1).to(%s).reshape([1, 1, %lld, 1, 1, 1]) < "
                "%s.reshape([%s, 1, 1, 1, 1, 1]), arange(0, %lld, 1).to(%s).reshape([1, 1, 1, 1, "
                "%lld, 1]) < %s.reshape([%s, 1, 1, 1, 1, 1]))",
                (long long)r.gh, dt, (long long)r.gh, gy, r.r_txt, (long long)r.gw, dt,
                (long long)r.gw, gx, r.r_txt);
            acc = tmp(&r, "_masked", arena_printf(a, "where(%s, %s, -inf)", in_grid, acc));
            y = tmp(&r, "_pooled", arena_printf(a, "amax(%s, [2, 4])", acc));
            /* a roi without samples is 0, as ONNX Runtime's */
            y = arena_printf(a, "where(%s == -inf, 0.0, %s)", y, y);
        } else {
            y = arena_printf(a, "amax(%s, [2, 4])", acc);
        }
    } else {
        /* count: a number, or [R, 1, 1] over [R, oh, ow, C] */
        y = arena_printf(a, "sum(%s, [2, 4]) / %s", acc,
                         r.adaptive ? arena_printf(a, "unsqueeze(%s, 3)", count) : count);
    }
    y = tmp(&r, "_pooled_rc", y);
    y = arena_printf(a, "permute(%s, [0, 3, 1, 2])", y);
    if (check) y = arena_printf(a, "%s * %s", y, check); /* exact: times 1 */
    OxDim d[4] = {R->dim[0], X->dim[1], ox_dim_c(r.oh), ox_dim_c(r.ow)};
    return ox_bind_shaped(x, out[0], y, X->dt, 4, d);
}
