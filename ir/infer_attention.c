/* Inference of scaled_dot_product_attention, with PyTorch 2's rules
 * (torch.nn.functional.scaled_dot_product_attention):
 *   query [..., L, E], key [..., S, E], value [..., S, Ev] -> [..., L, Ev],
 * the batch dims ("...") broadcasting; attn_mask bool (True takes part) or
 * of the query's dtype (added to the scores), broadcastable to [..., L, S];
 * is_causal: query i sees keys j <= i (torch.ones(L, S).tril()), never
 * with a mask; scale: 1/sqrt(E) by default; dropout_p in [0, 1], applied
 * only in a training build (passes/train_mode.c makes the op
 * attention_dropout, which applies the mask to each probability tile, or
 * writes it out where that kernel cannot serve), ignored in the eval form. The op stays
 * one node to code generation (runtime/attention.c); its gradient is
 * ir/vjp_attention.c. At f64 the builder writes it out instead
 * (ir/lower_sugar.c). */
#include <string.h>

#include "ir/infer.h"

static const char *const NAMES[3] = {"query", "key", "value"};

/* attention_dropout's and attention_backward's seed and step (args at,
 * at + 1): dropout's 0-d i64 states (passes/train_mode.c). */
static bool dropout_key(InferCtx *c, Value *v, int at) {
    for (int i = at; i <= at + 1; i++)
        if (v->args[i].kind != ARG_TENSOR || v->args[i].t->ndim != 0 ||
            v->args[i].t->dtype != DT_I64)
            return infer_error(c, v->args[i].loc, "internal: %s's %s must be 0-d i64",
                               op_info(v->op)->name, i == at ? "seed" : "step");
    return true;
}

bool infer_sdpa(InferCtx *c, Value *v) {
    Arena *a = c->g->arena;
    Value *t[3];
    for (int i = 0; i < 3; i++) {
        t[i] = ARG(v, i)->t;
        if (t[i]->ndim < 2)
            return infer_error(c, ARG(v, i)->loc,
                               "scaled_dot_product_attention: %s must have at least 2 dimensions "
                               "([..., %s, %s]), found shape %s",
                               NAMES[i], i == 0 ? "L" : "S", i == 2 ? "Ev" : "E",
                               shape_str(a, t[i]->shape, t[i]->ndim));
    }
    Value *q = t[0], *k = t[1], *val = t[2];
    if (k->dtype != q->dtype || val->dtype != q->dtype)
        return infer_error(c, v->loc,
                           "Expected query, key, and value to have the same dtype, but got "
                           "query.dtype: %s key.dtype: %s and value.dtype: %s instead.",
                           dtype_name(q->dtype), dtype_name(k->dtype), dtype_name(val->dtype));
    if (!dtype_is_float(q->dtype))
        return infer_error(c, ARG(v, 0)->loc,
                           "scaled_dot_product_attention needs floating-point query, key and "
                           "value, found %s",
                           dtype_name(q->dtype));
    int64_t L = q->shape[q->ndim - 2], E = q->shape[q->ndim - 1];
    int64_t S = k->shape[k->ndim - 2], Ev = val->shape[val->ndim - 1];
    if (k->shape[k->ndim - 1] != E)
        return infer_error(c, ARG(v, 1)->loc,
                           "scaled_dot_product_attention: key's last dimension (%lld) must equal "
                           "query's (E = %lld)",
                           (long long)k->shape[k->ndim - 1], (long long)E);
    if (val->shape[val->ndim - 2] != S)
        return infer_error(c, ARG(v, 2)->loc,
                           "scaled_dot_product_attention: value has %lld rows, key has %lld (S "
                           "must match)",
                           (long long)val->shape[val->ndim - 2], (long long)S);

    /* The batch dims of query, key and value, broadcast right-aligned. */
    int64_t shape[TG_MAX_DIMS];
    int nb = 0;
    for (int i = 0; i < 3; i++)
        nb = t[i]->ndim - 2 > nb ? t[i]->ndim - 2 : nb;
    for (int d = 0; d < nb; d++)
        shape[d] = 1;
    for (int i = 0; i < 3; i++) {
        int off = nb - (t[i]->ndim - 2);
        for (int d = 0; d < t[i]->ndim - 2; d++) {
            int64_t x = t[i]->shape[d];
            if (x == shape[off + d] || x == 1) continue;
            if (shape[off + d] != 1)
                return infer_error(c, ARG(v, i)->loc,
                                   "scaled_dot_product_attention: the batch dimensions of %s %s "
                                   "do not broadcast with the others' %s",
                                   NAMES[i], shape_str(a, t[i]->shape, t[i]->ndim - 2),
                                   shape_str(a, shape, nb));
            shape[off + d] = x;
        }
    }

    Arg *mask = ARG(v, 3), *drop = ARG(v, 4), *causal = ARG(v, 5), *scale = ARG(v, 6);
    if (mask->kind == ARG_TENSOR) {
        const Value *m = mask->t;
        if (m->op == OP_SCALAR && m->weak)
            return infer_error(c, mask->loc,
                               "scaled_dot_product_attention: attn_mask must be a tensor, found "
                               "a number");
        if (m->dtype != DT_BOOL && m->dtype != q->dtype)
            return infer_error(c, mask->loc,
                               "Expected attn_mask dtype to be bool or to match query dtype, but "
                               "got attn_mask.dtype: %s and query.dtype: %s instead.",
                               dtype_name(m->dtype), dtype_name(q->dtype));
        /* The scores are [..., L, S]: the mask broadcasts into them
         * without adding dims (a mask that would widen the result is a
         * user error, not a silent broadcast). */
        int64_t sc[TG_MAX_DIMS];
        memcpy(sc, shape, sizeof(int64_t) * (size_t)nb);
        sc[nb] = L, sc[nb + 1] = S;
        bool ok = m->ndim <= nb + 2;
        for (int d = 0; ok && d < m->ndim; d++) {
            int64_t x = m->shape[m->ndim - 1 - d];
            ok = x == 1 || x == sc[nb + 1 - d];
        }
        if (!ok)
            return infer_error(c, mask->loc,
                               "scaled_dot_product_attention: attn_mask of shape %s does not "
                               "broadcast to the scores' shape %s",
                               shape_str(a, m->shape, m->ndim), shape_str(a, sc, nb + 2));
        if (causal->i)
            return infer_error(c, causal->loc,
                               "_scaled_dot_product_attention: Explicit attn_mask should not be "
                               "set when is_causal=True");
    }
    if (!(drop->f >= 0 && drop->f <= 1))
        return infer_error(c, drop->loc,
                           "scaled_dot_product_attention: dropout_p must be between 0 and 1, "
                           "found %g",
                           drop->f);
    if (scale->kind == ARG_NUM && !(scale->f == scale->f))
        return infer_error(c, scale->loc, "scaled_dot_product_attention: scale is NaN");
    if (v->op == OP_SDPA_DROP && !dropout_key(c, v, 7)) return false;
    shape[nb] = L, shape[nb + 1] = Ev;
    v->dtype = q->dtype;
    set_shape(v, shape, nb + 2);
    return true;
}

