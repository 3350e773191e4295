/* Convolutions for generated code, through oneDNN's C API (Debian's
 * libdnnl 2.6, OpenMP threading).
 *
 * Per convolution the context makes, once, a forward-inference primitive
 * whose source and destination are the arena's tensors at their own
 * strides and whose weights are in the layout oneDNN prefers (format
 * "any"): the weights, with the batch norm folded in, are reordered into it
 * at setup, outside the arena (rt_conv_prepared_bytes). Post-ops (eltwise,
 * and a residual add as a binary post-op) run inside the primitive. Its
 * scratchpad is user-provided, in the arena (rt_conv_scratch_bytes).
 *
 * f16 and bf16 convolutions compute in f32: oneDNN 2.6 has no 16-bit
 * convolution on CPUs without AVX-512, so the source is widened into f32
 * scratch, the f32 primitive writes an f32 scratch destination and that is
 * rounded once into the real one: f32 arithmetic on the rounded inputs,
 * rounded once. An f32 convolution whose strides only oneDNN's reference
 * kernel takes (mixed NCHW/NHWC, slices) is staged the same way through
 * dense copies. f64 convolutions, which oneDNN does not have, and any
 * convolution oneDNN cannot make a primitive for (a transposed one whose
 * output padding exceeds its stride, say), run the direct loop of
 * conv_ref.c instead (rt_conv_impl says which and why).
 *
 * oneDNN sizes its work split and scratchpad by OpenMP's thread count when
 * a primitive is created and runs with the count current when it executes;
 * both are set to the context's count here, on the calling thread (the
 * setting is per thread), and restored after, so the caller's OpenMP
 * settings are left as they were. The runtime keeps no global state; only
 * oneDNN's own caches are shared. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "conv_internal.h"
#include "rt_internal.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h> /* the plain weights' mmap */
#include <unistd.h>

/* libgomp, oneDNN's threading runtime here (it comes with libdnnl). */
void omp_set_num_threads(int n);
int omp_get_max_threads(void);

#define ALIGN_UP(x) (((x) + (size_t)RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN)

static int conv_threads(int threads) {
    long n = threads > 0 ? threads : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > TGCRT_MAX_THREADS ? TGCRT_MAX_THREADS : (int)n;
}

/* ---- checking a descriptor ---- */

static bool ref_ok(RtConvRef r) {
    return r.slot >= 0 && r.offset >= 0;
}

static RtStatus conv_check(const RtConvDesc *d, int index, RtError *err) {
    RtDType t = (RtDType)d->dtype;
    if (t != RT_F32 && t != RT_F64 && t != RT_F16 && t != RT_BF16)
        return rt_error_set(err, TGCRT_ERR_ARG,
                            "convolution %d: dtype %s is not f32, f64, f16 or bf16", index,
                            rt_dtype_name(t));
    if (d->n < 1 || d->cin < 1 || d->cout < 1 || d->groups < 1 || d->cin % d->groups ||
        d->cout % d->groups)
        return rt_error_set(
            err, TGCRT_ERR_ARG,
            "convolution %d: bad channels (n %lld, cin %lld, cout %lld, groups %lld)", index,
            (long long)d->n, (long long)d->cin, (long long)d->cout, (long long)d->groups);
    for (int i = 0; i < 2; i++) {
        if (d->in[i] < 1 || d->out[i] < 1 || d->k[i] < 1 || d->stride[i] < 1 ||
            d->dilation[i] < 1 || d->pad_l[i] < 0 || d->pad_r[i] < 0)
            return rt_error_set(err, TGCRT_ERR_ARG, "convolution %d: bad geometry in dim %d", index,
                                i);
        int64_t ek = d->dilation[i] * (d->k[i] - 1) + 1,
                padded = d->in[i] + d->pad_l[i] + d->pad_r[i];
        if (d->transposed) {
            int64_t op = rt_conv_out_pad(d, i);
            if (op < 0 || (op >= d->stride[i] && op >= d->dilation[i]))
                return rt_error_set(err, TGCRT_ERR_ARG,
                                    "convolution %d: transposed output size %lld in dim %d implies "
                                    "output padding %lld",
                                    index, (long long)d->out[i], i, (long long)op);
        } else if (padded < ek || (padded - ek) / d->stride[i] + 1 != d->out[i]) {
            return rt_error_set(err, TGCRT_ERR_ARG,
                                "convolution %d: output size %lld in dim %d does not follow from "
                                "the input, kernel, stride, dilation and padding",
                                index, (long long)d->out[i], i);
        }
    }
    if (!ref_ok(d->src) || !ref_ok(d->weight) || !ref_ok(d->dst) ||
        (d->bias.slot >= 0 && d->bias.offset < 0))
        return rt_error_set(err, TGCRT_ERR_ARG, "convolution %d: an operand has no buffer", index);
    for (int i = 0; i < 4; i++)
        if (d->src_strides[i] < 0 || d->dst_strides[i] < 0)
            return rt_error_set(err, TGCRT_ERR_ARG, "convolution %d: negative strides", index);
    if (d->npost < 0 || d->npost > RT_CONV_MAX_POST)
        return rt_error_set(err, TGCRT_ERR_ARG, "convolution %d: %d post-ops (at most %d)", index,
                            d->npost, RT_CONV_MAX_POST);
    if (d->npost && (t == RT_F16 || t == RT_BF16))
        return rt_error_set(err, TGCRT_ERR_ARG,
                            "convolution %d: post-ops are not supported on %s convolutions", index,
                            rt_dtype_name(t));
    for (int i = 0; i < d->npost; i++) {
        const RtConvPost *p = &d->post[i];
        if (p->kind < RT_CONV_POST_ADD || p->kind > RT_CONV_POST_MISH)
            return rt_error_set(err, TGCRT_ERR_ARG, "convolution %d: unknown post-op kind %d",
                                index, p->kind);
        if (p->kind == RT_CONV_POST_ADD &&
            (!ref_ok(p->src) || p->strides[0] < 0 || p->strides[1] < 0 || p->strides[2] < 0 ||
             p->strides[3] < 0))
            return rt_error_set(err, TGCRT_ERR_ARG, "convolution %d: post-op %d adds no tensor",
                                index, i);
    }
    return TGCRT_OK;
}

