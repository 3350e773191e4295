/* The convolution runtime (runtime/conv.c, conv_ref.c) against a naive
 * double reference written here: conv2d with stride, padding (symmetric
 * and not), dilation and groups (depthwise too), conv1d as height 1,
 * conv_transpose2d with stride, output padding, groups and dilation, batch
 * norm folding (with and without bias, partial), post-op chains (every
 * eltwise kind, relu/clip with a strided residual add), channels-last and
 * sliced (non-contiguous) sources and destinations, f64, bf16 and f16,
 * constant and per-call weights, scratch planned by rt_conv_scratch_bytes
 * (guard bytes around it must stay untouched; so must the inputs and the
 * destination's padding) or not planned (the context allocates its own),
 * two convolutions sharing one scratch, 1 and 2 threads, two contexts
 * running at once on two threads, and malformed
 * descriptors refused with a message. An ADD operand laid out otherwise
 * than the destination is checked on NHWC destinations, where oneDNN 2.6's
 * gemm kernel would address it with the destination's offsets.
 *
 * Tolerances, against the exact (double) reference:
 *   f64       |got - ref| <= 1e-12 * max(1, |ref|)
 *   f32       |got - ref| <= 1e-4 * max(1, |ref|)  (f32 accumulation
 *             over up to ~300 terms of size <= 1, and oneDNN's vectorised
 *             exp/tanh/erf in the post-ops, are far inside this)
 *   bf16/f16  one unit in the last place of the dtype at |ref| (plus
 *             1e-5): PyTorch's answer is f32 arithmetic on the rounded
 *             inputs rounded once, so the reference is the double result
 *             on the same rounded inputs and rounded weights (batch norm
 *             folded, then rounded to the dtype, as the runtime does). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "../runtime/rt_test.h"
#include "conv_internal.h"
#include "tgcrt.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(double lo, double hi) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

/* ---- tensors: exact values (logical, dense NCHW) and their storage ---- */

enum { L_NCHW, L_NHWC, L_SLICE, L_PADROW }; /* storage layouts of 4-d tensors */

typedef struct Tensor {
    RtDType dt;
    int64_t dims[4], strides[4], base; /* base: elements before element 0 */
    char *mem;                         /* storage */
    double *val;                       /* logical values, dense NCHW */
    int64_t numel, size;               /* logical elements, storage elements */
} Tensor;

static double round_dt(RtDType dt, double v) {
    float f = (float)v;
    switch (dt) {
    case RT_F64: return v;
    case RT_F32: return f;
    case RT_F16: return rt_f16_to_f32(rt_f32_to_f16(f));
    default: return rt_bf16_to_f32(rt_f32_to_bf16(f));
    }
}

static void store(char *p, RtDType dt, int64_t i, double v) {
    size_t es = rt_dtype_size(dt);
    if (dt == RT_F64) {
        memcpy(p + i * 8, &v, 8);
    } else if (dt == RT_F32) {
        float f = (float)v;
        memcpy(p + i * 4, &f, 4);
    } else {
        uint16_t h = dt == RT_F16 ? rt_f32_to_f16((float)v) : rt_f32_to_bf16((float)v);
        memcpy(p + i * (int64_t)es, &h, 2);
    }
}

