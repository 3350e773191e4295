/* Inference of convolutions and pools, with PyTorch's argument rules and
 * messages (ATen's ConvUtils.h, Pool.h), and the geometry (ir/conv.h) the
 * lowering and the code generators read back. */
#include <string.h>

#include "ir/conv.h"
#include "ir/infer.h"

static bool is_transposed(OpCode op) {
    return op == OP_CONV_TRANSPOSE1D || op == OP_CONV_TRANSPOSE2D;
}
static int conv_nd(OpCode op) {
    return op == OP_CONV1D || op == OP_CONV_TRANSPOSE1D ? 1 : 2;
}

bool conv_int_tuple(const Arg *a, int nd, int64_t *out) {
    if (a->kind == ARG_INT) {
        for (int i = 0; i < nd; i++)
            out[i] = a->i;
        return true;
    }
    if (a->kind != ARG_INTS) return false;
    if (a->n != 1 && a->n != nd) return false;
    for (int i = 0; i < nd; i++)
        out[i] = a->ints[a->n == 1 ? 0 : i];
    return true;
}

/* Reads an int-or-tuple into the 2-d layout: a 1-d op's value goes to [1]
 * (width) and [0] gets fill. */
static bool tuple2(InferCtx *c, const Arg *a, int nd, int64_t fill, int64_t out[2],
                   const char *what, const char *op) {
    int64_t t[2];
    if (!conv_int_tuple(a, nd, t)) {
        if (c)
            infer_error(c, a->loc, "%s: %s must be an integer or a list of %d integers", op, what,
                        nd);
        return false;
    }
    out[0] = nd == 1 ? fill : t[0];
    out[1] = nd == 1 ? t[0] : t[1];
    return true;
}

static const char *dims_str(char *buf, size_t n, const int64_t *v, int nd) {
    if (nd == 1)
        snprintf(buf, n, "%lld", (long long)v[1]);
    else
        snprintf(buf, n, "%lld x %lld", (long long)v[0], (long long)v[1]);
    return buf;
}

