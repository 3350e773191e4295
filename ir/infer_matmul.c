/* Matrix products: torch.matmul's rules (1-D operands, broadcast batch
 * dims), mm, bmm, mv, outer, linear and einsum. */
#include <string.h>

#include "ir/einsum_eq.h"
#include "ir/infer.h"

static bool same_dtype(InferCtx *c, Value *v, Value *a, Value *b) {
    if (a->dtype != b->dtype)
        return infer_error(
            c, v->loc,
            "%s needs operands of one dtype, found %s and %s (convert one with .to(...))",
            op_info(v->op)->name, dtype_name(a->dtype), dtype_name(b->dtype));
    if (a->dtype == DT_BOOL)
        return infer_error(c, v->loc, "%s is not implemented for bool tensors",
                           op_info(v->op)->name);
    v->dtype = a->dtype;
    return true;
}

static bool inner_error(InferCtx *c, Value *v, Value *a, Value *b, int64_t ka, int64_t kb) {
    Arena *ar = c->g->arena;
    return infer_error(
        c, v->loc,
        "%s: shapes %s and %s cannot be multiplied: inner dimensions differ (%lld != %lld)",
        op_info(v->op)->name, shape_str(ar, a->shape, a->ndim), shape_str(ar, b->shape, b->ndim),
        (long long)ka, (long long)kb);
}

bool infer_matmul(InferCtx *c, Value *v) {
    Value *a = ARG(v, 0)->t, *b = ARG(v, 1)->t;
    if (a->ndim == 0 || b->ndim == 0)
        return infer_error(
            c, v->loc, "both arguments to matmul need to be at least 1D, but they are %dD and %dD",
            a->ndim, b->ndim);
    if (!same_dtype(c, v, a, b)) return false;
    int64_t ka = a->shape[a->ndim - 1];
    int64_t kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
    if (ka != kb) return inner_error(c, v, a, b, ka, kb);
    /* Batch dims: everything but the matrix dims, broadcast. */
    int na = a->ndim > 2 ? a->ndim - 2 : 0, nb = b->ndim > 2 ? b->ndim - 2 : 0;
    int64_t batch[TG_MAX_DIMS];
    int nd = na > nb ? na : nb;
    for (int i = 0; i < nd; i++) {
        int ia = i - (nd - na), ib = i - (nd - nb);
        int64_t sa = ia >= 0 ? a->shape[ia] : 1, sbb = ib >= 0 ? b->shape[ib] : 1;
        if (sa != sbb && sa != 1 && sbb != 1) {
            Arena *ar = c->g->arena;
            return infer_error(
                c, v->loc, "matmul: batch dimensions of %s and %s do not broadcast (%lld vs %lld)",
                shape_str(ar, a->shape, a->ndim), shape_str(ar, b->shape, b->ndim), (long long)sa,
                (long long)sbb);
        }
        batch[i] = sa == 1 ? sbb : sa;
    }
    int64_t shape[TG_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < nd; i++)
        shape[n++] = batch[i];
    if (a->ndim >= 2) shape[n++] = a->shape[a->ndim - 2];
    if (b->ndim >= 2) shape[n++] = b->shape[b->ndim - 1];
    set_shape(v, shape, n);
    return true;
}

/* mm's and bmm's operands: both of `rank` dims (what0 and what1 open the
 * message for each), and of one dtype. */
static bool ranked_operands(InferCtx *c, Value *v, int rank, const char *what0, const char *what1) {
    Value *a = ARG(v, 0)->t, *b = ARG(v, 1)->t;
    if (a->ndim != rank) return infer_error(c, ARG(v, 0)->loc, "%s, found %d dims", what0, a->ndim);
    if (b->ndim != rank) return infer_error(c, ARG(v, 1)->loc, "%s, found %d dims", what1, b->ndim);
    return same_dtype(c, v, a, b);
}

bool infer_mm(InferCtx *c, Value *v) {
    Value *a = ARG(v, 0)->t, *b = ARG(v, 1)->t;
    if (!ranked_operands(c, v, 2, "mm: self must be a matrix", "mm: mat2 must be a matrix"))
        return false;
    if (a->shape[1] != b->shape[0]) return inner_error(c, v, a, b, a->shape[1], b->shape[0]);
    int64_t s[2] = {a->shape[0], b->shape[1]};
    set_shape(v, s, 2);
    return true;
}