static double fetch(const char *p, RtDType dt, int64_t i) {
    if (dt == RT_F64) {
        double v;
        memcpy(&v, p + i * 8, 8);
        return v;
    }
    if (dt == RT_F32) {
        float f;
        memcpy(&f, p + i * 4, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p + i * 2, 2);
    return dt == RT_F16 ? rt_f16_to_f32(h) : rt_bf16_to_f32(h);
}

static int64_t phys(const Tensor *t, int64_t n, int64_t c, int64_t h, int64_t w) {
    return t->base + n * t->strides[0] + c * t->strides[1] + h * t->strides[2] + w * t->strides[3];
}

/* A tensor of dims (4-d, or fewer with the rest 1) with values in [lo, hi],
 * rounded to dt, stored in layout. */
static Tensor tensor(RtDType dt, const int64_t d[4], int layout, double lo, double hi) {
    Tensor t = {.dt = dt};
    memcpy(t.dims, d, sizeof t.dims);
    int64_t N = d[0], C = d[1], H = d[2], W = d[3], Cp = C + 3, Wp = W + 3;
    int64_t size;
    switch (layout) {
    case L_NHWC:
        t.strides[1] = 1, t.strides[3] = C, t.strides[2] = W * C, t.strides[0] = H * W * C;
        size = N * C * H * W;
        break;
    case L_SLICE: /* channels 2..C+2 of a tensor of C + 3 channels */
        t.strides[3] = 1, t.strides[2] = W, t.strides[1] = H * W, t.strides[0] = Cp * H * W;
        t.base = 2 * H * W;
        size = N * Cp * H * W;
        break;
    case L_PADROW: /* rows of W + 3 elements */
        t.strides[3] = 1, t.strides[2] = Wp, t.strides[1] = H * Wp, t.strides[0] = C * H * Wp;
        size = N * C * H * Wp;
        break;
    default:
        t.strides[3] = 1, t.strides[2] = W, t.strides[1] = H * W, t.strides[0] = C * H * W;
        size = N * C * H * W;
    }
    t.numel = N * C * H * W, t.size = size;
    t.mem = calloc((size_t)size, rt_dtype_size(dt));
    t.val = calloc((size_t)t.numel, sizeof(double));
    for (int64_t n = 0, i = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++, i++) {
                    t.val[i] = round_dt(dt, urand(lo, hi));
                    store(t.mem, dt, phys(&t, n, c, h, w), t.val[i]);
                }
    return t;
}

static void tensor_free(Tensor *t) {
    free(t->mem);
    free(t->val);
}

/* ---- cases ---- */

typedef struct Case {
    const char *name;
    RtDType dt;
    int transposed;
    int64_t n, cin, cout, groups, in[2], k[2], stride[2], dil[2], pl[2], pr[2], opad[2];
    int bias, bn;   /* bn: 1 full, 2 mean and var only */
    int sl, dl, al; /* layouts of source, destination, ADD operand */
    int npost;
    RtConvPost post[RT_CONV_MAX_POST];
    int nonconst;     /* weights not constant: changed between calls */
    int threads;      /* 0: 2 */
    int unplanned;    /* plan no scratch: the context must allocate its own */
    const char *impl; /* rt_conv_impl must contain this, when set */
} Case;

#define G2(a, b)                                                                                   \
    { a, b }
#define GEO(in0, in1, k0, k1, s0, s1, d0, d1, pl0, pl1, pr0, pr1)                                  \
    .in = G2(in0, in1), .k = G2(k0, k1), .stride = G2(s0, s1), .dil = G2(d0, d1),                  \
    .pl = G2(pl0, pl1), .pr = G2(pr0, pr1)

#define P(k, a, b)                                                                                 \
    { .kind = RT_CONV_POST_##k, .alpha = a, .beta = b }

static double post_ref(const RtConvPost *p, double x) {
    double s = 1 / (1 + exp(-x));
    switch (p->kind) {
    case RT_CONV_POST_RELU: return x > 0 ? x : x * p->alpha;
    case RT_CONV_POST_CLIP: return fmin(fmax(x, p->alpha), p->beta);
    case RT_CONV_POST_HARDSWISH: return x * fmin(fmax(x + 3, 0), 6) / 6;
    case RT_CONV_POST_HARDSIGMOID: return fmin(fmax(x + 3, 0), 6) / 6;
    case RT_CONV_POST_ELU: return x > 0 ? x : p->alpha * (exp(x) - 1);
    case RT_CONV_POST_SIGMOID: return s;
    case RT_CONV_POST_TANH: return tanh(x);
    case RT_CONV_POST_SILU: return x * s;
    case RT_CONV_POST_GELU_ERF: return x * 0.5 * erfc(-x / sqrt(2.0));
    case RT_CONV_POST_GELU_TANH:
        return 0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * pow(x, 3))));
    case RT_CONV_POST_MISH: return x * tanh(log(1 + exp(x)));
    }
    return x;
}

static int64_t out_size(const Case *c, int i) {
    int64_t ek = c->dil[i] * (c->k[i] - 1) + 1;
    if (c->transposed) return (c->in[i] - 1) * c->stride[i] - c->pl[i] - c->pr[i] + ek + c->opad[i];
    return (c->in[i] + c->pl[i] + c->pr[i] - ek) / c->stride[i] + 1;
}

