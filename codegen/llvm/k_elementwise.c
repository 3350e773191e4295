/* Elementwise kernels (a fused expression tree, one loop nest) and the
 * copies that are elementwise over another layout: reshape copies, cat,
 * stack, repeat, flip and the copies of outputs into the caller's buffers. */
#include <string.h>

#include "codegen/llvm/cg.h"

int kern_collect_leaves(Kern *k, const Value *v, Access *out, int max, bool *uses_index) {
    return kd_collect_leaves(k->cg->p, v, k->ov, out, max, uses_index);
}

/* Stores src's elements over `shape` into dst: src computed (the kernel's
 * root, with its inlined operands), or read through the override access,
 * or read through its own layout. */
static void copy_kernel(Cg *cg, Kern *k, const Value *src, bool compute, Access *dst,
                        const int64_t *shape, int n) {
    Access leaves[64];
    Access *acc[66];
    bool uses_index = false;
    int nl = 0;
    if (compute)
        nl = kern_collect_leaves(k, src, leaves, 64, &uses_index);
    else if (src != k->ov)
        access_of(k, src, &leaves[nl++]);
    int na = 0;
    for (int i = 0; i < nl; i++)
        acc[na++] = &leaves[i];
    acc[na++] = dst;
    if (k->ov) acc[na++] = &k->ov_access;
    kern_space(k, shape, n, NULL, acc, na, uses_index);
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
    access_contig(&k, v, v->shape, v->ndim, &dst);
    copy_kernel(cg, &k, v, true, &dst, v->shape, v->ndim);
}

void k_output_copy(Cg *cg, const Value *o, int out_index) {
    Kern k;
    kern_begin(cg, &k, "output");
    Access dst;
    access_contig(&k, o, o->shape, o->ndim, &dst);
    dst.slot = 1 + cg->p->iface.ninputs + cg->p->iface.nparams + out_index;
    dst.dt = cg_dt(cg, o);
    copy_kernel(cg, &k, o, false, &dst, o->shape, o->ndim);
}

void k_reshape_copy(Cg *cg, const Value *v) {
    /* Row-major order is the same on both sides: walk the input's shape,
     * write the output as if it had that shape. */
    const Value *x = v->in[0];
    Kern k;
    kern_begin(cg, &k, "reshape");
    Access dst;
    access_contig(&k, v, x->shape, x->ndim, &dst);
    copy_kernel(cg, &k, x, false, &dst, x->shape, x->ndim);
}

static int norm(int64_t d, int n) {
    return (int)(d < 0 ? d + n : d);
}

void k_cat(Cg *cg, const Value *v) {
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
        dst.dt = cg_dt(cg, v);
        for (int j = 0, o = 0; j < v->ndim; j++) {
            if (stack && j == d) continue;
            dst.strides[o++] = cs[j];
        }
        dst.offset = at * cs[d];
        at += stack ? 1 : (x->ndim ? x->shape[d] : 0);
        /* cat skips empty 1-d tensors, as torch does (legacy behaviour). */
        if (value_numel(x) == 0) continue;
        Kern k;
        kern_begin(cg, &k, stack ? "stack" : "cat");
        copy_kernel(cg, &k, x, false, &dst, x->shape, x->ndim);
    }
}

void k_repeat(Cg *cg, const Value *v) {
    const Value *x = v->in[0];
    int m = v->ndim, pad = m - x->ndim;
    int64_t shape[KMAXD], cs[TG_MAX_DIMS];
    shape_contiguous_strides(v->shape, v->ndim, cs);
    Kern k;
    kern_begin(cg, &k, "repeat");
    k.ov = x;
    access_of(&k, x, &k.ov_access); /* strides set below, per split dim */
    Access dst;
    memset(&dst, 0, sizeof dst);
    dst.owner = v;
    dst.dt = cg_dt(cg, v);
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
    copy_kernel(cg, &k, x, false, &dst, shape, 2 * m);
}

void k_flip(Cg *cg, const Value *v) {
    const Value *x = v->in[0];
    Kern k;
    kern_begin(cg, &k, "flip");
    k.ov = x;
    access_of(&k, x, &k.ov_access);
    const Arg *dims = &v->args[1];
    for (int i = 0; i < dims->n; i++) {
        int d = norm(dims->ints[i], x->ndim);
        if (d < 0 || d >= x->ndim) continue;
        k.ov_access.offset += (x->shape[d] - 1) * x->strides[d];
        k.ov_access.strides[d] = -x->strides[d];
    }
    Access dst;
    access_contig(&k, v, v->shape, v->ndim, &dst);
    copy_kernel(cg, &k, x, false, &dst, x->shape, x->ndim);
}

void k_broadcast_into(Cg *cg, const Value *src, const Value *dst_v) {
    /* src, right-aligned and broadcast (stride 0), fills dst_v's buffer. */
    Kern k;
    kern_begin(cg, &k, "bias");
    k.ov = src;
    access_right_aligned(&k, src, dst_v->ndim, &k.ov_access);
    Access dst;
    access_contig(&k, dst_v, dst_v->shape, dst_v->ndim, &dst);
    copy_kernel(cg, &k, src, false, &dst, dst_v->shape, dst_v->ndim);
}