/* ---- layouts ---- */

/* Strides of a dense N, C, H, W tensor, NCHW (cl false) or NHWC. */
static void dense_strides(const int64_t dims[4], bool cl, int64_t out[4]) {
    if (cl) {
        out[1] = 1, out[3] = dims[1], out[2] = dims[3] * dims[1], out[0] = dims[2] * out[2];
    } else {
        out[3] = 1, out[2] = dims[3], out[1] = dims[2] * dims[3], out[0] = dims[1] * out[1];
    }
}

/* Both address the same elements: strides of size-1 dims do not matter. */
static bool same_layout(const int64_t dims[4], const int64_t a[4], const int64_t b[4]) {
    for (int i = 0; i < 4; i++)
        if (dims[i] > 1 && a[i] != b[i]) return false;
    return true;
}

/* The strides oneDNN gets for s: dense NCHW or NHWC strides when s
 * addresses the same elements, so that oneDNN recognises the layout (a
 * batch of 1 or a height of 1 leaves those strides arbitrary) and picks its
 * optimised kernels; s itself otherwise. Returns whether the result is
 * channels-last (NHWC, or C the fastest-varying dim). */
static bool canon_strides(const int64_t dims[4], const int64_t s[4], int64_t out[4]) {
    dense_strides(dims, false, out);
    if (same_layout(dims, s, out)) return false;
    dense_strides(dims, true, out);
    if (same_layout(dims, s, out)) return true;
    memcpy(out, s, 4 * sizeof *out);
    return s[1] == 1 && dims[1] > 1;
}

/* Whether s addresses the same elements as both dense NCHW and dense NHWC
 * strides over dims (C or H * W is 1). */
static bool ambiguous(const int64_t dims[4], const int64_t s[4]) {
    int64_t a[4], b[4];
    dense_strides(dims, false, a);
    dense_strides(dims, true, b);
    return same_layout(dims, s, a) && same_layout(dims, s, b);
}

/* Elements a tensor of dims at strides spans (its last one, plus one). */
static int64_t span(const int64_t dims[4], const int64_t s[4]) {
    int64_t n = 1;
    for (int i = 0; i < 4; i++)
        n += (dims[i] - 1) * s[i];
    return n;
}

/* ---- the primitive ---- */

/* How a convolution runs: its primitive, the strides that sees, and where
 * its buffers sit in the scratch. */
typedef struct ConvPlan {
    dnnl_primitive_desc_t pd; /* NULL: the direct loop */
    char why[120];            /* why not oneDNN */
    /* Staged: the primitive reads a dense f32 copy of the source and
     * writes a dense f32 destination, both in the scratch (the source at
     * offset 0), converted from and to the real tensors around the call:
     * always for f16/bf16, and for f32 when oneDNN has only its reference
     * kernel for the real strides. The copies are NHWC when the source is
     * channels-last, else NCHW. */
    bool staged;
    /* Staged f32 whose real source (destination) already has the copy's
     * layout: the primitive reads (writes) the real tensor, no copy (a
     * depthwise conv reading a channels-last map and writing an NCHW one
     * copies only its destination). */
    bool src_direct, dst_direct;
    int64_t src_str[4], dst_str[4]; /* the strides the primitive sees */
    int post_arg[RT_CONV_MAX_POST]; /* oneDNN's post-op index of each ADD */
    /* An ADD operand laid out otherwise than the primitive's destination
     * is first copied into the scratch at the destination's strides:
     * oneDNN 2.6's kernels address the operand of a binary post-op with
     * the destination's offsets (its gemm kernel on NHWC tensors gives
     * wrong sums otherwise). */
    bool post_copy[RT_CONV_MAX_POST];
    size_t off_dst, off_post[RT_CONV_MAX_POST], off_pad, total; /* scratch bytes */
} ConvPlan;

static bool append_eltwise(dnnl_post_ops_t ops, dnnl_alg_kind_t alg, float a, float b) {
    return dnnl_post_ops_append_eltwise(ops, 1.0f, alg, a, b) == dnnl_success;
}

/* Appends eltwise post-op p to ops (count: oneDNN post-ops so far). */
static bool append_eltwise_post(dnnl_post_ops_t ops, const RtConvPost *p, int *count) {
    dnnl_alg_kind_t alg;
    float a = 0, b = 0;
    switch ((RtConvPostKind)p->kind) {
    case RT_CONV_POST_HARDSIGMOID:
        /* oneDNN 2.6 has no hardsigmoid: clip(x / 6 + 1 / 2, 0, 1), in
         * two steps, within an ulp of PyTorch's relu6(x + 3) / 6. Not
         * PyTorch's three steps: oneDNN 2.6's jit:avx2 kernels on NHWC
         * tensors give wrong values for linear -> clip -> linear (off by
         * up to 8 in tests/diff), its gemm kernel does not. */
        *count += 2;
        return append_eltwise(ops, dnnl_eltwise_linear, 1.0f / 6.0f, 0.5f) &&
               append_eltwise(ops, dnnl_eltwise_clip_v2, 0.0f, 1.0f);
    case RT_CONV_POST_RELU: alg = dnnl_eltwise_relu, a = p->alpha; break; /* alpha: slope */
    case RT_CONV_POST_CLIP: alg = dnnl_eltwise_clip_v2, a = p->alpha, b = p->beta; break;
    case RT_CONV_POST_HARDSWISH: alg = dnnl_eltwise_hardswish; break;
    case RT_CONV_POST_ELU: alg = dnnl_eltwise_elu, a = p->alpha; break;
    case RT_CONV_POST_SIGMOID: alg = dnnl_eltwise_logistic; break;
    case RT_CONV_POST_TANH: alg = dnnl_eltwise_tanh; break;
    case RT_CONV_POST_SILU: alg = dnnl_eltwise_swish, a = 1.0f; break; /* x * sigmoid(1 * x) */
    case RT_CONV_POST_GELU_ERF: alg = dnnl_eltwise_gelu_erf; break;
    case RT_CONV_POST_GELU_TANH: alg = dnnl_eltwise_gelu_tanh; break;
    case RT_CONV_POST_MISH: alg = dnnl_eltwise_mish; break;
    default: return false;
    }
    (*count)++;
    return append_eltwise(ops, alg, a, b);
}

