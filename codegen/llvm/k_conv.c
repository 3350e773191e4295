/* Convolutions: one rt_conv(state, bufs, index) call each. The runtime
 * (runtime/conv.c) made the oneDNN primitive and prepared the weights when
 * the context was created; the descriptor is in the glue's table
 * (codegen/conv_desc.c), the state in bufs[conv_slot]. */
#include "codegen/llvm/cg.h"

#define B (cg->b)

void k_conv(Cg *cg, const Value *v) {
    const CgProgram *p = cg->p;
    LLVMPositionBuilderAtEnd(B, LLVMGetLastBasicBlock(cg->fwd));
    LLVMValueRef bufs = LLVMBuildBitCast(B, cg->fwd_bufs, cg->t_ptr, "");
    LLVMValueRef sp = LLVMBuildInBoundsGEP2(
        B, cg->t_ptr, bufs, (LLVMValueRef[]){cg_const_i64(cg, p->iface.conv_slot)}, 1, "");
    LLVMValueRef state = LLVMBuildLoad2(B, cg->t_ptr, sp, "conv_state");
    LLVMValueRef args[3] = {state, bufs, cg_const_i64(cg, cg_conv_index(p, v))};
    cg_call(cg, "rt_conv", cg->t_void, args, 3);
    cg_fwd_step_done(cg);
}
