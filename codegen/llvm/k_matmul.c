/* Matrix products: matmul (torch.matmul's rank rules, broadcast batch
 * dims), mm, bmm, mv, outer and linear become one rt_matmul call each, with
 * a constant descriptor of sizes and element strides: a transposed or
 * strided operand is passed as strides (the runtime turns them into BLAS
 * transpose flags and leading dimensions). linear's bias is first
 * broadcast into the output, then the product accumulates onto it.
 * einsum is a generic contraction kernel: output dims outer, summed
 * letters inner. */
#include <string.h>

#include "codegen/llvm/cg.h"

#define B (cg->b)
#define MAXB 10

typedef struct MM {
    int64_t dtype, m, n, k;
    int64_t a_rs, a_cs, b_rs, b_cs, c_rs, c_cs;
    int64_t accumulate, nbatch;
    int64_t batch[MAXB], a_bs[MAXB], b_bs[MAXB], c_bs[MAXB];
} MM;

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

static void call_matmul(Cg *cg, const MM *mm, const Value *a, const Value *b, const Value *c) {
    LLVMValueRef els[sizeof(MM) / 8];
    const int64_t *f = (const int64_t *)mm;
    for (size_t i = 0; i < sizeof(MM) / 8; i++)
        els[i] = cg_const_i64(cg, f[i]);
    LLVMValueRef arr = LLVMConstArray(cg->t_i64, els, (unsigned)(sizeof(MM) / 8));
    LLVMValueRef g = LLVMAddGlobal(cg->mod, LLVMTypeOf(arr), "matmul_desc");
    LLVMSetInitializer(g, arr);
    LLVMSetGlobalConstant(g, true);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
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
        int lead = a->ndim - 1;
        bool fold = true;
        for (int d = 0; d + 1 < lead; d++)
            if (a->strides[d] != a->strides[d + 1] * a->shape[d + 1]) fold = false;
        if (fold || lead <= 1) {
            mm.m = 1;
            for (int d = 0; d < lead; d++)
                mm.m *= a->shape[d];
            mm.a_rs = lead ? a->strides[lead - 1] : 0;
            mm.c_rs = mm.n;
        } else {
            mm.m = a->shape[lead - 1];
            mm.a_rs = a->strides[lead - 1];
            mm.c_rs = mm.n;
            mm.nbatch = lead - 1;
            for (int j = 0; j < lead - 1; j++) {
                mm.batch[j] = a->shape[j];
                mm.a_bs[j] = a->strides[j];
                mm.b_bs[j] = 0;
                mm.c_bs[j] = cs[j];
            }
        }
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
    call_matmul(cg, &mm, a, b, v);
}

/* ---- einsum ---- */

typedef struct Sub {
    int letter[TG_MAX_DIMS]; /* per operand dim: iteration dim */
} Sub;

