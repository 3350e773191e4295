/* How a convolution of a CUDA program maps onto cuDNN's legacy API, as
 * pure functions of its descriptor: the compiler plans the arena and
 * writes the epilogue kernel with them, the context checks and runs the
 * same plan (docs/runtime.md, "Convolutions: cuDNN").
 *
 * cuDNN takes one padding per dimension for both sides, so a "same"
 * padding with an odd total (pad_l != pad_r, stride 1) is computed with
 * the larger one on both sides into a staging tensor whose window the
 * epilogue copies. A transposed convolution is cudnnConvolutionBackwardData
 * of the forward convolution that maps its output back onto its input;
 * an output_padding of at least the stride (PyTorch allows it below the
 * dilation) breaks that mapping, so the rows it adds, which no input
 * reaches, are left to the epilogue (0, plus the bias). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"
#include "rt_internal.h"

#define MIB ((size_t)1 << 20)
#define WS_MIN (8 * MIB)
#define WS_MAX (256 * MIB)

static size_t up256(size_t n) {
    return (n + 255) / 256 * 256;
}

static bool dtype_ok(int32_t t) {
    return t == RT_F32 || t == RT_F64 || t == RT_F16 || t == RT_BF16;
}

/* a * b * c * d, or -1 past INT64_MAX / 16 (all >= 0). */
static int64_t prod4(int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t v[4] = {a, b, c, d}, r = 1;
    for (int i = 0; i < 4; i++) {
        if (v[i] < 0) return -1;
        if (v[i] && r > INT64_MAX / 16 / v[i]) return -1;
        r *= v[i];
    }
    return r;
}

static bool shape_ok(const RtConvDesc *d) {
    if (d->n < 0 || d->cin < 1 || d->cout < 1 || d->groups < 1 || d->cin % d->groups ||
        d->cout % d->groups)
        return false;
    for (int i = 0; i < 2; i++)
        if (d->in[i] < 0 || d->out[i] < 0 || d->k[i] < 1 || d->stride[i] < 1 ||
            d->dilation[i] < 1 || d->pad_l[i] < 0 || d->pad_r[i] < 0)
            return false;
    return true;
}

static bool empty_out(const RtConvDesc *d) {
    return d->n == 0 || d->out[0] == 0 || d->out[1] == 0;
}

