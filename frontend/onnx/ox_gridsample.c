/* GridSample (opsets 16 and 20, 2-d: X [N, C, H, W], grid [N, Ho, Wo, 2])
 * as gathers: each tap of the interpolation (1 nearest, 4 bilinear, 16
 * bicubic) is an index into X flattened to [N, C, H * W], computed from the
 * grid, clamped into range and masked where the tap falls outside (zeros
 * padding). The coordinates follow PyTorch's grid_sampler, which ONNX's
 * operator reproduces: unnormalize by align_corners, then for bilinear and
 * nearest clamp (border) or reflect and clamp (reflection) the coordinate
 * itself, and for bicubic each tap's coordinate; nearest rounds half to
 * even; bicubic uses A = -0.75. */
#include <string.h>

#include "frontend/onnx/ox.h"

typedef struct Gs {
    Ox *x;
    const char *base; /* for temporaries' names */
    const char *flat; /* X as [N, C, H * W] */
    const char *n_txt, *c_txt, *ho_txt, *wo_txt;
    int64_t H, W;
    int pad; /* 0 zeros, 1 border, 2 reflection */
    bool align;
    const char *dt;
} Gs;

static const char *tmp(Gs *g, const char *suffix, const char *expr) {
    return ox_tmp(g->x, g->base, suffix, expr);
}

static const char *num(Gs *g, double v) {
    return ox_num(g->x, v, true);
}

/* grid_sampler_unnormalize: [-1, 1] to pixel coordinates over size. */
static const char *unnormalize(Gs *g, const char *c, int64_t size) {
    if (g->align)
        return arena_printf(g->x->a, "(%s + 1.0) / 2.0 * %s", c, num(g, (double)(size - 1)));
    return arena_printf(g->x->a, "((%s + 1.0) * %s - 1.0) / 2.0", c, num(g, (double)size));
}

/* The padding mode applied to a coordinate (compute_coordinates). */
static const char *pad_coord(Gs *g, const char *c, int64_t size, const char *suffix) {
    Arena *a = g->x->a;
    if (g->pad == 0) return c;
    const char *hi = num(g, (double)(size - 1));
    if (g->pad == 2) {
        /* reflect over [lo, hi] = [0, size-1] (align) or [-0.5, size-0.5] */
        double lo2 = g->align ? 0 : -1,
               hi2 = g->align ? 2.0 * (double)(size - 1) : 2.0 * (double)size - 1;
        if (lo2 == hi2) return "0.0";
        double mn = lo2 / 2, span = (hi2 - lo2) / 2;
        const char *in = tmp(g, suffix, arena_printf(a, "abs(%s - %s)", c, num(g, mn)));
        const char *flips = tmp(g, "_flips", arena_printf(a, "floor(%s / %s)", in, num(g, span)));
        const char *extra = arena_printf(a, "(%s - %s * %s)", in, flips, num(g, span));
        const char *even = arena_printf(a, "(%s - 2.0 * floor(%s / 2.0)) == 0.0", flips, flips);
        c = tmp(g, suffix,
                arena_printf(a, "where(%s, %s + %s, %s - %s + %s)", even, extra, num(g, mn),
                             num(g, span), extra, num(g, mn)));
    }
    return tmp(g, suffix, arena_printf(a, "clamp(%s, 0.0, %s)", c, hi));
}

/* X at integer-valued coordinates (xs, ys), [N, Ho, Wo] each; 0 outside
 * the image (in every padding mode: a bilinear tap one past a clamped
 * coordinate reads 0, with weight 0, as PyTorch's bounds check). */
static const char *tap(Gs *g, const char *xs, const char *ys) {
    Arena *a = g->x->a;
    const char *w1 = num(g, (double)(g->W - 1)), *h1 = num(g, (double)(g->H - 1));
    const char *idx = tmp(
        g, "_idx",
        arena_printf(a,
                     "to(clamp(%s, 0.0, %s) * %s + clamp(%s, 0.0, %s), i64).reshape([%s, 1, %s * "
                     "%s]).expand([%s, %s, %s * %s])",
                     ys, h1, num(g, (double)g->W), xs, w1, g->n_txt, g->ho_txt, g->wo_txt, g->n_txt,
                     g->c_txt, g->ho_txt, g->wo_txt));
    const char *v = arena_printf(a, "gather(%s, 2, %s).reshape([%s, %s, %s, %s])", g->flat, idx,
                                 g->n_txt, g->c_txt, g->ho_txt, g->wo_txt);
    const char *inside = arena_printf(a,
                                      "unsqueeze(logical_and(logical_and(%s >= 0.0, %s <= %s), "
                                      "logical_and(%s >= 0.0, %s <= %s)), 1)",
                                      xs, xs, w1, ys, ys, h1);
    return tmp(g, "_tap", arena_printf(a, "where(%s, %s, 0.0)", inside, v));
}

