/* Hugging Face's cache pattern as states (see cache_state.h). Imported
 * with past + seq = max_seq, each Concat(past, new, axis = 2) has the
 * shape of the whole cache, which becomes a state of that shape written
 * at `pos`, without copying the cache in and out of the program every
 * run. How the attention then reads it depends on seq:
 *
 * - one token (the decoding step): the Concat becomes the write itself,
 *   slice_scatter(state, new, start = pos), read in place. The model's
 *   causal mask is built for the last row of the (past + 1) square, which
 *   sees every row; attention_mask hides the rows past pos.
 * - a chunk of seq > 1 tokens (the prefill): the model's causal mask is
 *   built for the square's last seq rows (token i sees rows <= past + i),
 *   so the chunk's keys must stay the last rows of what the attention
 *   reads. The state is written at pos as above, and the Concat kept over
 *   its first `past` rows: cat(state'[:past], new). Token i then sees the
 *   cache rows < pos and the chunk's rows up to its own, once
 *   attention_mask hides rows pos..past-1 (a gap, as a left-padded batch
 *   has; the runtime fills it, RtGenProgram.prefill_keys_last). The copy
 *   is once per chunk, not per token. The rows the write puts at pos..pos
 *   + seq - 1 fall in that gap (pos + seq <= max_seq), so reading the
 *   state after the write changes nothing the mask lets through. */
#include "passes/cache_state.h"

#include <ctype.h>
#include <string.h>

#include "ir/state.h"

/* "past_key_values_0_key", "past_key_values.3.value", "past_1_0", ... */
bool cache_state_is_past_name(const char *s) {
    if (!s) return false;
    if (!strncmp(s, "past_key_values", 15))
        s += 15;
    else if (!strncmp(s, "past", 4))
        s += 4;
    else
        return false;
    if (*s != '.' && *s != '_') return false;
    s++;
    if (!isdigit((unsigned char)*s)) return false;
    while (isdigit((unsigned char)*s))
        s++;
    if (*s != '.' && *s != '_') return false;
    s++;
    return !strcmp(s, "key") || !strcmp(s, "value") || !strcmp(s, "0") || !strcmp(s, "1");
}

/* past_key_values.N.value or .N.1 (the name checked). */
static bool is_value(const char *name) {
    size_t n = strlen(name);
    return (n >= 5 && !strcmp(name + n - 5, "value")) || name[n - 1] == '1';
}

static bool is_past(const Value *v) {
    return v->op == OP_INPUT && cache_state_is_past_name(v->name);
}

/* The cat's dim, normalised: the sequence axis of [batch, heads, seq,
 * head_dim]. */
static bool along_seq(const Value *cat) {
    int64_t dim = cat->args[1].i;
    if (dim < 0) dim += cat->ndim;
    return cat->ndim == 4 && dim == 2;
}

/* reader[i], nread[i]: a past input's reader (the last found) and count. */
static bool check_readers(Graph *g, Diag *d, Value **reader, int *nread) {
    for (int i = 0; i < g->nvalues; i++) {
        Value *v = g->values[i];
        for (int k = 0; k < v->nin; k++)
            if (is_past(v->in[k])) {
                reader[v->in[k]->order] = v;
                nread[v->in[k]->order]++;
            }
    }
    bool ok = true;
    for (int i = 0; i < g->noutputs; i++)
        if (is_past(g->outputs[i])) {
            diag_error(d, g->outputs[i]->loc,
                       "%s is an output: not the Hugging Face cache pattern (the past keys and "
                       "values are read only by their Concat with the new ones)",
                       g->outputs[i]->name);
            ok = false;
        }
    for (int i = 0; i < g->nvalues; i++) {
        Value *p = g->values[i], *r = reader[i];
        if (!is_past(p)) continue;
        bool cat = r && r->op == OP_CAT && r->args[0].kind == ARG_TENSORS && r->args[0].n == 2 &&
                   r->args[0].ts[0] == p && r->args[0].ts[1] != p && along_seq(r);
        if (nread[i] == 1 && cat) continue;
        if (nread[i] == 1 && r->op == OP_CAT)
            diag_error(d, r->loc,
                       "%s is concatenated otherwise than Concat(past, new, axis = 2) over "
                       "[batch, heads, seq, head_dim]: not the Hugging Face cache pattern",
                       p->name);
        else if (nread[i] > 1 || (r && !cat))
            diag_error(d, r->loc,
                       "%s is read besides its Concat with the new %s along dim 2 (the "
                       "sequence): not the Hugging Face cache pattern",
                       p->name, is_value(p->name) ? "values" : "keys");
        else
            diag_error(d, p->loc,
                       "%s is never read: not the Hugging Face cache pattern (a Concat of it "
                       "with the new keys or values along dim 2)",
                       p->name);
        ok = false;
    }
    return ok;
}

/* `pos : i64[]`, after the graph's last input. */
static Value *add_pos(Graph *g, Diag *d, SrcLoc loc) {
    int at = 0;
    for (int i = 0; i < g->nvalues; i++) {
        const Value *v = g->values[i];
        if (v->op == OP_INPUT && v->name && !strcmp(v->name, "pos")) {
            diag_error(d, v->loc,
                       "the model has an input named 'pos', the name --generate gives the "
                       "cache's write position");
            return NULL;
        }
        if (v->op == OP_INPUT) at = i + 1;
    }
    Value *pos = value_new(g, OP_INPUT, loc);
    pos->name = "pos";
    pos->dtype = DT_I64;
    pos->ndim = 0;
    graph_insert(g, pos, at);
    return pos;
}

