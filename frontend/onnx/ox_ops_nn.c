/* ONNX operators with torch.nn.functional counterparts: convolutions,
 * pools, norms, Gemm/MatMul (linear where the weight is known), softmax,
 * reductions, Resize (interpolate), Clip. Defaults differ between the two
 * (a pool's stride, AveragePool's count_include_pad), so arguments that
 * matter are always written. */
#include <math.h>
#include <string.h>

#include "frontend/onnx/ox.h"

/* A weight: named after the node's module path when the initializer's
 * own name is torch's anonymous "onnx::Conv_193". */
static const char *wref(Ox *x, OxVal *v, const char *role, bool transposed) {
    if (!v) return "None";
    if (v->c && !v->tg && !v->c->hint) {
        Onnx__NodeProto *n = ox_cur(x);
        const char *nn = n->name ? n->name : "", *slash = strrchr(nn, '/');
        if (v->is_init && strncmp(v->name, "onnx::", 6))
            v->c->hint = v->name;
        else if (slash && slash != nn)
            v->c->hint = arena_printf(x->a, "%.*s/%s", (int)(slash - nn), nn, role);
        else
            v->c->hint = arena_printf(x->a, "%s_%s", v->name, role);
    }
    if (transposed && v->c && !v->tg) return ox_param(x, v->c, true);
    return ox_ref(x, v, false);
}

/* "2" when every value is the same, else "[2, 1]". */
static const char *ilist(Ox *x, const int64_t *v, int n) {
    bool same = true;
    for (int k = 1; k < n; k++)
        same &= v[k] == v[0];
    if (same && n) return arena_printf(x->a, "%lld", (long long)v[0]);
    char *s = arena_strdup(x->a, "[");
    for (int k = 0; k < n; k++)
        s = arena_printf(x->a, "%s%s%lld", s, k ? ", " : "", (long long)v[k]);
    return arena_printf(x->a, "%s]", s);
}

/* kernel_shape, strides, dilations, pads, auto_pad of a conv or pool. */
void ox_window(Ox *x, OxVal *in, const int64_t *kernel, int ns, OxWin *w) {
    if (ns < 1 || ns > 3 || in->ndim != ns + 2)
        ox_fail(x, "only 1-d, 2-d and 3-d windows over [N, C, ...] inputs are supported (rank %d)",
                in->ndim);
    w->ns = ns;
    int n;
    const int64_t *s = ox_attr_ints(x, "strides", &n);
    if (s && n != ns) ox_fail(x, "strides has %d values for %d spatial dims", n, ns);
    const int64_t *dl = ox_attr_ints(x, "dilations", &n);
    if (dl && n != ns) ox_fail(x, "dilations has %d values for %d spatial dims", n, ns);
    const int64_t *p = ox_attr_ints(x, "pads", &n);
    if (p && n != 2 * ns) ox_fail(x, "pads has %d values for %d spatial dims", n, ns);
    const char *ap = ox_attr_s(x, "auto_pad", "NOTSET");
    for (int i = 0; i < ns; i++) {
        w->k[i] = kernel[i];
        w->s[i] = s ? s[i] : 1;
        w->d[i] = dl ? dl[i] : 1;
        w->pb[i] = p ? p[i] : 0;
        w->pe[i] = p ? p[i + ns] : 0;
        const int64_t big = (int64_t)1 << 31;
        if (w->k[i] > big || w->s[i] > big || w->d[i] > big || w->pb[i] > big || w->pe[i] > big)
            ox_fail(x, "kernel, strides, dilations and pads must be below 2^31");
        if (w->k[i] < 1 || w->s[i] < 1 || w->d[i] < 1 || w->pb[i] < 0 || w->pe[i] < 0)
            ox_fail(x, "kernel, strides and dilations must be positive, pads non-negative");
        if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
            int64_t in_sz = in->dim[2 + i].v, out = (in_sz + w->s[i] - 1) / w->s[i];
            int64_t tot = (out - 1) * w->s[i] + (w->k[i] - 1) * w->d[i] + 1 - in_sz;
            tot = tot < 0 ? 0 : tot;
            if (in->dim[2 + i].sym) x->used_defaults = true;
            w->pb[i] = ap[5] == 'U' ? tot / 2 : tot - tot / 2;
            w->pe[i] = tot - w->pb[i];
        } else if (!strcmp(ap, "VALID")) {
            w->pb[i] = w->pe[i] = 0;
        } else if (strcmp(ap, "NOTSET")) {
            ox_fail(x, "auto_pad '%s' is not supported", ap);
        }
    }
}

static bool symmetric(const OxWin *w) {
    for (int i = 0; i < w->ns; i++)
        if (w->pb[i] != w->pe[i]) return false;
    return true;
}

/* An input padded explicitly where the pads are not symmetric. */
static const char *padded(Ox *x, const char *src, OxWin *w, const char *value) {
    if (symmetric(w)) return src;
    int64_t tp[4];
    for (int i = 0; i < w->ns; i++) {
        tp[2 * (w->ns - 1 - i)] = w->pb[i];
        tp[2 * (w->ns - 1 - i) + 1] = w->pe[i];
        w->pb[i] = w->pe[i] = 0;
    }
    char *s = arena_printf(x->a, "pad(%s, [%lld, %lld", src, (long long)tp[0], (long long)tp[1]);
    if (w->ns == 2) s = arena_printf(x->a, "%s, %lld, %lld", s, (long long)tp[2], (long long)tp[3]);
    return arena_printf(x->a, "%s]%s%s)", s, value ? ", value=" : "", value ? value : "");
}

