/* Training-mode and data-selecting operators:
 *   BatchNormalization training_mode=1  the batch's statistics, and the
 *       running ones updated with momentum (ONNX 14/15's definition);
 *   Dropout  an alias when nothing is dropped (ratio 0 or not training);
 *       dropping at random is refused: ONNX's expected outputs come from
 *       numpy's generator, which no compiled program reproduces. When the
 *       ratio or training_mode is known only at run time, the program
 *       checks it: an index that is out of range when dropping would be
 *       random makes the run exit 1 naming the check;
 *   Bernoulli and the Random* operators: refused, saying why;
 *   Compress  with a condition known at import: index_select of the
 *       selected positions (a run-time condition: the output's shape
 *       depends on its values). */
#include <string.h>

#include "frontend/onnx/ox.h"

static bool batchnorm_training(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    ox_need_inputs(x, in, nin, 5);
    OxVal *v = in[0];
    if (v->ndim < 2) ox_fail(x, "the input has rank %d, expected [N, C, ...]", v->ndim);
    if (!dtype_is_float(v->dt))
        ox_fail(x, "the input is %s, expected a float type", dtype_name(v->dt));
    if (n->n_output > 3)
        ox_fail(x, "training_mode=1 has 3 outputs (Y, running_mean, running_var), found %zu",
                n->n_output);
    /* every dim but the channels' */
    char *dims = arena_strdup(x->a, "[0");
    for (int k = 2; k < v->ndim; k++)
        dims = arena_printf(x->a, "%s, %d", dims, k);
    dims = arena_printf(x->a, "%s]", dims);
    const char *src = ox_ref(x, v, false), *base = n->output[0];
    const char *m =
        ox_tmp(x, base, "_batch_mean", arena_printf(x->a, "mean(%s, dim=%s)", src, dims));
    /* the population variance, as ONNX's reference (numpy's var) */
    const char *var = ox_tmp(x, base, "_batch_var",
                             arena_printf(x->a, "var(%s, dim=%s, correction=0)", src, dims));
    ox_bind_shaped(x, out[0],
                   arena_printf(x->a, "batch_norm(%s, %s, %s, %s, %s, eps=%s)", src, m, var,
                                ox_ref(x, in[1], false), ox_ref(x, in[2], false),
                                ox_num(x, ox_attr_f(x, "epsilon", 1e-5f), true)),
                   v->dt, v->ndim, v->dim);
    double mom = ox_attr_f(x, "momentum", 0.9f);
    for (int k = 1; k < 3 && k < (int)n->n_output; k++) {
        if (!out[k]) continue;
        OxVal *run = in[k + 2];
        ox_bind_shaped(x, out[k],
                       arena_printf(x->a, "%s * %s + %s * %s", ox_ref(x, run, false),
                                    ox_num(x, mom, true), k == 1 ? m : var,
                                    ox_num(x, 1.0 - mom, true)),
                       run->dt, run->ndim, run->dim);
    }
    return true;
}

/* A known scalar's value; false when v is not known at import. */
static bool known_scalar(Ox *x, OxVal *v, double *out) {
    if (!v->c || v->c->n != 1) return false;
    *out = ox_const_get(x, v->c, 0);
    return true;
}

static bool dropout(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    ox_need_inputs(x, in, nin, 1);
    OxVal *v = in[0], *ratio = nin > 1 ? in[1] : NULL, *tmode = nin > 2 ? in[2] : NULL;
    /* opset 12's inputs: ratio (default 0.5), training_mode (default false) */
    double r = 0.5, t = 0;
    bool r_known = !ratio || known_scalar(x, ratio, &r);
    bool t_known = !tmode || known_scalar(x, tmode, &t);
    bool alias = (r_known && r == 0) || (t_known && t == 0);
    if (!alias && r_known && t_known)
        ox_fail(x,
                "training_mode true with ratio %g drops at random: ONNX's expected outputs "
                "come from numpy's generator, which a compiled program cannot reproduce",
                r);
    const char *src = ox_ref(x, v, false), *base = n->output[0];
    const char *y = src, *mask = NULL;
    if (!alias) {
        /* known only at run time: the run checks that nothing is dropped */
        const char *cond =
            !r_known ? arena_printf(x->a, "(%s != 0.0)", ox_ref(x, ratio, false)) : NULL;
        const char *tc = !t_known ? ox_ref(x, tmode, false) : NULL;
        if (tc && tmode->dt != DT_BOOL) tc = arena_printf(x->a, "(%s != 0)", tc);
        cond = cond && tc ? arena_printf(x->a, "%s & %s", cond, tc) : cond ? cond : tc;
        ox_emit(x, OX_BODY,
                "# %s: dropping at random (training_mode true, ratio not 0) is refused at run "
                "time: numpy's generator, which ONNX's outputs come from, cannot be reproduced\n",
                n->name && *n->name ? n->name : base);
        const char *idx = ox_tmp(x, base, "_random_dropout",
                                 arena_printf(x->a, "reshape((%s).to(i64), [1])", cond));
        const char *one = ox_tmp(x, base, "_not_dropped",
                                 arena_printf(x->a, "ones([1], dtype=%s)", dtype_name(v->dt)));
        const char *chk =
            ox_tmp(x, base, "_check", arena_printf(x->a, "index_select(%s, 0, %s)[0]", one, idx));
        y = arena_printf(x->a, "%s * %s", src, chk); /* exact: times 1 */
        mask = arena_printf(x->a, "(%s > 0.0)", chk);
    }
    if (n->n_output > 1 && out[1]) {
        /* all true; when checked at run time, only once the check has run */
        const char *all =
            arena_printf(x->a, "full(%s, true, dtype=bool)", ox_dims_text(x, v->dim, v->ndim));
        ox_bind_shaped(x, out[1],
                       alias ? all : arena_printf(x->a, "logical_and(%s, %s)", all, mask), DT_BOOL,
                       v->ndim, v->dim);
    }
    if (alias && !out[0]->is_output) {
        out[0]->tg = src; /* an alias: no statement */
        ox_set_shape(out[0], v->dt, v->ndim, v->dim);
        return true;
    }
    return ox_bind_shaped(x, out[0], y, v->dt, v->ndim, v->dim);
}