/* Fills g from v's arguments; with c, reports what PyTorch rejects. */
static bool conv_check(InferCtx *c, const Value *v, ConvGeom *g) {
    const char *op = op_info(v->op)->name;
    const Value *x = IN0(v), *w = v->args[1].t;
    memset(g, 0, sizeof *g);
    g->transposed = is_transposed(v->op);
    g->nd = conv_nd(v->op);
    int nd = g->nd;
    if (x->ndim != nd + 1 && x->ndim != nd + 2) {
        if (c)
            infer_error(c, v->args[0].loc,
                        "Expected %dD (unbatched) or %dD (batched) input to %s, but got input of "
                        "size: %s",
                        nd + 1, nd + 2, op, shape_str(c->g->arena, x->shape, x->ndim));
        return false;
    }
    if (w->ndim != nd + 2) {
        if (c)
            infer_error(c, v->args[1].loc,
                        "%s: weight must have %d dimensions (%s, kernel size), found %s", op,
                        nd + 2,
                        g->transposed ? "in channels, out channels / groups"
                                      : "out channels, in channels / groups",
                        shape_str(c->g->arena, w->shape, w->ndim));
        return false;
    }
    if (c && (!dtype_is_float(x->dtype) || x->dtype != w->dtype)) {
        if (!dtype_is_float(x->dtype))
            return infer_error(c, v->args[0].loc, "%s needs a floating-point input, found %s", op,
                               dtype_name(x->dtype));
        return infer_error(c, v->args[1].loc,
                           "Input type (%s) and weight type (%s) should be the same",
                           dtype_name(x->dtype), dtype_name(w->dtype));
    }
    g->batched = x->ndim == nd + 2;
    int b = g->batched ? 1 : 0;
    g->n = g->batched ? x->shape[0] : 1;
    g->cin = x->shape[b];
    g->in[0] = nd == 1 ? 1 : x->shape[b + 1];
    g->in[1] = x->shape[x->ndim - 1];
    g->k[0] = nd == 1 ? 1 : w->shape[2];
    g->k[1] = w->shape[w->ndim - 1];
    const Arg *groups = &v->args[6]; /* both signatures put groups seventh */
    g->groups = groups->i;
    if (g->groups <= 0) {
        if (c) infer_error(c, groups->loc, "non-positive groups is not supported");
        return false;
    }
    const Arg *sa = &v->args[3];
    const Arg *da = &v->args[g->transposed ? 7 : 5];
    if (!tuple2(c, sa, nd, 1, g->stride, "stride", op) ||
        !tuple2(c, da, nd, 1, g->dilation, "dilation", op))
        return false;
    for (int i = 0; i < 2; i++) {
        if (g->stride[i] <= 0) {
            if (c) infer_error(c, sa->loc, "non-positive stride is not supported");
            return false;
        }
        if (g->dilation[i] <= 0) {
            if (c) infer_error(c, da->loc, "dilation should be greater than zero");
            return false;
        }
    }
    const Arg *pa = &v->args[4];
    if (pa->kind == ARG_STR) {
        bool same = !strcmp(pa->s, "same");
        if (!same && strcmp(pa->s, "valid")) {
            if (c)
                infer_error(c, pa->loc,
                            "Invalid padding string '%s', should be one of \"valid\" or \"same\"",
                            pa->s);
            return false;
        }
        if (same && (g->stride[0] != 1 || g->stride[1] != 1)) {
            if (c)
                infer_error(c, pa->loc, "padding='same' is not supported for strided convolutions");
            return false;
        }
        for (int i = 0; i < 2; i++) {
            int64_t total = same ? g->dilation[i] * (g->k[i] - 1) : 0;
            g->pad_l[i] = total / 2; /* PyTorch puts the odd one on the right */
            g->pad_r[i] = total - total / 2;
        }
    } else {
        if (!tuple2(c, pa, nd, 0, g->pad_l, "padding", op)) return false;
        for (int i = 0; i < 2; i++) {
            if (g->pad_l[i] < 0) {
                if (c) infer_error(c, pa->loc, "negative padding is not supported");
                return false;
            }
            g->pad_r[i] = g->pad_l[i];
        }
    }
    if (g->transposed) {
        const Arg *oa = &v->args[5];
        if (!tuple2(c, oa, nd, 0, g->out_pad, "output_padding", op)) return false;
        for (int i = 0; i < 2; i++)
            if (g->out_pad[i] < 0 ||
                (g->out_pad[i] >= g->stride[i] && g->out_pad[i] >= g->dilation[i])) {
                if (c)
                    infer_error(c, oa->loc,
                                "output padding must be smaller than either stride or dilation, "
                                "but got output_padding: %lld, stride: %lld, dilation: %lld",
                                (long long)g->out_pad[i], (long long)g->stride[i],
                                (long long)g->dilation[i]);
                return false;
            }
    }
    /* Channels. */
    char b1[64], b2[64];
    if (!g->transposed) {
        g->cout = w->shape[0];
        if (g->cout % g->groups) {
            if (c)
                infer_error(c, groups->loc,
                            "Given groups=%lld, expected weight to be divisible by %lld at "
                            "dimension 0, but got weight of size %s instead",
                            (long long)g->groups, (long long)g->groups,
                            shape_str(c->g->arena, w->shape, w->ndim));
            return false;
        }
        if (w->shape[1] * g->groups != g->cin) {
            if (c)
                infer_error(c, v->args[0].loc,
                            "Given groups=%lld, weight of size %s, expected input%s to have %lld "
                            "channels, but got %lld channels instead",
                            (long long)g->groups, shape_str(c->g->arena, w->shape, w->ndim),
                            shape_str(c->g->arena, x->shape, x->ndim),
                            (long long)(w->shape[1] * g->groups), (long long)g->cin);
            return false;
        }
    } else {
        if (w->shape[0] != g->cin) {
            if (c)
                infer_error(c, v->args[0].loc,
                            "Given transposed=1, weight of size %s, expected input%s to have %lld "
                            "channels, but got %lld channels instead",
                            shape_str(c->g->arena, w->shape, w->ndim),
                            shape_str(c->g->arena, x->shape, x->ndim), (long long)w->shape[0],
                            (long long)g->cin);
            return false;
        }
        if (g->cin % g->groups) {
            if (c)
                infer_error(c, groups->loc,
                            "Given groups=%lld, expected weight to be divisible by %lld at "
                            "dimension 0, but got weight of size %s instead",
                            (long long)g->groups, (long long)g->groups,
                            shape_str(c->g->arena, w->shape, w->ndim));
            return false;
        }
        g->cout = w->shape[1] * g->groups;
    }
    /* Bias. */
    const Arg *ba = &v->args[2];
    g->has_bias = ba->kind == ARG_TENSOR;
    if (g->has_bias && c) {
        const Value *bv = ba->t;
        if (bv->ndim != 1 || bv->shape[0] != g->cout)
            return infer_error(c, ba->loc,
                               "Given weight of size %s, expected bias to be 1-dimensional with "
                               "%lld elements, but got bias of size %s instead",
                               shape_str(c->g->arena, w->shape, w->ndim), (long long)g->cout,
                               shape_str(c->g->arena, bv->shape, bv->ndim));
        if (bv->dtype != x->dtype)
            return infer_error(c, ba->loc, "Input type (%s) and bias type (%s) should be the same",
                               dtype_name(x->dtype), dtype_name(bv->dtype));
    }
    /* Output size. */
    for (int i = 0; i < 2; i++) {
        int64_t ek = g->dilation[i] * (g->k[i] - 1) + 1;
        if (!g->transposed) {
            int64_t padded = g->in[i] + g->pad_l[i] + g->pad_r[i];
            if (padded < ek) {
                if (c) {
                    int64_t pin[2] = {g->in[0] + g->pad_l[0] + g->pad_r[0],
                                      g->in[1] + g->pad_l[1] + g->pad_r[1]};
                    int64_t kk[2] = {g->dilation[0] * (g->k[0] - 1) + 1,
                                     g->dilation[1] * (g->k[1] - 1) + 1};
                    infer_error(c, v->args[1].loc,
                                "Calculated padded input size per channel: (%s). Kernel size: "
                                "(%s). Kernel size can't be greater than actual input size",
                                dims_str(b1, sizeof b1, pin, nd), dims_str(b2, sizeof b2, kk, nd));
                }
                return false;
            }
            g->out[i] = (padded - ek) / g->stride[i] + 1;
        } else {
            g->out[i] =
                (g->in[i] - 1) * g->stride[i] - g->pad_l[i] - g->pad_r[i] + ek + g->out_pad[i];
            if (g->out[i] <= 0) {
                if (c)
                    infer_error(c, v->args[4].loc,
                                "%s: the output would have size %lld along a spatial dimension "
                                "(input %lld, stride %lld, padding %lld, kernel %lld)",
                                op, (long long)g->out[i], (long long)g->in[i],
                                (long long)g->stride[i], (long long)g->pad_l[i],
                                (long long)g->k[i]);
                return false;
            }
        }
    }
    return true;
}