void k_einsum(Cg *cg, const Value *v) {
    const char *eq = v->args[0].s;
    const Arg *ops = &v->args[1];
    const char *arrow = strstr(eq, "->");
    /* Iteration dims: ellipsis dims and letters; sizes from the operands. */
    int iter_of[128 + TG_MAX_DIMS];
    for (int i = 0; i < 128 + TG_MAX_DIMS; i++)
        iter_of[i] = -1;
    int64_t size[128 + TG_MAX_DIMS];
    int count[128] = {0};
    int nell = 0;
    Sub subs[16];
    if (ops->n > 16) {
        cg_fail(cg, "einsum with more than 16 operands");
        return;
    }
    const char *p = eq;
    for (int k = 0; k < ops->n; k++) {
        const Value *t = ops->ts[k];
        int codes[TG_MAX_DIMS + 3], nc = 0, ell_at = -1;
        while (*p && *p != ',' && (!arrow || p < arrow)) {
            if (*p == ' ') {
                p++;
                continue;
            }
            if (!strncmp(p, "...", 3)) {
                ell_at = nc;
                p += 3;
                continue;
            }
            codes[nc++] = (unsigned char)*p++;
        }
        if (*p == ',') p++;
        int ne = t->ndim - nc;
        if (ne > nell) nell = ne;
        int dim = 0;
        for (int i = 0; i <= nc; i++) {
            if (i == ell_at)
                for (int e = 0; e < ne; e++)
                    subs[k].letter[dim++] = 128 + (TG_MAX_DIMS - ne + e); /* right-aligned */
            if (i == nc) break;
            count[codes[i]]++;
            subs[k].letter[dim++] = codes[i];
        }
        for (int d = 0; d < t->ndim; d++) {
            int c = subs[k].letter[d];
            if (iter_of[c] < 0 || size[c] == 1) size[c] = t->shape[d];
            iter_of[c] = 0;
        }
    }
    /* Output order. */
    int out_codes[TG_MAX_DIMS], no = 0;
    if (arrow) {
        for (const char *q = arrow + 2; *q; q++) {
            if (*q == ' ') continue;
            if (!strncmp(q, "...", 3)) {
                for (int e = 0; e < nell; e++)
                    out_codes[no++] = 128 + TG_MAX_DIMS - nell + e;
                q += 2;
                continue;
            }
            out_codes[no++] = (unsigned char)*q;
        }
    } else {
        for (int e = 0; e < nell; e++)
            out_codes[no++] = 128 + TG_MAX_DIMS - nell + e;
        for (int l = 'A'; l <= 'z'; l++)
            if (count[l] == 1) out_codes[no++] = l;
    }
    int64_t shape[KMAXD];
    bool red[KMAXD] = {0};
    int n = 0;
    for (int i = 0; i < 128 + TG_MAX_DIMS; i++)
        if (iter_of[i] == 0) iter_of[i] = -2; /* used */
    for (int i = 0; i < no; i++) {
        iter_of[out_codes[i]] = n;
        shape[n++] = size[out_codes[i]];
    }
    for (int i = 0; i < 128 + TG_MAX_DIMS; i++)
        if (iter_of[i] == -2) {
            iter_of[i] = n;
            red[n] = true;
            shape[n++] = size[i];
        }
    Kern k;
    kern_begin(cg, &k, "einsum");
    Access acc_ops[16], dst;
    Access *acc[18];
    int na = 0;
    for (int o = 0; o < ops->n; o++) {
        const Value *t = ops->ts[o];
        Access *a = &acc_ops[o];
        access_of(&k, t, a);
        memset(a->strides, 0, sizeof a->strides);
        for (int d = 0; d < t->ndim; d++)
            if (t->shape[d] != 1 || size[subs[o].letter[d]] == 1)
                a->strides[iter_of[subs[o].letter[d]]] += t->strides[d];
        acc[na++] = a;
    }
    memset(&dst, 0, sizeof dst);
    dst.owner = v;
    dst.dt = cg_dt(cg, v);
    int64_t cs[TG_MAX_DIMS];
    shape_contiguous_strides(v->shape, v->ndim, cs);
    for (int i = 0; i < no; i++)
        dst.strides[i] = cs[i];
    acc[na++] = &dst;
    kern_space(&k, shape, n, red, acc, na, false);
    DType t = dst.dt;
    DType at = dtype_is_float(t) ? (t == DT_F64 ? DT_F64 : DT_F32) : DT_I64;
    LoopNest outer, inner;
    kern_open(&k, &outer, 0, k.nkept, false);
    LLVMTypeRef aty = cg_ctype(cg, at);
    LLVMValueRef slot = kern_alloca(&k, aty);
    LLVMBuildStore(B, LLVMConstNull(aty), slot);
    kern_open(&k, &inner, k.nkept, k.nloops, true);
    LLVMValueRef prod = NULL;
    for (int o = 0; o < ops->n; o++) {
        LLVMValueRef x = cg_convert(cg, cg_load(&k, kern_ptr(&k, &acc_ops[o]), acc_ops[o].dt),
                                    acc_ops[o].dt, at);
        prod = !prod                ? x
               : dtype_is_float(at) ? LLVMBuildFMul(B, prod, x, "")
                                    : LLVMBuildMul(B, prod, x, "");
    }
    LLVMValueRef cur = LLVMBuildLoad2(B, aty, slot, "");
    LLVMBuildStore(
        B, dtype_is_float(at) ? LLVMBuildFAdd(B, cur, prod, "") : LLVMBuildAdd(B, cur, prod, ""),
        slot);
    kern_close(&k, &inner);
    LLVMValueRef r = LLVMBuildLoad2(B, aty, slot, "");
    cg_store(&k, kern_ptr(&k, &dst), cg_convert(cg, r, at, t), t);
    kern_close(&k, &outer);
    int64_t w = 1;
    for (int l = 1; l < k.nloops; l++)
        w *= k.ext[l];
    kern_end(&k, w);
}