bool rt_cuda_conv_geom(const RtConvDesc *d, RtCudaConvGeom *g, char *why, size_t cap) {
    memset(g, 0, sizeof *g);
    if (!dtype_ok(d->dtype)) {
        snprintf(why, cap, "cuDNN convolutions take f32, f64, f16 and bf16 only");
        return false;
    }
    if (!shape_ok(d)) {
        snprintf(why, cap, "malformed convolution descriptor");
        return false;
    }
    if (empty_out(d)) return true; /* nothing to compute */
    if (d->in[0] == 0 || d->in[1] == 0) {
        snprintf(why, cap, "a convolution of an empty input into a non-empty output");
        return false;
    }
    int64_t es = (int64_t)rt_dtype_size((RtDType)d->dtype);
    for (int i = 0; i < 2; i++) {
        int64_t s = d->stride[i], eff = d->dilation[i] * (d->k[i] - 1) + 1;
        if (!d->transposed) {
            int64_t l = d->pad_l[i], r = d->pad_r[i], p = l > r ? l : r;
            g->pad[i] = p;
            g->raw[i] = d->out[i];
            if (l == r) {
                if (d->in[i] + 2 * p < eff || (d->in[i] + 2 * p - eff) / s + 1 != d->out[i]) {
                    snprintf(why, cap, "malformed convolution descriptor (output size)");
                    return false;
                }
                continue;
            }
            /* dst's row o reads from o * s - l, raw's row o' from o' * s - p */
            if ((p - l) % s) {
                snprintf(why, cap,
                         "cuDNN has no asymmetric padding, and padding (%lld, %lld) with "
                         "stride %lld cannot be computed from a symmetric one",
                         (long long)l, (long long)r, (long long)s);
                return false;
            }
            g->shift[i] = (p - l) / s;
            g->raw[i] = (d->in[i] + 2 * p - eff) / s + 1;
            g->staged = 1;
            if (g->raw[i] < d->out[i] + g->shift[i]) {
                snprintf(why, cap, "malformed convolution descriptor (output size)");
                return false;
            }
        } else {
            if (d->pad_l[i] != d->pad_r[i]) {
                snprintf(why, cap, "a transposed convolution with asymmetric padding");
                return false;
            }
            int64_t p = d->pad_l[i], lower = (d->in[i] - 1) * s - 2 * p + eff;
            g->pad[i] = p;
            g->raw[i] = d->out[i];
            if (d->out[i] < lower) {
                snprintf(why, cap, "malformed convolution descriptor (output size)");
                return false;
            }
            if (d->out[i] - lower < s) continue;
            g->raw[i] = lower + s - 1; /* the largest output cuDNN maps back onto in */
            g->staged = 1;
            if (g->raw[i] < 1) {
                snprintf(why, cap,
                         "a transposed convolution whose padding removes every row "
                         "an input reaches");
                return false;
            }
        }
    }
    /* cuDNN's 4-d descriptors take int sizes and strides. */
    int64_t xs = prod4(d->n, d->cin, d->in[0], d->in[1]);
    int64_t ys = prod4(d->n, d->cout, d->out[0], d->out[1]);
    int64_t rs = prod4(d->n, d->cout, g->raw[0], g->raw[1]);
    int64_t ws = prod4(d->cout, d->cin / d->groups, d->k[0], d->k[1]);
    if (xs < 0 || ys < 0 || rs < 0 || ws < 0 || xs > INT_MAX || ys > INT_MAX || rs > INT_MAX ||
        ws > INT_MAX) {
        snprintf(why, cap,
                 "a convolution with a tensor of more than 2^31 - 1 elements (cuDNN's "
                 "limit for these descriptors)");
        return false;
    }
    for (int i = 0; i < 4; i++)
        if (d->src_strides[i] < 0 || d->src_strides[i] > INT_MAX || d->dst_strides[i] < 0 ||
            d->dst_strides[i] > INT_MAX) {
            snprintf(why, cap, "a convolution operand with negative or very large strides");
            return false;
        }
    if (g->staged) g->stage_bytes = (int64_t)up256((size_t)(rs * es));
    g->epilogue = g->staged || d->bias.slot >= 0 || d->has_bn || d->npost > 0;
    return true;
}

size_t rt_cuda_conv_workspace_cap(const RtConvDesc *d) {
    if (!dtype_ok(d->dtype) || !shape_ok(d)) return 0;
    int64_t es = (int64_t)rt_dtype_size((RtDType)d->dtype);
    int64_t xs = prod4(d->n, d->cin, d->in[0], d->in[1]);
    int64_t ys = prod4(d->n, d->cout, d->out[0], d->out[1]);
    if (xs < 0 || ys < 0) return WS_MAX;
    size_t b = (size_t)((xs + ys) * es);
    return up256(b < WS_MIN ? WS_MIN : b > WS_MAX ? WS_MAX : b);
}

size_t rt_cuda_conv_scratch_bytes(const RtConvDesc *d) {
    RtCudaConvGeom g;
    char why[8];
    if (!rt_cuda_conv_geom(d, &g, why, sizeof why) || empty_out(d)) return 0;
    return (size_t)g.stage_bytes + rt_cuda_conv_workspace_cap(d);
}

size_t rt_cuda_conv_prepared_bytes(const RtConvDesc *d) {
    RtCudaConvGeom g;
    char why[8];
    if (!d->has_bn || !d->constant_weights || !rt_cuda_conv_geom(d, &g, why, sizeof why) ||
        empty_out(d))
        return 0;
    size_t es = rt_dtype_size((RtDType)d->dtype);
    size_t wn = (size_t)(d->cout * (d->cin / d->groups) * d->k[0] * d->k[1]);
    return up256(wn * es) + up256((size_t)d->cout * (d->dtype == RT_F64 ? 8 : 4));
}