/* Cubic convolution weights (A = -0.75) of the 4 taps at offset t. */
static void cubic_weights(Gs *g, const char *t, const char **w) {
    Arena *a = g->x->a;
    const double A = -0.75;
    /* cc1(d) = ((A + 2) d - (A + 3)) d^2 + 1 for |d| <= 1;
     * cc2(d) = ((A d - 5A) d + 8A) d - 4A for 1 < |d| < 2 */
    const char *d[4] = {arena_printf(a, "(%s + 1.0)", t), t, arena_printf(a, "(1.0 - %s)", t),
                        arena_printf(a, "(2.0 - %s)", t)};
    for (int k = 0; k < 4; k++) {
        const char *e;
        if (k == 1 || k == 2)
            e = arena_printf(a, "(%s * %s - %s) * %s * %s + 1.0", num(g, A + 2), d[k],
                             num(g, A + 3), d[k], d[k]);
        else
            e = arena_printf(a, "((%s * %s - %s) * %s + %s) * %s - %s", num(g, A), d[k],
                             num(g, 5 * A), d[k], num(g, 8 * A), d[k], num(g, 4 * A));
        w[k] = tmp(g, "_cw", e);
    }
}

bool ox_op_gridsample(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "GridSample")) return false;
    ox_need_inputs(x, in, nin, 2);
    OxVal *X = in[0], *G = in[1];
    if (X->ndim != 4)
        ox_fail(x, "GridSample of a %d-d input: the 2-d form ([N, C, H, W]) is supported", X->ndim);
    if (G->ndim != 4 || G->dim[3].v != 2 || G->dim[3].sym)
        ox_fail(x, "grid has shape %s; expected [N, H_out, W_out, 2]",
                ox_dims_text(x, G->dim, G->ndim));
    if (!dtype_is_float(X->dt) || !dtype_is_float(G->dt))
        ox_fail(x, "X and grid must be floating tensors");
    if (X->dim[2].sym || X->dim[3].sym)
        ox_fail(x, "X's height and width must be known when the graph is built");
    if (!ox_dim_eq(X->dim[0], G->dim[0]))
        ox_fail(x, "X's batch %s and grid's %s differ", ox_dim_text(x, X->dim[0]),
                ox_dim_text(x, G->dim[0]));
    const char *mode = ox_attr_s(x, "mode", x->opset >= 20 ? "linear" : "bilinear");
    int m; /* 0 nearest, 1 linear, 2 cubic */
    if (!strcmp(mode, "nearest"))
        m = 0;
    else if (!strcmp(mode, "bilinear") || !strcmp(mode, "linear"))
        m = 1;
    else if (!strcmp(mode, "bicubic") || !strcmp(mode, "cubic"))
        m = 2;
    else
        ox_fail(x, "mode '%s' (bilinear/linear, nearest or bicubic/cubic)", mode);
    const char *pm = ox_attr_s(x, "padding_mode", "zeros");
    Gs g = {.x = x, .H = X->dim[2].v, .W = X->dim[3].v, .dt = dtype_name(X->dt)};
    if (!strcmp(pm, "zeros"))
        g.pad = 0;
    else if (!strcmp(pm, "border"))
        g.pad = 1;
    else if (!strcmp(pm, "reflection"))
        g.pad = 2;
    else
        ox_fail(x, "padding_mode '%s' (zeros, border or reflection)", pm);
    int64_t al = ox_attr_i(x, "align_corners", 0);
    if (al != 0 && al != 1) ox_fail(x, "align_corners %lld (0 or 1)", (long long)al);
    g.align = al;
    if (g.H < 1 || g.W < 1) ox_fail(x, "an empty image");
    g.base = out[0]->name;
    g.n_txt = ox_dim_text(x, X->dim[0]);
    g.c_txt = ox_dim_text(x, X->dim[1]);
    g.ho_txt = ox_dim_text(x, G->dim[1]);
    g.wo_txt = ox_dim_text(x, G->dim[2]);
    Arena *a = x->a;
    const char *xs = ox_ref(x, X, false), *gs = ox_ref(x, G, false);
    if (X->dt != G->dt) gs = arena_printf(a, "to(%s, %s)", gs, g.dt);
    g.flat = tmp(&g, "_flat",
                 arena_printf(a, "%s.reshape([%s, %s, %lld])", xs, g.n_txt, g.c_txt,
                              (long long)(g.H * g.W)));
    const char *ix = tmp(&g, "_ix", unnormalize(&g, arena_printf(a, "%s[:, :, :, 0]", gs), g.W));
    const char *iy = tmp(&g, "_iy", unnormalize(&g, arena_printf(a, "%s[:, :, :, 1]", gs), g.H));
    const char *e;
    if (m == 0 || m == 1) {
        ix = pad_coord(&g, ix, g.W, "_ix");
        iy = pad_coord(&g, iy, g.H, "_iy");
    }
    if (m == 0) {
        e = tap(&g, tmp(&g, "_rx", arena_printf(a, "round(%s)", ix)),
                tmp(&g, "_ry", arena_printf(a, "round(%s)", iy)));
    } else if (m == 1) {
        const char *x0 = tmp(&g, "_x0", arena_printf(a, "floor(%s)", ix));
        const char *y0 = tmp(&g, "_y0", arena_printf(a, "floor(%s)", iy));
        const char *x1 = tmp(&g, "_x1", arena_printf(a, "%s + 1.0", x0));
        const char *y1 = tmp(&g, "_y1", arena_printf(a, "%s + 1.0", y0));
        const char *fx = tmp(&g, "_fx", arena_printf(a, "unsqueeze(%s - %s, 1)", ix, x0));
        const char *fy = tmp(&g, "_fy", arena_printf(a, "unsqueeze(%s - %s, 1)", iy, y0));
        e = arena_printf(a,
                         "%s * (1.0 - %s) * (1.0 - %s) + %s * %s * (1.0 - %s) + %s * (1.0 - %s) * "
                         "%s + %s * %s * %s",
                         tap(&g, x0, y0), fx, fy, tap(&g, x1, y0), fx, fy, tap(&g, x0, y1), fx, fy,
                         tap(&g, x1, y1), fx, fy);
    } else {
        const char *x0 = tmp(&g, "_x0", arena_printf(a, "floor(%s)", ix));
        const char *y0 = tmp(&g, "_y0", arena_printf(a, "floor(%s)", iy));
        const char *wx[4], *wy[4];
        cubic_weights(&g, tmp(&g, "_tx", arena_printf(a, "unsqueeze(%s - %s, 1)", ix, x0)), wx);
        cubic_weights(&g, tmp(&g, "_ty", arena_printf(a, "unsqueeze(%s - %s, 1)", iy, y0)), wy);
        const char *cx[4], *cy[4];
        for (int k = 0; k < 4; k++) {
            cx[k] = pad_coord(&g, tmp(&g, "_cx", arena_printf(a, "%s + %s", x0, num(&g, k - 1))),
                              g.W, "_cx");
            cy[k] = pad_coord(&g, tmp(&g, "_cy", arena_printf(a, "%s + %s", y0, num(&g, k - 1))),
                              g.H, "_cy");
        }
        const char *sum = NULL;
        for (int i = 0; i < 4; i++) {
            const char *row = NULL;
            for (int j = 0; j < 4; j++) {
                const char *t = arena_printf(a, "%s * %s", tap(&g, cx[j], cy[i]), wx[j]);
                row = row ? arena_printf(a, "%s + %s", row, t) : t;
            }
            row = tmp(&g, "_row", row);
            const char *t = arena_printf(a, "%s * %s", row, wy[i]);
            sum = sum ? arena_printf(a, "%s + %s", sum, t) : t;
        }
        e = sum;
    }
    OxDim d[4] = {X->dim[0], X->dim[1], G->dim[1], G->dim[2]};
    ox_bind(x, out[0], e);
    ox_set_shape(out[0], X->dt, 4, d);
    return true;
}
