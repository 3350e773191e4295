/* Kernels as loop nests: the kernel function, its iteration space (dims
 * merged where every access allows it), loops, addresses, and the call
 * from the forward function through the runtime's thread pool. */
#include <llvm-c/DebugInfo.h>
#include <stdio.h>
#include <string.h>

#include "codegen/llvm/cg.h"

void kern_begin(Cg *cg, Kern *k, const char *what) {
    memset(k, 0, sizeof *k);
    k->cg = cg;
    snprintf(k->name, sizeof k->name, "k%d_%s", cg->nkernels++, what);
    k->fn = cg_share_begin(cg); /* built alone, then shared or linked in */
    k->bufs = LLVMGetParam(k->fn, 0);
    k->begin = LLVMGetParam(k->fn, 1);
    k->end = LLVMGetParam(k->fn, 2);
    k->entry = LLVMAppendBasicBlockInContext(cg->ctx, k->fn, "entry");
    LLVMPositionBuilderAtEnd(cg->b, k->entry);
    k->bufs_pp = LLVMBuildBitCast(cg->b, k->bufs, cg->t_pptr, "ptrs");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cg->ctx, k->fn, "body");
    k->entry_term = LLVMBuildBr(cg->b, body);
    LLVMPositionBuilderAtEnd(cg->b, body);
}

LLVMValueRef kern_alloca(Kern *k, LLVMTypeRef t) {
    Cg *cg = k->cg;
    LLVMBasicBlockRef cur = LLVMGetInsertBlock(cg->b);
    LLVMPositionBuilderBefore(cg->b, k->entry_term);
    LLVMValueRef a = LLVMBuildAlloca(cg->b, t, "");
    LLVMPositionBuilderAtEnd(cg->b, cur);
    return a;
}

/* Entry j of the kernel's pointer table: bufs[slot] + off bytes. Each is
 * loaded once, in the entry block, so the loops see loop-invariant bases.
 * The kernel's code then names table entries, not slots or arena offsets,
 * and kernels that differ only in their buffers are one function
 * (kernel_share.c); the forward function fills the table (kern_end). */
static LLVMValueRef kern_ptr_for(Kern *k, int slot, int64_t off) {
    Cg *cg = k->cg;
    for (int j = 0; j < k->nbases; j++)
        if (k->base_slot[j] == slot && k->base_off[j] == off) return k->base_val[j];
    if (k->nbases == KERN_MAX_BASES) {
        cg_fail(cg, "internal: a kernel with more than %d buffers", KERN_MAX_BASES);
        return k->nbases ? k->base_val[0] : LLVMGetUndef(cg->t_ptr);
    }
    int j = k->nbases++;
    LLVMBasicBlockRef cur = LLVMGetInsertBlock(cg->b);
    LLVMPositionBuilderBefore(cg->b, k->entry_term);
    LLVMValueRef pp = LLVMBuildInBoundsGEP2(cg->b, cg->t_ptr, k->bufs_pp,
                                            (LLVMValueRef[]){cg_const_i64(cg, j)}, 1, "");
    k->base_slot[j] = slot;
    k->base_off[j] = off;
    k->base_val[j] = LLVMBuildLoad2(cg->b, cg->t_ptr, pp, "");
    LLVMPositionBuilderAtEnd(cg->b, cur);
    return k->base_val[j];
}

LLVMValueRef kern_slot(Kern *k, int slot) {
    return kern_ptr_for(k, slot, 0);
}

LLVMValueRef kern_base(Kern *k, const Value *owner) {
    Cg *cg = k->cg;
    const CgProgram *p = cg->p;
    int slot = p->iface.slot[owner->order];
    if (slot >= 0) return kern_slot(k, slot);
    int bi = p->sched->buf_of[owner->order];
    if (bi < 0 || p->plan->offset[bi] < 0) {
        cg_fail(cg, "internal: value %%%d has no buffer", owner->id);
        return kern_slot(k, 0);
    }
    return kern_ptr_for(k, 0, p->plan->offset[bi]); /* slot 0 is the arena */
}

void access_of(Kern *k, const Value *v, Access *a) {
    kd_access_of(k->cg->p, v, a);
}

void access_right_aligned(Kern *k, const Value *v, int n, Access *a) {
    kd_access_right_aligned(k->cg->p, v, n, a);
}

void access_contig(Kern *k, const Value *owner, const int64_t *shape, int n, Access *a) {
    kd_access_contig(k->cg->p, owner, shape, n, a);
}

void kern_space(Kern *k, const int64_t *shape, int n, const bool *reduced, Access **acc, int nacc,
                bool uses_index) {
    kspace_build(&k->sp, shape, n, reduced, acc, nacc, uses_index);
}