OxDim ox_out_size(Ox *x, OxDim in, const OxWin *w, int i, bool ceil_mode) {
    int64_t eff = w->d[i] * (w->k[i] - 1) + 1, num = in.v + w->pb[i] + w->pe[i] - eff;
    if (num < 0)
        ox_fail(x, "the window (%lld) is larger than the padded input (%lld)", (long long)eff,
                (long long)(in.v + w->pb[i] + w->pe[i]));
    int64_t o = (ceil_mode ? (num + w->s[i] - 1) / w->s[i] : num / w->s[i]) + 1;
    if (ceil_mode && (o - 1) * w->s[i] >= in.v + w->pb[i]) o--; /* torch's rule */
    if (in.sym) x->used_defaults = true;
    return ox_dim_c(o);
}

static bool conv(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    bool tr = ox_op_is(n, "ConvTranspose");
    if (!tr && !ox_op_is(n, "Conv")) return false;
    ox_conv(x, in, nin, out[0], tr);
    return true;
}

void ox_conv(Ox *x, OxVal **in, int nin, OxVal *out, bool tr) {
    static const char *const known[] = {"auto_pad",       "dilations",    "group",
                                        "kernel_shape",   "pads",         "strides",
                                        "output_padding", "output_shape", NULL};
    ox_check_attrs(x, known);
    ox_need_inputs(x, in, nin, 2);
    OxVal *w = in[1];
    int ns = w->ndim - 2;
    if (ns == 3) {
        (tr ? ox_conv_transpose3d : ox_conv3d)(x, in, nin, out, wref(x, w, "weight", false),
                                               nin > 2 && in[2] ? wref(x, in[2], "bias", false)
                                                                : NULL);
        return;
    }
    if (ns < 1 || ns > 2)
        ox_fail(x, "%dd %s are not supported (1-d, 2-d and 3-d are)", ns < 1 ? 0 : ns,
                tr ? "transposed convolutions" : "convolutions");
    int64_t kernel[2] = {w->dim[2].v, ns == 2 ? w->dim[3].v : 1};
    int np, nk;
    const int64_t *ks = ox_attr_ints(x, "kernel_shape", &nk);
    for (int i = 0; ks && i < ns; i++)
        if (nk != ns || ks[i] != kernel[i]) {
            char *t = arena_strdup(x->a, "");
            for (int j = 0; j < nk; j++)
                t = arena_printf(x->a, "%s%s%lld", t, j ? ", " : "", (long long)ks[j]);
            ox_fail(x, "kernel_shape [%s] disagrees with the weight's %lld%s%s", t,
                    (long long)kernel[0], ns == 2 ? "x" : "",
                    ns == 2 ? arena_printf(x->a, "%lld", (long long)kernel[1]) : "");
        }
    const int64_t *op = ox_attr_ints(x, "output_padding", &np);
    if (op && np != ns) ox_fail(x, "output_padding has %d values for %d spatial dims", np, ns);
    OxWin win;
    ox_window(x, in[0], kernel, ns, &win);
    int64_t g = ox_attr_i(x, "group", 1);
    if (g < 1 || g > ((int64_t)1 << 31)) ox_fail(x, "group %lld", (long long)g);
    for (int i = 0; op && i < np && i < ns; i++)
        if (op[i] < 0 || op[i] > ((int64_t)1 << 31))
            ox_fail(x, "output_padding %lld", (long long)op[i]);
    OxDim d[OX_MAX_DIMS];
    d[0] = in[0]->dim[0];
    d[1] = tr ? ox_dim_c(w->dim[1].v * g) : w->dim[0];
    const char *src = ox_ref(x, in[0], false);
    /* ConvTranspose's pads crop its full output; asymmetric ones (or
     * auto_pad's) are written as the symmetric part and a slice of the
     * rest (crop[i]: extra at the start, crop_end[i] at the end). */
    int64_t crop[2] = {0, 0}, crop_end[2] = {0, 0}, full[2] = {0, 0}, opx[2] = {0, 0};
    if (tr) {
        const char *ap = ox_attr_s(x, "auto_pad", "NOTSET");
        int nos;
        const int64_t *os = ox_attr_ints(x, "output_shape", &nos);
        if (os && nos != ns && nos != ns + 2)
            ox_fail(x, "output_shape has %d values for %d spatial dims", nos, ns);
        if (os) os += nos - ns; /* the spatial sizes (N and C may lead) */
        for (int i = 0; i < ns; i++) {
            int64_t in_sz = in[0]->dim[2 + i].v;
            full[i] = (in_sz - 1) * win.s[i] + win.d[i] * (win.k[i] - 1) + (op ? op[i] : 0) + 1;
            if (os) {
                /* ONNX: output_shape wins over pads; the padding that gives
                 * it is split as auto_pad says, the odd one at the start
                 * unless SAME_UPPER */
                int64_t tot = full[i] - os[i];
                int64_t room = win.s[i] > win.d[i] ? win.s[i] : win.d[i];
                if (tot < 0 && -tot < room && os[i] >= 1) {
                    /* larger than the full output: the rest is more
                     * output_padding (zeros, plus the bias), as ONNX
                     * Runtime computes it; torch takes up to max(stride,
                     * dilation) - 1 of it */
                    for (int j = 0; j < ns; j++)
                        opx[j] = op ? op[j] : 0;
                    opx[i] += -tot;
                    full[i] += -tot;
                    op = opx, np = ns;
                    tot = 0;
                }
                if (tot < 0 || os[i] < 1)
                    ox_fail(x, "output_shape %lld is larger than the full output %lld",
                            (long long)os[i], (long long)full[i]);
                win.pb[i] = !strcmp(ap, "SAME_UPPER") ? tot / 2 : tot - tot / 2;
                win.pe[i] = tot - win.pb[i];
            } else if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
                /* ONNX: the output is input * stride, the padding split
                 * with the odd one at the end (SAME_UPPER) or start */
                int64_t tot = full[i] - in_sz * win.s[i];
                tot = tot < 0 ? 0 : tot;
                if (in[0]->dim[2 + i].sym) x->used_defaults = true;
                win.pb[i] = ap[5] == 'U' ? tot / 2 : tot - tot / 2;
                win.pe[i] = tot - win.pb[i];
            }
            int64_t sym = win.pb[i] < win.pe[i] ? win.pb[i] : win.pe[i];
            crop[i] = win.pb[i] - sym, crop_end[i] = win.pe[i] - sym;
            full[i] -= 2 * sym;
            win.pb[i] = win.pe[i] = sym;
            d[2 + i] = ox_dim_c(full[i] - crop[i] - crop_end[i]);
            if (d[2 + i].v < 1) ox_fail(x, "the pads leave no output");
        }
    } else {
        /* the sizes first: padded() moves the pads into the input */
        for (int i = 0; i < ns; i++)
            d[2 + i] = ox_out_size(x, in[0]->dim[2 + i], &win, i, false);
        src = padded(x, src, &win, NULL);
    }
    char *e = arena_printf(x->a, "%s%dd(%s, %s", tr ? "conv_transpose" : "conv", ns, src,
                           wref(x, w, "weight", false));
    if (nin > 2 && in[2]) e = arena_printf(x->a, "%s, %s", e, wref(x, in[2], "bias", false));
    bool one = true;
    for (int i = 0; i < ns; i++)
        one &= win.s[i] == 1;
    if (!one) e = arena_printf(x->a, "%s, stride=%s", e, ilist(x, win.s, ns));
    if (win.pb[0] || (ns == 2 && win.pb[1]))
        e = arena_printf(x->a, "%s, padding=%s", e, ilist(x, win.pb, ns));
    if (tr && op) {
        if (np != ns) ox_fail(x, "output_padding has %d values", np);
        e = arena_printf(x->a, "%s, output_padding=%s", e, ilist(x, op, ns));
    }
    if (win.d[0] != 1 || (ns == 2 && win.d[1] != 1))
        e = arena_printf(x->a, "%s, dilation=%s", e, ilist(x, win.d, ns));
    if (g != 1) e = arena_printf(x->a, "%s, groups=%lld", e, (long long)g);
    e = arena_printf(x->a, "%s)", e);
    if (crop[0] || crop_end[0] || crop[1] || crop_end[1]) {
        const char *t = ox_ident(x, out->name, "_full");
        ox_emit(x, OX_BODY, "%s = %s\n", t, e);
        e = arena_printf(x->a, "%s[:, :", t);
        for (int i = 0; i < ns; i++)
            e = arena_printf(x->a, "%s, %lld:%lld", e, (long long)crop[i],
                             (long long)(full[i] - crop_end[i]));
        e = arena_printf(x->a, "%s]", e);
    }
    ox_bind_shaped(x, out, e, in[0]->dt, ns + 2, d);
}

