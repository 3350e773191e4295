/* ConvTranspose over [N, C, D, H, W] as 2-d transposed convolutions, one
 * per kernel depth kd (ox_conv3d.c's regrouping, transposed): every input
 * depth joins the batch, [N * D, C, H, W], meets the weight's plane
 * w[:, :, kd] in one conv_transpose2d (H and W strides, pads, dilations,
 * output_padding and groups as the node has them), and lands at output
 * depth id * sd + kd * dd:
 *   out[n, o, id * sd + kd * dd - pd] += conv_transpose2d(x[n, :, id], w[:, :, kd])
 * placed by interleaving zeros for the stride (a stack and a reshape) and
 * padding kd * dd in front; the KD placements summed, the depth pads
 * cropped, the depth moved back, the bias added. Explicit pads only
 * (symmetric in H and W; any in depth); output_shape and auto_pad are
 * refused. */
#include "frontend/onnx/ox.h"

void ox_conv_transpose3d(Ox *x, OxVal **in, int nin, OxVal *out, const char *wname,
                         const char *bname) {
    Arena *a = x->a;
    OxVal *X = in[0], *w = in[1];
    (void)nin;
    if (X->ndim != 5) ox_fail(x, "a 3-d ConvTranspose needs a 5-d input");
    for (int i = 2; i < 5; i++)
        if (X->dim[i].sym || w->dim[i].sym)
            ox_fail(x, "a 3-d ConvTranspose needs its spatial sizes known when the graph is built");
    if (ox_attr(x, "output_shape")) ox_fail(x, "a 3-d ConvTranspose with output_shape");
    const char *ap = ox_attr_s(x, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET")) ox_fail(x, "a 3-d ConvTranspose with auto_pad %s", ap);
    int64_t k[3] = {w->dim[2].v, w->dim[3].v, w->dim[4].v}, s[3] = {1, 1, 1}, dl[3] = {1, 1, 1},
            pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0}, op[3] = {0, 0, 0};
    int n;
    const int64_t *v;
    if ((v = ox_attr_ints(x, "kernel_shape", &n)) &&
        (n != 3 || v[0] != k[0] || v[1] != k[1] || v[2] != k[2]))
        ox_fail(x, "kernel_shape disagrees with the weight's %lldx%lldx%lld", (long long)k[0],
                (long long)k[1], (long long)k[2]);
    if ((v = ox_attr_ints(x, "strides", &n))) {
        if (n != 3) ox_fail(x, "strides has %d values for 3 spatial dims", n);
        for (int i = 0; i < 3; i++)
            s[i] = v[i];
    }
    if ((v = ox_attr_ints(x, "dilations", &n))) {
        if (n != 3) ox_fail(x, "dilations has %d values for 3 spatial dims", n);
        for (int i = 0; i < 3; i++)
            dl[i] = v[i];
    }
    if ((v = ox_attr_ints(x, "pads", &n))) {
        if (n != 6) ox_fail(x, "pads has %d values for 3 spatial dims", n);
        for (int i = 0; i < 3; i++)
            pb[i] = v[i], pe[i] = v[3 + i];
    }
    if ((v = ox_attr_ints(x, "output_padding", &n))) {
        if (n != 3) ox_fail(x, "output_padding has %d values for 3 spatial dims", n);
        for (int i = 0; i < 3; i++)
            op[i] = v[i];
    }
    for (int i = 0; i < 3; i++) {
        if (s[i] < 1 || s[i] > 4096 || dl[i] < 1 || dl[i] > 4096 || k[i] < 1 || k[i] > 4096)
            ox_fail(x, "strides, dilations and kernel sizes must be 1 to 4096");
        if (pb[i] < 0 || pe[i] < 0 || pb[i] > 4096 || pe[i] > 4096 || op[i] < 0 ||
            op[i] >= (s[i] > dl[i] ? s[i] : dl[i]))
            ox_fail(x, "pads must be 0 to 4096 and output_padding below max(stride, dilation)");
    }
    if (pb[1] != pe[1] || pb[2] != pe[2])
        ox_fail(x, "a 3-d ConvTranspose with asymmetric height or width pads");
    int64_t g = ox_attr_i(x, "group", 1);
    if (g < 1 || X->dim[1].v != w->dim[0].v || w->dim[0].v % g)
        ox_fail(x, "the input's %lld channels, the weight's %lld and group %lld disagree",
                (long long)X->dim[1].v, (long long)w->dim[0].v, (long long)g);
    int64_t D = X->dim[2].v, H = X->dim[3].v, W = X->dim[4].v;
    int64_t O = w->dim[1].v * g;
    int64_t full[3], outsz[3];
    int64_t in_sz[3] = {D, H, W};
    for (int i = 0; i < 3; i++) {
        full[i] = (in_sz[i] - 1) * s[i] + (k[i] - 1) * dl[i] + 1 + op[i];
        outsz[i] = full[i] - pb[i] - pe[i];
        if (outsz[i] < 1) ox_fail(x, "the pads leave no output");
    }
    const char *base = out->name;
    const char *nt = ox_dim_text(x, X->dim[0]);
    const char *src = ox_tmp(
        x, base, "_slices",
        arena_printf(a, "reshape(%s.permute([0, 2, 1, 3, 4]), [%s * %lld, %lld, %lld, %lld])",
                     ox_ref(x, X, false), nt, (long long)D, (long long)X->dim[1].v, (long long)H,
                     (long long)W));
    int64_t Ho = outsz[1], Wo = outsz[2];
    int64_t spread = (D - 1) * s[0] + 1; /* the input depths, stride apart */
    const char *sum = NULL;
    for (int64_t kd = 0; kd < k[0]; kd++) {
        char *t = arena_printf(a,
                               "reshape(conv_transpose2d(%s, %s[:, :, %lld], stride=[%lld, %lld], "
                               "padding=[%lld, %lld], output_padding=[%lld, %lld], "
                               "dilation=[%lld, %lld], groups=%lld), [%s, %lld, %lld, %lld, %lld])",
                               src, wname, (long long)kd, (long long)s[1], (long long)s[2],
                               (long long)pb[1], (long long)pb[2], (long long)op[1],
                               (long long)op[2], (long long)dl[1], (long long)dl[2], (long long)g,
                               nt, (long long)D, (long long)O, (long long)Ho, (long long)Wo);
        const char *tk = ox_tmp(x, base, "_kd", t);
        if (s[0] > 1) {
            char *st = arena_printf(a, "stack([%s", tk);
            for (int64_t j = 1; j < s[0]; j++)
                st = arena_printf(a, "%s, zeros_like(%s)", st, tk);
            tk = ox_tmp(
                x, base, "_spread",
                arena_printf(a, "reshape(%s], dim=2), [%s, %lld, %lld, %lld, %lld])[:, 0:%lld]", st,
                             nt, (long long)(D * s[0]), (long long)O, (long long)Ho, (long long)Wo,
                             (long long)spread));
        }
        int64_t front = kd * dl[0], back = full[0] - front - spread;
        const char *placed = front || back
                                 ? arena_printf(a, "pad(%s, [0, 0, 0, 0, 0, 0, %lld, %lld])", tk,
                                                (long long)front, (long long)back)
                                 : tk;
        sum = sum ? arena_printf(a, "%s + %s", sum, placed) : placed;
    }
    const char *y = ox_tmp(x, base, "_depths", sum);
    char *e = arena_printf(a, "%s[:, %lld:%lld].permute([0, 2, 1, 3, 4])", y, (long long)pb[0],
                           (long long)(full[0] - pe[0]));
    if (bname) e = arena_printf(a, "%s + reshape(%s, [%lld, 1, 1, 1])", e, bname, (long long)O);
    OxDim d[5] = {X->dim[0], ox_dim_c(O), ox_dim_c(outsz[0]), ox_dim_c(Ho), ox_dim_c(Wo)};
    ox_bind(x, out, e);
    ox_set_shape(out, X->dt, 5, d);
}