/* The reference: out (dense NCHW) from the tensors' exact values. */
static void reference(const Case *c, const Tensor *x, const Tensor *w, const Tensor *b,
                      const Tensor *bn, const Tensor *add, double *out) {
    int64_t O0 = out_size(c, 0), O1 = out_size(c, 1), G = c->groups;
    int64_t icg = c->cin / G, ocg = c->cout / G, K0 = c->k[0], K1 = c->k[1];
    int64_t on = c->n * c->cout * O0 * O1;
    bool low = c->dt == RT_F16 || c->dt == RT_BF16;
    double *scale = calloc((size_t)c->cout, sizeof(double)), *wv = malloc((size_t)w->numel * 8);
    for (int64_t o = 0; o < c->cout; o++) {
        double v = c->bn ? bn[1].val[o] : 1, g = c->bn == 1 ? bn[2].val[o] : 1;
        scale[o] = c->bn ? g / sqrt(v + 1e-5) : 1;
    }
    /* 16-bit: the folded weights rounded to the dtype, as specified. */
    for (int64_t i = 0; i < w->numel; i++) {
        int64_t o = c->transposed ? (i / (ocg * K0 * K1)) / icg * ocg + (i / (K0 * K1)) % ocg
                                  : i / (icg * K0 * K1);
        wv[i] = low && c->bn ? round_dt(c->dt, w->val[i] * scale[o]) : w->val[i];
    }
    memset(out, 0, (size_t)on * sizeof(double));
#define OUT(n, o, h, q) out[(((n)*c->cout + (o)) * O0 + (h)) * O1 + (q)]
#define XV(n, ch, h, q) x->val[(((n)*c->cin + (ch)) * c->in[0] + (h)) * c->in[1] + (q)]
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t g = 0; g < G; g++)
            for (int64_t ol = 0; ol < ocg; ol++)
                for (int64_t il = 0; il < icg; il++)
                    for (int64_t kh = 0; kh < K0; kh++)
                        for (int64_t kw = 0; kw < K1; kw++) {
                            int64_t o = g * ocg + ol, ci = g * icg + il;
                            if (!c->transposed) {
                                double wt = wv[((o * icg + il) * K0 + kh) * K1 + kw];
                                for (int64_t oh = 0; oh < O0; oh++)
                                    for (int64_t ow = 0; ow < O1; ow++) {
                                        int64_t ih = oh * c->stride[0] - c->pl[0] + kh * c->dil[0];
                                        int64_t iw = ow * c->stride[1] - c->pl[1] + kw * c->dil[1];
                                        if (ih >= 0 && ih < c->in[0] && iw >= 0 && iw < c->in[1])
                                            OUT(n, o, oh, ow) += XV(n, ci, ih, iw) * wt;
                                    }
                            } else { /* scatter: each input adds to the outputs it feeds */
                                double wt = wv[((ci * ocg + ol) * K0 + kh) * K1 + kw];
                                for (int64_t ih = 0; ih < c->in[0]; ih++)
                                    for (int64_t iw = 0; iw < c->in[1]; iw++) {
                                        int64_t oh = ih * c->stride[0] - c->pl[0] + kh * c->dil[0];
                                        int64_t ow = iw * c->stride[1] - c->pl[1] + kw * c->dil[1];
                                        if (oh >= 0 && oh < O0 && ow >= 0 && ow < O1)
                                            OUT(n, o, oh, ow) += XV(n, ci, ih, iw) * wt;
                                    }
                            }
                        }
    for (int64_t i = 0; i < on; i++) {
        int64_t o = (i / (O0 * O1)) % c->cout;
        double y = out[i] + (c->bias ? b->val[o] : 0);
        if (c->bn && low) {
            /* folded: the weights carry the scale, the bias the rest */
            double shift = ((c->bias ? b->val[o] : 0) - bn[0].val[o]) * scale[o] +
                           (c->bn == 1 ? bn[3].val[o] : 0);
            y = out[i] + round_dt(c->dt, shift);
        } else if (c->bn) {
            y = (y - bn[0].val[o]) / sqrt(bn[1].val[o] + 1e-5) * (c->bn == 1 ? bn[2].val[o] : 1) +
                (c->bn == 1 ? bn[3].val[o] : 0);
        }
        for (int p = 0; p < c->npost; p++)
            y = c->post[p].kind == RT_CONV_POST_ADD ? y + add->val[i] : post_ref(&c->post[p], y);
        out[i] = y;
    }
#undef OUT
#undef XV
    free(scale);
    free(wv);
}

static double tolerance(RtDType dt, double ref) {
    double a = fabs(ref);
    switch (dt) {
    case RT_F64: return 1e-12 * fmax(1, a);
    case RT_F32: return 1e-4 * fmax(1, a);
    case RT_F16: return ldexp(1, (a > 0 ? ilogb(a) : -24) - 10) + 1e-5;
    default: return ldexp(1, (a > 0 ? ilogb(a) : -133) - 7) + 1e-5;
    }
}

/* Compares dst with ref; returns the number of mismatches (printing the first). */
static int compare(const Case *c, const char *what, const Tensor *dst, const double *ref) {
    int bad = 0;
    for (int64_t n = 0, i = 0; n < dst->dims[0]; n++)
        for (int64_t o = 0; o < dst->dims[1]; o++)
            for (int64_t h = 0; h < dst->dims[2]; h++)
                for (int64_t w = 0; w < dst->dims[3]; w++, i++) {
                    double got = fetch(dst->mem, c->dt, phys(dst, n, o, h, w));
                    if (!(fabs(got - ref[i]) <= tolerance(c->dt, ref[i])) && !bad++)
                        printf("%s (%s): [%lld,%lld,%lld,%lld] got %.9g, expected %.9g\n", c->name,
                               what, (long long)n, (long long)o, (long long)h, (long long)w, got,
                               ref[i]);
                }
    return bad;
}

