/* Indexed reads on the GPU: gather, index_select, embedding and x[idx],
 * one thread per output element (or per vector of them) through the
 * elementwise mapping. The layouts are the CPU's (codegen/llvm/k_gather.c):
 * each output element reads one index, then one element of the source at
 * that index along one dim. An index out of range (after x[idx]'s
 * wrapping of negative indices, the only one of these PyTorch allows) sets
 * the run's error cell to the index tensor's code, the first such thread
 * winning, and reads element 0 instead of reading outside the tensor. */
#include <stdio.h>
#include <string.h>

#include "codegen/cuda/cu.h"

void cu_k_gather(Cu *cu, const Value *v) {
    const CgProgram *p = cu->p;
    const Value *x, *idx;
    int dim;
    CuKern k;
    cuk_begin(cu, &k, op_display_name(v));
    k.root = v;
    Access xa, ia, dst;
    memset(&xa, 0, sizeof xa);
    memset(&ia, 0, sizeof ia);
    int n = v->ndim;
    bool wrap = false;
    switch (v->op) {
    case OP_EMBEDDING:
        idx = v->in[0], x = v->in[1], dim = 0;
        for (int d = 0; d < idx->ndim; d++)
            ia.strides[d] = idx->strides[d];
        xa.strides[n - 1] = x->strides[1];
        break;
    case OP_GATHER:
        x = v->in[0], idx = v->in[1];
        dim = (int)(v->args[1].i < 0 ? v->args[1].i + x->ndim : v->args[1].i);
        for (int d = 0; d < n; d++) {
            ia.strides[d] = idx->strides[d];
            xa.strides[d] = d == dim ? 0 : x->strides[d];
        }
        break;
    case OP_INDEX_SELECT:
        x = v->in[0], idx = v->in[1];
        dim = (int)(v->args[1].i < 0 ? v->args[1].i + x->ndim : v->args[1].i);
        for (int d = 0; d < n; d++) {
            xa.strides[d] = d == dim ? 0 : x->strides[d];
            ia.strides[d] = d == dim && idx->ndim ? idx->strides[0] : 0;
        }
        break;
    default: /* OP_INDEX: x[idx] along dim, negative indices counting from the end */
        x = v->in[0], idx = v->in[1];
        dim = (int)(v->args[1].i < 0 ? v->args[1].i + x->ndim : v->args[1].i);
        wrap = true;
        for (int d = 0; d < dim; d++)
            xa.strides[d] = x->strides[d];
        for (int d = 0; d < idx->ndim; d++)
            ia.strides[dim + d] = idx->strides[d];
        for (int d = dim + 1; d < x->ndim; d++)
            xa.strides[d - 1 + idx->ndim] = x->strides[d];
        break;
    }
    xa.owner = x->storage;
    xa.dt = kd_dt(p, x->storage);
    xa.offset = x->offset;
    ia.owner = idx->storage;
    ia.dt = kd_dt(p, idx->storage);
    ia.offset = idx->offset;
    kd_access_contig(p, v, v->shape, n, &dst);
    Access *acc[3] = {&xa, &ia, &dst};
    kspace_build(&k.sp, v->shape, n, NULL, acc, 3, false);
    int64_t size = x->ndim ? x->shape[dim] : 1;
    /* The source's stride along the indexed dim (xa walks every other dim). */
    int64_t ds = x->ndim ? (v->op == OP_EMBEDDING ? x->strides[0] : x->strides[dim]) : 0;
    char what[256];
    snprintf(what, sizeof what, "the index tensor '%s' of %s (line %d)",
             idx->name ? idx->name : op_display_name(idx), op_display_name(v), v->loc.line);
    int code = cu_error_code(cu, what);
    /* xa's span leaves out the indexed dim: that term is added in 64 bits
     * below, whatever k.wide chooses. */
    cuk_elementwise_begin(&k, acc, 3);
    for (int lane = 0; lane < k.vec; lane++) {
        cuk_lane_begin(&k, lane);
        const char *i = cu_convert(&k, cuk_load(&k, &ia), ia.dt, DT_I64);
        const char *ix = cu_str(cu, "ix%d", k.ntmp++);
        cuk_emit(&k, "long long %s = %s;", ix, i);
        if (wrap) cuk_emit(&k, "if (%s < 0) %s += %lldLL;", ix, ix, (long long)size);
        /* Unsigned: a negative index is out of range too. */
        cuk_emit(&k, "if ((unsigned long long)%s >= %lluULL) {", ix, (unsigned long long)size);
        k.indent++;
        cuk_emit(&k, "atomicCAS(%s, 0ULL, %dULL);", cuk_error_cell(&k), code);
        cuk_emit(&k, "%s = 0;", ix);
        k.indent--;
        cuk_emit(&k, "}");
        const char *off =
            cu_str(cu, "(long long)(%s) + %s * %lldLL", cuk_offset(&k, &xa), ix, (long long)ds);
        cuk_store(&k, &dst, cuk_load_at(&k, &xa, off), xa.dt);
    }
    cuk_elementwise_end(&k);
}