/* The weight tensor's logical dims for oneDNN (g, o, i, h, w with groups;
 * o, i, h, w without) and the strides of the tensor as PyTorch lays it out
 * ([cout][cin/g][kh][kw] for a convolution, [cin][cout/g][kh][kw] for a
 * transposed one, i.e. per group [in][out]). Returns the number of dims. */
static int weight_dims(const RtConvDesc *d, dnnl_dims_t dims, dnnl_dims_t user) {
    int64_t g = d->groups, icg = d->cin / g, ocg = d->cout / g, kk = d->k[0] * d->k[1];
    int64_t od[5] = {g, ocg, icg, d->k[0], d->k[1]};
    int64_t os[5] = {ocg * icg * kk, icg * kk, kk, d->k[1], 1};
    if (d->transposed) os[1] = kk, os[2] = ocg * kk;
    int first = g == 1; /* groups 1: the 4-d weights oneDNN's plain kernels expect */
    for (int i = first; i < 5; i++)
        dims[i - first] = od[i], user[i - first] = os[i];
    return 5 - first;
}

/* Makes pl's primitive descriptor for d, staged or not, with `threads`
 * OpenMP threads; or says in pl->why why there is none. */
/* How try_plan lays out the tensors the primitive sees. */
typedef enum {
    STAGE_NONE,   /* the real tensors at their own strides */
    STAGE_AS_SRC, /* dense f32 copies, NHWC if the source is channels-last, else NCHW */
    STAGE_NHWC,   /* dense f32 copies, NHWC: jit:avx2 where NCHW gets only gemm */
} Stage;

static void try_plan(const RtConvDesc *d, dnnl_engine_t eng, int threads, Stage stage,
                     ConvPlan *pl) {
    memset(pl, 0, sizeof *pl);
    bool staged = stage != STAGE_NONE;
    pl->staged = staged;
    /* dnnl_dims_t wherever oneDNN reads dims: it is declared as 12 dims. */
    dnnl_dims_t sdims = {d->n, d->cin, d->in[0], d->in[1]};
    dnnl_dims_t ddims = {d->n, d->cout, d->out[0], d->out[1]};
    dnnl_dims_t sst = {0}, dst = {0};
    bool scl = canon_strides(sdims, d->src_strides, sst);
    bool dcl = canon_strides(ddims, d->dst_strides, dst);
    /* A tensor that is both dense NCHW and dense NHWC (a 1x1 map, one
     * channel: the squeeze-excite convs of a channels-last network) takes
     * the other side's layout, NHWC when both are: oneDNN's direct kernels
     * want one layout on both sides, and NHWC at that. */
    bool samb = ambiguous(sdims, d->src_strides), damb = ambiguous(ddims, d->dst_strides);
    if (samb && (damb || dcl) && !scl) scl = true, dense_strides(sdims, true, sst);
    if (damb && scl && !dcl) dense_strides(ddims, true, dst);
    size_t off = 0;
    if (staged) {
        /* Both copies in one order, the source's: oneDNN's fast kernels
         * want the same layout on both sides. */
        if (stage == STAGE_NHWC) scl = true;
        dnnl_dims_t real_s, real_d;
        memcpy(real_s, sst, sizeof real_s);
        memcpy(real_d, dst, sizeof real_d);
        dense_strides(sdims, scl, sst);
        dense_strides(ddims, scl, dst);
        pl->src_direct = d->dtype == RT_F32 && same_layout(sdims, real_s, sst);
        pl->dst_direct = d->dtype == RT_F32 && same_layout(ddims, real_d, dst);
        if (!pl->src_direct)
            off = ALIGN_UP((size_t)(sdims[0] * sdims[1] * sdims[2] * sdims[3]) * 4);
        pl->off_dst = off;
        if (!pl->dst_direct)
            off += ALIGN_UP((size_t)(ddims[0] * ddims[1] * ddims[2] * ddims[3]) * 4);
    }
    memcpy(pl->src_str, sst, sizeof pl->src_str);
    memcpy(pl->dst_str, dst, sizeof pl->dst_str);
    dnnl_dims_t wdims, wuser;
    int wnd = weight_dims(d, wdims, wuser);
    dnnl_memory_desc_t smd, dmd, wmd, bmd;
    bool with_bias = d->bias.slot >= 0 || d->has_bn;
    dnnl_dims_t bdims = {d->cout};
    dnnl_status_t st = dnnl_memory_desc_init_by_strides(&smd, 4, sdims, dnnl_f32, sst);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_strides(&dmd, 4, ddims, dnnl_f32, dst);
    if (st == dnnl_success)
        st = dnnl_memory_desc_init_by_tag(&wmd, wnd, wdims, dnnl_f32, dnnl_format_tag_any);
    if (st == dnnl_success && with_bias)
        st = dnnl_memory_desc_init_by_tag(&bmd, 1, bdims, dnnl_f32, dnnl_a);
    if (st != dnnl_success) {
        snprintf(pl->why, sizeof pl->why, "oneDNN refused the memory layouts (%s)",
                 dnnl_status2str(st));
        return;
    }
    /* oneDNN counts dilation from 0 (dense) and pads the right with
     * pad_r; a transposed convolution's output padding is extra rows and
     * columns at the bottom and right, i.e. less right padding. */
    dnnl_dims_t strides = {d->stride[0], d->stride[1]};
    dnnl_dims_t dil = {d->dilation[0] - 1, d->dilation[1] - 1};
    dnnl_dims_t padl = {d->pad_l[0], d->pad_l[1]}, padr = {d->pad_r[0], d->pad_r[1]};
    union {
        dnnl_convolution_desc_t conv;
        dnnl_deconvolution_desc_t deconv;
    } op;
    if (d->transposed) {
        padr[0] -= rt_conv_out_pad(d, 0), padr[1] -= rt_conv_out_pad(d, 1);
        st = dnnl_dilated_deconvolution_forward_desc_init(
            &op.deconv, dnnl_forward_inference, dnnl_deconvolution_direct, &smd, &wmd,
            with_bias ? &bmd : NULL, &dmd, strides, dil, padl, padr);
    } else {
        st = dnnl_dilated_convolution_forward_desc_init(
            &op.conv, dnnl_forward_inference, dnnl_convolution_direct, &smd, &wmd,
            with_bias ? &bmd : NULL, &dmd, strides, dil, padl, padr);
    }
    if (st != dnnl_success) {
        snprintf(pl->why, sizeof pl->why, "oneDNN refused the geometry (%s)", dnnl_status2str(st));
        return;
    }
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t ops = NULL;
    bool ok =
        dnnl_primitive_attr_create(&attr) == dnnl_success &&
        dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success &&
        dnnl_post_ops_create(&ops) == dnnl_success;
    int count = 0;
    for (int i = 0; ok && i < d->npost; i++) {
        const RtConvPost *p = &d->post[i];
        if (p->kind != RT_CONV_POST_ADD) {
            ok = append_eltwise_post(ops, p, &count);
            continue;
        }
        int64_t ps[4];
        canon_strides(ddims, p->strides, ps);
        if (!same_layout(ddims, ps, pl->dst_str)) {
            pl->post_copy[i] = true;
            pl->off_post[i] = off;
            off += ALIGN_UP((size_t)span(ddims, pl->dst_str) * 4);
        }
        /* The operand as the destination: the same md. */
        ok = dnnl_post_ops_append_binary(ops, dnnl_binary_add, &dmd) == dnnl_success;
        pl->post_arg[i] = count++;
    }
    ok = ok && dnnl_primitive_attr_set_post_ops(attr, ops) == dnnl_success;
    if (ops) dnnl_post_ops_destroy(ops);
    if (!ok) {
        if (attr) dnnl_primitive_attr_destroy(attr);
        snprintf(pl->why, sizeof pl->why, "oneDNN refused the post-ops");
        return;
    }
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    st = dnnl_primitive_desc_create(&pl->pd, &op, attr, eng, NULL);
    omp_set_num_threads(saved);
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) {
        pl->pd = NULL;
        snprintf(pl->why, sizeof pl->why, "oneDNN has no implementation (%s)", dnnl_status2str(st));
        return;
    }
    const dnnl_memory_desc_t *pad =
        dnnl_primitive_desc_query_md(pl->pd, dnnl_query_scratchpad_md, 0);
    pl->off_pad = off;
    pl->total = off + (pad ? dnnl_memory_desc_get_size(pad) : 0);
}