/* Fills t's storage with NaN bytes (0xff), before a call writes it. */
static void poison(Tensor *t, char *mem) {
    memset(mem, 0xff, (size_t)t->size * rt_dtype_size(t->dt));
}

/* Storage elements of t outside its logical ones that are no longer all
 * 0xff: what a call wrote where it must not. */
static int64_t gaps_written(const Tensor *t, const char *mem) {
    size_t es = rt_dtype_size(t->dt);
    char *used = calloc((size_t)t->size, 1);
    for (int64_t n = 0; n < t->dims[0]; n++)
        for (int64_t c = 0; c < t->dims[1]; c++)
            for (int64_t h = 0; h < t->dims[2]; h++)
                for (int64_t w = 0; w < t->dims[3]; w++)
                    used[phys(t, n, c, h, w)] = 1;
    int64_t bad = 0;
    for (int64_t i = 0; i < t->size; i++)
        for (size_t k = 0; !used[i] && k < es; k++)
            bad += (unsigned char)mem[(size_t)i * es + k] != 0xff;
    free(used);
    return bad;
}

/* The context's buffers: slot 0 is the arena (the scratch, between guards). */
enum { S_SRC = 1, S_W, S_B, S_MEAN, S_VAR, S_G, S_BETA, S_DST, S_ADD, S_DST2, S_COUNT };
#define GUARD 128

