/* Matrix products: matmul (torch.matmul's rank rules, broadcast batch
 * dims), mm, bmm, mv, outer and linear become one rt_matmul call each, with
 * a constant descriptor of sizes and element strides: a transposed or
 * strided operand is passed as strides (the runtime turns them into BLAS
 * transpose flags and leading dimensions). linear's bias is first
 * broadcast into the output, then the product accumulates onto it.
 * einsum is a generic contraction kernel: output dims outer, summed
 * letters inner (k_einsum.c). */
#include <string.h>

#include "codegen/llvm/cg.h"

#define B (cg->b)

LLVMValueRef cg_fwd_ptr(Cg *cg, const Value *v) {
    const CgProgram *p = cg->p;
    const Value *o = v->storage;
    int slot = p->iface.slot[o->order];
    LLVMValueRef bufs = LLVMBuildBitCast(B, cg->fwd_bufs, cg->t_pptr, "");
    int64_t off = v->offset * (int64_t)dtype_size(cg_dt(cg, o));
    if (slot < 0) {
        int bi = p->sched->buf_of[o->order];
        slot = 0;
        off += bi >= 0 ? p->plan->offset[bi] : 0;
    }
    LLVMValueRef pp =
        LLVMBuildInBoundsGEP2(B, cg->t_ptr, bufs, (LLVMValueRef[]){cg_const_i64(cg, slot)}, 1, "");
    LLVMValueRef base = LLVMBuildLoad2(B, cg->t_ptr, pp, "");
    return LLVMBuildGEP2(B, cg->t_i8, base, (LLVMValueRef[]){cg_const_i64(cg, off)}, 1, "");
}

/* A constant int64 descriptor (MM, QMM) as a private global. */
static LLVMValueRef desc_global(Cg *cg, const void *desc, size_t bytes) {
    LLVMValueRef els[64];
    const int64_t *f = desc;
    TGC_ASSERT(bytes / 8 <= 64);
    for (size_t i = 0; i < bytes / 8; i++)
        els[i] = cg_const_i64(cg, f[i]);
    LLVMValueRef arr = LLVMConstArray(cg->t_i64, els, (unsigned)(bytes / 8));
    LLVMValueRef g = LLVMAddGlobal(cg->mod, LLVMTypeOf(arr), "matmul_desc");
    LLVMSetInitializer(g, arr);
    LLVMSetGlobalConstant(g, true);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    return g;
}

void cg_call_matmul(Cg *cg, const MM *mm, const Value *a, const Value *b, const Value *c) {
    LLVMValueRef g = desc_global(cg, mm, sizeof *mm);
    LLVMPositionBuilderAtEnd(B, LLVMGetLastBasicBlock(cg->fwd));
    LLVMValueRef args[5] = {LLVMBuildBitCast(B, g, cg->t_ptr, ""), cg_fwd_ptr(cg, a),
                            cg_fwd_ptr(cg, b), cg_fwd_ptr(cg, c), cg->fwd_pool};
    cg_call(cg, "rt_matmul", cg->t_void, args, 5);
}

void k_broadcast_into(Cg *cg, const Value *src, const Value *dst);

/* Batch dims of operand t (its leading ndim - nmat dims), right-aligned
 * against nb output batch dims: stride, or 0 where it broadcasts. */
static void batch_strides(const Value *t, int nmat, int nb, const int64_t *bshape, int64_t *out) {
    int tb = t->ndim - nmat;
    for (int j = 0; j < nb; j++) {
        int d = j - (nb - tb);
        out[j] = d >= 0 && t->shape[d] != 1 ? t->strides[d] : 0;
        (void)bshape;
    }
}

/* The rows of x [..., k] in a product with a 2-D weight, whose output has
 * contiguous strides cs: leading dims fold into the row count (returned)
 * when they are evenly strided, else the last one is the rows and the
 * others are batch dims (at most TG_MAX_DIMS - 2, within MAXB). Sets the
 * row stride, the batch sizes and x's and the output's batch strides. */
_Static_assert(TG_MAX_DIMS - 2 <= MAXB, "lead_rows' batch dims fit the descriptors");
static int64_t lead_rows(const Value *x, const int64_t *cs, int64_t *rs, int64_t *nbatch,
                         int64_t *batch, int64_t *x_bs, int64_t *y_bs) {
    int lead = x->ndim - 1;
    bool fold = true;
    for (int d = 0; d + 1 < lead; d++)
        if (x->strides[d] != x->strides[d + 1] * x->shape[d + 1]) fold = false;
    if (fold || lead <= 1) {
        int64_t m = 1;
        for (int d = 0; d < lead; d++)
            m *= x->shape[d];
        *rs = lead ? x->strides[lead - 1] : 0;
        return m;
    }
    *rs = x->strides[lead - 1];
    *nbatch = lead - 1;
    for (int j = 0; j < lead - 1; j++) {
        batch[j] = x->shape[j];
        x_bs[j] = x->strides[j];
        y_bs[j] = cs[j];
    }
    return x->shape[lead - 1];
}

