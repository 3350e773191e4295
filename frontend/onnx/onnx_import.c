/* The importer's driver: checks the model's versions, registers the
 * initializers and graph inputs (dynamic axes become symbolic dims), then
 * walks the nodes in order, each node's attributes checked first
 * (ox_attrs.c): a fused group (ox_fuse.c), else a folded node
 * (ox_fold.c), else one .tg statement (ox_ops*.c). The text is assembled
 * from its three parts at the end. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "frontend/onnx/ox.h"

Onnx__NodeProto *ox_cur(Ox *x) {
    static Onnx__NodeProto none = ONNX__NODE_PROTO__INIT;
    if (x->node < 0 || !x->g || (size_t)x->node >= x->g->n_node) return &none;
    return x->g->node[x->node];
}

const char *ox_node_desc(Ox *x) {
    Onnx__NodeProto *n = ox_cur(x);
    if (!n->op_type) return NULL;
    const char *out = n->n_output && n->output[0] ? n->output[0] : "?";
    return arena_printf(x->a, "node '%s' (%s, opset %d)", n->name && *n->name ? n->name : out,
                        n->op_type, x->opset);
}

void ox_fail(Ox *x, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *where = ox_node_desc(x);
    if (x->collecting && where) {
        struct OxProblem pr = {x->node, where, arena_strdup(x->a, msg)};
        ARENA_PUSH(x->a, x->problems, x->nproblems, x->capproblems, pr);
        longjmp(x->node_fail, 1);
    }
    if (where)
        diag_plain_error(x->d, "%s: %s: %s", x->path, where, msg);
    else
        diag_plain_error(x->d, "%s: %s", x->path, msg);
    longjmp(x->fail, 1);
}

bool onnx_is_model_path(const char *path) {
    size_t n = path ? strlen(path) : 0;
    return n > 5 && !strcasecmp(path + n - 5, ".onnx");
}

static void check_versions(Ox *x) {
    Onnx__ModelProto *m = x->m;
    if (!m->has_ir_version || m->ir_version < 3 || m->ir_version > 10)
        ox_fail(x,
                "IR version %lld is not supported (3 to 10 are; torch.onnx.export writes 7 or 8)",
                (long long)(m->has_ir_version ? m->ir_version : 0));
    /* The version is 64 bits in the file: it is checked as read, so that
     * 2^62 is not reported as the int it would truncate to. */
    int64_t opset = 0;
    bool found = false;
    for (size_t k = 0; k < m->n_opset_import; k++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[k];
        if (o && (!o->domain || !*o->domain || !strcmp(o->domain, "ai.onnx")) && o->has_version)
            opset = o->version, found = true;
    }
    if (!found) ox_fail(x, "the model imports no version of the default operator set");
    /* 7 to 21 are what ONNX Runtime reads for the default domain, and 6
     * what the backend suite's PyTorch cases were exported at; the older
     * forms of each op are rewritten at import (ox_upgrade.c). The
     * backend suite and PyTorch's exports test 6 to 17; 18 to 21 are read
     * with a warning. Opsets 1 to 5 are read node by node: a node whose
     * operator did not change between its opset and 6 is read as at 6
     * (ox_versions.c), any other is refused (import_node). */
    if (opset < 1 || opset > 21)
        ox_fail(x,
                "opset %lld is not supported (1 to 21 are; export with "
                "torch.onnx.export(..., opset_version=17))",
                (long long)opset);
    x->opset = (int)opset;
    if (x->opset > 17 && x->d->out) {
        fprintf(x->d->out,
                "tgc: warning: %s: opset %d: tgc is tested with opsets 6 to 17; "
                "importing anyway\n",
                x->path, x->opset);
        x->d->warnings++;
    }
}

/* Proto strings are UTF-8, but protobuf-c does not check: other bytes
 * would reach the .tg text (whose lexer refuses them) and the messages. */
