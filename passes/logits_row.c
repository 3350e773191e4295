/* The prefill's logits at one row (logits_row.h). Generation reads the
 * logits of one position a prompt: the last token's, in the last chunk;
 * the other rows of that chunk and every row of the chunks before are
 * computed and dropped. Over a vocabulary of 32,000 and d = 1024 that
 * product is 27% of a 128-token chunk's FLOPs. Selecting the row before
 * the product leaves everything before it as it was (the cache is written
 * by all rows), and the product's row is the same dot products as before,
 * so the chosen token cannot change. */
#include "passes/logits_row.h"

#include <string.h>

/* The value named `logits` among the outputs, or NULL. */
static Value *find_logits(Graph *g) {
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i]->name && !strcmp(g->outputs[i]->name, "logits")) return g->outputs[i];
    return NULL;
}

/* x of logits = x @ W or linear(x, W[, b]), x [batch, seq, d] and W 2-D;
 * NULL for another form. */
static Value *product_rows(const Value *lg) {
    if (lg->ndim != 3 || (lg->op != OP_LINEAR && lg->op != OP_MATMUL) || lg->nargs < 2 ||
        lg->args[0].kind != ARG_TENSOR || lg->args[1].kind != ARG_TENSOR)
        return NULL;
    Value *x = lg->args[0].t, *w = lg->args[1].t;
    if (x->ndim != 3 || w->ndim != 2 || x->shape[0] != lg->shape[0] || x->shape[1] != lg->shape[1])
        return NULL;
    return x;
}

/* `gen_row : i64[1]` after the graph's last input; NULL after an error. */
static Value *add_row_input(Graph *g, Diag *d, SrcLoc loc) {
    int at = 0;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (v->op == OP_INPUT && v->name && !strcmp(v->name, LOGITS_ROW_INPUT)) {
            diag_error(d, v->loc,
                       "the graph has an input named '" LOGITS_ROW_INPUT
                       "', the name --generate gives the row of the prefill's logits");
            return NULL;
        }
        if (v->op == OP_INPUT) at = i + 1;
    }
    Value *row = value_new(g, OP_INPUT, loc);
    row->name = LOGITS_ROW_INPUT;
    row->dtype = DT_I64;
    row->ndim = 1;
    row->shape[0] = 1;
    shape_contiguous_strides(row->shape, row->ndim, row->strides);
    graph_insert(g, row, at);
    return row;
}

bool pass_logits_row(Graph *g, Diag *d) {
    Value *lg = find_logits(g), *x = lg ? product_rows(lg) : NULL;
    if (!x) return true;
    Value *row = add_row_input(g, d, lg->loc);
    if (!row) return false;
    InferCtx c = {.g = g, .d = d};
    Arg sa[3] = {arg_tensor(x, lg->loc), arg_int(1, lg->loc), arg_tensor(row, lg->loc)};
    Value *sel = value_make(&c, OP_INDEX_SELECT, lg->loc, 3, sa);
    if (!sel) return false;
    graph_insert(g, sel, lg->order); /* just before the product */
    lg->args[0] = arg_tensor(sel, lg->loc);
    return value_infer(&c, lg);
}