static bool pool(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    bool mx = ox_op_is(n, "MaxPool");
    if (!mx && !ox_op_is(n, "AveragePool")) return false;
    ox_need_inputs(x, in, nin, 1);
    int nk;
    const int64_t *k = ox_attr_ints(x, "kernel_shape", &nk);
    if (!k) ox_fail(x, "kernel_shape is required");
    OxWin w;
    ox_window(x, in[0], k, nk, &w);
    bool ceil_mode = ox_attr_i(x, "ceil_mode", 0) != 0;
    if (mx && n->n_output > 1 && out[1]) {
        if (!dtype_is_float(in[0]->dt)) ox_fail(x, "MaxPool's indices of an integer input");
        ox_maxpool_indices(x, in[0], out[0], out[1], &w, ceil_mode);
        return true;
    }
    bool cip = ox_attr_i(x, "count_include_pad", 0) != 0;
    /* what torch's pools do not take: 3-d windows, integer inputs, pads
     * over half the kernel, AveragePool's dilations, and its asymmetric
     * pads that are not counted */
    bool slices =
        w.ns == 3 || !dtype_is_float(in[0]->dt) || (!symmetric(&w) && ((!mx && !cip) || ceil_mode));
    for (int i = 0; i < w.ns; i++)
        slices |= (symmetric(&w) && w.pb[i] * 2 > w.k[i]) || (!mx && w.d[i] != 1);
    if (slices) {
        ox_pool_slices(x, in[0], out[0], &w, mx, ceil_mode, cip);
        return true;
    }
    OxDim d[OX_MAX_DIMS];
    d[0] = in[0]->dim[0], d[1] = in[0]->dim[1];
    /* the sizes first: padded() moves the pads into the input */
    for (int i = 0; i < w.ns; i++)
        d[2 + i] = ox_out_size(x, in[0]->dim[2 + i], &w, i, ceil_mode);
    const char *src = ox_ref(x, in[0], false);
    if (!symmetric(&w)) {
        if (!mx && !cip)
            ox_fail(x, "AveragePool with asymmetric pads and count_include_pad=0 is not supported");
        src = padded(x, src, &w, mx ? "-inf" : NULL);
    }
    for (int i = 0; i < w.ns; i++)
        if (w.pb[i] * 2 > w.k[i]) ox_fail(x, "pads larger than half the kernel are not supported");
    char *e = arena_printf(x->a, "%s_pool%dd(%s, %s, stride=%s", mx ? "max" : "avg", w.ns, src,
                           ilist(x, w.k, w.ns), ilist(x, w.s, w.ns));
    bool pad = w.pb[0] || (w.ns == 2 && w.pb[1]);
    if (pad) e = arena_printf(x->a, "%s, padding=%s", e, ilist(x, w.pb, w.ns));
    if (mx && (w.d[0] != 1 || (w.ns == 2 && w.d[1] != 1)))
        e = arena_printf(x->a, "%s, dilation=%s", e, ilist(x, w.d, w.ns));
    if (!mx && ox_attr(x, "dilations")) {
        for (int i = 0; i < w.ns; i++)
            if (w.d[i] != 1) ox_fail(x, "AveragePool with dilations is not supported");
    }
    if (ceil_mode) e = arena_printf(x->a, "%s, ceil_mode=true", e);
    if (!mx && pad && !cip) e = arena_printf(x->a, "%s, count_include_pad=false", e);
    return ox_bind_shaped(x, out[0], arena_printf(x->a, "%s)", e), in[0]->dt, w.ns + 2, d);
}

