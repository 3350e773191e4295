/* The convolution without oneDNN: a direct loop in double (f64
 * convolutions, which oneDNN does not have, and the fallback when it
 * cannot make a primitive), the per-channel affine map of bias and batch
 * norm both paths use, and the strided copies to and from the dense f32
 * buffers a staged primitive works on. */
#include "conv_internal.h"
#include "rt_internal.h"

#include <math.h>
#include <string.h>

int64_t rt_conv_out_pad(const RtConvDesc *d, int i) {
    int64_t full = (d->in[i] - 1) * d->stride[i] - d->pad_l[i] - d->pad_r[i] +
                   d->dilation[i] * (d->k[i] - 1) + 1;
    return d->out[i] - full;
}

/* Element i of a floating array as a double. The f64 and f32 cases are
 * inline because the direct loop does one load per multiply-add. */
static inline double load(const char *p, RtDType t, int64_t i) {
    if (t == RT_F64) {
        double v;
        memcpy(&v, p + i * 8, 8);
        return v;
    }
    if (t == RT_F32) {
        float v;
        memcpy(&v, p + i * 4, 4);
        return v;
    }
    return rt_load_float(p, t, (size_t)i);
}

void rt_conv_channel_affine(const RtConvDesc *d, void **bufs, double *scale, double *shift) {
    RtDType t = (RtDType)d->dtype;
    const char *bias = d->bias.slot >= 0 ? rt_conv_ptr(bufs, d->bias) : NULL;
    const char *mean = NULL, *var = NULL, *g = NULL, *beta = NULL;
    if (d->has_bn) {
        if (d->bn_mean.slot >= 0) mean = rt_conv_ptr(bufs, d->bn_mean);
        if (d->bn_var.slot >= 0) var = rt_conv_ptr(bufs, d->bn_var);
        if (d->bn_weight.slot >= 0) g = rt_conv_ptr(bufs, d->bn_weight);
        if (d->bn_bias.slot >= 0) beta = rt_conv_ptr(bufs, d->bn_bias);
    }
    for (int64_t o = 0; o < d->cout; o++) {
        double b = bias ? load(bias, t, o) : 0.0;
        if (!d->has_bn) {
            scale[o] = 1.0;
            shift[o] = b;
            continue;
        }
        /* An absent mean is 0 and an absent variance 1: the batch norm
         * then only scales and shifts. */
        double m = mean ? load(mean, t, o) : 0.0, v = var ? load(var, t, o) : 1.0;
        double s = (g ? load(g, t, o) : 1.0) / sqrt(v + d->bn_eps);
        scale[o] = s;
        shift[o] = (b - m) * s + (beta ? load(beta, t, o) : 0.0);
    }
}

double rt_conv_post_eltwise(const RtConvPost *p, double x) {
    /* Written as comparisons that let NaN through, as torch's kernels do. */
    const double sqrt1_2 = 0.70710678118654752440, sqrt2_pi = 0.79788456080286535588;
    switch ((RtConvPostKind)p->kind) {
    case RT_CONV_POST_ADD: return x; /* not an eltwise: the caller adds */
    case RT_CONV_POST_RELU: return x < 0 ? (p->alpha == 0 ? 0.0 : x * p->alpha) : x;
    case RT_CONV_POST_CLIP: return x < p->alpha ? p->alpha : x > p->beta ? p->beta : x;
    case RT_CONV_POST_HARDSWISH:
    case RT_CONV_POST_HARDSIGMOID: {
        double r = x + 3 < 0 ? 0 : x + 3 > 6 ? 6 : x + 3;
        return p->kind == RT_CONV_POST_HARDSWISH ? x * r / 6 : r / 6;
    }
    case RT_CONV_POST_ELU: return x > 0 ? x : p->alpha * expm1(x);
    case RT_CONV_POST_SIGMOID: return 1 / (1 + exp(-x));
    case RT_CONV_POST_TANH: return tanh(x);
    case RT_CONV_POST_SILU: return x / (1 + exp(-x));
    case RT_CONV_POST_GELU_ERF: return 0.5 * x * (1 + erf(x * sqrt1_2));
    case RT_CONV_POST_GELU_TANH: return 0.5 * x * (1 + tanh(sqrt2_pi * (x + 0.044715 * x * x * x)));
    case RT_CONV_POST_MISH: return x * tanh(log1p(exp(x)));
    }
    return x;
}

/* The input row (dim 0) or column (dim 1) that output position o reads
 * through kernel tap k, into *i; false when there is none (padding, or a
 * transposed convolution's stride skipping it). */
static bool input_at(const RtConvDesc *d, int dim, int64_t o, int64_t k, int64_t *i) {
    if (!d->transposed) {
        *i = o * d->stride[dim] - d->pad_l[dim] + k * d->dilation[dim];
    } else {
        /* Gather form of the transposed convolution: input row i feeds
         * output row i * stride - pad + k * dilation. */
        int64_t r = o + d->pad_l[dim] - k * d->dilation[dim];
        if (r < 0 || r % d->stride[dim]) return false;
        *i = r / d->stride[dim];
    }
    return *i >= 0 && *i < d->in[dim];
}

