/* Matrix products: matmul (torch.matmul's rank rules, broadcast batch
 * dims), mm, bmm, mv, outer and linear become one rt_matmul call each, with
 * a constant descriptor of sizes and element strides: a transposed or
 * strided operand is passed as strides (the runtime turns them into BLAS
 * transpose flags and leading dimensions): k_product, which
 * codegen/dispatch.c calls with the description, after broadcasting
 * linear's bias into the output (the product accumulates onto it).
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

void k_product(Cg *cg, const MM *mm, const Value *a, const Value *b, const Value *c) {
    LLVMValueRef g = desc_global(cg, mm, sizeof *mm);
    LLVMPositionBuilderAtEnd(B, LLVMGetLastBasicBlock(cg->fwd));
    LLVMValueRef args[5] = {LLVMBuildBitCast(B, g, cg->t_ptr, ""), cg_fwd_ptr(cg, a),
                            cg_fwd_ptr(cg, b), cg_fwd_ptr(cg, c), cg->fwd_pool};
    cg_call(cg, "rt_matmul", cg->t_void, args, 5);
    cg_fwd_step_done(cg);
}

void k_broadcast_into(Cg *cg, const Value *src, const Value *dst);

/* x [..., k] times a quantized weight (passes/quantize.c): one rt_qmatmul
 * call; leading dims of x fold into m when evenly strided, else they are
 * batch dims. linear's bias is broadcast into the output first, as above. */
void k_qmatmul(Cg *cg, const Value *v) {
    const Value *x = v->in[0], *q = v->args[1].t, *sc = v->args[2].t, *bias;
    QMM d;
    kd_qmatmul(cg->p, v, &d, &bias);
    if (bias) k_broadcast_into(cg, bias, v);
    LLVMValueRef g = desc_global(cg, &d, sizeof d);
    LLVMPositionBuilderAtEnd(B, LLVMGetLastBasicBlock(cg->fwd));
    LLVMValueRef args[6] = {LLVMBuildBitCast(B, g, cg->t_ptr, ""),
                            cg_fwd_ptr(cg, x),
                            cg_fwd_ptr(cg, q),
                            cg_fwd_ptr(cg, sc),
                            cg_fwd_ptr(cg, v),
                            cg->fwd_pool};
    cg_call(cg, "rt_qmatmul", cg->t_void, args, 6);
    cg_fwd_step_done(cg);
}
