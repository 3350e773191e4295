/* Fused groups: node chains that torch.onnx.export writes for one PyTorch
 * call, written back as that call.
 *   MatMul(x, W) -> Add(., b)          linear(x, W^T, b)   (W an initializer)
 *   Div(x, sqrt 2) -> Erf -> Add(1) -> Mul(x) -> Mul(0.5)   gelu(x)
 *   x^3 -> Mul(0.044715) -> Add(x) -> Mul(sqrt(2/pi)) -> Tanh -> Add(1)
 *     -> Mul(x) -> Mul(0.5)             gelu(x, approximate="tanh")
 *   ReduceMean -> Sub -> Pow 2 -> ReduceMean -> Add eps -> Sqrt -> Div
 *     [-> Mul w -> Add b]               layer_norm (opset 13's export)
 * Every intermediate must have its group as its only user (and not be a
 * graph output), else the nodes are imported one by one. */
#include <math.h>
#include <string.h>

#include "frontend/onnx/ox.h"

static Onnx__NodeProto *N(Ox *x, int k) {
    return x->g->node[k];
}

static OxVal *in_of(Ox *x, int k, size_t i) {
    Onnx__NodeProto *n = N(x, k);
    return i < n->n_input ? ox_val(x, n->input[i]) : NULL;
}

static OxVal *out_of(Ox *x, int k) {
    Onnx__NodeProto *n = N(x, k);
    return n->n_output == 1 ? ox_val(x, n->output[0]) : NULL;
}

/* The one node reading v, when it is an `op` (and v is no graph output). */
static int sole(Ox *x, OxVal *v, const char *op) {
    if (!v || v->is_output || v->nusers != 1) return -1;
    int u = v->users[0];
    return !x->done[u] && !strcmp(N(x, u)->op_type, op) && N(x, u)->n_output == 1 ? u : -1;
}

/* The input of binary node k that is not v (NULL when both or neither). */
static OxVal *other(Ox *x, int k, OxVal *v) {
    if (N(x, k)->n_input != 2) return NULL;
    OxVal *a = in_of(x, k, 0), *b = in_of(x, k, 1);
    return a == v && b != v ? b : b == v && a != v ? a : NULL;
}

static bool scalar_is(Ox *x, OxVal *v, double want, double tol) {
    if (!v || !v->c || v->tg || v->c->n != 1 || !dtype_is_float(v->c->dt)) return false;
    return fabs(ox_const_get(x, v->c, 0) - want) <= tol;
}

/* Writes the group's result under the last node's name and comment. */
static void finish(Ox *x, const int *ks, int nk, const char *expr, OxVal *src) {
    int last = ks[nk - 1];
    OxVal *o = out_of(x, last);
    int keep = x->node;
    /* the group's other nodes: their attributes as if imported one by one */
    for (int k = 0; k < nk; k++) {
        x->node = ks[k];
        ox_check_node_attrs(x);
    }
    x->node = last;
    ox_bind(x, o, expr);
    x->node = keep;
    ox_set_shape(o, src->dt, src->ndim, src->dim);
    for (int k = 0; k < nk; k++) {
        x->done[ks[k]] = true;
        OxVal *v = out_of(x, ks[k]);
        if (v) v->ready = true;
    }
}

static bool linear(Ox *x, int k) {
    if (strcmp(N(x, k)->op_type, "MatMul") || N(x, k)->n_input != 2) return false;
    OxVal *a = in_of(x, k, 0), *w = in_of(x, k, 1), *mo = out_of(x, k);
    if (!a || !w || !mo || !w->c || w->tg || w->ndim != 2 || !dtype_is_float(w->dt) || !a->ready)
        return false;
    int add = sole(x, mo, "Add");
    if (add < 0) return false;
    OxVal *b = other(x, add, mo);
    if (!b || !b->c || b->tg || b->ndim != 1 || b->dim[0].v != w->dim[1].v) return false;
    if (a->ndim < 1 || a->dim[a->ndim - 1].v != w->dim[0].v) return false;
    /* the weight and bias names come from the MatMul/Add nodes' module */
    const char *path = N(x, k)->name ? N(x, k)->name : "";
    const char *slash = strrchr(path, '/');
    if (!w->c->hint)
        w->c->hint = w->is_init && strncmp(w->name, "onnx::", 6) ? w->name
                     : slash && slash != path
                         ? arena_printf(x->a, "%.*s/weight", (int)(slash - path), path)
                         : w->name;
    if (!b->c->hint)
        b->c->hint = b->is_init && strncmp(b->name, "onnx::", 6) ? b->name
                     : slash && slash != path
                         ? arena_printf(x->a, "%.*s/bias", (int)(slash - path), path)
                         : b->name;
    const char *e = arena_printf(x->a, "linear(%s, %s, %s)", ox_ref(x, a, false),
                                 ox_param(x, w->c, true), ox_ref(x, b, false));
    int ks[2] = {k, add};
    OxVal shape = *a;
    shape.dim[a->ndim - 1] = w->dim[1];
    finish(x, ks, 2, e, &shape);
    return true;
}