static const char *impl_name(dnnl_primitive_desc_t pd) {
    const char *name = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) || !name) return "?";
    return name;
}

/* oneDNN's optimised kernels: "jit:avx2", "jit_1x1:avx2", "jit_dw:avx2"...
 * rather than "x64:gemm:jit" (im2col + sgemm) or "ref:any". */
static bool is_jit(const ConvPlan *pl) {
    return pl->pd && !strncmp(impl_name(pl->pd), "jit", 3);
}

static bool is_ref(const ConvPlan *pl) {
    return pl->pd && !strncmp(impl_name(pl->pd), "ref", 3);
}

/* Keeps the better of *pl and *cand in *pl: a jit kernel over anything,
 * anything over the reference kernel; *pl when they are equal. */
static void keep_better(ConvPlan *pl, ConvPlan *cand) {
    bool take = cand->pd && ((is_jit(cand) && !is_jit(pl)) || (is_ref(pl) && !is_ref(cand)));
    if (!pl->pd && cand->pd) take = true;
    ConvPlan *drop = take ? pl : cand;
    if (drop->pd) dnnl_primitive_desc_destroy(drop->pd);
    if (take) *pl = *cand;
}

/* Plans d: f64 has no primitive; f16/bf16 are staged; f32 runs on the
 * real strides where oneDNN has a jit kernel for them. Otherwise it is
 * staged through dense NHWC copies when that gets a jit kernel (on AVX2,
 * NCHW gets only im2col + sgemm: measured 1.35-1.8x slower per ResNet
 * convolution, far more than the copies cost), else through copies in the
 * source's order when the real strides get only the reference kernel
 * (many times slower than copying to a dense layout and back). */
static void conv_plan(const RtConvDesc *d, dnnl_engine_t eng, int threads, ConvPlan *pl) {
    if (d->dtype == RT_F64) {
        memset(pl, 0, sizeof *pl);
        snprintf(pl->why, sizeof pl->why, "oneDNN has no f64 convolution");
        return;
    }
    try_plan(d, eng, threads, d->dtype == RT_F32 ? STAGE_NONE : STAGE_NHWC, pl);
    if (is_jit(pl)) return;
    ConvPlan cand;
    if (d->dtype == RT_F32) {
        try_plan(d, eng, threads, STAGE_NHWC, &cand);
        keep_better(pl, &cand);
        if (is_jit(pl)) return;
    }
    try_plan(d, eng, threads, STAGE_AS_SRC, &cand);
    keep_better(pl, &cand);
}

/* ---- the size queries ---- */