static bool global_pool(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    bool avg = ox_op_is(n, "GlobalAveragePool");
    if (!avg && !ox_op_is(n, "GlobalMaxPool")) return false;
    ox_need_inputs(x, in, nin, 1);
    int r = in[0]->ndim;
    if (r < 3) ox_fail(x, "the input must be [N, C, ...]");
    OxDim d[OX_MAX_DIMS];
    for (int k = 0; k < r; k++)
        d[k] = k < 2 ? in[0]->dim[k] : ox_dim_c(1);
    const char *src = ox_ref(x, in[0], false), *e;
    if (avg && (r == 3 || r == 4)) {
        e = arena_printf(x->a, "adaptive_avg_pool%dd(%s, 1)", r - 2, src);
    } else {
        char *dims = arena_strdup(x->a, "[");
        for (int k = 2; k < r; k++)
            dims = arena_printf(x->a, "%s%s%d", dims, k > 2 ? ", " : "", k);
        e = arena_printf(x->a, "%s(%s, dim=%s], keepdim=true)", avg ? "mean" : "amax", src, dims);
    }
    return ox_bind_shaped(x, out[0], e, in[0]->dt, r, d);
}

static bool norm(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    const char *e;
    OxVal *o = out[0];
    if (ox_op_is(n, "BatchNormalization")) {
        ox_need_inputs(x, in, nin, 5);
        /* opsets 7 and 8: spatial=0 normalises each element of [C, D...]
         * on its own statistics, which batch_norm does not */
        if (!ox_attr_i(x, "spatial", 1))
            ox_fail(x, "spatial=0 (statistics per element, not per channel) is not supported");
        /* training_mode=1: ox_ops_train.c */
        for (size_t k = 1; k < n->n_output; k++)
            if (out[k])
                ox_fail(x, "BatchNormalization's running statistics outputs are not supported");
        e = arena_printf(x->a, "batch_norm(%s, %s, %s, %s, %s, eps=%s)", ox_ref(x, in[0], false),
                         wref(x, in[3], "running_mean", false),
                         wref(x, in[4], "running_var", false), wref(x, in[1], "weight", false),
                         wref(x, in[2], "bias", false),
                         ox_num(x, ox_attr_f(x, "epsilon", 1e-5f), true));
    } else if (ox_op_is(n, "LayerNormalization")) {
        ox_need_inputs(x, in, nin, 2);
        int r = in[0]->ndim, a = ox_axis(x, ox_attr_i(x, "axis", -1), r);
        if (ox_attr_i(x, "stash_type", 1) != 1)
            ox_fail(x, "stash_type other than float is not supported");
        const char *src = ox_ref(x, in[0], false);
        const char *eps = ox_num(x, ox_attr_f(x, "epsilon", 1e-5f), true);
        e = arena_printf(x->a, "layer_norm(%s, %s, %s, %s, eps=%s)", src,
                         ox_dims_text(x, in[0]->dim + a, r - a), wref(x, in[1], "weight", false),
                         nin > 2 && in[2] ? wref(x, in[2], "bias", false) : "None", eps);
        /* the optional Mean and InvStdDev outputs, over the normalised
         * axes kept as 1s: computed again (the fused layer_norm keeps
         * neither) */
        int64_t axes[OX_MAX_DIMS];
        OxDim kd[OX_MAX_DIMS];
        for (int k = 0; k < r; k++)
            kd[k] = k < a ? in[0]->dim[k] : ox_dim_c(1);
        for (int k = a; k < r; k++)
            axes[k - a] = k;
        const char *ax = ilist(x, axes, r - a);
        if (ax[0] != '[') ax = arena_printf(x->a, "[%s]", ax);
        for (size_t k = 1; k < n->n_output && k < 3; k++) {
            if (!out[k]) continue;
            ox_bind(x, out[k],
                    k == 1 ? arena_printf(x->a, "mean(%s, dim=%s, keepdim=true)", src, ax)
                           : arena_printf(x->a,
                                          "rsqrt(var(%s, dim=%s, correction=0, keepdim=true) + %s)",
                                          src, ax, eps));
            ox_set_shape(out[k], in[0]->dt, r, kd);
        }
    } else if (ox_op_is(n, "InstanceNormalization")) {
        ox_need_inputs(x, in, nin, 3);
        e = arena_printf(x->a, "instance_norm(%s, weight=%s, bias=%s, eps=%s)",
                         ox_ref(x, in[0], false), wref(x, in[1], "weight", false),
                         wref(x, in[2], "bias", false),
                         ox_num(x, ox_attr_f(x, "epsilon", 1e-5f), true));
    } else {
        return false;
    }
    ox_bind(x, o, e);
    ox_set_shape(o, in[0]->dt, in[0]->ndim, in[0]->dim);
    return true;
}

