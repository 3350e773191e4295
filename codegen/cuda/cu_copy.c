/* Elementwise kernels (a fused expression tree, one thread per element)
 * and the copies that are elementwise over another layout: reshape copies,
 * cat, stack, repeat, flip, the bias broadcast of linear and the copies of
 * outputs into the caller's buffers. The layouts are the LLVM backend's
 * (codegen/llvm/k_elementwise.c), from the same description. */
#include <string.h>

#include "codegen/cuda/cu.h"

/* Stores src's elements over `shape` into dst: src computed (the kernel's
 * root, with its inlined operands), or read through the override access,
 * or read through its own layout. */
static void copy_kernel(Cu *cu, CuKern *k, const Value *src, bool compute, Access *dst,
                        const int64_t *shape, int n) {
    const CgProgram *p = cu->p;
    Access leaves[64];
    Access *acc[66];
    bool uses_index = false;
    int nl = 0;
    if (compute)
        nl = kd_collect_leaves(p, src, k->ov, leaves, 64, &uses_index);
    else if (src != k->ov)
        kd_access_of(p, src, &leaves[nl++]);
    int na = 0;
    for (int i = 0; i < nl; i++)
        acc[na++] = &leaves[i];
    acc[na++] = dst;
    if (k->ov) acc[na++] = &k->ov_access;
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

void cu_k_output_copy(Cu *cu, const Value *o, int out_index) {
    CuKern k;
    cuk_begin(cu, &k, "output");
    Access dst;
    kd_access_contig(cu->p, o, o->shape, o->ndim, &dst);
    dst.slot = 1 + cu->p->iface.ninputs + cu->p->iface.nparams + out_index;
    dst.dt = kd_dt(cu->p, o);
    copy_kernel(cu, &k, o, false, &dst, o->shape, o->ndim);
}

void cu_k_reshape_copy(Cu *cu, const Value *v) {
    /* Row-major order is the same on both sides: walk the input's shape,
     * write the output as if it had that shape. */
    const Value *x = v->in[0];
    CuKern k;
    cuk_begin(cu, &k, "reshape");
    Access dst;
    kd_access_contig(cu->p, v, x->shape, x->ndim, &dst);
    copy_kernel(cu, &k, x, false, &dst, x->shape, x->ndim);
}

static int norm(int64_t d, int n) {
    return (int)(d < 0 ? d + n : d);
}

void cu_k_cat(Cu *cu, const Value *v) {
    const Arg *ts = &v->args[0];
    bool stack = v->op == OP_STACK;
    int d = norm(v->args[1].kind == ARG_INT ? v->args[1].i : 0, v->ndim);
    int64_t cs[TG_MAX_DIMS];
    shape_contiguous_strides(v->shape, v->ndim, cs);
    int64_t at = 0;
    for (int i = 0; i < ts->n; i++) {
        const Value *x = ts->ts[i];
        Access dst;
        memset(&dst, 0, sizeof dst);
        dst.owner = v;
        dst.dt = kd_dt(cu->p, v);
        for (int j = 0, o = 0; j < v->ndim; j++) {
            if (stack && j == d) continue;
            dst.strides[o++] = cs[j];
        }
        dst.offset = at * cs[d];
        at += stack ? 1 : (x->ndim ? x->shape[d] : 0);
        /* cat skips empty 1-d tensors, as torch does (legacy behaviour). */
        if (value_numel(x) == 0) continue;
        CuKern k;
        cuk_begin(cu, &k, stack ? "stack" : "cat");
        copy_kernel(cu, &k, x, false, &dst, x->shape, x->ndim);
    }
}

void cu_k_repeat(Cu *cu, const Value *v) {
    const Value *x = v->in[0];
    int m = v->ndim, pad = m - x->ndim;
    int64_t shape[KMAXD], cs[TG_MAX_DIMS];
    shape_contiguous_strides(v->shape, v->ndim, cs);
    CuKern k;
    cuk_begin(cu, &k, "repeat");
    k.ov = x;
    kd_access_of(cu->p, x, &k.ov_access); /* strides set below, per split dim */
    Access dst;
    memset(&dst, 0, sizeof dst);
    dst.owner = v;
    dst.dt = kd_dt(cu->p, v);
    for (int d = 0; d < m; d++) {
        int64_t s = d >= pad ? x->shape[d - pad] : 1;
        int64_t r = s ? v->shape[d] / s : 0;
        shape[2 * d] = r;
        shape[2 * d + 1] = s;
        dst.strides[2 * d] = s * cs[d];
        dst.strides[2 * d + 1] = cs[d];
        k.ov_access.strides[2 * d] = 0;
        k.ov_access.strides[2 * d + 1] = d >= pad ? x->strides[d - pad] : 0;
    }
    copy_kernel(cu, &k, x, false, &dst, shape, 2 * m);
}

void cu_k_flip(Cu *cu, const Value *v) {
    const Value *x = v->in[0];
    CuKern k;
    cuk_begin(cu, &k, "flip");
    k.ov = x;
    kd_access_of(cu->p, x, &k.ov_access);
    const Arg *dims = &v->args[1];
    for (int i = 0; i < dims->n; i++) {
        int d = norm(dims->ints[i], x->ndim);
        if (d < 0 || d >= x->ndim) continue;
        k.ov_access.offset += (x->shape[d] - 1) * x->strides[d];
        k.ov_access.strides[d] = -x->strides[d];
    }
    Access dst;
    kd_access_contig(cu->p, v, v->shape, v->ndim, &dst);
    copy_kernel(cu, &k, x, false, &dst, x->shape, x->ndim);
}

void cu_k_broadcast_into(Cu *cu, const Value *src, const Value *dst_v) {
    /* src, right-aligned and broadcast (stride 0), fills dst_v's buffer. */
    CuKern k;
    cuk_begin(cu, &k, "bias");
    k.ov = src;
    kd_access_right_aligned(cu->p, src, dst_v->ndim, &k.ov_access);
    Access dst;
    kd_access_contig(cu->p, dst_v, dst_v->shape, dst_v->ndim, &dst);
    copy_kernel(cu, &k, src, false, &dst, dst_v->shape, dst_v->ndim);
}