static size_t prepared_bytes(const RtConvDesc *d, const ConvPlan *pl) {
    size_t chan = (size_t)d->cout * 2 * sizeof(double);
    if (!pl->pd) return chan;
    const dnnl_memory_desc_t *w = dnnl_primitive_desc_query_md(pl->pd, dnnl_query_weights_md, 0);
    size_t n = chan + (w ? dnnl_memory_desc_get_size(w) : 0);
    if (d->bias.slot >= 0 || d->has_bn) n += (size_t)d->cout * sizeof(float);
    if (!d->constant_weights)
        n += (size_t)(d->cout * (d->cin / d->groups) * d->k[0] * d->k[1]) * sizeof(float);
    return n;
}

/* Plans d on a throwaway engine: the compiler asks at build time, with no
 * context. */
static size_t query(const RtConvDesc *d, int threads, bool scratch) {
    if (!d || conv_check(d, 0, NULL)) return 0;
    dnnl_engine_t eng;
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success) return 0;
    ConvPlan pl;
    conv_plan(d, eng, conv_threads(threads), &pl);
    size_t n = scratch ? (pl.pd ? pl.total : 0) : prepared_bytes(d, &pl);
    if (pl.pd) dnnl_primitive_desc_destroy(pl.pd);
    dnnl_engine_destroy(eng);
    return n;
}

size_t rt_conv_scratch_bytes(const RtConvDesc *d, int threads) {
    return query(d, threads, true);
}

size_t rt_conv_prepared_bytes(const RtConvDesc *d) {
    return query(d, 0, false);
}

/* ---- contexts ---- */

/* One convolution of a context. */
typedef struct ConvRun {
    const RtConvDesc *d;
    ConvPlan plan;  /* plan.pd is NULL once the primitive exists */
    bool direct;    /* the double loop of conv_ref.c, not oneDNN */
    char impl[200]; /* what rt_conv_impl returns */
    double *scale;  /* [cout] and shift [cout]: bias and batch norm */
    double *shift;  /* (rt_conv_channel_affine) */
    dnnl_primitive_t prim;
    dnnl_memory_t src, wei, bias, dst, pad, post[RT_CONV_MAX_POST];
    void *wprep;  /* weights in the primitive's layout */
    float *bprep; /* folded f32 bias, NULL without bias or batch norm */
    /* Weights that are not constant are folded into wplain (f32, laid out
     * like the weight tensor) and reordered into wprep at every call. */
    float *wplain;
    size_t wplain_mapped; /* constant weights: wplain is an mmap of this many bytes */
    dnnl_memory_t wuser;
    dnnl_primitive_t wreorder;
    /* Staged: oneDNN reorders between the real source and destination and
     * their dense f32 copies (the real tensors' memories in uin/uout, the
     * copies' in src/dst). NULL: conv_ref.c's plain loops, when oneDNN has
     * no fast reorder for a pair (its "simple" ones are no faster). */
    dnnl_primitive_t rin, rout;
    dnnl_memory_t uin, uout;
    void *private_scratch; /* when the arena's planned scratch is too small */
    int exec_failures;     /* calls oneDNN refused, run by the direct loop instead */
} ConvRun;

typedef struct ConvState {
    int threads;
    /* TGC_CONV_KEEP_PARAMS=1: the params stay resident after preparation,
     * as before issue 32 (tests measure the bytes the release saves). */
    bool keep_params;
    RtFileMaps maps; /* while the weights are prepared */
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    int nconvs;
    ConvRun runs[];
} ConvState;

static float round_to(RtDType t, double v) {
    float f = (float)v;
    if (t == RT_F16) return rt_f16_to_f32(rt_f32_to_f16(f));
    if (t == RT_BF16) return rt_bf16_to_f32(rt_f32_to_bf16(f));
    return f;
}

/* w * scale[o] and shift into r's f32 plain weights and bias, rounded to
 * the convolution's dtype (then exact in f32). */
static void fold(ConvRun *r, void **bufs) {
    const RtConvDesc *d = r->d;
    RtDType t = (RtDType)d->dtype;
    rt_conv_channel_affine(d, bufs, r->scale, r->shift);
    const char *w = rt_conv_ptr(bufs, d->weight);
    int64_t icg = d->cin / d->groups, ocg = d->cout / d->groups, kk = d->k[0] * d->k[1];
    int64_t total = d->cout * icg * kk;
    for (int64_t i = 0; i < total; i++) {
        /* The output channel: dim 0 of a convolution's weight, dim 1 (per
         * group) of a transposed one's. */
        int64_t o = d->transposed ? (i / (ocg * kk)) / icg * ocg + (i / kk) % ocg : i / (icg * kk);
        double v = rt_load_float(w, t, (size_t)i);
        r->wplain[i] = round_to(t, d->has_bn ? v * r->scale[o] : v);
    }
    if (r->bprep)
        for (int64_t o = 0; o < d->cout; o++)
            r->bprep[o] = round_to(t, r->shift[o]);
}

/* After a constant convolution's weights are folded and reordered, the
 * params they came from (weight, bias, batch norm) are read by nothing
 * else the convolution runs (the direct loop after a failed call would
 * read them again, from the file): their pages go, so that the process
 * holds each weight once, in oneDNN's layout (issue 32). A param other
 * kernels also read comes back on their first read; tgc report counts it
 * then (driver/report_process.c). */
static void release_params(const RtFileMaps *m, const ConvRun *r, void **bufs) {
    const RtConvDesc *d = r->d;
    size_t es = rt_dtype_size((RtDType)d->dtype);
    int64_t wn = d->cout * (d->cin / d->groups) * d->k[0] * d->k[1];
    rt_release_pages(m, rt_conv_ptr(bufs, d->weight), (size_t)wn * es);
    RtConvRef vec[5] = {d->bias, d->bn_mean, d->bn_var, d->bn_weight, d->bn_bias};
    for (int i = 0; i < 5; i++)
        if (vec[i].slot >= 0 && (i == 0 || d->has_bn))
            rt_release_pages(m, rt_conv_ptr(bufs, vec[i]), (size_t)d->cout * es);
}

/* The plain weights of a constant convolution live only while it is
 * prepared: mapped and unmapped, so that they leave the process at once
 * rather than stay in malloc's heap (or raise its mmap threshold) and the
 * load's peak is the one tgc report states. */