static bool flatten(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "Flatten")) return false;
    ox_need_inputs(x, in, nin, 1);
    int r = in[0]->ndim, a = (int)ox_attr_i(x, "axis", 1);
    a = a < 0 ? a + r : a;
    if (a < 0 || a > r) ox_fail(x, "axis %d is out of range for rank %d", a, r);
    OxDim d[2] = {ox_dim_c(1), ox_dim_c(1)};
    for (int k = 0; k < r; k++)
        d[k >= a] = ox_dim_op(x, '*', d[k >= a], in[0]->dim[k]);
    const char *src = ox_ref(x, in[0], false);
    const char *e = a == 1 && r >= 2
                        ? arena_printf(x->a, "flatten(%s, 1)", src)
                        : arena_printf(x->a, "reshape(%s, [%s, -1])", src, ox_dim_text(x, d[0]));
    return ox_bind_shaped(x, out[0], e, in[0]->dt, 2, d);
}

static bool gemm(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    bool mm = ox_op_is(n, "MatMul");
    if (!mm && !ox_op_is(n, "Gemm")) return false;
    ox_need_inputs(x, in, nin, 2);
    OxVal *A = in[0], *B = in[1], *C = nin > 2 ? in[2] : NULL;
    OxDim d[OX_MAX_DIMS];
    int nd;
    const char *e;
    if (mm) {
        if (A->ndim < 1 || B->ndim < 1) ox_fail(x, "MatMul of a 0-d tensor");
        bool lin = B->c && !B->tg && B->ndim == 2 && dtype_is_float(B->dt) && A->ndim >= 1;
        /* torch's matmul shape rule, for the shape kept here */
        if (A->ndim == 1 && B->ndim == 1) {
            nd = 0;
        } else if (B->ndim == 1) {
            nd = A->ndim - 1;
            memcpy(d, A->dim, sizeof(OxDim) * (size_t)nd);
        } else if (A->ndim == 1) {
            nd = B->ndim - 1;
            memcpy(d, B->dim, sizeof(OxDim) * (size_t)(nd - 1));
            d[nd - 1] = B->dim[B->ndim - 1];
        } else {
            OxDim ba[OX_MAX_DIMS];
            nd = ox_broadcast(x, A->dim, A->ndim - 2, B->dim, B->ndim - 2, ba);
            memcpy(d, ba, sizeof(OxDim) * (size_t)nd);
            d[nd++] = A->dim[A->ndim - 2];
            d[nd++] = B->dim[B->ndim - 1];
        }
        if (A->ndim >= 1 && B->ndim >= 2 && A->dim[A->ndim - 1].v != B->dim[B->ndim - 2].v)
            ox_fail(x, "MatMul of [..., %lld] and [%lld, ...]", (long long)A->dim[A->ndim - 1].v,
                    (long long)B->dim[B->ndim - 2].v);
        e = lin ? arena_printf(x->a, "linear(%s, %s)", ox_ref(x, A, false),
                               wref(x, B, "weight", true))
                : arena_printf(x->a, "%s @ %s", ox_ref(x, A, false), ox_ref(x, B, false));
    } else {
        /* opset 6's broadcast: C broadcasts the same either way (its shape
         * equals A @ B's when it is 0) */
        static const char *const known[] = {"alpha", "beta", "broadcast", "transA", "transB", NULL};
        ox_check_attrs(x, known);
        float al = ox_attr_f(x, "alpha", 1), be = ox_attr_f(x, "beta", 1);
        bool ta = ox_attr_i(x, "transA", 0), tb = ox_attr_i(x, "transB", 0);
        if (A->ndim != 2 || B->ndim != 2) ox_fail(x, "Gemm needs 2-d inputs");
        nd = 2;
        d[0] = A->dim[ta ? 1 : 0];
        d[1] = B->dim[tb ? 0 : 1];
        bool bconst = B->c && !B->tg;
        bool bias_ok = !C || (be == 1 && C->ndim == 1 && C->dim[0].v == d[1].v);
        if (!ta && al == 1 && bias_ok && (tb || bconst)) {
            e = arena_printf(x->a, "linear(%s, %s%s%s)", ox_ref(x, A, false),
                             wref(x, B, "weight", !tb), C ? ", " : "",
                             C ? wref(x, C, "bias", false) : "");
        } else {
            const char *a = ox_ref(x, A, false), *b = wref(x, B, "weight", false);
            char *s = arena_printf(x->a, "%s%s @ %s%s", a, ta ? ".T" : "", b, tb ? ".T" : "");
            if (al != 1) s = arena_printf(x->a, "(%s) * %s", s, ox_num(x, al, true));
            if (C)
                s = be == 1 ? arena_printf(x->a, "%s + %s", s, wref(x, C, "bias", false))
                            : arena_printf(x->a, "%s + %s * %s", s, wref(x, C, "bias", false),
                                           ox_num(x, be, true));
            e = s;
        }
    }
    return ox_bind_shaped(x, out[0], e, A->dt, nd, d);
}

static bool softmax(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    bool lg = ox_op_is(n, "LogSoftmax");
    if (!lg && !ox_op_is(n, "Softmax")) return false;
    ox_need_inputs(x, in, nin, 1);
    int r = in[0]->ndim;
    const char *fn = lg ? "log_softmax" : "softmax", *src = ox_ref(x, in[0], false), *e;
    if (x->opset >= 13) {
        int a = ox_axis(x, ox_attr_i(x, "axis", -1), r);
        e = arena_printf(x->a, "%s(%s, dim=%d)", fn, src, a == r - 1 ? -1 : a);
    } else {
        /* before opset 13: over the input flattened to 2-d at axis */
        int a = ox_axis(x, ox_attr_i(x, "axis", 1), r);
        if (a == r - 1) {
            e = arena_printf(x->a, "%s(%s, dim=-1)", fn, src);
        } else {
            OxDim p = ox_dim_c(1);
            for (int k = 0; k < a; k++)
                p = ox_dim_op(x, '*', p, in[0]->dim[k]);
            e = arena_printf(x->a, "%s(reshape(%s, [%s, -1]), dim=-1).reshape(%s)", fn, src,
                             ox_dim_text(x, p), ox_dims_text(x, in[0]->dim, r));
        }
    }
    return ox_bind_shaped(x, out[0], e, in[0]->dt, r, in[0]->dim);
}