static bool utf8_ok(const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        int n = *p < 0x80             ? 0
                : (*p & 0xE0) == 0xC0 ? 1
                : (*p & 0xF0) == 0xE0 ? 2
                : (*p & 0xF8) == 0xF0 ? 3
                                      : -1;
        if (n < 0 || (n == 1 && *p < 0xC2)) return false; /* overlong 2-byte forms */
        for (int k = 1; k <= n; k++)
            if ((p[k] & 0xC0) != 0x80) return false;
        p += n + 1;
    }
    return true;
}

static void check_names(Ox *x) {
    Onnx__GraphProto *g = x->g;
    for (size_t k = 0; k < g->n_initializer; k++)
        if (g->initializer[k] && !utf8_ok(g->initializer[k]->name))
            ox_fail(x, "initializer %zu's name is not valid UTF-8", k);
    for (size_t k = 0; k < g->n_input; k++)
        if (g->input[k] && !utf8_ok(g->input[k]->name))
            ox_fail(x, "graph input %zu's name is not valid UTF-8", k);
    for (size_t k = 0; k < g->n_output; k++)
        if (g->output[k] && !utf8_ok(g->output[k]->name))
            ox_fail(x, "graph output %zu's name is not valid UTF-8", k);
    for (size_t k = 0; k < g->n_node; k++) {
        Onnx__NodeProto *n = g->node[k];
        if (!n) continue;
        if (!utf8_ok(n->name) || !utf8_ok(n->op_type))
            ox_fail(x, "node %zu's name or op type is not valid UTF-8", k);
        x->node = (int)k;
        /* Checked before any pass looks at nodes: the fusions compare op
         * types of nodes the import has not reached yet. */
        if (!n->op_type || !*n->op_type) ox_fail(x, "a node without an op_type");
        for (size_t i = 0; i < n->n_input; i++)
            if (!utf8_ok(n->input[i])) ox_fail(x, "input %zu's name is not valid UTF-8", i);
        for (size_t i = 0; i < n->n_output; i++)
            if (!utf8_ok(n->output[i])) ox_fail(x, "output %zu's name is not valid UTF-8", i);
        ox_check_node_form(x);
        x->node = -1;
    }
}

