/* Inference of the norms (batch_norm, group_norm, instance_norm), pad,
 * interpolate and pixel_(un)shuffle, with PyTorch's argument rules. Each
 * is then written in simpler ops by ir/lower_nn.c. */
#include <math.h>
#include <string.h>

#include "ir/infer.h"
#include "ir/lower_nn.h"

static bool float_input(InferCtx *c, const Value *v) {
    const Value *x = IN0(v);
    if (dtype_is_float(x->dtype)) return true;
    return infer_error(c, v->args[0].loc, "%s needs a floating-point input, found %s",
                       op_info(v->op)->name, dtype_name(x->dtype));
}

/* A per-channel tensor: [C], floating, x's dtype (or f32 under a 16-bit x). */
static bool channel_param(InferCtx *c, const Value *v, int i, int64_t ch, const char *what) {
    const Arg *a = ARG(v, i);
    if (a->kind != ARG_TENSOR) return true;
    const Value *t = a->t, *x = IN0(v);
    if (t->ndim != 1 || t->shape[0] != ch)
        return infer_error(c, a->loc, "%s: %s should contain %lld elements, found shape %s",
                           op_info(v->op)->name, what, (long long)ch,
                           shape_str(c->g->arena, t->shape, t->ndim));
    bool ok = t->dtype == x->dtype || (dtype_size(x->dtype) == 2 && t->dtype == DT_F32);
    if (!ok)
        return infer_error(c, a->loc, "%s: %s has dtype %s, expected %s like the input",
                           op_info(v->op)->name, what, dtype_name(t->dtype), dtype_name(x->dtype));
    return true;
}

static bool keep_shape(Value *v) {
    const Value *x = IN0(v);
    v->dtype = x->dtype;
    set_shape(v, x->shape, x->ndim);
    return true;
}

/* A norm's input: floating, with at least min_rank dims (layout names
 * them in the message). */
static bool norm_input(InferCtx *c, Value *v, const char *op, int min_rank, const char *layout) {
    const Value *x = IN0(v);
    if (!float_input(c, v)) return false;
    if (x->ndim < min_rank)
        return infer_error(c, v->args[0].loc,
                           "%s: expected an input of at least %d dimensions (%s), found %s", op,
                           min_rank, layout, shape_str(c->g->arena, x->shape, x->ndim));
    return true;
}

/* batch_norm's and instance_norm's arguments 1-4: running_mean,
 * running_var, weight, bias, each absent or of ch elements. */
static bool stat_params(InferCtx *c, Value *v, int64_t ch) {
    return channel_param(c, v, 1, ch, "running_mean") &&
           channel_param(c, v, 2, ch, "running_var") && channel_param(c, v, 3, ch, "weight") &&
           channel_param(c, v, 4, ch, "bias");
}

bool infer_batch_norm(InferCtx *c, Value *v) {
    const Value *x = IN0(v);
    if (!norm_input(c, v, "batch_norm", 2, "N, C, ...")) return false;
    /* training=true normalises with the batch's statistics and, in a
     * training build, updates the running ones (passes/train_mode.c);
     * without running statistics it has nothing else to use. */
    bool training = ARG(v, 5)->i != 0;
    if (training && (ARG(v, 1)->kind == ARG_TENSOR) != (ARG(v, 2)->kind == ARG_TENSOR))
        return infer_error(c, ARG(v, ARG(v, 1)->kind == ARG_TENSOR ? 2 : 1)->loc,
                           "batch_norm: running_mean and running_var must both be given or "
                           "both be None");
    if (training && ARG(v, 6)->kind == ARG_NUM && !(ARG(v, 6)->f >= 0 && ARG(v, 6)->f <= 1))
        return infer_error(c, ARG(v, 6)->loc,
                           "batch_norm: momentum must be between 0 and 1 (or None for a "
                           "cumulative average), found %g",
                           ARG(v, 6)->f);
    for (int i = 1; i <= 2 && !training; i++)
        if (ARG(v, i)->kind != ARG_TENSOR)
            return infer_error(c, ARG(v, i)->loc,
                               "batch_norm: running_mean and running_var must be defined in "
                               "evaluation mode");
    int64_t ch = x->shape[1];
    if (training && value_numel(x) / (ch ? ch : 1) == 1)
        return infer_error(c, v->args[0].loc,
                           "batch_norm: expected more than 1 value per channel when training, "
                           "found input shape %s",
                           shape_str(c->g->arena, x->shape, x->ndim));
    if (!stat_params(c, v, ch)) return false;
    if (!(ARG(v, 7)->f >= 0))
        return infer_error(c, ARG(v, 7)->loc, "batch_norm: eps must be non-negative");
    return keep_shape(v);
}

