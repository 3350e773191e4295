/* Indexed reads on the GPU: gather, index_select, embedding and x[idx],
 * one thread per output element (or per vector of them) through the
 * elementwise mapping. The layouts are the CPU's (codegen/llvm/k_gather.c):
 * each output element reads one index, then one element of the source at
 * that index along one dim. An index out of range (after x[idx]'s
 * wrapping of negative indices, the only one of these PyTorch allows) sets
 * the run's error cell to the index tensor's code, the value and its
 * offset, the first such thread winning, and reads element 0 instead of
 * reading outside the tensor. */
#include <stdio.h>
#include <string.h>

#include "codegen/cuda/cu.h"

void cu_k_gather(Cu *cu, const Value *v, KGather *gd) {
    Access *xa = &gd->xa, *ia = &gd->ia, *dst = &gd->dst;
    CuKern k;
    cuk_begin(cu, &k, op_display_name(v));
    k.root = v;
    k.sp = gd->space;
    Access *acc[3] = {xa, ia, dst};
    int code = cu_error_code(cu, gd->what);
    /* xa's span leaves out the indexed dim: that term is added in 64 bits
     * below, whatever k.wide chooses. */
    cuk_elementwise_begin(&k, acc, 3);
    for (int lane = 0; lane < k.vec; lane++) {
        cuk_lane_begin(&k, lane);
        const char *i = cu_convert(&k, cuk_load(&k, ia), ia->dt, DT_I64);
        const char *ix = cu_str(cu, "ix%d", k.ntmp++);
        cuk_emit(&k, "long long %s = %s;", ix, i);
        if (gd->wrap) cuk_emit(&k, "if (%s < 0) %s += %lldLL;", ix, ix, (long long)gd->size);
        /* Unsigned: a negative index is out of range too. */
        cuk_emit(&k, "if ((unsigned long long)%s >= %lluULL) {", ix, (unsigned long long)gd->size);
        k.indent++;
        /* The thread that claims word 0 writes the value and its offset in
         * the index tensor (runtime/rt_index_error.h). */
        cuk_emit(&k, "if (atomicCAS(%s, 0ULL, %dULL) == 0ULL) {", cuk_error_cell(&k), code);
        cuk_emit(&k, "  %s[1] = (unsigned long long)(%s);", cuk_error_cell(&k), i);
        cuk_emit(&k, "  %s[2] = (unsigned long long)((long long)(%s) - %lldLL);",
                 cuk_error_cell(&k), cuk_offset(&k, ia), (long long)ia->offset);
        cuk_emit(&k, "}");
        cuk_emit(&k, "%s = 0;", ix);
        k.indent--;
        cuk_emit(&k, "}");
        const char *off = cu_str(cu, "(long long)(%s) + %s * %lldLL", cuk_offset(&k, xa), ix,
                                 (long long)gd->dim_stride);
        cuk_store(&k, dst, cuk_load_at(&k, xa, off), xa->dt);
    }
    cuk_elementwise_end(&k);
}
