/* Older opsets' forms of an operator, rewritten to the current form before
 * the node is folded or mapped, so that the evaluator and every mapping
 * read one signature (ONNX's Changelog.md for each op):
 *   Slice  < 10: starts, ends, axes attributes   -> inputs 1..3
 *   Pad    < 11: pads, value attributes          -> inputs 1, 2
 *   Upsample 7: scales attribute, 9: scales input -> Resize's [X, "", scales]
 *   Resize   10: [X, scales]                      -> [X, "", scales]
 * Attributes that became inputs elsewhere (Squeeze, Unsqueeze, Split, the
 * Reduce family's axes, Clip's min and max) are read in either form by
 * their mappings; defaults that changed (Softmax's axis, Resize-10's and
 * Upsample's asymmetric coordinates) are decided there by x->opset. */
#include <string.h>

#include "frontend/onnx/ox.h"

/* A constant made from an attribute, standing where the input now is. */
static OxVal *const_input(Ox *x, const char *what, DType dt, int64_t len, const int64_t *ints,
                          const float *floats) {
    OxVal *v = ARENA_NEW(x->a, OxVal);
    Onnx__NodeProto *n = ox_cur(x);
    v->name = arena_printf(x->a, "%s.%s", n->output[0], what);
    v->c = ox_const_new(x, dt, len < 0 ? 0 : 1, &len);
    ox_const_values(x, v->c);
    for (int64_t k = 0; k < v->c->n; k++)
        if (v->c->f)
            v->c->f[k] = floats ? floats[k] : (double)ints[k];
        else
            v->c->i[k] = ints ? ints[k] : (int64_t)floats[k];
    v->dt = dt;
    v->ndim = v->c->ndim;
    if (v->ndim) v->dim[0] = ox_dim_c(len);
    v->ready = true;
    v->producer = -1;
    return v;
}

static OxVal *ints_input(Ox *x, const char *name, bool required) {
    int n;
    const int64_t *v = ox_attr_ints(x, name, &n);
    if (!v && required) ox_fail(x, "the attribute '%s' is required at opset %d", name, x->opset);
    return v ? const_input(x, name, DT_I64, n, v, NULL) : NULL;
}

static void no_attr(Ox *x, const char *name, const char *since) {
    if (ox_attr(x, name))
        ox_fail(x, "'%s' is an input from opset %s on, not an attribute (opset %d)", name, since,
                x->opset);
}

static void reshape_trailing(Ox *x, OxVal **in, int trail);

/* Opset 6's binary ops broadcast only with broadcast=1, B's dims aligned
 * with A's from `axis` on (default: the trailing ones, numpy's rule):
 * B gets trailing 1-dims so that numpy's rule then gives the same. */
static void old_broadcast(Ox *x, OxVal **in, int nin) {
    if (x->opset >= 7) {
        no_attr(x, "broadcast", "7 (numpy broadcasting; the attribute is opset 6's)");
        if (ox_attr(x, "axis"))
            ox_fail(x, "'axis' is opset 6's attribute of %s (numpy broadcasting from 7 on)",
                    ox_cur(x)->op_type);
        return;
    }
    if (!ox_attr_i(x, "broadcast", 0) || nin != 2 || !in[0] || !in[1]) return;
    int ra = in[0]->ndim, rb = in[1]->ndim;
    int axis = ox_attr(x, "axis") ? ox_axis(x, ox_attr_i(x, "axis", 0), ra) : ra - rb;
    int trail = ra - axis - rb;
    if (axis < 0 || trail < 0)
        ox_fail(x, "B of rank %d does not fit A of rank %d from axis %d", rb, ra, axis);
    if (!trail) return;
    if (!in[1]->c)
        ox_fail(x,
                "broadcast=1 with axis %d of a B computed at run time is not supported (a "
                "constant B is)",
                axis);
    reshape_trailing(x, in, trail);
}

/* in[1], a constant, with trail 1-dims appended (a new value: the
 * original keeps its shape for its other users). */
static void reshape_trailing(Ox *x, OxVal **in, int trail) {
    if (in[1]->ndim + trail > OX_MAX_DIMS) ox_fail(x, "too many dimensions");
    OxVal *v = ARENA_NEW(x->a, OxVal);
    *v = *in[1];
    v->c = ARENA_NEW(x->a, OxConst);
    *v->c = *in[1]->c;
    v->c->param = v->c->param_t = NULL;
    v->tg = NULL;
    v->users = NULL, v->nusers = 0;
    for (int k = 0; k < trail; k++)
        v->c->shape[v->c->ndim++] = 1, v->dim[v->ndim++] = ox_dim_c(1);
    in[1] = v;
}