/* Graph inputs: dtype and shape; dim_param names become symbolic dims. */
static void add_inputs(Ox *x) {
    Onnx__GraphProto *g = x->g;
    for (size_t k = 0; k < g->n_input; k++) {
        const Onnx__ValueInfoProto *vi = g->input[k];
        if (!vi || !vi->name) ox_fail(x, "graph input %zu has no name", k);
        OxVal *iv = ox_val(x, vi->name);
        if (iv && iv->is_init) continue; /* an initializer listed as input (IR < 4) */
        const char *what = arena_printf(x->a, "graph input '%s'", vi->name);
        if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
            !vi->type->tensor_type)
            ox_fail(x, "%s is not a tensor", what);
        const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
        DType dt = ox_dtype(x, tt->has_elem_type ? tt->elem_type : 0, what);
        if (!tt->shape) ox_fail(x, "%s has no shape (its rank must be known)", what);
        if (tt->shape->n_dim > OX_MAX_DIMS)
            ox_fail(x, "%s has more than %d dims", what, OX_MAX_DIMS);
        OxVal *v = ox_val_new(x, vi->name);
        v->dt = dt;
        v->ndim = (int)tt->shape->n_dim;
        for (int d = 0; d < v->ndim; d++) {
            const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[d];
            if (dm && dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
                if (dm->dim_value < 0 || dm->dim_value > ((int64_t)1 << 40))
                    ox_fail(x, "%s: dimension %d has size %lld", what, d, (long long)dm->dim_value);
                v->dim[d] = ox_dim_c(dm->dim_value);
                continue;
            }
            /* A dim_param, or an unnamed unknown size: a symbolic dim. */
            const char *pn =
                dm && dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                        dm->dim_param && *dm->dim_param
                    ? dm->dim_param
                    : arena_printf(x->a, "%s_dim%d", vi->name, d);
            bool added;
            int *slot = strmap_at(x->a, &x->dim_index, pn, &added);
            int s = added ? (*slot = x->ndims) : *slot;
            if (added) {
                struct OxSymDim sd = {pn, ox_ident(x, pn, NULL), 1, false};
                for (int o = 0; o < x->nov; o++)
                    if (!strcmp(x->ov[o].name, sd.tg) || !strcmp(x->ov[o].name, pn))
                        sd.v = x->ov[o].value, sd.given = true;
                if (sd.v < 1)
                    ox_fail(x, "-D %s=%lld: a dimension must be at least 1", sd.tg,
                            (long long)sd.v);
                ARENA_PUSH(x->a, x->dims, x->ndims, x->capdims, sd);
            }
            v->dim[d] = (OxDim){x->dims[s].v, x->dims[s].tg};
        }
        /* An input with a dimension of 0 holds no data: its value (empty)
         * is known, so that shape inputs such as ReduceSum's empty axes
         * fold, as ONNX Runtime reads them at run time. */
        int64_t shape[OX_MAX_DIMS];
        bool empty = false, fixed = true;
        for (int d = 0; d < v->ndim; d++) {
            fixed = fixed && !v->dim[d].sym;
            empty = empty || (!v->dim[d].sym && v->dim[d].v == 0);
            shape[d] = v->dim[d].v;
        }
        if (empty && fixed) v->c = ox_const_new(x, dt, v->ndim, shape);
        v->tg = ox_ident(x, vi->name, NULL);
        v->ready = true;
        ox_emit(x, OX_HEAD, "input %s : %s%s", v->tg, dtype_name(dt),
                ox_dims_text(x, v->dim, v->ndim));
        if (strcmp(v->tg, vi->name)) ox_emit(x, OX_HEAD, "  # %s", vi->name);
        ox_emit(x, OX_HEAD, "\n");
    }
    for (int o = 0; o < x->nov; o++) {
        bool found = false;
        for (int s = 0; s < x->ndims && !found; s++)
            found =
                !strcmp(x->ov[o].name, x->dims[s].tg) || !strcmp(x->ov[o].name, x->dims[s].onnx);
        if (!found) {
            char list[512] = "";
            for (int s = 0; s < x->ndims; s++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", s ? ", " : "",
                         x->dims[s].tg);
            x->node = -1;
            ox_fail(x, "-D %s: the model has no dynamic axis of that name (%s%s)", x->ov[o].name,
                    x->ndims ? "it has: " : "it has none", list);
        }
    }
}

/* Counted first, then filled: a value read by every node (a model's
 * input) would otherwise be copied once per user. */
static void count_users(Ox *x) {
    Onnx__GraphProto *g = x->g;
    for (size_t k = 0; k < g->n_node; k++)
        for (size_t i = 0; i < g->node[k]->n_input; i++) {
            OxVal *v = ox_val(x, g->node[k]->input[i]);
            if (v) v->nusers++;
        }
    for (size_t k = 0; k < g->n_node; k++)
        for (size_t i = 0; i < g->node[k]->n_input; i++) {
            OxVal *v = ox_val(x, g->node[k]->input[i]);
            if (!v) continue;
            if (!v->users) { /* its first user: nusers is the count */
                v->users = ARENA_ARRAY(x->a, int, v->nusers);
                v->nusers = 0;
            }
            v->users[v->nusers++] = (int)k;
        }
}

static void poison_outputs(Ox *x, int k) {
    Onnx__NodeProto *n = x->g->node[k];
    for (size_t i = 0; i < n->n_output; i++) {
        OxVal *v = n->output[i] && *n->output[i] ? ox_val(x, n->output[i]) : NULL;
        if (v) v->poisoned = true;
    }
}

/* "operator TopK is not supported; supported: Abs, ..." is one problem
 * whatever the list: the list is printed once, after every problem. */