bool infer_group_norm(InferCtx *c, Value *v) {
    const Value *x = IN0(v);
    if (!norm_input(c, v, "group_norm", 2, "N, C, ...")) return false;
    int64_t g = ARG(v, 1)->i, ch = x->shape[1];
    if (g <= 0 || ch % g)
        return infer_error(c, ARG(v, 1)->loc,
                           "Expected number of channels in input to be divisible by num_groups, "
                           "but got input of shape %s and num_groups=%lld",
                           shape_str(c->g->arena, x->shape, x->ndim), (long long)g);
    if (!channel_param(c, v, 2, ch, "weight") || !channel_param(c, v, 3, ch, "bias")) return false;
    return keep_shape(v);
}

bool infer_instance_norm(InferCtx *c, Value *v) {
    const Value *x = IN0(v);
    if (!norm_input(c, v, "instance_norm", 3, "N, C, spatial...")) return false;
    int64_t ch = x->shape[1];
    if (!ARG(v, 5)->i && (ARG(v, 1)->kind != ARG_TENSOR || ARG(v, 2)->kind != ARG_TENSOR))
        return infer_error(c, ARG(v, 5)->loc,
                           "Expected running_mean and running_var to be defined when "
                           "use_input_stats is false");
    if (!stat_params(c, v, ch)) return false;
    return keep_shape(v);
}

bool infer_pad(InferCtx *c, Value *v) {
    const Value *x = IN0(v);
    const Arg *pa = ARG(v, 1), *ma = ARG(v, 2), *va = ARG(v, 3);
    int n = pa->kind == ARG_INT ? 1 : pa->n;
    const int64_t *p = pa->kind == ARG_INT ? &pa->i : pa->ints;
    if (n % 2) return infer_error(c, pa->loc, "Padding length must be divisible by 2");
    if (n / 2 > x->ndim)
        return infer_error(c, pa->loc, "Padding length too large: %d pads for %d dimensions", n,
                           x->ndim);
    const char *m = ma->s;
    bool constant = !strcmp(m, "constant");
    if (!constant && strcmp(m, "reflect") && strcmp(m, "replicate") && strcmp(m, "circular"))
        return infer_error(c, ma->loc,
                           "pad: mode must be \"constant\", \"reflect\", \"replicate\" or "
                           "\"circular\", found \"%s\"",
                           m);
    if (!constant && va->kind != ARG_ABSENT && va->f != 0)
        return infer_error(c, va->loc, "Padding mode \"%s\" doesn't take in value argument", m);
    if (!constant) {
        /* PyTorch pads the last 1, 2 or 3 dims of a batched or unbatched input. */
        if (n / 2 > 3 || x->ndim < n / 2 + 1 || x->ndim > n / 2 + 2)
            return infer_error(c, pa->loc,
                               "pad: mode \"%s\" pads the last 1, 2 or 3 dimensions of an input "
                               "with one or two more (N, C); found %d pads for an input of "
                               "shape %s",
                               m, n, shape_str(c->g->arena, x->shape, x->ndim));
        if (!dtype_is_float(x->dtype))
            return infer_error(c, v->args[0].loc, "pad: mode \"%s\" needs a floating-point input",
                               m);
    }
    v->dtype = x->dtype;
    set_shape(v, x->shape, x->ndim);
    for (int i = 0; i < n / 2; i++) {
        int d = x->ndim - 1 - i;
        int64_t l = p[2 * i], r = p[2 * i + 1], size = x->shape[d];
        if (!strcmp(m, "reflect") && (l >= size || r >= size || l < 0 || r < 0))
            return infer_error(c, pa->loc,
                               "Padding size should be less than the corresponding input "
                               "dimension, but got: padding (%lld, %lld) at dimension %d of "
                               "input %s",
                               (long long)l, (long long)r, d,
                               shape_str(c->g->arena, x->shape, x->ndim));
        if (!strcmp(m, "circular") && (l > size || r > size || l < 0 || r < 0))
            return infer_error(c, pa->loc,
                               "Padding value causes wrapping around more than once: padding "
                               "(%lld, %lld) at dimension %d of size %lld",
                               (long long)l, (long long)r, d, (long long)size);
        if (!strcmp(m, "replicate") && (l < 0 || r < 0 || size == 0))
            return infer_error(c, pa->loc,
                               "pad: replicate padding needs non-negative pads and a non-empty "
                               "dimension (dimension %d)",
                               d);
        v->shape[d] = size + l + r;
        if (v->shape[d] < 0)
            return infer_error(c, pa->loc,
                               "The input size %lld, plus negative padding %lld and %lld resulted "
                               "in a negative output size, which is invalid. Check dimension %d "
                               "of your input.",
                               (long long)size, (long long)l, (long long)r, d);
    }
    return true;
}