static float *plain_alloc(ConvRun *r, size_t n) {
    if (!r->d->constant_weights) return rt_aligned_alloc(n);
    void *m = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    r->wplain_mapped = n ? n : 1;
    return m;
}

static void plain_free(ConvRun *r) {
    if (r->wplain && r->wplain_mapped)
        munmap(r->wplain, r->wplain_mapped);
    else
        rt_aligned_free(r->wplain);
    r->wplain = NULL, r->wplain_mapped = 0;
}

static void run_free(ConvRun *r) {
    if (r->prim) dnnl_primitive_destroy(r->prim);
    if (r->wreorder) dnnl_primitive_destroy(r->wreorder);
    if (r->rin) dnnl_primitive_destroy(r->rin);
    if (r->rout) dnnl_primitive_destroy(r->rout);
    if (r->plan.pd) dnnl_primitive_desc_destroy(r->plan.pd);
    dnnl_memory_t *mems[] = {&r->src, &r->wei,   &r->bias, &r->dst,
                             &r->pad, &r->wuser, &r->uin,  &r->uout};
    for (size_t i = 0; i < sizeof mems / sizeof *mems; i++)
        if (*mems[i]) dnnl_memory_destroy(*mems[i]);
    for (int i = 0; i < RT_CONV_MAX_POST; i++)
        if (r->post[i]) dnnl_memory_destroy(r->post[i]);
    rt_aligned_free(r->wprep);
    rt_aligned_free(r->bprep);
    plain_free(r);
    rt_aligned_free(r->private_scratch);
    free(r->scale);
    memset(r, 0, sizeof *r);
}

/* A reorder from -> to that oneDNN runs with an optimised kernel and no
 * scratchpad of its own (the arena is the only memory a run uses); NULL
 * otherwise. */
static dnnl_primitive_t fast_reorder(dnnl_engine_t eng, const dnnl_memory_desc_t *from,
                                     const dnnl_memory_desc_t *to) {
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t prim = NULL;
    if (dnnl_primitive_attr_create(&attr) ||
        dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) ||
        dnnl_reorder_primitive_desc_create(&rpd, from, eng, to, eng, attr))
        rpd = NULL;
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (!rpd) return NULL;
    const dnnl_memory_desc_t *pad = dnnl_primitive_desc_query_md(rpd, dnnl_query_scratchpad_md, 0);
    bool ok = strncmp(impl_name(rpd), "jit", 3) == 0 && (!pad || !dnnl_memory_desc_get_size(pad));
    if (ok && dnnl_primitive_create(&prim, rpd)) prim = NULL;
    dnnl_primitive_desc_destroy(rpd);
    return prim;
}

static dnnl_data_type_t dnnl_type(RtDType t) {
    return t == RT_F16 ? dnnl_f16 : t == RT_BF16 ? dnnl_bf16 : dnnl_f32;
}

/* The staged copies' reorders (each NULL when oneDNN has no fast one). */
static bool staged_reorders(ConvRun *r, dnnl_engine_t eng) {
    const RtConvDesc *d = r->d;
    dnnl_dims_t sdims = {d->n, d->cin, d->in[0], d->in[1]};
    dnnl_dims_t ddims = {d->n, d->cout, d->out[0], d->out[1]};
    dnnl_dims_t sst, dst;
    canon_strides(sdims, d->src_strides, sst);
    canon_strides(ddims, d->dst_strides, dst);
    dnnl_memory_desc_t umd_in, umd_out;
    dnnl_data_type_t t = dnnl_type((RtDType)d->dtype);
    if (dnnl_memory_desc_init_by_strides(&umd_in, 4, sdims, t, sst) ||
        dnnl_memory_desc_init_by_strides(&umd_out, 4, ddims, t, dst))
        return true; /* the loops */
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(r->plan.pd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *dmd = dnnl_primitive_desc_query_md(r->plan.pd, dnnl_query_dst_md, 0);
    if (!r->plan.src_direct) r->rin = fast_reorder(eng, &umd_in, smd);
    if (!r->plan.dst_direct) r->rout = fast_reorder(eng, dmd, &umd_out);
    if (r->rin && dnnl_memory_create(&r->uin, &umd_in, eng, DNNL_MEMORY_NONE)) return false;
    if (r->rout && dnnl_memory_create(&r->uout, &umd_out, eng, DNNL_MEMORY_NONE)) return false;
    return true;
}

/* Makes r's primitive, memory objects, weights and weight reorder from
 * r->plan.pd; false when oneDNN refuses something (*nomem: when we ran out
 * of memory). r is left partly built, for run_free. Called with OpenMP at
 * the context's thread count (run_setup). */
static bool run_build(ConvState *s, ConvRun *r, void **bufs, bool *nomem) {
    const RtConvDesc *d = r->d;
    dnnl_engine_t eng = s->eng;
    dnnl_primitive_desc_t pd = r->plan.pd;
    if (dnnl_primitive_create(&r->prim, pd)) return false;
#define MD(q, i) dnnl_primitive_desc_query_md(pd, q, i)
    const dnnl_memory_desc_t *wmd = MD(dnnl_query_weights_md, 0);
    if (dnnl_memory_create(&r->src, MD(dnnl_query_src_md, 0), eng, DNNL_MEMORY_NONE) ||
        dnnl_memory_create(&r->dst, MD(dnnl_query_dst_md, 0), eng, DNNL_MEMORY_NONE))
        return false;
    if (r->plan.total > r->plan.off_pad &&
        dnnl_memory_create(&r->pad, MD(dnnl_query_scratchpad_md, 0), eng, DNNL_MEMORY_NONE))
        return false;
    if (r->plan.staged && !staged_reorders(r, eng)) return false;
    for (int i = 0; i < d->npost; i++) {
        if (d->post[i].kind != RT_CONV_POST_ADD) continue;
        int arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(r->plan.post_arg[i]) | DNNL_ARG_SRC_1;
        if (dnnl_memory_create(&r->post[i], MD(dnnl_query_exec_arg_md, arg), eng, DNNL_MEMORY_NONE))
            return false;
    }
    int64_t cout = d->cout, total = cout * (d->cin / d->groups) * d->k[0] * d->k[1];
    bool with_bias = d->bias.slot >= 0 || d->has_bn;
    r->wprep = rt_aligned_alloc(dnnl_memory_desc_get_size(wmd));
    r->wplain = plain_alloc(r, (size_t)total * sizeof(float));
    if (with_bias) r->bprep = rt_aligned_alloc((size_t)cout * sizeof(float));
    if (!r->wprep || !r->wplain || (with_bias && !r->bprep)) {
        *nomem = true;
        return false;
    }
    if (dnnl_memory_create(&r->wei, wmd, eng, r->wprep)) return false;
    if (r->bprep && dnnl_memory_create(&r->bias, MD(dnnl_query_weights_md, 1), eng, r->bprep))
        return false;
#undef MD
    /* The weights as they are (folded, f32) and their reorder into the
     * primitive's layout. */
    dnnl_dims_t wdims, wuser;
    int wnd = weight_dims(d, wdims, wuser);
    dnnl_memory_desc_t umd;
    dnnl_primitive_desc_t rpd;
    if (dnnl_memory_desc_init_by_strides(&umd, wnd, wdims, dnnl_f32, wuser) ||
        dnnl_memory_create(&r->wuser, &umd, eng, r->wplain) ||
        dnnl_reorder_primitive_desc_create(&rpd, &umd, eng, wmd, eng, NULL))
        return false;
    dnnl_status_t st = dnnl_primitive_create(&r->wreorder, rpd);
    dnnl_primitive_desc_destroy(rpd);
    if (st) return false;
    if (!d->constant_weights) return true;
    /* Constant weights: folded and reordered now, once. The params go as
     * soon as they are folded, so that at most one convolution's plain
     * weights are held beside the prepared ones. */
    fold(r, bufs);
    if (!s->keep_params) release_params(&s->maps, r, bufs);
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, r->wuser}, {DNNL_ARG_TO, r->wei}};
    st = dnnl_primitive_execute(r->wreorder, s->stream, 2, args); /* at the context's threads */
    if (!st) st = dnnl_stream_wait(s->stream);
    if (st) return false;
    dnnl_primitive_destroy(r->wreorder);
    dnnl_memory_destroy(r->wuser);
    plain_free(r);
    r->wreorder = NULL, r->wuser = NULL;
    return true;
}

