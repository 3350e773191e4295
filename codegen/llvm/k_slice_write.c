/* slice_scatter: one rt_slice_write call (runtime/slice_write.c) with a
 * constant descriptor (codegen/slice_write_desc.c). Into a state it writes
 * the state's buffer in place (no input to copy); otherwise it copies
 * input into its own buffer first. */
#include <string.h>

#include "codegen/llvm/cg.h"
#include "ir/state.h"

#define B (cg->b)

void k_slice_write(Cg *cg, const Value *v) {
    RtSliceWriteDesc d;
    char what[512];
    if (!cg_slice_write_describe(cg->p, v, &d, what, sizeof what)) {
        cg_fail(cg, "%s", what);
        return;
    }
    enum { NW = sizeof d / 8 };
    int64_t words[NW];
    memcpy(words, &d, sizeof d);
    LLVMValueRef els[NW];
    for (int i = 0; i < NW; i++)
        els[i] = cg_const_i64(cg, words[i]);
    LLVMValueRef arr = LLVMConstArray(cg->t_i64, els, NW);
    LLVMValueRef g = LLVMAddGlobal(cg->mod, LLVMTypeOf(arr), "slice_write_desc");
    LLVMSetInitializer(g, arr);
    LLVMSetGlobalConstant(g, true);
    LLVMSetLinkage(g, LLVMPrivateLinkage);

    LLVMPositionBuilderAtEnd(B, LLVMGetLastBasicBlock(cg->fwd));
    const Arg *s = &v->args[3];
    LLVMValueRef bufs = LLVMBuildBitCast(B, cg->fwd_bufs, cg->t_ptr, "");
    LLVMValueRef cp = LLVMBuildInBoundsGEP2(
        B, cg->t_ptr, bufs, (LLVMValueRef[]){cg_const_i64(cg, cg->p->iface.error_slot)}, 1, "");
    LLVMValueRef args[7] = {
        LLVMBuildBitCast(B, g, cg->t_ptr, ""),
        cg_fwd_ptr(cg, v),
        ir_is_state_update(v) ? LLVMConstNull(cg->t_ptr) : cg_fwd_ptr(cg, v->args[0].t),
        cg_fwd_ptr(cg, v->args[1].t),
        s->kind == ARG_TENSOR ? cg_fwd_ptr(cg, s->t) : LLVMConstNull(cg->t_ptr),
        LLVMBuildLoad2(B, cg->t_ptr, cp, "error_cell"),
        LLVMBuildGlobalStringPtr(B, what, "slice_write_what"),
    };
    cg_call(cg, "rt_slice_write", cg->t_void, args, 7);
    cg_fwd_step_done(cg);
}
