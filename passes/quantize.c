/* Weight quantization (--quantize int8|int4).
 * Requires: pass_precision's output. Gives: each float param whose every
 * use is the 2-D weight of a matrix product (linear's weight, matmul/mm's
 * right operand, or a transpose of it there) replaced by two params: the
 * quantized rows q[n][k] under the weight's own name (i8, or u8 holding
 * two int4 per byte) and its f32 scales "NAME.scales" [n][groups]; the
 * products become OP_QMATMUL. A param used any other way (a bias, an
 * embedding, a product operand on the left) stays as it is: quantizing it
 * would change more than the matrix products. The values q and scales are
 * computed by the driver from the weights file (driver/quantize_weights.c),
 * so that `tgc report` can plan a quantized build without the weights. */
#include <string.h>

#include "ir/infer.h"
#include "passes/pipeline.h"

/* The 2-D weight operand of a product v, when `w` is it; *transposed is
 * true when the product reads w as [k, n] (so q = w^T). */
static bool weight_use(const Value *v, int arg, bool *transposed) {
    if (v->op == OP_LINEAR) return arg == 1 && (*transposed = false, true);
    if ((v->op == OP_MATMUL || v->op == OP_MM) && arg == 1 && v->args[0].t->ndim >= 1 &&
        v->args[1].t->ndim == 2) {
        *transposed = true;
        return true;
    }
    return false;
}

static bool is_swap_view(const Value *t) {
    if (t->ndim != 2) return false;
    if (t->op == OP_TRANSPOSE || t->op == OP_SWAPAXES) return t->args[1].i != t->args[2].i;
    if (t->op == OP_PERMUTE) return t->args[1].n == 2 && t->args[1].ints[0] == 1;
    return false;
}

typedef struct {
    int nusers;
    bool ok, transposed, seen;
} UseInfo;

static void note_use(UseInfo *u, bool ok, bool transposed) {
    if (!ok || (u->seen && u->transposed != transposed)) u->ok = false;
    u->seen = true;
    u->transposed = transposed;
}

void pass_quantize(Graph *g, Diag *d, const PrecisionPolicy *pol) {
    (void)d;
    if (!pol || !pol->quant_bits) return;
    int nid = g->next_id;
    UseInfo *use = ARENA_ARRAY(g->arena, UseInfo, nid + 1);
    bool *view_bad = ARENA_ARRAY(g->arena, bool, nid + 1);
    /* A transpose of a param qualifies when all its uses are product weights. */
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        if (v->is_output) view_bad[v->id] = true;
        for (int k = 0; k < v->nargs; k++) {
            Arg *a = &v->args[k];
            int n = a->kind == ARG_TENSOR ? 1 : a->kind == ARG_TENSORS ? a->n : 0;
            for (int j = 0; j < n; j++) {
                Value *t = a->kind == ARG_TENSOR ? a->t : a->ts[j];
                bool tr = false;
                if (is_swap_view(t) && !(a->kind == ARG_TENSOR && weight_use(v, k, &tr) && tr))
                    view_bad[t->id] = true;
            }
        }
    }
    /* A param qualifies when every use reads it the same way as a weight. */
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        if (v->op == OP_PARAM) use[v->id].ok = !v->is_output;
        for (int k = 0; k < v->nargs; k++) {
            Arg *a = &v->args[k];
            int n = a->kind == ARG_TENSOR ? 1 : a->kind == ARG_TENSORS ? a->n : 0;
            for (int j = 0; j < n; j++) {
                Value *t = a->kind == ARG_TENSOR ? a->t : a->ts[j];
                if (t->op != OP_PARAM) continue;
                bool tr = false, ok;
                if (is_swap_view(v) && k == 0)
                    ok = !view_bad[v->id];
                else
                    ok = a->kind == ARG_TENSOR && weight_use(v, k, &tr);
                note_use(&use[t->id], ok, tr);
            }
        }
    }
    /* Replace each candidate param by q and scales, in place. */
    Value **repl = ARENA_ARRAY(g->arena, Value *, nid + 1);
    Value **list = NULL;
    int count = 0, cap = 0;
    for (int i = 0; i < g->nvalues; i++) {
        Value *p = g->values[i];
        if (p->op == OP_PARAM && p->ndim == 2 && dtype_is_float(p->dtype) && use[p->id].ok &&
            use[p->id].seen && p->shape[0] > 0 && p->shape[1] > 0) {
            bool tr = use[p->id].transposed;
            int64_t n = p->shape[tr ? 1 : 0], k = p->shape[tr ? 0 : 1];
            QuantOf *qo = ARENA_NEW(g->arena, QuantOf);
            qo->source = p->name;
            qo->transposed = tr;
            qo->bits = pol->quant_bits;
            qo->n = n, qo->k = k;
            qo->group = precision_group(pol, k);
            qo->init = p->init;
            Value *q = value_new(g, OP_PARAM, p->loc);
            q->name = p->name;
            q->dtype = pol->quant_bits == 8 ? DT_I8 : DT_U8;
            set_shape(q, (int64_t[]){n, pol->quant_bits == 8 ? k : (k + 1) / 2}, 2);
            q->quant = qo;
            Value *s = value_new(g, OP_PARAM, p->loc);
            s->name = arena_printf(g->arena, "%s.scales", p->name);
            s->dtype = DT_F32;
            set_shape(s, (int64_t[]){n, (k + qo->group - 1) / qo->group}, 2);
            qo->scales = s;
            repl[p->id] = q;
            p->dead = true;
            q->order = count;
            ARENA_PUSH(g->arena, list, count, cap, q);
            s->order = count;
            ARENA_PUSH(g->arena, list, count, cap, s);
            continue;
        }
        if (is_swap_view(p) && p->args[0].t->op == OP_PARAM && p->args[0].t->id < nid &&
            repl[p->args[0].t->id]) {
            p->dead = true; /* every use of it is a product rewritten below */
            continue;
        }
        /* Products reading a replaced param (directly, or through its
         * transpose) become qmatmul. */
        if (op_info(p->op)->flags & OPF_MATMUL && p->nargs >= 2 && p->args[1].kind == ARG_TENSOR) {
            Value *w = p->args[1].t;
            if (is_swap_view(w) && w->args[0].t->op == OP_PARAM) w = w->args[0].t;
            Value *q = w->id < nid ? repl[w->id] : NULL;
            if (q) {
                Arg *args = ARENA_ARRAY(g->arena, Arg, 4);
                args[0] = p->args[0];
                args[1] = arg_tensor(q, p->args[1].loc);
                args[2] = arg_tensor(q->quant->scales, p->args[1].loc);
                args[3] = p->op == OP_LINEAR ? p->args[2] : (Arg){.kind = ARG_ABSENT};
                p->op = OP_QMATMUL;
                p->args = args;
                p->nargs = 4;
                DType keep = p->dtype;
                InferCtx ic = {.g = g, .d = d};
                value_infer(&ic, p);
                p->dtype = keep;
            }
        }
        p->order = count;
        ARENA_PUSH(g->arena, list, count, cap, p);
    }
    g->values = list;
    g->nvalues = count;
    g->cap_values = cap;
}