static RtStatus run_setup(ConvState *s, ConvRun *r, const RtConvDesc *d, int index, void **bufs,
                          RtError *err) {
    r->d = d;
    /* Both paths use the per-channel affine map: the fold, the direct loop
     * (also the fallback of a call oneDNN fails). */
    r->scale = malloc((size_t)d->cout * 2 * sizeof(double));
    if (!r->scale)
        return rt_error_set(err, TGCRT_ERR_NOMEM, "convolution %d: out of memory", index);
    r->shift = r->scale + d->cout;
    conv_plan(d, s->eng, s->threads, &r->plan);
    char why[sizeof r->plan.why + 80];
    snprintf(why, sizeof why, "%s", r->plan.why);
    if (r->plan.pd) {
        snprintf(r->impl, sizeof r->impl, "%s%s", impl_name(r->plan.pd),
                 r->plan.staged && d->dtype == RT_F32 ? "; staged" : "");
        bool nomem = false;
        /* Primitives (the reorders too) size their work split by the
         * thread count current when they are made: the context's. */
        int saved = omp_get_max_threads();
        omp_set_num_threads(s->threads);
        bool built = run_build(s, r, bufs, &nomem);
        omp_set_num_threads(saved);
        dnnl_primitive_desc_destroy(r->plan.pd);
        r->plan.pd = NULL;
        if (nomem)
            return rt_error_set(err, TGCRT_ERR_NOMEM,
                                "convolution %d: out of memory for its weights", index);
        if (built) {
            size_t need = r->plan.total;
            if (need > (size_t)(d->scratch_bytes > 0 ? d->scratch_bytes : 0)) {
                /* Planned for another machine or thread count: this
                 * context keeps its own scratch rather than fail. */
                r->private_scratch = rt_aligned_alloc(need);
                if (!r->private_scratch)
                    return rt_error_set(err, TGCRT_ERR_NOMEM,
                                        "convolution %d: out of memory for %zu bytes of scratch",
                                        index, need);
                size_t len = strlen(r->impl);
                snprintf(r->impl + len, sizeof r->impl - len,
                         "; private scratch %zu > planned %lld", need, (long long)d->scratch_bytes);
            }
        } else {
            snprintf(why, sizeof why, "oneDNN could not build the primitive of %.60s", r->impl);
            double *keep = r->scale;
            r->scale = NULL;
            run_free(r);
            r->d = d, r->scale = keep, r->shift = keep + d->cout;
        }
    }
    if (!r->prim) {
        r->direct = true;
        snprintf(r->impl, sizeof r->impl, "direct: %.180s", why);
    }
    return TGCRT_OK;
}

