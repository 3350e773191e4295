/* Matrix products on the GPU: each is one RT_CUDA_MATMUL step with the
 * same descriptor the CPU passes to rt_matmul (codegen/kernel_desc.c); the
 * runtime gives it to cuBLAS (transposed operands as flags, f16/bf16 on
 * tensor cores with f32 accumulation) or to the module's tg_matmul.
 * codegen/dispatch.c first broadcasts linear's bias into the output by a
 * kernel, and the product accumulates onto it. */
#include <string.h>

#include "codegen/cuda/cu.h"

void cu_operand(Cu *cu, const Value *v, int *slot, int64_t *off) {
    const Value *o = v->storage;
    int64_t base = kd_buffer(cu->p, o, slot);
    if (base < 0) {
        cu_fail(cu, "internal: value %%%d has no buffer", o->id);
        base = 0;
    }
    *off = base + v->offset * (int64_t)dtype_size(kd_dt(cu->p, o));
}

void cu_k_product(Cu *cu, const MM *mm, const Value *a, const Value *b, const Value *c) {
    CuStep s;
    memset(&s, 0, sizeof s);
    s.kind = CU_MATMUL;
    s.mm = *mm;
    cu_operand(cu, a, &s.slot[0], &s.off[0]);
    cu_operand(cu, b, &s.slot[1], &s.off[1]);
    cu_operand(cu, c, &s.slot[2], &s.off[2]);
    ARENA_PUSH(cu->a, cu->steps, cu->nsteps, cu->cap, s);
}
