/* ONNX's recurrent layers, RNN, GRU and LSTM, unrolled over the sequence
 * into products and elementwise .tg statements (the sequence length is
 * known when the graph is built):
 *   - the input's product with W, and both biases (Wb + Rb), for every step
 *     at once: one [S, B, I] x [I, G*H] product per direction;
 *   - per step, the hidden state's product with R and the gates, each
 *     step's state a .tg value of its own;
 *   - sequence_lens (a run-time input or a constant) as a mask per step:
 *     a batch entry past its length keeps its state and writes zeros to Y,
 *     which is also what the reverse direction needs, since its state stays
 *     the initial one until the entry's last element;
 *   - layout 1 ([batch, seq, ...]) as a transpose at each end.
 * Equations, gate orders (LSTM i o f c, GRU z r h), activation lists and
 * their alpha/beta as ONNX's operator specification gives them; an
 * activation's alpha and beta are consumed only by activations that take
 * them, as ONNX Runtime reads the lists. */
#include <ctype.h>
#include <string.h>

#include "frontend/onnx/ox.h"

enum { RNN_PLAIN, RNN_GRU, RNN_LSTM };

typedef struct Act {
    const char *name; /* lower case */
    float alpha, beta;
} Act;

/* The activation applied to expression e, as .tg text. */
static const char *act_apply(Ox *x, const Act *f, const char *e) {
    const char *a = ox_num(x, f->alpha, true), *b = ox_num(x, f->beta, true);
    const char *n = f->name;
    if (!strcmp(n, "sigmoid")) return arena_printf(x->a, "sigmoid(%s)", e);
    if (!strcmp(n, "tanh")) return arena_printf(x->a, "tanh(%s)", e);
    if (!strcmp(n, "relu")) return arena_printf(x->a, "relu(%s)", e);
    if (!strcmp(n, "affine")) return arena_printf(x->a, "(%s) * %s + %s", e, a, b);
    if (!strcmp(n, "leakyrelu")) return arena_printf(x->a, "leaky_relu(%s, %s)", e, a);
    if (!strcmp(n, "thresholdedrelu"))
        return arena_printf(x->a, "where((%s) > %s, %s, 0.0)", e, a, e);
    if (!strcmp(n, "scaledtanh")) return arena_printf(x->a, "%s * tanh((%s) * %s)", a, e, b);
    if (!strcmp(n, "hardsigmoid"))
        return arena_printf(x->a, "clamp((%s) * %s + %s, 0.0, 1.0)", e, a, b);
    if (!strcmp(n, "elu")) return arena_printf(x->a, "elu(%s, %s)", e, a);
    if (!strcmp(n, "softsign")) return arena_printf(x->a, "(%s) / (1.0 + abs(%s))", e, e);
    /* softplus */
    return arena_printf(x->a, "softplus(%s)", e);
}

/* The activations of one node: count per direction, defaults, and the
 * alpha/beta each takes (ONNX's defaults where the lists run out). */
static void read_acts(Ox *x, int kind, int ndir, Act *acts) {
    static const char *const defaults[3][3] = {
        {"tanh", NULL, NULL}, {"sigmoid", "tanh", NULL}, {"sigmoid", "tanh", "tanh"}};
    int per = kind == RNN_LSTM ? 3 : kind == RNN_GRU ? 2 : 1;
    const Onnx__AttributeProto *list = ox_attr(x, "activations");
    const Onnx__AttributeProto *al = ox_attr(x, "activation_alpha");
    const Onnx__AttributeProto *be = ox_attr(x, "activation_beta");
    size_t nlist = list ? list->n_strings : 0;
    if (nlist && nlist != (size_t)(per * ndir))
        ox_fail(x, "activations lists %zu functions; this node takes %d (%d per direction)", nlist,
                per * ndir, per);
    size_t ia = 0, ib = 0;
    for (int k = 0; k < per * ndir; k++) {
        Act *f = &acts[k];
        const char *as_written = NULL;
        if (nlist) {
            const ProtobufCBinaryData *s = &list->strings[k];
            as_written = arena_strndup(x->a, (const char *)s->data, s->len);
            char *nm = arena_alloc(x->a, s->len + 1);
            size_t o = 0;
            for (size_t j = 0; j < s->len; j++)
                nm[o++] = (char)tolower(s->data[j]);
            nm[o] = 0;
            f->name = nm;
        } else {
            f->name = defaults[kind][k % per];
        }
        static const struct {
            const char *name;
            int nparams;
            float alpha, beta;
        } known[] = {{"sigmoid", 0, 0, 0},
                     {"tanh", 0, 0, 0},
                     {"relu", 0, 0, 0},
                     {"softsign", 0, 0, 0},
                     {"softplus", 0, 0, 0},
                     {"affine", 2, 1, 0},
                     {"leakyrelu", 1, 0.01f, 0},
                     {"thresholdedrelu", 1, 1, 0},
                     {"scaledtanh", 2, 1, 1},
                     {"hardsigmoid", 2, 0.2f, 0.5f},
                     {"elu", 1, 1, 0}};
        int w = -1;
        for (int j = 0; j < (int)(sizeof known / sizeof known[0]); j++)
            if (!strcmp(known[j].name, f->name)) w = j;
        if (w < 0)
            ox_fail(x,
                    "activation '%s' is not one of ONNX's recurrent activations (Relu, Tanh, "
                    "Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, "
                    "Softsign, Softplus)",
                    as_written ? as_written : f->name);
        f->alpha = known[w].alpha;
        f->beta = known[w].beta;
        if (known[w].nparams >= 1 && al && ia < al->n_floats) f->alpha = al->floats[ia++];
        if (known[w].nparams >= 2 && be && ib < be->n_floats) f->beta = be->floats[ib++];
    }
}