/* ---- checking a descriptor against the context's buffers ---- */

/* The byte extent [lo, hi] an operand at r with 4-d sizes and element
 * strides reaches must lie in its slot. */
static bool inside(RtConvRef r, const int64_t size[4], const int64_t stride[4], int64_t es,
                   const size_t *bytes, int nslots) {
    if (r.slot < 0 || r.slot >= nslots || r.offset < 0 || r.offset % es) return false;
    int64_t hi = 0;
    for (int i = 0; i < 4; i++) {
        if (size[i] == 0) return true; /* empty: nothing is read */
        if (stride[i] < 0) return false;
        int64_t k = size[i] - 1;
        if (k && stride[i] > (INT64_MAX / 16 - hi) / k) return false;
        hi += stride[i] * k;
    }
    int64_t cap = (int64_t)(bytes[r.slot] > INT64_MAX / 4 ? INT64_MAX / 4 : bytes[r.slot]);
    return r.offset <= cap && (hi + 1) * es <= cap - r.offset;
}

static bool dense_inside(RtConvRef r, int64_t n, int64_t es, const size_t *bytes, int nslots) {
    int64_t size[4] = {n, 1, 1, 1}, stride[4] = {1, 0, 0, 0};
    return inside(r, size, stride, es, bytes, nslots);
}

const char *rt_cuda_conv_check(const RtConvDesc *d, const size_t *bytes, int nslots) {
    RtCudaConvGeom g;
    char why[200];
    if (!d || !rt_cuda_conv_geom(d, &g, why, sizeof why)) return "malformed convolution";
    if (empty_out(d)) return NULL;
    int64_t es = (int64_t)rt_dtype_size((RtDType)d->dtype);
    int64_t xsz[4] = {d->n, d->cin, d->in[0], d->in[1]};
    int64_t ysz[4] = {d->n, d->cout, d->out[0], d->out[1]};
    if (!inside(d->src, xsz, d->src_strides, es, bytes, nslots))
        return "convolution source outside its buffer";
    if (!inside(d->dst, ysz, d->dst_strides, es, bytes, nslots))
        return "convolution result outside its buffer";
    int64_t wn = d->cout * (d->cin / d->groups) * d->k[0] * d->k[1];
    if (!dense_inside(d->weight, wn, es, bytes, nslots))
        return "convolution weight outside its buffer";
    if (d->bias.slot >= 0 && !dense_inside(d->bias, d->cout, es, bytes, nslots))
        return "convolution bias outside its buffer";
    const RtConvRef bn[4] = {d->bn_mean, d->bn_var, d->bn_weight, d->bn_bias};
    for (int i = 0; d->has_bn && i < 4; i++)
        if (bn[i].slot >= 0 && !dense_inside(bn[i], d->cout, es, bytes, nslots))
            return "batch-norm tensor outside its buffer";
    if (d->npost < 0 || d->npost > RT_CONV_MAX_POST) return "malformed convolution post-ops";
    for (int i = 0; i < d->npost; i++) {
        const RtConvPost *q = &d->post[i];
        if (q->kind < RT_CONV_POST_ADD || q->kind > RT_CONV_POST_MISH)
            return "unknown convolution post-op";
        if (q->kind == RT_CONV_POST_ADD && !inside(q->src, ysz, q->strides, es, bytes, nslots))
            return "convolution residual outside its buffer";
    }
    size_t need = rt_cuda_conv_scratch_bytes(d);
    if (d->scratch_offset < 0 || d->scratch_bytes < 0 || (size_t)d->scratch_bytes < need ||
        d->scratch_offset % 64 || (size_t)d->scratch_offset > bytes[0] ||
        (size_t)d->scratch_bytes > bytes[0] - (size_t)d->scratch_offset)
        return "convolution scratch not planned in the arena";
    return NULL;
}
