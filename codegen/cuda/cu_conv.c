/* Convolutions on CUDA: one RT_CUDA_CONV step each (cuDNN, set up by the
 * runtime from the RtConvDesc that codegen/conv_desc.c planned), and, when
 * the result needs more than cuDNN's raw convolution, its epilogue kernel:
 *
 *   dst[n, c, h, w] = post(raw[n, c, h + shift0, w + shift1] * scale[c] + shift[c])
 *
 * raw: dst itself (in place) or the staging tensor at the conv's scratch
 * (runtime/cuda_conv_plan.c says when; rows outside it are 0); scale and
 * shift: the bias, and a batch norm of params that passes/conv_epilogue.c
 * fused into the conv (folded into the weights and a per-channel shift at
 * load when the weights are params: the kernel's `shift` argument;
 * computed here in double from the statistics otherwise); post: the
 * fused activations and residual adds, in order, with the formulas of
 * runtime/conv_ref.c (rt_conv_post_eltwise) in the conv's compute type
 * (f32 for f32/f16/bf16, f64 for f64), rounded once to the dtype at the
 * store, as the CPU path computes them. Addresses and strides come from
 * the descriptor (a channels-last plan included), not from the graph. */
#include <stdio.h>
#include <string.h>

#include "codegen/cuda/cu.h"

#define BLOCK 256
#define MAX_GRID 524288

static const char *ptr(Cu *cu, RtConvRef r, DType t) {
    return cu_str(cu, "((const %s *)(bufs[%d] + %lld))", cu_stype(t), (int)r.slot,
                  (long long)r.offset);
}

/* A stored element (storage type) as the compute type. */
static const char *widen(Cu *cu, DType t, const char *x) {
    if (t == DT_F16) return cu_str(cu, "tg_h2f(%s)", x);
    if (t == DT_BF16) return cu_str(cu, "tg_b2f(%s)", x);
    if (t == DT_F64) return x;
    return cu_str(cu, "(float)%s", x);
}

/* "n * s0 + c * s1 + h * s2 + w * s3" without the zero terms; L: the
 * literals' suffix ("LL" in 64-bit index arithmetic, else ""). */
static const char *offset(Cu *cu, const int64_t s[4], const char *L) {
    static const char *const idx[4] = {"n", "c", "h", "w"};
    Sb e = {0};
    sb_printf(&e, "0");
    for (int i = 0; i < 4; i++)
        if (s[i]) sb_printf(&e, " + %s * %lld%s", idx[i], (long long)s[i], L);
    const char *r = cu_str(cu, "%s", e.s);
    sb_free(&e);
    return r;
}

static const char *post(Cu *cu, const RtConvPost *q, DType ct, const char *v) {
    bool d = ct == DT_F64;
    const char *sfx = d ? "f64" : "f32";
    const char *a = cu_const(cu, ct, q->alpha), *b = cu_const(cu, ct, q->beta);
    const char *zero = d ? "0.0" : "0.0f", *one = d ? "1.0" : "1.0f";
    switch ((RtConvPostKind)q->kind) {
    case RT_CONV_POST_RELU:
        return q->alpha == 0 ? cu_str(cu, "(%s < %s ? %s : %s)", v, zero, zero, v)
                             : cu_str(cu, "(%s < %s ? %s * %s : %s)", v, zero, v, a, v);
    case RT_CONV_POST_CLIP:
        return cu_str(cu, "(%s < %s ? %s : %s > %s ? %s : %s)", v, a, a, v, b, b, v);
    case RT_CONV_POST_HARDSWISH: return cu_str(cu, "tg_hardswish_%s(%s)", sfx, v);
    case RT_CONV_POST_HARDSIGMOID: return cu_str(cu, "tg_hardsigmoid_%s(%s)", sfx, v);
    case RT_CONV_POST_ELU: return cu_str(cu, "tg_elu_%s(%s, %s)", sfx, v, a);
    case RT_CONV_POST_SIGMOID: return cu_str(cu, "tg_sigmoid_%s(%s)", sfx, v);
    case RT_CONV_POST_TANH: return cu_str(cu, "%s(%s)", d ? "tanh" : "tanhf", v);
    case RT_CONV_POST_SILU:
        return cu_str(cu, "(%s / (%s + %s(-%s)))", v, one, d ? "exp" : "expf", v);
    case RT_CONV_POST_GELU_ERF: return cu_str(cu, "tg_gelu_%s(%s)", sfx, v);
    case RT_CONV_POST_GELU_TANH: return cu_str(cu, "tg_gelu_tanh_%s(%s)", sfx, v);
    case RT_CONV_POST_MISH: return cu_str(cu, "tg_mish_%s(%s)", sfx, v);
    case RT_CONV_POST_ADD: break;
    }
    cu_fail(cu, "internal: conv post-op %d", (int)q->kind);
    return v;
}