void rt_conv_direct(const RtConvDesc *d, void **bufs, const double *scale, const double *shift) {
    RtDType t = (RtDType)d->dtype;
    const char *x = rt_conv_ptr(bufs, d->src), *w = rt_conv_ptr(bufs, d->weight);
    char *y = rt_conv_ptr(bufs, d->dst);
    const int64_t *xs = d->src_strides, *ys = d->dst_strides;
    int64_t icg = d->cin / d->groups, ocg = d->cout / d->groups;
    int64_t K0 = d->k[0], K1 = d->k[1];
    for (int64_t n = 0; n < d->n; n++)
        for (int64_t o = 0; o < d->cout; o++) {
            int64_t g = o / ocg, ol = o % ocg;
            for (int64_t oh = 0; oh < d->out[0]; oh++)
                for (int64_t ow = 0; ow < d->out[1]; ow++) {
                    double acc = 0;
                    for (int64_t ic = 0; ic < icg; ic++) {
                        int64_t c = g * icg + ic;
                        for (int64_t kh = 0; kh < K0; kh++) {
                            int64_t ih;
                            if (!input_at(d, 0, oh, kh, &ih)) continue;
                            for (int64_t kw = 0; kw < K1; kw++) {
                                int64_t iw;
                                if (!input_at(d, 1, ow, kw, &iw)) continue;
                                /* conv weight [cout][cin/g][kh][kw];
                                 * conv_transpose [cin][cout/g][kh][kw]. */
                                int64_t wi = d->transposed ? ((c * ocg + ol) * K0 + kh) * K1 + kw
                                                           : ((o * icg + ic) * K0 + kh) * K1 + kw;
                                acc += load(x, t, n * xs[0] + c * xs[1] + ih * xs[2] + iw * xs[3]) *
                                       load(w, t, wi);
                            }
                        }
                    }
                    double v = acc * scale[o] + shift[o];
                    for (int i = 0; i < d->npost; i++) {
                        const RtConvPost *p = &d->post[i];
                        if (p->kind == RT_CONV_POST_ADD) {
                            const int64_t *ps = p->strides;
                            v += load(rt_conv_ptr(bufs, p->src), t,
                                      n * ps[0] + o * ps[1] + oh * ps[2] + ow * ps[3]);
                        } else {
                            v = rt_conv_post_eltwise(p, v);
                        }
                    }
                    rt_store_float(y, t, (size_t)(n * ys[0] + o * ys[1] + oh * ys[2] + ow * ys[3]),
                                   v);
                }
        }
}

/* Element loads and stores through memcpy: inputs handed in by the caller
 * and params mapped from a file need not be aligned to their dtype. */
static inline float ld_f32(const char *p, int64_t i) {
    float v;
    memcpy(&v, p + i * 4, 4);
    return v;
}
static inline uint16_t ld_u16(const char *p, int64_t i) {
    uint16_t v;
    memcpy(&v, p + i * 2, 2);
    return v;
}
static inline void st_f32(char *p, int64_t i, float v) {
    memcpy(p + i * 4, &v, 4);
}
static inline void st_u16(char *p, int64_t i, uint16_t v) {
    memcpy(p + i * 2, &v, 2);
}

void rt_conv_to_f32(const void *src, RtDType t, const int64_t dims[4], const int64_t sstr[4],
                    float *dst, const int64_t dstr[4]) {
    for (int64_t a = 0; a < dims[0]; a++)
        for (int64_t b = 0; b < dims[1]; b++)
            for (int64_t c = 0; c < dims[2]; c++) {
                int64_t so = a * sstr[0] + b * sstr[1] + c * sstr[2];
                int64_t dof = a * dstr[0] + b * dstr[1] + c * dstr[2];
                const char *s = src;
                if (t == RT_F32)
                    for (int64_t e = 0; e < dims[3]; e++)
                        dst[dof + e * dstr[3]] = ld_f32(s, so + e * sstr[3]);
                else if (t == RT_F16)
                    for (int64_t e = 0; e < dims[3]; e++)
                        dst[dof + e * dstr[3]] = rt_f16_to_f32(ld_u16(s, so + e * sstr[3]));
                else
                    for (int64_t e = 0; e < dims[3]; e++)
                        dst[dof + e * dstr[3]] = rt_bf16_to_f32(ld_u16(s, so + e * sstr[3]));
            }
}

void rt_conv_from_f32(const float *src, const int64_t sstr[4], void *dst, RtDType t,
                      const int64_t dims[4], const int64_t dstr[4]) {
    for (int64_t a = 0; a < dims[0]; a++)
        for (int64_t b = 0; b < dims[1]; b++)
            for (int64_t c = 0; c < dims[2]; c++) {
                const float *sr = src + a * sstr[0] + b * sstr[1] + c * sstr[2];
                int64_t dof = a * dstr[0] + b * dstr[1] + c * dstr[2];
                char *d = dst;
                if (t == RT_F32)
                    for (int64_t e = 0; e < dims[3]; e++)
                        st_f32(d, dof + e * dstr[3], sr[e * sstr[3]]);
                else if (t == RT_F16)
                    for (int64_t e = 0; e < dims[3]; e++)
                        st_u16(d, dof + e * dstr[3], rt_f32_to_f16(sr[e * sstr[3]]));
                else
                    for (int64_t e = 0; e < dims[3]; e++)
                        st_u16(d, dof + e * dstr[3], rt_f32_to_bf16(sr[e * sstr[3]]));
            }
}