void k_matmul(Cg *cg, const Value *v) {
    const Value *a = v->in[0], *b = v->in[1];
    MM mm;
    memset(&mm, 0, sizeof mm);
    mm.dtype = cg_dt(cg, v);
    int64_t cs[TG_MAX_DIMS];
    shape_contiguous_strides(v->shape, v->ndim, cs);
    int amat = a->ndim >= 2 ? 2 : a->ndim, bmat = b->ndim >= 2 ? 2 : b->ndim;
    const Value *bias = NULL;
    if (v->op == OP_OUTER) {
        mm.m = a->shape[0], mm.n = b->shape[0], mm.k = 1;
        mm.a_rs = a->strides[0], mm.b_cs = b->strides[0];
        mm.c_rs = cs[0], mm.c_cs = 1;
    } else if (v->op == OP_LINEAR) {
        /* x [..., k] @ W[n, k]^T: W's strides swapped, no copy. Leading dims
         * of x fold into m when they are evenly strided. */
        const Value *w = b;
        if (v->nargs > 2 && v->args[2].kind == ARG_TENSOR) bias = v->args[2].t;
        mm.k = a->shape[a->ndim - 1];
        mm.a_cs = a->strides[a->ndim - 1];
        mm.n = w->ndim == 2 ? w->shape[0] : 1;
        mm.b_rs = w->strides[w->ndim - 1];
        mm.b_cs = w->ndim == 2 ? w->strides[0] : 0;
        mm.c_cs = w->ndim == 2 ? 1 : 0;
        mm.m = lead_rows(a, cs, &mm.a_rs, &mm.nbatch, mm.batch, mm.a_bs, mm.c_bs);
        mm.c_rs = mm.n;
    } else {
        /* matmul / mm / bmm / mv: torch.matmul's rules. */
        int omat = (a->ndim >= 2) + (b->ndim >= 2);
        int nb = v->ndim - omat;
        if (a->ndim >= 2) {
            mm.m = a->shape[a->ndim - 2], mm.k = a->shape[a->ndim - 1];
            mm.a_rs = a->strides[a->ndim - 2], mm.a_cs = a->strides[a->ndim - 1];
        } else {
            mm.m = 1, mm.k = a->shape[0], mm.a_cs = a->strides[0];
        }
        if (b->ndim >= 2) {
            mm.n = b->shape[b->ndim - 1];
            mm.b_rs = b->strides[b->ndim - 2], mm.b_cs = b->strides[b->ndim - 1];
        } else {
            mm.n = 1, mm.b_rs = b->strides[0];
        }
        /* C: [..., m, n], [..., m] or [..., n] */
        if (a->ndim >= 2 && b->ndim >= 2)
            mm.c_rs = cs[v->ndim - 2], mm.c_cs = 1;
        else if (a->ndim >= 2)
            mm.c_rs = 1, mm.c_cs = 0;
        else
            mm.c_rs = 0, mm.c_cs = b->ndim >= 2 ? 1 : 0;
        if (nb > MAXB) {
            cg_fail(cg, "matmul with more than %d batch dimensions", MAXB);
            return;
        }
        mm.nbatch = nb;
        batch_strides(a, amat, nb, NULL, mm.a_bs);
        batch_strides(b, bmat, nb, NULL, mm.b_bs);
        for (int j = 0; j < nb; j++) {
            mm.batch[j] = v->shape[j];
            mm.c_bs[j] = cs[j];
        }
    }
    if (bias) {
        k_broadcast_into(cg, bias, v);
        mm.accumulate = 1;
    }
    cg_call_matmul(cg, &mm, a, b, v);
}

/* x [..., k] times a quantized weight (passes/quantize.c): one rt_qmatmul
 * call; leading dims of x fold into m when evenly strided, else they are
 * batch dims. linear's bias is broadcast into the output first, as above. */
void k_qmatmul(Cg *cg, const Value *v) {
    const Value *x = v->in[0], *q = v->args[1].t, *sc = v->args[2].t;
    const QuantOf *qo = q->quant;
    QMM d;
    memset(&d, 0, sizeof d);
    d.x_dtype = cg_dt(cg, x);
    d.y_dtype = cg_dt(cg, v);
    d.n = qo->n, d.k = qo->k;
    d.bits = qo->bits, d.group = qo->group;
    d.x_cs = x->strides[x->ndim - 1];
    d.y_cs = 1;
    int64_t cs[TG_MAX_DIMS];
    shape_contiguous_strides(v->shape, v->ndim, cs);
    d.m = lead_rows(x, cs, &d.x_rs, &d.nbatch, d.batch, d.x_bs, d.y_bs);
    d.y_rs = d.n;
    if (v->nargs > 3 && v->args[3].kind == ARG_TENSOR) {
        k_broadcast_into(cg, v->args[3].t, v);
        d.accumulate = 1;
    }
    LLVMValueRef g = desc_global(cg, &d, sizeof d);
    LLVMPositionBuilderAtEnd(B, LLVMGetLastBasicBlock(cg->fwd));
    LLVMValueRef args[6] = {LLVMBuildBitCast(B, g, cg->t_ptr, ""),
                            cg_fwd_ptr(cg, x),
                            cg_fwd_ptr(cg, q),
                            cg_fwd_ptr(cg, sc),
                            cg_fwd_ptr(cg, v),
                            cg->fwd_pool};
    cg_call(cg, "rt_qmatmul", cg->t_void, args, 6);
}
