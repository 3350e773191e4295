/* Elementwise kernels (a fused expression tree, one thread per element)
 * and the copies that are elementwise over another layout: reshape copies,
 * cat, stack, repeat, flip, the bias broadcast of linear and the copies of
 * outputs into the caller's buffers, which codegen/dispatch.c describes
 * (kernel_desc.c) and cu_k_copy writes. The layouts are the LLVM backend's
 * (codegen/llvm/k_elementwise.c), from the same description. */
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda/cu.h"

/* Stores src's elements over `shape` into dst: src computed (the kernel's
 * root, with its inlined operands), or read through the override access
 * (k->ov set), or read through its own layout. */
static void copy_kernel(Cu *cu, CuKern *k, const Value *src, bool compute, Access *dst,
                        const int64_t *shape, int n) {
    const CgProgram *p = cu->p;
    Access leaves[KD_STORE_LEAVES];
    Access *acc[KD_STORE_LEAVES + 2];
    bool uses_index;
    int na =
        kd_store_accesses(p, src, compute, k->ov, &k->ov_access, dst, leaves, acc, &uses_index);
    kspace_build(&k->sp, shape, n, NULL, acc, na, uses_index);
    k->uses_index = uses_index;
    cuk_elementwise_begin(k, acc, na);
    DType st = k->ov == src ? k->ov_access.dt : kd_dt(p, src);
    for (int lane = 0; lane < k->vec; lane++) {
        cuk_lane_begin(k, lane);
        const char *x = cu_expr(k, src, compute);
        cuk_store(k, dst, x, st);
    }
    cuk_elementwise_end(k);
}

void cu_k_elementwise(Cu *cu, const Value *v) {
    CuKern k;
    cuk_begin(cu, &k, op_display_name(v));
    k.root = v;
    Access dst;
    kd_access_contig(cu->p, v, v->shape, v->ndim, &dst);
    copy_kernel(cu, &k, v, true, &dst, v->shape, v->ndim);
}

/* A copy of the shared description: one kernel over its shape. */
void cu_k_copy(Cu *cu, const KCopy *c) {
    CuKern k;
    cuk_begin(cu, &k, c->what);
    Access dst = c->dst;
    if (c->through_src) {
        k.ov = c->src;
        k.ov_access = c->src_access;
    }
    copy_kernel(cu, &k, c->src, false, &dst, c->shape, c->n);
}

void cu_k_broadcast_into(Cu *cu, const Value *src, const Value *dst_v) {
    KCopy c;
    kd_broadcast_into(cu->p, src, dst_v, &c);
    cu_k_copy(cu, &c);
}