static const char *problem_key(Ox *x, const char *msg) {
    const char *cut = strstr(msg, "; supported: ");
    return cut ? arena_strndup(x->a, msg, (size_t)(cut - msg)) : msg;
}

/* Every problem the walk recorded, each distinct message once with the
 * nodes it was found in and their count, then the supported operators if
 * an operator was the problem; then the import fails. */
static _Noreturn void report_problems(Ox *x) {
    int nodes = 0, last = -1;
    bool ops_missing = false;
    bool *shown = ARENA_ARRAY(x->a, bool, x->nproblems);
    for (int p = 0; p < x->nproblems; p++) {
        nodes += x->problems[p].node != last;
        last = x->problems[p].node;
    }
    int distinct = 0;
    for (int p = 0; p < x->nproblems; p++) {
        if (shown[p]) continue;
        distinct++;
        const char *key = problem_key(x, x->problems[p].msg);
        ops_missing |= key != x->problems[p].msg;
        int count = 1;
        char *also = arena_strdup(x->a, "");
        for (int q = p + 1; q < x->nproblems; q++) {
            if (shown[q] || strcmp(problem_key(x, x->problems[q].msg), key)) continue;
            shown[q] = true;
            if (count++ < 8) {
                Onnx__NodeProto *n = x->g->node[x->problems[q].node];
                also = arena_printf(x->a, "%s%s'%s'", also, *also ? ", " : "",
                                    n->name && *n->name ? n->name : n->output[0]);
            }
        }
        if (count == 1)
            diag_plain_error(x->d, "%s: %s: %s", x->path, x->problems[p].desc, key);
        else
            diag_plain_error(x->d, "%s: %s: %s (%d nodes; also %s%s)", x->path, x->problems[p].desc,
                             key, count, also, count > 8 ? ", ..." : "");
    }
    if (distinct > 1 || nodes > 1)
        diag_plain_error(x->d, "%s: %d distinct problem%s in %d node%s (each listed above)",
                         x->path, distinct, distinct == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s");
    if (ops_missing)
        diag_plain_error(x->d, "%s: the supported operators are: %s", x->path, ox_supported_ops(x));
    x->node = -1;
    longjmp(x->fail, 1);
}

static void import_node(Ox *x, int k);

/* One node's import; false (its problem recorded, its outputs poisoned)
 * when ox_fail stopped it. */
static bool try_import_node(Ox *x, int k) {
    x->collecting = true;
    if (setjmp(x->node_fail)) {
        x->collecting = false;
        poison_outputs(x, k);
        return false;
    }
    import_node(x, k);
    x->collecting = false;
    return true;
}

static void import_node(Ox *x, int k) {
    Onnx__NodeProto *n = x->g->node[k];
    x->node = k;
    if (!n->op_type || !*n->op_type) ox_fail(x, "a node without an op_type");
    if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx"))
        ox_fail(x, "operators of domain '%s' are not supported (only the default ONNX domain)",
                n->domain);
    if (x->opset < 6) {
        int v6 = ox_version_at_6(n->op_type);
        if (!v6) ox_fail(x, "%s is not an operator of opset %d", n->op_type, x->opset);
        if (x->opset < v6)
            ox_fail(x,
                    "%s changed between opset %d and opset 6, and tgc reads the forms of opset 6 "
                    "on (re-export with torch.onnx.export(..., opset_version=17))",
                    n->op_type, x->opset);
    }
    if (n->n_input > 64 || n->n_output > 64)
        ox_fail(x, "%zu inputs and %zu outputs: at most 64 of each are supported", n->n_input,
                n->n_output);
    OxVal *in[64], *out[64];
    for (size_t i = 0; i < n->n_input; i++) {
        in[i] = NULL;
        if (!n->input[i] || !*n->input[i]) continue;
        in[i] = ox_val(x, n->input[i]);
        if (!in[i])
            ox_fail(x,
                    "input '%s' is not an initializer, a graph input or an earlier node's output "
                    "(a missing initializer, or nodes out of order)",
                    n->input[i]);
        if (!in[i]->ready)
            ox_fail(x, "input '%s' is computed by a later node (nodes must be in order)",
                    n->input[i]);
    }
    for (size_t i = 0; i < n->n_output; i++)
        out[i] = n->output[i] && *n->output[i] ? ox_val(x, n->output[i]) : NULL;
    /* Only the recurrent layers may omit their first output (ONNX's
     * backend tests keep just Y_h); every other mapping writes out[0]. */
    bool rnn = ox_op_is(n, "RNN") || ox_op_is(n, "GRU") || ox_op_is(n, "LSTM");
    bool any_out = false;
    for (size_t i = 0; i < n->n_output; i++)
        any_out |= out[i] != NULL;
    if (!any_out || (!out[0] && !rnn)) ox_fail(x, "the node has no output");
    /* A node reading what a refused node computes is not imported either:
     * its problem, if any, would be a consequence of the first. */
    for (size_t i = 0; i < n->n_input; i++)
        if (in[i] && in[i]->poisoned) {
            poison_outputs(x, k);
            return;
        }
    ox_check_node_attrs(x);
    if (ox_fuse(x, k)) return;
    int nin = ox_upgrade(x, n, in, (int)n->n_input);
    if (!strcmp(n->op_type, "Constant")) {
        const Onnx__AttributeProto *a = n->n_attribute == 1 ? n->attribute[0] : NULL;
        if (!a || !a->name) ox_fail(x, "a Constant needs exactly one attribute");
        OxConst *c;
        if (!strcmp(a->name, "value")) {
            c = ox_tensor_const(x, a->t, "attribute 'value'");
        } else if (!strcmp(a->name, "value_float") || !strcmp(a->name, "value_int")) {
            c = ox_const_new(x, a->name[6] == 'f' ? DT_F32 : DT_I64, 0, NULL);
            ox_const_values(x, c);
            if (c->f)
                c->f[0] = a->f;
            else
                c->i[0] = a->i;
        } else if (!strcmp(a->name, "value_floats") || !strcmp(a->name, "value_ints")) {
            bool f = a->name[6] == 'f';
            int64_t len = (int64_t)(f ? a->n_floats : a->n_ints);
            c = ox_const_new(x, f ? DT_F32 : DT_I64, 1, &len);
            ox_const_values(x, c);
            for (int64_t i = 0; i < len; i++)
                if (f)
                    c->f[i] = a->floats[i];
                else
                    c->i[i] = a->ints[i];
        } else {
            ox_fail(x,
                    "Constant attribute '%s' is not supported (value, value_float(s), value_int(s) "
                    "are)",
                    a->name);
        }
        OxVal *o = out[0];
        o->c = c;
        o->dt = c->dt;
        o->ndim = c->ndim;
        for (int d = 0; d < c->ndim; d++)
            o->dim[d] = ox_dim_c(c->shape[d]);
        return;
    }
    if (ox_fold(x, n, in, nin)) return;
    if (ox_op_tensor(x, n, in, nin, out) || ox_op_nn(x, n, in, nin, out) ||
        ox_op_rnn(x, n, in, nin, out) || ox_op_gridsample(x, n, in, nin, out) ||
        ox_op_roialign(x, n, in, nin, out) || ox_op_tfidf(x, n, in, nin, out) ||
        ox_op_control(x, n, in, nin, out))
        return;
    /* Their output's shape is a count of the data: a compiled program's
     * shapes are fixed before it runs. */
    static const char *const data_shaped[] = {"NonZero", "Unique", "NonMaxSuppression", NULL};
    for (int i = 0; data_shaped[i]; i++)
        if (!strcmp(n->op_type, data_shaped[i]))
            ox_fail(x,
                    "operator %s is not supported: its output's shape depends on the input's "
                    "values, and tgc compiles fixed shapes (a bounded form, such as TopK with a "
                    "known k or a mask with where(), compiles)",
                    n->op_type);
    ox_fail(x, "operator %s is not supported; supported: %s", n->op_type, ox_supported_ops(x));
}

static const char *onnx_type_name(int t) {
    static const char *names[] = {"undefined",  "float",   "uint8",  "int8",   "uint16",
                                  "int16",      "int32",   "int64",  "string", "bool",
                                  "float16",    "double",  "uint32", "uint64", "complex64",
                                  "complex128", "bfloat16"};
    return t >= 0 && t <= 16 ? names[t] : "unknown";
}

static int onnx_type_of(DType dt) {
    static const int types[DT_COUNT] = {
        [DT_BOOL] = 9, [DT_U8] = 2,   [DT_I8] = 3,    [DT_I16] = 5, [DT_I32] = 6,
        [DT_I64] = 7,  [DT_F16] = 10, [DT_BF16] = 16, [DT_F32] = 1, [DT_F64] = 11,
        [DT_U16] = 4,  [DT_U32] = 12, [DT_U64] = 13};
    return dt >= 0 && dt < DT_COUNT ? types[dt] : 0;
}

/* A graph output's declared type against the one computed: ONNX Runtime
 * refuses a model whose outputs disagree, and a caller sized for the
 * declaration would read the wrong bytes. Symbolic or unknown dims in the
 * declaration match anything, and so does a computed dim that is an
 * expression over the graph's dims. */
static void check_declared_output(Ox *x, const Onnx__ValueInfoProto *vi, const OxVal *v) {
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type || v->dt == DT_NONE)
        return;
    const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
    int declared = tt->has_elem_type ? tt->elem_type : 0, computed = onnx_type_of(v->dt);
    bool bad = declared && declared != computed;
    const Onnx__TensorShapeProto *sh = tt->shape;
    char dims[256] = "";
    if (sh) {
        bad |= (int)sh->n_dim != v->ndim;
        for (size_t d = 0; d < sh->n_dim; d++) {
            const Onnx__TensorShapeProto__Dimension *dm = sh->dim[d];
            bool known =
                dm && dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            bool sym = dm && dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            size_t len = strlen(dims);
            if (known)
                snprintf(dims + len, sizeof dims - len, "%s%lld", d ? ", " : "",
                         (long long)dm->dim_value);
            else
                snprintf(dims + len, sizeof dims - len, "%s%s", d ? ", " : "",
                         sym && dm->dim_param ? dm->dim_param : "?");
            if (known && (int)d < v->ndim && !v->dim[d].sym && dm->dim_value != v->dim[d].v)
                bad = true;
        }
    }
    if (!bad) return;
    ox_fail(x, "graph output '%s' is declared %s%s%s%s but computed as %s%s", vi->name,
            declared ? onnx_type_name(declared) : "", sh ? "[" : "", dims, sh ? "]" : "",
            onnx_type_name(computed), ox_dims_text(x, v->dim, v->ndim));
}