void conv_geometry(const Value *v, ConvGeom *g) {
    bool ok = conv_check(NULL, v, g);
    TGC_ASSERT(ok);
}

bool infer_conv(InferCtx *c, Value *v) {
    ConvGeom g;
    if (!conv_check(c, v, &g)) return false;
    const Value *x = IN0(v);
    v->dtype = x->dtype;
    v->ndim = x->ndim;
    int b = g.batched ? 1 : 0;
    if (g.batched) v->shape[0] = g.n;
    v->shape[b] = g.cout;
    if (g.nd == 2) v->shape[b + 1] = g.out[0];
    v->shape[v->ndim - 1] = g.out[1];
    if (shape_too_large(v->shape, v->ndim))
        return infer_error(c, v->loc, "%s: the result is too large", op_info(v->op)->name);
    return true;
}

/* ---- pools ---------------------------------------------------------------- */

static bool pool_is_max(OpCode op) {
    return op == OP_MAX_POOL1D || op == OP_MAX_POOL2D;
}
static int pool_nd(OpCode op) {
    return op == OP_MAX_POOL1D || op == OP_AVG_POOL1D || op == OP_ADAPTIVE_AVG_POOL1D ||
                   op == OP_ADAPTIVE_MAX_POOL1D
               ? 1
               : 2;
}