bool infer_bmm(InferCtx *c, Value *v) {
    Value *a = ARG(v, 0)->t, *b = ARG(v, 1)->t;
    if (!ranked_operands(c, v, 3, "batch1 must be a 3D tensor", "batch2 must be a 3D tensor"))
        return false;
    if (a->shape[0] != b->shape[0])
        return infer_error(c, v->loc, "bmm: batch sizes differ: %s and %s",
                           shape_str(c->g->arena, a->shape, 3),
                           shape_str(c->g->arena, b->shape, 3));
    if (a->shape[2] != b->shape[1]) return inner_error(c, v, a, b, a->shape[2], b->shape[1]);
    int64_t s[3] = {a->shape[0], a->shape[1], b->shape[2]};
    set_shape(v, s, 3);
    return true;
}

bool infer_mv(InferCtx *c, Value *v) {
    Value *a = ARG(v, 0)->t, *b = ARG(v, 1)->t;
    if (a->ndim != 2 || b->ndim != 1)
        return infer_error(c, v->loc, "vector + matrix @ vector expected, got %d, %d dims", a->ndim,
                           b->ndim);
    if (!same_dtype(c, v, a, b)) return false;
    if (a->shape[1] != b->shape[0]) return inner_error(c, v, a, b, a->shape[1], b->shape[0]);
    set_shape(v, a->shape, 1);
    return true;
}

bool infer_outer(InferCtx *c, Value *v) {
    Value *a = ARG(v, 0)->t, *b = ARG(v, 1)->t;
    if (a->ndim != 1 || b->ndim != 1)
        return infer_error(c, v->loc, "outer: expected 1D vectors, got %dD and %dD", a->ndim,
                           b->ndim);
    DTypeState s;
    dtype_state_init(&s);
    dtype_state_add(&s, a->dtype, 1, false);
    dtype_state_add(&s, b->dtype, 1, false);
    v->dtype = dtype_state_result(&s);
    int64_t sh[2] = {a->shape[0], b->shape[0]};
    set_shape(v, sh, 2);
    return true;
}

bool infer_linear(InferCtx *c, Value *v) {
    Value *x = ARG(v, 0)->t, *w = ARG(v, 1)->t;
    Arg *bias = ARG(v, 2);
    Arena *ar = c->g->arena;
    if (x->ndim == 0)
        return infer_error(c, ARG(v, 0)->loc, "linear: the input must have at least 1 dimension");
    if (w->ndim != 2 && w->ndim != 1)
        return infer_error(c, ARG(v, 1)->loc,
                           "linear: weight must be [out_features, in_features], found %s",
                           shape_str(ar, w->shape, w->ndim));
    if (!same_dtype(c, v, x, w)) return false;
    int64_t in = w->shape[w->ndim - 1];
    if (x->shape[x->ndim - 1] != in)
        return infer_error(
            c, v->loc,
            "linear: mat1 and mat2 shapes cannot be multiplied (input %s, weight %s "
            "stored [out, in]: the input's last dimension %lld must equal in = %lld)",
            shape_str(ar, x->shape, x->ndim), shape_str(ar, w->shape, w->ndim),
            (long long)x->shape[x->ndim - 1], (long long)in);
    int64_t shape[TG_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < x->ndim - 1; i++)
        shape[n++] = x->shape[i];
    if (w->ndim == 2) shape[n++] = w->shape[0];
    set_shape(v, shape, n);
    if (bias->kind == ARG_TENSOR) {
        int64_t bs[TG_MAX_DIMS];
        int bn = n;
        memcpy(bs, shape, sizeof bs);
        if (!broadcast_into(c, bs, &bn, bias->t, bias->loc, "the product", "bias")) return false;
        if (bn != n || memcmp(bs, shape, sizeof(int64_t) * (size_t)n))
            return infer_error(c, bias->loc, "linear: bias of shape %s does not fit the output %s",
                               shape_str(ar, bias->t->shape, bias->t->ndim),
                               shape_str(ar, shape, n));
        if (bias->t->dtype != v->dtype)
            return infer_error(c, bias->loc, "linear: bias is %s but the product is %s",
                               dtype_name(bias->t->dtype), dtype_name(v->dtype));
    }
    return true;
}