static bool compress(Ox *x, OxVal **in, int nin, OxVal *out) {
    ox_need_inputs(x, in, nin, 2);
    OxVal *v = in[0], *c = in[1];
    if (!c->c)
        ox_fail(x, "operator Compress is not supported with a condition computed at run time: "
                   "its output's shape depends on the condition's values, and tgc compiles "
                   "fixed shapes (a condition known at import, such as an initializer, compiles; "
                   "else where() keeps the shape)");
    if (c->dt != DT_BOOL || c->ndim != 1) ox_fail(x, "the condition must be a 1-d bool tensor");
    const Onnx__AttributeProto *ax = ox_attr(x, "axis");
    int a = ax ? ox_axis(x, ox_attr_i(x, "axis", 0), v->ndim) : 0;
    OxDim len = ax ? v->dim[a] : ox_dim_c(1);
    if (!ax)
        for (int k = 0; k < v->ndim; k++)
            len = ox_dim_op(x, '*', len, v->dim[k]);
    if (len.sym) ox_fail(x, "the compressed axis's length must be known at import");
    /* ONNX: a condition shorter than the axis drops the rest; longer: error */
    if (c->c->n > len.v)
        ox_fail(x, "the condition has %lld values for an axis of %lld", (long long)c->c->n,
                (long long)len.v);
    int64_t cnt = 0;
    for (int64_t k = 0; k < c->c->n; k++)
        cnt += ox_const_int(x, c->c, k) != 0;
    if (!cnt) ox_fail(x, "the condition selects nothing (an empty output)");
    OxConst *idx = ox_const_new(x, DT_I64, 1, &cnt);
    ox_const_values(x, idx);
    for (int64_t k = 0, j = 0; k < c->c->n; k++)
        if (ox_const_int(x, c->c, k)) idx->i[j++] = k;
    idx->hint = arena_printf(x->a, "%s_index", out->name);
    const char *src = ox_ref(x, v, false);
    if (!ax) src = arena_printf(x->a, "reshape(%s, [-1])", src);
    OxDim d[OX_MAX_DIMS];
    int r = ax ? v->ndim : 1;
    for (int k = 0; k < r; k++)
        d[k] = ax ? v->dim[k] : len;
    d[a] = ox_dim_c(cnt);
    return ox_bind_shaped(
        x, out, arena_printf(x->a, "index_select(%s, %d, %s)", src, a, ox_param(x, idx, false)),
        v->dt, r, d);
}

bool ox_op_train(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (ox_op_is(n, "BatchNormalization") && ox_attr_i(x, "training_mode", 0))
        return batchnorm_training(x, n, in, nin, out);
    if (ox_op_is(n, "Dropout")) return dropout(x, n, in, nin, out);
    if (ox_op_is(n, "Compress")) return compress(x, in, nin, out[0]);
    static const char *const random[] = {"Bernoulli",
                                         "RandomUniform",
                                         "RandomUniformLike",
                                         "RandomNormal",
                                         "RandomNormalLike",
                                         "Multinomial",
                                         NULL};
    for (int i = 0; random[i]; i++)
        if (ox_op_is(n, random[i]))
            ox_fail(x,
                    "operator %s is not supported: its outputs are random, and ONNX's "
                    "expected ones come from numpy's generator, which a compiled program "
                    "cannot reproduce",
                    n->op_type);
    return false;
}
