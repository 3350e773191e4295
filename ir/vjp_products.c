/* Vector-Jacobian products of the products (see vjp.h): matrix products
 * transpose one side; einsum's gradient is another einsum; a
 * convolution's input gradient is the transposed convolution of the
 * output gradient, and its weight gradient is a convolution of the input
 * by the output gradient with the roles of stride and dilation exchanged
 * (groups kept apart by folding them into the channels). */
#include <string.h>

#include "ir/conv.h"
#include "ir/infer.h"
#include "ir/vjp.h"

static Value *mm(IrB *b, Value *x, Value *y) {
    return irb_binary(b, OP_MATMUL, x, y);
}
static Value *tr(IrB *b, Value *x) {
    return x ? irb_transpose(b, x, x->ndim - 2, x->ndim - 1) : NULL;
}
static Value *reshape_like(IrB *b, Value *x, const Value *like) {
    return irb_reshape(b, x, like->shape, like->ndim);
}

/* matmul, mm, bmm, mv: 1-d operands become matrices ([k] -> [1, k] on the
 * left, [k, 1] on the right), the gradient reshaped to match; batch
 * dimensions broadcast, so each side's gradient is summed back to it. */
bool vjp_matmul(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    IrB *b = &c->b;
    Value *A = IN0(v), *B = v->args[1].t;
    bool a1 = A->ndim == 1, b1 = B->ndim == 1;
    int64_t s[TG_MAX_DIMS];
    if (a1) s[0] = 1, s[1] = A->shape[0];
    Value *A2 = a1 ? irb_reshape(b, A, s, 2) : A;
    if (b1) s[0] = B->shape[0], s[1] = 1;
    Value *B2 = b1 ? irb_reshape(b, B, s, 2) : B;
    int n = 0;
    for (int i = 0; i < v->ndim - (a1 || b1 ? (a1 && b1 ? 0 : 1) : 2); i++)
        s[n++] = v->shape[i];
    if (A2 && B2) {
        s[n++] = A2->shape[A2->ndim - 2];
        s[n++] = B2->shape[B2->ndim - 1];
    }
    Value *g2 = irb_reshape(b, gy, s, n);
    if (vjp_needs(c, v, 0)) {
        Value *ga = A2 ? vjp_sum_to(b, mm(b, g2, tr(b, B2)), A2->shape, A2->ndim) : NULL;
        vjp_set(c, v, 0, gx, reshape_like(b, ga, A));
    }
    if (vjp_needs(c, v, 1)) {
        Value *gb = B2 ? vjp_sum_to(b, mm(b, tr(b, A2), g2), B2->shape, B2->ndim) : NULL;
        vjp_set(c, v, 1, gx, reshape_like(b, gb, B));
    }
    return true;
}

bool vjp_outer(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    IrB *b = &c->b;
    if (vjp_needs(c, v, 0)) vjp_set(c, v, 0, gx, mm(b, gy, v->args[1].t));
    if (vjp_needs(c, v, 1)) vjp_set(c, v, 1, gx, mm(b, IN0(v), gy));
    return true;
}

/* y = x @ W^T + b over any leading dims of x. */
bool vjp_linear(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    IrB *b = &c->b;
    Value *x = IN0(v), *w = v->args[1].t;
    int64_t in = w->shape[w->ndim - 1], out = w->ndim == 2 ? w->shape[0] : 1;
    int64_t rows = value_numel(x) / (in ? in : 1), s[2] = {rows, out};
    Value *g2 = irb_reshape(b, gy, s, 2); /* [rows, out] */
    if (vjp_needs(c, v, 0)) {
        int64_t ws[2] = {out, in};
        Value *w2 = w->ndim == 2 ? w : irb_reshape(b, w, ws, 2);
        vjp_set(c, v, 0, gx, reshape_like(b, mm(b, g2, w2), x));
    }
    if (vjp_needs(c, v, 1)) {
        int64_t xs[2] = {rows, in};
        vjp_set(c, v, 1, gx, reshape_like(b, mm(b, tr(b, g2), irb_reshape(b, x, xs, 2)), w));
    }
    if (vjp_needs(c, v, 2)) vjp_set(c, v, 2, gx, gy);
    return true;
}