/* The largest element offset strides s reach over d's result shape. */
static int64_t extent(const RtConvDesc *d, const int64_t s[4]) {
    int64_t size[4] = {d->n, d->cout, d->out[0], d->out[1]}, e = 0;
    for (int i = 0; i < 4; i++)
        e += s[i] * (size[i] - 1);
    return e;
}

/* 32-bit index arithmetic unless some index of the kernel reaches 2^30 (a
 * grid-stride step must not overflow int either). */
static bool needs_wide(const RtConvDesc *d, const RtCudaConvGeom *g) {
    const int64_t lim = (int64_t)1 << 30;
    int64_t total = d->n * d->cout * d->out[0] * d->out[1];
    bool wide = total >= lim || extent(d, d->dst_strides) >= lim ||
                d->n * d->cout * g->raw[0] * g->raw[1] >= lim;
    for (int i = 0; i < d->npost; i++)
        wide |= d->post[i].kind == RT_CONV_POST_ADD && extent(d, d->post[i].strides) >= lim;
    return wide;
}

/* The epilogue kernel of d; returns its name. */
static const char *epilogue(Cu *cu, int index, const RtConvDesc *d, const RtCudaConvGeom *g,
                            int64_t *grid) {
    DType t = (DType)d->dtype, ct = t == DT_F64 ? DT_F64 : DT_F32;
    const char *acc = cu_ctype(ct), *st = cu_stype(t);
    const char *name = cu_str(cu, "k%d_conv%d_epilogue", cu->nkernels++, index);
    int64_t C = d->cout, H = d->out[0], W = d->out[1], total = d->n * C * H * W;
    Sb *s = &cu->src;
    bool wide = needs_wide(d, g);
    const char *it = wide ? "long long" : "int", *L = wide ? "LL" : "";
    sb_printf(s, "\n// conv %d: %s%s%s%d post-op(s)\n", index, d->bias.slot >= 0 ? "bias, " : "",
              d->has_bn ? (d->constant_weights ? "batch norm folded, " : "batch norm, ") : "",
              g->staged ? "staged, " : "", (int)d->npost);
    sb_printf(s,
              "extern \"C\" __global__ void __launch_bounds__(%d) %s(char *const *bufs, const %s "
              "*shift) {\n",
              BLOCK, name, acc);
    sb_printf(s, "    (void)shift;\n");
    sb_printf(
        s,
        "    for (%s g = (%s)blockIdx.x * blockDim.x + threadIdx.x; g < %lld%s; g += (%s)gridDim.x "
        "* blockDim.x) {\n",
        it, it, (long long)total, L, it);
    /* Threads walk dst in its memory order (channels last: c innermost), so
     * that neighbouring threads store neighbouring elements. */
    static const char *const dn[4] = {"n", "c", "h", "w"};
    int64_t size[4] = {d->n, C, H, W};
    int ord[4] = {0, 1, 2, 3};
    for (int i = 1; i < 4; i++) /* by decreasing stride, stable */
        for (int j = i; j > 0 && d->dst_strides[ord[j]] > d->dst_strides[ord[j - 1]]; j--) {
            int tmp = ord[j];
            ord[j] = ord[j - 1], ord[j - 1] = tmp;
        }
    sb_printf(s, "        %s r = g;\n", it);
    for (int i = 3; i > 0; i--)
        sb_printf(s, "        const %s %s = r %% %lld%s; r /= %lld%s;\n", it, dn[ord[i]],
                  (long long)size[ord[i]], L, (long long)size[ord[i]], L);
    sb_printf(s, "        const %s %s = r;\n", it, dn[ord[0]]);
    /* The raw convolution. */
    if (g->staged) {
        int64_t R0 = g->raw[0], R1 = g->raw[1];
        sb_printf(s, "        %s v = 0;\n", acc);
        sb_printf(s, "        const %s rh = h + %lld, rw = w + %lld;\n", it, (long long)g->shift[0],
                  (long long)g->shift[1]);
        sb_printf(s, "        if (rh < %lld && rw < %lld)\n", (long long)R0, (long long)R1);
        sb_printf(s, "            v = %s;\n",
                  widen(cu, t,
                        cu_str(cu,
                               "((const %s *)(bufs[0] + %lldLL))[((n * %lld%s + c) * %lld%s + rh) "
                               "* %lld%s + rw]",
                               st, (long long)d->scratch_offset, (long long)C, L, (long long)R0, L,
                               (long long)R1, L)));
    } else {
        sb_printf(
            s, "        %s v = %s;\n", acc,
            widen(cu, t, cu_str(cu, "%s[%s]", ptr(cu, d->dst, t), offset(cu, d->dst_strides, L))));
    }
    /* Bias and batch norm: one affine map per channel. */
    if (d->has_bn && d->constant_weights) {
        sb_printf(s, "        v = v + shift[c];\n");
    } else if (d->has_bn) {
        const RtConvRef r[4] = {d->bn_mean, d->bn_var, d->bn_weight, d->bn_bias};
        const char *dflt[4] = {"0.0", "1.0", "1.0", "0.0"}, *nm[4] = {"m", "var", "gw", "gb"};
        for (int i = 0; i < 4; i++)
            sb_printf(s, "        const double %s = %s;\n", nm[i],
                      r[i].slot >= 0 ? cu_str(cu, "(double)%s",
                                              widen(cu, t, cu_str(cu, "%s[c]", ptr(cu, r[i], t))))
                                     : dflt[i]);
        sb_printf(s, "        const double b = %s;\n",
                  d->bias.slot >= 0 ? cu_str(cu, "(double)%s",
                                             widen(cu, t, cu_str(cu, "%s[c]", ptr(cu, d->bias, t))))
                                    : "0.0");
        sb_printf(s, "        const double sc = gw / sqrt(var + %.17g);\n", d->bn_eps);
        sb_printf(s, "        v = (%s)((double)v * sc + ((b - m) * sc + gb));\n", acc);
    } else if (d->bias.slot >= 0) {
        sb_printf(s, "        v = v + %s;\n",
                  widen(cu, t, cu_str(cu, "%s[c]", ptr(cu, d->bias, t))));
    }
    for (int i = 0; i < d->npost; i++) {
        const RtConvPost *q = &d->post[i];
        if (q->kind == RT_CONV_POST_ADD)
            sb_printf(
                s, "        v = v + %s;\n",
                widen(cu, t, cu_str(cu, "%s[%s]", ptr(cu, q->src, t), offset(cu, q->strides, L))));
        else
            sb_printf(s, "        v = %s;\n", post(cu, q, ct, "v"));
    }
    const char *out = t == DT_F16 ? "tg_f2h(v)" : t == DT_BF16 ? "tg_f2b(v)" : "v";
    sb_printf(s, "        ((%s *)(bufs[%d] + %lldLL))[%s] = %s;\n", st, (int)d->dst.slot,
              (long long)d->dst.offset, offset(cu, d->dst_strides, L), out);
    sb_printf(s, "    }\n}\n");
    int64_t blocks = (total + BLOCK - 1) / BLOCK;
    *grid = blocks > MAX_GRID ? MAX_GRID : blocks < 1 ? 1 : blocks;
    return name;
}

