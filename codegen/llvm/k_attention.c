/* scaled_dot_product_attention: one rt_attention call (runtime/attention.c)
 * with a constant descriptor (codegen/attn_desc.c) and the planned
 * scratch at the arena's tail (bufs[0] + attn_scratch_offset). */
#include <string.h>

#include "codegen/llvm/cg.h"

#define B (cg->b)

void k_attention(Cg *cg, const Value *v) {
    RtAttnDesc d;
    cg_attn_describe(cg->p, v, &d);
    /* The descriptor as i64 words; scale is a double, passed as its bits. */
    enum { NW = sizeof d / 8 };
    int64_t words[NW];
    memcpy(words, &d, sizeof d);
    LLVMValueRef els[NW];
    for (int i = 0; i < NW; i++)
        els[i] = cg_const_i64(cg, words[i]);
    LLVMValueRef arr = LLVMConstArray(cg->t_i64, els, NW);
    LLVMValueRef g = LLVMAddGlobal(cg->mod, LLVMTypeOf(arr), "attn_desc");
    LLVMSetInitializer(g, arr);
    LLVMSetGlobalConstant(g, true);
    LLVMSetLinkage(g, LLVMPrivateLinkage);

    LLVMPositionBuilderAtEnd(B, LLVMGetLastBasicBlock(cg->fwd));
    const Value *mask = v->args[3].kind == ARG_TENSOR ? v->args[3].t : NULL;
    LLVMValueRef bufs = LLVMBuildBitCast(B, cg->fwd_bufs, cg->t_pptr, "");
    LLVMValueRef arena = LLVMBuildLoad2(B, cg->t_ptr, bufs, "arena"); /* bufs[0] */
    LLVMValueRef scratch = LLVMBuildGEP2(
        B, cg->t_i8, arena, (LLVMValueRef[]){cg_const_i64(cg, cg->p->attn_scratch_offset)}, 1, "");
    LLVMValueRef args[8] = {LLVMBuildBitCast(B, g, cg->t_ptr, ""),
                            cg_fwd_ptr(cg, v->args[0].t),
                            cg_fwd_ptr(cg, v->args[1].t),
                            cg_fwd_ptr(cg, v->args[2].t),
                            mask ? cg_fwd_ptr(cg, mask) : LLVMConstNull(cg->t_ptr),
                            cg_fwd_ptr(cg, v),
                            scratch,
                            cg->fwd_pool};
    cg_call(cg, "rt_attention", cg->t_void, args, 8);
    cg_fwd_step_done(cg);
}