/* ---- einsum ---- */

/* One operand's subscript: its labels, or false for what the gradient does
 * not handle (a repeated label; an ellipsis is spelled out first). */
static bool labels_of(const char *s, size_t n, char *out) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') continue;
        if (s[i] == '.' || memchr(out, s[i], k)) return false;
        out[k++] = s[i];
    }
    out[k] = 0;
    return true;
}

/* The first "..." in [p, e), or NULL. */
static const char *dots_in(const char *p, const char *e) {
    for (; p + 3 <= e; p++)
        if (p[0] == '.' && p[1] == '.' && p[2] == '.') return p;
    return NULL;
}

/* eq with each '...' spelled as labels, so that the gradient's equations
 * need no ellipsis: operand i's ellipsis covers its dims beyond its own
 * labels (r_i of them), the ellipses broadcast right-aligned, so with m =
 * max r_i fresh labels E_0..E_{m-1} (letters eq does not use) operand i's
 * is E_{m-r_i}..E_{m-1}, and the output's all m (an implicit output is
 * the ellipsis, then the labels seen once, sorted: PyTorch's). Label
 * broadcasting (a size-1 dim) is einsum's own, and the gradient sums it
 * back. NULL when eq has no ellipsis or no m letters are left. */
static const char *explicit_ellipsis(Arena *a, const char *eq, const Arg *ops) {
    if (!strstr(eq, "...")) return NULL;
    const char *arrow = strstr(eq, "->");
    const char *end = arrow ? arrow : eq + strlen(eq);
    int r[TG_EINSUM_MAX_OPERANDS], m = 0;
    const char *p = eq;
    for (int i = 0; i < ops->n; i++) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *e = comma ? comma : end;
        int letters = 0;
        for (const char *q = p; q < e; q++)
            letters += *q != ' ' && *q != '.';
        r[i] = dots_in(p, e) ? ops->ts[i]->ndim - letters : 0;
        if (r[i] < 0 || r[i] > TG_MAX_DIMS) return NULL;
        m = r[i] > m ? r[i] : m;
        p = e + 1;
    }
    char fresh[TG_MAX_DIMS + 1];
    int nf = 0;
    for (const char *l = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"; *l && nf < m; l++)
        if (!strchr(eq, *l)) fresh[nf++] = *l;
    if (nf < m) return NULL;
    fresh[nf] = 0;
    /* The operands, the ellipsis replaced. */
    char *out = arena_printf(a, "%s", "");
    p = eq;
    for (int i = 0; i < ops->n; i++) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *e = comma ? comma : end;
        const char *dots = dots_in(p, e);
        if (dots)
            out = arena_printf(a, "%s%s%.*s%s%.*s", out, i ? "," : "", (int)(dots - p), p,
                               fresh + (m - r[i]), (int)(e - dots - 3), dots + 3);
        else
            out = arena_printf(a, "%s%s%.*s", out, i ? "," : "", (int)(e - p), p);
        p = e + 1;
    }
    if (arrow) {
        const char *o = arrow + 2, *dots = strstr(o, "...");
        if (dots) return arena_printf(a, "%s->%.*s%s%s", out, (int)(dots - o), o, fresh, dots + 3);
        return arena_printf(a, "%s->%s", out, o);
    }
    char once[64];
    int k = 0;
    for (int ch = 1; ch < 128; ch++) {
        if (ch == ' ' || ch == '.' || ch == ',') continue;
        int seen = 0;
        for (const char *q = eq; q < end; q++)
            seen += *q == ch;
        if (seen == 1 && k < 63) once[k++] = (char)ch;
    }
    once[k] = 0;
    return arena_printf(a, "%s->%s%s", out, fresh, once);
}