/* ATen's pooling_output_shape. */
static int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil,
                        bool ceil_mode) {
    int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
    int64_t q = num >= 0 ? num / stride : -((-num + stride - 1) / stride);
    int64_t out = q + 1;
    if (ceil_mode && (out - 1) * stride >= in + pad) out--;
    return out;
}

static bool pool_check(InferCtx *c, const Value *v, PoolGeom *g) {
    const char *op = op_info(v->op)->name;
    const Value *x = IN0(v);
    memset(g, 0, sizeof *g);
    g->nd = pool_nd(v->op);
    g->is_max = pool_is_max(v->op);
    int nd = g->nd;
    if (x->ndim != nd + 1 && x->ndim != nd + 2) {
        if (c)
            infer_error(c, v->args[0].loc,
                        "%s: Expected %dD or %dD input tensor, but got input of size %s", op,
                        nd + 1, nd + 2, shape_str(c->g->arena, x->shape, x->ndim));
        return false;
    }
    if (c && !dtype_is_float(x->dtype))
        return infer_error(c, v->args[0].loc, "%s needs a floating-point input, found %s", op,
                           dtype_name(x->dtype));
    g->batched = x->ndim == nd + 2;
    g->in[0] = nd == 1 ? 1 : x->shape[x->ndim - 2];
    g->in[1] = x->shape[x->ndim - 1];
    const Arg *ka = &v->args[1], *sa = &v->args[2], *pa = &v->args[3];
    if (!tuple2(c, ka, nd, 1, g->k, "kernel_size", op)) return false;
    if (sa->kind == ARG_ABSENT || (sa->kind == ARG_INTS && sa->n == 0)) {
        g->stride[0] = g->k[0], g->stride[1] = g->k[1];
    } else if (!tuple2(c, sa, nd, 1, g->stride, "stride", op)) {
        return false;
    }
    if (!tuple2(c, pa, nd, 0, g->pad, "padding", op)) return false;
    g->dilation[0] = g->dilation[1] = 1;
    if (g->is_max) {
        if (!tuple2(c, &v->args[4], nd, 1, g->dilation, "dilation", op)) return false;
        g->ceil_mode = v->args[5].i;
        if (v->args[6].i) {
            if (c)
                infer_error(c, v->args[6].loc,
                            "%s: return_indices=true is not supported (the indices are a second "
                            "result; use argmax over the windows instead)",
                            op);
            return false;
        }
    } else {
        g->ceil_mode = v->args[4].i;
        g->count_include_pad = v->args[5].i;
        if (v->op == OP_AVG_POOL2D && v->args[6].kind == ARG_INT) {
            g->divisor_override = v->args[6].i;
            if (g->divisor_override == 0) {
                if (c) infer_error(c, v->args[6].loc, "divisor must be not zero");
                return false;
            }
        }
    }
    for (int i = 0; i < 2; i++) {
        if (g->k[i] <= 0) {
            if (c)
                infer_error(c, ka->loc, "kernel size should be greater than zero, but got %lld",
                            (long long)g->k[i]);
            return false;
        }
        if (g->stride[i] <= 0) {
            if (c)
                infer_error(c, sa->loc, "stride should be greater than zero, but got %lld",
                            (long long)g->stride[i]);
            return false;
        }
        if (g->dilation[i] <= 0) {
            if (c)
                infer_error(c, v->args[4].loc, "dilation should be greater than zero, but got %lld",
                            (long long)g->dilation[i]);
            return false;
        }
        if (g->pad[i] < 0 || g->pad[i] > g->k[i] / 2) {
            if (c)
                infer_error(c, pa->loc,
                            "pad should be at most half of kernel size, but got pad=%lld and "
                            "kernel_size=%lld",
                            (long long)g->pad[i], (long long)g->k[i]);
            return false;
        }
        g->out[i] =
            pool_out(g->in[i], g->k[i], g->pad[i], g->stride[i], g->dilation[i], g->ceil_mode);
        if (g->out[i] <= 0) {
            if (c) {
                char b1[64], b2[64];
                infer_error(
                    c, v->args[0].loc,
                    "Given input size: (%lldx%s). Calculated output size: (%lldx%s). "
                    "Output size is too small",
                    (long long)x->shape[x->ndim - nd - 1], dims_str(b1, sizeof b1, g->in, nd),
                    (long long)x->shape[x->ndim - nd - 1], dims_str(b2, sizeof b2, g->out, nd));
            }
            return false;
        }
    }
    return true;
}