static bool reduce(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    /* ONNX op, .tg reduction, what it reduces (%s: the input), what is
     * made of the result (%s: the reduction) */
    static const char *const t[][4] = {{"ReduceMean", "mean", "%s", "%s"},
                                       {"ReduceSum", "sum", "%s", "%s"},
                                       {"ReduceMax", "amax", "%s", "%s"},
                                       {"ReduceMin", "amin", "%s", "%s"},
                                       {"ReduceProd", "prod", "%s", "%s"},
                                       {"ArgMax", "argmax", "%s", "%s"},
                                       {"ArgMin", "argmin", "%s", "%s"},
                                       {"ReduceL1", "sum", "abs(%s)", "%s"},
                                       {"ReduceL2", "sum", "square(%s)", "sqrt(%s)"},
                                       {"ReduceSumSquare", "sum", "square(%s)", "%s"},
                                       {"ReduceLogSum", "sum", "%s", "log(%s)"},
                                       {"ReduceLogSumExp", "logsumexp", "%s", "%s"}};
    enum { NT = sizeof t / sizeof *t };
    int k = 0;
    while (k < NT && !ox_op_is(n, t[k][0]))
        k++;
    if (k == NT) return false;
    ox_need_inputs(x, in, nin, 1);
    int r = in[0]->ndim;
    bool keep = ox_attr_i(x, "keepdims", 1) != 0, arg = k == 5 || k == 6, last = false;
    bool red[OX_MAX_DIMS] = {0};
    int64_t axes[OX_MAX_DIMS] = {0};
    int na = 0;
    if (arg) {
        last = ox_attr_i(x, "select_last_index", 0) != 0;
        axes[na++] = ox_axis(x, ox_attr_i(x, "axis", 0), r);
    } else if (nin > 1 && in[1]) {
        OxConst *c = ox_need_const(x, in[1], "axes");
        if (c->n > r) ox_fail(x, "too many axes");
        for (int64_t i = 0; i < c->n; i++)
            axes[na++] = ox_axis(x, ox_const_int(x, c, i), r);
    } else {
        int nat;
        const int64_t *at = ox_attr_ints(x, "axes", &nat);
        if (nat > r) ox_fail(x, "too many axes");
        for (int i = 0; i < nat; i++)
            axes[na++] = ox_axis(x, at[i], r);
    }
    if (!na && !arg) {
        if (ox_attr_i(x, "noop_with_empty_axes", 0)) {
            return ox_bind_shaped(x, out[0], ox_ref(x, in[0], false), in[0]->dt, r, in[0]->dim);
        }
        for (int i = 0; i < r; i++)
            axes[na++] = i;
    }
    for (int i = 0; i < na; i++)
        red[axes[i]] = true;
    OxDim d[OX_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < r; i++)
        if (!red[i])
            d[nd++] = in[0]->dim[i];
        else if (keep)
            d[nd++] = ox_dim_c(1);
    const char *dims =
        arg || na == 1 ? arena_printf(x->a, "%lld", (long long)axes[0]) : ilist(x, axes, na);
    if (!arg && na > 1 && dims[0] != '[') dims = arena_printf(x->a, "[%s]", dims);
    const char *src = arena_printf(x->a, t[k][2], ox_ref(x, in[0], false));
    /* the last of equal extremes: the first of the flipped input, counted
     * from the end */
    if (last) src = arena_printf(x->a, "flip(%s, [%lld])", src, (long long)axes[0]);
    const char *e =
        arena_printf(x->a, "%s(%s, dim=%s%s)", t[k][1], src, dims, keep ? ", keepdim=true" : "");
    if (last) e = arena_printf(x->a, "%s - %s", ox_dim_text(x, in[0]->dim[axes[0]]), e);
    if (last) e = arena_printf(x->a, "(%s - 1)", e);
    return ox_bind_shaped(x, out[0], arena_printf(x->a, t[k][3], e), arg ? DT_I64 : in[0]->dt, nd,
                          d);
}

