/* If and Scan, expanded into plain nodes before the import walks the
 * graph (ox_expand_control), so that their bodies' nodes are imported,
 * folded, checked and named in messages like any other node:
 *   - If: both branches' nodes are copied into the graph (the values they
 *     define renamed "IF/then/NAME", "IF/else/NAME"; names from the outer
 *     graph kept), and the If node itself becomes a selection reading the
 *     condition and each output's two candidates (ox_op_control): where()
 *     of the two, which must have one dtype and shape (a compiled
 *     program's shapes are fixed; an output whose shape depended on the
 *     condition is refused), or the chosen branch's value when the
 *     condition is known at import.
 *   - Scan (opset 9 and later; opset 8's batched form as one scan per
 *     batch entry): the body copied once per iteration ("SCAN/iterT/NAME"),
 *     the trip count being the scan inputs' length, known from their
 *     declared shape (graph inputs, initializers, value_info) and at most
 *     MAX_TRIPS; each iteration's slice a Gather at a constant index, the
 *     states threaded from one copy to the next, the scan outputs
 *     Unsqueezed and Concatenated along their axes (reversed for a
 *     reverse direction).
 * Both branches are computed: a program has no control flow. A body
 * holding If, Scan or Loop itself, or initializers, is refused, as is a
 * Scan whose length is not declared. */
#include <stdio.h>
#include <string.h>

#include "frontend/onnx/ox.h"

enum { MAX_TRIPS = 64 };

typedef struct Nl {
    Onnx__NodeProto **v;
    int n, cap;
    int uid; /* for fresh names */
} Nl;

/* Body-local names and what they became. */
typedef struct Ren {
    const char **from, **to;
    int n, cap, capto;
} Ren;

static const char *ren_find(const Ren *r, const char *name) {
    for (int k = r->n - 1; k >= 0; k--)
        if (!strcmp(r->from[k], name)) return r->to[k];
    return NULL;
}

static void ren_add(Ox *x, Ren *r, const char *from, const char *to) {
    int n = r->n;
    ARENA_PUSH(x->a, r->from, r->n, r->cap, from);
    ARENA_PUSH(x->a, r->to, n, r->capto, to);
}

static Onnx__AttributeProto *attr_new(Ox *x, const char *name,
                                      Onnx__AttributeProto__AttributeType type) {
    Onnx__AttributeProto *a = ARENA_NEW(x->a, Onnx__AttributeProto);
    onnx__attribute_proto__init(a);
    a->name = arena_strdup(x->a, name);
    a->has_type = true;
    a->type = type;
    return a;
}

