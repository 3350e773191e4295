/* Indexed reads: gather, index_select, embedding and x[idx]. Each output
 * element reads one index and then one element of the source at that
 * index along one dim. An index out of range sets the run's error cell
 * (runtime/rt_index_error.h: its description, the value and its offset in
 * the index tensor; the runtime reports it, exit 1) and reads element 0
 * instead of reading outside the tensor. */
#include <stdio.h>
#include <string.h>

#include "codegen/llvm/cg.h"

#define B (cg->b)

void k_gather(Cg *cg, const Value *v, KGather *gd) {
    Access *xa = &gd->xa, *ia = &gd->ia, *dst = &gd->dst;
    Kern k;
    kern_begin(cg, &k, op_display_name(v));
    k.sp = gd->space;
    LoopNest ln;
    kern_open(&k, &ln, 0, k.sp.nloops, false);
    LLVMValueRef i = cg_load(&k, kern_ptr(&k, ia), ia->dt);
    i = cg_convert(cg, i, ia->dt, DT_I64);
    LLVMValueRef raw = i; /* the value as the index tensor holds it, for the error */
    LLVMValueRef sz = cg_const_i64(cg, gd->size);
    if (gd->wrap) {
        LLVMValueRef neg = LLVMBuildICmp(B, LLVMIntSLT, i, cg_const_i64(cg, 0), "");
        i = LLVMBuildSelect(B, neg, LLVMBuildAdd(B, i, sz, ""), i, "");
    }
    LLVMValueRef bad = LLVMBuildICmp(B, LLVMIntUGE, i, sz, ""); /* negative too */
    LLVMBasicBlockRef cur = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef on_bad = LLVMAppendBasicBlockInContext(cg->ctx, k.fn, "bad_index");
    LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(cg->ctx, k.fn, "index_ok");
    LLVMBuildCondBr(B, bad, on_bad, cont);
    LLVMPositionBuilderAtEnd(B, on_bad);
    LLVMValueRef cell = LLVMBuildBitCast(B, kern_slot(&k, cg->p->iface.error_slot),
                                         LLVMPointerType(cg->t_i64, 0), "");
    /* Threads may race to set it (runtime/rt_index_error.h): the one whose
     * compare-and-swap claims word 0 writes the value and its offset. */
    LLVMValueRef msg = LLVMBuildGlobalStringPtr(B, gd->what, "index_what");
    LLVMValueRef cx = LLVMBuildAtomicCmpXchg(
        B, cell, cg_const_i64(cg, 0), LLVMBuildPtrToInt(B, msg, cg->t_i64, ""),
        LLVMAtomicOrderingMonotonic, LLVMAtomicOrderingMonotonic, false);
    LLVMBasicBlockRef won = LLVMAppendBasicBlockInContext(cg->ctx, k.fn, "index_error_won");
    LLVMBuildCondBr(B, LLVMBuildExtractValue(B, cx, 1, ""), won, cont);
    LLVMPositionBuilderAtEnd(B, won);
    LLVMValueRef ipos = LLVMBuildSub(B, kern_offset(&k, ia), cg_const_i64(cg, ia->offset), "");
    LLVMValueRef words[2] = {raw, ipos};
    for (int w = 0; w < 2; w++) {
        LLVMValueRef at =
            LLVMBuildGEP2(B, cg->t_i64, cell, (LLVMValueRef[]){cg_const_i64(cg, 1 + w)}, 1, "");
        LLVMValueRef st = LLVMBuildStore(B, words[w], at);
        LLVMSetAlignment(st, 8);
    }
    LLVMBuildBr(B, cont);
    LLVMPositionBuilderAtEnd(B, cont);
    LLVMValueRef phi = LLVMBuildPhi(B, cg->t_i64, "");
    LLVMValueRef zero = cg_const_i64(cg, 0);
    LLVMAddIncoming(phi, &i, &cur, 1);
    LLVMAddIncoming(phi, &zero, &on_bad, 1);
    LLVMAddIncoming(phi, &zero, &won, 1);
    /* Element offset: the source's own dims plus index * stride(dim). */
    LLVMValueRef off = kern_offset(&k, xa);
    off = LLVMBuildAdd(B, off, LLVMBuildMul(B, phi, cg_const_i64(cg, gd->dim_stride), ""), "");
    LLVMTypeRef ety = cg_stype(cg, xa->dt);
    LLVMValueRef base = LLVMBuildBitCast(B, kern_base(&k, xa->owner), LLVMPointerType(ety, 0), "");
    LLVMValueRef val = cg_load(&k, LLVMBuildGEP2(B, ety, base, &off, 1, ""), xa->dt);
    cg_store(&k, kern_ptr(&k, dst), cg_convert(cg, val, xa->dt, dst->dt), dst->dt);
    kern_close(&k, &ln);
    kern_end(&k, kspace_work_inner(&k.sp));
}