bool vjp_einsum(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    IrB *b = &c->b;
    const char *eq = v->args[0].s;
    const Arg *ops = &v->args[1];
    const char *spelled = explicit_ellipsis(b->a, eq, ops);
    if (spelled) eq = spelled;
    char sub[TG_EINSUM_MAX_OPERANDS + 1][TG_MAX_DIMS + 1];
    const char *arrow = strstr(eq, "->"), *p = eq;
    const char *end = arrow ? arrow : eq + strlen(eq);
    int n = 0;
    while (n < ops->n) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *e = comma ? comma : end;
        if ((size_t)(e - p) > TG_MAX_DIMS || !labels_of(p, (size_t)(e - p), sub[n]))
            return vjp_unsupported(c, v,
                                   "einsum's gradient needs subscripts without repeated labels "
                                   "(such as a diagonal 'ii')");
        n++;
        p = e + 1;
    }
    char *outs = sub[n];
    if (arrow) {
        if (strlen(arrow + 2) > TG_MAX_DIMS || !labels_of(arrow + 2, strlen(arrow + 2), outs))
            return vjp_unsupported(c, v,
                                   "einsum's gradient needs an output without repeated "
                                   "labels");
    } else { /* implicit output: the labels seen once, sorted */
        int k = 0;
        for (int ch = 0; ch < 128; ch++) {
            int seen = 0;
            for (int i = 0; i < n; i++)
                seen += strchr(sub[i], ch) != NULL && ch;
            if (seen == 1) outs[k++] = (char)ch;
        }
        outs[k] = 0;
    }
    for (int i = 0; i < n; i++) {
        if (!c->needs[i]) continue;
        /* einsum("out,others->kept", g, others...), kept = operand i's
         * labels found elsewhere; the others are broadcast back. */
        char kept[TG_MAX_DIMS + 1];
        int nk = 0;
        for (const char *l = sub[i]; *l; l++) {
            bool elsewhere = strchr(outs, *l) != NULL;
            for (int j = 0; j < n && !elsewhere; j++)
                elsewhere = j != i && strchr(sub[j], *l);
            if (elsewhere) kept[nk++] = *l;
        }
        kept[nk] = 0;
        char *geq = arena_printf(b->a, "%s", outs);
        Value *operands[TG_EINSUM_MAX_OPERANDS];
        int no = 0;
        operands[no++] = gy;
        for (int j = 0; j < n; j++)
            if (j != i) {
                geq = arena_printf(b->a, "%s,%s", geq, sub[j]);
                operands[no++] = ops->ts[j];
            }
        geq = arena_printf(b->a, "%s->%s", geq, kept);
        Arg a[2] = {{.kind = ARG_STR, .s = geq, .loc = b->loc}, irb_ts(b, operands, no)};
        Value *g = irb_op(b, OP_EINSUM, 2, a);
        Value *x = ops->ts[i];
        if (g && nk < x->ndim) {
            int64_t s[TG_MAX_DIMS];
            for (int d = 0; d < x->ndim; d++)
                s[d] = strchr(kept, sub[i][d]) ? x->shape[d] : 1;
            g = irb_expand(b, irb_reshape(b, g, s, x->ndim), x->shape, x->ndim);
        }
        gx[i] = g;
    }
    return true;
}

/* ---- convolutions ---- */

static Arg tuple(IrB *b, const int64_t *v2, int nd) {
    return irb_is(b, v2 + 2 - nd, nd);
}

/* The library call reads dense operands: a view (the permuted operands of
 * the weight gradient, a broadcast gradient) goes through contiguous(), as
 * the front end does for a convolution's operands (frontend/tg/build.c,
 * dense_conv_operands); it stays a view when the layout already is dense. */
static Value *dense(IrB *b, Value *x) {
    if (!x || !(op_info(x->op)->flags & (OPF_VIEW | OPF_MAYBE_VIEW))) return x;
    Arg a[1] = {irb_t(b, x)};
    return irb_op(b, OP_CONTIGUOUS, 1, a);
}