/* einsum("ij,jk->ik", a, b): letters a-zA-Z and "..." for broadcast dims
 * (the equation read by ir/einsum_eq.c; sizes checked and broadcast here). */
bool infer_einsum(InferCtx *c, Value *v) {
    Arg *ops = ARG(v, 1);
    SrcLoc eloc = ARG(v, 0)->loc;
    if (ops->n == 0) return infer_error(c, v->loc, "einsum(): must provide at least one operand");
    if (ops->n > TG_EINSUM_MAX_OPERANDS)
        return infer_error(c, v->loc, "einsum(): at most %d operands are supported, found %d",
                           TG_EINSUM_MAX_OPERANDS, ops->n);
    DType dt = ops->ts[0]->dtype;
    int ranks[TG_EINSUM_MAX_OPERANDS];
    for (int k = 0; k < ops->n; k++) {
        if (ops->ts[k]->dtype != dt)
            return infer_error(c, v->loc, "einsum(): operands must have one dtype, found %s and %s",
                               dtype_name(dt), dtype_name(ops->ts[k]->dtype));
        ranks[k] = ops->ts[k]->ndim;
    }
    EinsumEq e;
    char err[200];
    if (!einsum_eq_read(ARG(v, 0)->s, ops->n, ranks, &e, err, sizeof err))
        return infer_error(c, eloc, "%s", err);
    int64_t size[128];
    for (int i = 0; i < 128; i++)
        size[i] = -1;
    int64_t ell[TG_MAX_DIMS];
    int nell = -1;
    for (int k = 0; k < ops->n; k++) {
        Value *t = ops->ts[k];
        Value part = {.ndim = 0};
        for (int d = 0; d < t->ndim; d++) {
            int l = e.code[k][d];
            int64_t s = t->shape[d];
            if (l >= 128) {
                part.shape[part.ndim++] = s;
                continue;
            }
            if (size[l] >= 0 && size[l] != s && size[l] != 1 && s != 1)
                return infer_error(c, eloc,
                                   "einsum(): subscript %c has size %lld for operand %d which does "
                                   "not broadcast with previously seen size %lld",
                                   l, (long long)s, k, (long long)size[l]);
            if (size[l] < 0 || size[l] == 1) size[l] = s;
        }
        if (!e.has_ell[k]) continue;
        if (nell < 0) {
            memcpy(ell, part.shape, sizeof(int64_t) * (size_t)part.ndim);
            nell = part.ndim;
        } else {
            int nd = nell;
            if (!broadcast_into(c, ell, &nd, &part, eloc, "an ellipsis", "another ellipsis"))
                return false;
            nell = nd;
        }
    }
    int64_t shape[TG_MAX_DIMS];
    int n = 0;
    bool ell_all_one = true;
    for (int x = 0; x < (nell > 0 ? nell : 0); x++)
        ell_all_one &= ell[x] == 1;
    if (e.explicit_out && !e.out_ell && !ell_all_one)
        return infer_error(c, eloc,
                           "einsum(): the output must contain \"...\" when an operand has "
                           "broadcast dimensions");
    for (int i = 0; i < e.nout; i++) {
        int l = e.out[i];
        shape[n++] = l >= 128 ? ell[l - EINSUM_ELL(e.nell, 0)] : size[l];
    }
    /* One operand with a summed subscript is torch.sum underneath, which
     * gives i64 for integers and bool. */
    int distinct = 0;
    for (int l = 0; l < 128; l++)
        distinct += e.count[l] > 0;
    int out_letters = n - (nell > 0 ? nell : 0);
    if (ops->n == 1 && !dtype_is_float(dt) && distinct > out_letters) dt = DT_I64;
    v->dtype = dt;
    set_shape(v, shape, n);
    return true;
}

/* A product with a quantized weight (passes/quantize.c): x [..., k] times
 * the weight's [n, k] rows; the dtype is the product's before quantization,
 * set by the pass, and kept. */
bool infer_qmatmul(InferCtx *c, Value *v) {
    (void)c;
    Value *x = ARG(v, 0)->t, *q = ARG(v, 1)->t;
    TGC_ASSERT(q->quant && x->ndim >= 1);
    int64_t shape[TG_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < x->ndim - 1; i++)
        shape[n++] = x->shape[i];
    shape[n++] = q->quant->n;
    set_shape(v, shape, n);
    return true;
}