void kern_hint_vectorize(Cg *cg, LLVMValueRef br) {
    LLVMMetadataRef tmp = LLVMTemporaryMDNode(cg->ctx, NULL, 0);
    LLVMMetadataRef kv[2] = {LLVMMDStringInContext2(cg->ctx, "llvm.loop.vectorize.enable", 26),
                             LLVMValueAsMetadata(LLVMConstInt(cg->t_i1, 1, false))};
    LLVMMetadataRef hint = LLVMMDNodeInContext2(cg->ctx, kv, 2);
    LLVMMetadataRef ops[2] = {tmp, hint};
    LLVMMetadataRef loop = LLVMMDNodeInContext2(cg->ctx, ops, 2);
    LLVMMetadataReplaceAllUsesWith(tmp, loop);
    unsigned kind = LLVMGetMDKindIDInContext(cg->ctx, "llvm.loop", 9);
    LLVMSetMetadata(br, kind, LLVMMetadataAsValue(cg->ctx, loop));
}

/* KERN_SINGLE_CHUNK_WORK (cg.h): work below which a kernel is one chunk
 * whatever kern_end's weight per outer iteration (at most 4 per element):
 * the pool would call it once over its whole range anyway. Its loops then have constant trip
 * counts, so LLVM emits straight-line code instead of a runtime-bounded vector loop with remainder
 * and alias checks (about 400 IR lines, and 16 ms of compile time, per kernel: the cost of a graph
 * with thousands of small outputs). */
static bool space_is_single_chunk(const KSpace *sp) {
    int64_t w = 1;
    for (int l = 0; l < sp->nloops; l++) {
        if (sp->ext[l] > KERN_SINGLE_CHUNK_WORK) return false;
        w *= sp->ext[l];
        if (w > KERN_SINGLE_CHUNK_WORK) return false;
    }
    return true;
}

void kern_open(Kern *k, LoopNest *ln, int from, int to, bool vectorize_hint) {
    Cg *cg = k->cg;
    ln->from = from;
    ln->to = to;
    if (from == 0 && to > 0) k->single_chunk = space_is_single_chunk(&k->sp);
    for (int l = from; l < to; l++) {
        bool bounded = l > 0 || k->single_chunk;
        LLVMValueRef lo = bounded ? cg_const_i64(cg, 0) : k->begin;
        LLVMValueRef hi = bounded ? cg_const_i64(cg, k->sp.ext[l]) : k->end;
        LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b);
        ln->header[l] = LLVMAppendBasicBlockInContext(cg->ctx, k->fn, "loop");
        LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cg->ctx, k->fn, "body");
        ln->exit[l] = LLVMAppendBasicBlockInContext(cg->ctx, k->fn, "done");
        LLVMBuildBr(cg->b, ln->header[l]);
        LLVMPositionBuilderAtEnd(cg->b, ln->header[l]);
        LLVMValueRef phi = LLVMBuildPhi(cg->b, cg->t_i64, "i");
        LLVMAddIncoming(phi, &lo, &pre, 1);
        LLVMValueRef c = LLVMBuildICmp(cg->b, LLVMIntSLT, phi, hi, "");
        LLVMBuildCondBr(cg->b, c, body, ln->exit[l]);
        LLVMPositionBuilderAtEnd(cg->b, body);
        ln->phi[l] = phi;
        k->idx[l] = phi;
    }
    ln->hint = vectorize_hint;
}

void kern_close(Kern *k, LoopNest *ln) {
    Cg *cg = k->cg;
    bool hint = ln->hint;
    for (int l = ln->to - 1; l >= ln->from; l--) {
        LLVMBasicBlockRef cur = LLVMGetInsertBlock(cg->b);
        LLVMValueRef next = LLVMBuildAdd(cg->b, ln->phi[l], cg_const_i64(cg, 1), "");
        LLVMValueRef br = LLVMBuildBr(cg->b, ln->header[l]);
        if (hint && l == ln->to - 1) kern_hint_vectorize(cg, br);
        LLVMAddIncoming(ln->phi[l], &next, &cur, 1);
        LLVMPositionBuilderAtEnd(cg->b, ln->exit[l]);
        k->idx[l] = NULL;
    }
}

LLVMValueRef kern_dim_index(Kern *k, int dim) {
    int l = k->sp.loop_of_dim[dim];
    if (l < 0 || !k->idx[l]) return cg_const_i64(k->cg, 0);
    /* Only unmerged dims are asked for (kern_space merges nothing when an
     * expression reads indices). */
    return k->idx[l];
}

