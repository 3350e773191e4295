/* Indexed reads: gather, index_select, embedding and x[idx]. Each output
 * element reads one index and then one element of the source at that
 * index along one dim. An index out of range sets the run's error cell
 * (the runtime reports it, exit 1) and reads element 0 instead of
 * reading outside the tensor. */
#include <stdio.h>
#include <string.h>

#include "codegen/llvm/cg.h"

#define B (cg->b)

void k_gather(Cg *cg, const Value *v) {
    const Value *x, *idx;
    int dim;
    Kern k;
    kern_begin(cg, &k, op_display_name(v));
    Access xa, ia, dst;
    memset(&xa, 0, sizeof xa);
    memset(&ia, 0, sizeof ia);
    int n = v->ndim;
    bool wrap = false;
    switch (v->op) {
    case OP_EMBEDDING:
        idx = v->in[0], x = v->in[1], dim = 0;
        for (int d = 0; d < idx->ndim; d++)
            ia.strides[d] = idx->strides[d];
        xa.strides[n - 1] = x->strides[1];
        break;
    case OP_GATHER:
        x = v->in[0], idx = v->in[1];
        dim = (int)(v->args[1].i < 0 ? v->args[1].i + x->ndim : v->args[1].i);
        for (int d = 0; d < n; d++) {
            ia.strides[d] = idx->strides[d];
            xa.strides[d] = d == dim ? 0 : x->strides[d];
        }
        break;
    case OP_INDEX_SELECT:
        x = v->in[0], idx = v->in[1];
        dim = (int)(v->args[1].i < 0 ? v->args[1].i + x->ndim : v->args[1].i);
        for (int d = 0; d < n; d++) {
            xa.strides[d] = d == dim ? 0 : x->strides[d];
            ia.strides[d] = d == dim && idx->ndim ? idx->strides[0] : 0;
        }
        break;
    default: /* OP_INDEX: x[idx] along dim, negative indices counting from the end */
        x = v->in[0], idx = v->in[1];
        dim = (int)(v->args[1].i < 0 ? v->args[1].i + x->ndim : v->args[1].i);
        wrap = true;
        for (int d = 0; d < dim; d++)
            xa.strides[d] = x->strides[d];
        for (int d = 0; d < idx->ndim; d++)
            ia.strides[dim + d] = idx->strides[d];
        for (int d = dim + 1; d < x->ndim; d++)
            xa.strides[d - 1 + idx->ndim] = x->strides[d];
        break;
    }
    xa.owner = x->storage;
    xa.dt = cg_dt(cg, x->storage);
    xa.offset = x->offset;
    ia.owner = idx->storage;
    ia.dt = cg_dt(cg, idx->storage);
    ia.offset = idx->offset;
    access_contig(&k, v, v->shape, n, &dst);
    Access *acc[3] = {&xa, &ia, &dst};
    kern_space(&k, v->shape, n, NULL, acc, 3, false);
    LoopNest ln;
    kern_open(&k, &ln, 0, k.sp.nloops, false);
    LLVMValueRef i = cg_load(&k, kern_ptr(&k, &ia), ia.dt);
    i = cg_convert(cg, i, ia.dt, DT_I64);
    int64_t size = x->ndim ? x->shape[dim] : 1;
    LLVMValueRef sz = cg_const_i64(cg, size);
    if (wrap) {
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
    /* Threads may race to set it: an atomic store, all of the same value. */
    char what[256];
    snprintf(what, sizeof what, "the index tensor '%s' of %s (line %d)",
             idx->name ? idx->name : op_display_name(idx), op_display_name(v), v->loc.line);
    LLVMValueRef msg = LLVMBuildGlobalStringPtr(B, what, "index_what");
    LLVMValueRef st = LLVMBuildStore(B, LLVMBuildPtrToInt(B, msg, cg->t_i64, ""), cell);
    LLVMSetOrdering(st, LLVMAtomicOrderingMonotonic);
    LLVMSetAlignment(st, 8);
    LLVMBuildBr(B, cont);
    LLVMPositionBuilderAtEnd(B, cont);
    LLVMValueRef phi = LLVMBuildPhi(B, cg->t_i64, "");
    LLVMValueRef zero = cg_const_i64(cg, 0);
    LLVMAddIncoming(phi, &i, &cur, 1);
    LLVMAddIncoming(phi, &zero, &on_bad, 1);
    /* Element offset: the source's own dims plus index * stride(dim). */
    LLVMValueRef off = kern_offset(&k, &xa);
    int64_t ds = x->ndim ? (v->op == OP_EMBEDDING ? x->strides[0] : x->strides[dim]) : 0;
    off = LLVMBuildAdd(B, off, LLVMBuildMul(B, phi, cg_const_i64(cg, ds), ""), "");
    LLVMTypeRef ety = cg_stype(cg, xa.dt);
    LLVMValueRef base = LLVMBuildBitCast(B, kern_base(&k, xa.owner), LLVMPointerType(ety, 0), "");
    LLVMValueRef val = cg_load(&k, LLVMBuildGEP2(B, ety, base, &off, 1, ""), xa.dt);
    cg_store(&k, kern_ptr(&k, &dst), cg_convert(cg, val, xa.dt, dst.dt), dst.dt);
    kern_close(&k, &ln);
    kern_end(&k, kspace_work_inner(&k.sp));
}
