/* einsum, rendered from its shared description (codegen/einsum_desc.h):
 * a matrix-product-shaped equation is one rt_matmul call with the
 * description's strides; anything else runs as a generic contraction
 * kernel, output dims outer and summed letters inner. */
#include "codegen/einsum_desc.h"
#include "codegen/llvm/cg.h"

#define B (cg->b)

void k_contraction(Cg *cg, KEinsum *e) {
    Kern k;
    kern_begin(cg, &k, "einsum");
    k.sp = e->space;
    DType t = e->dst.dt, at = e->at;
    LoopNest outer, inner;
    kern_open(&k, &outer, 0, k.sp.nkept, false);
    LLVMTypeRef aty = cg_ctype(cg, at);
    LLVMValueRef slot = kern_alloca(&k, aty);
    LLVMBuildStore(B, LLVMConstNull(aty), slot);
    kern_open(&k, &inner, k.sp.nkept, k.sp.nloops, true);
    LLVMValueRef prod = NULL;
    bool f = dtype_is_float(at);
    for (int o = 0; o < e->nops; o++) {
        LLVMValueRef x = cg_load(&k, kern_ptr(&k, &e->op[o]), e->op[o].dt);
        x = cg_convert(cg, x, e->op[o].dt, at);
        prod = !prod ? x : f ? LLVMBuildFMul(B, prod, x, "") : LLVMBuildMul(B, prod, x, "");
    }
    LLVMValueRef cur = LLVMBuildLoad2(B, aty, slot, "");
    LLVMBuildStore(B, f ? LLVMBuildFAdd(B, cur, prod, "") : LLVMBuildAdd(B, cur, prod, ""), slot);
    kern_close(&k, &inner);
    LLVMValueRef r = LLVMBuildLoad2(B, aty, slot, "");
    cg_store(&k, kern_ptr(&k, &e->dst), cg_convert(cg, r, at, t), t);
    kern_close(&k, &outer);
    kern_end(&k, kspace_work_inner(&k.sp));
}