static Onnx__AttributeProto *attr_int(Ox *x, const char *name, int64_t v) {
    Onnx__AttributeProto *a = attr_new(x, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = true;
    a->i = v;
    return a;
}

static Onnx__AttributeProto *attr_ints1(Ox *x, const char *name, int64_t v) {
    Onnx__AttributeProto *a = attr_new(x, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = 1;
    a->ints = ARENA_ARRAY(x->a, int64_t, 1);
    a->ints[0] = v;
    return a;
}

static Onnx__NodeProto *add_node(Ox *x, Nl *l, const char *op, const char *name, int nin,
                                 const char *const *ins, const char *out,
                                 Onnx__AttributeProto *attr) {
    Onnx__NodeProto *n = ARENA_NEW(x->a, Onnx__NodeProto);
    onnx__node_proto__init(n);
    n->op_type = arena_strdup(x->a, op);
    n->name = arena_strdup(x->a, name);
    n->n_input = (size_t)nin;
    n->input = ARENA_ARRAY(x->a, char *, nin ? nin : 1);
    for (int k = 0; k < nin; k++)
        n->input[k] = (char *)ins[k];
    n->n_output = 1;
    n->output = ARENA_ARRAY(x->a, char *, 1);
    n->output[0] = (char *)out;
    if (attr) {
        n->n_attribute = 1;
        n->attribute = ARENA_ARRAY(x->a, Onnx__AttributeProto *, 1);
        n->attribute[0] = attr;
    }
    ARENA_PUSH(x->a, l->v, l->n, l->cap, n);
    return n;
}

static const char *fresh(Ox *x, Nl *l, const char *base, const char *what) {
    return arena_printf(x->a, "%s/%s_%d", base, what, l->uid++);
}

/* A Constant node of int64 values (a scalar when rank 0); its output. */
static const char *const_i64(Ox *x, Nl *l, const char *base, int64_t v, int rank) {
    Onnx__TensorProto *t = ARENA_NEW(x->a, Onnx__TensorProto);
    onnx__tensor_proto__init(t);
    t->has_data_type = true;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    t->n_dims = (size_t)rank;
    t->dims = ARENA_ARRAY(x->a, int64_t, 1);
    t->dims[0] = 1;
    t->n_int64_data = 1;
    t->int64_data = ARENA_ARRAY(x->a, int64_t, 1);
    t->int64_data[0] = v;
    Onnx__AttributeProto *a = ARENA_NEW(x->a, Onnx__AttributeProto);
    onnx__attribute_proto__init(a);
    a->name = arena_strdup(x->a, "value");
    a->has_type = true;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    a->t = t;
    const char *o = fresh(x, l, base, "const");
    add_node(x, l, "Constant", o, 0, NULL, o, a);
    return o;
}

/* v with a new axis at ax: Unsqueeze in the model's opset's form. */
static const char *unsqueeze(Ox *x, Nl *l, const char *base, const char *v, int64_t ax) {
    const char *o = fresh(x, l, base, "unsqueeze");
    if (x->opset >= 13) {
        const char *ins[2] = {v, const_i64(x, l, base, ax, 1)};
        add_node(x, l, "Unsqueeze", o, 2, ins, o, NULL);
    } else {
        add_node(x, l, "Unsqueeze", o, 1, &v, o, attr_ints1(x, "axes", ax));
    }
    return o;
}

static const char *gather(Ox *x, Nl *l, const char *base, const char *v, int64_t idx,
                          int64_t axis) {
    const char *o = fresh(x, l, base, "slice");
    const char *ins[2] = {v, const_i64(x, l, base, idx, 0)};
    add_node(x, l, "Gather", o, 2, ins, o, attr_int(x, "axis", axis));
    return o;
}

static const Onnx__AttributeProto *node_attr(const Onnx__NodeProto *n, const char *name) {
    for (size_t k = 0; k < n->n_attribute; k++)
        if (n->attribute[k] && n->attribute[k]->name && !strcmp(n->attribute[k]->name, name))
            return n->attribute[k];
    return NULL;
}

static const Onnx__GraphProto *graph_attr(Ox *x, const Onnx__NodeProto *n, const char *name) {
    const Onnx__AttributeProto *a = node_attr(n, name);
    if (!a || !a->g) ox_fail(x, "%s needs the graph attribute '%s'", n->op_type, name);
    const Onnx__GraphProto *g = a->g;
    if (g->n_initializer || g->n_sparse_initializer)
        ox_fail(x, "%s's '%s' has initializers, which are not supported (Constant nodes are)",
                n->op_type, name);
    for (size_t k = 0; k < g->n_node; k++) {
        const Onnx__NodeProto *b = g->node[k];
        if (!b || !b->op_type)
            ox_fail(x, "%s's '%s' has a node without an op_type", n->op_type, name);
        if (!strcmp(b->op_type, "If") || !strcmp(b->op_type, "Scan") || !strcmp(b->op_type, "Loop"))
            ox_fail(x, "%s's '%s' holds a %s node: nested control flow is not supported",
                    n->op_type, name, b->op_type);
        for (size_t i = 0; i < b->n_input; i++)
            if (!b->input[i])
                ox_fail(x, "%s's '%s' has a node input without a name", n->op_type, name);
        for (size_t i = 0; i < b->n_output; i++)
            if (!b->output[i])
                ox_fail(x, "%s's '%s' has a node output without a name", n->op_type, name);
    }
    for (size_t k = 0; k < g->n_input; k++)
        if (!g->input[k] || !g->input[k]->name)
            ox_fail(x, "%s's '%s' has an input without a name", n->op_type, name);
    for (size_t k = 0; k < g->n_output; k++)
        if (!g->output[k] || !g->output[k]->name)
            ox_fail(x, "%s's '%s' has an output without a name", n->op_type, name);
    return g;
}

/* Copies the body's nodes with the values they define renamed under
 * prefix (r already maps the body's inputs). */
static void copy_body(Ox *x, Nl *l, const Onnx__GraphProto *g, const char *prefix, Ren *r) {
    for (size_t k = 0; k < g->n_node; k++) {
        const Onnx__NodeProto *b = g->node[k];
        Onnx__NodeProto *c = ARENA_NEW(x->a, Onnx__NodeProto);
        *c = *b;
        c->name =
            (char *)arena_printf(x->a, "%s/%s", prefix, b->name && *b->name ? b->name : b->op_type);
        c->input = ARENA_ARRAY(x->a, char *, b->n_input ? b->n_input : 1);
        for (size_t i = 0; i < b->n_input; i++) {
            const char *to = *b->input[i] ? ren_find(r, b->input[i]) : NULL;
            c->input[i] = (char *)(to ? to : b->input[i]); /* else the outer graph's */
        }
        c->output = ARENA_ARRAY(x->a, char *, b->n_output ? b->n_output : 1);
        for (size_t i = 0; i < b->n_output; i++) {
            if (!*b->output[i]) {
                c->output[i] = b->output[i];
                continue;
            }
            const char *to = arena_printf(x->a, "%s/%s", prefix, b->output[i]);
            ren_add(x, r, b->output[i], to);
            c->output[i] = (char *)to;
        }
        ARENA_PUSH(x->a, l->v, l->n, l->cap, c);
    }
}

static const char *resolve(const Ren *r, const char *name) {
    const char *to = ren_find(r, name);
    return to ? to : name;
}

static void expand_if(Ox *x, Nl *l, Onnx__NodeProto *n) {
    const Onnx__GraphProto *br[2] = {graph_attr(x, n, "then_branch"),
                                     graph_attr(x, n, "else_branch")};
    if (n->n_input != 1 || !n->input[0] || !*n->input[0])
        ox_fail(x, "If takes 1 input (the condition), found %zu", n->n_input);
    if (n->n_output < 1 || !n->output[0]) ox_fail(x, "If has no outputs");
    const char *base = n->name && *n->name ? n->name : n->output[0];
    const char *outs[2][OX_MAX_DIMS * 8];
    if (n->n_output > OX_MAX_DIMS * 8) ox_fail(x, "If has %zu outputs: too many", n->n_output);
    for (int b = 0; b < 2; b++) {
        if (br[b]->n_input)
            ox_fail(x, "If's %s has %zu inputs; a branch has none",
                    b ? "else_branch" : "then_branch", br[b]->n_input);
        if (br[b]->n_output != n->n_output)
            ox_fail(x, "If's %s has %zu outputs; the node has %zu",
                    b ? "else_branch" : "then_branch", br[b]->n_output, n->n_output);
        Ren r = {0};
        copy_body(x, l, br[b], arena_printf(x->a, "%s/%s", base, b ? "else" : "then"), &r);
        for (size_t k = 0; k < n->n_output; k++)
            outs[b][k] = resolve(&r, br[b]->output[k]->name);
    }
    /* the selection: the condition, then each output's two candidates */
    Onnx__NodeProto *s = ARENA_NEW(x->a, Onnx__NodeProto);
    *s = *n;
    s->n_input = 1 + 2 * n->n_output;
    s->input = ARENA_ARRAY(x->a, char *, s->n_input);
    s->input[0] = n->input[0];
    for (size_t k = 0; k < n->n_output; k++) {
        s->input[1 + 2 * k] = (char *)outs[0][k];
        s->input[2 + 2 * k] = (char *)outs[1][k];
    }
    ARENA_PUSH(x->a, l->v, l->n, l->cap, s);
}

/* The declared shape of a value of the top graph: rank, or -1 unknown. */
static int declared_shape(Ox *x, const char *name, int64_t *dims) {
    const Onnx__GraphProto *g = x->g;
    for (size_t k = 0; k < g->n_initializer; k++) {
        const Onnx__TensorProto *t = g->initializer[k];
        if (t && t->name && !strcmp(t->name, name) && t->n_dims <= OX_MAX_DIMS) {
            for (size_t d = 0; d < t->n_dims; d++)
                dims[d] = t->dims[d];
            return (int)t->n_dims;
        }
    }
    const Onnx__ValueInfoProto *const *lists[2] = {
        (const Onnx__ValueInfoProto *const *)g->input,
        (const Onnx__ValueInfoProto *const *)g->value_info};
    size_t counts[2] = {g->n_input, g->n_value_info};
    for (int li = 0; li < 2; li++)
        for (size_t k = 0; k < counts[li]; k++) {
            const Onnx__ValueInfoProto *vi = lists[li][k];
            if (!vi || !vi->name || strcmp(vi->name, name) || !vi->type ||
                vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
                !vi->type->tensor_type->shape)
                continue;
            const Onnx__TensorShapeProto *s = vi->type->tensor_type->shape;
            if (s->n_dim > OX_MAX_DIMS) return -1;
            for (size_t d = 0; d < s->n_dim; d++) {
                if (!s->dim[d] ||
                    s->dim[d]->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
                    dims[d] = -1;
                else
                    dims[d] = s->dim[d]->dim_value;
            }
            return (int)s->n_dim;
        }
    return -1;
}

/* An int list attribute of count values (default def each). */
static void int_list(Ox *x, const Onnx__NodeProto *n, const char *name, int count, int64_t def,
                     int64_t *v) {
    const Onnx__AttributeProto *a = node_attr(n, name);
    for (int k = 0; k < count; k++)
        v[k] = def;
    if (!a) return;
    if ((int)a->n_ints != count)
        ox_fail(x, "%s has %zu values; the Scan has %d", name, a->n_ints, count);
    for (int k = 0; k < count; k++)
        v[k] = a->ints[k];
}

typedef struct ScanSpec {
    const Onnx__GraphProto *body;
    int N, M, K;
    int64_t in_axes[OX_MAX_DIMS * 4], in_dirs[OX_MAX_DIMS * 4];
    int64_t out_axes[OX_MAX_DIMS * 4], out_dirs[OX_MAX_DIMS * 4];
    int64_t T;
} ScanSpec;

/* One scan over T iterations: init[N] states, scan_in[M] inputs (axes
 * already non-negative); writes the final states and the scan outputs'
 * names into res[N + K]. */
static void unroll(Ox *x, Nl *l, const char *base, const ScanSpec *s, const char *const *init,
                   const char *const *scan_in, const char **res) {
    const Onnx__GraphProto *g = s->body;
    const char *cur[OX_MAX_DIMS * 4];
    for (int i = 0; i < s->N; i++)
        cur[i] = init[i];
    const char **per = ARENA_ARRAY(x->a, const char *, (size_t)(s->K * s->T + 1));
    for (int64_t t = 0; t < s->T; t++) {
        const char *prefix = arena_printf(x->a, "%s/iter%lld", base, (long long)t);
        Ren r = {0};
        for (int i = 0; i < s->N; i++)
            ren_add(x, &r, g->input[i]->name, cur[i]);
        for (int j = 0; j < s->M; j++) {
            int64_t idx = s->in_dirs[j] ? s->T - 1 - t : t;
            ren_add(x, &r, g->input[s->N + j]->name,
                    gather(x, l, prefix, scan_in[j], idx, s->in_axes[j]));
        }
        copy_body(x, l, g, prefix, &r);
        for (int i = 0; i < s->N; i++)
            cur[i] = resolve(&r, g->output[i]->name);
        for (int j = 0; j < s->K; j++)
            per[j * s->T + t] = resolve(&r, g->output[s->N + j]->name);
    }
    for (int i = 0; i < s->N; i++)
        res[i] = cur[i];
    for (int j = 0; j < s->K; j++) {
        const char **parts = ARENA_ARRAY(x->a, const char *, (size_t)s->T);
        for (int64_t t = 0; t < s->T; t++) {
            int64_t src = s->out_dirs[j] ? s->T - 1 - t : t;
            parts[t] = unsqueeze(x, l, base, per[j * s->T + src], s->out_axes[j]);
        }
        const char *o = fresh(x, l, base, "scan_output");
        add_node(x, l, "Concat", o, (int)s->T, parts, o, attr_int(x, "axis", s->out_axes[j]));
        res[s->N + j] = o;
    }
}

static void expand_scan(Ox *x, Nl *l, Onnx__NodeProto *n) {
    ScanSpec s = {.body = graph_attr(x, n, "body")};
    const Onnx__GraphProto *g = s.body;
    bool v8 = x->opset < 9;
    const Onnx__AttributeProto *na = node_attr(n, "num_scan_inputs");
    if (!na || !na->has_i) ox_fail(x, "Scan needs the integer attribute num_scan_inputs");
    int first = v8 ? 1 : 0; /* opset 8: sequence_lens first */
    if (v8 && n->n_input > 0 && n->input[0] && *n->input[0])
        ox_fail(x, "Scan's sequence_lens input is not supported (every sequence is scanned whole)");
    int nin = (int)n->n_input - first;
    if (na->i < 1 || na->i > nin || nin > OX_MAX_DIMS * 4 || (int)n->n_output > OX_MAX_DIMS * 4)
        ox_fail(x, "num_scan_inputs %lld for %d inputs", (long long)na->i, nin);
    s.M = (int)na->i;
    s.N = nin - s.M;
    s.K = (int)n->n_output - s.N;
    if (s.K < 0 || (int)g->n_input != s.N + s.M || (int)g->n_output != s.N + s.K)
        ox_fail(x,
                "Scan's body has %zu inputs and %zu outputs; the node's %d states and %d scan "
                "inputs need %d inputs and at least %d outputs",
                g->n_input, g->n_output, s.N, s.M, s.N + s.M, s.N);
    for (int k = first; k < (int)n->n_input; k++)
        if (!n->input[k] || !*n->input[k]) ox_fail(x, "Scan's input %d is omitted", k);
    int_list(x, n, v8 ? "directions" : "scan_input_directions", s.M, 0, s.in_dirs);
    int_list(x, n, "scan_input_axes", s.M, 0, s.in_axes);
    int_list(x, n, "scan_output_directions", s.K, 0, s.out_dirs);
    int_list(x, n, "scan_output_axes", s.K, 0, s.out_axes);
    /* the trip count: the scan inputs' declared length along their axis
     * (opset 8: axis 1, after the batch) */
    int64_t batch = 1;
    const char *const *ins = (const char *const *)n->input + first;
    s.T = -1;
    for (int j = 0; j < s.M; j++) {
        int64_t dims[OX_MAX_DIMS];
        int r = declared_shape(x, ins[s.N + j], dims);
        if (r < 0)
            ox_fail(x,
                    "the length of Scan's input '%s' must be known when the graph is built (a "
                    "declared shape: graph input, initializer or value_info)",
                    ins[s.N + j]);
        int64_t ax = v8 ? 1 : s.in_axes[j];
        if (ax < -r || ax >= r) ox_fail(x, "scan axis %lld of a rank-%d input", (long long)ax, r);
        if (ax < 0) ax += r;
        if (!v8) s.in_axes[j] = ax;
        if (s.in_dirs[j] != 0 && s.in_dirs[j] != 1)
            ox_fail(x, "scan direction %lld (0 or 1)", (long long)s.in_dirs[j]);
        if (dims[ax] < 0 || (v8 && dims[0] < 0))
            ox_fail(x, "the length of Scan's input '%s' must be known when the graph is built",
                    ins[s.N + j]);
        if (s.T >= 0 && dims[ax] != s.T)
            ox_fail(x, "Scan's inputs have lengths %lld and %lld", (long long)s.T,
                    (long long)dims[ax]);
        s.T = dims[ax];
        if (v8) batch = dims[0];
    }
    if (s.T < 1 || s.T > MAX_TRIPS)
        ox_fail(x,
                "Scan over %lld iterations: tgc expands the body once per iteration, for 1 to %d",
                (long long)s.T, MAX_TRIPS);
    if (batch < 1 || batch * s.T > MAX_TRIPS)
        ox_fail(x, "Scan over a batch of %lld x %lld iterations: at most %d are expanded",
                (long long)batch, (long long)s.T, MAX_TRIPS);
    for (int j = 0; j < s.K; j++) {
        if (s.out_dirs[j] != 0 && s.out_dirs[j] != 1)
            ox_fail(x, "scan output direction %lld (0 or 1)", (long long)s.out_dirs[j]);
        if (s.out_axes[j] < 0)
            ox_fail(x, "a negative scan_output_axes (%lld) is not supported",
                    (long long)s.out_axes[j]);
    }
    if (n->n_output < 1 || !n->output[0]) ox_fail(x, "Scan has no outputs");
    const char *base = n->name && *n->name ? n->name : n->output[0];
    const char *res[OX_MAX_DIMS * 8];
    if (!v8) {
        unroll(x, l, base, &s, ins, ins + s.N, res);
    } else {
        /* one scan per batch entry, over [T, ...] slices, stacked back */
        const char **per = ARENA_ARRAY(x->a, const char *, (size_t)((s.N + s.K) * batch));
        for (int j = 0; j < s.M; j++)
            s.in_axes[j] = 0;
        for (int64_t b = 0; b < batch; b++) {
            const char *bb = arena_printf(x->a, "%s/batch%lld", base, (long long)b);
            const char *init[OX_MAX_DIMS * 4], *sin[OX_MAX_DIMS * 4], *r[OX_MAX_DIMS * 8];
            for (int i = 0; i < s.N; i++)
                init[i] = gather(x, l, bb, ins[i], b, 0);
            for (int j = 0; j < s.M; j++)
                sin[j] = gather(x, l, bb, ins[s.N + j], b, 0);
            unroll(x, l, bb, &s, init, sin, r);
            for (int k = 0; k < s.N + s.K; k++)
                per[k * batch + b] = unsqueeze(x, l, bb, r[k], 0);
        }
        for (int k = 0; k < s.N + s.K; k++) {
            const char *o = fresh(x, l, base, "batched");
            add_node(x, l, "Concat", o, (int)batch, per + k * batch, o, attr_int(x, "axis", 0));
            res[k] = o;
        }
    }
    for (size_t k = 0; k < n->n_output; k++) {
        if (!n->output[k] || !*n->output[k]) continue;
        add_node(x, l, "Identity", arena_printf(x->a, "%s/output%zu", base, k), 1, &res[k],
                 n->output[k], NULL);
    }
}

void ox_expand_control(Ox *x) {
    const Onnx__GraphProto *g = x->g;
    bool any = false;
    for (size_t k = 0; k < g->n_node && !any; k++)
        any = g->node[k] && g->node[k]->op_type &&
              (!strcmp(g->node[k]->op_type, "If") || !strcmp(g->node[k]->op_type, "Scan"));
    if (!any) return;
    /* in the arena: a longjmp leaves it as the expansion left it */
    Nl *l = ARENA_NEW(x->a, Nl);
    memset(l, 0, sizeof *l);
    for (size_t k = 0; k < g->n_node; k++) {
        Onnx__NodeProto *n = g->node[k];
        x->node = (int)k;
        bool is_if = n && n->op_type && !strcmp(n->op_type, "If");
        if (!is_if && !(n && n->op_type && !strcmp(n->op_type, "Scan"))) {
            ARENA_PUSH(x->a, l->v, l->n, l->cap, n);
            continue;
        }
        /* A node that cannot be expanded stays, with its reason: the walk
         * reports it among the model's other problems (every one named at
         * once), and poisons what reads its outputs. */
        int mark = l->n;
        x->collecting = true;
        if (setjmp(x->node_fail)) {
            x->collecting = false;
            l->n = mark; /* the partial expansion dropped */
            struct OxCtlFail f = {n, x->problems[--x->nproblems].msg};
            ARENA_PUSH(x->a, x->ctl_fail, x->nctl_fail, x->capctl_fail, f);
            ARENA_PUSH(x->a, l->v, l->n, l->cap, n);
            continue;
        }
        if (is_if)
            expand_if(x, l, n);
        else
            expand_scan(x, l, n);
        x->collecting = false;
    }
    x->node = -1;
    /* the model keeps its own node list (freed with it); the import reads
     * this copy */
    Onnx__GraphProto *c = ARENA_NEW(x->a, Onnx__GraphProto);
    *c = *g;
    c->node = l->v;
    c->n_node = (size_t)l->n;
    x->g = c;
}

bool ox_op_control(Ox *x, Onnx__NodeProto *n, OxVal **in, int nin, OxVal **out) {
    if (!ox_op_is(n, "If") && !ox_op_is(n, "Scan")) return false;
    for (int k = 0; k < x->nctl_fail; k++)
        if (x->ctl_fail[k].n == n) ox_fail(x, "%s", x->ctl_fail[k].msg);
    if (ox_op_is(n, "Scan")) ox_fail(x, "Scan was not expanded");
    int no = (int)n->n_output;
    if (nin != 1 + 2 * no) ox_fail(x, "If was not expanded into its branches");
    OxVal *c = in[0];
    if (!c || c->dt != DT_BOOL) ox_fail(x, "If's condition must be a bool tensor");
    for (int d = 0; d < c->ndim; d++)
        if (c->dim[d].sym || c->dim[d].v != 1)
            ox_fail(x, "If's condition has shape %s; expected one element",
                    ox_dims_text(x, c->dim, c->ndim));
    const char *sc = ox_scalar(x, c); /* known at import: that branch */
    const char *cond = sc ? NULL : ox_ref(x, c, false);
    for (int k = 0; k < no; k++) {
        OxVal *t = in[1 + 2 * k], *e = in[2 + 2 * k];
        if (!out[k]) continue;
        if (!t || !e) ox_fail(x, "If's output %d has no value in a branch", k);
        bool same = t->dt == e->dt && t->ndim == e->ndim;
        for (int d = 0; same && d < t->ndim; d++)
            same = ox_dim_eq(t->dim[d], e->dim[d]);
        if (!same)
            ox_fail(x,
                    "If's output %d is %s%s in then_branch and %s%s in else_branch: the output's "
                    "type would depend on the condition, and tgc compiles fixed shapes",
                    k, dtype_name(t->dt), ox_dims_text(x, t->dim, t->ndim), dtype_name(e->dt),
                    ox_dims_text(x, e->dim, e->ndim));
        const char *y;
        if (sc) {
            y = ox_ref(x, !strcmp(sc, "true") ? t : e, false);
        } else {
            const char *cc = cond;
            /* the condition broadcast to the output's rank, never above */
            if (c->ndim > t->ndim)
                cc = arena_printf(x->a, "reshape(%s, %s)", cond, ox_dims_text(x, t->dim, 0));
            y = arena_printf(x->a, "where(%s, %s, %s)", cc, ox_ref(x, t, false),
                             ox_ref(x, e, false));
        }
        ox_bind_shaped(x, out[k], y, t->dt, t->ndim, t->dim);
    }
    return true;
}
