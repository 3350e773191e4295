/* Elementwise kernels (a fused expression tree, one loop nest) and the
 * copies that are elementwise over another layout: reshape copies, cat,
 * stack, repeat, flip and the copies of outputs into the caller's buffers,
 * which codegen/dispatch.c describes (kernel_desc.c) and k_copy writes. */
#include <stdlib.h>
#include <string.h>

#include "codegen/llvm/cg.h"

/* Stores src's elements over `shape` into dst: src computed (the kernel's
 * root, with its inlined operands), or read through the override access
 * ov (when not NULL), or read through its own layout. */
static void copy_kernel(Cg *cg, Kern *k, const Value *src, bool compute, const Access *ov,
                        Access *dst, const int64_t *shape, int n, bool reorder) {
    if (ov) {
        k->ov = src;
        k->ov_access = *ov;
    }
    Access leaves[KD_STORE_LEAVES];
    Access *acc[KD_STORE_LEAVES + 2];
    bool uses_index;
    int na =
        kd_store_accesses(cg->p, src, compute, k->ov, &k->ov_access, dst, leaves, acc, &uses_index);
    kern_space(k, shape, n, NULL, acc, na, uses_index);
    if (reorder) kspace_order_by(&k->sp, dst);
    LoopNest ln;
    kern_open(k, &ln, 0, k->sp.nloops, false);
    LLVMValueRef x = cg_expr(k, src, compute);
    DType st = k->ov == src ? k->ov_access.dt : cg_dt(cg, src);
    x = cg_convert(cg, x, st, dst->dt);
    cg_store(k, kern_ptr(k, dst), x, dst->dt);
    kern_close(k, &ln);
    kern_end(k, kspace_work_inner(&k->sp));
}

void k_elementwise(Cg *cg, const Value *v) {
    Kern k;
    kern_begin(cg, &k, op_display_name(v));
    k.root = v;
    Access dst;
    /* An owner is dense; the layout pass (passes/layout.c) may have given
     * it channels-last strides, which the store follows. */
    bool dense = layout_is_contiguous(v);
    if (dense)
        access_contig(&k, v, v->shape, v->ndim, &dst);
    else
        access_of(&k, v, &dst);
    copy_kernel(cg, &k, v, true, NULL, &dst, v->shape, v->ndim, !dense);
}

/* A copy of the shared description: one kernel over its shape. */
void k_copy(Cg *cg, const KCopy *c) {
    Kern k;
    kern_begin(cg, &k, c->what);
    Access dst = c->dst;
    const Access *ov = c->through_src ? &c->src_access : NULL;
    /* A cat, pad or interpolate into a channels-last owner
     * (passes/layout.c) walks it in memory order, as k_elementwise does:
     * in the logical order each step of W would jump C elements. */
    bool reorder = c->dst.owner && !c->through_src && !layout_is_contiguous(c->dst.owner);
    copy_kernel(cg, &k, c->src, false, ov, &dst, c->shape, c->n, reorder);
}

void k_broadcast_into(Cg *cg, const Value *src, const Value *dst_v) {
    KCopy c;
    kd_broadcast_into(cg->p, src, dst_v, &c);
    k_copy(cg, &c);
}