bool interpolate_sizes(const Value *v, int64_t *out, double *scale) {
    const Value *x = IN0(v);
    int nd = x->ndim - 2;
    const Arg *sa = ARG(v, 1), *fa = ARG(v, 2), *ra = ARG(v, 5);
    for (int i = 0; i < nd; i++) {
        int64_t in = x->shape[2 + i];
        scale[i] = 0;
        if (sa->kind != ARG_ABSENT) {
            int n = sa->kind == ARG_INT ? 1 : sa->n;
            out[i] = sa->kind == ARG_INT ? sa->i : sa->ints[n == 1 ? 0 : i];
            continue;
        }
        double f = fa->kind == ARG_INT ? (double)fa->i : fa->data[fa->n == 1 ? 0 : i];
        out[i] = (int64_t)floor((double)in * f);
        /* recompute_scale_factor=true: the indices use in / out. */
        if (!(ra->kind == ARG_BOOL && ra->i)) scale[i] = f;
    }
    return true;
}

bool infer_interpolate(InferCtx *c, Value *v) {
    const Value *x = IN0(v);
    /* Arguments: size, scale_factor, mode, align_corners, recompute_scale_factor, antialias. */
    const Arg *sa = ARG(v, 1), *fa = ARG(v, 2), *ma = ARG(v, 3);
    if (!float_input(c, v)) return false;
    if (x->ndim != 3 && x->ndim != 4)
        return infer_error(c, v->args[0].loc,
                           "interpolate: expected a 3-d (N, C, L) or 4-d (N, C, H, W) input, "
                           "found %s",
                           shape_str(c->g->arena, x->shape, x->ndim));
    int nd = x->ndim - 2;
    const char *m = ma->s;
    bool linear = !strcmp(m, "linear"), bilinear = !strcmp(m, "bilinear");
    if (strcmp(m, "nearest") && strcmp(m, "nearest-exact") && !linear && !bilinear)
        return infer_error(c, ma->loc,
                           "interpolate: mode must be \"nearest\", \"nearest-exact\", \"linear\" "
                           "or \"bilinear\", found \"%s\"",
                           m);
    if ((linear && nd != 1) || (bilinear && nd != 2))
        return infer_error(c, ma->loc, "interpolate: mode \"%s\" needs a %s input", m,
                           linear ? "3-d" : "4-d");
    if (ARG(v, 6)->i)
        return infer_error(c, ARG(v, 6)->loc, "interpolate: antialias=true is not supported");
    if ((sa->kind == ARG_ABSENT) == (fa->kind == ARG_ABSENT))
        return infer_error(c, v->loc, "only one of size or scale_factor should be defined");
    if (sa->kind != ARG_ABSENT) {
        int n = sa->kind == ARG_INT ? 1 : sa->n;
        if (n != 1 && n != nd)
            return infer_error(c, sa->loc,
                               "Input and output must have the same number of spatial "
                               "dimensions, but got input with spatial dimensions of %d and "
                               "output size of %d",
                               nd, n);
        if (ARG(v, 5)->kind == ARG_BOOL && ARG(v, 5)->i)
            return infer_error(c, ARG(v, 5)->loc,
                               "recompute_scale_factor is not meaningful with an explicit size");
    } else {
        if (fa->kind != ARG_INT &&
            (fa->kind != ARG_ANY_LIST || (fa->n != 1 && fa->n != nd) || fa->data_ndim > 1))
            return infer_error(c, fa->loc,
                               "interpolate: scale_factor must be a number or a list of %d "
                               "numbers",
                               nd);
        for (int i = 0; fa->kind == ARG_ANY_LIST && i < fa->n; i++)
            if (!(fa->data[i] > 0))
                return infer_error(c, fa->loc, "interpolate: scale_factor must be positive");
        if (fa->kind == ARG_INT && fa->i <= 0)
            return infer_error(c, fa->loc, "interpolate: scale_factor must be positive");
    }
    const Arg *corners = ARG(v, 4);
    if (corners->kind == ARG_BOOL && !linear && !bilinear)
        return infer_error(c, corners->loc,
                           "align_corners option can only be set with the interpolating modes: "
                           "linear | bilinear | bicubic | trilinear");
    int64_t out[2];
    double scale[2];
    interpolate_sizes(v, out, scale);
    v->dtype = x->dtype;
    set_shape(v, x->shape, x->ndim);
    for (int i = 0; i < nd; i++) {
        if (out[i] <= 0)
            return infer_error(c, v->loc,
                               "Input and output sizes should be greater than 0, but got input "
                               "(%s) and output size %lld",
                               shape_str(c->g->arena, x->shape + 2, nd), (long long)out[i]);
        v->shape[2 + i] = out[i];
    }
    return true;
}