static char *dirname_of(Arena *a, const char *path) {
    const char *s = strrchr(path, '/');
    if (!s) return arena_strdup(a, ".");
    if (s == path) return arena_strdup(a, "/");
    return arena_strndup(a, path, (size_t)(s - path));
}

static const char *graph_name(Ox *x) {
    const char *p = x->path, *s = strrchr(p, '/');
    p = s ? s + 1 : p;
    size_t n = strlen(p);
    if (n > 5 && !strcasecmp(p + n - 5, ".onnx")) n -= 5;
    /* made last: it stays clear of every value's name */
    return ox_ident(x, arena_strndup(x->a, p, n), NULL);
}

bool onnx_import(Arena *a, Diag *d, const char *path, const uint8_t *bytes, size_t n,
                 const DimOverride *ov, int nov, OnnxImport *out) {
    memset(out, 0, sizeof *out);
    Ox *x = ARENA_NEW(a, Ox);
    x->a = a;
    x->d = d;
    x->path = path ? path : "model.onnx";
    x->dir = path ? dirname_of(a, path) : NULL;
    x->ov = ov;
    x->nov = nov;
    x->node = -1;
    if (setjmp(x->fail)) {
        for (int k = 0; k < 3; k++)
            free(x->buf[k]);
        if (x->m) onnx__model_proto__free_unpacked(x->m, NULL);
        return false;
    }
    ox_read_model(x, bytes, n);
    check_versions(x);
    ox_expand_control(x);
    check_names(x);
    Onnx__GraphProto *g = x->g;
    size_t nv = g->n_initializer + g->n_input + 16;
    for (size_t k = 0; k < g->n_node; k++) {
        if (!g->node[k]) ox_fail(x, "an empty node");
        nv += g->node[k]->n_output;
    }
    x->tabcap = 64;
    while ((size_t)x->tabcap < 2 * nv) {
        if (x->tabcap > (1 << 26)) ox_fail(x, "too many values");
        x->tabcap *= 2;
    }
    x->tab = ARENA_ARRAY(a, OxVal *, x->tabcap);
    x->done = ARENA_ARRAY(a, bool, g->n_node + 1);
    if (g->n_sparse_initializer) ox_fail(x, "sparse initializers are not supported");
    for (size_t k = 0; k < g->n_initializer; k++) {
        const Onnx__TensorProto *t = g->initializer[k];
        if (!t || !t->name || !*t->name) ox_fail(x, "initializer %zu has no name", k);
        OxVal *v = ox_val_new(x, t->name);
        v->c = ox_tensor_const(x, t, arena_printf(a, "initializer '%s'", t->name));
        v->is_init = true;
        v->dt = v->c->dt;
        v->ndim = v->c->ndim;
        for (int dd = 0; dd < v->ndim; dd++)
            v->dim[dd] = ox_dim_c(v->c->shape[dd]);
    }
    for (size_t k = 0; k < g->n_initializer; k++)
        ox_val(x, g->initializer[k]->name)->ready = true;
    add_inputs(x);
    if (!g->n_output) ox_fail(x, "the graph has no outputs");
    /* Name sets, so that no check below scans every output or input per
     * value (a model may have thousands of either). */
    StrMap graph_outs = {0}, graph_ins = {0}, listed = {0};
    for (size_t k = 0; k < g->n_output; k++)
        if (g->output[k] && g->output[k]->name) strmap_add(a, &graph_outs, g->output[k]->name);
    for (size_t k = 0; k < g->n_input; k++)
        if (g->input[k] && g->input[k]->name) strmap_add(a, &graph_ins, g->input[k]->name);
    /* Every node output exists before the walk: fused groups look ahead at
     * their users. */
    for (size_t k = 0; k < g->n_node; k++) {
        Onnx__NodeProto *n = g->node[k];
        x->node = (int)k;
        for (size_t i = 0; i < n->n_output; i++) {
            if (!n->output[i] || !*n->output[i]) continue;
            OxVal *v = ox_val_new(x, n->output[i]);
            v->is_output = strmap_find(&graph_outs, n->output[i]) != NULL;
            v->dt = DT_NONE;
            v->producer = (int)k;
        }
    }
    x->node = -1;
    count_users(x);
    /* Constants first (they have no inputs): a fused group looking ahead
     * sees the numbers of Constant nodes placed after its first node. */
    for (int pass = 0; pass < 2; pass++)
        for (size_t k = 0; k < g->n_node; k++) {
            bool is_const = g->node[k]->op_type && !strcmp(g->node[k]->op_type, "Constant");
            if (x->done[k] || is_const != (pass == 0)) continue;
            try_import_node(x, (int)k);
            x->done[k] = true;
            for (size_t i = 0; i < g->node[k]->n_output; i++) {
                OxVal *v = ox_val(x, g->node[k]->output[i]);
                if (v) v->ready = true;
            }
        }
    if (x->nproblems) report_problems(x);
    /* Outputs their node did not write (inputs, constants, aliases). */
    x->node = -1;
    for (size_t k = 0; k < g->n_output; k++) {
        const char *on = g->output[k] ? g->output[k]->name : NULL;
        OxVal *v = ox_val(x, on);
        if (!v) ox_fail(x, "graph output '%s' is not computed by any node", on ? on : "");
        if ((v->is_init || (!v->tg && !v->c)) && !strmap_find(&graph_ins, on) && !v->c)
            ox_fail(x, "graph output '%s' is not computed by any node", on);
        if (!strmap_add(a, &listed, on)) ox_fail(x, "graph output '%s' is listed twice", on);
        check_declared_output(x, g->output[k], v);
        if (v->out_written) continue;
        const char *ref = ox_ref(x, v, false);
        if (!v->out_written) {
            const char *id = ox_ident(x, on, NULL);
            ox_emit(x, OX_BODY, "output %s = %s", id, ref);
            if (strcmp(id, on)) ox_emit(x, OX_BODY, "  # output '%s'", on);
            ox_emit(x, OX_BODY, "\n");
        }
    }
    const char *gname = graph_name(x);
    char *head = x->buf[OX_HEAD];
    x->buf[OX_HEAD] = NULL;
    size_t hlen = x->len[OX_HEAD];
    x->len[OX_HEAD] = x->cap[OX_HEAD] = 0;
    Onnx__ModelProto *m = x->m;
    ox_emit(x, OX_HEAD, "# Imported by tgc from %s (%s%s%s, opset %d, IR version %lld).\n", x->path,
            m->producer_name && *m->producer_name ? m->producer_name : "unknown producer",
            m->producer_version && *m->producer_version ? " " : "",
            m->producer_version ? m->producer_version : "", x->opset, (long long)m->ir_version);
    if (x->nparams)
        ox_emit(x, OX_HEAD,
                "# Params come from the weights file written beside it, keyed by these names.\n");
    if (x->ndims)
        ox_emit(x, OX_HEAD,
                "# Dynamic axes are symbolic dims; defaults from -D at import, else 1.\n");
    if (x->used_defaults)
        ox_emit(x, OX_HEAD,
                "# Some shape arithmetic was decided with these defaults: other -D values\n"
                "# may need a new import.\n");
    ox_emit(x, OX_HEAD, "graph %s", gname);
    for (int s = 0; s < x->ndims; s++)
        ox_emit(x, OX_HEAD, "%s%s = %lld", s ? ", " : "(", x->dims[s].tg, (long long)x->dims[s].v);
    ox_emit(x, OX_HEAD, "%s\n\n", x->ndims ? ")" : "");
    ox_emit(x, OX_HEAD, "%.*s", (int)hlen, head ? head : "");
    free(head);
    if (x->len[OX_PARAMS]) ox_emit(x, OX_HEAD, "\n%.*s", (int)x->len[OX_PARAMS], x->buf[OX_PARAMS]);
    ox_emit(x, OX_HEAD, "\n%.*s", (int)x->len[OX_BODY], x->buf[OX_BODY] ? x->buf[OX_BODY] : "");
    out->text = x->buf[OX_HEAD];
    out->len = (int)x->len[OX_HEAD];
    x->buf[OX_HEAD] = NULL;
    free(x->buf[OX_PARAMS]);
    free(x->buf[OX_BODY]);
    out->params = x->params;
    out->nparams = x->nparams;
    out->model = x->m;
    out->data_files = x->data_files;
    out->ndata_files = x->ndata_files;
    return true;
}

void onnx_import_free(OnnxImport *im) {
    free(im->text);
    if (im->model) onnx__model_proto__free_unpacked(im->model, NULL);
    memset(im, 0, sizeof *im);
}