static void run_case(const Case *c) {
    RtDType dt = c->dt;
    int64_t O0 = out_size(c, 0), O1 = out_size(c, 1);
    int64_t sd[4] = {c->n, c->cin, c->in[0], c->in[1]}, dd[4] = {c->n, c->cout, O0, O1};
    int64_t wd[4] = {c->transposed ? c->cin : c->cout,
                     c->transposed ? c->cout / c->groups : c->cin / c->groups, c->k[0], c->k[1]};
    int64_t cd[4] = {c->cout, 1, 1, 1};
    Tensor x = tensor(dt, sd, c->sl, -1, 1), w = tensor(dt, wd, L_NCHW, -0.5, 0.5);
    Tensor b = tensor(dt, cd, L_NCHW, -1, 1), dst = tensor(dt, dd, c->dl, 0, 0);
    Tensor add = tensor(dt, dd, c->al, -1, 1),
           bn[4] = {tensor(dt, cd, L_NCHW, -0.5, 0.5), tensor(dt, cd, L_NCHW, 0.5, 1.5),
                    tensor(dt, cd, L_NCHW, 0.5, 1.5), tensor(dt, cd, L_NCHW, -0.5, 0.5)};
    size_t es = rt_dtype_size(dt);
    RtConvDesc d = {.dtype = dt,
                    .transposed = c->transposed,
                    .n = c->n,
                    .cin = c->cin,
                    .cout = c->cout,
                    .groups = c->groups,
                    .constant_weights = !c->nonconst,
                    .has_bn = c->bn != 0,
                    .bn_eps = 1e-5,
                    .npost = c->npost};
    for (int i = 0; i < 2; i++) {
        d.in[i] = c->in[i], d.out[i] = i ? O1 : O0, d.k[i] = c->k[i], d.stride[i] = c->stride[i];
        d.dilation[i] = c->dil[i], d.pad_l[i] = c->pl[i], d.pad_r[i] = c->pr[i];
    }
    d.src = (RtConvRef){S_SRC, x.base * (int64_t)es};
    d.dst = (RtConvRef){S_DST, dst.base * (int64_t)es};
    d.weight = (RtConvRef){S_W, 0};
    d.bias = (RtConvRef){c->bias ? S_B : -1, 0};
    d.bn_mean = (RtConvRef){S_MEAN, 0}, d.bn_var = (RtConvRef){S_VAR, 0};
    d.bn_weight = (RtConvRef){c->bn == 1 ? S_G : -1, 0};
    d.bn_bias = (RtConvRef){c->bn == 1 ? S_BETA : -1, 0};
    memcpy(d.src_strides, x.strides, sizeof d.src_strides);
    memcpy(d.dst_strides, dst.strides, sizeof d.dst_strides);
    for (int p = 0; p < c->npost; p++) {
        d.post[p] = c->post[p];
        if (c->post[p].kind == RT_CONV_POST_ADD) {
            d.post[p].src = (RtConvRef){S_ADD, add.base * (int64_t)es};
            memcpy(d.post[p].strides, add.strides, sizeof d.post[p].strides);
        }
    }
    /* Two convolutions, the second reading the first's operands into its
     * own destination and sharing its scratch (as the planner may). */
    int threads = c->threads ? c->threads : 2;
    size_t scratch = rt_conv_scratch_bytes(&d, threads);
    d.scratch_offset = GUARD;
    d.scratch_bytes = c->unplanned ? 0 : (int64_t)scratch;
    RtConvDesc d2 = d;
    d2.dst = (RtConvRef){S_DST2, dst.base * (int64_t)es};
    char *dst2 = calloc((size_t)dst.size, es);
    unsigned char *arena = malloc(scratch + 2 * GUARD);
    memset(arena, 0xa5, scratch + 2 * GUARD);
    void *bufs[S_COUNT] = {arena,     x.mem,     w.mem,   b.mem,   bn[0].mem, bn[1].mem,
                           bn[2].mem, bn[3].mem, dst.mem, add.mem, dst2};
    RtConvDesc convs[2] = {d, d2};
    RtProgram prog = {.name = c->name, .convs = convs, .nconvs = 2};
    void *state = NULL;
    RtError err = {0};
    RtStatus st = rt_conv_context_setup(&prog, bufs, threads, &state, &err);
    CHECK_INT(TGCRT_OK, st);
    if (st) {
        printf("%s: %s\n", c->name, err.msg);
        goto done;
    }
    const char *impl = rt_conv_impl(state, 0);
    printf("  %-28s %s (scratch %zu, prepared %zu)\n", c->name, impl, scratch,
           rt_conv_prepared_bytes(&d));
    if (c->impl) CHECK_HAS(impl, c->impl);
    CHECK(!c->unplanned || !scratch || strstr(impl, "private scratch"));
    double *ref = malloc((size_t)dst.numel * sizeof(double));
    reference(c, &x, &w, &b, bn, &add, ref);
    /* Inputs are read only; dst's storage outside its elements (padded
     * rows) is left alone. */
    size_t xbytes = (size_t)x.size * es, abytes = (size_t)add.size * es;
    char *x0 = malloc(xbytes), *add0 = malloc(abytes);
    memcpy(x0, x.mem, xbytes), memcpy(add0, add.mem, abytes);
    for (int call = 0; call < 2; call++) {
        poison(&dst, dst.mem);
        rt_conv(state, bufs, 0);
        CHECK_INT(0, compare(c, call ? "second call" : "first call", &dst, ref));
        CHECK_INT(0, gaps_written(&dst, dst.mem));
    }
    poison(&dst, dst2);
    rt_conv(state, bufs, 1);
    Tensor t2 = dst;
    t2.mem = dst2;
    CHECK_INT(0, compare(c, "second convolution", &t2, ref));
    CHECK_INT(0, gaps_written(&dst, dst2));
    CHECK(!memcmp(x0, x.mem, xbytes) && !memcmp(add0, add.mem, abytes));
    free(x0);
    free(add0);
    /* New weights: used by a per-call convolution, not by a constant one. */
    for (int64_t i = 0; i < w.numel; i++) {
        w.val[i] = round_dt(dt, -w.val[i] * 0.5);
        store(w.mem, dt, i, w.val[i]);
    }
    /* (The direct loop has no prepared copy: it reads the weights.) */
    if (c->nonconst || !strncmp(impl, "direct", 6)) reference(c, &x, &w, &b, bn, &add, ref);
    rt_conv(state, bufs, 0);
    CHECK_INT(0, compare(c, "after new weights", &dst, ref));
    free(ref);
    size_t bad = 0;
    for (size_t i = 0; i < GUARD; i++)
        bad += (arena[i] != 0xa5) + (arena[GUARD + scratch + i] != 0xa5);
    CHECK_INT(0, bad);
done:
    rt_conv_context_free(state);
    free(arena);
    free(dst2);
    Tensor *all[] = {&x, &w, &b, &dst, &add, &bn[0], &bn[1], &bn[2], &bn[3]};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        tensor_free(all[i]);
}

/* Two contexts on two threads at once, each with its own dst and scratch
 * (and its own OpenMP team of 2 inside oneDNN). */
typedef struct Worker {
    const RtConvDesc *d;
    void *bufs[S_COUNT];
    const Tensor *dst;
    const Case *c;
    const double *ref;
    int setup_status, mismatches;
} Worker;

static void *worker(void *arg) {
    Worker *wk = arg;
    RtProgram prog = {.name = "concurrent", .convs = wk->d, .nconvs = 1};
    void *state = NULL;
    RtError err = {0};
    wk->setup_status = rt_conv_context_setup(&prog, wk->bufs, 2, &state, &err);
    for (int i = 0; !wk->setup_status && i < 20; i++) {
        memset(wk->bufs[S_DST], 0, (size_t)wk->dst->numel * 4);
        rt_conv(state, wk->bufs, 0);
        Tensor t = *wk->dst;
        t.mem = wk->bufs[S_DST];
        wk->mismatches += compare(wk->c, "concurrent", &t, wk->ref);
    }
    rt_conv_context_free(state);
    return NULL;
}

