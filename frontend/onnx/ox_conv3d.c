/* Conv over 3-d windows ([N, C, D, H, W]) as 2-d convolutions, one per
 * depth offset kd of the kernel: the depth slice that offset reads for
 * every output depth (a strided view of the padded input) joins the batch,
 * [N * OD, C, H, W], and meets the weight's plane w[:, :, kd] in one
 * conv2d; the KD products are summed and the depth moved back:
 *   out[n, o, od] = sum_kd conv2d(x[n, :, od * sd + kd * dd], w[:, :, kd])
 * which is the 3-d convolution's own sum, regrouped (groups, strides,
 * dilations and pads as ONNX's Conv has them). */
#include <string.h>

#include "frontend/onnx/ox.h"

static const char *ilist3(Ox *x, const int64_t *v) {
    return arena_printf(x->a, "[%lld, %lld]", (long long)v[1], (long long)v[2]);
}

void ox_conv3d(Ox *x, OxVal **in, int nin, OxVal *out, const char *wname, const char *bname) {
    OxVal *w = in[1];
    int64_t kernel[3] = {w->dim[2].v, w->dim[3].v, w->dim[4].v};
    for (int i = 0; i < 3; i++)
        if (w->dim[2 + i].sym) ox_fail(x, "the weight's kernel sizes must be known");
    int nk;
    const int64_t *ks = ox_attr_ints(x, "kernel_shape", &nk);
    if (ks && (nk != 3 || ks[0] != kernel[0] || ks[1] != kernel[1] || ks[2] != kernel[2]))
        ox_fail(x, "kernel_shape disagrees with the weight's %lldx%lldx%lld", (long long)kernel[0],
                (long long)kernel[1], (long long)kernel[2]);
    OxWin win;
    ox_window(x, in[0], kernel, 3, &win);
    int64_t g = ox_attr_i(x, "group", 1);
    if (g < 1 || g > ((int64_t)1 << 31)) ox_fail(x, "group %lld", (long long)g);
    if (in[0]->dim[1].v != w->dim[1].v * g)
        ox_fail(x, "the input has %lld channels, the weight takes %lld per group, %lld groups",
                (long long)in[0]->dim[1].v, (long long)w->dim[1].v, (long long)g);
    OxDim d[5] = {in[0]->dim[0], w->dim[0]};
    for (int i = 0; i < 3; i++)
        d[2 + i] = ox_out_size(x, in[0]->dim[2 + i], &win, i, false);
    const char *src = ox_ref(x, in[0], false);
    bool pads = false;
    for (int i = 0; i < 3; i++)
        pads |= win.pb[i] || win.pe[i];
    if (pads) {
        const char *p = ox_ident(x, out->name, "_padded");
        ox_emit(x, OX_BODY, "%s = pad(%s, [%lld, %lld, %lld, %lld, %lld, %lld])\n", p, src,
                (long long)win.pb[2], (long long)win.pe[2], (long long)win.pb[1],
                (long long)win.pe[1], (long long)win.pb[0], (long long)win.pe[0]);
        src = p;
    }
    OxDim nd = ox_dim_op(x, '*', d[0], d[2]);
    OxDim hp = ox_dim_op(x, '+', in[0]->dim[3], ox_dim_c(win.pb[1] + win.pe[1]));
    OxDim wp = ox_dim_op(x, '+', in[0]->dim[4], ox_dim_c(win.pb[2] + win.pe[2]));
    OxDim bshape[4] = {nd, in[0]->dim[1], hp, wp};
    const char *sum = NULL;
    for (int64_t kd = 0; kd < kernel[0]; kd++) {
        int64_t a = kd * win.d[0], b = a + (d[2].v - 1) * win.s[0] + 1;
        const char *t = arena_printf(
            x->a,
            "conv2d(reshape(%s[:, :, %lld:%lld:%lld].permute([0, 2, 1, 3, 4]), %s), "
            "%s[:, :, %lld], stride=%s, dilation=%s, groups=%lld)",
            src, (long long)a, (long long)b, (long long)win.s[0], ox_dims_text(x, bshape, 4), wname,
            (long long)kd, ilist3(x, win.s), ilist3(x, win.d), (long long)g);
        sum = sum ? arena_printf(x->a, "%s + %s", sum, t) : t;
    }
    OxDim back[5] = {d[0], d[2], d[1], d[3], d[4]};
    const char *e = arena_printf(x->a, "reshape(%s, %s).permute([0, 2, 1, 3, 4])", sum,
                                 ox_dims_text(x, back, 5));
    if (bname)
        e = arena_printf(x->a, "%s + reshape(%s, [%s, 1, 1, 1])", e, bname, ox_dim_text(x, d[1]));
    (void)nin;
    ox_bind(x, out, e);
    ox_set_shape(out, in[0]->dt, 5, d);
}