bool infer_pixel_shuffle(InferCtx *c, Value *v) {
    const Value *x = IN0(v);
    bool up = v->op == OP_PIXEL_SHUFFLE;
    int64_t r = ARG(v, 1)->i;
    const char *op = op_info(v->op)->name;
    if (x->ndim < 3)
        return infer_error(c, v->args[0].loc,
                           "%s expects input to have at least 3 dimensions, but got input with %d "
                           "dimension(s)",
                           op, x->ndim);
    if (r <= 0)
        return infer_error(c, ARG(v, 1)->loc,
                           "%s expects its %s factor to be positive, but got %lld", op,
                           up ? "upscale" : "downscale", (long long)r);
    if (x->ndim + 3 > TG_MAX_DIMS)
        return infer_error(c, v->loc, "at most %d dimensions are supported", TG_MAX_DIMS - 3);
    int n = x->ndim;
    v->dtype = x->dtype;
    set_shape(v, x->shape, n);
    if (up) {
        if (x->shape[n - 3] % (r * r))
            return infer_error(c, v->args[0].loc,
                               "pixel_shuffle expects its input's 'channel' dimension to be "
                               "divisible by the square of upscale_factor, but input.size(-3)=%lld "
                               "is not divisible by %lld",
                               (long long)x->shape[n - 3], (long long)(r * r));
        v->shape[n - 3] /= r * r;
        v->shape[n - 2] *= r;
        v->shape[n - 1] *= r;
    } else {
        for (int d = n - 2; d < n; d++)
            if (x->shape[d] % r)
                return infer_error(c, v->args[0].loc,
                                   "pixel_unshuffle expects %s to be divisible by "
                                   "downscale_factor, but input.size(%d)=%lld is not divisible by "
                                   "%lld",
                                   d == n - 2 ? "height" : "width", d - n, (long long)x->shape[d],
                                   (long long)r);
        v->shape[n - 3] *= r * r;
        v->shape[n - 2] /= r;
        v->shape[n - 1] /= r;
    }
    return true;
}