LLVMValueRef kern_offset(Kern *k, const Access *a) {
    Cg *cg = k->cg;
    LLVMValueRef off = cg_const_i64(cg, a->offset);
    for (int l = 0; l < k->sp.nloops; l++) {
        if (!k->idx[l] || k->sp.inner_dim[l] < 0) continue;
        int64_t s = a->strides[k->sp.inner_dim[l]];
        if (s == 0) continue;
        off = LLVMBuildAdd(cg->b, off, LLVMBuildMul(cg->b, k->idx[l], cg_const_i64(cg, s), ""), "");
    }
    return off;
}

LLVMValueRef kern_ptr(Kern *k, const Access *a) {
    Cg *cg = k->cg;
    LLVMValueRef off = kern_offset(k, a);
    LLVMValueRef base = a->slot > 0 ? kern_slot(k, a->slot) : kern_base(k, a->owner);
    LLVMTypeRef st = cg_stype(cg, a->dt);
    LLVMValueRef typed = LLVMBuildBitCast(cg->b, base, LLVMPointerType(st, 0), "");
    return LLVMBuildGEP2(cg->b, st, typed, &off, 1, "");
}

void kern_end(Kern *k, int64_t work_per_outer) {
    kern_end_n(k, k->sp.ext[0], work_per_outer);
}

void kern_end_n(Kern *k, int64_t n, int64_t work_per_outer) {
    Cg *cg = k->cg;
    LLVMBuildRetVoid(cg->b);
    if (k->single_chunk)
        /* Called directly (below), it stays a call: inlining thousands of
         * kernels into forward makes LLVM's function passes superlinear.
         * Set before sharing: attributes are part of the code. */
        LLVMAddAttributeAtIndex(
            k->fn, LLVMAttributeFunctionIndex,
            LLVMCreateEnumAttribute(cg->ctx, LLVMGetEnumAttributeKindForName("noinline", 8), 0));
    LLVMValueRef fn = cg_share_end(cg, k->name);
    k->fn = NULL; /* fn is what runs: this kernel, or an earlier one with its code */
    if (!fn) return;
    /* The forward function fills the kernel's pointer table and calls it
     * over its first loop. */
    LLVMPositionBuilderAtEnd(cg->b, LLVMGetLastBasicBlock(cg->fwd));
    LLVMValueRef bufs = LLVMBuildBitCast(cg->b, cg->fwd_bufs, cg->t_pptr, "");
    for (int j = 0; j < k->nbases; j++) {
        LLVMValueRef at = LLVMBuildInBoundsGEP2(
            cg->b, cg->t_ptr, bufs, (LLVMValueRef[]){cg_const_i64(cg, k->base_slot[j])}, 1, "");
        LLVMValueRef ptr = LLVMBuildLoad2(cg->b, cg->t_ptr, at, "");
        if (k->base_off[j])
            ptr = LLVMBuildInBoundsGEP2(cg->b, cg->t_i8, ptr,
                                        (LLVMValueRef[]){cg_const_i64(cg, k->base_off[j])}, 1, "");
        LLVMValueRef slot = LLVMBuildInBoundsGEP2(
            cg->b, LLVMArrayType(cg->t_ptr, KERN_MAX_BASES), cg->fwd_ptrs,
            (LLVMValueRef[]){cg_const_i64(cg, 0), cg_const_i64(cg, j)}, 2, "");
        LLVMBuildStore(cg->b, ptr, slot);
    }
    LLVMValueRef table = LLVMBuildBitCast(cg->b, cg->fwd_ptrs, cg->t_ptr, "");
    if (k->single_chunk) {
        /* What the pool does for one chunk, without its dispatch. */
        LLVMValueRef args[4] = {table, cg_const_i64(cg, 0), cg_const_i64(cg, n),
                                LLVMConstInt(cg->t_i32, 0, false)};
        LLVMBuildCall2(cg->b, cg->t_kernel, fn, args, 4, "");
        cg_fwd_step_done(cg);
        return;
    }
    int64_t grain = work_per_outer > 0 ? (32768 + work_per_outer - 1) / work_per_outer : 1;
    if (grain < 1) grain = 1;
    LLVMValueRef args[6] = {cg->fwd_pool,
                            cg_const_i64(cg, 0),
                            cg_const_i64(cg, n),
                            cg_const_i64(cg, grain),
                            LLVMBuildBitCast(cg->b, fn, cg->t_ptr, ""),
                            table};
    LLVMValueRef pf = LLVMGetNamedFunction(cg->mod, "rt_pool_parallel_for");
    LLVMBuildCall2(cg->b, cg->t_pfor, pf, args, 6, "");
    cg_fwd_step_done(cg);
}