int ox_upgrade(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin) {
    const char *op = n->op_type;
    static const char *const bcast[] = {"Add", "Sub", "Mul",   "Div",     "Pow",  "And",
                                        "Or",  "Xor", "Equal", "Greater", "Less", NULL};
    for (int k = 0; bcast[k]; k++)
        if (!strcmp(op, bcast[k])) old_broadcast(x, in, nin);
    /* PRelu-6's slope is per channel (axis 1) when it is 1-d of C values;
     * from 7 on it broadcasts as numpy's */
    if (!strcmp(op, "PRelu") && x->opset < 7 && nin == 2 && in[0] && in[1] && in[1]->c &&
        in[1]->ndim == 1 && in[0]->ndim > 2 && in[1]->dim[0].v > 1 &&
        in[1]->dim[0].v == in[0]->dim[1].v)
        reshape_trailing(x, in, in[0]->ndim - 2);
    /* opset 6's is_test: 0 is a training graph */
    if ((!strcmp(op, "BatchNormalization") || !strcmp(op, "Dropout")) && ox_attr(x, "is_test")) {
        if (x->opset >= 7) no_attr(x, "is_test", "7 (removed)");
        if (!strcmp(op, "BatchNormalization") && !ox_attr_i(x, "is_test", 0))
            ox_fail(x, "is_test=0 (a training graph) is not supported");
    }
    if (!strcmp(op, "Slice")) {
        if (x->opset >= 10) {
            no_attr(x, "starts", "10"), no_attr(x, "ends", "10"), no_attr(x, "axes", "10");
            if (nin < 3) ox_fail(x, "Slice takes 3 to 5 inputs from opset 10 on, found %d", nin);
            return nin;
        }
        if (nin != 1) ox_fail(x, "Slice takes 1 input before opset 10, found %d", nin);
        in[1] = ints_input(x, "starts", true);
        in[2] = ints_input(x, "ends", true);
        in[3] = ints_input(x, "axes", false);
        return in[3] ? 4 : 3;
    }
    if (!strcmp(op, "Pad")) {
        if (x->opset >= 11) {
            no_attr(x, "pads", "11"), no_attr(x, "value", "11");
            if (nin < 2) ox_fail(x, "Pad takes 2 to 4 inputs from opset 11 on, found %d", nin);
            return nin;
        }
        if (nin != 1) ox_fail(x, "Pad takes 1 input before opset 11, found %d", nin);
        in[1] = ints_input(x, "pads", true);
        float value = ox_attr_f(x, "value", 0.0f);
        int64_t iv = (int64_t)value;
        in[2] = dtype_is_float(in[0]->dt) ? const_input(x, "value", in[0]->dt, -1, NULL, &value)
                                          : const_input(x, "value", in[0]->dt, -1, &iv, NULL);
        return 3;
    }
    if (!strcmp(op, "Upsample")) {
        OxVal *scales = nin > 1 ? in[1] : NULL;
        if (x->opset < 9) {
            if (nin != 1) ox_fail(x, "Upsample takes 1 input before opset 9, found %d", nin);
            int ns;
            const float *f = ox_attr(x, "scales") ? ox_attr(x, "scales")->floats : NULL;
            ns = ox_attr(x, "scales") ? (int)ox_attr(x, "scales")->n_floats : 0;
            if (!f || !ns) ox_fail(x, "the attribute 'scales' is required at opset %d", x->opset);
            scales = const_input(x, "scales", DT_F32, ns, NULL, f);
        } else {
            no_attr(x, "scales", "9");
            if (nin != 2) ox_fail(x, "Upsample takes 2 inputs from opset 9 on, found %d", nin);
        }
        in[1] = NULL;
        in[2] = scales;
        return 3;
    }
    if (!strcmp(op, "Resize") && x->opset < 11) {
        if (nin != 2) ox_fail(x, "Resize takes 2 inputs at opset 10, found %d", nin);
        in[2] = in[1];
        in[1] = NULL;
        return 3;
    }
    return nin;
}
