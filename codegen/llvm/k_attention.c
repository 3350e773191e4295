/* scaled_dot_product_attention: one rt_attention call (runtime/attention.c)
 * with a constant descriptor (codegen/attn_desc.c) and the planned
 * scratch at the arena's tail (bufs[0] + attn_scratch_offset); its
 * gradient, attention_backward, one rt_attention_backward call
 * (runtime/attention_bwd.c) likewise. */
#include <string.h>

#include "codegen/llvm/cg.h"

#define B (cg->b)

/* A descriptor of n bytes (int64 words; scale a double, passed as its
 * bits) as a private constant global. */
static LLVMValueRef desc_global(Cg *cg, const void *desc, size_t n) {
    enum { MAXW = 128 };
    int64_t words[MAXW];
    TGC_ASSERT(n % 8 == 0 && n / 8 <= MAXW);
    int nw = (int)(n / 8);
    memcpy(words, desc, n);
    LLVMValueRef els[MAXW];
    for (int i = 0; i < nw; i++)
        els[i] = cg_const_i64(cg, words[i]);
    LLVMValueRef arr = LLVMConstArray(cg->t_i64, els, (unsigned)nw);
    LLVMValueRef g = LLVMAddGlobal(cg->mod, LLVMTypeOf(arr), "attn_desc");
    LLVMSetInitializer(g, arr);
    LLVMSetGlobalConstant(g, true);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    return g;
}

void k_attention(Cg *cg, const Value *v) {
    bool bwd = v->op == OP_SDPA_BWD;
    RtAttnDesc d;
    RtAttnBwdDesc bd;
    LLVMValueRef g;
    if (bwd) {
        cg_attn_bwd_describe(cg->p, v, &bd);
        g = desc_global(cg, &bd, sizeof bd);
    } else {
        cg_attn_describe(cg->p, v, &d);
        g = desc_global(cg, &d, sizeof d);
    }

    LLVMPositionBuilderAtEnd(B, LLVMGetLastBasicBlock(cg->fwd));
    const Value *mask = v->args[3].kind == ARG_TENSOR ? v->args[3].t : NULL;
    LLVMValueRef bufs = LLVMBuildBitCast(B, cg->fwd_bufs, cg->t_pptr, "");
    LLVMValueRef arena = LLVMBuildLoad2(B, cg->t_ptr, bufs, "arena"); /* bufs[0] */
    LLVMValueRef scratch = LLVMBuildGEP2(
        B, cg->t_i8, arena, (LLVMValueRef[]){cg_const_i64(cg, cg->p->attn_scratch_offset)}, 1, "");
    /* dropout's seed and step (attention_dropout's, or those its gradient
     * was given): the states the step reads */
    int key = bwd ? 8 : 7;
    bool drop = bwd ? v->args[key].kind == ARG_TENSOR : v->op == OP_SDPA_DROP;
    LLVMValueRef args[12] = {LLVMBuildBitCast(B, g, cg->t_ptr, ""),
                             cg_fwd_ptr(cg, v->args[0].t),
                             cg_fwd_ptr(cg, v->args[1].t),
                             cg_fwd_ptr(cg, v->args[2].t),
                             mask ? cg_fwd_ptr(cg, mask) : LLVMConstNull(cg->t_ptr),
                             drop ? cg_fwd_ptr(cg, v->args[key].t) : LLVMConstNull(cg->t_ptr),
                             drop ? cg_fwd_ptr(cg, v->args[key + 1].t) : LLVMConstNull(cg->t_ptr)};
    int n = 7;
    if (bwd) {
        args[n++] = cg_fwd_ptr(cg, v->args[4].t);
        args[n++] = cg_fwd_ptr(cg, v->args[5].t);
    }
    args[n++] = cg_fwd_ptr(cg, v);
    args[n++] = scratch;
    args[n++] = cg->fwd_pool;
    cg_call(cg, bwd ? "rt_attention_backward" : "rt_attention", cg->t_void, args, n);
    cg_fwd_step_done(cg);
}