RtStatus rt_conv_context_setup(const RtProgram *p, void **bufs, int threads, void **state,
                               RtError *err) {
    *state = NULL;
    if (!p || p->nconvs < 0 || (p->nconvs && !p->convs))
        return rt_error_set(err, TGCRT_ERR_ARG, "convolutions: bad program descriptor");
    for (int i = 0; i < p->nconvs; i++) {
        RtStatus st = conv_check(&p->convs[i], i, err);
        if (st) return st;
    }
    ConvState *s = calloc(1, sizeof *s + (size_t)p->nconvs * sizeof(ConvRun));
    if (!s) return rt_error_set(err, TGCRT_ERR_NOMEM, "convolutions: out of memory");
    s->threads = conv_threads(threads);
    const char *keep = getenv("TGC_CONV_KEEP_PARAMS");
    s->keep_params = keep && *keep && strcmp(keep, "0");
    if (dnnl_engine_create(&s->eng, dnnl_cpu, 0) ||
        dnnl_stream_create(&s->stream, s->eng, dnnl_stream_default_flags)) {
        rt_conv_context_free(s);
        return rt_error_set(err, TGCRT_ERR_INTERNAL, "convolutions: oneDNN has no CPU engine");
    }
    if (!s->keep_params) rt_file_maps_read(&s->maps);
    for (int i = 0; i < p->nconvs; i++) {
        s->nconvs = i + 1; /* what rt_conv_context_free frees */
        RtStatus st = run_setup(s, &s->runs[i], &p->convs[i], i, bufs, err);
        if (st) {
            rt_conv_context_free(s);
            return st;
        }
    }
    free(s->maps.r);
    s->maps.r = NULL, s->maps.n = 0;
    *state = s;
    return TGCRT_OK;
}

void rt_conv_context_free(void *state) {
    ConvState *s = state;
    if (!s) return;
    for (int i = 0; i < s->nconvs; i++)
        run_free(&s->runs[i]);
    free(s->maps.r);
    if (s->stream) dnnl_stream_destroy(s->stream);
    if (s->eng) dnnl_engine_destroy(s->eng);
    free(s);
}

const char *rt_conv_impl(const void *state, int64_t index) {
    const ConvState *s = state;
    if (!s || index < 0 || index >= s->nconvs) return "";
    return s->runs[index].impl;
}

static void run_direct(ConvRun *r, void **bufs) {
    rt_conv_channel_affine(r->d, bufs, r->scale, r->shift);
    rt_conv_direct(r->d, bufs, r->scale, r->shift);
}

void rt_conv(void *state, void **bufs, int64_t index) {
    ConvState *s = state;
    if (!s || index < 0 || index >= s->nconvs) return;
    ConvRun *r = &s->runs[index];
    const RtConvDesc *d = r->d;
    if (r->direct) {
        run_direct(r, bufs);
        return;
    }
    const ConvPlan *pl = &r->plan;
    RtDType t = (RtDType)d->dtype;
    char *scratch = r->private_scratch ? r->private_scratch : (char *)bufs[0] + d->scratch_offset;
    char *src = rt_conv_ptr(bufs, d->src), *dst = rt_conv_ptr(bufs, d->dst);
    int64_t sdims[4] = {d->n, d->cin, d->in[0], d->in[1]};
    int64_t ddims[4] = {d->n, d->cout, d->out[0], d->out[1]};
    int saved = omp_get_max_threads();
    omp_set_num_threads(s->threads);
    dnnl_status_t st = dnnl_success;
    if (pl->staged && !pl->src_direct) {
        if (r->rin) {
            dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, r->uin}, {DNNL_ARG_TO, r->src}};
            st = dnnl_memory_set_data_handle(r->uin, src);
            if (!st) st = dnnl_memory_set_data_handle(r->src, scratch);
            if (!st) st = dnnl_primitive_execute(r->rin, s->stream, 2, a);
        } else {
            rt_conv_to_f32(src, t, sdims, d->src_strides, (float *)scratch, pl->src_str);
        }
        src = scratch;
    }
    if (pl->staged && !pl->dst_direct) dst = scratch + pl->off_dst;
    dnnl_exec_arg_t args[5 + RT_CONV_MAX_POST];
    int nargs = 0;
#define ARG(a, m, ptr)                                                                             \
    do {                                                                                           \
        if (!st) st = dnnl_memory_set_data_handle(m, ptr);                                         \
        args[nargs++] = (dnnl_exec_arg_t){a, m};                                                   \
    } while (0)
    ARG(DNNL_ARG_SRC, r->src, src);
    ARG(DNNL_ARG_DST, r->dst, dst);
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, r->wei};
    if (r->bias) args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, r->bias};
    if (r->pad) ARG(DNNL_ARG_SCRATCHPAD, r->pad, scratch + pl->off_pad);
    for (int i = 0; i < d->npost; i++) {
        if (!r->post[i]) continue;
        char *p = rt_conv_ptr(bufs, d->post[i].src);
        if (pl->post_copy[i]) {
            float *copy = (float *)(scratch + pl->off_post[i]);
            rt_conv_to_f32(p, RT_F32, ddims, d->post[i].strides, copy, pl->dst_str);
            p = (char *)copy;
        }
        ARG(DNNL_ARG_ATTR_MULTIPLE_POST_OP(pl->post_arg[i]) | DNNL_ARG_SRC_1, r->post[i], p);
    }
#undef ARG
    if (!st && !d->constant_weights) {
        /* Weights computed by the graph: fold and reorder them now. */
        fold(r, bufs);
        dnnl_exec_arg_t wargs[2] = {{DNNL_ARG_FROM, r->wuser}, {DNNL_ARG_TO, r->wei}};
        st = dnnl_primitive_execute(r->wreorder, s->stream, 2, wargs);
    }
    if (!st) st = dnnl_primitive_execute(r->prim, s->stream, nargs, args);
    if (!st && pl->staged && !pl->dst_direct && r->rout) {
        dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, r->dst}, {DNNL_ARG_TO, r->uout}};
        st = dnnl_memory_set_data_handle(r->uout, rt_conv_ptr(bufs, d->dst));
        if (!st) st = dnnl_primitive_execute(r->rout, s->stream, 2, a);
    }
    if (!st) st = dnnl_stream_wait(s->stream);
    omp_set_num_threads(saved);
    if (st) {
        /* Not expected once the primitive exists; the result must still
         * be right, so this call (only) runs the direct loop. */
        r->exec_failures++;
        run_direct(r, bufs);
        return;
    }
    if (pl->staged && !pl->dst_direct && !r->rout)
        rt_conv_from_f32((float *)dst, pl->dst_str, rt_conv_ptr(bufs, d->dst), t, ddims,
                         d->dst_strides);
}