/* The past input, read only by cat, made a zeroed state of the cat's
 * shape (the whole cache). */
static void to_state(Value *cat) {
    Value *past = cat->args[0].ts[0];
    past->op = OP_PARAM;
    past->state = true;
    past->label = "state";
    past->init.kind = INIT_ZEROS;
    past->ndim = cat->ndim;
    memcpy(past->shape, cat->shape, sizeof past->shape);
    shape_contiguous_strides(past->shape, past->ndim, past->strides);
}

/* The step's form: cat([past, new], dim = 2) -> slice_scatter(state, new,
 * dim = 2, start = pos), the same Value (its readers unchanged). */
static bool to_update(Graph *g, Diag *d, Value *cat, Value *pos) {
    Value *past = cat->args[0].ts[0], *new = cat->args[0].ts[1];
    to_state(cat);
    SrcLoc loc = cat->loc;
    cat->op = OP_SLICE_SCATTER;
    cat->label = NULL;
    cat->nargs = op_info(OP_SLICE_SCATTER)->nparams;
    cat->args = ARENA_ARRAY(g->arena, Arg, cat->nargs);
    cat->args[0] = arg_tensor(past, loc);
    cat->args[1] = arg_tensor(new, loc);
    cat->args[2] = arg_int(2, loc);
    cat->args[3] = arg_tensor(pos, loc);
    cat->args[4] = (Arg){.kind = ARG_ABSENT, .loc = loc};
    cat->args[5] = arg_int(1, loc);
    InferCtx c = {.g = g, .d = d};
    return value_infer(&c, cat);
}

/* The prefill's form (a chunk of new rows): the state written at pos,
 * and cat([past, new]) -> cat([narrow(write, 2, 0, past), new]), whose
 * readers see the chunk as the last rows, as the model's causal mask
 * expects (see the top of this file). */
static bool to_update_last(Graph *g, Diag *d, Value *cat, Value *pos) {
    Value *past = cat->args[0].ts[0], *new = cat->args[0].ts[1];
    int64_t npast = past->shape[2];
    to_state(cat);
    SrcLoc loc = cat->loc;
    InferCtx c = {.g = g, .d = d};
    Arg wa[6] = {arg_tensor(past, loc),
                 arg_tensor(new, loc),
                 arg_int(2, loc),
                 arg_tensor(pos, loc),
                 {.kind = ARG_ABSENT, .loc = loc},
                 arg_int(1, loc)};
    Value *w = value_make(&c, OP_SLICE_SCATTER, loc, 6, wa);
    if (!w) return false;
    graph_insert(g, w, cat->order);
    Arg ha[4] = {arg_tensor(w, loc), arg_int(2, loc), arg_int(0, loc), arg_int(npast, loc)};
    Value *head = value_make(&c, OP_NARROW, loc, 4, ha);
    if (!head) return false;
    graph_insert(g, head, cat->order);
    Value **ts = ARENA_ARRAY(g->arena, Value *, 2);
    ts[0] = head;
    ts[1] = new;
    cat->args[0].ts = ts;
    return value_infer(&c, cat);
}

bool pass_cache_state(Graph *g, Diag *d) {
    int n = g->nvalues > 0 ? g->nvalues : 1, ncache = 0;
    Value **reader = ARENA_ARRAY(g->arena, Value *, n);
    int *nread = ARENA_ARRAY(g->arena, int, n);
    for (int i = 0; i < g->nvalues; i++)
        ncache += is_past(g->values[i]);
    if (!ncache) {
        diag_plain_error(d,
                         "graph '%s' has no input past_key_values.N.key / .value: not a decoder "
                         "exported with its cache in the Hugging Face convention",
                         g->name);
        return false;
    }
    if (!check_readers(g, d, reader, nread)) return false;
    /* The cats, before add_pos moves the values. */
    Value **cats = ARENA_ARRAY(g->arena, Value *, ncache);
    SrcLoc first = {0};
    for (int i = 0, k = 0; i < g->nvalues; i++)
        if (is_past(g->values[i])) {
            if (!k) first = g->values[i]->loc;
            cats[k++] = reader[i];
        }
    Value *pos = add_pos(g, d, first);
    if (!pos) return false;
    for (int k = 0; k < ncache; k++) {
        /* The new rows: one (the step) or a chunk (the prefill). */
        bool step = cats[k]->args[0].ts[1]->shape[2] == 1;
        if (!(step ? to_update : to_update_last)(g, d, cats[k], pos)) return false;
        cats[k]->is_output = false;
    }
    /* The present keys and values are the states themselves. */
    int k = 0;
    for (int i = 0; i < g->noutputs; i++) {
        bool present = false;
        for (int j = 0; j < ncache && !present; j++)
            present = g->outputs[i] == cats[j];
        if (!present) g->outputs[k++] = g->outputs[i];
    }
    g->noutputs = k;
    return ir_check_states(g, d);
}