/* The pre-activation e, clipped to [-clip, clip] when the node asks. */
static const char *clipped(Ox *x, float clip, const char *e) {
    if (clip <= 0) return e;
    return arena_printf(x->a, "clamp(%s, %s, %s)", e, ox_num(x, -clip, true),
                        ox_num(x, clip, true));
}

static void need_dims(Ox *x, OxVal *v, const char *what, int nd, const int64_t *want) {
    if (!v) return;
    bool ok = v->ndim == nd;
    for (int k = 0; ok && k < nd; k++)
        ok = v->dim[k].v == want[k];
    if (!ok) {
        char buf[160];
        size_t o = 0;
        for (int k = 0; k < nd; k++)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%lld", k ? ", " : "",
                                  (long long)want[k]);
        ox_fail(x, "%s has shape %s; expected [%s]", what, ox_dims_text(x, v->dim, v->ndim), buf);
    }
}

bool ox_op_rnn(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    int kind;
    if (ox_op_is(n, "RNN"))
        kind = RNN_PLAIN;
    else if (ox_op_is(n, "GRU"))
        kind = RNN_GRU;
    else if (ox_op_is(n, "LSTM"))
        kind = RNN_LSTM;
    else
        return false;
    ox_need_inputs(x, in, nin, 3);
    OxVal *X = in[0], *W = in[1], *R = in[2];
    OxVal *B = nin > 3 ? in[3] : NULL, *lens = nin > 4 ? in[4] : NULL;
    OxVal *h0 = nin > 5 ? in[5] : NULL;
    OxVal *c0 = kind == RNN_LSTM && nin > 6 ? in[6] : NULL;
    OxVal *P = kind == RNN_LSTM && nin > 7 ? in[7] : NULL;
    int G = kind == RNN_LSTM ? 4 : kind == RNN_GRU ? 3 : 1;
    if (!dtype_is_float(X->dt)) ox_fail(x, "X must be a floating tensor");
    if (X->ndim != 3) ox_fail(x, "X must be 3-d, [seq, batch, input] (or batch first)");
    int64_t layout = ox_attr_i(x, "layout", 0);
    if (layout != 0 && layout != 1) ox_fail(x, "layout %lld (0 or 1)", (long long)layout);
    if (X->dim[layout ? 1 : 0].sym)
        ox_fail(x, "X's sequence length must be known when the graph is built (the sequence is "
                   "unrolled): give it with -D");
    OxDim Bd = X->dim[layout ? 0 : 1];
    int64_t S = X->dim[layout ? 1 : 0].v, Bn = X->dim[layout ? 0 : 1].v, I = X->dim[2].v;
    int64_t H = ox_attr_i(x, "hidden_size", 0);
    if (!ox_attr(x, "hidden_size")) H = W->ndim == 3 ? W->dim[1].v / G : 0;
    if (H < 1 || H > ((int64_t)1 << 24)) ox_fail(x, "hidden_size %lld", (long long)H);
    const char *dir = ox_attr_s(x, "direction", "forward");
    int ndir = !strcmp(dir, "bidirectional") ? 2 : 1;
    bool reverse_only = !strcmp(dir, "reverse");
    if (ndir == 1 && !reverse_only && strcmp(dir, "forward"))
        ox_fail(x, "direction '%s' (forward, reverse or bidirectional)", dir);
    if (S < 1 || S > 4096)
        ox_fail(x, "a sequence of %lld steps: 1 to 4096 are unrolled", (long long)S);
    need_dims(x, W, "W", 3, (int64_t[]){ndir, G * H, I});
    need_dims(x, R, "R", 3, (int64_t[]){ndir, G * H, H});
    need_dims(x, B, "B", 2, (int64_t[]){ndir, 2 * G * H});
    need_dims(x, lens, "sequence_lens", 1, (int64_t[]){Bn});
    need_dims(x, h0, "initial_h", 3, layout ? (int64_t[]){Bn, ndir, H} : (int64_t[]){ndir, Bn, H});
    need_dims(x, c0, "initial_c", 3, layout ? (int64_t[]){Bn, ndir, H} : (int64_t[]){ndir, Bn, H});
    need_dims(x, P, "P", 2, (int64_t[]){ndir, 3 * H});
    if (lens && lens->dt != DT_I32 && lens->dt != DT_I64) ox_fail(x, "sequence_lens must be int32");
    Act acts[6];
    read_acts(x, kind, ndir, acts);
    float clip = ox_attr_f(x, "clip", 0);
    if (ox_attr(x, "clip") && !(clip > 0)) ox_fail(x, "clip must be positive");
    bool input_forget = kind == RNN_LSTM && ox_attr_i(x, "input_forget", 0);
    bool lbr = kind == RNN_GRU && ox_attr_i(x, "linear_before_reset", 0);

    /* A constant sequence_lens of every step masks nothing. */
    if (lens && lens->c) {
        bool full = true;
        for (int64_t b = 0; b < ox_numel(lens->c); b++) {
            int64_t L = ox_const_int(x, lens->c, b);
            if (L < 0 || L > S)
                ox_fail(x, "sequence_lens[%lld] is %lld; the sequence has %lld steps", (long long)b,
                        (long long)L, (long long)S);
            full &= L == S;
        }
        if (full) lens = NULL;
    }
    const char *base = n->name && *n->name ? n->name : NULL;
    for (size_t k = 0; !base && k < n->n_output; k++)
        if (out[k]) base = out[k]->name;
    const char *xs = ox_ref(x, X, false);
    if (layout) xs = ox_tmp(x, base, "_x", arena_printf(x->a, "%s.transpose(0, 1)", xs));
    const char *ws = ox_ref(x, W, false), *rs = ox_ref(x, R, false);
    const char *bs = B ? ox_ref(x, B, false) : NULL;
    const char *ls = lens ? ox_ref(x, lens, false) : NULL;
    const char *h0s = h0 ? ox_ref(x, h0, false) : NULL, *c0s = c0 ? ox_ref(x, c0, false) : NULL;
    if (layout && h0s) h0s = ox_tmp(x, base, "_h0", arena_printf(x->a, "%s.transpose(0, 1)", h0s));
    if (layout && c0s) c0s = ox_tmp(x, base, "_c0", arena_printf(x->a, "%s.transpose(0, 1)", c0s));
    const char *ps = P ? ox_ref(x, P, false) : NULL;
    const char *dt = dtype_name(X->dt);
    long long h = (long long)H, gh = (long long)(G * H);
    const char *zeros = arena_printf(x->a, "zeros(%s, %lld, dtype=%s)", ox_dim_text(x, Bd), h, dt);

    /* ys[d][t]: direction d's output at step t; last[d], lastc[d]: its final states */
    const char **ys = arena_alloc(x->a, sizeof(char *) * (size_t)(ndir * S));
    const char *last[2], *lastc[2];
    for (int d = 0; d < ndir; d++) {
        bool rev = reverse_only || d == 1;
        const Act *f = &acts[d * (kind == RNN_LSTM ? 3 : kind == RNN_GRU ? 2 : 1)];
        /* the input's part of every gate, with the biases that add outside
         * a product (all but GRU's Rbh under linear_before_reset) */
        /* one [S * B, I] x [I, G * H] product (as a batch of S products of
         * B rows it ran at 1 GFLOP/s: 31% of a 256-step LSTM's time) */
        const char *xw =
            arena_printf(x->a, "reshape(reshape(%s, [-1, %lld]) @ %s[%d].T, [%lld, %s, %lld])", xs,
                         (long long)I, ws, d, (long long)S, ox_dim_text(x, Bd), gh);
        if (bs) {
            const char *bias;
            if (lbr)
                bias = arena_printf(
                    x->a, "%s[%d, 0:%lld] + cat([%s[%d, %lld:%lld], zeros(%lld, dtype=%s)])", bs, d,
                    gh, bs, d, gh, gh + 2 * h, h, dt);
            else
                bias = arena_printf(x->a, "%s[%d, 0:%lld] + %s[%d, %lld:%lld]", bs, d, gh, bs, d,
                                    gh, 2 * gh);
            xw = arena_printf(x->a, "%s + %s", xw, bias);
        }
        xw = ox_tmp(x, base, "_xw", xw);
        const char *rd = ox_tmp(x, base, "_r", arena_printf(x->a, "%s[%d].T", rs, d));
        const char *hp = h0s ? ox_tmp(x, base, "_h", arena_printf(x->a, "%s[%d]", h0s, d)) : NULL;
        const char *cp = NULL;
        if (kind == RNN_LSTM)
            cp = c0s ? ox_tmp(x, base, "_c", arena_printf(x->a, "%s[%d]", c0s, d)) : zeros;
        for (int64_t s = 0; s < S; s++) {
            int64_t t = rev ? S - 1 - s : s;
            const char *hprev = hp ? hp : zeros;
            const char *g = arena_printf(x->a, "%s[%lld]", xw, (long long)t);
            const char *hn, *cn = NULL;
            if (kind == RNN_GRU) {
                /* z and r add h @ R's first two blocks; the h gate reads
                 * h per linear_before_reset */
                const char *hr =
                    hp ? ox_tmp(x, base, "_hr", arena_printf(x->a, "%s @ %s", hp, rd)) : NULL;
                const char *pz = arena_printf(x->a, "%s[:, 0:%lld]", g, h);
                const char *pr = arena_printf(x->a, "%s[:, %lld:%lld]", g, h, 2 * h);
                if (hr) {
                    pz = arena_printf(x->a, "%s + %s[:, 0:%lld]", pz, hr, h);
                    pr = arena_printf(x->a, "%s + %s[:, %lld:%lld]", pr, hr, h, 2 * h);
                }
                const char *z = ox_tmp(x, base, "_z", act_apply(x, &f[0], clipped(x, clip, pz)));
                const char *r = ox_tmp(x, base, "_rg", act_apply(x, &f[0], clipped(x, clip, pr)));
                const char *hx = arena_printf(x->a, "%s[:, %lld:%lld]", g, 2 * h, gh);
                const char *rbh =
                    bs ? arena_printf(x->a, "%s[%d, %lld:%lld]", bs, d, gh + 2 * h, 2 * gh) : NULL;
                const char *rh = NULL;
                if (lbr && hr)
                    rh = arena_printf(x->a, "%s * (%s[:, %lld:%lld]%s%s)", r, hr, 2 * h, gh,
                                      rbh ? " + " : "", rbh ? rbh : "");
                else if (lbr && rbh)
                    rh = arena_printf(x->a, "%s * %s", r, rbh);
                else if (!lbr && hp)
                    rh = arena_printf(x->a, "(%s * %s) @ %s[:, %lld:%lld]", r, hp, rd, 2 * h, gh);
                const char *hh = ox_tmp(
                    x, base, "_hh",
                    act_apply(x, &f[1],
                              clipped(x, clip, rh ? arena_printf(x->a, "%s + %s", hx, rh) : hx)));
                hn = arena_printf(x->a, "(1.0 - %s) * %s + %s * %s", z, hh, z, hprev);
            } else {
                if (hp) g = arena_printf(x->a, "%s + %s @ %s", g, hp, rd);
                g = ox_tmp(x, base, "_g", g);
                if (kind == RNN_PLAIN) {
                    hn = act_apply(x, &f[0], clipped(x, clip, g));
                } else {
                    /* gates i o f c, peepholes i o f */
                    const char *pre[4];
                    for (int k = 0; k < 4; k++)
                        pre[k] = arena_printf(x->a, "%s[:, %lld:%lld]", g, k * h, (k + 1) * h);
                    if (ps) {
                        pre[0] =
                            arena_printf(x->a, "%s + %s[%d, 0:%lld] * %s", pre[0], ps, d, h, cp);
                        pre[2] = arena_printf(x->a, "%s + %s[%d, %lld:%lld] * %s", pre[2], ps, d,
                                              2 * h, 3 * h, cp);
                    }
                    const char *ig =
                        ox_tmp(x, base, "_i", act_apply(x, &f[0], clipped(x, clip, pre[0])));
                    const char *fg =
                        input_forget
                            ? arena_printf(x->a, "(1.0 - %s)", ig)
                            : ox_tmp(x, base, "_f", act_apply(x, &f[0], clipped(x, clip, pre[2])));
                    const char *cg = act_apply(x, &f[1], clipped(x, clip, pre[3]));
                    cn = ox_tmp(x, base, "_c",
                                arena_printf(x->a, "%s * %s + %s * %s", fg, cp, ig, cg));
                    const char *po = pre[1];
                    if (ps)
                        po = arena_printf(x->a, "%s + %s[%d, %lld:%lld] * %s", po, ps, d, h, 2 * h,
                                          cn);
                    const char *og = act_apply(x, &f[0], clipped(x, clip, po));
                    hn = arena_printf(x->a, "%s * %s", og, act_apply(x, &f[2], cn));
                }
            }
            const char *y;
            if (ls) {
                /* steps past an entry's length keep its state and output 0 */
                const char *m = ox_tmp(
                    x, base, "_m", arena_printf(x->a, "unsqueeze(%s > %lld, 1)", ls, (long long)t));
                const char *hv = ox_tmp(x, base, "_hn", hn);
                hp = ox_tmp(x, base, "_h", arena_printf(x->a, "where(%s, %s, %s)", m, hv, hprev));
                y = ox_tmp(x, base, "_y", arena_printf(x->a, "where(%s, %s, 0.0)", m, hv));
                if (cn)
                    cp = ox_tmp(x, base, "_c", arena_printf(x->a, "where(%s, %s, %s)", m, cn, cp));
            } else {
                hp = ox_tmp(x, base, "_h", hn);
                y = hp;
                if (cn) cp = cn;
            }
            ys[d * S + t] = y;
        }
        last[d] = hp;
        lastc[d] = cp;
    }

    /* Y [S, D, B, H] (layout 1: [B, S, D, H]), Y_h and Y_c [D, B, H] ([B, D, H]) */
    DType odt = X->dt;
    if (out[0]) {
        char *steps = arena_printf(x->a, "stack([");
        for (int64_t t = 0; t < S; t++) {
            char *dirs = arena_printf(x->a, "stack([");
            for (int d = 0; d < ndir; d++)
                dirs = arena_printf(x->a, "%s%s%s", dirs, d ? ", " : "", ys[d * S + t]);
            steps = arena_printf(x->a, "%s%s%s])", steps, t ? ", " : "", dirs);
        }
        steps = arena_printf(x->a, "%s])", steps);
        const char *e = layout ? arena_printf(x->a, "%s.permute([2, 0, 1, 3])", steps) : steps;
        OxDim yd[4] = {ox_dim_c(S), ox_dim_c(ndir), Bd, ox_dim_c(H)};
        if (layout) {
            yd[0] = Bd;
            yd[1] = ox_dim_c(S);
            yd[2] = ox_dim_c(ndir);
        }
        ox_bind(x, out[0], e);
        ox_set_shape(out[0], odt, 4, yd);
    }
    const char **finals[2] = {last, lastc};
    for (int k = 1; k <= (kind == RNN_LSTM ? 2 : 1); k++) {
        if ((size_t)k >= n->n_output || !out[k]) continue;
        char *e = arena_printf(x->a, "stack([");
        for (int d = 0; d < ndir; d++)
            e = arena_printf(x->a, "%s%s%s", e, d ? ", " : "", finals[k - 1][d]);
        e = arena_printf(x->a, "%s])%s", e, layout ? ".transpose(0, 1)" : "");
        OxDim hd[3] = {ox_dim_c(ndir), Bd, ox_dim_c(H)};
        if (layout) {
            hd[0] = Bd;
            hd[1] = ox_dim_c(ndir);
        }
        ox_bind(x, out[k], e);
        ox_set_shape(out[k], odt, 3, hd);
    }
    return true;
}