void pool_geometry(const Value *v, PoolGeom *g) {
    bool ok = pool_check(NULL, v, g);
    TGC_ASSERT(ok);
}

bool infer_pool(InferCtx *c, Value *v) {
    PoolGeom g;
    if (!pool_check(c, v, &g)) return false;
    const Value *x = IN0(v);
    v->dtype = x->dtype;
    set_shape(v, x->shape, x->ndim);
    if (g.nd == 2) v->shape[v->ndim - 2] = g.out[0];
    v->shape[v->ndim - 1] = g.out[1];
    return true;
}

bool infer_adaptive_pool(InferCtx *c, Value *v) {
    const char *op = op_info(v->op)->name;
    const Value *x = IN0(v);
    int nd = pool_nd(v->op);
    if (x->ndim != nd + 1 && x->ndim != nd + 2)
        return infer_error(c, v->args[0].loc,
                           "%s: Expected %dD or %dD tensor, but got input of size %s", op, nd + 1,
                           nd + 2, shape_str(c->g->arena, x->shape, x->ndim));
    if (!dtype_is_float(x->dtype))
        return infer_error(c, v->args[0].loc, "%s needs a floating-point input, found %s", op,
                           dtype_name(x->dtype));
    int64_t out[2];
    const Arg *oa = &v->args[1];
    if (!conv_int_tuple(oa, nd, out))
        return infer_error(c, oa->loc, "%s: output_size must have %d element%s", op, nd,
                           nd == 1 ? "" : "s");
    for (int i = 0; i < x->ndim; i++)
        if (x->shape[i] == 0 && i >= x->ndim - nd - 1)
            return infer_error(c, v->args[0].loc,
                               "%s: Expected input to have non-zero size for non-batch "
                               "dimensions, but input has sizes %s with dimension %d being empty",
                               op, shape_str(c->g->arena, x->shape, x->ndim), i);
    if (v->nargs > 2 && v->args[2].kind == ARG_BOOL && v->args[2].i)
        return infer_error(c, v->args[2].loc, "%s: return_indices=true is not supported", op);
    v->dtype = x->dtype;
    set_shape(v, x->shape, x->ndim);
    for (int i = 0; i < nd; i++) {
        if (out[i] <= 0)
            return infer_error(c, oa->loc, "%s: output_size must be positive, found %lld", op,
                               (long long)out[i]);
        v->shape[x->ndim - nd + i] = out[i];
    }
    return true;
}

/* ---- Tensor.unfold: windows of a dimension, as a view ----------------------- */

bool infer_windows(InferCtx *c, Value *v) {
    const Value *x = IN0(v);
    int64_t d = v->args[1].i, size = v->args[2].i, step = v->args[3].i;
    if (!norm_dim(c, v->args[1].loc, &d, x->ndim)) return false;
    v->args[1].i = d;
    int64_t have = x->ndim ? x->shape[d] : 1;
    if (size < 0 || size > have || step <= 0 || x->ndim >= TG_MAX_DIMS)
        return infer_error(c, v->loc,
                           "unfold: size %lld and step %lld do not fit dimension %lld of size %lld",
                           (long long)size, (long long)step, (long long)d, (long long)have);
    v->dtype = x->dtype;
    set_shape(v, x->shape, x->ndim);
    v->shape[d] = (have - size) / step + 1;
    v->shape[v->ndim++] = size;
    return true;
}

bool layout_windows(Value *v) {
    const Value *x = IN0(v);
    int64_t d = v->args[1].i, step = v->args[3].i;
    for (int i = 0; i < x->ndim; i++)
        v->strides[i] = x->strides[i];
    v->strides[d] = x->strides[d] * step;
    v->strides[x->ndim] = x->strides[d];
    v->offset = x->offset;
    return true;
}