static Value *conv(IrB *b, int nd, Value *x, Value *w, const int64_t *stride, const int64_t *pad,
                   const int64_t *dil, int64_t groups) {
    x = dense(b, x), w = dense(b, w);
    Arg a[7] = {irb_t(b, x),          irb_t(b, w),       {.kind = ARG_ABSENT, .loc = b->loc},
                tuple(b, stride, nd), tuple(b, pad, nd), tuple(b, dil, nd),
                irb_i(b, groups)};
    return irb_op(b, nd == 1 ? OP_CONV1D : OP_CONV2D, 7, a);
}

static Value *conv_t(IrB *b, int nd, Value *x, Value *w, const int64_t *stride, const int64_t *pad,
                     const int64_t *out_pad, const int64_t *dil, int64_t groups) {
    x = dense(b, x), w = dense(b, w);
    Arg a[8] = {irb_t(b, x),          irb_t(b, w),       {.kind = ARG_ABSENT, .loc = b->loc},
                tuple(b, stride, nd), tuple(b, pad, nd), tuple(b, out_pad, nd),
                irb_i(b, groups),     tuple(b, dil, nd)};
    return irb_op(b, nd == 1 ? OP_CONV_TRANSPOSE1D : OP_CONV_TRANSPOSE2D, 8, a);
}

/* The gradient of a convolution's weight [O, C/G, k...] from its input
 * x [N, C, in...] and output gradient gy [N, O, out...]:
 *   x  -> [C/G, G * N, in...]   (batch: a group's channels; channels: groups x batch)
 *   gy -> [O, N, out...]        (weights: the output channels)
 * conv(x, gy, stride = dilation, dilation = stride, groups = G) is
 * [C/G, O, k'...] with k' >= k; transposed and cropped to the kernel. */
static Value *weight_grad(IrB *b, int nd, Value *x, Value *gy, const ConvGeom *g,
                          const int64_t *pad) {
    int64_t N = x->shape[0], C = x->shape[1], O = gy->shape[1], G = g->groups;
    int64_t s[TG_MAX_DIMS], perm[TG_MAX_DIMS];
    int n = 0;
    s[n++] = N, s[n++] = G, s[n++] = C / G;
    for (int i = 0; i < nd; i++)
        s[n++] = x->shape[2 + i];
    Value *xr = irb_reshape(b, x, s, n);
    perm[0] = 2, perm[1] = 1, perm[2] = 0;
    for (int i = 0; i < nd; i++)
        perm[3 + i] = 3 + i;
    xr = irb_permute(b, xr, perm, n);
    s[0] = C / G, s[1] = G * N;
    for (int i = 0; i < nd; i++)
        s[2 + i] = x->shape[2 + i];
    xr = irb_reshape(b, xr, s, nd + 2);
    n = 0;
    s[n++] = N, s[n++] = G, s[n++] = O / G;
    for (int i = 0; i < nd; i++)
        s[n++] = gy->shape[2 + i];
    Value *gr = irb_reshape(b, gy, s, n);
    perm[0] = 1, perm[1] = 2, perm[2] = 0;
    gr = irb_permute(b, gr, perm, n);
    s[0] = O, s[1] = N;
    for (int i = 0; i < nd; i++)
        s[2 + i] = gy->shape[2 + i];
    gr = irb_reshape(b, gr, s, nd + 2);
    Value *r = conv(b, nd, xr, gr, g->dilation, pad, g->stride, G);
    int64_t swap[TG_MAX_DIMS] = {1, 0, 2, 3};
    r = irb_permute(b, r, swap, nd + 2);
    for (int i = 0; r && i < nd; i++) {
        int64_t k = g->k[2 - nd + i];
        if (r->shape[2 + i] > k) r = irb_slice(b, r, 2 + i, 0, k, 1);
    }
    return r;
}