static bool gelu(Ox *x, int k) {
    if (strcmp(N(x, k)->op_type, "Div") || N(x, k)->n_input != 2) return false;
    OxVal *v = in_of(x, k, 0);
    if (!v || !v->ready || !dtype_is_float(v->dt) || !scalar_is(x, in_of(x, k, 1), sqrt(2.0), 1e-5))
        return false;
    int erf = sole(x, out_of(x, k), "Erf");
    int add = erf < 0 ? -1 : sole(x, out_of(x, erf), "Add");
    if (add < 0 || !scalar_is(x, other(x, add, out_of(x, erf)), 1.0, 0)) return false;
    int mul = sole(x, out_of(x, add), "Mul");
    if (mul < 0 || other(x, mul, out_of(x, add)) != v) return false;
    int half = sole(x, out_of(x, mul), "Mul");
    if (half < 0 || !scalar_is(x, other(x, half, out_of(x, mul)), 0.5, 0)) return false;
    int ks[5] = {k, erf, add, mul, half};
    finish(x, ks, 5, arena_printf(x->a, "gelu(%s)", ox_ref(x, v, false)), v);
    return true;
}

/* The tanh core of gelu(x, approximate="tanh") from the node computing
 * x^3 (Mul(x, x) -> Mul(x, .), or Pow(x, 3)):
 *   Mul(0.044715) -> Add(x) -> Mul(sqrt(2/pi)) -> Tanh -> Add(1)
 * Fills ks (the core's nodes, in order) and returns the Add(1) node's
 * index, or -1. Constants are compared at f32 precision, as exported. */
static int tanh_core(Ox *x, int k, OxVal *v, int *ks, int *nk) {
    Onnx__NodeProto *n = N(x, k);
    int cube;
    *nk = 0;
    /* a known x is folded instead */
    if (x->done[k] || n->n_output != 1 || !dtype_is_float(v->dt) || v->c) return -1;
    if (!strcmp(n->op_type, "Pow")) {
        if (in_of(x, k, 0) != v || !scalar_is(x, in_of(x, k, 1), 3.0, 0)) return -1;
        cube = k;
        ks[(*nk)++] = k;
    } else if (!strcmp(n->op_type, "Mul") && n->n_input == 2 && in_of(x, k, 0) == v &&
               in_of(x, k, 1) == v) {
        cube = sole(x, out_of(x, k), "Mul");
        if (cube < 0 || other(x, cube, out_of(x, k)) != v) return -1;
        ks[(*nk)++] = k;
        ks[(*nk)++] = cube;
    } else {
        return -1;
    }
    int m1 = sole(x, out_of(x, cube), "Mul");
    if (m1 < 0 || !scalar_is(x, other(x, m1, out_of(x, cube)), 0.044715, 1e-7)) return -1;
    int add = sole(x, out_of(x, m1), "Add");
    if (add < 0 || other(x, add, out_of(x, m1)) != v) return -1;
    int m2 = sole(x, out_of(x, add), "Mul");
    /* sqrt(2 / pi) */
    if (m2 < 0 || !scalar_is(x, other(x, m2, out_of(x, add)), 0.7978845608028654, 1e-6)) return -1;
    int th = sole(x, out_of(x, m2), "Tanh");
    int one = th < 0 ? -1 : sole(x, out_of(x, th), "Add");
    if (one < 0 || !scalar_is(x, other(x, one, out_of(x, th)), 1.0, 0)) return -1;
    int t[5] = {m1, add, m2, th, one};
    memcpy(ks + *nk, t, sizeof t);
    *nk += 5;
    return one;
}

/* gelu(x, approximate="tanh"), 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))),
 * in the two orders exports write it:
 *   F.gelu's export: the x^3 node first, ... Add(1) -> Mul(x) -> Mul(0.5);
 *   written out by hand (GPT-2's NewGELU): Mul(x, 0.5) first, its product
 *   with the Add(1) last. */
static bool gelu_tanh(Ox *x, int k) {
    Onnx__NodeProto *n = N(x, k);
    if (n->n_input < 1 || n->n_output != 1) return false;
    OxVal *v = in_of(x, k, 0);
    if (!v || !v->ready) return false;
    int ks[12], nk, one;
    if ((one = tanh_core(x, k, v, ks, &nk)) >= 0) {
        int mx = sole(x, out_of(x, one), "Mul");
        if (mx < 0 || other(x, mx, out_of(x, one)) != v) return false;
        int half = sole(x, out_of(x, mx), "Mul");
        if (half < 0 || !scalar_is(x, other(x, half, out_of(x, mx)), 0.5, 0)) return false;
        ks[nk++] = mx;
        ks[nk++] = half;
    } else if (!strcmp(n->op_type, "Mul") && n->n_input == 2) {
        OxVal *h = out_of(x, k), *c = other(x, k, in_of(x, k, 0));
        if (!scalar_is(x, c, 0.5, 0)) {
            v = in_of(x, k, 1); /* 0.5 * x */
            if (!v || !v->ready || !scalar_is(x, in_of(x, k, 0), 0.5, 0)) return false;
        }
        /* a known x is folded instead */
        if (!dtype_is_float(v->dt) || v->c) return false;
        int last = sole(x, h, "Mul");
        if (last < 0) return false;
        /* the x^3 node: another reader of x */
        one = -1;
        for (int u = 0; u < v->nusers && one < 0; u++)
            if (v->users[u] != k) {
                ks[0] = k;
                one = tanh_core(x, v->users[u], v, ks + 1, &nk);
            }
        if (one < 0 || other(x, last, h) != out_of(x, one)) return false;
        nk++;
        ks[nk++] = last;
    } else {
        return false;
    }
    finish(x, ks, nk, arena_printf(x->a, "gelu(%s, approximate=\"tanh\")", ox_ref(x, v, false)), v);
    return true;
}