static void concurrent(void) {
    Case c = {"concurrent",
              RT_F32,
              0,
              1,
              16,
              16,
              1,
              GEO(12, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
              .bias = 1,
              .sl = L_NHWC,
              .dl = L_NHWC,
              .npost = 1,
              .post = {P(RELU, 0, 0)}};
    int64_t sd[4] = {1, 16, 12, 12}, wd[4] = {16, 16, 3, 3}, cd[4] = {16, 1, 1, 1};
    Tensor x = tensor(RT_F32, sd, L_NHWC, -1, 1), w = tensor(RT_F32, wd, L_NCHW, -0.5, 0.5);
    Tensor b = tensor(RT_F32, cd, L_NCHW, -1, 1), dst = tensor(RT_F32, sd, L_NHWC, 0, 0);
    double *ref = malloc((size_t)dst.numel * sizeof(double));
    reference(&c, &x, &w, &b, NULL, NULL, ref);
    RtConvDesc d = {.dtype = RT_F32,
                    .n = 1,
                    .cin = 16,
                    .cout = 16,
                    .groups = 1,
                    .in = {12, 12},
                    .out = {12, 12},
                    .k = {3, 3},
                    .stride = {1, 1},
                    .dilation = {1, 1},
                    .pad_l = {1, 1},
                    .pad_r = {1, 1},
                    .src = {S_SRC, 0},
                    .weight = {S_W, 0},
                    .bias = {S_B, 0},
                    .dst = {S_DST, 0},
                    .constant_weights = 1,
                    .npost = 1,
                    .post = {P(RELU, 0, 0)}};
    memcpy(d.src_strides, x.strides, sizeof d.src_strides);
    memcpy(d.dst_strides, dst.strides, sizeof d.dst_strides);
    d.scratch_bytes = (int64_t)rt_conv_scratch_bytes(&d, 2);
    Worker wk[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        wk[i] = (Worker){.d = &d, .dst = &dst, .c = &c, .ref = ref};
        wk[i].bufs[0] = malloc((size_t)d.scratch_bytes + 1);
        wk[i].bufs[S_SRC] = x.mem, wk[i].bufs[S_W] = w.mem, wk[i].bufs[S_B] = b.mem;
        wk[i].bufs[S_DST] = calloc((size_t)dst.numel, 4);
        CHECK_INT(0, pthread_create(&th[i], NULL, worker, &wk[i]));
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        CHECK_INT(TGCRT_OK, wk[i].setup_status);
        CHECK_INT(0, wk[i].mismatches);
        free(wk[i].bufs[0]);
        free(wk[i].bufs[S_DST]);
    }
    free(ref);
    Tensor *all[] = {&x, &w, &b, &dst};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        tensor_free(all[i]);
}

/* Malformed descriptors: setup refuses them with a message, and the size
 * queries answer 0. */
static void errors(void) {
    static int64_t dummy[64];
    RtConvDesc good = {.dtype = RT_F32,
                       .n = 1,
                       .cin = 2,
                       .cout = 2,
                       .groups = 1,
                       .in = {3, 3},
                       .out = {3, 3},
                       .k = {1, 1},
                       .stride = {1, 1},
                       .dilation = {1, 1},
                       .src = {1, 0},
                       .weight = {1, 0},
                       .bias = {-1, 0},
                       .dst = {1, 0},
                       .src_strides = {18, 9, 3, 1},
                       .dst_strides = {18, 9, 3, 1},
                       .constant_weights = 1};
    void *bufs[2] = {dummy, dummy};
    static const char *const msgs[] = {"groups 3", "output size 4 in dim 0",
                                       "post-ops are not supported on bf16 convolutions",
                                       "dtype i32", "unknown post-op kind 99"};
    for (int i = 0; i < 5; i++) {
        RtConvDesc d = good;
        if (i == 0) d.groups = 3;
        if (i == 1) d.out[0] = 4;
        if (i == 2) d.dtype = RT_BF16, d.npost = 1, d.post[0].kind = RT_CONV_POST_RELU;
        if (i == 3) d.dtype = RT_I32;
        if (i == 4) d.npost = 1, d.post[0].kind = 99;
        RtProgram p = {.name = "bad", .convs = &d, .nconvs = 1};
        void *state = (void *)&p;
        RtError err = {0};
        CHECK_INT(TGCRT_ERR_ARG, rt_conv_context_setup(&p, bufs, 1, &state, &err));
        CHECK(state == NULL);
        CHECK_HAS(err.msg, msgs[i]);
        CHECK_INT(0, rt_conv_scratch_bytes(&d, 1));
        CHECK_INT(0, rt_conv_prepared_bytes(&d));
    }
    /* The good one sets up, and a program without convolutions too. */
    RtProgram p = {.name = "good", .convs = &good, .nconvs = 1};
    void *state = NULL;
    RtError err = {0};
    CHECK_INT(TGCRT_OK, rt_conv_context_setup(&p, bufs, 1, &state, &err));
    rt_conv_context_free(state);
    p.nconvs = 0;
    CHECK_INT(TGCRT_OK, rt_conv_context_setup(&p, bufs, 1, &state, &err));
    CHECK_STR("", rt_conv_impl(state, 0)); /* no convolution 0 */
    rt_conv_context_free(state);
}

int main(void) {
    static const Case cases[] = {
        {"conv f32", RT_F32, 0, 2, 3, 4, 1, GEO(8, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1), .bias = 1},
        {"conv stride dil groups", RT_F32, 0, 2, 4, 6, 2, GEO(11, 10, 3, 2, 2, 2, 2, 1, 1, 2, 1, 2),
         .bias = 1},
        {"depthwise", RT_F32, 0, 1, 8, 8, 8, GEO(9, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1), .bias = 1},
        {"depthwise x2 nhwc", RT_F32, 0, 2, 8, 16, 8, GEO(7, 9, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1),
         .sl = L_NHWC, .dl = L_NHWC},
        {"asymmetric padding", RT_F32, 0, 1, 3, 5, 1, GEO(6, 7, 2, 4, 1, 1, 1, 1, 0, 1, 1, 2),
         .bias = 1},
        {"conv1d", RT_F32, 0, 2, 4, 3, 1, GEO(1, 20, 1, 5, 1, 2, 1, 1, 0, 2, 0, 2), .bias = 1},
        {"conv1d dil groups", RT_F32, 0, 1, 6, 4, 2, GEO(1, 17, 1, 3, 1, 1, 1, 3, 0, 3, 0, 3)},
        {"transposed s2 op1 g2", RT_F32, 1, 2, 4, 6, 2, GEO(5, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1),
         .opad = {1, 1}, .bias = 1},
        {"transposed dil2 op1", RT_F32, 1, 1, 3, 2, 1, GEO(5, 4, 3, 2, 1, 1, 2, 2, 0, 1, 0, 1),
         .opad = {1, 1}, .bias = 1},
        {"transposed 1d", RT_F32, 1, 2, 4, 4, 4, GEO(1, 9, 1, 4, 1, 3, 1, 1, 0, 1, 0, 1)},
        {"transposed nhwc", RT_F32, 1, 1, 8, 8, 1, GEO(6, 6, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1),
         .sl = L_NHWC, .dl = L_NHWC, .bias = 1},
        {"bn folding", RT_F32, 0, 2, 4, 8, 1, GEO(6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1), .bias = 1,
         .bn = 1},
        {"bn no bias, partial", RT_F32, 0, 1, 4, 4, 2, GEO(6, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
         .bn = 2},
        {"transposed bn", RT_F32, 1, 2, 4, 6, 2, GEO(4, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1),
         .opad = {0, 1}, .bias = 1, .bn = 1},
        {"conv bn relu add nhwc", RT_F32, 0, 2, 8, 8, 1, GEO(7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
         .bias = 1, .bn = 1, .sl = L_NHWC, .dl = L_NHWC, .al = L_PADROW, .npost = 2,
         .post = {P(ADD, 0, 0), P(RELU, 0, 0)}},
        {"nhwc, add nhwc", RT_F32, 0, 2, 8, 8, 1, GEO(7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
         .bias = 1, .sl = L_NHWC, .dl = L_NHWC, .al = L_NHWC, .npost = 1, .post = {P(ADD, 0, 0)}},
        {"nhwc, add nchw (copied)", RT_F32, 0, 2, 8, 8, 1, GEO(7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
         .bias = 1, .sl = L_NHWC, .dl = L_NHWC, .al = L_NCHW, .npost = 1, .post = {P(ADD, 0, 0)}},
        {"nhwc, add padded (copied)", RT_F32, 0, 2, 8, 8, 1,
         GEO(7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1), .bias = 1, .sl = L_NHWC, .dl = L_NHWC,
         .al = L_PADROW, .npost = 1, .post = {P(ADD, 0, 0)}},
        {"nchw, add padded (copied)", RT_F32, 0, 2, 8, 8, 1,
         GEO(7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1), .bias = 1, .al = L_PADROW, .npost = 1,
         .post = {P(ADD, 0, 0)}},
        {"nhwc relu", RT_F32, 0, 2, 8, 8, 1, GEO(7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1), .bias = 1,
         .sl = L_NHWC, .dl = L_NHWC, .npost = 1, .post = {P(RELU, 0, 0)}},
        {"clip add relu chain", RT_F32, 0, 2, 3, 5, 1, GEO(6, 8, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1),
         .bias = 1, .al = L_NHWC, .npost = 3,
         .post = {P(CLIP, -0.25f, 0.5f), P(ADD, 0, 0), P(RELU, 0.1f, 0)}},
        {"post hardswish", RT_F32, 0, 1, 3, 4, 1, GEO(6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
         .bias = 1, .npost = 1, .post = {P(HARDSWISH, 0, 0)}},
        {"post hardsigmoid", RT_F32, 0, 1, 3, 4, 1, GEO(6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
         .bias = 1, .npost = 2, .post = {P(HARDSIGMOID, 0, 0), P(ADD, 0, 0)}},
        {"post elu sigmoid", RT_F32, 0, 1, 3, 4, 1, GEO(6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
         .bias = 1, .npost = 2, .post = {P(ELU, 0.7f, 0), P(SIGMOID, 0, 0)}},
        {"post tanh silu", RT_F32, 0, 1, 3, 4, 1, GEO(6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
         .bias = 1, .npost = 2, .post = {P(TANH, 0, 0), P(SILU, 0, 0)}},
        {"post gelus mish", RT_F32, 0, 1, 3, 4, 1, GEO(6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
         .bias = 1, .npost = 3, .post = {P(GELU_ERF, 0, 0), P(GELU_TANH, 0, 0), P(MISH, 0, 0)}},
        {"nhwc src, nchw dst", RT_F32, 0, 2, 8, 8, 1, GEO(7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
         .bias = 1, .sl = L_NHWC, .npost = 1, .post = {P(RELU, 0, 0)}},
        {"dst channel slice", RT_F32, 0, 2, 3, 4, 1, GEO(5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
         .bias = 1, .dl = L_SLICE, .npost = 1, .post = {P(ADD, 0, 0)}},
        {"sliced src, padded dst", RT_F32, 0, 2, 3, 4, 1, GEO(5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
         .bias = 1, .sl = L_SLICE, .dl = L_PADROW},
        {"weights per call", RT_F32, 0, 2, 4, 6, 2, GEO(6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
         .bias = 1, .bn = 1, .nonconst = 1},
        {"transposed weights per call", RT_F32, 1, 1, 4, 6, 2,
         GEO(4, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1), .opad = {1, 0}, .bias = 1, .nonconst = 1},
        {"one thread", RT_F32, 0, 1, 16, 16, 1, GEO(12, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
         .bias = 1, .threads = 1},
        {"unplanned scratch", RT_F32, 0, 1, 16, 16, 1, GEO(12, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
         .bias = 1, .unplanned = 1},
        {"f64 conv", RT_F64, 0, 2, 4, 6, 2, GEO(7, 6, 3, 2, 2, 1, 1, 2, 1, 1, 0, 1), .bias = 1,
         .bn = 1, .sl = L_NHWC, .al = L_PADROW, .npost = 2,
         .post = {P(ADD, 0, 0), P(GELU_ERF, 0, 0)}, .impl = "direct: oneDNN has no f64"},
        {"f64 transposed", RT_F64, 1, 2, 4, 2, 2, GEO(4, 5, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1),
         .opad = {1, 1}, .bias = 1, .npost = 1, .post = {P(CLIP, 0, 0.5f)}, .nonconst = 1},
        {"bf16 conv", RT_BF16, 0, 2, 8, 8, 1, GEO(7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1), .bias = 1},
        {"bf16 bn nhwc", RT_BF16, 0, 1, 8, 4, 2, GEO(6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1), .bias = 1,
         .bn = 1, .sl = L_NHWC, .dl = L_NHWC},
        {"bf16 transposed", RT_BF16, 1, 2, 4, 6, 2, GEO(4, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1),
         .opad = {1, 0}, .bias = 1},
        {"f16 conv", RT_F16, 0, 2, 8, 8, 1, GEO(7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1), .bias = 1,
         .sl = L_SLICE},
        {"f16 conv1d bn per call", RT_F16, 0, 2, 4, 4, 1, GEO(1, 16, 1, 3, 1, 1, 1, 2, 0, 2, 0, 2),
         .bias = 1, .bn = 1, .nonconst = 1},
        {"f16 transposed", RT_F16, 1, 1, 4, 4, 4, GEO(5, 5, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0),
         .sl = L_NHWC},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Case c = cases[i];
        if (!c.dil[0]) c.dil[0] = c.dil[1] = 1;
        run_case(&c);
    }
    concurrent();
    errors();
    return rt_test_report();
}