/* attention_backward (made by ir/vjp_attention.c, never written): the
 * operands of the forward, its result `out` and that result's gradient,
 * one float dtype (the bool mask aside); the result is f32
 * [..., L + 2S, max(E, Ev) + 2], out's batch dims: dq, dk, dv and each
 * query row's log-sum-exp and D, packed (runtime/tgcrt_abi.h). */
bool infer_sdpa_bwd(InferCtx *c, Value *v) {
    Value *q = ARG(v, 0)->t, *k = ARG(v, 1)->t, *val = ARG(v, 2)->t;
    Value *out = ARG(v, 4)->t, *g = ARG(v, 5)->t;
    const Arg *mask = ARG(v, 3);
    bool ok = q->ndim >= 2 && k->ndim >= 2 && val->ndim >= 2 && out->ndim >= 2 &&
              value_same_shape(out, g) && dtype_is_float(q->dtype);
    const Value *same[4] = {k, val, out, g};
    for (int i = 0; ok && i < 4; i++)
        ok = same[i]->dtype == q->dtype;
    if (ok && mask->kind == ARG_TENSOR)
        ok = mask->t->dtype == DT_BOOL || mask->t->dtype == q->dtype;
    if (!ok) return infer_error(c, v->loc, "internal: attention_backward's operands do not match");
    if (ARG(v, 8)->kind == ARG_TENSOR && !dropout_key(c, v, 8)) return false;
    int64_t L = q->shape[q->ndim - 2], E = q->shape[q->ndim - 1], S = k->shape[k->ndim - 2];
    int64_t Ev = val->shape[val->ndim - 1];
    int64_t shape[TG_MAX_DIMS];
    memcpy(shape, out->shape, sizeof(int64_t) * (size_t)out->ndim);
    shape[out->ndim - 2] = L + 2 * S;
    shape[out->ndim - 1] = (E > Ev ? E : Ev) + 2;
    v->dtype = DT_F32;
    set_shape(v, shape, out->ndim);
    return true;
}