static bool resize(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "Resize") && !ox_op_is(n, "Upsample")) return false;
    ox_need_inputs(x, in, nin, 1);
    int r = in[0]->ndim, ns = r - 2;
    const char *mode = ox_attr_s(x, "mode", "nearest");
    /* Upsample and Resize-10 map output to input coordinates as x / scale
     * and take the floor for nearest (ONNX Runtime's upsample.h): Resize-11's
     * asymmetric + floor. */
    bool v10 = ox_op_is(n, "Upsample") || x->opset < 11;
    const char *ct =
        ox_attr_s(x, "coordinate_transformation_mode", v10 ? "asymmetric" : "half_pixel");
    const char *nm = ox_attr_s(x, "nearest_mode", v10 ? "floor" : "round_prefer_floor");
    const char *tm = NULL, *ac = NULL;
    if (ox_attr_i(x, "antialias", 0))
        ox_fail(x, "Resize with antialias=1 is not supported (antialias=0 is)");
    if (ox_attr(x, "axes")) ox_fail(x, "Resize's axes attribute is not supported (all axes are)");
    if (strcmp(ox_attr_s(x, "keep_aspect_ratio_policy", "stretch"), "stretch"))
        ox_fail(x, "Resize's keep_aspect_ratio_policy '%s' is not supported ('stretch' is)",
                ox_attr_s(x, "keep_aspect_ratio_policy", ""));
    /* tf_crop_and_resize: the roi's [start, end] of each axis, known at
     * import (it fixes the taps, as the sizes do) */
    double *roi = NULL;
    if (!strcmp(ct, "tf_crop_and_resize")) {
        if (v10 || nin < 2 || !in[1])
            ox_fail(x, "coordinate_transformation_mode 'tf_crop_and_resize' needs the roi input");
        OxConst *rc = ox_need_const(x, in[1], "roi");
        if (rc->n != 2 * r)
            ox_fail(x, "roi has %lld values; tf_crop_and_resize needs %d (starts, then ends)",
                    (long long)rc->n, 2 * r);
        roi = arena_alloc(x->a, sizeof *roi * (size_t)(2 * r));
        for (int k = 0; k < 2 * r; k++) {
            roi[k] = ox_const_get(x, rc, k);
            if (!isfinite(roi[k])) ox_fail(x, "roi[%d] is %g", k, roi[k]);
        }
        tm = NULL;
    }
    /* torch's interpolate where it computes ONNX's Resize; else the taps
     * of ox_resize.c */
    if (!strcmp(mode, "nearest")) {
        if (!strcmp(ct, "asymmetric") && !strcmp(nm, "floor")) tm = "nearest";
    } else if (!strcmp(mode, "linear")) {
        if (!strcmp(ct, "align_corners"))
            ac = "true";
        else if (!strcmp(ct, "half_pixel") || !strcmp(ct, "pytorch_half_pixel"))
            ac = "false";
        if (ac) tm = ns == 2 ? "bilinear" : "linear";
    } else if (strcmp(mode, "cubic")) {
        ox_fail(x, "Resize mode '%s' is not supported (nearest, linear and cubic are)", mode);
    }
    if (ox_attr_i(x, "exclude_outside", 0) || ns < 1 || ns > 2) tm = NULL;
    OxDim d[OX_MAX_DIMS];
    double scale[OX_MAX_DIMS];
    memcpy(d, in[0]->dim, sizeof d);
    const char *arg;
    OxConst *sizes = nin > 3 && in[3] ? ox_need_const(x, in[3], "sizes") : NULL;
    OxConst *scales = nin > 2 && in[2] && !sizes ? ox_need_const(x, in[2], "scales") : NULL;
    if (scales && scales->n == 0) scales = NULL;
    if (sizes && sizes->n) {
        if (sizes->n != r) ox_fail(x, "%lld sizes for rank %d", (long long)sizes->n, r);
        for (int k = 0; k < r; k++) {
            d[k] = ox_const_dim(x, sizes, k);
            if (!d[k].sym && d[k].v < 1) ox_fail(x, "size %lld of axis %d", (long long)d[k].v, k);
            if (!ox_dim_eq(d[k], in[0]->dim[k]) && d[k].v != in[0]->dim[k].v && k < 2) tm = NULL;
            /* ONNX: the scale of sizes given is their ratio */
            scale[k] = in[0]->dim[k].v ? (double)d[k].v / (double)in[0]->dim[k].v : 1;
        }
        if (d[0].v == in[0]->dim[0].v) d[0] = in[0]->dim[0];
        if (d[1].v == in[0]->dim[1].v) d[1] = in[0]->dim[1];
        arg = tm ? arena_printf(x->a, "size=%s", ox_dims_text(x, d + 2, ns)) : NULL;
    } else if (scales) {
        if (scales->n != r) ox_fail(x, "%lld scales for rank %d", (long long)scales->n, r);
        char *s = arena_strdup(x->a, "scale_factor=[");
        for (int k = 0; k < r; k++) {
            double f = ox_const_get(x, scales, k);
            if (!(f > 0) || f > 1e9) ox_fail(x, "scale %g", f);
            scale[k] = f;
            /* tf_crop_and_resize: the scale applies to the roi's part */
            double part = roi ? roi[r + k] - roi[k] : 1;
            if (f != 1 || part != 1)
                d[k] = ox_dim_c(ox_f2i(x, floor((double)in[0]->dim[k].v * part * f)));
            if (k < 2 && f != 1) tm = NULL;
            if (k >= 2) s = arena_printf(x->a, "%s%s%s", s, k > 2 ? ", " : "", ox_num(x, f, true));
        }
        arg = arena_printf(x->a, "%s]", s);
    } else {
        ox_fail(x, "Resize needs scales or sizes known at import time");
    }
    /* where torch's coordinates differ from ONNX's: align_corners over
     * the fractional width scale * length (ONNX) rather than the rounded
     * one, and pytorch_half_pixel's length-1 outputs (ONNX reads the start) */
    for (int k = 2; tm && ac && k < r; k++) {
        double w = scale[k] * (double)in[0]->dim[k].v;
        if (!strcmp(ct, "align_corners") && w != floor(w)) tm = NULL;
        if (!strcmp(ct, "pytorch_half_pixel") && d[k].v == 1) tm = NULL;
    }
    if (!tm) {
        ox_resize_taps(x, in[0], out[0], d, scale, mode, ct, nm,
                       ox_attr_f(x, "cubic_coeff_a", -0.75f), ox_attr_i(x, "exclude_outside", 0),
                       roi, ox_attr_f(x, "extrapolation_value", 0));
        return true;
    }
    ox_bind(x, out[0],
            arena_printf(x->a, "interpolate(%s, %s, mode=\"%s\"%s%s)", ox_ref(x, in[0], false), arg,
                         tm, ac ? ", align_corners=" : "", ac ? ac : ""));
    ox_set_shape(out[0], in[0]->dt, r, d);
    return true;
}