void cu_k_conv(Cu *cu, const Value *v) {
    const CgProgram *p = cu->p;
    int index = cg_conv_index(p, v);
    const RtConvDesc *d = &p->convs[index];
    RtCudaConvGeom g;
    char why[200];
    if (!rt_cuda_conv_geom(d, &g, why, sizeof why)) {
        cu_fail(cu, "internal: convolution %d: %s", index, why); /* refused before: a bug */
        return;
    }
    CuStep s;
    memset(&s, 0, sizeof s);
    s.kind = CU_CONV;
    s.conv = index;
    if (g.epilogue && d->n && d->out[0] && d->out[1]) {
        s.kernel = epilogue(cu, index, d, &g, &s.grid);
        s.block = BLOCK;
    }
    ARENA_PUSH(cu->a, cu->steps, cu->nsteps, cu->cap, s);
}

const char *cu_conv_unsupported(const CgProgram *p) {
    static char msg[400];
    for (int i = 0; i < p->nconvs; i++) {
        RtCudaConvGeom g;
        char why[200];
        if (rt_cuda_conv_geom(&p->convs[i], &g, why, sizeof why)) continue;
        const Value *v = p->conv_values[i];
        snprintf(msg, sizeof msg,
                 "%s at line %d: --target cuda computes convolutions with cuDNN, which cannot "
                 "take this one: %s (--target cpu can)",
                 op_display_name(v), v->loc.line, why);
        return msg;
    }
    return NULL;
}