/* ReduceMean's axes: the last dim only (what layer_norm normalises). */
static bool last_axis_mean(Ox *x, int k, OxVal *v) {
    Onnx__NodeProto *n = N(x, k);
    int keep = x->node;
    x->node = k;
    int na;
    const int64_t *ax = ox_attr_ints(x, "axes", &na);
    bool keepdims = ox_attr_i(x, "keepdims", 1) != 0;
    x->node = keep;
    int64_t a;
    if (ax && na == 1) {
        a = ax[0];
    } else if (!ax && n->n_input == 2) {
        OxVal *c = in_of(x, k, 1);
        if (!c || !c->c || c->c->n != 1) return false;
        a = ox_const_int(x, c->c, 0);
    } else {
        return false;
    }
    return keepdims && v->ndim >= 1 && (a == -1 || a == v->ndim - 1);
}

static bool layer_norm(Ox *x, int k) {
    if (strcmp(N(x, k)->op_type, "ReduceMean")) return false;
    OxVal *v = in_of(x, k, 0), *mean = out_of(x, k);
    if (!v || !v->ready || !mean || !dtype_is_float(v->dt) || !last_axis_mean(x, k, v))
        return false;
    int sub = sole(x, mean, "Sub");
    if (sub < 0 || in_of(x, sub, 0) != v || in_of(x, sub, 1) != mean) return false;
    OxVal *d = out_of(x, sub);
    if (!d || d->is_output || d->nusers != 2) return false;
    int pw = -1, dv = -1;
    for (int i = 0; i < 2; i++) {
        int u = d->users[i];
        if (x->done[u]) return false;
        if (!strcmp(N(x, u)->op_type, "Pow")) pw = u;
        if (!strcmp(N(x, u)->op_type, "Div")) dv = u;
    }
    if (pw < 0 || dv < 0 || in_of(x, pw, 0) != d || !scalar_is(x, in_of(x, pw, 1), 2.0, 0))
        return false;
    int m2 = sole(x, out_of(x, pw), "ReduceMean");
    if (m2 < 0 || !last_axis_mean(x, m2, v)) return false;
    int ae = sole(x, out_of(x, m2), "Add");
    OxVal *eps = ae < 0 ? NULL : other(x, ae, out_of(x, m2));
    if (!eps || !eps->c || eps->tg || eps->c->n != 1) return false;
    int sq = sole(x, out_of(x, ae), "Sqrt");
    if (sq < 0 || sole(x, out_of(x, sq), "Div") != dv || in_of(x, dv, 0) != d) return false;
    int ks[9] = {k, sub, pw, m2, ae, sq, dv};
    int nk = 7;
    const char *w = "None", *b = "None";
    OxDim last = v->dim[v->ndim - 1];
    int mw = sole(x, out_of(x, dv), "Mul");
    OxVal *wv = mw < 0 ? NULL : other(x, mw, out_of(x, dv));
    if (wv && wv->c && !wv->tg && wv->ndim == 1 && wv->dim[0].v == last.v) {
        ks[nk++] = mw;
        int ab = sole(x, out_of(x, mw), "Add");
        OxVal *bv = ab < 0 ? NULL : other(x, ab, out_of(x, mw));
        int keep = x->node;
        x->node = mw;
        if (!wv->c->hint)
            wv->c->hint = wv->is_init ? wv->name
                                      : arena_printf(x->a, "%s/weight",
                                                     N(x, mw)->name ? N(x, mw)->name : "ln");
        w = ox_ref(x, wv, false);
        if (bv && bv->c && !bv->tg && bv->ndim == 1 && bv->dim[0].v == last.v) {
            ks[nk++] = ab;
            if (!bv->c->hint)
                bv->c->hint = bv->is_init ? bv->name
                                          : arena_printf(x->a, "%s/bias",
                                                         N(x, mw)->name ? N(x, mw)->name : "ln");
            b = ox_ref(x, bv, false);
        }
        x->node = keep;
    }
    double e = ox_const_get(x, eps->c, 0);
    finish(x, ks, nk,
           arena_printf(x->a, "layer_norm(%s, [%s], %s, %s, eps=%s)", ox_ref(x, v, false),
                        ox_dim_text(x, last), w, b, ox_num(x, e, true)),
           v);
    return true;
}

bool ox_fuse(Ox *x, int k) {
    return linear(x, k) || gelu(x, k) || gelu_tanh(x, k) || layer_norm(x, k);
}