static bool clip(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    const char *src, *e;
    if (ox_op_is(n, "Clip")) {
        ox_need_inputs(x, in, nin, 1);
        src = ox_ref(x, in[0], false);
        /* min(max(x, min), max): bounds known at import are clamp's
         * numbers, others (graph inputs, computed) 1-element tensors */
        const char *lo = NULL, *hi = NULL, *tlo = NULL, *thi = NULL;
        for (int k = 1; k <= 2 && k < nin; k++) {
            if (!in[k]) continue;
            const char *sc = ox_scalar(x, in[k]);
            if (!sc && in[k]->ndim > 1)
                ox_fail(x, "Clip's %s has rank %d, expected a scalar", k == 1 ? "min" : "max",
                        in[k]->ndim);
            if (!sc && (in[k]->ndim == 1 && (in[k]->dim[0].sym || in[k]->dim[0].v != 1)))
                ox_fail(x, "Clip's %s must hold one value", k == 1 ? "min" : "max");
            if (!sc && in[k]->dt != in[0]->dt)
                ox_fail(x, "Clip's %s is %s, the input %s (they share one type)",
                        k == 1 ? "min" : "max", dtype_name(in[k]->dt), dtype_name(in[0]->dt));
            *(k == 1 ? &lo : &hi) = sc;
            if (!sc) *(k == 1 ? &tlo : &thi) = ox_ref(x, in[k], false);
        }
        if (x->opset < 11) {
            if (ox_attr(x, "min")) lo = ox_num(x, ox_attr_f(x, "min", 0), true);
            if (ox_attr(x, "max")) hi = ox_num(x, ox_attr_f(x, "max", 0), true);
        }
        bool fl = dtype_is_float(in[0]->dt);
        if (fl && lo && hi && !strcmp(lo, "0.0") && !strcmp(hi, "6.0"))
            e = arena_printf(x->a, "relu6(%s)", src);
        else if (fl && lo && hi && !strcmp(lo, "-1.0") && !strcmp(hi, "1.0"))
            e = arena_printf(x->a, "hardtanh(%s)", src);
        else if (fl && lo && !hi && !strcmp(lo, "0.0"))
            e = arena_printf(x->a, "relu(%s)", src);
        else if (lo || hi)
            e = arena_printf(x->a, "clamp(%s%s%s%s%s)", src, lo ? ", min=" : "", lo ? lo : "",
                             hi ? ", max=" : "", hi ? hi : "");
        else
            e = tlo || thi || out[0]->is_output ? src : NULL; /* no bound: the input */
        if (!e) {
            ox_set_shape(out[0], in[0]->dt, in[0]->ndim, in[0]->dim);
            out[0]->tg = src; /* an alias: no statement */
            return true;
        }
        if (tlo) e = arena_printf(x->a, "maximum(%s, %s)", e, tlo);
        if (thi) e = arena_printf(x->a, "minimum(%s, %s)", e, thi);
    } else if (ox_op_is(n, "PRelu")) {
        ox_need_inputs(x, in, nin, 2);
        src = ox_ref(x, in[0], false);
        e = arena_printf(x->a, "where(%s >= 0, %s, %s * %s)", src, src, src,
                         wref(x, in[1], "weight", false));
    } else {
        return false;
    }
    return ox_bind_shaped(x, out[0], e, in[0]->dt, in[0]->ndim, in[0]->dim);
}

/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: torch's nll_loss
 * and cross_entropy, whose semantics ONNX's follow (class axis 1, weights
 * per class, ignore_index, mean over the weights of the counted targets);
 * SoftmaxCrossEntropyLoss's optional second output is log_softmax. */
static bool loss(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    bool nll = ox_op_is(n, "NegativeLogLikelihoodLoss");
    if (!nll && !ox_op_is(n, "SoftmaxCrossEntropyLoss")) return false;
    ox_need_inputs(x, in, nin, 2);
    if (in[0]->ndim < 2) ox_fail(x, "the input must be [N, C, ...]");
    if (dtype_is_float(in[1]->dt) || in[1]->dt == DT_BOOL)
        ox_fail(x, "the target must be integers");
    const char *red = ox_attr_s(x, "reduction", "mean");
    if (strcmp(red, "mean") && strcmp(red, "sum") && strcmp(red, "none"))
        ox_fail(x, "reduction '%s' (none, sum and mean are ONNX's)", red);
    const char *src = ox_ref(x, in[0], false), *t = ox_ref(x, in[1], false);
    if (in[1]->dt != DT_I64) t = arena_printf(x->a, "%s.to(i64)", t);
    char *e = arena_printf(x->a, "%s(%s, %s", nll ? "nll_loss" : "cross_entropy", src, t);
    if (nin > 2 && in[2])
        e = arena_printf(x->a, "%s, weight=%s", e, wref(x, in[2], "weight", false));
    if (ox_attr(x, "ignore_index"))
        e = arena_printf(x->a, "%s, ignore_index=%lld", e,
                         (long long)ox_attr_i(x, "ignore_index", 0));
    e = arena_printf(x->a, "%s, reduction=\"%s\")", e, red);
    ox_bind(x, out[0], e);
    if (!strcmp(red, "none"))
        ox_set_shape(out[0], in[0]->dt, in[1]->ndim, in[1]->dim);
    else
        ox_set_shape(out[0], in[0]->dt, 0, NULL);
    if (!nll && n->n_output > 1 && out[1]) {
        ox_bind(x, out[1], arena_printf(x->a, "log_softmax(%s, dim=1)", src));
        ox_set_shape(out[1], in[0]->dt, in[0]->ndim, in[0]->dim);
    }
    return true;
}

bool ox_op_nn(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (loss(x, n, in, nin, out)) return true;
    return conv(x, n, in, nin, out) || pool(x, n, in, nin, out) ||
           global_pool(x, n, in, nin, out) || norm(x, n, in, nin, out) ||
           flatten(x, n, in, nin, out) || gemm(x, n, in, nin, out) || softmax(x, n, in, nin, out) ||
           reduce(x, n, in, nin, out) || resize(x, n, in, nin, out) || clip(x, n, in, nin, out);
}