/* x and gy with a batch dimension (unbatched ops get one of size 1). */
static Value *batched(IrB *b, Value *t, bool is_batched) {
    if (is_batched || !t) return t;
    int64_t s[TG_MAX_DIMS];
    s[0] = 1;
    memcpy(s + 1, t->shape, sizeof s[0] * (size_t)t->ndim);
    return irb_reshape(b, t, s, t->ndim + 1);
}

static Value *bias_grad(IrB *b, Value *gy, int channel_dim) {
    int64_t dims[TG_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < gy->ndim; i++)
        if (i != channel_dim) dims[n++] = i;
    return n ? irb_reduce(b, OP_SUM, gy, dims, n) : gy;
}

/* A convolution's geometry, and its input and output gradient with the
 * batch dimension an unbatched call leaves out. */
static void conv_operands(IrB *b, Value *v, Value *gy, ConvGeom *g, Value **xb, Value **gb) {
    conv_geometry(v, g);
    *xb = batched(b, IN0(v), g->batched);
    *gb = batched(b, gy, g->batched);
}

bool vjp_conv(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    IrB *b = &c->b;
    ConvGeom g;
    Value *x = IN0(v), *w = v->args[1].t, *xb, *gb;
    conv_operands(b, v, gy, &g, &xb, &gb);
    int nd = g.nd;
    /* Unequal padding ('same' with an even kernel): pad x itself. */
    int64_t pad[2] = {g.pad_l[0], g.pad_l[1]};
    bool uneven = g.pad_l[0] != g.pad_r[0] || g.pad_l[1] != g.pad_r[1];
    if (uneven) {
        for (int i = 0; i < nd; i++)
            xb = irb_pad_constant(b, xb, 2 + i, g.pad_l[2 - nd + i], g.pad_r[2 - nd + i], 0.0);
        pad[0] = pad[1] = 0;
    }
    if (vjp_needs(c, v, 0) && xb && gb) {
        int64_t out_pad[2] = {0, 0};
        for (int i = 0; i < nd; i++) {
            int d = 2 - nd + i;
            int64_t in = xb->shape[2 + i];
            int64_t made = (gb->shape[2 + i] - 1) * g.stride[d] - 2 * pad[d] +
                           g.dilation[d] * (g.k[d] - 1) + 1;
            out_pad[d] = in - made;
        }
        Value *dx = conv_t(b, nd, gb, w, g.stride, pad, out_pad, g.dilation, g.groups);
        for (int i = 0; uneven && dx && i < nd; i++)
            dx = irb_slice(b, dx, 2 + i, g.pad_l[2 - nd + i],
                           g.pad_l[2 - nd + i] + g.in[2 - nd + i], 1);
        vjp_set(c, v, 0, gx, reshape_like(b, dx, x));
    }
    if (vjp_needs(c, v, 1) && xb && gb) vjp_set(c, v, 1, gx, weight_grad(b, nd, xb, gb, &g, pad));
    if (vjp_needs(c, v, 2) && gb) vjp_set(c, v, 2, gx, bias_grad(b, gb, 1));
    return true;
}

/* conv_transpose is the adjoint of conv: the input's gradient is the
 * convolution of gy, and the weight's is conv's weight gradient with the
 * roles of input and output exchanged. */
bool vjp_conv_transpose(VjpCtx *c, Value *v, Value *gy, Value **gx) {
    IrB *b = &c->b;
    ConvGeom g;
    Value *x = IN0(v), *w = v->args[1].t, *xb, *gb;
    conv_operands(b, v, gy, &g, &xb, &gb);
    if (vjp_needs(c, v, 0) && gb)
        vjp_set(c, v, 0, gx,
                reshape_like(b, conv(b, g.nd, gb, w, g.stride, g.pad_l, g.dilation, g.groups), x));
    if (vjp_needs(c, v, 1) && xb && gb)
        vjp_set(c, v, 1, gx, weight_grad(b, g.nd, gb, xb, &g, g.pad_l));
    if (vjp_needs(c, v, 2) && gb) vjp_set(c, v, 2, gx, bias_grad(b, gb, 1));
    return true;
}
